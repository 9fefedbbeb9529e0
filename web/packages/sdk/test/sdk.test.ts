// Phrases, ids, boxes' shapes, message content, labels, the wire mapping and
// the client (against a fake fetch).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  AccountKeys,
  AddressKey,
  ADDRESS_ID_PATTERN,
  ApiError,
  b64decode,
  b64encode,
  generatePhrase,
  isSealedBox,
  messageContext,
  newAddressId,
  NoKeyError,
  openLabel,
  openMessage,
  parseMessageContent,
  parsePhrase,
  SealError,
  sealBox,
  sealLabel,
  SealpostClient,
  WaitTimeoutError,
  type Message,
} from '../src/index.js';

const VECTOR = 'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about';
const keys = AccountKeys.fromSeed(new Uint8Array(64).fill(5));

test('phrase: generated phrases round-trip; typing is normalised', async () => {
  const phrase = generatePhrase();
  assert.equal(phrase.split(' ').length, 12);
  assert.equal(parsePhrase(phrase), phrase);
  assert.notEqual(generatePhrase(), phrase);
  const messy = `  ${VECTOR.toUpperCase().replaceAll(' ', ' \t ')}\n`;
  assert.equal(parsePhrase(messy), VECTOR);
  assert.equal((await AccountKeys.fromPhrase(messy)).accountId, 'acct_tul7dckxx25gyxvml33luw2o');
});

test('phrase: bad phrases are refused with the reason', () => {
  assert.throws(() => parsePhrase(VECTOR.replace('about', 'abandon')), /the checksum does not match/);
  assert.throws(() => parsePhrase(VECTOR.replace('abandon', 'abandonx')), /word 1 is not in the word list/);
  assert.throws(() => parsePhrase(VECTOR.replace('abandon ', '')), /expected 12 words, got 11/);
  assert.throws(() => parsePhrase(`${'abandon '.repeat(23)}art`), /12/);
  assert.throws(() => parsePhrase(''), SealError);
});

test('keys: secrets never serialise; epochs use distinct labels', () => {
  assert.equal(JSON.stringify({ keys }), '{"keys":"AccountKeys(..)"}');
  assert.equal(String(keys), 'AccountKeys(..)');
  assert.deepEqual(keys.addressSealingKey('ibx_x', 2), keys.derive('inbox-sealing:ibx_x:2'));
  assert.deepEqual(keys.addressSecret('ibx_x', 3), keys.derive('inbox-key:ibx_x:3'));
  assert.notDeepEqual(keys.addressPublicKey('ibx_x', 0), keys.addressPublicKey('ibx_x', 1));
  assert.match(keys.accountId, /^acct_[a-z2-7]{24}$/);
  const key = AddressKey.derive(keys, 'ibx_x');
  assert.equal(JSON.stringify(key), '{"addressId":"ibx_x","epoch":0}');
});

test('ids: client-made address ids have the documented shape', () => {
  const id = newAddressId();
  assert.match(id, /^ibx_[a-z0-9]{16}$/);
  assert.match(id, ADDRESS_ID_PATTERN);
  assert.notEqual(newAddressId(), id);
});

test('boxes: the service shape check', () => {
  const good = { v: 2, epk: b64encode(new Uint8Array(32).fill(1)), n: b64encode(new Uint8Array(12)), c: '', t: b64encode(new Uint8Array(16)) };
  assert.ok(isSealedBox(good));
  assert.ok(isSealedBox({ ...good, v: 1 }));
  for (const bad of [
    { ...good, v: 3 },
    { ...good, v: '2' },
    { ...good, epk: b64encode(new Uint8Array(31)) },
    { ...good, n: b64encode(new Uint8Array(16)) },
    { ...good, t: 'AwMDAwMDAwMDAwMDAwMDAw==' },
    { ...good, c: 'not base64!' },
    { ...good, c: 12 },
    [],
    null,
  ]) {
    assert.equal(isSealedBox(bad), false, JSON.stringify(bad));
  }
  // Non-canonical trailing bits are refused like the Rust decoder does.
  assert.throws(() => b64decode('AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQF'));
});

function sealedMessage(addressId: string, epoch: number, json: string): Message {
  const id = 'msg_0000000000000000000000000a';
  return {
    id,
    addressId,
    receivedAt: '2026-11-22T12:00:00.000Z',
    read: false,
    sizeBytes: 10,
    keyEpoch: epoch,
    content: sealBox(keys.addressPublicKey(addressId, epoch), messageContext(addressId, id), json),
    folder: 'inbox',
    starred: false,
    outgoing: false,
  };
}

