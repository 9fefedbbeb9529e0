/**
 * The recovery phrase and the account keys derived from it (CONTRACT
 * section 2). Nothing secret leaves this module except through the methods
 * that return it on purpose.
 */
import { x25519 } from '@noble/curves/ed25519.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import { hmac } from '@noble/hashes/hmac.js';
import { pbkdf2Async } from '@noble/hashes/pbkdf2.js';
import { sha256, sha512 } from '@noble/hashes/sha2.js';
import { base32nopad } from '@scure/base';
import { entropyToMnemonic, validateMnemonic } from '@scure/bip39';
import { wordlist } from '@scure/bip39/wordlists/english.js';

import { b64encode, randomBytes, SealError, utf8 } from './bytes.js';

/** Number of words in a recovery phrase. */
export const PHRASE_WORDS = 12;
/** HKDF salt of every account key. */
const DERIVE_SALT = utf8('service/v1');
/** BIP-39 PBKDF2 rounds. */
const BIP39_ROUNDS = 2048;

/** The BIP-39 English word list (2048 words). */
export const WORDLIST: readonly string[] = wordlist;

/** Splits on Unicode white space, like Rust's `split_whitespace`. */
function words(text: string): string[] {
  return text.split(/\p{White_Space}+/u).filter((w) => w.length > 0);
}

/** A new 12-word phrase from 16 bytes of platform randomness. */
export function generatePhrase(): string {
  return entropyToMnemonic(randomBytes(16), wordlist);
}

/**
 * Normalises a phrase typed by a person (white space and case) and checks
 * it: exactly 12 words of the English list with a valid BIP-39 checksum.
 * Answers the 12 lowercase words joined by single spaces.
 */
export function parsePhrase(text: string): string {
  const list = words(text).map((w) => w.toLowerCase());
  if (list.length !== PHRASE_WORDS) {
    throw new SealError(`expected ${PHRASE_WORDS} words, got ${list.length}`);
  }
  const unknown = list.findIndex((w) => !wordlist.includes(w));
  if (unknown >= 0) {
    throw new SealError(`word ${unknown + 1} is not in the word list`);
  }
  const normalised = list.join(' ');
  if (!validateMnemonic(normalised, wordlist)) {
    throw new SealError('the checksum does not match');
  }
  return normalised;
}

/**
 * The BIP-39 seed of a (checked) phrase: PBKDF2-HMAC-SHA512, 2048 rounds,
 * salt `mnemonic`, empty passphrase, 64 bytes. Uses WebCrypto where present
 * (about ten times faster), else the pure-JS implementation.
 */
export async function phraseSeed(phrase: string): Promise<Uint8Array> {
  const password = utf8(phrase.normalize('NFKD'));
  const salt = utf8('mnemonic'.normalize('NFKD'));
  const subtle = globalThis.crypto?.subtle;
  if (subtle !== undefined) {
    try {
      const key = await subtle.importKey('raw', password, 'PBKDF2', false, ['deriveBits']);
      const bits = await subtle.deriveBits(
        { name: 'PBKDF2', hash: 'SHA-512', salt, iterations: BIP39_ROUNDS },
        key,
        512,
      );
      return new Uint8Array(bits);
    } catch {
      // Some platforms lack PBKDF2 in WebCrypto: fall through.
    }
  }
  return pbkdf2Async(sha512, password, salt, { c: BIP39_ROUNDS, dkLen: 64 });
}

/** `label` at epoch 0, `label:epoch` from epoch 1 on. */
function epochLabel(prefix: string, addressId: string, epoch: number): string {
  if (!Number.isInteger(epoch) || epoch < 0) throw new SealError('epoch must be a whole number >= 0');
  return epoch === 0 ? `${prefix}:${addressId}` : `${prefix}:${addressId}:${epoch}`;
}

/** The X25519 public key of a 32-byte secret. */
export function publicKeyOf(secret: Uint8Array): Uint8Array {
  return x25519.getPublicKey(secret);
}

/**
 * The sign-in proof (CONTRACT section 3): HMAC-SHA256 keyed with the shared
 * secret over `service/v1/auth:<nonce as sent>:<accountId>`.
 */
export function handshakeProof(shared: Uint8Array, nonceB64: string, accountId: string): Uint8Array {
  return hmac(sha256, shared, utf8(`service/v1/auth:${nonceB64}:${accountId}`));
}

