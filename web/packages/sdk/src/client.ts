/**
 * A typed client of the Sealpost HTTP API (fetch-based: browsers and Node
 * 20+). Request and response bodies are the generated OpenAPI types,
 * presented with product words (see `wire.ts`). The recovery phrase and the
 * keys never leave the process: registration sends public values only and
 * sign-in answers a challenge with a proof. The token travels only in the
 * `Authorization` header, never in a URL.
 */
import { b64decodeN, b64encode, SealError } from './bytes.js';
import type { SealedBox } from './boxes.js';
import { AddressKey, openMessage, type AddressSecrets, type OpenedMessage } from './content.js';
import { readFrames, type StreamedEvent } from './events.js';
import { newAddressId, newDeviceId, newWebhookId } from './ids.js';
import { sealKeyBundle } from './device.js';
import {
  newApiKeyId,
  newDeviceProfile,
  openDeviceProfile,
  profileDeviceKey,
  sealApiKeyLabel,
  sealDeviceProfile,
  sealWebhookName,
  type DeviceProfile,
} from './profile.js';
import { AccountKeys } from './keys.js';
import { pinnedKey, sealGrant, sealPin, type JoinCode } from './teams.js';
import {
  sealNewTicket,
  sealTicketMessage,
  supportKeyBinding,
  supportRoutes,
  type AbuseReport,
  type SupportOverview,
  type Ticket,
  type TicketDetail,
  type TicketHeader,
} from './support.js';
import {
  accountRoutes,
  addMemberBody,
  assignBody,
  grantsBody,
  toMembership,
  toTeam,
  toTeamMember,
  type GrantAccess,
  type GrantToSend,
  type Membership,
  type Team,
  type TeamMember,
  claimBody,
  toPairingLookup,
  type ApiKey,
  type DnsRecord,
  type OwnDomain,
  type Checkout,
  type Delivery,
  type DeliveryStatus,
  type PairingLookup,
  type Payment,
  type Plan,
  type PlanId,
  type Provider,
  type Subscription,
  type Webhook,
  type WebhookEventType,
  createAddressBody,
  deliverBody,
  query,
  routes,
  toAddress,
  toAddressList,
  toDevice,
  toDeviceList,
  toMessage,
  toMessagePage,
  toPairingPoll,
  toSession,
  toWaitResult,
  type Address,
  type Allocation,
  type Deletion,
  type Device,
  type Domain,
  type Folder,
  type FolderCounts,
  type Message,
  type MessagePage,
  type NewAddress,
  type OpenedPairing,
  type Overview,
  type PairingPoll,
  type Session,
  type Usage,
  type WaitResult,
  type Wire,
} from './wire.js';

/** The longest one wait request may be asked to wait (1 to 60 seconds). */
export const MAX_WAIT_SECONDS = 60;
/** How much longer than the wait itself its request may take. */
const WAIT_GRACE_MS = 15_000;
const REQUEST_TIMEOUT_MS = 30_000;
/** Pause after a 429 or 5xx while waiting, when the service does not say. */
const RETRY_PAUSE_MS = 2_000;

/**
 * Every code the API answers with: the enum of `ErrorDetail.code` in the
 * OpenAPI document, made from the server's one error table.
 */
export type ErrorCode = Wire['ErrorDetail']['code'];

/**
 * A non-2xx answer: `code` is the API's error code (`not_found`,
 * `rate_limited`, ...), or `http_error` when the answer was not the API's
 * error body (a proxy's page, for example).
 */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: ErrorCode | 'http_error',
    message: string,
    /** Seconds, from `Retry-After`. */
    readonly retryAfter: number | undefined,
    readonly requestId: string | undefined,
  ) {
    super(`${message} (${code}, HTTP ${status})`);
  }
}

/** Support takes no requests now (no support key set, or switched off): nothing was sent. */
export class SupportUnavailable extends Error {
  override name = 'SupportUnavailable';
  constructor() {
    super('in-app support is unavailable on this service right now; nothing was sent');
  }
}

/** No (unread) mail arrived before the deadline. */
export class WaitTimeoutError extends Error {
  override name = 'WaitTimeoutError';
}

export interface ClientOptions {
  /** For example `https://api.example.com` or `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** Bearer token: a session token, a device credential or an API key (`spk_...`). */
  token?: string;
  /** The account's keys, when known: addresses get derived keys, mail opens without more. */
  keys?: AccountKeys;
  /** Another fetch (tests, proxies). */
  fetch?: typeof globalThis.fetch;
}

interface RequestOptions {
  body?: unknown;
  auth?: boolean;
  timeoutMs?: number;
  signal?: AbortSignal | undefined;
}

/** An address just created, with the key its mail is sealed to. */
export interface CreatedAddress extends Address {
  key: AddressKey;
}

/** A message from `nextMessage`, with the cursor to wait after next. */
export interface ReceivedMessage extends Message {
  cursor: string;
}

export interface WaitOptions {
  /** Give up after this many seconds in all (default 60). */
  timeoutSeconds?: number;
  /** A previous answer's cursor; absent: any mail already in the address counts; `now`: only new mail. */
  after?: string;
  /** Also answer mail already marked read (default: unread only). */
  includeRead?: boolean;
  signal?: AbortSignal;
}

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });

export class SealpostClient {
  readonly baseUrl: string;
  readonly keys: AccountKeys | undefined;
  readonly #token: string | undefined;
  readonly #fetch: typeof globalThis.fetch;

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#token = options.token;
    this.keys = options.keys;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** Registers the account of `keys` (a new phrase) and answers a signed-in client. */
  static async register(options: ClientOptions & { keys: AccountKeys }): Promise<SealpostClient> {
    const session = await new SealpostClient(options).register(options.keys);
    return new SealpostClient({ ...options, token: session.token });
  }

