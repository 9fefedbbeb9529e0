// The client's calls for the web client's mail, settings and activity areas
// (issue #32), against a fake fetch: each method's method, path and body,
// and the typed error code.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ApiError, SealpostClient, type ErrorCode } from '../src/index.js';

interface Seen {
  method: string;
  url: string;
  body: unknown;
}

function client(answer: (s: Seen) => { status: number; body?: unknown }) {
  const seen: Seen[] = [];
  const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const s: Seen = {
      method: init?.method ?? 'GET',
      url: String(input).replace('http://api.test', ''),
      body: init?.body === undefined ? undefined : JSON.parse(String(init.body)),
    };
    seen.push(s);
    const a = answer(s);
    return new Response(a.body === undefined ? null : JSON.stringify(a.body), { status: a.status });
  }) as typeof globalThis.fetch;
  return { api: new SealpostClient({ baseUrl: 'http://api.test', token: 't', fetch }), seen };
}

const wireMessage = {
  id: 'msg_1', inboxId: 'ibx_1', receivedAt: '2026-11-28T00:00:00Z', read: true, sizeBytes: 10, keyEpoch: 0,
  content: { v: 2, epk: 'a', nonce: 'b', ct: 'c' }, folder: 'archive', starred: false, outgoing: false,
};

test('sendMail posts from, to, subject and text, and answers the Sent copy', async () => {
  const { api, seen } = client(() => ({ status: 200, body: { sent: true, messageId: 'msg_9' } }));
  const sent = await api.sendMail({ from: 'a.b@mail.test', to: ['x@example.com'], subject: 'Hi', text: 'Hello' });
  assert.deepEqual(sent, { messageId: 'msg_9' });
  assert.deepEqual(seen[0], { method: 'POST', url: '/messages/send', body: { from: 'a.b@mail.test', to: ['x@example.com'], subject: 'Hi', text: 'Hello' } });
  const { api: nocopy } = client(() => ({ status: 200, body: { sent: true, messageId: null } }));
  assert.deepEqual(await nocopy.sendMail({ from: 'a', to: ['b@c.d'], subject: '', text: '' }), { messageId: null });
});

test('star, move and empty the trash', async () => {
  const { api, seen } = client((s) =>
    s.url.endsWith('/move') ? { status: 200, body: { message: wireMessage } } : s.url.endsWith('/empty') ? { status: 200, body: { deleted: 3 } } : { status: 204 },
  );
  await api.starMessage('msg_1');
  await api.starMessage('msg_1', false);
  const moved = await api.moveMessage('msg_1', 'archive');
  assert.equal(moved.folder, 'archive');
  assert.equal(moved.addressId, 'ibx_1');
  assert.equal(await api.emptyTrash(), 3);
  assert.deepEqual(
    seen.map((s) => [s.method, s.url, s.body]),
    [
      ['POST', '/messages/msg_1/star', { starred: true }],
      ['POST', '/messages/msg_1/star', { starred: false }],
      ['POST', '/messages/msg_1/move', { folder: 'archive' }],
      ['POST', '/messages/trash/empty', undefined],
    ],
  );
});

test('notification preferences and mutes', async () => {
  const settings = {
    preferences: { newMail: false, devicePaired: true, deviceOffline: true, newSignIn: true, billing: true, support: true, webhookFailures: true },
    mutedInboxes: ['ibx_1'],
  };
  const { api, seen } = client((s) => (s.url.startsWith('/notifications/inboxes/') ? { status: 200, body: { inboxId: 'ibx_1', muted: true } } : { status: 200, body: settings }));
  assert.deepEqual(await api.notificationSettings(), settings);
  assert.deepEqual(await api.updateNotificationPreferences({ newMail: false }), settings);
  assert.equal(await api.muteAddress('ibx_1', true), true);
  assert.deepEqual(
    seen.map((s) => [s.method, s.url, s.body]),
    [
      ['GET', '/notifications/preferences', undefined],
      ['PATCH', '/notifications/preferences', { newMail: false }],
      ['PATCH', '/notifications/inboxes/ibx_1', { muted: true }],
    ],
  );
});

test('sessions and activity', async () => {
  const session = { id: 'ses_1', createdAt: '2026-11-28T00:00:00Z', expiresAt: '2026-12-28T00:00:00Z', current: true };
  const entry = { id: 'act_1', operatorId: 'acc_1', kind: 'mail.sent', createdAt: '2026-11-28T00:00:00Z', inboxId: 'ibx_1' };
  const { api, seen } = client((s) =>
    s.url === '/activity?limit=20'
      ? { status: 200, body: { activity: [entry] } }
      : s.method === 'GET'
        ? { status: 200, body: { sessions: [session] } }
        : s.url === '/accounts/sessions'
          ? { status: 200, body: { revoked: 2 } }
          : { status: 204 },
  );
  assert.deepEqual(await api.listSessions(), [session]);
  assert.equal(await api.signOutOtherSessions(), 2);
  await api.signOutSession('ses_2');
  assert.deepEqual(await api.listActivity({ limit: 20 }), { activity: [entry], nextCursor: null });
  assert.deepEqual(
    seen.map((s) => [s.method, s.url]),
    [
      ['GET', '/accounts/sessions'],
      ['DELETE', '/accounts/sessions'],
      ['DELETE', '/accounts/sessions/ses_2'],
      ['GET', '/activity?limit=20'],
    ],
  );
});

test('ApiError carries the code typed as the API enum', async () => {
  const { api } = client(() => ({ status: 502, body: { error: { code: 'send_failed', message: 'the relay refused the message' } } }));
  const error = await api.sendMail({ from: 'a', to: ['b@c.d'], subject: '', text: '' }).then(
    () => assert.fail('sent'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof ApiError);
  const code: ErrorCode | 'http_error' = error.code;
  assert.equal(code, 'send_failed');
  assert.equal(error.status, 502);
});
