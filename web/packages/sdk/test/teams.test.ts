// Teams against the Rust SDK: crates/client/tests/data/team-grant.json is
// written by sealpost-client's tests (`the_shared_grant_fixture_opens_and_reseals`)
// and read by them; here the TypeScript SDK opens its grant and pin, and
// reseals the grant byte for byte with the same ephemeral secret and nonce.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  AccountKeys,
  b64decode,
  b64encode,
  formatJoinCode,
  grantPlaintext,
  hexDecode,
  joinCodeFor,
  openBox,
  openGrant,
  OpenFailed,
  parseJoinCode,
  pinnedKey,
  SealError,
  sealGrant,
  sealPin,
  sharedSecrets,
  teamGrantContext,
  teamKeyFingerprint,
  accountSecrets,
  generatePhrase,
  type SealedBox,
} from '../src/index.js';
import { readJson } from './helpers.js';

interface Fixture {
  ownerPhrase: string;
  memberPhrase: string;
  ownerId: string;
  memberId: string;
  memberPublicKey: string;
  inboxId: string;
  epoch: number;
  context: string;
  plaintext: string;
  sealed: SealedBox;
  fixed: { ephemeralSecretHex: string; nonceHex: string; box: SealedBox };
  pin: SealedBox;
  joinCode: string;
  fingerprint: string;
}

const f = readJson<Fixture>('../crates/client/tests/data/team-grant.json');
const ownerP = AccountKeys.fromPhrase(f.ownerPhrase);
const memberP = AccountKeys.fromPhrase(f.memberPhrase);

test('teams fixture: the accounts, the context and the plaintext are the Rust SDK\'s', async () => {
  const [owner, member] = [await ownerP, await memberP];
  assert.equal(owner.accountId, f.ownerId);
  assert.equal(member.accountId, f.memberId);
  assert.equal(b64encode(member.authPublicKey()), f.memberPublicKey);
  assert.equal(teamGrantContext(f.ownerId, f.memberId, f.inboxId, f.epoch), f.context);
  assert.equal(new TextDecoder().decode(grantPlaintext(owner, f.inboxId, f.epoch)), f.plaintext);
});

test('teams fixture: the member opens the grant the Rust SDK sealed', async () => {
  const [owner, member] = [await ownerP, await memberP];
  const keys = openGrant(member, f.ownerId, f.inboxId, f.epoch, f.sealed);
  assert.deepEqual(keys.addressSecret, owner.addressSecret(f.inboxId, f.epoch));
  assert.deepEqual(keys.sealingKey, owner.addressSealingKey(f.inboxId, f.epoch));
  // Another epoch, another owner or another reader: it does not open.
  assert.throws(() => openGrant(member, f.ownerId, f.inboxId, f.epoch + 1, f.sealed), OpenFailed);
  assert.throws(() => openGrant(member, f.memberId, f.inboxId, f.epoch, f.sealed), OpenFailed);
  assert.throws(() => openGrant(owner, f.ownerId, f.inboxId, f.epoch, f.sealed), OpenFailed);
});

test('teams fixture: sealing a grant gives the Rust SDK\'s bytes', async () => {
  const owner = await ownerP;
  const resealed = sealGrant(owner, f.memberId, b64decode(f.memberPublicKey), f.inboxId, f.epoch, {
    ephemeralSecret: hexDecode(f.fixed.ephemeralSecretHex),
    nonce: hexDecode(f.fixed.nonceHex),
  });
  assert.deepEqual(resealed, f.fixed.box);
});

test('teams fixture: the pin opens to the member key; a pin sealed here opens the same way', async () => {
  const [owner, member] = [await ownerP, await memberP];
  assert.deepEqual(openBox(f.pin, owner.vaultSecret(), ''), member.authPublicKey());
  const shown = { memberId: f.memberId, publicKey: f.memberPublicKey, pin: f.pin };
  assert.deepEqual(pinnedKey(owner, shown), member.authPublicKey());
  assert.deepEqual(pinnedKey(owner, { ...shown, pin: sealPin(owner, member.authPublicKey()) }), member.authPublicKey());
  // A key the service shows differently from the one pinned is refused.
  const other = await AccountKeys.fromPhrase(generatePhrase());
  assert.throws(() => pinnedKey(owner, { ...shown, publicKey: b64encode(other.authPublicKey()) }), /not the key you added/);
  // A pin sealed to someone else's vault does not open.
  assert.throws(() => pinnedKey(owner, { ...shown, pin: sealPin(other, member.authPublicKey()) }), /does not open/);
});

test('teams fixture: join code and its six words', async () => {
  const member = await memberP;
  const code = parseJoinCode(`  ${f.joinCode}\n`);
  assert.equal(code.accountId, f.memberId);
  assert.deepEqual(code.publicKey, member.authPublicKey());
  assert.equal(formatJoinCode(joinCodeFor(member)), f.joinCode);
  assert.equal(teamKeyFingerprint(code.publicKey), f.fingerprint);
  assert.equal(f.fingerprint.split(' ').length, 6);
});

