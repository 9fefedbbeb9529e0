/**
 * The device side of pairing (docs/protocol.md, "Pairing a device"): the
 * device's own X25519 key, its fingerprint, and the key bundle the account
 * seals to it (context `service/v1/worker-keys:<deviceId>`), which holds
 * the secrets of the addresses assigned to the device.
 */
import { x25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';

import { openBoxWith, sealBox, OpenFailed, type BoxRecipient, type SealedBox } from './boxes.js';
import { b64decodeN, b64encode, fromUtf8, randomBytes, SealError, utf8 } from './bytes.js';
import type { AddressSecrets } from './content.js';
import { deviceKeysContext } from './context.js';
import { AccountKeys, publicKeyOf } from './keys.js';

/**
 * The fingerprint a person compares on both sides of a pairing: the first
 * 8 bytes of SHA-256 of the public key, as four groups of four hex digits
 * (`1a2b-3c4d-5e6f-7a8b`), exactly as the CLI shows it.
 */
export function keyFingerprint(publicKey: Uint8Array): string {
  if (publicKey.length !== 32) throw new SealError('a public key is 32 bytes');
  const digest = sha256(publicKey);
  const groups: string[] = [];
  for (let i = 0; i < 8; i += 2) {
    groups.push(((digest[i] as number) * 256 + (digest[i + 1] as number)).toString(16).padStart(4, '0'));
  }
  return groups.join('-');
}

/** `12345678` as `1234 5678`. */
export function spacedCode(code: string): string {
  return /^\d{8}$/.test(code) ? `${code.slice(0, 4)} ${code.slice(4)}` : code;
}

function subtle(): SubtleCrypto {
  const s = globalThis.crypto?.subtle;
  if (s === undefined) throw new SealError('WebCrypto is not available here');
  return s;
}

/**
 * A device's X25519 key held by WebCrypto. `generate()` makes it
 * non-extractable: the secret can compute shared secrets (`deriveBits`) but
 * no script, this one included, can read it. The pair can be stored as is
 * in IndexedDB (structured clone keeps it non-extractable).
 */
export class DeviceKey implements BoxRecipient {
  private constructor(
    readonly privateKey: CryptoKey,
    readonly publicCryptoKey: CryptoKey,
    readonly publicKey: Uint8Array,
  ) {}

  /** A new non-extractable key pair (WebCrypto `X25519`). */
  static async generate(): Promise<DeviceKey> {
    const pair = (await subtle().generateKey({ name: 'X25519' }, false, ['deriveBits'])) as CryptoKeyPair;
    return DeviceKey.fromPair(pair);
  }

  /** A key pair read back from storage. */
  static async fromPair(pair: { privateKey: CryptoKey; publicKey: CryptoKey }): Promise<DeviceKey> {
    if (pair.privateKey.algorithm.name !== 'X25519' || pair.publicKey.algorithm.name !== 'X25519') {
      throw new SealError('not an X25519 key pair');
    }
    const raw = new Uint8Array(await subtle().exportKey('raw', pair.publicKey));
    return new DeviceKey(pair.privateKey, pair.publicKey, raw);
  }

  /** What to store: the two `CryptoKey` objects (the private one non-extractable). */
  pair(): { privateKey: CryptoKey; publicKey: CryptoKey } {
    return { privateKey: this.privateKey, publicKey: this.publicCryptoKey };
  }

  get fingerprint(): string {
    return keyFingerprint(this.publicKey);
  }

  /** `X25519(secret, epk)` through WebCrypto; `OpenFailed` for a low-order `epk`. */
  async sharedSecret(epk: Uint8Array): Promise<Uint8Array> {
    const s = subtle();
    try {
      const other = await s.importKey('raw', Uint8Array.from(epk), { name: 'X25519' }, true, []);
      return new Uint8Array(await s.deriveBits({ name: 'X25519', public: other }, this.privateKey, 256));
    } catch {
      throw new OpenFailed();
    }
  }

  toJSON(): object {
    return { fingerprint: this.fingerprint };
  }
}

/** One address's keys at one epoch, as the bundle carries them. */
export interface BundleEntry {
  addressId: string;
  epoch: number;
  /** The X25519 public key mail to the address is sealed to (compare with the address's `publicKey`). */
  publicKey: Uint8Array;
}

/**
 * A device's key bundle: JSON `{"inboxes": [{"inboxId", "epoch",
 * "inboxKey", "sealingKey"}]}` sealed to the device's key. It opens the mail
 * of the addresses it lists, at the epochs it lists. Keep it in memory;
 * `wipe()` zeroes the secrets.
 */
export class KeyBundle implements AddressSecrets {
  readonly #secrets = new Map<string, Uint8Array>();
  readonly entries: readonly BundleEntry[];

  private constructor(entries: Array<{ addressId: string; epoch: number; secret: Uint8Array }>) {
    const listed: BundleEntry[] = [];
    for (const e of entries) {
      this.#secrets.set(`${e.addressId}\u0000${e.epoch}`, e.secret);
      listed.push({ addressId: e.addressId, epoch: e.epoch, publicKey: publicKeyOf(e.secret) });
    }
    this.entries = listed;
  }

  /** Reads the bundle's JSON (as the Rust client does: `inboxes` required, unknown fields ignored). */
  static parse(json: string): KeyBundle {
    let value: unknown;
    try {
      value = JSON.parse(json);
    } catch (e) {
      throw new SealError(`the key bundle is malformed: ${String(e)}`);
    }
    const list = (value as { inboxes?: unknown } | null)?.inboxes;
    if (!Array.isArray(list)) throw new SealError('the key bundle is malformed: no inboxes');
    return new KeyBundle(
      list.map((raw: unknown, i) => {
        const o = raw as Record<string, unknown> | null;
        const addressId = o?.['inboxId'];
        const epoch = o?.['epoch'];
        const key = o?.['inboxKey'];
        if (typeof addressId !== 'string' || typeof epoch !== 'number' || !Number.isInteger(epoch) || epoch < 0 || typeof key !== 'string') {
          throw new SealError(`the key bundle is malformed: entry ${i}`);
        }
        return { addressId, epoch, secret: b64decodeN(key, 32, 'inboxKey') };
      }),
    );
  }

  /** Opens device `deviceId`'s sealed bundle with its key (a `DeviceKey`, or any `BoxRecipient`). */
  static async open(recipient: BoxRecipient, deviceId: string, sealed: SealedBox | unknown): Promise<KeyBundle> {
    const json = await openBoxWith(sealed, recipient, deviceKeysContext(deviceId));
    try {
      return KeyBundle.parse(fromUtf8(json));
    } finally {
      json.fill(0);
    }
  }

  /** An empty bundle (a device with no address yet). */
  static empty(): KeyBundle {
    return new KeyBundle([]);
  }

  get addressIds(): string[] {
    return [...new Set(this.entries.map((e) => e.addressId))];
  }

  secretFor(addressId: string, epoch: number): Uint8Array | undefined {
    return this.#secrets.get(`${addressId}\u0000${epoch}`);
  }

  /** Zeroes the secrets; the bundle opens nothing afterwards. */
  wipe(): void {
    for (const s of this.#secrets.values()) s.fill(0);
    this.#secrets.clear();
  }

  toJSON(): object {
    return { addresses: this.entries.map((e) => ({ addressId: e.addressId, epoch: e.epoch })) };
  }
}

/**
 * The account's side: seals the epoch 0 keys of `addressIds` to a device
 * (what `sealpost address assign` sends). For tests and operator tools.
 */
export function sealKeyBundle(keys: AccountKeys, addressIds: string[], devicePublicKey: Uint8Array, deviceId: string): SealedBox {
  const inboxes = addressIds.map((id) => ({
    inboxId: id,
    epoch: 0,
    inboxKey: b64encode(keys.addressSecret(id, 0)),
    sealingKey: b64encode(keys.addressSealingKey(id, 0)),
  }));
  return sealBox(devicePublicKey, deviceKeysContext(deviceId), utf8(JSON.stringify({ inboxes })));
}

/** A random X25519 recipient whose secret is plain bytes (Node tests, platforms without WebCrypto X25519). */
export function bytesRecipient(secret: Uint8Array = randomBytes(32)): BoxRecipient & { secret: Uint8Array } {
  return {
    secret,
    publicKey: publicKeyOf(secret),
    sharedSecret: async (epk) => x25519.getSharedSecret(secret, epk),
  };
}
