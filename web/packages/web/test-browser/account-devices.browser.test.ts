// The devices area against a running stack: a device started with the Rust
// CLI (`sealpost agent pair --kind device`) is approved in the page signed in
// with the phrase; the page shows the name and the fingerprint the device
// prints; an address assigned in the page reaches the device as a key bundle
// the Rust device opens, and the device reads mail sent to it; a rename in
// the page is read by the Rust CLI from the sealed profile; disabling stops
// the device's credential.
//
// Needs SEALPOST_API_URL, SEALPOST_SMTP_ADDR and the CLI (SEALPOST_CLI, else
// target/debug/sealpost); skipped without them, except under CI=true.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { chromium, type BrowserContext, type Page } from 'playwright-core';

import { sendMail } from '../../sdk/test/smtp.js';
import {
  accessibilityProblems,
  API,
  ARGS,
  checkChromium,
  CHROMIUM,
  CI,
  CLI,
  cli,
  cliAccount,
  cliInBackground,
  eventually,
  rfc5322Date,
  messageId,
  RESULTS,
  signInWithPhrase,
  SMTP,
} from './helpers.js';

const configured = Boolean(API && SMTP && existsSync(CLI));
const SKIP_REASON = `devices area browser tests skipped: set SEALPOST_API_URL and SEALPOST_SMTP_ADDR (a stack serving /app/) and build the CLI (${CLI}, or set SEALPOST_CLI)`;
if (!configured && !CI) console.log(SKIP_REASON);

const shoot = (page: Page, name: string) => page.screenshot({ path: join(RESULTS, `${name}.png`), fullPage: true });

