/**
 * Sealed records of the account's own (CONTRACT section 4), as the Rust
 * client writes them: a device's profile and a webhook's name, both sealed
 * to the account's vault key.
 */
import { openBox, sealBox, type SealedBox } from './boxes.js';
import { b64decodeN, b64encode, fromUtf8, SealError } from './bytes.js';
import { deviceProfileContext, webhookMetaContext } from './context.js';
import { randomIdBody } from './ids.js';
import type { AccountKeys } from './keys.js';

/**
 * A device's profile: JSON `{"name", "tags": [], "notes": "", "publicKey"}`
 * sealed to the vault key, context `service/v1/worker-profile:<workerId>`.
 * `publicKey` is the device's pairing key (base64url): the key bundle is
 * sealed to it. Fields this version does not know are kept in `extra` and
 * written back, so re-sealing (a rename) never drops another client's data.
 */
export interface DeviceProfile {
  name: string;
  tags: string[];
  notes: string;
  publicKey?: string;
  extra: Record<string, unknown>;
}

/** A profile with a name and the device's pairing key, no tags or notes. */
export function newDeviceProfile(name: string, devicePublicKey: Uint8Array): DeviceProfile {
  return { name, tags: [], notes: '', publicKey: b64encode(devicePublicKey), extra: {} };
}

export function sealDeviceProfile(keys: AccountKeys, deviceId: string, profile: DeviceProfile): SealedBox {
  const json: Record<string, unknown> = { ...profile.extra, name: profile.name, tags: profile.tags, notes: profile.notes };
  if (profile.publicKey !== undefined) json['publicKey'] = profile.publicKey;
  return sealBox(keys.vaultPublicKey(), deviceProfileContext(deviceId), JSON.stringify(json));
}

/** Opens a device's profile (`OpenFailed` when it is not the account's, `SealError` when it is not a profile). */
export function openDeviceProfile(keys: AccountKeys, deviceId: string, sealed: SealedBox | unknown): DeviceProfile {
  const bytes = openBox(sealed, keys.vaultSecret(), deviceProfileContext(deviceId));
  let value: unknown;
  try {
    value = JSON.parse(fromUtf8(bytes));
  } catch {
    throw new SealError('the device profile is not JSON');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new SealError('the device profile is not an object');
  const { name, tags, notes, publicKey, ...extra } = value as Record<string, unknown>;
  const text = (v: unknown, what: string): string => {
    if (v === undefined || v === null) return '';
    if (typeof v !== 'string') throw new SealError(`the device profile's ${what} is not text`);
    return v;
  };
  if (tags !== undefined && tags !== null && !(Array.isArray(tags) && tags.every((t) => typeof t === 'string'))) {
    throw new SealError("the device profile's tags are not a list of text");
  }
  const profile: DeviceProfile = { name: text(name, 'name'), tags: (tags as string[] | undefined | null) ?? [], notes: text(notes, 'notes'), extra };
  if (publicKey !== undefined && publicKey !== null) profile.publicKey = text(publicKey, 'publicKey');
  return profile;
}

/** The device's pairing key from its profile, or null when the profile holds no well-formed one. */
export function profileDeviceKey(profile: DeviceProfile): Uint8Array | null {
  if (profile.publicKey === undefined) return null;
  try {
    return b64decodeN(profile.publicKey, 32, 'publicKey');
  } catch {
    return null;
  }
}

/** A webhook's name (`meta`): UTF-8 text sealed to the vault key, context `service/v1/webhook-meta:<id>`. */
export function sealWebhookName(keys: AccountKeys, webhookId: string, name: string): SealedBox {
  return sealBox(keys.vaultPublicKey(), webhookMetaContext(webhookId), name);
}

export function openWebhookName(keys: AccountKeys, webhookId: string, meta: SealedBox | unknown): string {
  return fromUtf8(openBox(meta, keys.vaultSecret(), webhookMetaContext(webhookId)));
}

/** An API key's label: UTF-8 text sealed to the vault key, context `service/v1/api-key-label:<id>`. */
export function sealApiKeyLabel(keys: AccountKeys, keyId: string, label: string): SealedBox {
  return sealBox(keys.vaultPublicKey(), apiKeyLabelContext(keyId), label);
}

export function openApiKeyLabel(keys: AccountKeys, keyId: string, sealed: SealedBox | unknown): string {
  return fromUtf8(openBox(sealed, keys.vaultSecret(), apiKeyLabelContext(keyId)));
}

/** API key label: `service/v1/api-key-label:<keyId>`. */
export const apiKeyLabelContext = (keyId: string): string => `service/v1/api-key-label:${keyId}`;

/** A new API key id: `key_` + 16 random lowercase letters and digits. */
export const newApiKeyId = (): string => `key_${randomIdBody()}`;
