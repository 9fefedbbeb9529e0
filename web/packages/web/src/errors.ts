// Every error code the API answers with, in words a person understands: what
// happened and what to do. `describe` (util.ts) shows these; a unit test
// reads docs/openapi.json's enum of codes and fails when one has no message.
import type { ErrorCode } from '@sealpost/sdk';

export const ERROR_MESSAGES: Record<ErrorCode | 'http_error', string> = {
  invalid_json: 'The page sent a request the service could not read. Reload the page and try again.',
  invalid_field: 'Something in the form is not accepted. Check the field named below and try again.',
  invalid_url: 'That web address is not accepted: it must be https with a public host name. Check it and try again.',
  invalid_box: 'Encrypted data sent by the page was malformed. Reload the page and try again.',
  invalid_key: 'A key sent by the page was malformed. Reload the page and try again.',
  invalid_id: 'An identifier in the request is malformed. Reload the page and try again.',
  unauthenticated: 'You are signed out: this session ended or was signed out elsewhere. Sign in again with your recovery phrase.',
  session_expired: 'Your session expired. Sign in again with your recovery phrase.',
  allocation_exhausted: 'Your plan has no room for another address. Delete an address you no longer need, or choose a bigger plan.',
  worker_limit_reached: 'Your plan holds no more devices. Remove a device, or choose a bigger plan.',
  payment_required: 'This needs a payment first: the address is paused after a missed payment, or the plan change must go through checkout. Open Billing to pay.',
  plan_capability_required: 'Your plan does not include this (teams need Fleet or Enterprise). Choose a bigger plan to use it.',
  plan_required: 'Your plan does not include this feature. Choose a plan that does to use it.',
  not_your_address: 'That address is not one of yours, so mail cannot be sent from it. Choose one of your addresses.',
  account_suspended: 'This account is suspended. Contact support to find out why and what to do.',
  session_required: 'Only a signed-in session can do this (not a device or an API key). Sign in with your recovery phrase.',
  device_required: 'Only a paired device can do this.',
  role_required: 'Your staff role does not allow this.',
  not_found: 'That item no longer exists, or is not yours. Reload to see the current state.',
  method_not_allowed: 'The service does not offer this action. Reload the page: it may be out of date.',
  downgrade_blocked: 'You use more than the new plan allows (addresses or devices). Delete some first, then change the plan.',
  already_used: 'This was already used and cannot be used again (a pairing code, a push token, a payment). Start again.',
  address_taken: 'That address is taken. Choose another name.',
  limit_reached: 'You reached the limit for these (10 webhooks, for example). Delete one before adding another.',
  webhook_disabled: 'This webhook is switched off. Switch it on first.',
  already_member: 'That person is already in your team.',
  team_limit_reached: 'Your team is full for your plan. Remove a member, or choose a bigger plan.',
  epoch_conflict: 'The address keys changed meanwhile. Reload the page and try again.',
  staff_key_changed: "The support team's key changed while this was being sealed (and again when the page sealed it anew with the new key), so nothing was sent. Send it again.",
  too_many_open: 'You have five support requests open. Close one before opening another.',
  too_many_tickets: 'You keep twenty support requests already. Delete an old one first.',
  ticket_closed: 'This support request is closed. Open a new one.',
  ticket_full: 'This support request has 50 messages. Open a new one to go on.',
  support_storage_full: 'Your support requests use all their space. Delete an old one first.',
  id_taken: 'That identifier is already in use. Try again: the page makes a new one.',
  domain_in_use: 'Addresses still use this domain. Delete them first, then remove the domain.',
  renewal_active: 'Your plan renews by card, so paying another way would pay twice. Turn renewal off in the billing portal first, then pay.',
  too_large: 'That is too large to send. Make it shorter, or send less at once.',
  rate_limited: 'Too many requests, or the sending limit of your plan is reached. Wait a moment, then try again.',
  internal: 'Something went wrong on our side. Try again in a moment.',
  send_failed: 'The outgoing mail server refused the message or could not be reached, so nothing was sent and nothing counted. Check the recipients and try again later.',
  provider_unavailable: 'The payment or store provider cannot be reached right now. Try again later.',
  feature_disabled: 'This is switched off on this service right now (sending mail needs an outgoing mail server, for example). Try again later or ask the operator.',
  support_unavailable: 'Support in the app is unavailable right now. Try again later.',
  unavailable: 'The service is unavailable right now. Try again in a moment.',
  http_error: 'The service answered with an error the page does not know. Try again in a moment.',
};

/** The codes whose server message names what was wrong (a field, a limit): shown as the detail. */
const DETAILED = new Set<string>(['invalid_field', 'invalid_id', 'invalid_url', 'too_large', 'rate_limited', 'not_your_address']);

/** The server's own message, without the `(code, HTTP status)` suffix `ApiError` adds. */
export function serverDetail(message: string): string {
  return message.replace(/\s*\([a-z_]+, HTTP \d+\)$/, '');
}

/** Words for an API error: the code's sentence, its detail when it names a field or limit, and when to retry. */
export function describeApiError(e: { code: string; message: string; retryAfter: number | undefined }): string {
  const known = (ERROR_MESSAGES as Record<string, string>)[e.code];
  let text = known ?? ERROR_MESSAGES.http_error;
  if (known === undefined || DETAILED.has(e.code)) text += ` (${serverDetail(e.message)})`;
  if (e.retryAfter !== undefined) text += ` You can try again in ${formatWait(e.retryAfter)}.`;
  return text;
}

function formatWait(seconds: number): string {
  if (seconds < 90) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} minutes`;
  return `${Math.round(seconds / 3600)} hours`;
}
