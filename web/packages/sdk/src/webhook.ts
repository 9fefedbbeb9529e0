/**
 * Receiving webhooks: the `Service-Signature: t=<unix seconds>,v1=<hex>`
 * header checked against the raw request body (HMAC-SHA256 keyed with the
 * UTF-8 bytes of the whole `whsec_...` secret, over `<t>.<raw body>`), with
 * a five-minute tolerance either way. The same rules as the Rust
 * `sealpost-signature` crate.
 */
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';

import { concatBytes, equalBytes, fromUtf8, hexEncode, utf8 } from './bytes.js';

export const SIGNATURE_HEADER = 'Service-Signature';
export const EVENT_ID_HEADER = 'Service-Event-Id';
export const EVENT_TYPE_HEADER = 'Service-Event-Type';
export const DELIVERY_ID_HEADER = 'Service-Delivery-Id';
/** Signature age tolerance (both ways), in seconds. */
export const TOLERANCE_SECONDS = 300;

export type WebhookErrorKind =
  | 'missing_header'
  | 'malformed'
  | 'missing_timestamp'
  | 'missing_signature'
  | 'mismatch'
  | 'too_old'
  | 'too_new'
  | 'invalid_body'
  | 'event_id_mismatch';

/** Why a webhook request was refused: answer it with a 4xx (Sealpost retries). */
export class WebhookVerifyError extends Error {
  override name = 'WebhookVerifyError';
  constructor(
    readonly kind: WebhookErrorKind,
    message: string,
  ) {
    super(message);
  }
}

const trim = (s: string): string => s.replace(/^\p{White_Space}+|\p{White_Space}+$/gu, '');

function mac(secret: string, timestampText: string, body: Uint8Array): Uint8Array {
  return hmac(sha256, utf8(secret), concatBytes(utf8(timestampText), utf8('.'), body));
}

function bodyBytes(body: Uint8Array | string): Uint8Array {
  return typeof body === 'string' ? utf8(body) : body;
}

/** The `Service-Signature` value for `body` signed at `timestamp` (tests, local tools). */
export function signWebhook(secret: string, timestamp: number, body: Uint8Array | string): string {
  return `t=${timestamp},v1=${hexEncode(mac(secret, String(timestamp), bodyBytes(body)))}`;
}

function decodeHex(text: string): Uint8Array | undefined {
  if (text.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(text)) return undefined;
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return out;
}

function parseHeader(header: string): { text: string; seconds: bigint; signatures: string[] } {
  let timestamp: { text: string; seconds: bigint } | undefined;
  const signatures: string[] = [];
  for (const raw of header.split(',')) {
    const entry = trim(raw);
    if (entry === '') continue;
    const eq = entry.indexOf('=');
    if (eq < 0) throw new WebhookVerifyError('malformed', 'malformed Service-Signature header: each entry must be key=value');
    const key = trim(entry.slice(0, eq));
    const value = trim(entry.slice(eq + 1));
    if (key === 't') {
      if (timestamp !== undefined) {
        throw new WebhookVerifyError('malformed', 'malformed Service-Signature header: t= appears more than once');
      }
      if (value === '' || value.length > 18 || !/^[0-9]+$/.test(value)) {
        throw new WebhookVerifyError('malformed', 'malformed Service-Signature header: t= must be unix seconds');
      }
      timestamp = { text: value, seconds: BigInt(value) };
    } else if (key === 'v1') {
      signatures.push(value);
    }
  }
  if (timestamp === undefined) throw new WebhookVerifyError('missing_timestamp', 'Service-Signature has no t= timestamp');
  if (signatures.length === 0) throw new WebhookVerifyError('missing_signature', 'Service-Signature has no v1= signature');
  return { ...timestamp, signatures };
}

/**
 * Checks a `Service-Signature` header against the raw body and the
 * receiver's clock (`nowUnix`, seconds; default: now). The signature is
 * checked first, then the age: `too_old`/`too_new` mean genuine but more
 * than `toleranceSeconds` away. Throws {@link WebhookVerifyError}.
 */
