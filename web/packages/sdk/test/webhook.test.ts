// The webhook signature rules of crates/signature (tolerance, several v1
// entries, malformed headers) and the event check of the Rust client.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { signWebhook, verifyWebhook, verifyWebhookSignature, WebhookVerifyError, type WebhookErrorKind } from '../src/index.js';
import { readJson, VECTORS_PATH } from './helpers.js';

const { secret: SECRET, timestamp: T, body: BODY, header: HEADER } = readJson<{
  webhookSignature: { secret: string; timestamp: number; body: string; header: string };
}>(VECTORS_PATH).webhookSignature;

function kind(f: () => unknown): WebhookErrorKind {
  try {
    f();
  } catch (e) {
    assert.ok(e instanceof WebhookVerifyError, String(e));
    return e.kind;
  }
  assert.fail('expected a WebhookVerifyError');
}

test('webhook: the key is the whole secret string', () => {
  assert.notEqual(signWebhook(SECRET.replace('whsec_', ''), T, BODY), HEADER);
  assert.equal(kind(() => verifyWebhookSignature(SECRET.replace('whsec_', ''), HEADER, BODY, T)), 'mismatch');
});

test('webhook: five minutes each way, signature checked first', () => {
  verifyWebhookSignature(SECRET, HEADER, BODY, T + 300);
  verifyWebhookSignature(SECRET, HEADER, BODY, T - 300);
  assert.equal(kind(() => verifyWebhookSignature(SECRET, HEADER, BODY, T + 301)), 'too_old');
  assert.equal(kind(() => verifyWebhookSignature(SECRET, HEADER, BODY, T - 301)), 'too_new');
  assert.throws(() => verifyWebhookSignature(SECRET, HEADER, BODY, T + 301), /301 seconds old \(more than 300\)/);
  assert.equal(kind(() => verifyWebhookSignature('whsec_other', HEADER, BODY, T + 301)), 'mismatch');
  // The default clock is now: the 2026 vector is too old by now... or too new before it.
  assert.match(kind(() => verifyWebhookSignature(SECRET, HEADER, BODY)), /too_old|too_new/);
});

test('webhook: any change breaks it; raw bytes, not re-serialised JSON', () => {
  const tampered = BODY.replace('evt_vector', 'evt_vectoR');
  assert.equal(kind(() => verifyWebhookSignature(SECRET, HEADER, tampered, T)), 'mismatch');
  const pretty = JSON.stringify(JSON.parse(BODY), null, 2);
  assert.equal(kind(() => verifyWebhookSignature(SECRET, HEADER, pretty, T)), 'mismatch');
  const moved = HEADER.replace('t=1795000000', 't=1795000001');
  assert.equal(kind(() => verifyWebhookSignature(SECRET, moved, BODY, T)), 'mismatch');
  assert.equal(kind(() => verifyWebhookSignature(SECRET, HEADER.slice(0, -2), BODY, T)), 'mismatch');
});

test('webhook: several v1 entries, other schemes, order, upper-case hex, spaces', () => {
  const good = HEADER.slice('t=1795000000,'.length);
  const bad = `v1=${'0'.repeat(64)}`;
  verifyWebhookSignature(SECRET, `t=${T},${bad},${good}`, BODY, T);
  verifyWebhookSignature(SECRET, `t=${T}, v0=abc, ${good}, v2=zzz`, BODY, T);
  verifyWebhookSignature(SECRET, `${good.toUpperCase().replace('V1=', 'v1=')},t=${T}`, BODY, T);
  verifyWebhookSignature(SECRET, HEADER.replace(',', ' , '), BODY, T);
  assert.equal(kind(() => verifyWebhookSignature(SECRET, `t=${T},${bad},v1=not-hex,v1=`, BODY, T)), 'mismatch');
});

test('webhook: malformed headers', () => {
  const sig = HEADER.slice('t=1795000000,'.length);
  const cases: Array<[string, WebhookErrorKind]> = [
    ['', 'missing_timestamp'],
    [sig, 'missing_timestamp'],
    ['t=1795000000', 'missing_signature'],
    ['t=1795000000,v0=abc', 'missing_signature'],
    ['garbage', 'malformed'],
    ['t=1795000000,t=1795000000,v1=00', 'malformed'],
    ['t=,v1=00', 'malformed'],
    ['t=-5,v1=00', 'malformed'],
    ['t=+1795000000,v1=00', 'malformed'],
    ['t=1795000000.5,v1=00', 'malformed'],
    [`t=${'9'.repeat(30)},${sig}`, 'malformed'],
  ];
  for (const [header, expected] of cases) {
    assert.equal(kind(() => verifyWebhookSignature(SECRET, header, BODY, T)), expected, header);
  }
});

test('webhook: verifyWebhook reads headers of any server and checks the event id', () => {
  const bytes = new TextEncoder().encode(BODY);
  const fromHeaders = verifyWebhook(SECRET, new Headers({ 'Service-Signature': HEADER }), bytes, T);
  assert.equal(fromHeaders.id, 'evt_vector');
  const fromObject = verifyWebhook(SECRET, { 'service-signature': HEADER, 'service-event-id': ' evt_vector ' }, BODY, T);
  assert.equal(fromObject.type, 'webhook.test');
  assert.equal(kind(() => verifyWebhook(SECRET, {}, BODY, T)), 'missing_header');
  assert.equal(
    kind(() => verifyWebhook(SECRET, [['Service-Signature', HEADER], ['Service-Event-Id', 'evt_other']], BODY, T)),
    'event_id_mismatch',
  );
  const notEvent = '{"hello":1}';
  assert.equal(kind(() => verifyWebhook(SECRET, { 'Service-Signature': signWebhook(SECRET, T, notEvent) }, notEvent, T)), 'invalid_body');
});
