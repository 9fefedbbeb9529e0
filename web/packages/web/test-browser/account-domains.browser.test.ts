// The own domains area against a running stack: on the Scale plan (paid in
// the sandbox), a domain added in the page is walked to live by following
// the page's guide: the TXT record it shows is published in the stack's
// public DNS (its control port), "Check now" moves to the nameservers the
// page names, those are delegated, then the MX; live, an address with an
// exact name on it is made in the Addresses area and receives mail.
//
// Needs SEALPOST_API_URL, SEALPOST_SMTP_ADDR, SEALPOST_STACK_DNS_CONTROL and
// SEALPOST_STACK_MX_HOST (sealpost-stack --env writes them) and the CLI;
// skipped without them, except under CI=true.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { chromium, type BrowserContext, type Page } from 'playwright-core';

import { sendMail } from '../../sdk/test/smtp.js';
import { accessibilityProblems, API, ARGS, checkChromium, CHROMIUM, CI, CLI, cli, cliAccount, eventually, messageId, RESULTS, rfc5322Date, signInWithPhrase, SMTP } from './helpers.js';

const DNS_CONTROL = process.env['SEALPOST_STACK_DNS_CONTROL'];
const MX_HOST = process.env['SEALPOST_STACK_MX_HOST'];
const configured = Boolean(API && SMTP && DNS_CONTROL && MX_HOST && existsSync(CLI));
const SKIP_REASON = `own domains area browser tests skipped: set SEALPOST_API_URL, SEALPOST_SMTP_ADDR, SEALPOST_STACK_DNS_CONTROL and SEALPOST_STACK_MX_HOST (sealpost-stack --env) and build the CLI (${CLI}, or set SEALPOST_CLI)`;
if (!configured && !CI) console.log(SKIP_REASON);

const shoot = (page: Page, name: string) => page.screenshot({ path: join(RESULTS, `${name}.png`), fullPage: true });

/** Runs commands on the stack's public DNS control port; each must answer `ok`. */
function publicDns(...commands: string[]): Promise<void> {
  const [host, port] = (DNS_CONTROL as string).split(':');
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), host as string, () => socket.write(commands.map((c) => `${c}\n`).join('')));
    let answers = '';
    socket.on('data', (d: Buffer) => {
      answers += d.toString();
      const lines = answers.split('\n').filter((l) => l !== '');
      if (lines.length >= commands.length) {
        socket.end();
        const bad = lines.filter((l) => l !== 'ok');
        if (bad.length > 0) reject(new Error(`public DNS: ${bad.join('; ')}`));
        else resolve();
      }
    });
    socket.on('error', reject);
  });
}

