// The web client on a phone-sized screen (390x844, touch) against a stack:
// sign in, read mail, reply, switch areas, with nothing wider than the screen.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { accessibilityProblems, newAccount, openBrowser, plainMail, relayedMail, screenshot, signInPage, STACK_SKIP } from './helpers.js';

const noSideScroll = (page: import('playwright-core').Page) =>
  page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, width: window.innerWidth }));

test('phone 390x844: read, reply, areas, no sideways scrolling', { skip: STACK_SKIP, timeout: 150_000 }, async () => {
  const { phrase, client } = await newAccount();
  const address = await client.createAddress({ prefix: 'phone' });
  await client.deliverRaw(address.id, plainMail('Friend <friend@example.com>', address.email, 'Lunch on Friday?', 'Are you free at noon?'));
  const { page, close } = await openBrowser({ width: 390, height: 844 }, { isMobile: true, hasTouch: true });
  try {
    await signInPage(page, phrase);
    await page.locator('.addresses li', { hasText: address.email }).getByRole('button').first().tap();
    const item = page.locator('.list li', { hasText: 'Lunch on Friday?' });
    await item.waitFor({ timeout: 30_000 });
    await item.getByRole('button').tap();
    const heading = page.getByRole('heading', { name: 'Lunch on Friday?' });
    await heading.waitFor();
    assert.ok(await heading.isVisible());
    // The reader took the focus, so the phone scrolled to it.
    const box = await heading.boundingBox();
    assert.ok(box !== null && box.y >= -5 && box.y < 844, `the message is on screen (y ${box?.y})`);
    let size = await noSideScroll(page);
    assert.ok(size.scroll <= size.width, `nothing wider than the screen (${size.scroll} > ${size.width})`);
    await screenshot(page, '13-phone-mail');

    await page.getByRole('button', { name: 'Reply' }).tap();
    await page.getByLabel('Text', { exact: true }).fill('Yes, see you there.');
    await page.getByRole('button', { name: 'Send' }).tap();
    await page.getByText('Sent. The copy is in Sent.').waitFor({ timeout: 30_000 });
    const reply = await relayedMail((m) => m.raw.includes('Subject: Re: Lunch on Friday?'));
    assert.deepEqual(reply.recipients, ['friend@example.com']);

    for (const area of ['settings', 'activity']) {
      await page.getByTestId(`nav-${area}`).tap();
      await page.locator(`.${area}`).waitFor();
      size = await noSideScroll(page);
      assert.ok(size.scroll <= size.width, `${area}: nothing wider than the screen (${size.scroll} > ${size.width})`);
    }
    await screenshot(page, '14-phone-settings');
    assert.deepEqual(await accessibilityProblems(page, 'phone activity'), []);
  } finally {
    await close();
  }
});
