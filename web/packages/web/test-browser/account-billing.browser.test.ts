// The plan and billing area against a running stack: usage bars of the Free
// plan, the plans side by side, an upgrade paid in the stack's sandbox
// checkout (the API's own page, a form POST with outcome=paid), and the page
// following the payment until the plan and its limits change; then the
// payment history as the service lists it, and `renewing`.
//
// Needs SEALPOST_API_URL, SEALPOST_SMTP_ADDR and the CLI (the account is made
// with `sealpost init`); skipped without them, except under CI=true.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { chromium, type BrowserContext, type Page } from 'playwright-core';

import { accessibilityProblems, API, ARGS, checkChromium, CHROMIUM, CI, CLI, cliAccount, RESULTS, signInWithPhrase, SMTP } from './helpers.js';

const configured = Boolean(API && SMTP && existsSync(CLI));
const SKIP_REASON = `billing area browser tests skipped: set SEALPOST_API_URL and SEALPOST_SMTP_ADDR (a stack serving /app/ with the sandbox provider) and build the CLI (${CLI}, or set SEALPOST_CLI)`;
if (!configured && !CI) console.log(SKIP_REASON);

const shoot = (page: Page, name: string) => page.screenshot({ path: join(RESULTS, `${name}.png`), fullPage: true });

test('plan and billing area: usage bars, plans, a sandbox checkout paid, the limits change', { skip: configured || CI ? false : SKIP_REASON, timeout: 180_000 }, async (t) => {
  assert.ok(configured, `CI=true: ${SKIP_REASON.replace('billing area browser tests skipped: ', '')}`);
  checkChromium();
  const api = API as string;
  mkdirSync(RESULTS, { recursive: true });
  const account = mkdtempSync(join(tmpdir(), 'sealpost-cli-account-'));
  const profile = mkdtempSync(join(tmpdir(), 'sealpost-chromium-'));
  let context: BrowserContext | undefined;
  try {
    const phrase = await cliAccount(account);
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1280, height: 900 } });
    const page = context.pages()[0] ?? (await context.newPage());
    const problems: string[] = [];
    await page.goto(`${api}/app/`);
    await signInWithPhrase(page, phrase);
    await page.getByTestId('nav-billing').click();

    await t.test('the Free plan: its usage as bars against its limits, the plans side by side', async () => {
      await page.getByTestId('current-plan').filter({ hasText: 'Free' }).waitFor({ timeout: 15_000 });
      const addresses = page.getByTestId('usage-addresses');
      assert.match((await addresses.textContent()) ?? '', /0 of 3/);
      assert.equal(await addresses.locator('progress').getAttribute('max'), '3');
      assert.match((await page.getByTestId('usage-devices-and-agents').textContent()) ?? '', /0 of 1/);
      assert.match((await page.getByTestId('usage-webhooks').textContent()) ?? '', /not in this plan/);
      const header = await page.locator('table.plans thead').textContent();
      for (const name of ['Free', 'Operator', 'Scale', 'Fleet', 'Enterprise']) assert.match(header ?? '', new RegExp(name));
      problems.push(...(await accessibilityProblems(page, 'plan and billing')));
      await shoot(page, 'acct-03-billing');
    });

    await t.test('an upgrade paid in the sandbox checkout: the payment settles and the limits change', async () => {
      // The stack takes several providers: the sandbox is chosen.
      if ((await page.getByLabel('Pay with').count()) > 0) await page.getByLabel('Pay with').selectOption('sandbox');
      const [checkout] = await Promise.all([context!.waitForEvent('page'), page.getByRole('button', { name: 'Upgrade to Operator' }).click()]);
      await checkout.waitForLoadState();
      assert.ok(checkout.url().startsWith(api), `the sandbox checkout is the API's own page: ${checkout.url()}`);
      await checkout.getByRole('button', { name: 'Pay' }).click();
      await checkout.waitForLoadState();
      await checkout.close();
      await page.locator('td.pay-paid').waitFor({ timeout: 30_000 });
      await page.getByTestId('current-plan').filter({ hasText: 'Operator' }).waitFor({ timeout: 15_000 });
      assert.match((await page.getByTestId('usage-addresses').textContent()) ?? '', /0 of 100/);
      assert.match((await page.getByTestId('usage-webhooks').textContent()) ?? '', /0 of 10/);
      assert.match((await page.getByRole('status').first().textContent()) ?? '', /paid: the plan changed/);
      problems.push(...(await accessibilityProblems(page, 'plan and billing after checkout')));
      await shoot(page, 'acct-04-billing-paid');
    });

    await t.test('the payment history, read from the service, and whether the plan renews by itself', async () => {
      // Away and back: the area reads the history again (GET /billing/payments).
      await page.getByTestId('nav-mail').click();
      await page.getByTestId('nav-billing').click();
      await page.getByTestId('current-plan').filter({ hasText: 'Operator' }).waitFor({ timeout: 15_000 });
      const rows = page.locator('table.payments tbody tr');
      await rows.first().waitFor({ timeout: 15_000 });
      assert.equal(await rows.count(), 1);
      const row = (await rows.first().textContent()) ?? '';
      assert.match(row, /pay_/);
      assert.match(row, /Operator/);
      assert.match(row, /sandbox \(test\)/);
      assert.match((await rows.first().getByTestId('payment-status').textContent()) ?? '', /paid/);
      // A sandbox payment buys one period: it does not renew by itself (`renewing: false`).
      assert.match((await page.getByTestId('renewing').textContent()) ?? '', /does not renew by itself/);
      problems.push(...(await accessibilityProblems(page, 'payment history')));
      await shoot(page, 'acct-13-billing-history');
    });

    await t.test('no serious or critical accessibility violation on the billing screens', () => {
      assert.deepEqual(problems, []);
    });
  } finally {
    await context?.close();
    rmSync(profile, { recursive: true, force: true });
    rmSync(account, { recursive: true, force: true });
  }
});
