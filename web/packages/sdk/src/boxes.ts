/**
 * Sealed boxes (CONTRACT section 4): JSON box version 2 (sealed and
 * opened), version 1 (opened only), and the binary form of attachments.
 */
import { gcm } from '@noble/ciphers/aes.js';
import { chacha20poly1305 } from '@noble/ciphers/chacha.js';
import { x25519 } from '@noble/curves/ed25519.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { sha256 } from '@noble/hashes/sha2.js';

import { b64decode, b64encode, concatBytes, randomBytes, SealError, utf8 } from './bytes.js';
import { publicKeyOf } from './keys.js';

const EPK_LEN = 32;
const NONCE_LEN = 12;
const TAG_LEN = 16;
/** version || epk || n || t */
export const BINARY_HEADER_LEN = 1 + EPK_LEN + NONCE_LEN + TAG_LEN;

/** A box as JSON: byte fields base64url without padding. */
export interface SealedBox {
  /** 2 is written; 1 (AES-256-GCM) is only read. */
  v: 1 | 2;
  /** Ephemeral X25519 public key, 32 bytes. */
  epk: string;
  /** AEAD nonce, 12 bytes. */
  n: string;
  /** Ciphertext without the tag. */
  c: string;
  /** AEAD tag, 16 bytes. */
  t: string;
}

/** The decoded fields of a box. */
interface BoxBytes {
  v: number;
  epk: Uint8Array;
  n: Uint8Array;
  c: Uint8Array;
  t: Uint8Array;
}

/** Thrown when a box does not open: wrong key, wrong context, or tampering. */
export class OpenFailed extends SealError {
  override name = 'OpenFailed';
  constructor() {
    super('the box did not open (wrong key, wrong context or tampered)');
  }
}

function boxKey(version: number, shared: Uint8Array, epk: Uint8Array, recipientPublic: Uint8Array): Uint8Array {
  switch (version) {
    case 1:
      return hkdf(sha256, shared, new Uint8Array(0), utf8('service/v1/box'), 32);
    case 2:
      return hkdf(sha256, shared, concatBytes(epk, recipientPublic), utf8('service/v2/box'), 32);
    default:
      throw new SealError(`unsupported box version ${version}`);
  }
}

function fixed(bytes: Uint8Array, length: number, field: string): Uint8Array {
  if (bytes.length !== length) throw new SealError(`${field} must be ${length} bytes`);
  return bytes;
}

function sealBytes(
  recipientPublic: Uint8Array,
  context: string,
  plaintext: Uint8Array,
  ephemeralSecret: Uint8Array,
  nonce: Uint8Array,
): BoxBytes {
  fixed(recipientPublic, 32, 'recipient public key');
  fixed(ephemeralSecret, 32, 'ephemeral secret');
  fixed(nonce, NONCE_LEN, 'n');
  const epk = publicKeyOf(ephemeralSecret);
  const shared = x25519.getSharedSecret(ephemeralSecret, recipientPublic);
  const key = boxKey(2, shared, epk, recipientPublic);
  // noble answers ciphertext || tag.
  const sealed = chacha20poly1305(key, nonce, utf8(context)).encrypt(plaintext);
  const cut = sealed.length - TAG_LEN;
  return { v: 2, epk, n: nonce, c: sealed.slice(0, cut), t: sealed.slice(cut) };
}

function checkFields(box: BoxBytes): void {
  fixed(box.epk, EPK_LEN, 'epk');
  fixed(box.n, NONCE_LEN, 'n');
  fixed(box.t, TAG_LEN, 't');
  if (box.v !== 1 && box.v !== 2) throw new SealError(`unsupported box version ${box.v}`);
}

function openBytes(box: BoxBytes, recipientSecret: Uint8Array, context: string): Uint8Array {
  checkFields(box);
  let shared: Uint8Array;
  try {
    shared = x25519.getSharedSecret(recipientSecret, box.epk);
  } catch {
    // A low-order ephemeral key: nothing sealed by anyone opens with it.
    throw new OpenFailed();
  }
  return openShared(box, shared, publicKeyOf(recipientSecret), context);
}

/** The AEAD step, once the X25519 shared secret is known. */
function openShared(box: BoxBytes, shared: Uint8Array, recipientPublic: Uint8Array, context: string): Uint8Array {
  const { epk, n: nonce, t: tag } = box;
  const key = boxKey(box.v, shared, epk, recipientPublic);
  shared.fill(0);
  const aad = utf8(context);
  const cipher = box.v === 2 ? chacha20poly1305(key, nonce, aad) : gcm(key, nonce, aad);
  try {
    return cipher.decrypt(concatBytes(box.c, tag));
  } catch {
    throw new OpenFailed();
  }
}

function toJson(box: BoxBytes): SealedBox {
  return { v: box.v as 1 | 2, epk: b64encode(box.epk), n: b64encode(box.n), c: b64encode(box.c), t: b64encode(box.t) };
}