export function verifyWebhookSignature(
  secret: string,
  header: string,
  rawBody: Uint8Array | string,
  nowUnix: number = Math.floor(Date.now() / 1000),
  toleranceSeconds: number = TOLERANCE_SECONDS,
): void {
  const parsed = parseHeader(header);
  const expected = mac(secret, parsed.text, bodyBytes(rawBody));
  const matched = parsed.signatures.some((candidate) => {
    const tag = decodeHex(candidate);
    return tag !== undefined && equalBytes(tag, expected);
  });
  if (!matched) throw new WebhookVerifyError('mismatch', 'signature does not match');
  const now = BigInt(Math.trunc(nowUnix));
  const tolerance = BigInt(toleranceSeconds);
  const age = now - parsed.seconds;
  if (age > tolerance) {
    throw new WebhookVerifyError('too_old', `signature timestamp is ${age} seconds old (more than ${tolerance})`);
  }
  if (-age > tolerance) {
    throw new WebhookVerifyError(
      'too_new',
      `signature timestamp is ${-age} seconds in the future (more than ${tolerance})`,
    );
  }
}

/** A verified event: the body `{id, type, createdAt, payload}`. */
export interface WebhookEvent {
  /** `evt_...`: the same on every attempt and redelivery; deduplicate on it. */
  id: string;
  /** For example `message.received` or `webhook.test`. */
  type: string;
  /** RFC 3339; order by it (events can arrive out of order). */
  createdAt: string;
  /** Ids only, never message content. */
  payload: unknown;
}

/** Request headers of any server: a `Headers`, a plain object, or `[name, value]` pairs. */
export type HeaderSource =
  | { get(name: string): string | null }
  | Record<string, string | string[] | undefined>
  | ReadonlyArray<readonly [string, string]>;

function header(headers: HeaderSource, name: string): string | undefined {
  const lower = name.toLowerCase();
  if (Array.isArray(headers)) {
    const found = (headers as ReadonlyArray<readonly [string, string]>).find(([k]) => k.toLowerCase() === lower);
    return found?.[1];
  }
  if (typeof (headers as { get?: unknown }).get === 'function') {
    return (headers as { get(name: string): string | null }).get(name) ?? undefined;
  }
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (key.toLowerCase() === lower) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

/**
 * Verifies a webhook request and answers its event. `rawBody` must be the
 * bytes exactly as received (before any JSON parsing). When
 * `Service-Event-Id` is present it must name the signed body's event.
 */
export function verifyWebhook(
  secret: string,
  headers: HeaderSource,
  rawBody: Uint8Array | string,
  nowUnix?: number,
): WebhookEvent {
  const signature = header(headers, SIGNATURE_HEADER);
  if (signature === undefined) throw new WebhookVerifyError('missing_header', 'missing Service-Signature header');
  const bytes = bodyBytes(rawBody);
  verifyWebhookSignature(secret, signature, bytes, nowUnix);
  let body: unknown;
  try {
    body = JSON.parse(fromUtf8(bytes));
  } catch (e) {
    throw new WebhookVerifyError('invalid_body', `webhook body is not an event: ${String(e)}`);
  }
  const o = body as Record<string, unknown> | null;
  if (
    o === null ||
    typeof o !== 'object' ||
    typeof o['id'] !== 'string' ||
    typeof o['type'] !== 'string' ||
    typeof o['createdAt'] !== 'string'
  ) {
    throw new WebhookVerifyError('invalid_body', 'webhook body is not an event: it needs id, type and createdAt');
  }
  const event: WebhookEvent = { id: o['id'], type: o['type'], createdAt: o['createdAt'], payload: o['payload'] ?? null };
  const eventId = header(headers, EVENT_ID_HEADER);
  if (eventId !== undefined && trim(eventId) !== event.id) {
    throw new WebhookVerifyError('event_id_mismatch', 'Service-Event-Id does not match the signed body');
  }
  return event;
}
