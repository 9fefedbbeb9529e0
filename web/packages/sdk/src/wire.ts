/**
 * The ONE place where the SDK's product words meet the wire's names.
 *
 * The public API speaks of addresses and devices; the HTTP API (docs/api.md,
 * docs/openapi.json) calls them `inbox` and `worker` (`/inboxes`,
 * `inboxId`, `assignedWorkerId`, `/workers`, ...). Every path, query
 * parameter and field with a wire name is written here and nowhere else;
 * the rest of the SDK uses the product types below. Wire types come from
 * the generated OpenAPI types, so a change to the document shows up as a
 * compile error here.
 */
import type { SealedBox } from './boxes.js';
import { b64encode } from './bytes.js';
import type { components } from './generated/openapi.js';

/** The wire's schemas, as generated from docs/openapi.json. */
export type Wire = components['schemas'];

// ---- Product types ----------------------------------------------------------

export type AddressStatus = Wire['AddressStatus'];
export type Folder = Wire['Folder'];
export type PlanId = Wire['PlanId'];
export type Account = Wire['Account'];
export type Domain = Wire['Domain'];
export type Usage = Wire['Usage'];
export type Allocation = Wire['Allocation'];
export type Overview = Wire['Overview'];
export type FolderCounts = Wire['FolderCounts'];
export type Deletion = Wire['Deletion'];

/** An email address of the account (wire schema `Address`, fields under `inbox`). */
export interface Address {
  id: string;
  /** The account that owns it (wire: `operatorId`). */
  accountId: string;
  email: string;
  status: AddressStatus;
  createdAt: string;
  /** The device it is assigned to, if any (wire: `assignedWorkerId`). */
  deviceId: string | null;
  retentionDays: number;
  pausedAt: string | null;
  /** The label, sealed to the account's vault key. */
  meta: SealedBox | null;
  keyEpoch: number;
  /** The X25519 key mail is sealed to, base64url; null until set (it refuses mail until then). */
  publicKey: string | null;
}

/** A paired device or agent (wire schema `Device`, fields under `worker`). */
export interface Device {
  id: string;
  accountId: string;
  kind: Wire['DeviceKind'];
  platform: Wire['Platform'];
  status: Wire['DeviceStatus'];
  createdAt: string;
  lastActiveAt: string | null;
  pausedAt: string | null;
  profile: SealedBox | null;
  publicKey: string | null;
}

/** A message as listed: metadata in the clear, content sealed. */
export interface Message {
  id: string;
  /** Wire: `inboxId`. */
  addressId: string;
  receivedAt: string;
  read: boolean;
  sizeBytes: number;
  keyEpoch: number;
  content: SealedBox;
  folder: Folder;
  starred: boolean;
  outgoing: boolean;
}

/** One answer of the long-poll wait: mail oldest first, and the cursor to wait after. */
export interface WaitResult {
  messages: Message[];
  cursor: string;
}

export interface MessagePage {
  messages: Message[];
  nextCursor: string | null;
}

/** A pairing session just opened by a device: show `code`, keep `token` secret. */
export interface OpenedPairing {
  /** 8 digits for a person to type on the account's side. */
  code: string;
  /** The device's secret for polling and cancelling: never show or store it. */
  token: string;
  state: Wire['PairingState'];
}

/** One poll of a pairing session; `deviceId` and `credential` only on the first poll after the claim. */
export interface PairingPoll {
  state: Wire['PairingState'];
  code: string;
  deviceId: string | null;
  credential: string | null;
}

/** A session: the bearer token (keep it in memory) and its account. */
export interface Session {
  account: Account;
  token: string;
  expiresAt: string;
}

/** What `createAddress` sends besides the id and key. */
export interface NewAddress {
  /** One of `domains()`; the first offered when absent. */
  domain?: string;
  /** The name becomes `<prefix>.<6 random characters>`. */
  prefix?: string;
  /** The whole name (Scale and above). */
  localPart?: string;
  /** Days to keep mail, 1 to 90 (7 when absent). */
  retentionDays?: number;
  /** A label sealed to the vault key (see `sealLabel`). */
  meta?: SealedBox;
}

// ---- Conversions --------------------------------------------------------------

const box = (value: unknown): SealedBox | null => (value == null ? null : (value as SealedBox));