test('messages open for the account and for the address key, with codes', () => {
  const json = JSON.stringify({
    from: 'A <a@example.com>', to: ['b@mail.localhost'], cc: null, replyTo: null, subject: 'Your code',
    date: null, messageIdHeader: null, text: 'Your verification code is 482913. https://example.com/v', html: null,
    attachments: [{ index: 0, filename: 'a.bin', contentType: 'application/octet-stream', sizeBytes: 3, stored: true }],
    newField: 1,
  });
  const message = sealedMessage('ibx_first01', 0, json);
  const opened = openMessage(keys, message);
  assert.equal(opened.subject, 'Your code');
  assert.deepEqual(opened.cc, []);
  assert.deepEqual(opened.codes, ['482913']);
  assert.deepEqual(opened.links, ['https://example.com/v']);
  assert.equal(opened.attachments[0]?.filename, 'a.bin');
  assert.deepEqual(openMessage(AddressKey.derive(keys, 'ibx_first01'), message), opened);
  assert.throws(() => openMessage(AddressKey.derive(keys, 'ibx_other01'), message), NoKeyError);
  const later = sealedMessage('ibx_first01', 1, json);
  assert.equal(openMessage(keys, later).subject, 'Your code');
  assert.throws(() => openMessage(AddressKey.derive(keys, 'ibx_first01'), later), NoKeyError);
  assert.throws(() => openMessage(keys, { ...message, id: 'msg_0000000000000000000000000b' }), SealError);
  // Sparse content reads as empty; broken content is an error.
  assert.deepEqual(parseMessageContent('{"subject":null}'), {
    from: null, to: [], cc: [], replyTo: null, subject: null, date: null, messageIdHeader: null, text: null, html: null, attachments: [],
  });
  assert.throws(() => openMessage(keys, sealedMessage('ibx_first01', 0, 'not json')), /malformed/);
  const htmlOnly = openMessage(keys, sealedMessage('ibx_first01', 0, '{"html":"<p>Code:<br>1234</p>"}'));
  assert.equal(htmlOnly.bodyText, 'Code:\n1234');
});

test('labels are bound to their address and account', () => {
  const meta = sealLabel(keys, 'ibx_aaaa', 'shop ✓');
  assert.equal(openLabel(keys, 'ibx_aaaa', meta), 'shop ✓');
  assert.throws(() => openLabel(keys, 'ibx_bbbb', meta));
  assert.throws(() => openLabel(AccountKeys.fromSeed(new Uint8Array(64)), 'ibx_aaaa', meta));
});

// ---- The client against a fake fetch ----------------------------------------------

interface Seen {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
}

function fakeFetch(answer: (seen: Seen) => { status: number; body?: unknown; headers?: Record<string, string> }) {
  const seen: Seen[] = [];
  const fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const s: Seen = {
      method: init?.method ?? 'GET',
      url: String(input),
      headers: Object.fromEntries(Object.entries((init?.headers ?? {}) as Record<string, string>)),
      body: init?.body === undefined ? undefined : JSON.parse(String(init.body)),
    };
    seen.push(s);
    const a = answer(s);
    return new Response(a.body === undefined ? null : JSON.stringify(a.body), { status: a.status, headers: a.headers ?? {} });
  }) as typeof globalThis.fetch;
  return { fetch, seen };
}

const wireInbox = (id: string, publicKey: string) => ({
  id, operatorId: keys.accountId, emailAddress: 'x.abcdef@mail.localhost', status: 'unassigned', createdAt: '2026-11-22T12:00:00.000Z',
  retentionDays: 7, keyEpoch: 0, publicKey, meta: null,
});

test('client: sign-in sends a proof, never the phrase; the token goes only in the header', async () => {
  const { fetch, seen } = fakeFetch((s) => {
    if (s.url.endsWith('/accounts/challenge')) {
      return { status: 200, body: { nonce: 'bm9uY2U', expiresAt: 'x', challengeKey: b64encode(keys.vaultPublicKey()) } };
    }
    if (s.url.endsWith('/accounts/verify')) {
      return { status: 200, body: { account: { id: keys.accountId, plan: { id: 'free', name: 'Free' }, createdAt: 'x' }, token: 'tok_secret', expiresAt: 'y' } };
    }
    return { status: 200, body: { inboxes: [wireInbox('ibx_abcd', 'k')] } };
  });
  const client = await SealpostClient.signIn({ baseUrl: 'http://api.test/', keys, fetch });
  const [challenge, verify] = seen;
  assert.deepEqual(challenge?.body, { accountId: keys.accountId });
  const body = verify?.body as { proof: string; nonce: string };
  assert.equal(body.nonce, 'bm9uY2U');
  assert.equal(body.proof, b64encode(keys.handshakeProof(keys.vaultPublicKey(), 'bm9uY2U')));
  assert.equal(challenge?.headers['authorization'], undefined);
  const addresses = await client.listAddresses();
  assert.equal(addresses[0]?.email, 'x.abcdef@mail.localhost');
  assert.equal(addresses[0]?.deviceId, null);
  const last = seen.at(-1)!;
  assert.equal(last.url, 'http://api.test/inboxes');
  assert.equal(last.headers['authorization'], 'Bearer tok_secret');
  assert.ok(seen.every((s) => !s.url.includes('tok_secret')));
});