/** Checks a box's shape as the service does (and returns its bytes). */
function fromJson(box: unknown): BoxBytes {
  if (typeof box !== 'object' || box === null || Array.isArray(box)) {
    throw new SealError('a box must be an object');
  }
  const o = box as Record<string, unknown>;
  if (o['v'] !== 1 && o['v'] !== 2) throw new SealError('v must be 1 or 2');
  const field = (name: string, len?: number): Uint8Array => {
    const text = o[name];
    if (typeof text !== 'string') throw new SealError(`${name} must be a base64url string`);
    let bytes: Uint8Array;
    try {
      bytes = b64decode(text);
    } catch {
      throw new SealError(`${name} is not valid base64url`);
    }
    if (len !== undefined && bytes.length !== len) throw new SealError(`${name} must be ${len} bytes`);
    return bytes;
  };
  return { v: o['v'] as number, epk: field('epk', EPK_LEN), n: field('n', NONCE_LEN), c: field('c'), t: field('t', TAG_LEN) };
}

/** Whether `value` has the shape of a box (`v` 1 or 2, `epk` 32, `n` 12, `t` 16, `c`). */
export function isSealedBox(value: unknown): value is SealedBox {
  try {
    fromJson(value);
    return true;
  } catch {
    return false;
  }
}

export interface SealOptions {
  /** For test vectors only: never reuse an ephemeral secret. */
  ephemeralSecret?: Uint8Array;
  /** For test vectors only. */
  nonce?: Uint8Array;
}

/**
 * Seals `plaintext` to `recipientPublic` as a version 2 box (X25519,
 * HKDF-SHA256, ChaCha20-Poly1305); `context` is the associated data.
 */
export function sealBox(
  recipientPublic: Uint8Array,
  context: string,
  plaintext: Uint8Array | string,
  options: SealOptions = {},
): SealedBox {
  const bytes = typeof plaintext === 'string' ? utf8(plaintext) : plaintext;
  return toJson(
    sealBytes(
      recipientPublic,
      context,
      bytes,
      options.ephemeralSecret ?? randomBytes(32),
      options.nonce ?? randomBytes(NONCE_LEN),
    ),
  );
}

/** Opens a version 1 or 2 box with the recipient's secret and the context it was sealed with. */
export function openBox(box: SealedBox | unknown, recipientSecret: Uint8Array, context: string): Uint8Array {
  return openBytes(fromJson(box), recipientSecret, context);
}

/** The binary layout: version (2) || epk (32) || n (12) || t (16) || c. Version 2 only. */
export function boxToBinary(box: SealedBox): Uint8Array {
  const b = fromJson(box);
  if (b.v !== 2) throw new SealError(`unsupported box version ${b.v}`);
  return concatBytes(new Uint8Array([2]), b.epk, b.n, b.t, b.c);
}

/** Parses the binary layout; the version byte must be 2. */
export function boxFromBinary(bytes: Uint8Array): SealedBox {
  if (bytes.length === 0) throw new SealError('empty binary box');
  if (bytes[0] !== 2) throw new SealError(`unsupported box version ${bytes[0]}`);
  if (bytes.length < BINARY_HEADER_LEN) {
    throw new SealError(`binary box shorter than ${BINARY_HEADER_LEN} bytes`);
  }
  let at = 1;
  const take = (n: number): Uint8Array => bytes.slice(at, (at += n));
  const epk = take(EPK_LEN);
  const n = take(NONCE_LEN);
  const t = take(TAG_LEN);
  return toJson({ v: 2, epk, n, t, c: bytes.slice(at) });
}

/** Seals to the binary layout (attachments). */
export function sealBinary(
  recipientPublic: Uint8Array,
  context: string,
  plaintext: Uint8Array,
  options: SealOptions = {},
): Uint8Array {
  return boxToBinary(sealBox(recipientPublic, context, plaintext, options));
}

/** Opens a box in the binary layout (attachment bytes as the API answers them). */
export function openBinary(bytes: Uint8Array, recipientSecret: Uint8Array, context: string): Uint8Array {
  if (bytes.length === 0) throw new SealError('empty binary box');
  if (bytes[0] !== 2) throw new SealError(`unsupported box version ${bytes[0]}`);
  if (bytes.length < BINARY_HEADER_LEN) {
    throw new SealError(`binary box shorter than ${BINARY_HEADER_LEN} bytes`);
  }
  const epk = bytes.subarray(1, 33);
  const n = bytes.subarray(33, 45);
  const t = bytes.subarray(45, 61);
  const c = bytes.subarray(61);
  return openBytes({ v: 2, epk, n, t, c }, recipientSecret, context);
}

/**
 * A recipient whose X25519 secret is held elsewhere, for example a
 * non-extractable WebCrypto key: it computes `X25519(secret, epk)` and
 * never hands the secret out. `DeviceKey` is one.
 */
export interface BoxRecipient {
  /** The recipient's X25519 public key (part of the version 2 key derivation). */
  readonly publicKey: Uint8Array;
  /** `X25519(secret, epk)`; rejects (or throws `OpenFailed`) for a low-order `epk`. */
  sharedSecret(epk: Uint8Array): Promise<Uint8Array>;
}

/** `openBox` for a recipient whose secret is not at hand (see `BoxRecipient`). */
export async function openBoxWith(box: SealedBox | unknown, recipient: BoxRecipient, context: string): Promise<Uint8Array> {
  const bytes = fromJson(box);
  checkFields(bytes);
  let shared: Uint8Array;
  try {
    shared = await recipient.sharedSecret(bytes.epk);
  } catch {
    throw new OpenFailed();
  }
  return openShared(bytes, shared, fixed(recipient.publicKey, 32, 'recipient public key'), context);
}