export function toAddress(w: Wire['Address']): Address {
  return {
    id: w.id,
    accountId: w.operatorId,
    email: w.emailAddress,
    status: w.status,
    createdAt: w.createdAt,
    deviceId: w.assignedWorkerId ?? null,
    retentionDays: w.retentionDays,
    pausedAt: w.pausedAt ?? null,
    meta: box(w.meta),
    keyEpoch: w.keyEpoch,
    publicKey: w.publicKey ?? null,
  };
}

export function toDevice(w: Wire['Device']): Device {
  return {
    id: w.id,
    accountId: w.operatorId,
    kind: w.kind,
    platform: w.platform,
    status: w.status,
    createdAt: w.createdAt,
    lastActiveAt: w.lastActiveAt ?? null,
    pausedAt: w.pausedAt ?? null,
    profile: box(w.profile),
    publicKey: w.publicKey ?? null,
  };
}

export function toMessage(w: Wire['Message']): Message {
  return {
    id: w.id,
    addressId: w.inboxId,
    receivedAt: w.receivedAt,
    read: w.read,
    sizeBytes: w.sizeBytes,
    keyEpoch: w.keyEpoch,
    content: w.content as unknown as SealedBox,
    folder: w.folder,
    starred: w.starred,
    outgoing: w.outgoing,
  };
}

export const toAddressList = (w: Wire['AddressList']): Address[] => w.inboxes.map(toAddress);

export const toDeviceList = (w: Wire['DevicePage']): Device[] => w.workers.map(toDevice);

export const toWaitResult = (w: Wire['WaitBody']): WaitResult => ({
  messages: w.messages.map(toMessage),
  cursor: w.cursor,
});

export const toMessagePage = (w: Wire['MessagePage']): MessagePage => ({
  messages: w.messages.map(toMessage),
  nextCursor: w.nextCursor ?? null,
});

export const toPairingPoll = (w: Wire['PairingPoll']): PairingPoll => ({
  state: w.state,
  code: w.code,
  deviceId: w.workerId ?? null,
  credential: w.credential ?? null,
});

export const toSession = (w: Wire['SignedIn']): Session => ({ account: w.account, token: w.token, expiresAt: w.expiresAt });

export function createAddressBody(id: string, publicKey: Uint8Array, fields: NewAddress): Wire['CreateAddressRequest'] {
  const body: Wire['CreateAddressRequest'] = { id, publicKey: b64encode(publicKey) };
  if (fields.domain !== undefined) body.domain = fields.domain;
  if (fields.prefix !== undefined) body.prefix = fields.prefix;
  if (fields.localPart !== undefined) body.localPart = fields.localPart;
  if (fields.retentionDays !== undefined) body.retentionDays = fields.retentionDays;
  if (fields.meta !== undefined) body.meta = fields.meta;
  return body;
}

export const deliverBody = (addressId: string, raw: Uint8Array): Wire['DeliverRequest'] => ({
  inboxId: addressId,
  raw: b64encode(raw),
});

// ---- Routes -------------------------------------------------------------------

const seg = encodeURIComponent;

/** Query string from defined values, with its `?`, or empty. */
export function query(params: Record<string, string | number | boolean | undefined | null>): string {
  const pairs = Object.entries(params)
    .filter(([, v]) => v !== undefined && v !== null)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  return pairs.length === 0 ? '' : `?${pairs.join('&')}`;
}

