/** Associated-data (context) strings of sealed records (CONTRACT section 4). */

/** Message content: `service/v1/message:<inboxId>:<messageId>`. */
export const messageContext = (addressId: string, messageId: string): string =>
  `service/v1/message:${addressId}:${messageId}`;

/** Attachment: `service/v1/attachment:<messageId>:<index>`. */
export const attachmentContext = (messageId: string, index: number): string =>
  `service/v1/attachment:${messageId}:${index}`;

/** Address meta (label): `service/v1/inbox-meta:<inboxId>`. */
export const addressMetaContext = (addressId: string): string => `service/v1/inbox-meta:${addressId}`;

/** Device profile: `service/v1/worker-profile:<workerId>`. */
export const deviceProfileContext = (deviceId: string): string =>
  `service/v1/worker-profile:${deviceId}`;

/** Webhook meta: `service/v1/webhook-meta:<webhookId>`. */
export const webhookMetaContext = (webhookId: string): string => `service/v1/webhook-meta:${webhookId}`;

/** Device key bundle: `service/v1/worker-keys:<workerId>`. */
export const deviceKeysContext = (deviceId: string): string => `service/v1/worker-keys:${deviceId}`;

/** Team grant: `service/v1/team-grant:<owner>:<member>:<inboxId>:<epoch>`. */
export const teamGrantContext = (
  ownerId: string,
  memberId: string,
  addressId: string,
  epoch: number,
): string => `service/v1/team-grant:${ownerId}:${memberId}:${addressId}:${epoch}`;

/** Support ticket header: `service/v1/support-header:<ticketId>`. */
export const supportHeaderContext = (ticketId: string): string => `service/v1/support-header:${ticketId}`;

/** Support ticket message: `service/v1/support-message:<ticketId>:<messageId>`. */
export const supportMessageContext = (ticketId: string, messageId: string): string =>
  `service/v1/support-message:${ticketId}:${messageId}`;
