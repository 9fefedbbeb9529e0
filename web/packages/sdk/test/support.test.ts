// Support sealing against the Rust SDK's own fixture
// (crates/client/tests/data/support.json, written and checked by the Rust
// test `support::tests::the_shared_support_fixture_matches`): the same
// plaintext bytes, the same boxes byte for byte, the same bindings.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  AccountKeys,
  b64decode,
  b64encode,
  fromUtf8,
  newTicketId,
  newTicketMessageId,
  openBox,
  OpenFailed,
  openTicketHeader,
  openTicketMessage,
  publicKeyOf,
  sealBox,
  sealNewTicket,
  sealTicketMessage,
  supportBinding,
  supportHeaderContext,
  supportKeyBinding,
  supportMessageContext,
  ticketHeaderPlaintext,
  ticketMessagePlaintext,
  verifySupportBinding,
  type SealedBox,
  type TicketHeader,
} from '../src/index.js';
import { readJson, SUPPORT_FIXTURE_PATH } from './helpers.js';

interface FixedBox {
  ephemeralSecret: string;
  nonce: string;
  box: SealedBox;
}

interface Fixture {
  phrase: string;
  accountId: string;
  vaultPublicKey: string;
  supportSecret: string;
  staffKey: string;
  ticketId: string;
  messageId: string;
  replyId: string;
  header: TicketHeader;
  text: string;
  reply: string;
  headerPlaintext: string;
  textPlaintext: string;
  headerContext: string;
  textContext: string;
  boxes: Record<'headerForStaff' | 'headerForAccount' | 'textForStaff' | 'textForAccount' | 'replyForStaff' | 'replyForAccount', FixedBox>;
  ticketBinding: string;
  keyRequest: { accountKey: string; binding: string; staffKey: string };
}

const f = readJson<Fixture>(SUPPORT_FIXTURE_PATH);
const keysPromise = AccountKeys.fromPhrase(f.phrase);
const supportSecret = b64decode(f.supportSecret);
const staffKey = b64decode(f.staffKey);
const options = (fixed: FixedBox) => ({ ephemeralSecret: b64decode(fixed.ephemeralSecret), nonce: b64decode(fixed.nonce) });

test('support fixture: the keys are the account\'s and the support key pair is whole', async () => {
  const keys = await keysPromise;
  assert.equal(keys.accountId, f.accountId);
  assert.equal(b64encode(keys.vaultPublicKey()), f.vaultPublicKey);
  assert.equal(b64encode(publicKeyOf(supportSecret)), f.staffKey);
});

test('support fixture: contexts and plaintext bytes are the Rust SDK\'s', () => {
  assert.equal(supportHeaderContext(f.ticketId), f.headerContext);
  assert.equal(supportMessageContext(f.ticketId, f.messageId), f.textContext);
  assert.equal(fromUtf8(ticketHeaderPlaintext(f.header)), f.headerPlaintext);
  assert.equal(fromUtf8(ticketMessagePlaintext(f.text)), f.textPlaintext);
  // Key order does not come from the caller's object.
  const reordered = { subject: f.header.subject, priority: f.header.priority, category: f.header.category };
  assert.equal(fromUtf8(ticketHeaderPlaintext(reordered)), f.headerPlaintext);
});

test('support fixture: sealNewTicket seals every box byte for byte, with the binding', async () => {
  const keys = await keysPromise;
  const b = f.boxes;
  const sealed = sealNewTicket(keys, staffKey, f.header, f.text, {
    ticketId: f.ticketId,
    messageId: f.messageId,
    seal: {
      headerForStaff: options(b.headerForStaff),
      headerForAccount: options(b.headerForAccount),
      messageForStaff: options(b.textForStaff),
      messageForAccount: options(b.textForAccount),
    },
  });
  assert.equal(sealed.ticketId, f.ticketId);
  assert.deepEqual(sealed.request, {
    id: f.ticketId,
    accountKey: f.vaultPublicKey,
    staffKey: f.staffKey,
    binding: f.ticketBinding,
    header: { forStaff: b.headerForStaff.box, forAccount: b.headerForAccount.box },
    message: { id: f.messageId, forStaff: b.textForStaff.box, forAccount: b.textForAccount.box },
  });
  assert.equal(JSON.stringify(sealed.request.header.forStaff), JSON.stringify(b.headerForStaff.box));
});

