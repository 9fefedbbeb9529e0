/**
 * In-app support, sealed as the Rust SDK seals it (`crates/client/src/support.rs`,
 * docs/api.md "Support"):
 *
 * - Header: JSON `{"category","priority","subject"}`, context
 *   `service/v1/support-header:<ticketId>`.
 * - Message: JSON `{"text"}`, context
 *   `service/v1/support-message:<ticketId>:<messageId>`.
 * - Each is sealed twice: to the support key (`forStaff`) and to the
 *   account's vault key (`forAccount`, the ticket's `accountKey`).
 * - The binding: HMAC-SHA256 keyed with X25519(own secret, their public
 *   key) over `service/v1/support-binding:<accountId>:<requestId>:<staffKey>`;
 *   the request id is the ticket id for a ticket and `key` for
 *   `POST /support/key`.
 *
 * The service keeps both copies and opens neither; only the account (its
 * phrase) and the support team (its keyring) can read a ticket.
 * `test/support.test.ts` checks these against a fixture the Rust SDK makes.
 */
import { x25519 } from '@noble/curves/ed25519.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';

import { openBox, sealBox, type SealedBox, type SealOptions } from './boxes.js';
import { b64encode, equalBytes, fromUtf8, SealError, utf8 } from './bytes.js';
import { supportHeaderContext, supportMessageContext } from './context.js';
import { randomIdBody } from './ids.js';
import { publicKeyOf, type AccountKeys } from './keys.js';
import type { Wire } from './wire.js';

/** The request id of the binding sent with `POST /support/key` (a ticket's uses the ticket id). */
export const SUPPORT_KEY_REQUEST = 'key';

/** The priorities a ticket may have, lowest first. */
export const TICKET_PRIORITIES = ['low', 'normal', 'high', 'urgent'] as const;
export type TicketPriority = (typeof TICKET_PRIORITIES)[number];

/** What a ticket's header holds (sealed; the service never reads it). */
export interface TicketHeader {
  /** What it is about: billing, technical, abuse, other, ... */
  category: string;
  /** low, normal, high or urgent. */
  priority: string;
  subject: string;
}

/** A new ticket id: `tkt_` + 20 random lowercase letters and digits. */
export const newTicketId = (): string => `tkt_${randomIdBody(20)}`;
/** A new ticket message id: `tkm_` + 16 random lowercase letters and digits. */
export const newTicketMessageId = (): string => `tkm_${randomIdBody(16)}`;

/** The header's plaintext, byte for byte what the Rust SDK seals (`serde_json`, fields in this order). */
export function ticketHeaderPlaintext(header: TicketHeader): Uint8Array {
  return utf8(JSON.stringify({ category: header.category, priority: header.priority, subject: header.subject }));
}

/** A message's plaintext: JSON `{"text"}`. */
export function ticketMessagePlaintext(text: string): Uint8Array {
  return utf8(JSON.stringify({ text }));
}

function bindingMessage(accountId: string, requestId: string, staffKey: Uint8Array): Uint8Array {
  return utf8(`service/v1/support-binding:${accountId}:${requestId}:${b64encode(staffKey)}`);
}

function shared(ownSecret: Uint8Array, theirPublic: Uint8Array): Uint8Array {
  try {
    return x25519.getSharedSecret(ownSecret, theirPublic);
  } catch {
    throw new SealError('the key is not a usable X25519 public key');
  }
}

/**
 * The binding MAC: HMAC-SHA256 keyed with X25519(`ownSecret`, `theirPublic`)
 * over `service/v1/support-binding:<accountId>:<requestId>:<staffKey base64url>`.
 * The account computes it with its vault secret and the support key; staff
 * with the support secret and the account's key: the same shared secret.
 */
export function supportBinding(
  ownSecret: Uint8Array,
  theirPublic: Uint8Array,
  accountId: string,
  requestId: string,
  staffKey: Uint8Array,
): Uint8Array {
  const key = shared(ownSecret, theirPublic);
  try {
    return hmac(sha256, key, bindingMessage(accountId, requestId, staffKey));
  } finally {
    key.fill(0);
  }
}

/** Staff side: whether `mac` binds `accountKey` to the support key of `supportSecret` (constant time). */
export function verifySupportBinding(
  supportSecret: Uint8Array,
  accountKey: Uint8Array,
  accountId: string,
  requestId: string,
  mac: Uint8Array,
): boolean {
  let expected: Uint8Array;
  try {
    expected = supportBinding(supportSecret, accountKey, accountId, requestId, publicKeyOf(supportSecret));
  } catch {
    return false;
  }
  return equalBytes(expected, mac);
}

/** The body of `POST /support/key`: the vault key bound to `staffKey` (the current support key). */
export function supportKeyBinding(keys: AccountKeys, staffKey: Uint8Array): Wire['SupportKeyRequest'] {
  const mac = supportBinding(keys.vaultSecret(), staffKey, keys.accountId, SUPPORT_KEY_REQUEST, staffKey);
  return { accountKey: b64encode(keys.vaultPublicKey()), binding: b64encode(mac), staffKey: b64encode(staffKey) };
}

/** For test vectors only: fixed ids and the ephemeral secrets and nonces of the four boxes. */
export interface SealTicketOptions {
  ticketId?: string;
  messageId?: string;
  seal?: { headerForStaff?: SealOptions; headerForAccount?: SealOptions; messageForStaff?: SealOptions; messageForAccount?: SealOptions };
}