/** Every path the client calls, by product name. */
export const routes = {
  register: '/accounts',
  challenge: '/accounts/challenge',
  verify: '/accounts/verify',
  me: '/accounts/me',
  signOut: '/accounts/signout',
  health: '/healthz',
  usage: '/usage',
  overview: '/overview',
  domains: '/domains',
  addresses: '/inboxes',
  allocation: '/inboxes/allocation',
  address: (id: string) => `/inboxes/${seg(id)}`,
  addressMessages: (id: string, page: { limit?: number; cursor?: string }) =>
    `/inboxes/${seg(id)}/messages${query({ limit: page.limit, cursor: page.cursor })}`,
  addressWait: (id: string, after: string | undefined, timeoutSeconds: number) =>
    `/inboxes/${seg(id)}/messages/wait${query({ after, timeout: timeoutSeconds })}`,
  folderCounts: (addressId?: string) => `/messages/folders${query({ inboxId: addressId })}`,
  mail: (filter: { folder?: Folder; addressId?: string; unread?: boolean; limit?: number; cursor?: string }) =>
    `/messages${query({
      folder: filter.folder,
      inboxId: filter.addressId,
      unread: filter.unread,
      limit: filter.limit,
      cursor: filter.cursor,
    })}`,
  deliver: '/messages',
  eventStream: '/events/stream',
  message: (id: string) => `/messages/${seg(id)}`,
  messageRead: (id: string) => `/messages/${seg(id)}/read`,
  messageAttachment: (id: string, index: number) => `/messages/${seg(id)}/attachments/${index}`,
  devices: (limit?: number) => `/workers${query({ limit })}`,
  device: (id: string) => `/workers/${seg(id)}`,
  deviceKeys: (id: string) => `/workers/${seg(id)}/keys`,
  deviceMessages: '/workers/messages',
  heartbeat: '/workers/heartbeat',
  pairingSession: '/workers/pairing-session',
  pairingPoll: (token: string) => `/workers/pairing-session/${seg(token)}`,
} as const;

// ---- Account management (devices, plan and billing, webhooks) ------------------
// Written for the web client's account areas; the paths and wire names they
// use live here like the rest.

export type Plan = Wire['PlanOffer'];
export type Subscription = Wire['Subscription'];
export type Provider = Wire['Provider'];
export type Payment = Wire['Payment'];
export type Checkout = Wire['Checkout'];
export type Webhook = Wire['Webhook'];
export type Delivery = Wire['Delivery'];
export type DeliveryStatus = Wire['DeliveryStatus'];
export type ApiKey = Wire['ApiKey'];
export type OwnDomain = Wire['OwnDomain'];
export type DnsRecord = Wire['DnsRecord'];
export type WebhookEventType = Exclude<Wire['CreateWebhookRequest']['events'][number], '*'>;

/** A waiting pairing session found by its code: what the device reported (name, platform, kind) and its key. */
export interface PairingLookup {
  /** The session id to claim (not the device's token). */
  sessionId: string;
  state: Wire['PairingState'];
  kind: Wire['DeviceKind'];
  platform: Wire['Platform'];
  /** The name the device reported: the device chose it, show it as text only. */
  deviceName: string;
  /** The device's X25519 public key, 32 bytes (base64url on the wire). */
  publicKey: string;
  createdAt: string;
}

export const toPairingLookup = (w: Wire['LookupReply']): PairingLookup => ({
  sessionId: w.session.id,
  state: w.session.state,
  kind: w.session.kind,
  platform: w.session.platform,
  deviceName: w.session.deviceName,
  publicKey: w.session.publicKey,
  createdAt: w.session.createdAt,
});

export const claimBody = (sessionId: string, deviceId: string, profile: SealedBox): Wire['ClaimRequest'] => ({
  sessionId,
  workerId: deviceId,
  profile: profile as unknown as Wire['SealedBoxJson'],
});

export const assignBody = (addressId: string): Wire['AssignRequest'] => ({ inboxId: addressId });

export const accountRoutes = {
  pairLookup: '/workers/pair/lookup',
  pairClaim: '/workers/pair',
  deviceAddresses: (deviceId: string) => `/workers/${seg(deviceId)}/inboxes`,
  deviceAddress: (deviceId: string, addressId: string) => `/workers/${seg(deviceId)}/inboxes/${seg(addressId)}`,
  plans: '/plans',
  subscription: '/subscription',
  changePlan: '/subscription/plan',
  providers: '/billing/providers',
  checkout: '/billing/checkout',
  payment: (id: string) => `/billing/payments/${seg(id)}`,
  ownDomains: '/domains/custom',
  ownDomain: (domain: string) => `/domains/custom/${seg(domain)}`,
  ownDomainCheck: (domain: string) => `/domains/custom/${seg(domain)}/check`,
  apiKeys: '/api-keys',
  apiKey: (id: string) => `/api-keys/${seg(id)}`,
  webhooks: '/webhook-endpoints',
  webhook: (id: string) => `/webhook-endpoints/${seg(id)}`,
  webhookRotate: (id: string) => `/webhook-endpoints/${seg(id)}/rotate-secret`,
  webhookTest: (id: string) => `/webhook-endpoints/${seg(id)}/test`,
  webhookDeliveries: (id: string, page: { limit?: number; cursor?: string; status?: DeliveryStatus }) =>
    `/webhook-endpoints/${seg(id)}/deliveries${query({ limit: page.limit, cursor: page.cursor, status: page.status })}`,
  webhookRedeliver: (id: string, deliveryId: string) => `/webhook-endpoints/${seg(id)}/deliveries/${seg(deliveryId)}/redeliver`,
  payments: (page: { limit?: number; cursor?: string }) => `/billing/payments${query({ limit: page.limit, cursor: page.cursor })}`,
  team: '/team',
  teamMembers: '/team/members',
  teamMember: (memberId: string) => `/team/members/${seg(memberId)}`,
  teamGrants: (memberId: string) => `/team/members/${seg(memberId)}/grants`,
  teamGrant: (memberId: string, addressId: string) => `/team/members/${seg(memberId)}/grants/${seg(addressId)}`,
  memberships: '/memberships',
  membership: (ownerId: string) => `/memberships/${seg(ownerId)}`,
} as const;