test('devices area: approve a CLI device by its code and fingerprint, assign an address, the device reads its mail; rename, disable', { skip: configured || CI ? false : SKIP_REASON, timeout: 300_000 }, async (t) => {
  assert.ok(configured, `CI=true: ${SKIP_REASON.replace('devices area browser tests skipped: ', '')}`);
  checkChromium();
  const api = API as string;
  mkdirSync(RESULTS, { recursive: true });
  const account = mkdtempSync(join(tmpdir(), 'sealpost-cli-account-'));
  const deviceDir = mkdtempSync(join(tmpdir(), 'sealpost-cli-device-'));
  const profile = mkdtempSync(join(tmpdir(), 'sealpost-chromium-'));
  let context: BrowserContext | undefined;
  let pairing: ReturnType<typeof cliInBackground> | undefined;
  try {
    const phrase = await cliAccount(account);
    const withPhrase = { SEALPOST_PHRASE: phrase };
    const created = await cli(account, ['address', 'create', '--prefix', 'devarea'], withPhrase);
    const [, addressId, email] = /Created (ibx_[a-z0-9]+): (\S+@\S+)/.exec(created) ?? [];
    assert.ok(addressId && email, created);

    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1280, height: 900 } });
    const page = context.pages()[0] ?? (await context.newPage());
    page.on('dialog', (d) => void d.accept());
    const problems: string[] = [];
    await page.goto(`${api}/app/`);
    await signInWithPhrase(page, phrase);
    await page.getByTestId('nav-devices').click();
    await page.getByRole('heading', { name: 'Devices', level: 1 }).waitFor();
    assert.equal(new URL(page.url()).hash, '#devices');

    let deviceId = '';
    const deviceName = `Test laptop ${randomBytes(2).toString('hex')}`;
    await t.test('the page shows the name and the fingerprint the device prints, and approves it', async () => {
      pairing = cliInBackground(deviceDir, ['agent', 'pair', '--kind', 'device', '--name', deviceName]);
      const printed = await eventually('the pairing code', () => {
        const out = pairing?.output() ?? '';
        const code = /Pairing code:\s+(\d{4} \d{4})/.exec(out)?.[1];
        const fingerprint = /Fingerprint\s+([0-9a-f]{4}(?:-[0-9a-f]{4}){3})/.exec(out)?.[1];
        return code && fingerprint ? { code, fingerprint } : undefined;
      });
      await page.getByLabel('Pairing code').fill(printed.code);
      await page.getByRole('button', { name: 'Look up' }).click();
      assert.equal(await page.getByTestId('approve-name').textContent({ timeout: 15_000 }), deviceName);
      assert.equal(await page.getByTestId('approve-fingerprint').textContent(), printed.fingerprint, 'the page shows the fingerprint the device prints');
      problems.push(...(await accessibilityProblems(page, 'approve a device')));
      await shoot(page, 'acct-01-device-approve');
      await page.getByRole('button', { name: 'The fingerprints match: approve' }).click();
      const done = await pairing.done;
      deviceId = /Paired as (wkr_[a-z0-9]+)/.exec(done)?.[1] ?? '';
      assert.ok(deviceId, done);
      await page.getByTestId(`device-${deviceId}`).waitFor({ timeout: 15_000 });
      assert.match((await page.getByTestId(`device-${deviceId}`).textContent()) ?? '', new RegExp(deviceName));
      // The device finds an (empty) key bundle at once.
      assert.match(await cli(deviceDir, ['agent', 'keys']), /Keys of 0 addresses/);
    });

    const subject = `Devices area ${randomBytes(3).toString('hex')}`;
    await t.test('an address assigned in the page: the device opens its key bundle and reads its mail', async () => {
      const row = page.getByTestId(`device-${deviceId}`);
      await row.getByRole('combobox').selectOption(addressId as string);
      await row.getByRole('button', { name: 'Assign' }).click();
      await page.getByText(`Assigned ${email}`).waitFor({ timeout: 15_000 });
      await row.locator('.held .email', { hasText: email as string }).waitFor();
      const keys = await cli(deviceDir, ['agent', 'keys']);
      assert.match(keys, new RegExp(`${addressId}\\s+epoch 0\\s+${(email as string).replace(/\./g, '\\.')}\\s*$`, 'm'), keys);
      assert.doesNotMatch(keys, /MISMATCH/);
      await sendMail(SMTP as string, {
        from: 'sender@example.com',
        to: email as string,
        data: [
          'From: Example <sender@example.com>',
          `To: ${email}`,
          `Subject: ${subject}`,
          `Date: ${rfc5322Date()}`,
          `Message-ID: ${messageId()}`,
          'Content-Type: text/plain; charset=utf-8',
          '',
          'For the device: 731904.',
        ].join('\r\n'),
      });
      const listed = await eventually('the mail on the device', async () => {
        const out = await cli(deviceDir, ['mail', 'list', '--device']);
        return out.includes(subject) ? out : undefined;
      }, 60_000);
      assert.match(listed, new RegExp(subject));
      problems.push(...(await accessibilityProblems(page, 'devices')));
      await shoot(page, 'acct-02-devices');
    });

    await t.test('a rename in the page is what the Rust CLI reads from the sealed profile', async () => {
      const row = page.getByTestId(`device-${deviceId}`);
      await row.getByRole('button', { name: `Rename ${deviceName}` }).click();
      await row.getByLabel('New name').fill('Renamed in the page');
      await row.getByRole('button', { name: 'Save' }).click();
      await page.getByText('Renamed to “Renamed in the page”.').waitFor();
      const list = await cli(account, ['device', 'list'], withPhrase);
      assert.match(list, new RegExp(`${deviceId}.*Renamed in the page`), list);
    });

    await t.test('disabling stops the device credential', async () => {
      const row = page.getByTestId(`device-${deviceId}`);
      await row.getByRole('button', { name: 'Disable Renamed in the page' }).click();
      await row.locator('.status.disabled').waitFor();
      await assert.rejects(cli(deviceDir, ['agent', 'status']), /401|unauthenticated|revoked|disabled/i);
    });

    await t.test('no serious or critical accessibility violation on the devices screens', () => {
      assert.deepEqual(problems, []);
    });
  } finally {
    pairing?.stop();
    await context?.close();
    rmSync(profile, { recursive: true, force: true });
    rmSync(account, { recursive: true, force: true });
    rmSync(deviceDir, { recursive: true, force: true });
  }
});