test('support fixture: sealTicketMessage seals byte for byte', () => {
  const b = f.boxes;
  const request = sealTicketMessage(staffKey, b64decode(f.vaultPublicKey), f.ticketId, f.reply, {
    messageId: f.replyId,
    forStaff: options(b.replyForStaff),
    forAccount: options(b.replyForAccount),
  });
  assert.deepEqual(request, { id: f.replyId, staffKey: f.staffKey, forStaff: b.replyForStaff.box, forAccount: b.replyForAccount.box });
});

test('support fixture: the Rust boxes open on both sides, and only in their place', async () => {
  const keys = await keysPromise;
  const b = f.boxes;
  for (const [secret, copy] of [
    [supportSecret, b.headerForStaff],
    [keys.vaultSecret(), b.headerForAccount],
  ] as const) {
    assert.deepEqual(openTicketHeader(secret, f.ticketId, copy.box), f.header);
  }
  for (const [secret, copy] of [
    [supportSecret, b.textForStaff],
    [keys.vaultSecret(), b.textForAccount],
  ] as const) {
    assert.equal(openTicketMessage(secret, f.ticketId, f.messageId, copy.box), f.text);
  }
  assert.equal(openTicketMessage(keys.vaultSecret(), f.ticketId, f.replyId, b.replyForAccount.box), f.reply);
  // Another ticket's or message's context, or the other side's key, opens nothing.
  assert.throws(() => openTicketHeader(keys.vaultSecret(), 'tkt_other0000000000000000', b.headerForAccount.box), OpenFailed);
  assert.throws(() => openTicketMessage(keys.vaultSecret(), f.ticketId, f.replyId, b.textForAccount.box), OpenFailed);
  assert.throws(() => openTicketHeader(supportSecret, f.ticketId, b.headerForAccount.box), OpenFailed);
  // A message box is no header, even under the header's context.
  const notHeader = sealBox(keys.vaultPublicKey(), f.headerContext, ticketMessagePlaintext('x'));
  assert.throws(() => openTicketHeader(keys.vaultSecret(), f.ticketId, notHeader), /not a ticket header/);
  assert.equal(fromUtf8(openBox(b.headerForStaff.box, supportSecret, f.headerContext)), f.headerPlaintext);
});

test('support fixture: the bindings match and verify on the staff side', async () => {
  const keys = await keysPromise;
  assert.deepEqual(supportKeyBinding(keys, staffKey), f.keyRequest);
  assert.equal(b64encode(supportBinding(keys.vaultSecret(), staffKey, keys.accountId, f.ticketId, staffKey)), f.ticketBinding);
  const vault = keys.vaultPublicKey();
  assert.ok(verifySupportBinding(supportSecret, vault, f.accountId, f.ticketId, b64decode(f.ticketBinding)));
  assert.ok(verifySupportBinding(supportSecret, vault, f.accountId, 'key', b64decode(f.keyRequest.binding)));
  // Another account, request or support key: no.
  assert.ok(!verifySupportBinding(supportSecret, vault, 'acct_other', f.ticketId, b64decode(f.ticketBinding)));
  assert.ok(!verifySupportBinding(supportSecret, vault, f.accountId, 'key', b64decode(f.ticketBinding)));
  assert.ok(!verifySupportBinding(new Uint8Array(32).fill(7), vault, f.accountId, f.ticketId, b64decode(f.ticketBinding)));
});

test('support: ids have the shapes the service takes', () => {
  assert.match(newTicketId(), /^tkt_[a-z0-9]{20}$/);
  assert.match(newTicketMessageId(), /^tkm_[a-z0-9]{16}$/);
  assert.notEqual(newTicketId(), newTicketId());
});

test('support: a fresh ticket (random boxes) opens on both sides', async () => {
  const keys = await keysPromise;
  const header = { category: 'technical', priority: 'urgent', subject: 'It broke' };
  const sealed = sealNewTicket(keys, staffKey, header, 'Since Tuesday');
  assert.match(sealed.ticketId, /^tkt_[a-z0-9]{20}$/);
  const r = sealed.request;
  assert.deepEqual(openTicketHeader(supportSecret, sealed.ticketId, r.header.forStaff), header);
  assert.deepEqual(openTicketHeader(keys.vaultSecret(), sealed.ticketId, r.header.forAccount), header);
  assert.equal(openTicketMessage(supportSecret, sealed.ticketId, sealed.messageId, r.message.forStaff), 'Since Tuesday');
  assert.ok(verifySupportBinding(supportSecret, keys.vaultPublicKey(), keys.accountId, sealed.ticketId, b64decode(r.binding ?? '')));
});
