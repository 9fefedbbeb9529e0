// Support end to end against a running stack, both sides in TypeScript: a
// fresh account opens a sealed ticket with the SDK; the support team's side
// (the stack's keyring and staff token, the staff API) opens the `forStaff`
// copies, verifies both bindings, and answers with `sealTicketMessage`; the
// account opens the answer, replies, closes and reopens. And an abuse
// report without a token.
//
// Runs when SEALPOST_API_URL, SEALPOST_STACK_STAFF_KEY_FILE and
// SEALPOST_STACK_STAFF_TOKEN are set (`sealpost-stack --env FILE`);
// skipped otherwise, except under CI=true.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import {
  AccountKeys,
  b64decode,
  b64decodeN,
  generatePhrase,
  openTicketHeader,
  openTicketMessage,
  sealTicketMessage,
  SealpostClient,
  verifySupportBinding,
  type OpenApiComponents,
} from '../src/index.js';

type Wire = OpenApiComponents['schemas'];

const API = process.env['SEALPOST_API_URL']?.replace(/\/+$/, '');
const KEY_FILE = process.env['SEALPOST_STACK_STAFF_KEY_FILE'];
const STAFF_TOKEN = process.env['SEALPOST_STACK_STAFF_TOKEN'];
const CI = process.env['CI'] === 'true';
const configured = Boolean(API && KEY_FILE && STAFF_TOKEN);
const SKIP_REASON =
  'support stack test skipped: set SEALPOST_API_URL, SEALPOST_STACK_STAFF_KEY_FILE and SEALPOST_STACK_STAFF_TOKEN (sealpost-stack --env FILE) to run it';
if (!configured && !CI) console.log(SKIP_REASON);

/** The support secret of `staffKey`, from the stack's keyring (`sealpost staff`'s file). */
function supportSecret(staffKey: string): Uint8Array {
  const keyring = JSON.parse(readFileSync(KEY_FILE as string, 'utf8')) as { keys: Array<{ publicKey: string; secretKey: string }> };
  const pair = keyring.keys.find((k) => k.publicKey === staffKey);
  assert.ok(pair, `the keyring holds no secret for ${staffKey}`);
  return b64decodeN(pair.secretKey, 32, 'secretKey');
}

/** The staff API with the stack's staff token. */
async function staff<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${API}${path}`, {
    method,
    headers: { authorization: `Bearer ${STAFF_TOKEN}`, accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  assert.ok(response.ok, `${method} ${path}: HTTP ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

test('support against the stack: sealed both ways, bindings verified by the support side', { skip: configured || CI ? false : SKIP_REASON, timeout: 120_000 }, async () => {
  assert.ok(configured, `CI=true: ${SKIP_REASON.replace('support stack test skipped: ', '')}`);
  const keys = await AccountKeys.fromPhrase(generatePhrase());
  const client = await SealpostClient.register({ baseUrl: API as string, keys });

  const overview = await client.support();
  assert.equal(overview.available, true, 'the stack runs with a support key');
  assert.deepEqual(overview.tickets, []);

  const header = { category: 'technical', priority: 'urgent', subject: 'Mail stopped — ünïcode ✓' };
  const { ticket, keyChanged } = await client.openTicket(header, 'Since this morning\nnothing arrives.');
  assert.equal(keyChanged, false);
  assert.equal(ticket.status, 'open');
  const listed = await client.support();
  assert.deepEqual(listed.tickets.map((t) => t.id), [ticket.id]);
  assert.deepEqual(openTicketHeader(keys.vaultSecret(), ticket.id, listed.tickets[0]?.header), header);

  // The support team's side: its copies open with its secret, and both bindings verify.
  const seen = await staff<Wire['StaffTicketDetail']>('GET', `/staff/tickets/${ticket.id}`);
  const secret = supportSecret(seen.ticket.staffKey);
  assert.equal(seen.ticket.accountId, keys.accountId);
  assert.deepEqual(openTicketHeader(secret, ticket.id, seen.ticket.ticket.header), header);
  const first = seen.messages[0];
  assert.ok(first);
  assert.equal(openTicketMessage(secret, ticket.id, first.id, first.box), 'Since this morning\nnothing arrives.');
  const accountKey = b64decode(seen.ticket.accountKey);
  assert.ok(verifySupportBinding(secret, accountKey, keys.accountId, ticket.id, b64decode(seen.ticket.binding ?? '')), 'the ticket binding');
  assert.ok(seen.keyBinding, 'the POST /support/key binding is kept');
  assert.ok(verifySupportBinding(supportSecret(seen.keyBinding.staffKey), b64decode(seen.keyBinding.accountKey), keys.accountId, 'key', b64decode(seen.keyBinding.binding)), 'the key binding');

  // Staff answer, sealed with the SDK to the support key and the ticket's account key.
  const answer = sealTicketMessage(b64decode(seen.ticket.staffKey), accountKey, ticket.id, 'Fixed: try again.');
  await staff('POST', `/staff/tickets/${ticket.id}/messages`, answer);
  assert.equal((await client.support()).tickets[0]?.unread, true);
  const detail = await client.getTicket(ticket.id);
  assert.deepEqual(
    detail.messages.map((m) => [m.author, openTicketMessage(keys.vaultSecret(), ticket.id, m.id, m.box)]),
    [
      ['account', 'Since this morning\nnothing arrives.'],
      ['staff', 'Fixed: try again.'],
    ],
  );
  assert.equal((await client.support()).tickets[0]?.unread, false, 'reading the ticket marks the answer read');

  // The account replies, closes and reopens.
  await client.replyToTicket(ticket.id, 'It works, thanks.');
  const after = await staff<Wire['StaffTicketDetail']>('GET', `/staff/tickets/${ticket.id}`);
  const last = after.messages.at(-1);
  assert.ok(last);
  assert.equal(openTicketMessage(supportSecret(last.staffKey), ticket.id, last.id, last.box), 'It works, thanks.');
  assert.equal((await client.closeTicket(ticket.id)).status, 'resolved');
  assert.equal((await client.reopenTicket(ticket.id)).status, 'open');
  assert.equal((await client.closeTicket(ticket.id)).status, 'resolved');

  // An abuse report needs no token.
  await new SealpostClient({ baseUrl: API as string }).reportAbuse({ emailAddress: `nobody.${Date.now()}@mail.localhost`, reason: 'spam', details: 'from the SDK test' });
});
