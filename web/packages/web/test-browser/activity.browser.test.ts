// The activity area in chromium against a stack: an event made elsewhere
// shows up at once (event stream), and the log has it.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { accessibilityProblems, newAccount, openBrowser, screenshot, signInPage, STACK_SKIP } from './helpers.js';

test('activity: a new event shows live, and in the log', { skip: STACK_SKIP, timeout: 120_000 }, async () => {
  const { phrase, client } = await newAccount();
  const { page, close } = await openBrowser();
  try {
    await signInPage(page, phrase);
    await page.getByTestId('nav-activity').click();
    await page.locator('.activity .live.on').waitFor({ timeout: 15_000 });
    await page.getByText('Events show here the moment they happen.').waitFor();
    // Let the stream open before the change (its first frame is its position).
    await page.waitForTimeout(1_000);
    const address = await client.createAddress({ prefix: 'live' });
    const live = page.locator('.events li[data-type="inbox.created"]');
    await live.waitFor({ timeout: 15_000 });
    assert.match((await live.textContent()) ?? '', /An address was created/);
    await page.locator('.log li[data-kind="inbox.created"]', { hasText: address.email }).waitFor({ timeout: 15_000 });
    await screenshot(page, '12-activity');
    assert.deepEqual(await accessibilityProblems(page, 'activity'), []);
  } finally {
    await close();
  }
});
