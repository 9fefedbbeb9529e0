// The API keys area against a running stack: on the Operator plan (paid in
// the sandbox), a key made in the page shows its token once; the token works
// as a bearer; revoked in the page, it answers 401.
//
// Needs SEALPOST_API_URL, SEALPOST_SMTP_ADDR and the CLI; skipped without
// them, except under CI=true.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { chromium, type BrowserContext, type Page } from 'playwright-core';

import { accessibilityProblems, API, ARGS, checkChromium, CHROMIUM, CI, CLI, cli, cliAccount, RESULTS, signInWithPhrase, SMTP } from './helpers.js';

const configured = Boolean(API && SMTP && existsSync(CLI));
const SKIP_REASON = `API keys area browser tests skipped: set SEALPOST_API_URL and SEALPOST_SMTP_ADDR (a stack serving /app/) and build the CLI (${CLI}, or set SEALPOST_CLI)`;
if (!configured && !CI) console.log(SKIP_REASON);

const shoot = (page: Page, name: string) => page.screenshot({ path: join(RESULTS, `${name}.png`), fullPage: true });

test('API keys area: a key made in the page works once shown, and stops when revoked', { skip: configured || CI ? false : SKIP_REASON, timeout: 180_000 }, async (t) => {
  assert.ok(configured, `CI=true: ${SKIP_REASON.replace('API keys area browser tests skipped: ', '')}`);
  checkChromium();
  const api = API as string;
  mkdirSync(RESULTS, { recursive: true });
  const account = mkdtempSync(join(tmpdir(), 'sealpost-cli-account-'));
  const profile = mkdtempSync(join(tmpdir(), 'sealpost-chromium-'));
  let context: BrowserContext | undefined;
  try {
    const phrase = await cliAccount(account);
    const url = (await cli(account, ['billing', 'checkout', 'operator', '--provider', 'sandbox'])).trim();
    assert.ok((await fetch(url, { method: 'POST', body: new URLSearchParams({ outcome: 'paid' }) })).ok);

    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1280, height: 900 } });
    const page = context.pages()[0] ?? (await context.newPage());
    page.on('dialog', (d) => void d.accept());
    const problems: string[] = [];
    await page.goto(`${api}/app/`);
    await signInWithPhrase(page, phrase);
    await page.getByTestId('nav-api-keys').click();
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();

    let token = '';
    await t.test('the token is shown once and works as a bearer', async () => {
      await page.getByLabel('Label (sealed, only you can read it)').fill('CI runner');
      await page.getByRole('button', { name: 'Create key' }).click();
      token = (await page.getByTestId('api-key-token').textContent({ timeout: 15_000 })) ?? '';
      assert.match(token, /^spk_/);
      const usage = await fetch(`${api}/usage`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(usage.status, 200);
      await page.locator('td', { hasText: 'CI runner' }).waitFor();
      problems.push(...(await accessibilityProblems(page, 'API keys')));
      await shoot(page, 'acct-07-api-keys');
      await page.getByRole('button', { name: 'I have kept it' }).click();
      assert.equal(await page.getByTestId('api-key-token').count(), 0);
    });

    await t.test('revoked in the page, the token answers 401', async () => {
      await page.getByRole('button', { name: 'Revoke CI runner' }).click();
      await page.getByText(/^Revoked key_/).waitFor();
      const usage = await fetch(`${api}/usage`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(usage.status, 401);
    });

    await t.test('no serious or critical accessibility violation on the API keys screen', () => {
      assert.deepEqual(problems, []);
    });
  } finally {
    await context?.close();
    rmSync(profile, { recursive: true, force: true });
    rmSync(account, { recursive: true, force: true });
  }
});
