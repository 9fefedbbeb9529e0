// End to end against a running stack (for example `cargo xtask dev`):
// register from a fresh phrase, sign in, create an address, send it mail
// over SMTP, wait, open, check the codes.
//
// Runs only when SEALPOST_API_URL (e.g. http://127.0.0.1:8080) and
// SEALPOST_SMTP_ADDR (host:port, e.g. 127.0.0.1:2525) are set; otherwise it
// is skipped, except under CI=true, where a missing stack is a failure.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { AccountKeys, b64encode, generatePhrase, randomBytes, SealpostClient } from '../src/index.js';
import { sendMail } from './smtp.js';

const API = process.env['SEALPOST_API_URL'];
const SMTP = process.env['SEALPOST_SMTP_ADDR'];
const CI = process.env['CI'] === 'true';
const configured = Boolean(API && SMTP);
const SKIP_REASON =
  'integration test skipped: set SEALPOST_API_URL (e.g. http://127.0.0.1:8080) and SEALPOST_SMTP_ADDR (e.g. 127.0.0.1:2525) to run it against a stack';

if (!configured && !CI) console.log(SKIP_REASON);

test('integration: register, sign in, create an address, receive mail over SMTP, open it', { skip: configured || CI ? false : SKIP_REASON, timeout: 120_000 }, async () => {
  assert.ok(configured, `CI=true: ${SKIP_REASON.replace('integration test skipped: ', '')}`);
  const baseUrl = API as string;

  // A fresh phrase: register, then sign in again through the challenge handshake.
  const phrase = generatePhrase();
  const keys = await AccountKeys.fromPhrase(phrase);
  const registered = await SealpostClient.register({ baseUrl, keys });
  const me = await registered.me();
  assert.equal(me.account.id, keys.accountId);
  const client = await SealpostClient.signIn({ baseUrl, keys });
  assert.equal((await client.me()).account.id, keys.accountId);

  // The three-call automation path.
  const address = await client.createAddress({ prefix: 'sdk' });
  assert.match(address.id, /^ibx_[a-z0-9]{16}$/);
  assert.equal(address.publicKey, b64encode(keys.addressPublicKey(address.id, 0)));

  const code = String(100000 + (randomBytes(4).reduce((n, b) => n * 256 + b, 0) % 900000));
  const link = `https://app.example.com/verify?token=${b64encode(randomBytes(12))}`;
  await sendMail(SMTP as string, {
    from: 'no-reply@example.com',
    to: address.email,
    data: [
      'From: Example <no-reply@example.com>',
      `To: ${address.email}`,
      'Subject: Confirm your Example account',
      `Date: ${new Date().toUTCString().replace('GMT', '+0000')}`,
      `Message-ID: <${b64encode(randomBytes(9))}@example.com>`,
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'Welcome to Example!',
      '',
      `Your verification code is ${code}.`,
      `Or confirm at ${link}`,
      '',
      '.a line starting with a dot',
    ].join('\r\n'),
  });

  const message = await client.nextMessage(address, { timeoutSeconds: 60 });
  assert.equal(message.addressId, address.id);
  const mail = client.openMessage(message, address.key);
  assert.equal(mail.subject, 'Confirm your Example account');
  assert.deepEqual(mail.codes, [code]);
  assert.deepEqual(mail.links, [link]);
  assert.match(mail.text ?? '', /^\.a line starting with a dot/m);
  // The account's keys open it as well (the key was derived from the phrase).
  assert.deepEqual(client.openMessage(message).codes, [code]);

  // Read state, listing and clean-up.
  await client.markRead(message.id);
  const page = await client.listMessages(address.id);
  assert.equal(page.messages.find((m) => m.id === message.id)?.read, true);
  assert.equal(await client.deleteMessage(message.id), 'trashed');
  await client.deleteAddress(address.id);
  await client.signOut();
  await registered.signOut();
});
