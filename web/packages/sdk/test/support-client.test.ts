// The client's support calls against a recording fake of the API: the
// order the CLI follows (support key, binding, ticket), a key rotated in
// between (409 staff_key_changed: read again, sealed again to the new key,
// once), support unavailable (nothing sent), and the abuse report without
// a token. Against a running stack: support-stack.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  AccountKeys,
  ApiError,
  b64encode,
  openTicketHeader,
  openTicketMessage,
  publicKeyOf,
  SealpostClient,
  SupportUnavailable,
  verifySupportBinding,
  b64decode,
} from '../src/index.js';

const keys = AccountKeys.fromSeed(new Uint8Array(64).fill(11));
const oldSecret = new Uint8Array(32).fill(21);
const newSecret = new Uint8Array(32).fill(22);
const NOW = '2026-11-28T00:00:00.000Z';

interface Seen {
  method: string;
  url: string;
  auth: string | null;
  body: Record<string, unknown> | undefined;
}

/** A fake API whose current support key is `current(seen)` (the requests so far, this one included); refuses writes sealed to another. */
function fake(current: (seen: Seen[]) => Uint8Array | null) {
  const seen: Seen[] = [];
  const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const headers = (init?.headers ?? {}) as Record<string, string>;
    const s: Seen = {
      method: init?.method ?? 'GET',
      url: String(input).replace('http://api.test', ''),
      auth: headers['authorization'] ?? null,
      body: init?.body === undefined ? undefined : (JSON.parse(String(init.body)) as Record<string, unknown>),
    };
    seen.push(s);
    const key = current(seen);
    const reply = (status: number, body: unknown) => new Response(JSON.stringify(body), { status });
    if (s.url === '/support') return reply(200, { tickets: [], available: key !== null, staffKey: key === null ? null : b64encode(key) });
    if (s.url === '/abuse/reports') return reply(202, { received: true });
    if (key === null) return reply(503, { error: { code: 'support_unavailable', message: 'off' } });
    if (s.body?.['staffKey'] !== b64encode(key)) return reply(409, { error: { code: 'staff_key_changed', message: 'changed' } });
    if (s.url === '/support/key') return reply(200, { ok: true, changed: true });
    const ticket = { id: s.body?.['id'], status: 'open', lastAuthor: 'account', createdAt: NOW, updatedAt: NOW, unread: false, header: {} };
    if (s.url === '/support/tickets') return reply(201, { ticket });
    return reply(201, { ok: true, at: NOW });
  }) as typeof globalThis.fetch;
  return { api: new SealpostClient({ baseUrl: 'http://api.test', token: 't', keys, fetch }), seen };
}

test('openTicket: reads the support key, binds the vault key to it, then sends the sealed ticket', async () => {
  const staffKey = publicKeyOf(oldSecret);
  const { api, seen } = fake(() => staffKey);
  const header = { category: 'billing', priority: 'high', subject: 'Refund' };
  const { ticket, keyChanged } = await api.openTicket(header, 'Please refund');
  assert.equal(keyChanged, false);
  assert.deepEqual(seen.map((s) => `${s.method} ${s.url}`), ['GET /support', 'POST /support/key', 'POST /support/tickets']);
  const bind = seen[1]?.body ?? {};
  assert.deepEqual(Object.keys(bind).sort(), ['accountKey', 'binding', 'staffKey']);
  assert.ok(verifySupportBinding(oldSecret, keys.vaultPublicKey(), keys.accountId, 'key', b64decode(String(bind['binding']))));
  const sent = seen[2]?.body as { id: string; header: { forStaff: unknown }; message: { id: string; forAccount: unknown } };
  assert.equal(ticket.id, sent.id);
  assert.deepEqual(openTicketHeader(oldSecret, sent.id, sent.header.forStaff), header);
  assert.equal(openTicketMessage(keys.vaultSecret(), sent.id, sent.message.id, sent.message.forAccount), 'Please refund');
});

