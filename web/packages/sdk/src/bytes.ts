/**
 * Byte helpers: base64url without padding (every binary value on the wire),
 * hex, UTF-8, random bytes. Browser and Node 20+ alike (no Node APIs).
 */
import { base64urlnopad, hex } from '@scure/base';

/** Thrown for malformed input: bad base64url, wrong lengths, bad phrases. */
export class SealError extends Error {
  override name = 'SealError';
}

/** Base64url without padding. */
export function b64encode(bytes: Uint8Array): string {
  return base64urlnopad.encode(bytes);
}

/**
 * Decodes base64url without padding; padding, the standard alphabet and
 * non-canonical trailing bits are refused (as the service does).
 */
export function b64decode(text: string): Uint8Array {
  try {
    return base64urlnopad.decode(text);
  } catch {
    throw new SealError('invalid base64url');
  }
}

/** Decodes base64url that must hold exactly `length` bytes. */
export function b64decodeN(text: string, length: number, what = 'value'): Uint8Array {
  const bytes = b64decode(text);
  if (bytes.length !== length) {
    throw new SealError(`${what} must be ${length} bytes, got ${bytes.length}`);
  }
  return bytes;
}

export function hexEncode(bytes: Uint8Array): string {
  return hex.encode(bytes);
}

export function hexDecode(text: string): Uint8Array {
  try {
    return hex.decode(text.toLowerCase());
  } catch {
    throw new SealError('invalid hex');
  }
}

const encoder = new TextEncoder();
const strictDecoder = new TextDecoder('utf-8', { fatal: true });

export function utf8(text: string): Uint8Array<ArrayBuffer> {
  return encoder.encode(text);
}

/** Decodes UTF-8, refusing malformed bytes. */
export function fromUtf8(bytes: Uint8Array): string {
  try {
    return strictDecoder.decode(bytes);
  } catch {
    throw new SealError('not valid UTF-8');
  }
}

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** `length` bytes from the platform's cryptographic generator. */
export function randomBytes(length: number): Uint8Array {
  const out = new Uint8Array(length);
  globalThis.crypto.getRandomValues(out);
  return out;
}

/** Constant-time equality of two byte strings of the same length. */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= (a[i] as number) ^ (b[i] as number);
  return diff === 0;
}

/** Overwrites `bytes` with zeros (best effort: JS may hold copies). */
export function wipe(bytes: Uint8Array): void {
  bytes.fill(0);
}
