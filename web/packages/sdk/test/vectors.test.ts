// Every entry of crates/seal/tests/data/vectors.json (CONTRACT sections 2 to 4
// and the webhook signature), reproduced by the TypeScript SDK.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { x25519 } from '@noble/curves/ed25519.js';

import {
  AccountKeys,
  b64decode,
  b64encode,
  boxFromBinary,
  boxToBinary,
  hexDecode,
  hexEncode,
  messageContext,
  attachmentContext,
  openBinary,
  openBox,
  OpenFailed,
  parsePhrase,
  phraseSeed,
  sealBinary,
  sealBox,
  signWebhook,
  teamFingerprint,
  utf8,
  verifyWebhook,
  verifyWebhookSignature,
  type SealedBox,
} from '../src/index.js';
import { readJson, VECTORS_PATH } from './helpers.js';

interface Vectors {
  phrase: string;
  seedHex: string;
  derive: Record<string, string>;
  accountId: string;
  authPublicKey: string;
  authVerifier: string;
  vaultPublicKey: string;
  inbox: { id: string; epoch0PublicKey: string; epoch1PublicKey: string };
  handshake: { challengeSecretHex: string; challengeKey: string; nonce: string; accountId: string; proof: string };
  boxV2: {
    recipientPublicKey: string;
    ephemeralSecretHex: string;
    nonceHex: string;
    context: string;
    plaintext: string;
    box: SealedBox;
  };
  boxV1: { recipientPublicKey: string; context: string; plaintext: string; box: SealedBox };
  binaryBox: { context: string; plaintext: string; bytes: string };
  teamFingerprint: { publicKey: string; words: string[] };
  webhookSignature: { secret: string; timestamp: number; body: string; header: string };
}

const v = readJson<Vectors>(VECTORS_PATH);
const keysPromise = AccountKeys.fromPhrase(v.phrase);
const decoder = new TextDecoder();

test('vectors: every top-level entry is covered by this file', () => {
  const covered = [
    'about', 'phrase', 'seedHex', 'derive', 'accountId', 'authPublicKey', 'authVerifier', 'vaultPublicKey',
    'inbox', 'handshake', 'boxV2', 'boxV1', 'binaryBox', 'teamFingerprint', 'webhookSignature',
  ];
  assert.deepEqual(Object.keys(v).sort(), covered.sort());
});

test('vectors: seed (WebCrypto PBKDF2 and the pure-JS fallback agree)', async () => {
  assert.equal(hexEncode(await phraseSeed(parsePhrase(v.phrase))), v.seedHex);
  const subtle = globalThis.crypto.subtle;
  Object.defineProperty(globalThis.crypto, 'subtle', { value: undefined, configurable: true });
  try {
    assert.equal(hexEncode(await phraseSeed(v.phrase)), v.seedHex);
  } finally {
    Object.defineProperty(globalThis.crypto, 'subtle', { value: subtle, configurable: true });
  }
  const fromSeed = AccountKeys.fromSeed(hexDecode(v.seedHex));
  assert.equal(fromSeed.accountId, v.accountId);
});

test('vectors: derive(label) for every label', async () => {
  const keys = await keysPromise;
  assert.ok(Object.keys(v.derive).length >= 7);
  for (const [label, expected] of Object.entries(v.derive)) {
    assert.equal(hexEncode(keys.derive(label)), expected, label);
  }
  const id = v.inbox.id;
  assert.equal(hexEncode(keys.addressSecret(id, 0)), v.derive[`inbox-key:${id}`]);
  assert.equal(hexEncode(keys.addressSecret(id, 1)), v.derive[`inbox-key:${id}:1`]);
  assert.equal(hexEncode(keys.addressSealingKey(id, 0)), v.derive[`inbox-sealing:${id}`]);
  assert.equal(hexEncode(keys.addressSealingKey(id, 1)), hexEncode(keys.derive(`inbox-sealing:${id}:1`)));
  assert.equal(hexEncode(keys.authSecret()), v.derive['auth-key']);
  assert.equal(hexEncode(keys.vaultSecret()), v.derive['vault-key']);
});

test('vectors: account id, auth public key, verifier, vault and address public keys', async () => {
  const keys = await keysPromise;
  assert.equal(keys.accountId, v.accountId);
  assert.equal(keys.accountId.length, 5 + 24);
  assert.equal(b64encode(keys.authPublicKey()), v.authPublicKey);
  assert.equal(b64encode(keys.authVerifier()), v.authVerifier);
  assert.equal(b64encode(keys.vaultPublicKey()), v.vaultPublicKey);
  assert.equal(b64encode(keys.addressPublicKey(v.inbox.id, 0)), v.inbox.epoch0PublicKey);
  assert.equal(b64encode(keys.addressPublicKey(v.inbox.id, 1)), v.inbox.epoch1PublicKey);
  assert.deepEqual(keys.registration(), {
    accountId: v.accountId,
    authVerifier: v.authVerifier,
    authPublicKey: v.authPublicKey,
  });
});

