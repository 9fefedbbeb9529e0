// The web client by keyboard alone, against a stack: every step below is a
// key press or typed text (no click, no fill): sign in, choose an address,
// open a message, write and send a mail, star it in Sent, change area.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { API, newAccount, openBrowser, plainMail, relayedMail, screenshot, STACK_SKIP, tabTo } from './helpers.js';

test('keyboard only: sign in, read, write and send, star, areas', { skip: STACK_SKIP, timeout: 180_000 }, async () => {
  const { phrase, client } = await newAccount();
  const address = await client.createAddress({ prefix: 'keys' });
  await client.deliverRaw(address.id, plainMail('Service <noreply@service.example>', address.email, 'Your sign-in code', 'Your code is 739184.'));
  const { page, close } = await openBrowser();
  const k = page.keyboard;
  try {
    await page.goto(`${API}/app/`);
    await page.getByRole('button', { name: 'Sign in with my phrase' }).waitFor();
    await tabTo(page, /^Sign in with my phrase$/);
    await k.press('Enter');
    await tabTo(page, /^Recovery phrase/);
    await k.type(phrase);
    await tabTo(page, /^Sign in$/);
    await k.press('Enter');
    await page.getByRole('heading', { name: 'Addresses' }).waitFor();

    // Choose the address, open the message.
    // The address's own button (its text starts with the address; a message listed under
    // All addresses names it later in its text).
    await tabTo(page, new RegExp(`^${address.email.replace(/\./g, '\\.')}`));
    await k.press('Enter');
    await page.locator('.addresses button[aria-pressed="true"]', { hasText: address.email }).waitFor();
    await page.locator('.live.on').waitFor({ timeout: 15_000 });
    await page.locator('.list li', { hasText: 'Your sign-in code' }).waitFor({ timeout: 30_000 });
    await tabTo(page, /Your sign-in code/);
    await k.press('Enter');
    await page.getByRole('heading', { name: 'Your sign-in code' }).waitFor();
    // The reader has the focus: the message's actions are the next stops.
    assert.equal(await page.evaluate(() => document.activeElement?.classList.contains('reader')), true, 'the reader takes the focus');
    await tabTo(page, /^Star$/);
    await k.press('Enter');
    await page.getByRole('button', { name: 'Unstar' }).waitFor();

    // Write a mail: back to the button, the form by Tab, sent with Enter.
    await tabTo(page, /^Write a mail$/, { back: true });
    await k.press('Enter');
    await tabTo(page, /^name@example\.com/);
    await k.type('keyboard@example.org');
    await tabTo(page, /^Subject$/);
    await k.type('Typed, not clicked');
    await tabTo(page, /^Text$/);
    await k.type('Every key pressed.');
    await tabTo(page, /^Send$/);
    await screenshot(page, '15-keyboard-compose');
    await k.press('Enter');
    await page.getByText('Sent. The copy is in Sent.').waitFor({ timeout: 30_000 });
    const relayed = await relayedMail((m) => m.raw.includes('Subject: Typed, not clicked'));
    assert.deepEqual(relayed.recipients, ['keyboard@example.org']);
    await page.getByRole('heading', { name: 'Typed, not clicked' }).waitFor();

    // Another area by keyboard.
    await tabTo(page, /^Activity$/, { back: true });
    await k.press('Enter');
    await page.locator('.activity .log li[data-kind="mail.sent"]').waitFor({ timeout: 15_000 });
    assert.match(page.url(), /#activity$/);
  } finally {
    await close();
  }
});