test('client: createAddress sends a client-chosen id and its public key (derived or generated)', async () => {
  const { fetch, seen } = fakeFetch((s) => {
    if (s.url.endsWith('/domains')) return { status: 200, body: { domains: [{ domain: 'mail.localhost', reserved: false }] } };
    const b = s.body as { id: string; publicKey: string };
    return { status: 201, body: { inbox: wireInbox(b.id, b.publicKey) } };
  });
  const client = new SealpostClient({ baseUrl: 'http://api.test', token: 't', keys, fetch });
  const derived = await client.createAddress({ prefix: 'shop' });
  const sent = seen.at(-1)!.body as Record<string, unknown>;
  assert.match(String(sent['id']), /^ibx_[a-z0-9]{16}$/);
  assert.equal(sent['domain'], 'mail.localhost');
  assert.equal(sent['prefix'], 'shop');
  assert.equal(sent['publicKey'], b64encode(keys.addressPublicKey(derived.id, 0)));
  assert.equal(derived.publicKey, sent['publicKey']);
  const generated = await client.createAddress({ generateKey: true, domain: 'mail.localhost' });
  assert.notEqual(generated.publicKey, b64encode(keys.addressPublicKey(generated.id, 0)));
  assert.equal(generated.publicKey, b64encode(generated.key.publicKey));
  const anonymous = new SealpostClient({ baseUrl: 'http://api.test', token: 't', fetch });
  const own = await anonymous.createAddress({ domain: 'mail.localhost' });
  assert.equal(own.publicKey, b64encode(own.key.publicKey));
});

test('client: nextMessage long-polls, skips read mail, retries 429, times out', async () => {
  const message = sealedMessage('ibx_wait01', 0, '{"subject":"Code 4321","text":"Your code: 4321"}');
  const wire = { ...message, inboxId: message.addressId } as Record<string, unknown>;
  delete wire['addressId'];
  let calls = 0;
  const { fetch, seen } = fakeFetch(() => {
    calls += 1;
    if (calls === 1) return { status: 204 };
    if (calls === 2) return { status: 429, body: { error: { code: 'rate_limited', message: 'slow down' } }, headers: { 'retry-after': '0' } };
    if (calls === 3) return { status: 200, body: { messages: [{ ...wire, id: 'msg_read', read: true }], cursor: 'c1' } };
    return { status: 200, body: { messages: [wire], cursor: 'c2' } };
  });
  const client = new SealpostClient({ baseUrl: 'http://api.test', token: 't', keys, fetch });
  const got = await client.nextMessage({ id: 'ibx_wait01' }, { timeoutSeconds: 30 });
  assert.equal(got.id, message.id);
  assert.equal(got.cursor, 'c2');
  assert.equal(seen[0]?.url, 'http://api.test/inboxes/ibx_wait01/messages/wait?timeout=30');
  assert.match(seen[3]?.url ?? '', /after=c1/);
  assert.deepEqual(client.openMessage(got).codes, ['4321']);

  const quiet = new SealpostClient({ baseUrl: 'http://api.test', token: 't', fetch: fakeFetch(() => ({ status: 204 })).fetch });
  await assert.rejects(quiet.nextMessage('ibx_wait01', { timeoutSeconds: 0 }), WaitTimeoutError);
  const refused = new SealpostClient({
    baseUrl: 'http://api.test',
    token: 't',
    fetch: fakeFetch(() => ({ status: 404, body: { error: { code: 'not_found', message: 'no such record' } }, headers: { 'x-request-id': 'r1' } })).fetch,
  });
  await assert.rejects(refused.nextMessage('ibx_gone'), (e: unknown) => e instanceof ApiError && e.code === 'not_found' && e.status === 404 && e.requestId === 'r1');
});