test('vectors: handshake proof on both sides', async () => {
  const keys = await keysPromise;
  const h = v.handshake;
  const challengeSecret = hexDecode(h.challengeSecretHex);
  assert.equal(b64encode(x25519.getPublicKey(challengeSecret)), h.challengeKey);
  assert.equal(h.accountId, keys.accountId);
  const proof = keys.handshakeProof(b64decode(h.challengeKey), h.nonce, h.accountId);
  assert.equal(b64encode(proof), h.proof);
  // The service's side: the same shared secret.
  const shared = x25519.getSharedSecret(challengeSecret, keys.authPublicKey());
  const { handshakeProof } = await import('../src/keys.js');
  assert.equal(b64encode(handshakeProof(shared, h.nonce, h.accountId)), h.proof);
  // Another nonce or account gives another proof.
  assert.notEqual(b64encode(keys.handshakeProof(b64decode(h.challengeKey), b64encode(new Uint8Array(32)), h.accountId)), h.proof);
});

test('vectors: box v2 seals byte for byte and opens', async () => {
  const keys = await keysPromise;
  const bv = v.boxV2;
  const id = v.inbox.id;
  assert.equal(bv.recipientPublicKey, b64encode(keys.addressPublicKey(id, 0)));
  assert.equal(bv.context, messageContext(id, 'msg_vector01'));
  const sealed = sealBox(b64decode(bv.recipientPublicKey), bv.context, bv.plaintext, {
    ephemeralSecret: hexDecode(bv.ephemeralSecretHex),
    nonce: hexDecode(bv.nonceHex),
  });
  assert.deepEqual(sealed, bv.box);
  assert.equal(JSON.stringify(sealed), JSON.stringify(bv.box));
  assert.equal(decoder.decode(openBox(sealed, keys.addressSecret(id, 0), bv.context)), bv.plaintext);
  // Bound to its context, its key and its bytes.
  assert.throws(() => openBox(sealed, keys.addressSecret(id, 0), messageContext(id, 'msg_other')), OpenFailed);
  assert.throws(() => openBox(sealed, keys.addressSecret(id, 1), bv.context), OpenFailed);
  const tampered = { ...sealed, t: b64encode(b64decode(sealed.t).map((b, i) => (i === 0 ? b ^ 1 : b))) };
  assert.throws(() => openBox(tampered, keys.addressSecret(id, 0), bv.context), OpenFailed);
  // Random seals differ and open.
  const fresh = sealBox(b64decode(bv.recipientPublicKey), bv.context, bv.plaintext);
  assert.notEqual(fresh.epk, sealed.epk);
  assert.equal(decoder.decode(openBox(fresh, keys.addressSecret(id, 0), bv.context)), bv.plaintext);
});

test('vectors: box v1 (AES-256-GCM) opens', async () => {
  const keys = await keysPromise;
  const bv = v.boxV1;
  assert.equal(bv.recipientPublicKey, b64encode(keys.addressPublicKey(v.inbox.id, 0)));
  assert.equal(bv.box.v, 1);
  assert.equal(decoder.decode(openBox(bv.box, keys.addressSecret(v.inbox.id, 0), bv.context)), bv.plaintext);
  assert.throws(() => openBox(bv.box, keys.addressSecret(v.inbox.id, 0), 'service/v1/message:x:y'), OpenFailed);
  // Version 1 is read only: it has no binary form.
  assert.throws(() => boxToBinary(bv.box));
});

test('vectors: binary box opens and reseals equal', async () => {
  const keys = await keysPromise;
  const bb = v.binaryBox;
  const id = v.inbox.id;
  assert.equal(bb.context, attachmentContext('msg_vector01', 0));
  const bytes = b64decode(bb.bytes);
  assert.equal(decoder.decode(openBinary(bytes, keys.addressSecret(id, 0), bb.context)), bb.plaintext);
  const parsed = boxFromBinary(bytes);
  assert.equal(parsed.v, 2);
  assert.deepEqual(boxToBinary(parsed), bytes);
  // Tag before ciphertext: bytes 45..61 are the tag.
  assert.equal(b64encode(bytes.slice(45, 61)), parsed.t);
  const resealed = sealBinary(keys.addressPublicKey(id, 0), bb.context, utf8(bb.plaintext), {
    ephemeralSecret: hexDecode(v.boxV2.ephemeralSecretHex),
    nonce: bytes.slice(33, 45),
  });
  assert.deepEqual(resealed, bytes);
  assert.throws(() => openBinary(bytes, keys.addressSecret(id, 0), attachmentContext('msg_vector01', 1)), OpenFailed);
  const v1 = Uint8Array.from(bytes);
  v1[0] = 1;
  assert.throws(() => openBinary(v1, keys.addressSecret(id, 0), bb.context), /unsupported box version 1/);
  assert.throws(() => openBinary(bytes.slice(0, 60), keys.addressSecret(id, 0), bb.context), /shorter/);
});

test('vectors: team fingerprint', () => {
  assert.deepEqual(teamFingerprint(b64decode(v.teamFingerprint.publicKey)), v.teamFingerprint.words);
});

test('vectors: webhook header signs and verifies', () => {
  const w = v.webhookSignature;
  assert.equal(signWebhook(w.secret, w.timestamp, w.body), w.header);
  verifyWebhookSignature(w.secret, w.header, utf8(w.body), w.timestamp);
  const event = verifyWebhook(w.secret, [['service-signature', w.header], ['Service-Event-Id', 'evt_vector']], w.body, w.timestamp);
  assert.deepEqual(event, {
    id: 'evt_vector',
    type: 'webhook.test',
    createdAt: '2026-11-22T00:00:00.000Z',
    payload: { webhookId: 'whk_vector' },
  });
});
