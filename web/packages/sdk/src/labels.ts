/** Address labels: UTF-8 text sealed to the account's vault key (`service/v1/inbox-meta:<id>`). */
import { openBox, sealBox, type SealedBox } from './boxes.js';
import { fromUtf8 } from './bytes.js';
import { addressMetaContext } from './context.js';
import type { AccountKeys } from './keys.js';

export function sealLabel(keys: AccountKeys, addressId: string, label: string): SealedBox {
  return sealBox(keys.vaultPublicKey(), addressMetaContext(addressId), label);
}

export function openLabel(keys: AccountKeys, addressId: string, meta: SealedBox): string {
  return fromUtf8(openBox(meta, keys.vaultSecret(), addressMetaContext(addressId)));
}
