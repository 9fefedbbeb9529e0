// The web client in a real browser (Debian's chromium through
// playwright-core) against a running stack: the page the API serves at
// /app/, mail delivered over SMTP, hostile HTML, lock, accessibility.
//
// Runs only when SEALPOST_API_URL (the API's base, e.g.
// http://127.0.0.1:8080; the page is $SEALPOST_API_URL/app/) and
// SEALPOST_SMTP_ADDR (host:port) are set; otherwise it is skipped, except
// under CI=true, where a missing stack is a failure. Screenshots of the main
// screens go to test-results/ (`npm run screenshots` copies them to
// docs/web/).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { AxeBuilder } from '@axe-core/playwright';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

import { sendMail } from '../../sdk/test/smtp.js';

const API = process.env['SEALPOST_API_URL']?.replace(/\/+$/, '');
const SMTP = process.env['SEALPOST_SMTP_ADDR'];
const CI = process.env['CI'] === 'true';
const CHROMIUM = process.env['SEALPOST_CHROMIUM'] ?? '/usr/bin/chromium';
const configured = Boolean(API && SMTP);
const SKIP_REASON =
  'browser tests skipped: set SEALPOST_API_URL (e.g. http://127.0.0.1:8080, serving the web client at /app/) and SEALPOST_SMTP_ADDR (e.g. 127.0.0.1:2525) to run them against a stack';

/** packages/web/test-results/ (the compiled test runs from build/browser/web/test-browser/). */
const RESULTS = fileURLToPath(new URL('../../../../test-results/', import.meta.url));

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

if (!configured && !CI) console.log(SKIP_REASON);

