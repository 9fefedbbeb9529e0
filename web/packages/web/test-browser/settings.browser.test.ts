// Notifications and sessions in chromium against a stack: a kind switched
// off, an address muted, other sessions signed out, then every session.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ApiError, SealpostClient } from '@sealpost/sdk';

import { accessibilityProblems, API, newAccount, openBrowser, screenshot, signInPage, STACK_SKIP } from './helpers.js';

test('settings: a mute, a preference, sign out other sessions, sign out everywhere', { skip: STACK_SKIP, timeout: 120_000 }, async () => {
  const { phrase, keys, client } = await newAccount();
  const address = await client.createAddress({ prefix: 'muted' });
  const other = await SealpostClient.signIn({ baseUrl: API as string, keys });
  const { page, close } = await openBrowser();
  page.on('dialog', (d) => void d.accept());
  try {
    await signInPage(page, phrase);
    await page.getByTestId('nav-settings').click();
    await page.getByRole('heading', { name: 'Notifications' }).waitFor();

    await page.getByLabel(`Mute ${address.email}`).check();
    await page.getByText(`New mail of ${address.email} is muted.`).waitFor();
    assert.deepEqual((await client.notificationSettings()).mutedInboxes, [address.id]);
    await page.getByLabel('New mail', { exact: true }).uncheck();
    await page.waitForFunction(() => !(document.querySelector('fieldset input') as HTMLInputElement).checked);
    for (let i = 0; i < 20 && (await client.notificationSettings()).preferences.newMail; i++) await page.waitForTimeout(100);
    assert.equal((await client.notificationSettings()).preferences.newMail, false);

    // Three sessions: this page's, the SDK's two; this one marked.
    await page.getByTestId('session').nth(2).waitFor();
    assert.equal(await page.getByTestId('session').filter({ hasText: '(this browser)' }).count(), 1);
    await screenshot(page, '11-settings');
    assert.deepEqual(await accessibilityProblems(page, 'settings'), []);

    await page.getByRole('button', { name: 'Sign out other sessions' }).click();
    await page.getByText('Signed out 2 other sessions. This browser stays signed in.').waitFor();
    assert.equal(await page.getByTestId('session').count(), 1);
    for (const gone of [client, other]) {
      await assert.rejects(gone.me(), (e: unknown) => e instanceof ApiError && e.status === 401);
    }

    await page.getByRole('button', { name: 'Sign out everywhere' }).click();
    await page.getByRole('button', { name: 'Sign in with my phrase' }).waitFor();
    const again = await SealpostClient.signIn({ baseUrl: API as string, keys });
    assert.equal((await again.listSessions()).length, 1, 'only the session just opened is left');
  } finally {
    await close();
  }
});