/**
 * The 64-byte seed of an account and everything derived from it. Keep one
 * instance in memory; it never serialises its seed (`toJSON` hides it).
 */
export class AccountKeys {
  readonly #seed: Uint8Array;
  #accountId: string | undefined;

  private constructor(seed: Uint8Array) {
    if (seed.length !== 64) throw new SealError('a seed is 64 bytes');
    this.#seed = Uint8Array.from(seed);
  }

  /** Keys from a BIP-39 seed. */
  static fromSeed(seed: Uint8Array): AccountKeys {
    return new AccountKeys(seed);
  }

  /** Keys from a recovery phrase (checked and normalised first). */
  static async fromPhrase(phrase: string): Promise<AccountKeys> {
    const seed = await phraseSeed(parsePhrase(phrase));
    const keys = new AccountKeys(seed);
    seed.fill(0);
    return keys;
  }

  /** HKDF-SHA256(ikm = seed, salt = `service/v1`, info = label), 32 bytes. */
  derive(label: string): Uint8Array {
    return hkdf(sha256, this.#seed, DERIVE_SALT, utf8(label), 32);
  }

  /** `acct_` + lowercase unpadded base32 of the first 15 bytes of `derive("account-id")`. */
  get accountId(): string {
    this.#accountId ??= `acct_${base32nopad.encode(this.derive('account-id').subarray(0, 15)).toLowerCase()}`;
    return this.#accountId;
  }

  /** The X25519 secret the account signs in with. */
  authSecret(): Uint8Array {
    return this.derive('auth-key');
  }

  /** `authPublicKey`. */
  authPublicKey(): Uint8Array {
    return publicKeyOf(this.authSecret());
  }

  /** `authVerifier` (the service stores only its SHA-256). */
  authVerifier(): Uint8Array {
    return this.derive('auth-verifier');
  }

  /** The vault key: seals the account's own labels. */
  vaultSecret(): Uint8Array {
    return this.derive('vault-key');
  }

  vaultPublicKey(): Uint8Array {
    return publicKeyOf(this.vaultSecret());
  }

  /** `inboxKey` of an address at a key epoch: the secret its mail is sealed to. */
  addressSecret(addressId: string, epoch = 0): Uint8Array {
    return this.derive(epochLabel('inbox-key', addressId, epoch));
  }

  /** Public half of {@link addressSecret}: the address's `publicKey`. */
  addressPublicKey(addressId: string, epoch = 0): Uint8Array {
    return publicKeyOf(this.addressSecret(addressId, epoch));
  }

  /** `sealingKey` of an address at a key epoch. */
  addressSealingKey(addressId: string, epoch = 0): Uint8Array {
    return this.derive(epochLabel('inbox-sealing', addressId, epoch));
  }

  /** The proof answering a challenge (`challengeKey`, `nonce` as sent). */
  handshakeProof(challengeKey: Uint8Array, nonceB64: string, accountId = this.accountId): Uint8Array {
    const shared = x25519.getSharedSecret(this.authSecret(), challengeKey);
    return handshakeProof(shared, nonceB64, accountId);
  }

  /** The registration body: public values only. */
  registration(): { accountId: string; authVerifier: string; authPublicKey: string } {
    return {
      accountId: this.accountId,
      authVerifier: b64encode(this.authVerifier()),
      authPublicKey: b64encode(this.authPublicKey()),
    };
  }

  /** Overwrites the seed; the object is unusable afterwards. */
  wipe(): void {
    this.#seed.fill(0);
  }

  toJSON(): string {
    return 'AccountKeys(..)';
  }

  toString(): string {
    return 'AccountKeys(..)';
  }
}

/**
 * Six words both people compare before joining a team: SHA-256 over
 * `service/v1/team-fingerprint:` || public key, first 66 bits, 11 bits a word.
 */
export function teamFingerprint(publicKey: Uint8Array): string[] {
  const digest = sha256(new Uint8Array([...utf8('service/v1/team-fingerprint:'), ...publicKey]));
  let bits = 0n;
  for (const byte of digest.subarray(0, 16)) bits = (bits << 8n) | BigInt(byte);
  const out: string[] = [];
  for (let i = 0; i < 6; i++) {
    const shift = BigInt(128 - 11 * (i + 1));
    out.push(wordlist[Number((bits >> shift) & 0x7ffn)] as string);
  }
  return out;
}