// ---- Teams ------------------------------------------------------------------

/** `read`: list and read its mail; `send`: also send, move, star and delete. */
export type GrantAccess = Wire['GrantAccessName'];

/** One address at one key epoch held by a member, as the owner sees it. */
export interface TeamGrant {
  /** Wire: `inboxId`. */
  addressId: string;
  epoch: number;
  access: GrantAccess;
}

/** A member of the caller's team. */
export interface TeamMember {
  memberId: string;
  /** The member's sign-in key (base64url): grants are sealed to it. */
  publicKey: string;
  /** That key sealed to the owner's vault key when it was added (see `pinnedKey`). */
  pin: SealedBox;
  joinedAt: string;
  grants: TeamGrant[];
}

export interface Team {
  members: TeamMember[];
  /** The plan's team-member limit (Fleet 25, Enterprise 100). */
  limit: number;
}

/** An address an owner shared with the caller, with the grants sealed to the caller by epoch. */
export interface SharedAddress {
  /** Wire: `inboxId`. */
  addressId: string;
  email: string;
  keyEpoch: number;
  access: GrantAccess;
  grants: Array<{ epoch: number; sealed: SealedBox }>;
}

/** A team the caller is in. */
export interface Membership {
  ownerId: string;
  joinedAt: string;
  /** False while the owner's plan has no teams: nothing shared is reachable then. */
  active: boolean;
  addresses: SharedAddress[];
}

/** One grant to send: the keys of `addressId` at `epoch`, sealed to the member. */
export interface GrantToSend {
  addressId: string;
  epoch: number;
  access: GrantAccess;
  sealed: SealedBox;
}

const access = (text: string): GrantAccess => (text === 'send' ? 'send' : 'read');

export const toTeamMember = (w: Wire['TeamMember']): TeamMember => ({
  memberId: w.memberId,
  publicKey: w.publicKey,
  pin: w.pin as unknown as SealedBox,
  joinedAt: w.joinedAt,
  grants: w.grants.map((g) => ({ addressId: g.inboxId, epoch: g.epoch, access: access(g.access) })),
});

export const toTeam = (w: Wire['Team']): Team => ({ members: w.members.map(toTeamMember), limit: w.limit });

export const toMembership = (w: Wire['Membership']): Membership => ({
  ownerId: w.ownerId,
  joinedAt: w.joinedAt,
  active: w.active,
  addresses: w.addresses.map((a) => ({
    addressId: a.inboxId,
    email: a.emailAddress,
    keyEpoch: a.keyEpoch,
    access: access(a.access),
    grants: a.grants.map((g) => ({ epoch: g.epoch, sealed: g.sealed as unknown as SealedBox })),
  })),
});

export const addMemberBody = (memberId: string, publicKey: Uint8Array, pin: SealedBox): Wire['AddMemberRequest'] => ({
  memberId,
  publicKey: b64encode(publicKey),
  pin: pin as unknown as Wire['SealedBoxJson'],
});

export const grantsBody = (grants: GrantToSend[]): Wire['GrantsRequest'] => ({
  grants: grants.map((g) => ({
    inboxId: g.addressId,
    epoch: g.epoch,
    access: g.access,
    sealed: g.sealed as unknown as Wire['SealedBoxJson'],
  })),
});
