/**
 * @sealpost/sdk: Sealpost for TypeScript, in Node 20+ and browsers.
 *
 * The automation path, in three calls:
 *
 * ```ts
 * const address = await client.createAddress();          // own key, ibx_ id chosen here
 * const message = await client.nextMessage(address);     // long-poll until mail arrives
 * const mail = client.openMessage(message, address.key); // decrypted here; mail.codes, mail.links
 * ```
 */
export * from './bytes.js';
export * from './context.js';
export * from './keys.js';
export * from './boxes.js';
export * from './content.js';
export * from './labels.js';
export * from './device.js';
export * from './ids.js';
export * from './mailtext.js';
export * from './webhook.js';
export * from './client.js';
export * from './events.js';
export * from './profile.js';
export * from './support.js';
export * from './teams.js';
export type {
  Account,
  Address,
  AddressStatus,
  Allocation,
  Deletion,
  Device,
  Domain,
  Folder,
  FolderCounts,
  Message,
  MessagePage,
  NewAddress,
  OpenedPairing,
  PairingPoll,
  Overview,
  PlanId,
  Session,
  Usage,
  WaitResult,
} from './wire.js';
export type {
  ApiKey,
  DnsRecord,
  OwnDomain,
  Checkout,
  Delivery,
  GrantAccess,
  GrantToSend,
  Membership,
  SharedAddress,
  Team,
  TeamGrant,
  TeamMember,
  DeliveryStatus,
  PairingLookup,
  Payment,
  Plan,
  Provider,
  Subscription,
  Webhook,
  WebhookEventType,
} from './wire.js';
export type { components as OpenApiComponents, paths as OpenApiPaths } from './generated/openapi.js';
