/** Client-made ids: prefix + 16 random lowercase letters and digits (about 82 bits). */
import { randomBytes } from './bytes.js';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
const ID_LEN = 16;

/** `length` random lowercase letters and digits, without modulo bias. */
export function randomIdBody(length = ID_LEN): string {
  let body = '';
  while (body.length < length) {
    for (const byte of randomBytes(32)) {
      // 252 = 7 * 36: bytes at or above it are dropped.
      if (byte < 252 && body.length < length) body += ALPHABET[byte % 36];
    }
  }
  return body;
}

/** A new address id: `ibx_` + 16 random lowercase letters and digits. */
export const newAddressId = (): string => `ibx_${randomIdBody()}`;
/** A new device id: `wkr_` + 16 random lowercase letters and digits. */
export const newDeviceId = (): string => `wkr_${randomIdBody()}`;
/** A new webhook id: `whk_` + 16 random lowercase letters and digits. */
export const newWebhookId = (): string => `whk_${randomIdBody()}`;

/** The shape the service accepts for client-chosen address ids. */
export const ADDRESS_ID_PATTERN = /^ibx_[A-Za-z0-9]{4,48}$/;
