/**
 * Teams (docs/api.md "Teams", docs/protocol.md "Teams"), as the Rust SDK
 * (`sealpost_client::teams`) does them, byte for byte: join codes and their
 * six-word fingerprint, the pin of a member's key in the owner's vault, and
 * an address's keys sealed to a member (a grant) and opened by it.
 *
 * A grant holds one address's keys at one epoch as the JSON
 * `{"inboxKey":"…","sealingKey":"…"}` (base64url, in that order), sealed to
 * the member's sign-in key with the associated data
 * `service/v1/team-grant:<owner>:<member>:<inbox>:<epoch>`. The service
 * stores the boxes and never holds a key that opens mail.
 */
import { openBox, sealBox, type SealedBox, type SealOptions } from './boxes.js';
import { b64decodeN, b64encode, SealError, utf8 } from './bytes.js';
import type { AddressSecrets } from './content.js';
import { teamGrantContext } from './context.js';
import { teamFingerprint, type AccountKeys } from './keys.js';

/** The prefix of a join code. */
export const JOIN_CODE_PREFIX = 'service-team-1';
const ACCOUNT_ID = /^acct_[a-z2-7]{24}$/;

/** What a person joining a team gives the owner: `service-team-1.<account id>.<sign-in public key>`. */
export interface JoinCode {
  accountId: string;
  /** The account's X25519 sign-in public key, 32 bytes. */
  publicKey: Uint8Array;
}

/** The join code of the account `keys` belong to. */
export function joinCodeFor(keys: AccountKeys): JoinCode {
  return { accountId: keys.accountId, publicKey: keys.authPublicKey() };
}

/** The code as text. */
export function formatJoinCode(code: JoinCode): string {
  return `${JOIN_CODE_PREFIX}.${code.accountId}.${b64encode(code.publicKey)}`;
}

/**
 * Reads a join code (white space around it ignored). Throws a `SealError`
 * that says what is wrong, as the Rust SDK's `JoinCodeError` does.
 */
export function parseJoinCode(text: string): JoinCode {
  const parts = text.trim().split('.');
  if (parts.length !== 3) {
    throw new SealError('a join code has three parts separated by dots: service-team-1.<account id>.<key>');
  }
  const [prefix, accountId, key] = parts as [string, string, string];
  if (prefix !== JOIN_CODE_PREFIX) throw new SealError('a join code starts with service-team-1.');
  if (!ACCOUNT_ID.test(accountId)) throw new SealError("the join code's account id is malformed");
  let publicKey: Uint8Array;
  try {
    publicKey = b64decodeN(key, 32, 'key');
  } catch {
    throw new SealError("the join code's key is not a 32-byte key in base64url");
  }
  return { accountId, publicKey };
}

/** The six words, separated by spaces, both people compare before the owner adds the member. */
export function teamKeyFingerprint(publicKey: Uint8Array): string {
  return teamFingerprint(publicKey).join(' ');
}

/** The member's key sealed to the owner's vault (no associated data): the `pin` of `POST /team/members`. */
export function sealPin(owner: AccountKeys, memberKey: Uint8Array, options: SealOptions = {}): SealedBox {
  return sealBox(owner.vaultPublicKey(), '', memberKey, options);
}

/**
 * The member's key as the owner pinned it: the pin opened with the owner's
 * vault key must be the key the service shows (`publicKey`), else the
 * service (or someone in between) changed it and nothing may be sealed to
 * it. Throws `SealError` then.
 */
export function pinnedKey(owner: AccountKeys, member: { memberId: string; publicKey: string; pin: SealedBox }): Uint8Array {
  let shown: Uint8Array;
  try {
    shown = b64decodeN(member.publicKey, 32, 'publicKey');
  } catch {
    throw new SealError(`the key the service shows for ${member.memberId} is malformed`);
  }
  let pinned: Uint8Array;
  try {
    pinned = openBox(member.pin, owner.vaultSecret(), '');
  } catch {
    throw new SealError(`the pin of ${member.memberId} does not open with this account's vault key`);
  }
  if (pinned.length !== 32 || !pinned.every((byte, i) => byte === shown[i])) {
    throw new SealError(`the key the service shows for ${member.memberId} is not the key you added; nothing was shared`);
  }
  return shown;
}

/** The JSON a grant holds: the owner's keys of `addressId` at `epoch`. */
export function grantPlaintext(owner: AccountKeys, addressId: string, epoch: number): Uint8Array {
  return utf8(
    JSON.stringify({
      inboxKey: b64encode(owner.addressSecret(addressId, epoch)),
      sealingKey: b64encode(owner.addressSealingKey(addressId, epoch)),
    }),
  );
}

/** The owner's keys of `addressId` at `epoch`, sealed to the member. */
export function sealGrant(
  owner: AccountKeys,
  memberId: string,
  memberKey: Uint8Array,
  addressId: string,
  epoch: number,
  options: SealOptions = {},
): SealedBox {
  const context = teamGrantContext(owner.accountId, memberId, addressId, epoch);
  return sealBox(memberKey, context, grantPlaintext(owner, addressId, epoch), options);
}

/** An address's keys at one epoch, as a grant hands them to a member. */
export interface GrantedKeys {
  addressId: string;
  epoch: number;
  /** The X25519 secret the address's mail at that epoch is sealed to. */
  addressSecret: Uint8Array;
  sealingKey: Uint8Array;
}

/** Opens one grant as the member; throws `OpenFailed` or `SealError` when it does not open. */
export function openGrant(member: AccountKeys, ownerId: string, addressId: string, epoch: number, sealed: SealedBox): GrantedKeys {
  const json = openBox(sealed, member.authSecret(), teamGrantContext(ownerId, member.accountId, addressId, epoch));
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(json));
  } catch {
    throw new SealError('a grant does not hold JSON');
  }
  const o = (parsed ?? {}) as Record<string, unknown>;
  const key = (name: string): Uint8Array => {
    const text = o[name];
    if (typeof text !== 'string') throw new SealError(`a grant has no ${name}`);
    return b64decodeN(text, 32, name);
  };
  return { addressId, epoch, addressSecret: key('inboxKey'), sealingKey: key('sealingKey') };
}

/** The part of a membership `sharedSecrets` reads (see `Membership`). */
export interface SharedGrants {
  ownerId: string;
  addresses: Array<{ addressId: string; grants: Array<{ epoch: number; sealed: SealedBox }> }>;
}

/**
 * Every key shared with the member across its memberships, as secrets that
 * open shared mail; grants that do not open are left out. With `fallback`
 * (the member's own keys), an address not shared is asked of it.
 */
export function sharedSecrets(member: AccountKeys, memberships: SharedGrants[], fallback?: AddressSecrets): AddressSecrets & { size: number } {
  const held = new Map<string, Uint8Array>();
  const shared = new Set<string>();
  for (const membership of memberships) {
    for (const address of membership.addresses) {
      shared.add(address.addressId);
      for (const grant of address.grants) {
        try {
          const keys = openGrant(member, membership.ownerId, address.addressId, grant.epoch, grant.sealed);
          held.set(`${address.addressId}:${grant.epoch}`, keys.addressSecret);
        } catch {
          // A grant that does not open opens nothing.
        }
      }
    }
  }
  return {
    size: held.size,
    secretFor: (addressId, epoch) => {
      const found = held.get(`${addressId}:${epoch}`);
      if (found !== undefined || shared.has(addressId)) return found;
      return fallback?.secretFor(addressId, epoch);
    },
  };
}