/** A ticket ready for `POST /support/tickets`, and its ids. */
export interface SealedTicket {
  ticketId: string;
  messageId: string;
  request: Wire['CreateTicketRequest'];
}

const wireBox = (box: SealedBox): Wire['SealedBoxJson'] => box as unknown as Wire['SealedBoxJson'];

/**
 * Seals a new ticket (header and first message) for the account of `keys`
 * and the support key `staffKey`, with the ticket's binding: what
 * `sealpost support open` sends.
 */
export function sealNewTicket(keys: AccountKeys, staffKey: Uint8Array, header: TicketHeader, text: string, options: SealTicketOptions = {}): SealedTicket {
  const ticketId = options.ticketId ?? newTicketId();
  const messageId = options.messageId ?? newTicketMessageId();
  const accountKey = keys.vaultPublicKey();
  const headerContext = supportHeaderContext(ticketId);
  const messageContext = supportMessageContext(ticketId, messageId);
  const headerPlain = ticketHeaderPlaintext(header);
  const messagePlain = ticketMessagePlaintext(text);
  const seal = options.seal ?? {};
  const binding = supportBinding(keys.vaultSecret(), staffKey, keys.accountId, ticketId, staffKey);
  return {
    ticketId,
    messageId,
    request: {
      id: ticketId,
      accountKey: b64encode(accountKey),
      staffKey: b64encode(staffKey),
      binding: b64encode(binding),
      header: {
        forStaff: wireBox(sealBox(staffKey, headerContext, headerPlain, seal.headerForStaff)),
        forAccount: wireBox(sealBox(accountKey, headerContext, headerPlain, seal.headerForAccount)),
      },
      message: {
        id: messageId,
        forStaff: wireBox(sealBox(staffKey, messageContext, messagePlain, seal.messageForStaff)),
        forAccount: wireBox(sealBox(accountKey, messageContext, messagePlain, seal.messageForAccount)),
      },
    },
  };
}

/**
 * Seals a message of either side to `staffKey` and to the ticket's
 * `accountKey` (the account's vault public key): what `sealpost support
 * reply` and `sealpost staff reply` send.
 */
export function sealTicketMessage(
  staffKey: Uint8Array,
  accountKey: Uint8Array,
  ticketId: string,
  text: string,
  options: { messageId?: string; forStaff?: SealOptions; forAccount?: SealOptions } = {},
): Wire['TicketMessageRequest'] {
  const id = options.messageId ?? newTicketMessageId();
  const context = supportMessageContext(ticketId, id);
  const plain = ticketMessagePlaintext(text);
  return {
    id,
    staffKey: b64encode(staffKey),
    forStaff: wireBox(sealBox(staffKey, context, plain, options.forStaff)),
    forAccount: wireBox(sealBox(accountKey, context, plain, options.forAccount)),
  };
}

function parseObject(bytes: Uint8Array, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(fromUtf8(bytes));
  } catch {
    throw new SealError(`not a ticket ${what}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new SealError(`not a ticket ${what}`);
  return value as Record<string, unknown>;
}

/** Opens a header copy with the reader's secret (the account's vault secret, or the support secret). */
export function openTicketHeader(secret: Uint8Array, ticketId: string, sealed: SealedBox | unknown): TicketHeader {
  const o = parseObject(openBox(sealed, secret, supportHeaderContext(ticketId)), 'header');
  const { category, priority, subject } = o;
  if (typeof category !== 'string' || typeof priority !== 'string' || typeof subject !== 'string') throw new SealError('not a ticket header');
  return { category, priority, subject };
}

/** Opens a message copy with the reader's secret: its text. */
export function openTicketMessage(secret: Uint8Array, ticketId: string, messageId: string, sealed: SealedBox | unknown): string {
  const { text } = parseObject(openBox(sealed, secret, supportMessageContext(ticketId, messageId)), 'message');
  if (typeof text !== 'string') throw new SealError('not a ticket message');
  return text;
}

/** The reasons `POST /abuse/reports` takes. */
export const ABUSE_REASONS = ['spam', 'phishing', 'malware', 'harassment', 'illegal_content', 'impersonation', 'other'] as const;
export type AbuseReason = (typeof ABUSE_REASONS)[number];

// ---- What the API answers ----------------------------------------------------

/** `GET /support`: the account's tickets (newest first), whether support takes requests, and its current key. */
export type SupportOverview = Wire['SupportOverview'];
/** A ticket as the account sees it: `header` is the account's sealed copy (`openTicketHeader`). */
export type Ticket = Wire['Ticket'];
/** A ticket with its messages, oldest first; each `box` is the account's sealed copy (`openTicketMessage`). */
export type TicketDetail = Wire['TicketDetail'];
export type TicketMessage = Wire['TicketMessage'];
/** `POST /abuse/reports`: exactly one of `emailAddress` and `messageId`. */
export type AbuseReport = Wire['AbuseReportRequest'];

const seg = (s: string): string => encodeURIComponent(s);

/** The support and abuse paths (no wire names to translate here). */
export const supportRoutes = {
  overview: '/support',
  key: '/support/key',
  tickets: '/support/tickets',
  ticket: (id: string) => `/support/tickets/${seg(id)}`,
  messages: (id: string) => `/support/tickets/${seg(id)}/messages`,
  close: (id: string) => `/support/tickets/${seg(id)}/close`,
  reopen: (id: string) => `/support/tickets/${seg(id)}/reopen`,
  abuseReports: '/abuse/reports',
} as const;