/** A listener on another origin that counts every request: nothing the page shows may reach it. */
async function remoteOrigin(): Promise<{ server: Server; url: string; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    res.writeHead(200, { 'content-type': 'image/gif' });
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}`, hits };
}

function rfc5322Date(): string {
  return new Date().toUTCString().replace('GMT', '+0000');
}

function messageId(): string {
  return `<${randomBytes(9).toString('hex')}@example.com>`;
}

/** Serious and critical accessibility findings on the page as it is now. */
async function accessibilityProblems(page: Page, screen: string): Promise<string[]> {
  const results = await new AxeBuilder({ page }).exclude('iframe.mail-html').analyze();
  assert.ok(results.passes.length > 10, `${screen}: axe checked too little (${results.passes.length} rules passed)`);
  return results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${screen}: ${v.id} (${v.impact}) ${v.help}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

async function shoot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(RESULTS, `${name}.png`), fullPage: false });
}

test('web client in chromium: account, address, live mail, hostile HTML, lock, accessibility', { skip: configured || CI ? false : SKIP_REASON, timeout: 240_000 }, async (t) => {
  assert.ok(configured, `CI=true: ${SKIP_REASON.replace('browser tests skipped: ', '')}`);
  assert.ok(existsSync(CHROMIUM), `no chromium at ${CHROMIUM} (apt-get install chromium, or set SEALPOST_CHROMIUM)`);
  const api = API as string;
  const origin = new URL(api).origin;
  mkdirSync(RESULTS, { recursive: true });

  const index = (await (await fetch(`${api}/`)).json()) as { webBuild?: string | null; app?: string };
  assert.equal(index.app, '/app/');
  assert.equal(typeof index.webBuild, 'string', 'the API was compiled without the web client (npm run build, then rebuild sealpost-api)');

  const remote = await remoteOrigin();
  const profile = mkdtempSync(join(tmpdir(), 'sealpost-chromium-'));
  let context: BrowserContext | undefined;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ARGS,
      viewport: { width: 1280, height: 800 },
    });
    const requests: string[] = [];
    const authorizations = new Set<string>();
    context.on('request', (request) => {
      requests.push(request.url());
      const bearer = request.headers()['authorization'];
      if (bearer !== undefined) authorizations.add(bearer);
    });
    const page = context.pages()[0] ?? (await context.newPage());
    const console: string[] = [];
    page.on('console', (message) => console.push(message.text()));
    const problems: string[] = [];

    await page.goto(`${api}/app/`);
    await page.getByRole('heading', { name: 'End-to-end encrypted disposable email' }).waitFor();
    assert.equal(await page.getByTestId('web-build').textContent(), index.webBuild, 'the page shows the build GET / names');
    problems.push(...(await accessibilityProblems(page, 'welcome')));
    await shoot(page, '01-welcome');

    let address = '';
    await t.test('a new account: the phrase is shown, then confirmed', async () => {
      await page.getByRole('button', { name: 'Create an account' }).click();
      const words = await page.locator('ol.phrase li').allTextContents();
      assert.equal(words.length, 12);
      problems.push(...(await accessibilityProblems(page, 'phrase')));
      await shoot(page, '02-phrase');
      await page.getByRole('button', { name: 'I have written them down' }).click();
      const labels = await page.locator('form label').allTextContents();
      assert.equal(labels.length, 3);
      for (const label of labels) {
        const position = Number(/Word (\d+)/.exec(label)?.[1]);
        await page.getByLabel(`Word ${position}`, { exact: true }).fill(words[position - 1] as string);
      }
      problems.push(...(await accessibilityProblems(page, 'confirm')));
      await shoot(page, '03-confirm');
      await page.getByRole('button', { name: 'Create account' }).click();
      await page.getByRole('heading', { name: 'Addresses' }).waitFor();
      assert.match((await page.locator('.top code').textContent()) ?? '', /^acct_/);
      assert.ok(!page.url().includes(words.join(' ')) && !page.url().includes(words[0] as string));
    });

    await t.test('an address is created', async () => {
      await page.getByLabel('Prefix (optional)').fill('browser');
      await page.getByRole('button', { name: 'Create address' }).click();
      const email = page.locator('.addresses .email').first();
      await email.waitFor();
      address = (await email.textContent()) ?? '';
      assert.match(address, /^browser.*@/);
      await page.locator('.live.on').waitFor({ timeout: 15_000 });
    });

    const subject = `Browser test ${randomBytes(3).toString('hex')}`;
    const code = String(100000 + (randomBytes(3).readUIntBE(0, 3) % 900000));
    await t.test('mail sent over SMTP appears without a reload and opens', async () => {
      const before = page.url();
      await sendMail(SMTP as string, {
        from: 'sender@example.com',
        to: address,
        data: [
          'From: Example <sender@example.com>',
          `To: ${address}`,
          `Subject: ${subject}`,
          `Date: ${rfc5322Date()}`,
          `Message-ID: ${messageId()}`,
          'MIME-Version: 1.0',
          'Content-Type: text/plain; charset=utf-8',
          '',
          'Hello from the browser test.',
          `Your code is ${code}.`,
        ].join('\r\n'),
      });
      const item = page.locator('.list li', { hasText: subject });
      await item.waitFor({ timeout: 60_000 });
      assert.equal(page.url(), before, 'no navigation');
      await item.getByRole('button').click();
      await page.getByRole('heading', { name: subject }).waitFor();
      assert.match((await page.locator('pre.body').textContent()) ?? '', /Hello from the browser test\./);
      assert.equal(await page.locator('.found .code code').first().textContent(), code);
      problems.push(...(await accessibilityProblems(page, 'mailbox')));
      await shoot(page, '04-mailbox');
    });

    await t.test('hostile HTML mail runs nothing and loads nothing from elsewhere', async () => {
      const hostile = `Hostile ${randomBytes(3).toString('hex')}`;
      const boundary = `b${randomBytes(6).toString('hex')}`;
      const html = [
        '<html><body>',
        '<p id="visible">A message with a script, a handler and remote images.</p>',
        `<script>console.log('pwned-script'); fetch('${remote.url}/script'); parent.document.title = 'pwned';</script>`,
        `<img src="${remote.url}/onerror-missing.png" onerror="console.log('pwned-onerror'); new Image().src='${remote.url}/onerror';" alt="x">`,
        `<img src="${remote.url}/tracker.gif" width="1" height="1" alt="">`,
        `<div style="background-image: url('${remote.url}/background.png')">styled</div>`,
        `<style>@import url('${remote.url}/import.css'); p { background: url(${remote.url}/style-element.png) }</style>`,
        `<svg width="10" height="10"><image href="${remote.url}/svg-image.png" width="10" height="10"/></svg>`,
        `<a href="javascript:console.log('pwned-link')">a link</a>`,
        '</body></html>',
      ].join('\r\n');
      await sendMail(SMTP as string, {
        from: 'sender@example.com',
        to: address,
        data: [
          'From: Mallory <sender@example.com>',
          `To: ${address}`,
          `Subject: ${hostile}`,
          `Date: ${rfc5322Date()}`,
          `Message-ID: ${messageId()}`,
          'MIME-Version: 1.0',
          `Content-Type: multipart/alternative; boundary="${boundary}"`,
          '',
          `--${boundary}`,
          'Content-Type: text/plain; charset=utf-8',
          '',
          'The text part.',
          `--${boundary}`,
          'Content-Type: text/html; charset=utf-8',
          '',
          html,
          `--${boundary}--`,
        ].join('\r\n'),
      });
      const item = page.locator('.list li', { hasText: hostile });
      await item.waitFor({ timeout: 60_000 });
      await item.getByRole('button').click();
      await page.getByRole('heading', { name: hostile }).waitFor();
      await page.getByRole('button', { name: 'Show HTML' }).click();
      const frame = page.frameLocator('iframe.mail-html');
      await frame.locator('#visible').waitFor();
      await frame.getByText('a link').click({ timeout: 5_000 }).catch(() => undefined);
      // Give anything that might run or load the time to do it.
      await page.waitForTimeout(2_000);
      assert.equal(await frame.locator('script').count(), 0, 'no script element in the frame');
      assert.equal(await frame.locator('[onerror]').count(), 0, 'no handler attribute in the frame');
      assert.equal(await page.locator('iframe.mail-html').getAttribute('sandbox'), 'allow-popups allow-popups-to-escape-sandbox');
      assert.equal(await page.title(), 'Sealpost');
      assert.deepEqual(console.filter((line) => line.includes('pwned')), [], 'nothing ran');
      assert.deepEqual(remote.hits, [], 'the other origin was never asked');
      const outside = requests.filter((url) => {
        if (/^(data|blob|about):/.test(url)) return false;
        return new URL(url).origin !== origin;
      });
      assert.deepEqual(outside, [], 'every request stays on the page origin');
      assert.ok(requests.some((url) => url.startsWith(`${origin}/app/assets/`)), 'the request log saw the page load');
      await shoot(page, '05-html-mail');
    });

    await t.test('after lock no secret remains in the browser, and the session is gone', async () => {
      assert.ok(authorizations.size > 0, 'the page used a bearer');
      await page.getByRole('button', { name: 'Lock' }).click();
      await page.getByRole('button', { name: 'Create an account' }).waitFor();
      const stored = await page.evaluate(async () => ({
        local: Object.keys(localStorage),
        session: Object.keys(sessionStorage),
        databases: (await indexedDB.databases()).map((d) => d.name ?? ''),
        caches: await caches.keys(),
        cookie: document.cookie,
      }));
      assert.deepEqual(stored, { local: [], session: [], databases: [], caches: [], cookie: '' });
      assert.deepEqual(await context?.cookies(), []);
      for (const bearer of authorizations) {
        const me = await fetch(`${api}/accounts/me`, { headers: { authorization: bearer } });
        assert.equal(me.status, 401, 'lock signs the session out');
      }
    });

    await t.test('no serious or critical accessibility violation on the main screens', () => {
      assert.deepEqual(problems, []);
    });
  } finally {
    await context?.close();
    remote.server.close();
    rmSync(profile, { recursive: true, force: true });
  }
});
