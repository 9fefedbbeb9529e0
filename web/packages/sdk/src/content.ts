/**
 * Received mail: the sealed message content (CONTRACT section 5), opened
 * with the key of its address at its key epoch, and its attachments.
 */
import { openBinary, openBox, type SealedBox } from './boxes.js';
import { fromUtf8, randomBytes, SealError } from './bytes.js';
import { attachmentContext, messageContext } from './context.js';
import { AccountKeys, publicKeyOf } from './keys.js';
import { codesAndLinks, htmlToText } from './mailtext.js';

/** An attachment as listed in the message content. */
export interface AttachmentInfo {
  /** Zero-based, in the order the parts appear: the index to download it by. */
  index: number;
  /** As the sender named it: never use it as a path unchecked. */
  filename: string | null;
  /** `type/subtype`, lower case. */
  contentType: string;
  /** Decoded size. */
  sizeBytes: number;
  /** False for an attachment over 20 MB: listed, but its bytes were not kept. */
  stored: boolean;
}

/** A message's sealed content. Absent values are null, absent lists empty. */
export interface MessageContent {
  /** `Name <addr>` or `addr`; several mailboxes joined with `, `. */
  from: string | null;
  to: string[];
  cc: string[];
  replyTo: string | null;
  subject: string | null;
  /** The `Date:` header, RFC 3339 UTC. */
  date: string | null;
  /** The `Message-ID:` header in angle brackets. */
  messageIdHeader: string | null;
  /** The text/plain body parts, joined by a newline. */
  text: string | null;
  /** The text/html body parts, joined by a newline. */
  html: string | null;
  attachments: AttachmentInfo[];
}

/** The part of a message needed to open it (the API's message object has more). */
export interface SealedMessage {
  id: string;
  addressId: string;
  keyEpoch: number;
  content: SealedBox;
}

/** The content, plus what a reader takes out of it. */
export interface OpenedMessage extends MessageContent {
  /** One-time codes, those close to a word like "code" first. */
  codes: string[];
  /** `http`/`https` links of the text and the HTML. */
  links: string[];
  /** The text body, else the HTML body as text, else empty. */
  bodyText: string;
}

/** Thrown when the keys at hand do not include the message's address at its epoch. */
export class NoKeyError extends SealError {
  override name = 'NoKeyError';
  constructor(
    readonly addressId: string,
    readonly epoch: number,
  ) {
    super(`no key for address ${addressId} at key epoch ${epoch}`);
  }
}

/** Where the secret keys of addresses come from when opening mail. */
export interface AddressSecrets {
  /** The X25519 secret mail to `addressId` at key `epoch` is sealed to, if held. */
  secretFor(addressId: string, epoch: number): Uint8Array | undefined;
}

/**
 * The keys of one address at one key epoch: derived from the account's
 * phrase, or generated for an address created by automation that keeps
 * its own key. Its `toJSON` hides the secret.
 */
export class AddressKey implements AddressSecrets {
  readonly #secret: Uint8Array;
  readonly publicKey: Uint8Array;

  constructor(
    readonly addressId: string,
    secret: Uint8Array,
    readonly epoch = 0,
  ) {
    if (secret.length !== 32) throw new SealError('an address secret is 32 bytes');
    this.#secret = Uint8Array.from(secret);
    this.publicKey = publicKeyOf(this.#secret);
  }

  /** Epoch `epoch`'s key of `addressId`, derived from the account's phrase. */
  static derive(keys: AccountKeys, addressId: string, epoch = 0): AddressKey {
    return new AddressKey(addressId, keys.addressSecret(addressId, epoch), epoch);
  }

  /** A fresh random key pair for `addressId`: only its holder can read the address's mail. */
  static generate(addressId: string): AddressKey {
    return new AddressKey(addressId, randomBytes(32), 0);
  }

  /** The secret (to store it somewhere safe, for example a secrets manager). */
  secret(): Uint8Array {
    return Uint8Array.from(this.#secret);
  }

  secretFor(addressId: string, epoch: number): Uint8Array | undefined {
    return addressId === this.addressId && epoch === this.epoch ? this.#secret : undefined;
  }

  toJSON(): object {
    return { addressId: this.addressId, epoch: this.epoch };
  }
}

/** The account's keys open every address of the account at every epoch. */
export function accountSecrets(keys: AccountKeys): AddressSecrets {
  return { secretFor: (addressId, epoch) => keys.addressSecret(addressId, epoch) };
}

function secrets(keys: AccountKeys | AddressSecrets): AddressSecrets {
  return keys instanceof AccountKeys ? accountSecrets(keys) : keys;
}

function secretOf(keys: AccountKeys | AddressSecrets, message: SealedMessage): Uint8Array {
  const secret = secrets(keys).secretFor(message.addressId, message.keyEpoch);
  if (secret === undefined) throw new NoKeyError(message.addressId, message.keyEpoch);
  return secret;
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const strList = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

/**
 * Reads content JSON as the Rust client does: missing fields and nulls read
 * as null or empty, unknown fields are ignored.
 */
export function parseMessageContent(json: string): MessageContent {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (e) {
    throw new SealError(`the sealed content is malformed: ${String(e)}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SealError('the sealed content is malformed: not an object');
  }
  const o = value as Record<string, unknown>;
  const attachments = Array.isArray(o['attachments']) ? (o['attachments'] as unknown[]) : [];
  return {
    from: str(o['from']),
    to: strList(o['to']),
    cc: strList(o['cc']),
    replyTo: str(o['replyTo']),
    subject: str(o['subject']),
    date: str(o['date']),
    messageIdHeader: str(o['messageIdHeader']),
    text: str(o['text']),
    html: str(o['html']),
    attachments: attachments
      .filter((a): a is Record<string, unknown> => typeof a === 'object' && a !== null)
      .map((a) => ({
        index: num(a['index']),
        filename: str(a['filename']),
        contentType: str(a['contentType']) ?? '',
        sizeBytes: num(a['sizeBytes']),
        stored: a['stored'] !== false,
      })),
  };
}

/**
 * Opens a message's content with the key of its address at its key epoch
 * (context `service/v1/message:<inboxId>:<messageId>`), and finds its codes
 * and links.
 */
export function openMessage(keys: AccountKeys | AddressSecrets, message: SealedMessage): OpenedMessage {
  const json = openBox(message.content, secretOf(keys, message), messageContext(message.addressId, message.id));
  const content = parseMessageContent(fromUtf8(json));
  const found = codesAndLinks(content.subject, content.text, content.html);
  const bodyText = content.text ?? (content.html !== null ? htmlToText(content.html) : '');
  return { ...content, codes: found.codes, links: found.links, bodyText };
}

/** Opens the sealed bytes of attachment `index` (binary box, context `service/v1/attachment:<messageId>:<index>`). */
export function openAttachment(
  keys: AccountKeys | AddressSecrets,
  message: SealedMessage,
  index: number,
  sealed: Uint8Array,
): Uint8Array {
  return openBinary(sealed, secretOf(keys, message), attachmentContext(message.id, index));
}