test('openTicket: a key rotated in between is read again and everything sealed again to it, once', async () => {
  // The old key answers the first read; from the next request on the new one is current.
  const { api, seen } = fake((so) => (so.length <= 1 ? publicKeyOf(oldSecret) : publicKeyOf(newSecret)));
  const header = { category: 'technical', priority: 'normal', subject: 'Rotated' };
  const { keyChanged } = await api.openTicket(header, 'Hello');
  assert.equal(keyChanged, true);
  assert.deepEqual(seen.map((s) => `${s.method} ${s.url}`), ['GET /support', 'POST /support/key', 'GET /support', 'POST /support/key', 'POST /support/tickets']);
  const sent = seen[4]?.body as { id: string; staffKey: string; header: { forStaff: unknown } };
  assert.equal(sent.staffKey, b64encode(publicKeyOf(newSecret)));
  assert.deepEqual(openTicketHeader(newSecret, sent.id, sent.header.forStaff), header);
});

test('replyToTicket: sealed to the current key and the vault key; once more after a rotation, then the error', async () => {
  const { api, seen } = fake(() => publicKeyOf(oldSecret));
  const { keyChanged } = await api.replyToTicket('tkt_aaaaaaaaaaaaaaaaaaaa', 'Thanks');
  assert.equal(keyChanged, false);
  assert.deepEqual(seen.map((s) => `${s.method} ${s.url}`), ['GET /support', 'POST /support/tickets/tkt_aaaaaaaaaaaaaaaaaaaa/messages']);
  const body = seen[1]?.body as { id: string; forStaff: unknown; forAccount: unknown };
  assert.match(body.id, /^tkm_[a-z0-9]{16}$/);
  assert.equal(openTicketMessage(oldSecret, 'tkt_aaaaaaaaaaaaaaaaaaaa', body.id, body.forStaff), 'Thanks');
  assert.equal(openTicketMessage(keys.vaultSecret(), 'tkt_aaaaaaaaaaaaaaaaaaaa', body.id, body.forAccount), 'Thanks');

  // A key that changes on every request: retried once, then the 409 is the caller's.
  let n = 0;
  const { api: spinning, seen: tries } = fake(() => publicKeyOf(new Uint8Array(32).fill(30 + n++)));
  await assert.rejects(spinning.replyToTicket('tkt_aaaaaaaaaaaaaaaaaaaa', 'x'), (e) => e instanceof ApiError && e.code === 'staff_key_changed');
  assert.equal(tries.filter((s) => s.method === 'POST').length, 2);
});

test('support unavailable: nothing is sent', async () => {
  const { api, seen } = fake(() => null);
  await assert.rejects(api.openTicket({ category: 'other', priority: 'low', subject: 'x' }, 'y'), SupportUnavailable);
  await assert.rejects(api.replyToTicket('tkt_aaaaaaaaaaaaaaaaaaaa', 'y'), SupportUnavailable);
  assert.deepEqual(seen.map((s) => s.method), ['GET', 'GET']);
});

test('the other support calls: paths, and the abuse report without a token', async () => {
  const { api, seen } = fake(() => publicKeyOf(oldSecret));
  await api.reportAbuse({ emailAddress: 'bad@example.com', reason: 'spam' });
  assert.deepEqual(seen[0], { method: 'POST', url: '/abuse/reports', auth: null, body: { emailAddress: 'bad@example.com', reason: 'spam' } });
  const id = 'tkt_bbbbbbbbbbbbbbbbbbbb';
  for (const call of [() => api.getTicket(id), () => api.closeTicket(id), () => api.reopenTicket(id)]) {
    await call().catch(() => undefined);
  }
  assert.deepEqual(seen.slice(1).map((s) => `${s.method} ${s.url} ${s.auth}`), [
    `GET /support/tickets/${id} Bearer t`,
    `POST /support/tickets/${id}/close Bearer t`,
    `POST /support/tickets/${id}/reopen Bearer t`,
  ]);
});
