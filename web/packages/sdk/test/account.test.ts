// The account-management calls the web client's account areas use, against
// a recording fake of the API: what is sealed, to which key, in which
// context, exactly as the Rust CLI seals it (devices: profile to the vault
// key with the device's pairing key inside, key bundle to the device's key;
// webhook names to the vault key).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  AccountKeys,
  b64encode,
  bytesRecipient,
  deviceProfileContext,
  KeyBundle,
  keyFingerprint,
  openBox,
  openApiKeyLabel,
  openDeviceProfile,
  openWebhookName,
  sealBox,
  sealDeviceProfile,
  SealError,
  SealpostClient,
  type SealedBox,
} from '../src/index.js';

const keys = AccountKeys.fromSeed(new Uint8Array(64).fill(9));
const other = AccountKeys.fromSeed(new Uint8Array(64).fill(10));
const NOW = '2026-11-28T00:00:00.000Z';

interface Call {
  method: string;
  path: string;
  body: unknown;
  auth: string | null;
}

/** A fake API: the devices and addresses it holds, and every call it got. */
function fakeApi() {
  const calls: Call[] = [];
  const devices = new Map<string, Record<string, unknown>>();
  const addresses = new Map<string, Record<string, unknown>>();
  const bundles = new Map<string, SealedBox>();
  const reply = (status: number, body?: unknown) =>
    new Response(body === undefined ? null : JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  const fetch = async (url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const u = new URL(String(url));
    const method = init?.method ?? 'GET';
    const body = init?.body === undefined ? undefined : JSON.parse(String(init.body));
    const headers = new Headers(init?.headers);
    calls.push({ method, path: u.pathname + u.search, body, auth: headers.get('authorization') });
    const b = body as Record<string, unknown>;
    let m: RegExpExecArray | null;
    if (method === 'POST' && u.pathname === '/workers/pair/lookup') {
      if (b['code'] !== '12345678') return reply(404, { error: { code: 'not_found', message: 'no such code' } });
      return reply(200, {
        session: { id: 'pss_abc', state: 'operator_detected', kind: 'device', platform: 'android', deviceName: 'Pixel <b>', publicKey: b64encode(device.publicKey), createdAt: NOW },
      });
    }
    if (method === 'POST' && u.pathname === '/workers/pair') {
      const worker = { id: b['workerId'], operatorId: keys.accountId, kind: 'device', platform: 'android', status: 'offline', createdAt: NOW, profile: b['profile'] };
      devices.set(String(b['workerId']), worker);
      return reply(201, { worker });
    }
    if ((m = /^\/workers\/(wkr_\w+)\/keys$/.exec(u.pathname)) && method === 'POST') {
      bundles.set(m[1] as string, b['keys'] as SealedBox);
      return reply(200, { keys: b['keys'], updatedAt: NOW });
    }
    if ((m = /^\/workers\/(wkr_\w+)$/.exec(u.pathname))) {
      const worker = devices.get(m[1] as string);
      if (worker === undefined) return reply(404, { error: { code: 'not_found', message: 'no' } });
      if (method === 'PATCH') {
        if (b['profile'] !== undefined) worker['profile'] = b['profile'];
        if (b['status'] !== undefined) worker['status'] = b['status'];
      }
      if (method === 'DELETE') {
        devices.delete(m[1] as string);
        return reply(204);
      }
      return reply(200, { worker });
    }
    if (method === 'GET' && u.pathname === '/inboxes') return reply(200, { inboxes: [...addresses.values()] });
    if ((m = /^\/workers\/(wkr_\w+)\/inboxes$/.exec(u.pathname)) && method === 'POST') {
      const inbox = addresses.get(String(b['inboxId']));
      if (inbox === undefined) return reply(404, { error: { code: 'not_found', message: 'no' } });
      inbox['assignedWorkerId'] = m[1];
      inbox['status'] = 'active';
      return reply(200, { inbox });
    }
    if ((m = /^\/workers\/(wkr_\w+)\/inboxes\/(ibx_\w+)$/.exec(u.pathname)) && method === 'DELETE') {
      const inbox = addresses.get(m[2] as string);
      if (inbox) delete inbox['assignedWorkerId'];
      return reply(204);
    }
    if (method === 'POST' && u.pathname === '/webhook-endpoints') {
      return reply(201, { secret: 'whsec_test', webhook: { id: b['id'], url: b['url'], events: b['events'], meta: b['meta'], status: 'active', createdAt: NOW } });
    }
    if (method === 'POST' && u.pathname === '/domains/custom') {
      const record = { name: `_service-verify.${b['domain']}`, type: 'TXT', value: 'service-verify=tok' };
      return reply(201, { domain: { domain: b['domain'], step: 'verify_ownership', verification: record, createdAt: NOW }, record });
    }
    if ((m = /^\/domains\/custom\/([^/]+)\/check$/.exec(u.pathname)) && method === 'POST') {
      const record = { name: `_service-verify.${m[1]}`, type: 'TXT', value: 'service-verify=tok' };
      return reply(200, { domain: { domain: m[1], step: 'change_nameservers', nameservers: ['ns1.test', 'ns2.test'], verification: record, createdAt: NOW } });
    }
    if (method === 'POST' && u.pathname === '/api-keys') {
      return reply(201, { token: 'spk_test', apiKey: { id: b['id'], label: b['label'], createdAt: NOW, paused: false } });
    }
    if (method === 'POST' && u.pathname === '/billing/checkout') {
      return reply(201, { url: 'http://x/pay', payment: { id: 'pay_1', status: 'pending', planId: b['planId'], provider: b['provider'], amount: 900, currency: 'usd', createdAt: NOW, url: 'http://x/pay' } });
    }
    return reply(404, { error: { code: 'not_found', message: `${method} ${u.pathname}` } });
  };
  const addAddress = (id: string) =>
    addresses.set(id, { id, operatorId: keys.accountId, emailAddress: `${id}@mail.test`, status: 'unassigned', createdAt: NOW, retentionDays: 7, keyEpoch: 0 });
  return { calls, devices, bundles, addAddress, fetch: fetch as typeof globalThis.fetch };
}

const device = bytesRecipient();

test('a pairing is looked up by its code typed loosely, and a wrong code is refused before any request', async () => {
  const api = fakeApi();
  const client = new SealpostClient({ baseUrl: 'http://api.test', token: 'tok', keys, fetch: api.fetch });
  const found = await client.lookupPairing(' 1234-5678 ');
  assert.deepEqual(api.calls[0]?.body, { code: '12345678' });
  assert.equal(found.sessionId, 'pss_abc');
  assert.equal(found.deviceName, 'Pixel <b>');
  assert.equal(keyFingerprint(device.publicKey), keyFingerprint(Buffer.from(found.publicKey, 'base64url')));
  await assert.rejects(client.lookupPairing('1234567'), SealError);
  await assert.rejects(client.lookupPairing('1234567a'), SealError);
  assert.equal(api.calls.length, 1);
});

test('approving seals the profile (name and device key) to the vault and an empty bundle to the device', async () => {
  const api = fakeApi();
  const client = new SealpostClient({ baseUrl: 'http://api.test', token: 'tok', keys, fetch: api.fetch });
  const found = await client.lookupPairing('12345678');
  const paired = await client.approvePairing(found, 'Work phone');
  assert.match(paired.id, /^wkr_[a-z0-9]{16,48}$/);
  const claim = api.calls.find((c) => c.path === '/workers/pair')?.body as { sessionId: string; workerId: string; profile: SealedBox };
  assert.equal(claim.sessionId, 'pss_abc');
  assert.equal(claim.workerId, paired.id);
  // The profile opens only with the vault key, only in its device's context, and holds the device key.
  const profile = openDeviceProfile(keys, paired.id, claim.profile);
  assert.deepEqual(profile, { name: 'Work phone', tags: [], notes: '', publicKey: b64encode(device.publicKey), extra: {} });
  assert.deepEqual(Object.keys(JSON.parse(new TextDecoder().decode(openBox(claim.profile, keys.vaultSecret(), deviceProfileContext(paired.id)))))
    , ['name', 'tags', 'notes', 'publicKey']);
  assert.throws(() => openDeviceProfile(other, paired.id, claim.profile));
  assert.throws(() => openDeviceProfile(keys, 'wkr_someoneelse0000000', claim.profile));
  // Then an empty bundle, sealed to the device's key.
  const bundle = await KeyBundle.open(device, paired.id, api.bundles.get(paired.id));
  assert.deepEqual(bundle.addressIds, []);
  assert.deepEqual(api.calls.map((c) => `${c.method} ${c.path}`), ['POST /workers/pair/lookup', 'POST /workers/pair', `POST /workers/${paired.id}/keys`]);
});

test('assigning sends the bundle with the address keys to the device key kept in the profile; moving re-sends the old one', async () => {
  const api = fakeApi();
  const client = new SealpostClient({ baseUrl: 'http://api.test', token: 'tok', keys, fetch: api.fetch });
  const first = await client.approvePairing(await client.lookupPairing('12345678'), 'one');
  const second = await client.approvePairing(await client.lookupPairing('12345678'), 'two');
  api.addAddress('ibx_aaaa1111');
  api.addAddress('ibx_bbbb2222');
  await client.assignAddress('ibx_aaaa1111', first.id);
  await client.assignAddress('ibx_bbbb2222', first.id);
  let bundle = await KeyBundle.open(device, first.id, api.bundles.get(first.id));
  assert.deepEqual(bundle.addressIds.sort(), ['ibx_aaaa1111', 'ibx_bbbb2222']);
  assert.deepEqual(bundle.entries.find((e) => e.addressId === 'ibx_aaaa1111')?.publicKey, keys.addressPublicKey('ibx_aaaa1111'));
  // Moving an address: the new holder gets it, the old one a bundle without it.
  await client.assignAddress('ibx_aaaa1111', second.id);
  bundle = await KeyBundle.open(device, first.id, api.bundles.get(first.id));
  assert.deepEqual(bundle.addressIds, ['ibx_bbbb2222']);
  assert.deepEqual((await KeyBundle.open(device, second.id, api.bundles.get(second.id))).addressIds, ['ibx_aaaa1111']);
  await client.unassignAddress('ibx_bbbb2222', first.id);
  assert.deepEqual((await KeyBundle.open(device, first.id, api.bundles.get(first.id))).addressIds, []);
});

test('a device whose profile holds no key gets no bundle', async () => {
  const api = fakeApi();
  const client = new SealpostClient({ baseUrl: 'http://api.test', token: 'tok', keys, fetch: api.fetch });
  const id = 'wkr_nokey0000000000000';
  api.devices.set(id, { id, operatorId: keys.accountId, kind: 'device', platform: 'web', status: 'offline', createdAt: NOW, profile: sealDeviceProfile(keys, id, { name: 'x', tags: [], notes: '', extra: {} }) });
  await assert.rejects(client.sendKeyBundle(id), /holds no device key/);
  assert.equal(api.bundles.size, 0);
});

test('renaming re-seals the profile, keeping the key, tags, notes and fields another client wrote', async () => {
  const api = fakeApi();
  const client = new SealpostClient({ baseUrl: 'http://api.test', token: 'tok', keys, fetch: api.fetch });
  const id = 'wkr_rename00000000000';
  // As another client may have written it: unknown fields beside the known ones.
  const written = sealBox(keys.vaultPublicKey(), deviceProfileContext(id), JSON.stringify({ name: 'old', tags: ['lab'], notes: 'n', publicKey: b64encode(device.publicKey), colour: 'teal' }));
  api.devices.set(id, { id, operatorId: keys.accountId, kind: 'device', platform: 'ios', status: 'offline', createdAt: NOW, profile: written });
  const renamed = await client.renameDevice(id, 'new name');
  assert.deepEqual(client.deviceProfile(renamed), { name: 'new name', tags: ['lab'], notes: 'n', publicKey: b64encode(device.publicKey), extra: { colour: 'teal' } });
  const disabled = await client.disableDevice(id);
  assert.equal(disabled.status, 'disabled');
  assert.deepEqual(api.calls.at(-1)?.body, { status: 'disabled' });
  await client.removeDevice(id);
  assert.equal(api.devices.has(id), false);
});

test('a webhook is created with its name sealed to the vault key; checkout sends the plan and provider', async () => {
  const api = fakeApi();
  const client = new SealpostClient({ baseUrl: 'http://api.test', token: 'tok', keys, fetch: api.fetch });
  const created = await client.createWebhook({ url: 'https://hooks.test/in', events: ['*'], name: 'Receiver' });
  assert.equal(created.secret, 'whsec_test');
  const sent = api.calls[0]?.body as { id: string; meta: SealedBox; events: string[] };
  assert.match(sent.id, /^whk_/);
  assert.deepEqual(sent.events, ['*']);
  assert.equal(openWebhookName(keys, sent.id, sent.meta), 'Receiver');
  assert.throws(() => openWebhookName(keys, 'whk_other000000000000', sent.meta));
  const checkout = await client.checkout('operator', 'sandbox');
  assert.deepEqual(api.calls[1]?.body, { planId: 'operator', provider: 'sandbox' });
  assert.equal(checkout.payment.status, 'pending');
  assert.ok(api.calls.every((c) => c.auth === 'Bearer tok'));
});

test('an API key is created with its label sealed to the vault key (context api-key-label), the token answered once', async () => {
  const api = fakeApi();
  const client = new SealpostClient({ baseUrl: 'http://api.test', token: 'tok', keys, fetch: api.fetch });
  const created = await client.createApiKey('CI runner');
  assert.equal(created.token, 'spk_test');
  const sent = api.calls[0]?.body as { id: string; label: SealedBox };
  assert.match(sent.id, /^key_[a-z0-9]{16}$/);
  assert.equal(openApiKeyLabel(keys, sent.id, sent.label), 'CI runner');
  assert.throws(() => openApiKeyLabel(keys, 'key_other0000000000', sent.label));
  assert.throws(() => openApiKeyLabel(other, sent.id, sent.label));
});

test('own domains: added by name, checked with no body (as the Rust client does), the domain in the path', async () => {
  const api = fakeApi();
  const client = new SealpostClient({ baseUrl: 'http://api.test', token: 'tok', keys, fetch: api.fetch });
  const added = await client.addOwnDomain('example.com');
  assert.deepEqual(api.calls[0]?.body, { domain: 'example.com' });
  assert.equal(added.record.name, '_service-verify.example.com');
  const checked = await client.checkOwnDomain('example.com');
  assert.equal(api.calls[1]?.path, '/domains/custom/example.com/check');
  assert.equal(api.calls[1]?.body, undefined);
  assert.deepEqual(checked.nameservers, ['ns1.test', 'ns2.test']);
});
