// The device side of pairing: the key fingerprint, a non-extractable
// WebCrypto X25519 key opening its key bundle, and mail opened with the
// bundle; attachments (binary boxes) opened with the address key.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  AccountKeys,
  attachmentContext,
  bytesRecipient,
  DeviceKey,
  keyFingerprint,
  KeyBundle,
  messageContext,
  NoKeyError,
  OpenFailed,
  openAttachment,
  openBoxWith,
  openMessage,
  sealBinary,
  sealBox,
  sealKeyBundle,
  spacedCode,
} from '../src/index.js';

const keys = AccountKeys.fromSeed(new Uint8Array(64).fill(7));
const address = 'ibx_abcdefgh01234567';
const device = 'wkr_abcdefgh01234567';

test('fingerprint: the first 8 bytes of SHA-256, four groups (as the CLI shows it)', () => {
  // SHA-256 of 32 zero bytes is 66687aad f862bd77 ...
  assert.equal(keyFingerprint(new Uint8Array(32)), '6668-7aad-f862-bd77');
  assert.equal(spacedCode('12345678'), '1234 5678');
  assert.equal(spacedCode('1234'), '1234');
});

test('device key: non-extractable WebCrypto X25519 opens its bundle, and the bundle opens mail', async () => {
  const key = await DeviceKey.generate();
  assert.equal(key.privateKey.extractable, false);
  assert.equal(key.publicKey.length, 32);
  await assert.rejects(crypto.subtle.exportKey('pkcs8', key.privateKey));
  const sealed = sealKeyBundle(keys, [address], key.publicKey, device);
  const bundle = await KeyBundle.open(key, device, sealed);
  assert.deepEqual(bundle.addressIds, [address]);
  assert.deepEqual(bundle.entries[0]?.publicKey, keys.addressPublicKey(address, 0));
  assert.equal(JSON.stringify(bundle).includes('inboxKey'), false);

  const messageId = 'msg_abcdefgh01234567';
  const content = sealBox(keys.addressPublicKey(address, 0), messageContext(address, messageId), JSON.stringify({ subject: 'Hi', text: 'code 123456' }));
  const opened = openMessage(bundle, { id: messageId, addressId: address, keyEpoch: 0, content });
  assert.equal(opened.subject, 'Hi');
  assert.throws(() => openMessage(bundle, { id: messageId, addressId: address, keyEpoch: 1, content }), NoKeyError);

  const file = new Uint8Array(70_000).map((_, i) => (i * 31) & 255);
  const box = sealBinary(keys.addressPublicKey(address, 0), attachmentContext(messageId, 0), file);
  assert.deepEqual(openAttachment(bundle, { id: messageId, addressId: address, keyEpoch: 0, content }, 0, box), file);

  // Stored and read back (what IndexedDB's structured clone gives), it still opens.
  const again = await DeviceKey.fromPair(key.pair());
  assert.deepEqual(again.publicKey, key.publicKey);
  assert.equal((await KeyBundle.open(again, device, sealed)).addressIds[0], address);

  // Another device's context, another key: nothing opens.
  await assert.rejects(KeyBundle.open(key, 'wkr_other00000000000', sealed), OpenFailed);
  await assert.rejects(KeyBundle.open(await DeviceKey.generate(), device, sealed), OpenFailed);
  bundle.wipe();
  assert.equal(bundle.secretFor(address, 0), undefined);
});

test('device key: a low-order ephemeral key fails as OpenFailed; bytes recipients agree with WebCrypto', async () => {
  const key = await DeviceKey.generate();
  const sealed = sealKeyBundle(keys, [address], key.publicKey, device) as unknown as Record<string, unknown>;
  await assert.rejects(openBoxWith({ ...sealed, epk: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }, key, `service/v1/worker-keys:${device}`), OpenFailed);
  const plain = bytesRecipient();
  const box = sealKeyBundle(keys, [], plain.publicKey, device);
  assert.deepEqual((await KeyBundle.open(plain, device, box)).addressIds, []);
});

test('key bundle JSON: the Rust shape, malformed bundles refused', () => {
  assert.throws(() => KeyBundle.parse('{}'), /no inboxes/);
  assert.throws(() => KeyBundle.parse('{"inboxes":[{"inboxId":"ibx_x","epoch":0}]}'), /entry 0/);
  assert.deepEqual(KeyBundle.parse('{"inboxes":[],"extra":1}').addressIds, []);
});