  /** Signs in with the challenge handshake and answers a signed-in client. */
  static async signIn(options: ClientOptions & { keys: AccountKeys }): Promise<SealpostClient> {
    const session = await new SealpostClient(options).signIn(options.keys);
    return new SealpostClient({ ...options, token: session.token });
  }

  /** The same client with another token (and keys). */
  withToken(token: string, keys: AccountKeys | undefined = this.keys): SealpostClient {
    return new SealpostClient({ baseUrl: this.baseUrl, token, ...(keys ? { keys } : {}), fetch: this.#fetch });
  }

  get signedIn(): boolean {
    return this.#token !== undefined;
  }

  // ---- Account ------------------------------------------------------------------

  /** `POST /accounts`: registers the account of `keys`; `id_taken` when it exists. */
  async register(keys: AccountKeys): Promise<Session> {
    const body: Wire['RegisterRequest'] = keys.registration();
    return toSession(await this.#json<Wire['SignedIn']>('POST', routes.register, { body, auth: false }));
  }

  /** `POST /accounts/challenge` then `/accounts/verify` with the proof; `unauthenticated` for a wrong phrase. */
  async signIn(keys: AccountKeys): Promise<Session> {
    const accountId = keys.accountId;
    const challengeBody: Wire['ChallengeRequest'] = { accountId };
    const challenge = await this.#json<Wire['Challenge']>('POST', routes.challenge, { body: challengeBody, auth: false });
    const proof = keys.handshakeProof(b64decodeN(challenge.challengeKey, 32, 'challengeKey'), challenge.nonce, accountId);
    const verify: Wire['VerifyRequest'] = { accountId, nonce: challenge.nonce, proof: b64encode(proof) };
    return toSession(await this.#json<Wire['SignedIn']>('POST', routes.verify, { body: verify, auth: false }));
  }

  async me(): Promise<Wire['Me']> {
    return this.#json('GET', routes.me);
  }

  /** `POST /accounts/signout`: ends this client's session. */
  async signOut(): Promise<void> {
    await this.#send('POST', routes.signOut);
  }

  async usage(): Promise<Usage> {
    return this.#json('GET', routes.usage);
  }

  async overview(): Promise<Overview> {
    return this.#json('GET', routes.overview);
  }

  async health(): Promise<Wire['Health']> {
    return this.#json('GET', routes.health, { auth: false });
  }

  // ---- Addresses ------------------------------------------------------------------

  async domains(): Promise<Domain[]> {
    return (await this.#json<Wire['DomainList']>('GET', routes.domains)).domains;
  }

  async listAddresses(): Promise<Address[]> {
    return toAddressList(await this.#json<Wire['AddressList']>('GET', routes.addresses));
  }

  async allocation(): Promise<Allocation> {
    return this.#json('GET', routes.allocation);
  }

  /**
   * Creates an address with a client-chosen `ibx_` id and its public key, so
   * it receives mail at once. The key is derived from the account's phrase
   * when this client holds the keys (any client with the phrase can read
   * the mail), else generated (`generateKey: true` forces it): then only the
   * returned `key` opens the mail, keep it.
   */
  async createAddress(fields: NewAddress & { id?: string; generateKey?: boolean } = {}): Promise<CreatedAddress> {
    const id = fields.id ?? newAddressId();
    const key =
      this.keys !== undefined && fields.generateKey !== true ? AddressKey.derive(this.keys, id) : AddressKey.generate(id);
    const domain = fields.domain ?? (await this.domains())[0]?.domain;
    if (domain === undefined) throw new Error('the service offers no domain to create addresses on');
    const body = createAddressBody(id, key.publicKey, { ...fields, domain });
    const reply = await this.#json<Wire['AddressReply']>('POST', routes.addresses, { body });
    return { ...toAddress(reply.inbox), key };
  }

  async updateAddress(id: string, update: { meta?: Wire['SealedBoxJson']; retentionDays?: number }): Promise<Address> {
    const body: Wire['UpdateAddressRequest'] = { ...update };
    return toAddress((await this.#json<Wire['AddressReply']>('PATCH', routes.address(id), { body })).inbox);
  }

  /** Deletes the address and its mail; the address is never issued again. */
  async deleteAddress(id: string): Promise<void> {
    await this.#send('DELETE', routes.address(id));
  }

  // ---- Devices ----------------------------------------------------------------------

  async listDevices(page: { limit?: number } = {}): Promise<Device[]> {
    return toDeviceList(await this.#json<Wire['DevicePage']>('GET', routes.devices(page.limit)));
  }

  /** `GET /workers/:id`. */
  async getDevice(id: string): Promise<Device> {
    return toDevice((await this.#json<Wire['DeviceReply']>('GET', routes.device(id))).worker);
  }

  // ---- This client as a device ---------------------------------------------------------

  /**
   * `POST /workers/pairing-session` (no credential): opens a pairing
   * session for a device whose X25519 public key is `publicKey`. Show the
   * `code` (and the key's fingerprint); keep the `token` to poll with.
   */
  async openPairing(fields: { platform: Wire['Platform']; deviceName: string; publicKey: Uint8Array }): Promise<OpenedPairing> {
    const body: Wire['OpenPairingRequest'] = {
      platform: fields.platform,
      deviceName: fields.deviceName,
      publicKey: b64encode(fields.publicKey),
    };
    const opened = await this.#json<Wire['OpenedPairing']>('POST', routes.pairingSession, { body, auth: false });
    return { code: opened.code, token: opened.token, state: opened.state };
  }

  /** `GET /workers/pairing-session/:token`: the first poll after the claim carries the device id and credential. */
  async pollPairing(token: string, signal?: AbortSignal): Promise<PairingPoll> {
    return toPairingPoll(await this.#json<Wire['PairingPoll']>('GET', routes.pairingPoll(token), { auth: false, signal }));
  }

  /** `DELETE /workers/pairing-session/:token`: cancels an unclaimed session (409 `already_used` once claimed). */
  async cancelPairing(token: string): Promise<void> {
    await this.#send('DELETE', routes.pairingPoll(token), { auth: false });
  }

  /** `GET /workers/:id/keys` (the device's credential): its sealed key bundle, or null while none was sent. */
  async deviceKeys(deviceId: string): Promise<{ keys: SealedBox; updatedAt: string } | null> {
    try {
      const reply = await this.#json<Wire['DeviceKeys']>('GET', routes.deviceKeys(deviceId));
      return { keys: reply.keys as unknown as SealedBox, updatedAt: reply.updatedAt };
    } catch (e) {
      if (e instanceof ApiError && e.status === 404) return null;
      throw e;
    }
  }

  /** `GET /workers/messages` (the device's credential): the 200 newest messages across its addresses. */
  async deviceMessages(): Promise<Message[]> {
    return (await this.#json<Wire['MessageList']>('GET', routes.deviceMessages)).messages.map(toMessage);
  }

  /** `POST /workers/heartbeat` (the device's credential): reports it active; answers the device. */
  async heartbeat(): Promise<Device> {
    return toDevice((await this.#json<Wire['DeviceReply']>('POST', routes.heartbeat)).worker);
  }

  // ---- Messages ----------------------------------------------------------------------

  /** One page of an address's mail, newest first (lists spend no object reads). */
  async listMessages(addressId: string, page: { limit?: number; cursor?: string } = {}): Promise<MessagePage> {
    return toMessagePage(await this.#json('GET', routes.addressMessages(addressId, page)));
  }

  /** The account's mail across addresses (or one), newest first. */
  async listMail(filter: { folder?: Folder; addressId?: string; unread?: boolean; limit?: number; cursor?: string } = {}): Promise<MessagePage> {
    return toMessagePage(await this.#json('GET', routes.mail(filter)));
  }

  /** `{total, unread}` per folder, for one address or all. */
  async folderCounts(addressId?: string): Promise<FolderCounts> {
    return (await this.#json<Wire['FoldersEnvelope']>('GET', routes.folderCounts(addressId))).folders;
  }

  /**
   * One long-poll: mail newer than `after` (oldest first) as soon as there is
   * some, or null when nothing arrived within `timeoutSeconds` (1 to 60).
   */
  async waitForMessages(
    addressId: string,
    options: { after?: string | undefined; timeoutSeconds?: number; signal?: AbortSignal | undefined } = {},
  ): Promise<WaitResult | null> {
    const seconds = Math.min(MAX_WAIT_SECONDS, Math.max(1, Math.floor(options.timeoutSeconds ?? 30)));
    const { status, body } = await this.#request('GET', routes.addressWait(addressId, options.after, seconds), {
      timeoutMs: seconds * 1000 + WAIT_GRACE_MS,
      signal: options.signal,
    });
    if (status === 204) return null;
    return toWaitResult(JSON.parse(new TextDecoder().decode(body)) as Wire['WaitBody']);
  }

  /**
   * Waits for the next (unread) message of an address, as the CLI's `mail
   * wait` does: long-polls in steps of at most 60 s, moving the cursor past
   * what it saw, retrying a 429 or 5xx until the deadline. The first wait
   * (without `after`) counts mail already in the address.
   */
  async nextMessage(address: string | { id: string }, options: WaitOptions = {}): Promise<ReceivedMessage> {
    const addressId = typeof address === 'string' ? address : address.id;
    const total = options.timeoutSeconds ?? 60;
    const deadline = Date.now() + total * 1000;
    let after = options.after;
    let failing: ApiError | undefined;
    for (;;) {
      const left = Math.ceil((deadline - Date.now()) / 1000);
      try {
        const answer = await this.waitForMessages(addressId, { after, timeoutSeconds: left, signal: options.signal });
        failing = undefined;
        if (answer !== null) {
          after = answer.cursor;
          const found = answer.messages.find((m) => options.includeRead === true || !m.read);
          if (found !== undefined) return { ...found, cursor: answer.cursor };
        }
      } catch (err) {
        const retry = err instanceof ApiError && (err.status === 429 || err.status >= 500);
        if (!retry || Date.now() >= deadline) throw err;
        failing = err;
        const pause = err.retryAfter !== undefined ? err.retryAfter * 1000 : RETRY_PAUSE_MS;
        await sleep(Math.max(0, Math.min(pause, deadline - Date.now())), options.signal);
      }
      if (Date.now() >= deadline) {
        if (failing !== undefined) throw failing;
        throw new WaitTimeoutError(`no new mail in ${addressId} within ${total} s`);
      }
    }
  }

  /** `GET /messages/{id}`: one message (spends one object read). */
  async getMessage(id: string): Promise<Message> {
    return toMessage((await this.#json<Wire['MessageReply']>('GET', routes.message(id))).message);
  }

  /** The attachment's sealed bytes (binary box: open them with `openAttachment`). */
  async getAttachment(messageId: string, index: number): Promise<Uint8Array> {
    return (await this.#request('GET', routes.messageAttachment(messageId, index))).body;
  }

  /** Marks the message read, or unread with `read: false`. */
  async markRead(id: string, read = true): Promise<void> {
    const body: Wire['ReadRequest'] = { read };
    await this.#send('POST', routes.messageRead(id), { body });
  }

  /** Moves the message to the trash (`trashed`), or deletes it for good when it was there (`deleted`). */
  async deleteMessage(id: string): Promise<Deletion> {
    return (await this.#json<Wire['DeletedBody']>('DELETE', routes.message(id))).result;
  }

  /** Delivers a raw RFC 5322 message to an address without SMTP (parsed and sealed like SMTP mail). */
  async deliverRaw(addressId: string, raw: Uint8Array): Promise<string> {
    return (await this.#json<Wire['Delivered']>('POST', routes.deliver, { body: deliverBody(addressId, raw) })).messageId;
  }

  /**
   * Opens a message with `keys` (an address's key, or other secrets), else
   * with this client's account keys.
   */
  openMessage(message: Message, keys?: AccountKeys | AddressSecrets): OpenedMessage {
    const using = keys ?? this.keys;
    if (using === undefined) throw new Error('no keys to open the message with');
    return openMessage(using, message);
  }

  /**
   * Follows the account's events (`GET /events/stream`) in commit order:
   * an async iterator of `{id, type, payload}`, from just after
   * `lastEventId` (an `id` it gave before) or from now. A `resync` event
   * says events were missed; the stream goes on from now. Ends when the
   * service closes the stream (resume with the last `id`) or `signal`
   * aborts; a refusal throws `ApiError` (`rate_limited` past 5 streams).
   */
  async *streamEvents(options: { lastEventId?: string; signal?: AbortSignal } = {}): AsyncGenerator<StreamedEvent> {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (this.#token !== undefined) headers['authorization'] = `Bearer ${this.#token}`;
    if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;
    const response = await this.#fetch(`${this.baseUrl}${routes.eventStream}`, {
      method: 'GET',
      headers,
      ...(options.signal !== undefined ? { signal: options.signal } : {}),
      credentials: 'omit',
      redirect: 'error',
    });
    if (!response.ok) throw await apiError(response);
    if (response.body === null) return;
    let lastId = options.lastEventId;
    for await (const frame of readFrames(response.body)) {
      if (frame.id !== undefined) lastId = frame.id;
      if (frame.data === undefined) continue;
      const data = JSON.parse(frame.data) as { type: string; payload: Record<string, unknown> };
      yield { id: frame.id ?? lastId ?? '', type: data.type, payload: data.payload };
    }
  }

  // ---- Web client: mail, folders, notifications, sessions, activity (issue #32) -------

  /**
   * `POST /messages/send` (a session): answers once the service's relay
   * accepted the message for every recipient. The service keeps a copy in
   * `sent`, sealed to the `from` address's key like received mail (open it
   * with `openMessage`); `messageId` is null when the address has no key.
   * `send_failed` when the relay refused it (nothing counted),
   * `rate_limited` past the plan's sends, `invalid_field` naming the field.
   */
  async sendMail(mail: {
    from: string;
    fromName?: string;
    to: string[];
    cc?: string[];
    subject: string;
    text: string;
    html?: string;
  }): Promise<{ messageId: string | null }> {
    const body: Wire['SendMailRequest'] = { from: mail.from, to: mail.to, subject: mail.subject, text: mail.text };
    if (mail.fromName !== undefined) body.fromName = mail.fromName;
    if (mail.cc !== undefined && mail.cc.length > 0) body.cc = mail.cc;
    if (mail.html !== undefined) body.html = mail.html;
    const sent = await this.#json<Wire['SentMail']>('POST', '/messages/send', { body });
    return { messageId: sent.messageId ?? null };
  }

  /** `POST /messages/:id/star`: stars the message, or removes the star with `false`. */
  async starMessage(id: string, starred = true): Promise<void> {
    const body: Wire['StarRequest'] = { starred };
    await this.#send('POST', `${routes.message(id)}/star`, { body });
  }

  /** `POST /messages/:id/move`: the message as it is after the move. */
  async moveMessage(id: string, folder: Folder): Promise<Message> {
    const body: Wire['MoveRequest'] = { folder };
    return toMessage((await this.#json<Wire['MessageReply']>('POST', `${routes.message(id)}/move`, { body })).message);
  }

  /** `POST /messages/trash/empty` (a session): deletes every message in the trash; answers how many. */
  async emptyTrash(): Promise<number> {
    return (await this.#json<Wire['EmptiedBody']>('POST', '/messages/trash/empty')).deleted;
  }

  /** `GET /notifications/preferences`: which kinds are pushed, and the muted addresses. */
  async notificationSettings(): Promise<Wire['NotificationSettings']> {
    return this.#json('GET', '/notifications/preferences');
  }

  /** `PATCH /notifications/preferences`: changes only the kinds given. */
  async updateNotificationPreferences(change: Partial<Wire['NotificationPreferences']>): Promise<Wire['NotificationSettings']> {
    return this.#json('PATCH', '/notifications/preferences', { body: change });
  }

  /** `PATCH /notifications/inboxes/:id`: mutes (or unmutes) pushes of an address's new mail. */
  async muteAddress(addressId: string, muted: boolean): Promise<boolean> {
    const body: Wire['MuteRequest'] = { muted };
    return (await this.#json<Wire['Mute']>('PATCH', `/notifications/inboxes/${encodeURIComponent(addressId)}`, { body })).muted;
  }

  /** `GET /accounts/sessions` (a session): live sessions, newest first, this one `current`. */
  async listSessions(): Promise<Wire['Session'][]> {
    return (await this.#json<Wire['SessionList']>('GET', '/accounts/sessions')).sessions;
  }

  /** `DELETE /accounts/sessions` (a session): signs out every other session; answers how many. */
  async signOutOtherSessions(): Promise<number> {
    return (await this.#json<Wire['Revoked']>('DELETE', '/accounts/sessions')).revoked;
  }

  /** `DELETE /accounts/sessions/:id` (a session): signs out one session. */
  async signOutSession(id: string): Promise<void> {
    await this.#send('DELETE', `/accounts/sessions/${encodeURIComponent(id)}`);
  }

  /** `GET /activity`: the account's activity, newest first (ids and times only). */
  async listActivity(page: { limit?: number; cursor?: string } = {}): Promise<{ activity: Wire['ActivityEntry'][]; nextCursor: string | null }> {
    const reply = await this.#json<Wire['ActivityPage']>('GET', `/activity${query({ limit: page.limit, cursor: page.cursor })}`);
    return { activity: reply.activity, nextCursor: reply.nextCursor ?? null };
  }

  // ---- Support and abuse reports (web client's Support area) ------------------------------

  /** `GET /support`: tickets newest first, whether support takes requests (`available`) and its current key. */
  async support(): Promise<SupportOverview> {
    return this.#json<SupportOverview>('GET', supportRoutes.overview);
  }

  /** `POST /support/key`: binds the vault key to the current support key; whether anything changed. */
  async bindSupportKey(request: Wire['SupportKeyRequest']): Promise<boolean> {
    return (await this.#json<Wire['SupportKeyReply']>('POST', supportRoutes.key, { body: request })).changed;
  }

  /** `POST /support/tickets` with a ticket sealed by `sealNewTicket`. */
  async createTicket(request: Wire['CreateTicketRequest']): Promise<Ticket> {
    return (await this.#json<Wire['TicketReply']>('POST', supportRoutes.tickets, { body: request })).ticket;
  }

  /** `GET /support/tickets/:id`: the ticket and its messages, oldest first; marks support's replies read. */
  async getTicket(id: string): Promise<TicketDetail> {
    return this.#json<TicketDetail>('GET', supportRoutes.ticket(id));
  }

  /** `POST /support/tickets/:id/messages` with a message sealed by `sealTicketMessage`. */
  async addTicketMessage(id: string, request: Wire['TicketMessageRequest']): Promise<Wire['MessageAdded']> {
    return this.#json<Wire['MessageAdded']>('POST', supportRoutes.messages(id), { body: request });
  }

  /** `POST /support/tickets/:id/close`: resolves the ticket. */
  async closeTicket(id: string): Promise<Ticket> {
    return (await this.#json<Wire['TicketReply']>('POST', supportRoutes.close(id))).ticket;
  }

  /** `POST /support/tickets/:id/reopen`: opens a resolved ticket again (counts against the 5 open ones). */
  async reopenTicket(id: string): Promise<Ticket> {
    return (await this.#json<Wire['TicketReply']>('POST', supportRoutes.reopen(id))).ticket;
  }

  /**
   * Opens a sealed ticket as `sealpost support open` does: reads the current
   * support key, binds the vault key to it (`POST /support/key`), seals the
   * header and the first message to both keys, and sends it. When support's
   * key is rotated in between (409 `staff_key_changed`) it reads the new
   * key and seals everything again, once: `keyChanged` then says so.
   * Throws `SupportUnavailable` (nothing sent) while support takes no requests.
   */
  async openTicket(header: TicketHeader, text: string, keys: AccountKeys | undefined = this.keys): Promise<{ ticket: Ticket; keyChanged: boolean }> {
    if (keys === undefined) throw new Error('opening a ticket needs the account keys');
    const send = async (): Promise<Ticket> => {
      const staffKey = await this.#supportKey();
      await this.bindSupportKey(supportKeyBinding(keys, staffKey));
      return this.createTicket(sealNewTicket(keys, staffKey, header, text).request);
    };
    const { value, keyChanged } = await this.#onceMoreIfKeyChanged(send);
    return { ticket: value, keyChanged };
  }

  /**
   * Adds a message to one of the account's tickets as `sealpost support
   * reply` does: sealed to the current support key and to the vault key;
   * sealed again to a key rotated in between, once (`keyChanged`).
   */
  async replyToTicket(id: string, text: string, keys: AccountKeys | undefined = this.keys): Promise<{ added: Wire['MessageAdded']; keyChanged: boolean }> {
    if (keys === undefined) throw new Error('replying needs the account keys');
    const { value, keyChanged } = await this.#onceMoreIfKeyChanged(async () => {
      const staffKey = await this.#supportKey();
      return this.addTicketMessage(id, sealTicketMessage(staffKey, keys.vaultPublicKey(), id, text));
    });
    return { added: value, keyChanged };
  }

  /** `POST /abuse/reports` (no account needed): answers the same whether the address or message exists. */
  async reportAbuse(report: AbuseReport): Promise<void> {
    await this.#send('POST', supportRoutes.abuseReports, { body: report, auth: false });
  }

  /** The support key to seal to now, or `SupportUnavailable`. */
  async #supportKey(): Promise<Uint8Array> {
    const overview = await this.support();
    if (!overview.available || overview.staffKey == null) throw new SupportUnavailable();
    return b64decodeN(overview.staffKey, 32, 'staffKey');
  }

  /** `send`, and once more when support's key changed meanwhile (409 `staff_key_changed`): it reads the key again. */
  async #onceMoreIfKeyChanged<T>(send: () => Promise<T>): Promise<{ value: T; keyChanged: boolean }> {
    try {
      return { value: await send(), keyChanged: false };
    } catch (e) {
      if (!(e instanceof ApiError && e.code === 'staff_key_changed')) throw e;
    }
    return { value: await send(), keyChanged: true };
  }

  // ---- Plumbing ------------------------------------------------------------------------

  async #json<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const { body } = await this.#request(method, path, options);
    return JSON.parse(new TextDecoder().decode(body)) as T;
  }

  async #send(method: string, path: string, options: RequestOptions = {}): Promise<void> {
    await this.#request(method, path, options);
  }

  async #request(method: string, path: string, options: RequestOptions = {}): Promise<{ status: number; body: Uint8Array }> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (options.auth !== false && this.#token !== undefined) headers['authorization'] = `Bearer ${this.#token}`;
    let payload: string | undefined;
    if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      payload = JSON.stringify(options.body);
    }
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new Error(`request timed out: ${method} ${path}`)), options.timeoutMs ?? REQUEST_TIMEOUT_MS);
    const onAbort = (): void => controller.abort(options.signal?.reason);
    options.signal?.addEventListener('abort', onAbort);
    try {
      const response = await this.#fetch(`${this.baseUrl}${path}`, {
        method,
        headers,
        ...(payload !== undefined ? { body: payload } : {}),
        signal: controller.signal,
        credentials: 'omit',
        redirect: 'error',
      });
      if (!response.ok) throw await apiError(response);
      return { status: response.status, body: new Uint8Array(await response.arrayBuffer()) };
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  // ---- Account management: devices, plan and billing, webhooks (web client's account areas) ----

  /**
   * `POST /workers/pair/lookup`: the waiting device of an 8-digit code (spaces
   * and dashes typed between groups are dropped). Show its name, platform and
   * key fingerprint (`keyFingerprint`) to compare with what the device shows
   * before claiming it. 404 when no device waits with that code; ten failed
   * lookups in five minutes answer 429.
   */
  async lookupPairing(code: string): Promise<PairingLookup> {
    const digits = code.replace(/[\s-]/g, '');
    if (!/^\d{8}$/.test(digits)) throw new SealError('a pairing code is 8 digits');
    const body: Wire['LookupRequest'] = { code: digits };
    return toPairingLookup(await this.#json<Wire['LookupReply']>('POST', accountRoutes.pairLookup, { body }));
  }

  /**
   * Approves a looked-up pairing as `sealpost device pair` does: a new
   * `wkr_` id, the profile (`name` and the device's key) sealed to the vault
   * key, the claim, then an empty key bundle sealed to the device's key so it
   * finds one at once. Answers the new device.
   */
  async approvePairing(found: PairingLookup, name: string = found.deviceName, keys: AccountKeys | undefined = this.keys): Promise<Device> {
    if (keys === undefined) throw new Error('approving a device needs the account keys');
    const devicePublic = b64decodeN(found.publicKey, 32, 'publicKey');
    const id = newDeviceId();
    const profile = sealDeviceProfile(keys, id, newDeviceProfile(name, devicePublic));
    const reply = await this.#json<Wire['DeviceReply']>('POST', accountRoutes.pairClaim, { body: claimBody(found.sessionId, id, profile) });
    await this.setDeviceKeys(id, sealKeyBundle(keys, [], devicePublic, id));
    return toDevice(reply.worker);
  }

  /** `POST /workers/:id/keys`: replaces the device's sealed key bundle. */
  async setDeviceKeys(deviceId: string, sealed: SealedBox): Promise<void> {
    const body: Wire['KeysRequest'] = { keys: sealed as unknown as Wire['SealedBoxJson'] };
    await this.#send('POST', routes.deviceKeys(deviceId), { body });
  }

  /** A device's opened profile (its name and pairing key), with the account keys. */
  deviceProfile(device: Device, keys: AccountKeys | undefined = this.keys): DeviceProfile {
    if (keys === undefined) throw new Error('reading a device profile needs the account keys');
    if (device.profile === null) throw new SealError(`device ${device.id} has no profile`);
    return openDeviceProfile(keys, device.id, device.profile);
  }

  /** Re-seals the profile with a new name, keeping everything else in it (`sealpost device rename`). */
  async renameDevice(id: string, name: string, keys: AccountKeys | undefined = this.keys): Promise<Device> {
    if (keys === undefined) throw new Error('renaming a device needs the account keys');
    const profile = this.deviceProfile(await this.getDevice(id), keys);
    const body: Wire['UpdateDeviceRequest'] = { profile: sealDeviceProfile(keys, id, { ...profile, name }) as unknown as Wire['SealedBoxJson'] };
    return toDevice((await this.#json<Wire['DeviceReply']>('PATCH', routes.device(id), { body })).worker);
  }

  /** `PATCH /workers/:id {status: "disabled"}`: its credential stops working. */
  async disableDevice(id: string): Promise<Device> {
    const body: Wire['UpdateDeviceRequest'] = { status: 'disabled' };
    return toDevice((await this.#json<Wire['DeviceReply']>('PATCH', routes.device(id), { body })).worker);
  }

  /** `DELETE /workers/:id`: removes the device and its credential; its addresses become unassigned. */
  async removeDevice(id: string): Promise<void> {
    await this.#send('DELETE', routes.device(id));
  }

  /**
   * Seals the epoch 0 keys of every address assigned to the device to the
   * pairing key kept in its (sealed) profile, and sends them, replacing its
   * bundle, as the CLI does after `address assign`. Answers how many
   * addresses the bundle holds.
   */
  async sendKeyBundle(deviceId: string, keys: AccountKeys | undefined = this.keys): Promise<number> {
    if (keys === undefined) throw new Error('sending a key bundle needs the account keys');
    const devicePublic = profileDeviceKey(this.deviceProfile(await this.getDevice(deviceId), keys));
    if (devicePublic === null) throw new SealError(`the profile of device ${deviceId} holds no device key; pair the device again`);
    const assigned = (await this.listAddresses()).filter((a) => a.deviceId === deviceId).map((a) => a.id);
    await this.setDeviceKeys(deviceId, sealKeyBundle(keys, assigned, devicePublic, deviceId));
    return assigned.length;
  }

  /**
   * Assigns an address to a device and sends it the address's keys (and the
   * device that held it before, its bundle without them): `sealpost address assign`.
   */
  async assignAddress(addressId: string, deviceId: string, keys: AccountKeys | undefined = this.keys): Promise<Address> {
    const previous = (await this.listAddresses()).find((a) => a.id === addressId)?.deviceId ?? null;
    const reply = await this.#json<Wire['AddressReply']>('POST', accountRoutes.deviceAddresses(deviceId), { body: assignBody(addressId) });
    await this.sendKeyBundle(deviceId, keys);
    if (previous !== null && previous !== deviceId) await this.sendKeyBundle(previous, keys);
    return toAddress(reply.inbox);
  }

  /** Takes an address off a device, then re-sends the device's bundle without it. */
  async unassignAddress(addressId: string, deviceId: string, keys: AccountKeys | undefined = this.keys): Promise<void> {
    await this.#send('DELETE', accountRoutes.deviceAddress(deviceId, addressId));
    await this.sendKeyBundle(deviceId, keys);
  }

  /** `GET /plans`: every plan with its price and limits, cheapest first. */
  async plans(): Promise<Plan[]> {
    return (await this.#json<Wire['PlanList']>('GET', accountRoutes.plans, { auth: false })).plans;
  }

  /** `GET /subscription`: plan, balance, pause, and a scheduled change. */
  async subscription(): Promise<Subscription> {
    return (await this.#json<Wire['SubscriptionReply']>('GET', accountRoutes.subscription)).subscription;
  }

  /** `POST /subscription/plan`: moves to a plan priced the same or lower (an upgrade answers 402 `payment_required`). */
  async changePlan(planId: PlanId): Promise<Subscription> {
    const body: Wire['ChangePlanRequest'] = { planId };
    return (await this.#json<Wire['SubscriptionReply']>('POST', accountRoutes.changePlan, { body })).subscription;
  }

  /** `GET /billing/providers`: the payment providers this deployment takes. */
  async billingProviders(): Promise<Provider[]> {
    return (await this.#json<Wire['ProviderList']>('GET', accountRoutes.providers, { auth: false })).providers;
  }

  /** `POST /billing/checkout`: the provider's checkout url and the pending payment. */
  async checkout(planId: Wire['SoldPlan'], provider: Wire['ProviderId']): Promise<Checkout> {
    const body: Wire['CheckoutRequest'] = { planId, provider };
    return this.#json<Wire['Checkout']>('POST', accountRoutes.checkout, { body });
  }

  /** `GET /billing/payments`: one page of the account's payments, newest first (checkouts in any state and card renewals). */
  async listPayments(page: { limit?: number; cursor?: string } = {}): Promise<{ payments: Payment[]; nextCursor: string | null }> {
    const reply = await this.#json<Wire['PaymentPage']>('GET', accountRoutes.payments(page));
    return { payments: reply.payments, nextCursor: reply.nextCursor ?? null };
  }

  /** `GET /billing/payments/:id`: one payment and its status. */
  async payment(id: string): Promise<Payment> {
    return (await this.#json<Wire['PaymentReply']>('GET', accountRoutes.payment(id))).payment;
  }

  /** `GET /webhook-endpoints`: the webhooks and the event types they can subscribe to. */
  async listWebhooks(): Promise<{ webhooks: Webhook[]; eventTypes: string[] }> {
    return this.#json<Wire['WebhookList']>('GET', accountRoutes.webhooks);
  }

  /** Registers an https endpoint named `name` (sealed to the vault key); the `whsec_` secret is answered this once. */
  async createWebhook(
    fields: { url: string; events: Array<WebhookEventType | '*'>; name?: string; id?: string },
    keys: AccountKeys | undefined = this.keys,
  ): Promise<{ webhook: Webhook; secret: string }> {
    const id = fields.id ?? newWebhookId();
    const body = {
      id,
      url: fields.url,
      events: fields.events,
      ...(fields.name !== undefined && keys !== undefined ? { meta: sealWebhookName(keys, id, fields.name) } : {}),
    } as unknown as Wire['CreateWebhookRequest'];
    return this.#json<Wire['CreatedWebhook']>('POST', accountRoutes.webhooks, { body });
  }

  /** `PATCH /webhook-endpoints/:id`: url, events, or status (`active` clears the failure record). */
  async updateWebhook(id: string, update: { url?: string; events?: Array<WebhookEventType | '*'>; status?: Wire['WebhookStatus'] }): Promise<Webhook> {
    const body = { ...update } as Wire['UpdateWebhookRequest'];
    return (await this.#json<Wire['WebhookReply']>('PATCH', accountRoutes.webhook(id), { body })).webhook;
  }

  async deleteWebhook(id: string): Promise<void> {
    await this.#send('DELETE', accountRoutes.webhook(id));
  }

  /** A new signing secret, answered once; the old one stops at once. */
  async rotateWebhookSecret(id: string): Promise<string> {
    return (await this.#json<Wire['Secret']>('POST', accountRoutes.webhookRotate(id))).secret;
  }

  /** Sends a `webhook.test` event. */
  async testWebhook(id: string): Promise<Wire['Sent']> {
    return this.#json<Wire['Sent']>('POST', accountRoutes.webhookTest(id));
  }

  /** One page of the delivery log, newest first. */
  async webhookDeliveries(id: string, page: { limit?: number; cursor?: string; status?: DeliveryStatus } = {}): Promise<{ deliveries: Delivery[]; nextCursor: string | null }> {
    const reply = await this.#json<Wire['DeliveryPage']>('GET', accountRoutes.webhookDeliveries(id, page));
    return { deliveries: reply.deliveries, nextCursor: reply.nextCursor ?? null };
  }

  /** Sends a delivery's event again: a new delivery id, the same event id. */
  async redeliver(id: string, deliveryId: string): Promise<Wire['Sent']> {
    return this.#json<Wire['Sent']>('POST', accountRoutes.webhookRedeliver(id, deliveryId));
  }

  /** `GET /api-keys`: the account's API keys, oldest first (labels sealed: `openApiKeyLabel`). */
  async listApiKeys(): Promise<ApiKey[]> {
    return (await this.#json<Wire['ApiKeyList']>('GET', accountRoutes.apiKeys)).apiKeys;
  }

  /** Creates an API key (Operator plan and up) labelled `label` (sealed to the vault key); its `spk_` token is answered this once. */
  async createApiKey(label: string, keys: AccountKeys | undefined = this.keys): Promise<{ apiKey: ApiKey; token: string }> {
    if (keys === undefined) throw new Error('creating an API key needs the account keys');
    const id = newApiKeyId();
    const body: Wire['CreateApiKeyRequest'] = { id, label: sealApiKeyLabel(keys, id, label) as unknown as Wire['SealedBoxJson'] };
    return this.#json<Wire['CreatedApiKey']>('POST', accountRoutes.apiKeys, { body });
  }

  /** Revokes an API key: its token stops working at once. */
  async revokeApiKey(id: string): Promise<void> {
    await this.#send('DELETE', accountRoutes.apiKey(id));
  }

  // ---- Teams (session only; the owner's side from Fleet up, memberships on every plan) ----

  /** `GET /team`: the members, oldest first, and the plan's limit (402 `plan_capability_required` below Fleet). */
  async team(): Promise<Team> {
    return toTeam(await this.#json<Wire['Team']>('GET', accountRoutes.team));
  }

  /**
   * `POST /team/members`: adds the account of a join code (see
   * `parseJoinCode`), its key pinned in the owner's vault. Show
   * `teamKeyFingerprint(code.publicKey)` first: both people compare the six words.
   */
  async addTeamMember(code: JoinCode, keys: AccountKeys | undefined = this.keys): Promise<TeamMember> {
    if (keys === undefined) throw new SealError("adding a member needs the account's keys");
    const body = addMemberBody(code.accountId, code.publicKey, sealPin(keys, code.publicKey));
    return toTeamMember((await this.#json<Wire['TeamMemberReply']>('POST', accountRoutes.teamMembers, { body })).member);
  }

  /** `DELETE /team/members/:memberId`: the member and everything shared with it. */
  async removeTeamMember(memberId: string): Promise<void> {
    await this.#send('DELETE', accountRoutes.teamMember(memberId));
  }

  /** `POST /team/members/:memberId/grants`: 1 to 500 grants already sealed, all or nothing. */
  async grant(memberId: string, grants: GrantToSend[]): Promise<TeamMember> {
    const body = grantsBody(grants);
    return toTeamMember((await this.#json<Wire['TeamMemberReply']>('POST', accountRoutes.teamGrants(memberId), { body })).member);
  }

  /**
   * Shares an address with a member at every key epoch up to the address's
   * `keyEpoch`, sealed here to the member's key as the owner pinned it (a key
   * the service shows differently is refused before anything is sent, as
   * the CLI's `team grant` does).
   */
  async shareAddress(
    member: TeamMember,
    address: { id: string; keyEpoch: number },
    access: GrantAccess,
    keys: AccountKeys | undefined = this.keys,
  ): Promise<TeamMember> {
    if (keys === undefined) throw new SealError("sharing an address needs the account's keys");
    const memberKey = pinnedKey(keys, member);
    const grants: GrantToSend[] = [];
    for (let epoch = 0; epoch <= address.keyEpoch; epoch++) {
      grants.push({ addressId: address.id, epoch, access, sealed: sealGrant(keys, member.memberId, memberKey, address.id, epoch) });
    }
    return this.grant(member.memberId, grants);
  }

  /** `DELETE /team/members/:memberId/grants/:inboxId`: takes an address back from a member. */
  async revokeGrant(memberId: string, addressId: string): Promise<void> {
    await this.#send('DELETE', accountRoutes.teamGrant(memberId, addressId));
  }

  /** `GET /memberships`: the teams this account is in, with what each owner shared (any plan). */
  async memberships(): Promise<Membership[]> {
    return (await this.#json<Wire['MembershipList']>('GET', accountRoutes.memberships)).memberships.map(toMembership);
  }

  /** `DELETE /memberships/:ownerId`: leaves a team (its grants are dropped). */
  async leaveTeam(ownerId: string): Promise<void> {
    await this.#send('DELETE', accountRoutes.membership(ownerId));
  }

  /** `GET /domains/custom`: the account's own domains with their setup step. */
  async listOwnDomains(): Promise<OwnDomain[]> {
    return (await this.#json<Wire['OwnDomainList']>('GET', accountRoutes.ownDomains)).domains;
  }

  /** `POST /domains/custom` (Scale and up): claims a domain; answers it and the TXT record that proves ownership. */
  async addOwnDomain(domain: string): Promise<{ domain: OwnDomain; record: DnsRecord }> {
    const body: Wire['AddDomainRequest'] = { domain };
    return this.#json<Wire['AddDomainReply']>('POST', accountRoutes.ownDomains, { body });
  }

  /** `POST /domains/custom/:domain/check`: looks the TXT, NS and MX records up now and moves the step on. */
  async checkOwnDomain(domain: string): Promise<OwnDomain> {
    return (await this.#json<Wire['OwnDomainReply']>('POST', accountRoutes.ownDomainCheck(domain))).domain;
  }

  /** `DELETE /domains/custom/:domain`: refused with `domain_in_use` while addresses exist on it. */
  async removeOwnDomain(domain: string): Promise<void> {
    await this.#send('DELETE', accountRoutes.ownDomain(domain));
  }
}

/** The `ApiError` of a non-2xx answer (its body read). */
async function apiError(response: Response): Promise<ApiError> {
  const body = new Uint8Array(await response.arrayBuffer());
  let code: ErrorCode | 'http_error' = 'http_error';
  let message = response.statusText || `HTTP ${response.status}`;
  try {
    const parsed = JSON.parse(new TextDecoder().decode(body)) as Wire['ErrorBody'];
    code = parsed.error.code;
    message = parsed.error.message;
  } catch {
    // not the API's error body
  }
  const retry = response.headers.get('retry-after');
  const retryAfter = retry !== null && /^\d+$/.test(retry.trim()) ? Number(retry.trim()) : undefined;
  return new ApiError(response.status, code, message, retryAfter, response.headers.get('x-request-id') ?? undefined);
}
