// The addresses area against a running stack: an address made in the page
// with a prefix, a retention and a label sealed in the page, which the Rust
// CLI opens; the label and retention changed; the address deleted; and the
// device holding an address named from its sealed profile.
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
const SKIP_REASON = `addresses area browser tests skipped: set SEALPOST_API_URL and SEALPOST_SMTP_ADDR (a stack serving /app/) and build the CLI (${CLI}, or set SEALPOST_CLI)`;
if (!configured && !CI) console.log(SKIP_REASON);

const shoot = (page: Page, name: string) => page.screenshot({ path: join(RESULTS, `${name}.png`), fullPage: true });

test('addresses area: created with a sealed label and a retention the CLI reads, changed, deleted', { skip: configured || CI ? false : SKIP_REASON, timeout: 180_000 }, async (t) => {
  assert.ok(configured, `CI=true: ${SKIP_REASON.replace('addresses area browser tests skipped: ', '')}`);
  checkChromium();
  const api = API as string;
  mkdirSync(RESULTS, { recursive: true });
  const account = mkdtempSync(join(tmpdir(), 'sealpost-cli-account-'));
  const profile = mkdtempSync(join(tmpdir(), 'sealpost-chromium-'));
  let context: BrowserContext | undefined;
  try {
    const phrase = await cliAccount(account);
    const withPhrase = { SEALPOST_PHRASE: phrase };
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1280, height: 900 } });
    const page = context.pages()[0] ?? (await context.newPage());
    page.on('dialog', (d) => void d.accept());
    const problems: string[] = [];
    await page.goto(`${api}/app/`);
    await signInWithPhrase(page, phrase);
    await page.getByTestId('nav-addresses').click();
    await page.getByRole('heading', { name: 'Addresses', level: 1 }).waitFor();

    let addressId = '';
    let email = '';
    await t.test('made in the page: the Rust CLI opens its label and sees its retention', async () => {
      await page.getByLabel('Prefix (optional; a random ending is added)').fill('shop');
      await page.getByLabel('Keep mail for (days, 1 to 90)').fill('14');
      await page.getByLabel('Label (sealed, only you can read it)').fill('Shopping ✓');
      await page.getByRole('button', { name: 'Create address' }).click();
      email = /Created (\S+@\S+)\./.exec((await page.getByRole('status').textContent({ timeout: 15_000 })) ?? '')?.[1] ?? '';
      assert.match(email, /^shop\.[a-z0-9]+@/);
      const row = page.locator('tr', { hasText: email });
      assert.match((await row.textContent()) ?? '', /Shopping ✓.*14 days.*no device/);
      addressId = ((await row.getAttribute('data-testid')) ?? '').replace(/^address-/, '');
      const listed = await cli(account, ['address', 'list'], withPhrase);
      assert.match(listed, new RegExp(`${addressId}\\s+${email.replace(/\./g, '\\.')}\\s+unassigned\\s+-\\s+14 days\\s+Shopping ✓`), listed);
      problems.push(...(await accessibilityProblems(page, 'addresses')));
      await shoot(page, 'acct-06-addresses');
    });

    await t.test('label and retention changed in the page, as the CLI reads them', async () => {
      const row = page.getByTestId(`address-${addressId}`);
      await row.getByRole('button', { name: `Edit ${email}` }).click();
      await row.getByLabel('Label').fill('Shop, renamed');
      await row.getByLabel('Days').fill('30');
      await row.getByRole('button', { name: 'Save' }).click();
      await page.getByText(`Saved ${email}.`).waitFor();
      assert.match((await row.textContent()) ?? '', /Shop, renamed.*30 days/);
      const listed = await cli(account, ['address', 'list'], withPhrase);
      assert.match(listed, new RegExp(`${addressId}.*30 days\\s+Shop, renamed`), listed);
    });

    await t.test('a label the CLI sealed opens in the page; deleting removes the address', async () => {
      await cli(account, ['address', 'label', addressId, 'Sealed by the CLI'], withPhrase);
      await page.reload();
      await signInWithPhrase(page, phrase);
      const row = page.getByTestId(`address-${addressId}`);
      await row.getByText('Sealed by the CLI').waitFor({ timeout: 15_000 });
      await row.getByRole('button', { name: `Delete ${email}` }).click();
      await page.getByText(`Deleted ${email}.`).waitFor();
      assert.equal(await page.getByTestId(`address-${addressId}`).count(), 0);
      assert.doesNotMatch(await cli(account, ['address', 'list'], withPhrase), new RegExp(addressId));
    });

    await t.test('no serious or critical accessibility violation on the addresses screen', () => {
      assert.deepEqual(problems, []);
    });
  } finally {
    await context?.close();
    rmSync(profile, { recursive: true, force: true });
    rmSync(account, { recursive: true, force: true });
  }
});