test('own domains area: a domain taken live by following the page, an address on it receives mail', { skip: configured || CI ? false : SKIP_REASON, timeout: 240_000 }, async (t) => {
  assert.ok(configured, `CI=true: ${SKIP_REASON.replace('own domains area browser tests skipped: ', '')}`);
  checkChromium();
  const api = API as string;
  mkdirSync(RESULTS, { recursive: true });
  const account = mkdtempSync(join(tmpdir(), 'sealpost-cli-account-'));
  const profile = mkdtempSync(join(tmpdir(), 'sealpost-chromium-'));
  const domain = `sp${randomBytes(4).toString('hex')}.com`;
  let context: BrowserContext | undefined;
  try {
    const phrase = await cliAccount(account);
    const url = (await cli(account, ['billing', 'checkout', 'scale', '--provider', 'sandbox'])).trim();
    assert.ok((await fetch(url, { method: 'POST', body: new URLSearchParams({ outcome: 'paid' }) })).ok);

    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1280, height: 900 } });
    const page = context.pages()[0] ?? (await context.newPage());
    const problems: string[] = [];
    await page.goto(`${api}/app/`);
    await signInWithPhrase(page, phrase);
    await page.getByTestId('nav-domains').click();
    await page.getByRole('heading', { name: 'Own domains', level: 1 }).waitFor();
    const card = page.getByTestId(`domain-${domain}`);
    const guide = card.getByTestId('domain-guide');
    const checkNow = async () => {
      await card.getByRole('button', { name: 'Check now' }).click();
      await page.getByText(`Checked ${domain}`).waitFor({ timeout: 15_000 });
    };

    await t.test('added: the guide shows the TXT record to publish', async () => {
      await page.getByLabel('Domain').fill(domain);
      await page.getByRole('button', { name: 'Add domain' }).click();
      await card.waitFor({ timeout: 15_000 });
      assert.equal(await card.getByTestId('txt-name').textContent(), `_service-verify.${domain}`);
      assert.match((await card.getByTestId('txt-value').textContent()) ?? '', /^service-verify=\S+$/);
      assert.match((await guide.textContent()) ?? '', /Publish this record at your DNS provider/);
      assert.equal(await card.locator('ol.steps li[aria-current="step"]').textContent(), 'Prove ownership');
      problems.push(...(await accessibilityProblems(page, 'own domain: TXT record')));
      await shoot(page, 'acct-08-domain-txt');
      // Checked before the record is there: still the first step.
      await publicDns(`zone ${domain}`);
      await checkNow();
      assert.match((await guide.textContent()) ?? '', /Ownership is not proved yet/);
    });

    await t.test('the TXT record published: the guide names the nameservers to set', async () => {
      const name = (await card.getByTestId('txt-name').textContent()) ?? '';
      const value = (await card.getByTestId('txt-value').textContent()) ?? '';
      await publicDns(`txt ${name} ${value}`);
      await checkNow();
      assert.match((await guide.textContent()) ?? '', /set the nameservers of .* to exactly these two/);
      const nameservers = await card.getByTestId('nameserver').allTextContents();
      assert.equal(nameservers.length, 2);
      problems.push(...(await accessibilityProblems(page, 'own domain: nameservers')));
      await shoot(page, 'acct-09-domain-nameservers');

      await publicDns(`ns ${domain} ${nameservers.join(' ')}`);
      await checkNow();
      assert.match((await guide.textContent()) ?? '', /waiting for its MX record/);
      await publicDns(`mx ${domain} ${MX_HOST}`);
      await checkNow();
      assert.match((await guide.textContent()) ?? '', new RegExp(`${domain.replace('.', '\\.')} is live: it receives mail`));
      assert.equal(await card.getByRole('button', { name: 'Check now' }).count(), 0);
      await shoot(page, 'acct-10-domain-live');
    });

    await t.test('live: an address with an exact name on it, made in the page, receives mail', async () => {
      await page.getByTestId('nav-addresses').click();
      await page.getByLabel('Exactly this name').check();
      await page.getByLabel('Name before the @').fill('hello');
      await page.locator('form.approve select').selectOption(domain);
      await page.getByRole('button', { name: 'Create address' }).click();
      await page.getByText(`Created hello@${domain}.`).waitFor({ timeout: 15_000 });
      const subject = `Own domain ${randomBytes(3).toString('hex')}`;
      await sendMail(SMTP as string, {
        from: 'sender@example.com',
        to: `hello@${domain}`,
        data: [`From: sender@example.com`, `To: hello@${domain}`, `Subject: ${subject}`, `Date: ${rfc5322Date()}`, `Message-ID: ${messageId()}`, '', 'Hello.'].join('\r\n'),
      });
      await eventually('the mail on the own domain', async () => ((await cli(account, ['mail', 'list'], { SEALPOST_PHRASE: phrase })).includes(subject) ? true : undefined), 60_000);
    });

    await t.test('no serious or critical accessibility violation on the own domains screens', () => {
      assert.deepEqual(problems, []);
    });
  } finally {
    await context?.close();
    rmSync(profile, { recursive: true, force: true });
    rmSync(account, { recursive: true, force: true });
  }
});