test('join codes: what is malformed is refused with the reason', () => {
  const key = f.memberPublicKey;
  assert.throws(() => parseJoinCode('nonsense'), /three parts/);
  assert.throws(() => parseJoinCode(`team.${f.memberId}.${key}`), /starts with service-team-1/);
  assert.throws(() => parseJoinCode(`service-team-1.acct_x.${key}`), /account id/);
  assert.throws(() => parseJoinCode(`service-team-1.${f.memberId}.AAAA`), /32-byte key/);
  assert.throws(() => parseJoinCode(''), SealError);
});

test('shared secrets: grants open shared mail, other addresses fall back to the own keys', async () => {
  const [owner, member] = [await ownerP, await memberP];
  const memberships = [{ ownerId: f.ownerId, addresses: [{ addressId: f.inboxId, grants: [{ epoch: f.epoch, sealed: f.sealed }] }] }];
  const secrets = sharedSecrets(member, memberships, accountSecrets(member));
  assert.equal(secrets.size, 1);
  assert.deepEqual(secrets.secretFor(f.inboxId, f.epoch), owner.addressSecret(f.inboxId, f.epoch));
  // A shared address at an epoch not granted: nothing (never the member's own derivation).
  assert.equal(secrets.secretFor(f.inboxId, 0), undefined);
  assert.deepEqual(secrets.secretFor('ibx_ownaddress1', 0), member.addressSecret('ibx_ownaddress1', 0));
  // A grant that does not open is left out.
  const broken = sharedSecrets(owner, memberships);
  assert.equal(broken.size, 0);
});

/** A fake API answering the team calls, recording what it was sent. */
function teamApi(member: { memberId: string; publicKey: string; pin: SealedBox }) {
  const calls: Array<{ method: string; path: string; body: unknown }> = [];
  const fetch = async (url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const u = new URL(String(url));
    const method = init?.method ?? 'GET';
    const body = init?.body === undefined ? undefined : JSON.parse(String(init.body));
    calls.push({ method, path: u.pathname + u.search, body });
    const json = (status: number, value: unknown) => new Response(JSON.stringify(value), { status, headers: { 'content-type': 'application/json' } });
    const wireMember = { ...member, joinedAt: '2026-11-28T00:00:00.000Z', grants: [] as unknown[] };
    if (method === 'POST' && u.pathname === '/team/members') {
      const b = body as { memberId: string; publicKey: string; pin: SealedBox };
      return json(201, { member: { ...wireMember, memberId: b.memberId, publicKey: b.publicKey, pin: b.pin } });
    }
    if (method === 'POST' && u.pathname === `/team/members/${member.memberId}/grants`) {
      const grants = (body as { grants: Array<{ inboxId: string; epoch: number; access: string }> }).grants;
      return json(200, { member: { ...wireMember, grants: grants.map((g) => ({ inboxId: g.inboxId, epoch: g.epoch, access: g.access })) } });
    }
    if (method === 'GET' && u.pathname === '/billing/payments') return json(200, { payments: [], nextCursor: null });
    return json(404, { error: { code: 'not_found', message: 'no' } });
  };
  return { calls, fetch: fetch as typeof globalThis.fetch };
}

test('client: adding pins the key to the vault; sharing seals every epoch to the pinned key', async () => {
  const { SealpostClient } = await import('../src/index.js');
  const [owner, member] = [await ownerP, await memberP];
  const api = teamApi({ memberId: f.memberId, publicKey: f.memberPublicKey, pin: f.pin });
  const client = new SealpostClient({ baseUrl: 'http://api.test', token: 'ses_x', keys: owner, fetch: api.fetch });

  const added = await client.addTeamMember(parseJoinCode(f.joinCode));
  const sent = api.calls[0]?.body as { memberId: string; publicKey: string; pin: SealedBox };
  assert.equal(sent.memberId, f.memberId);
  assert.equal(sent.publicKey, f.memberPublicKey);
  assert.deepEqual(openBox(sent.pin, owner.vaultSecret(), ''), member.authPublicKey());
  assert.equal(added.memberId, f.memberId);

  const shared = await client.shareAddress(added, { id: f.inboxId, keyEpoch: 1 }, 'send');
  const grants = (api.calls[1]?.body as { grants: Array<{ inboxId: string; epoch: number; access: string; sealed: SealedBox }> }).grants;
  assert.deepEqual(grants.map((g) => [g.inboxId, g.epoch, g.access]), [[f.inboxId, 0, 'send'], [f.inboxId, 1, 'send']]);
  for (const g of grants) {
    const keys = openGrant(member, f.ownerId, g.inboxId, g.epoch, g.sealed);
    assert.deepEqual(keys.addressSecret, owner.addressSecret(f.inboxId, g.epoch));
  }
  assert.deepEqual(shared.grants, [
    { addressId: f.inboxId, epoch: 0, access: 'send' },
    { addressId: f.inboxId, epoch: 1, access: 'send' },
  ]);

  // A key the service shows differently from the pinned one: nothing is sent.
  const other = await AccountKeys.fromPhrase(generatePhrase());
  const before = api.calls.length;
  await assert.rejects(client.shareAddress({ ...added, publicKey: b64encode(other.authPublicKey()) }, { id: f.inboxId, keyEpoch: 0 }, 'read'), /not the key you added/);
  assert.equal(api.calls.length, before);

  assert.deepEqual(await client.listPayments({ limit: 5, cursor: 'abc' }), { payments: [], nextCursor: null });
  assert.equal(api.calls.at(-1)?.path, '/billing/payments?limit=5&cursor=abc');
});
