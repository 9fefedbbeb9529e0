// The webhooks area against a running stack: an account on the Operator plan
// (paid in the sandbox) creates a webhook to the stack's HTTPS receiver at
// hooks.test in the page, sees the secret once, sends a test event and sees
// its delivery succeed, redelivers it, and the name sealed in the page is
// the one the page opens again after a reload.
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
const SKIP_REASON = `webhooks area browser tests skipped: set SEALPOST_API_URL and SEALPOST_SMTP_ADDR (a stack serving /app/) and build the CLI (${CLI}, or set SEALPOST_CLI)`;
if (!configured && !CI) console.log(SKIP_REASON);

const shoot = (page: Page, name: string) => page.screenshot({ path: join(RESULTS, `${name}.png`), fullPage: true });

test('webhooks area: create one to hooks.test, the secret once, a test delivery succeeds, redelivered', { skip: configured || CI ? false : SKIP_REASON, timeout: 180_000 }, async (t) => {
  assert.ok(configured, `CI=true: ${SKIP_REASON.replace('webhooks area browser tests skipped: ', '')}`);
  checkChromium();
  const api = API as string;
  mkdirSync(RESULTS, { recursive: true });
  const account = mkdtempSync(join(tmpdir(), 'sealpost-cli-account-'));
  const profile = mkdtempSync(join(tmpdir(), 'sealpost-chromium-'));
  let context: BrowserContext | undefined;
  try {
    const phrase = await cliAccount(account);
    // Webhooks need the Operator plan: paid in the sandbox, by the CLI and a form post.
    const url = (await cli(account, ['billing', 'checkout', 'operator', '--provider', 'sandbox'])).trim();
    const paid = await fetch(url, { method: 'POST', body: new URLSearchParams({ outcome: 'paid' }) });
    assert.ok(paid.ok, `sandbox payment: HTTP ${paid.status}`);

    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1280, height: 900 } });
    const page = context.pages()[0] ?? (await context.newPage());
    page.on('dialog', (d) => void d.accept());
    const problems: string[] = [];
    await page.goto(`${api}/app/`);
    await signInWithPhrase(page, phrase);
    await page.getByTestId('nav-webhooks').click();
    await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();

    let webhookId = '';
    await t.test('created in the page: the secret shown once', async () => {
      await page.getByLabel('Endpoint URL (https)').fill('https://hooks.test/sealpost');
      await page.getByLabel('Name (sealed, only you can read it)').fill('Test receiver');
      await page.getByRole('button', { name: 'Create webhook' }).click();
      const secret = (await page.getByTestId('webhook-secret').textContent({ timeout: 15_000 })) ?? '';
      assert.match(secret, /^whsec_/);
      webhookId = /Created (whk_[A-Za-z0-9]+)/.exec((await page.getByRole('status').textContent()) ?? '')?.[1] ?? '';
      assert.ok(webhookId);
      problems.push(...(await accessibilityProblems(page, 'webhook secret')));
      await page.getByRole('button', { name: 'I have kept it' }).click();
      assert.equal(await page.getByTestId('webhook-secret').count(), 0, 'the secret is gone from the page');
    });

    await t.test('a test event is delivered to hooks.test and shown as succeeded; redelivered', async () => {
      const row = page.getByTestId(`webhook-${webhookId}`);
      assert.match((await row.textContent()) ?? '', /Test receiver/);
      await row.getByRole('button', { name: 'Send a test' }).click();
      const delivered = row.locator('.deliveries tbody tr', { hasText: 'webhook.test' }).first();
      await delivered.locator('td.pay-paid', { hasText: 'succeeded' }).waitFor({ timeout: 60_000 });
      assert.match((await delivered.textContent()) ?? '', /HTTP 200/);
      await delivered.getByRole('button', { name: /^Redeliver webhook\.test/ }).click();
      await row.locator('.deliveries tbody tr td.pay-paid').nth(1).waitFor({ timeout: 60_000 });
      const eventIds = await row.locator('.deliveries tbody tr code').allTextContents();
      assert.equal(eventIds.length, 2);
      assert.equal(eventIds[0], eventIds[1], 'a redelivery carries the same event id');
      problems.push(...(await accessibilityProblems(page, 'webhooks')));
      await shoot(page, 'acct-05-webhooks');
    });

    await t.test('after a reload, the name sealed in the page opens again', async () => {
      await page.reload();
      await signInWithPhrase(page, phrase);
      await page.getByTestId('nav-webhooks').click();
      await page.getByTestId(`webhook-${webhookId}`).getByText('Test receiver').waitFor({ timeout: 15_000 });
    });

    await t.test('no serious or critical accessibility violation on the webhooks screens', () => {
      assert.deepEqual(problems, []);
    });
  } finally {
    await context?.close();
    rmSync(profile, { recursive: true, force: true });
    rmSync(account, { recursive: true, force: true });
  }
});
