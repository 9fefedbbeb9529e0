// The mail area in chromium against a stack: write and send a mail from an
// address (found at the stack's relay, and as the Sent copy opened in the
// page), reply, the limits in words, star, move, delete, empty the trash,
// search what the page decrypted.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { accessibilityProblems, newAccount, openBrowser, plainMail, relayedMail, screenshot, signInPage, STACK_SKIP } from './helpers.js';

test('mail: send from an address, the Sent copy, the relay, reply, limits in words', { skip: STACK_SKIP, timeout: 180_000 }, async () => {
  const { phrase, client } = await newAccount();
  const address = await client.createAddress({ prefix: 'writer' });
  const subject = `Browser sent ${Date.now()}`;
  const { page, close } = await openBrowser();
  try {
    await signInPage(page, phrase);
    await page.locator('.addresses li', { hasText: address.email }).getByRole('button').first().click();
    await page.getByRole('button', { name: 'Write a mail' }).click();
    assert.equal(await page.getByLabel('From', { exact: true }).inputValue(), address.email, 'the chosen address sends');

    // Limits checked in the page, in words.
    await page.getByLabel('To', { exact: true }).fill('not-an-address, friend@[10.0.0.1]');
    await page.getByRole('button', { name: 'Send' }).click();
    const problems = page.getByRole('alert');
    await problems.waitFor();
    assert.match((await problems.textContent()) ?? '', /"not-an-address" is not an email address.*"friend@\[10\.0\.0\.1\]" is not an email address/);

    await page.getByLabel('To', { exact: true }).fill('Friend <friend@example.org>, other@example.net');
    await page.getByLabel('Cc', { exact: true }).fill('Copy <copy@example.com>');
    await page.getByLabel('Subject', { exact: true }).fill(subject);
    await page.getByLabel('Text', { exact: true }).fill('Hello from the web client.\nSecond line.');
    await screenshot(page, '08-compose');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByText('Sent. The copy is in Sent.').waitFor({ timeout: 30_000 });

    // The relay got it, for the recipients and the copy, from the address.
    const relayed = await relayedMail((m) => m.raw.includes(subject));
    assert.deepEqual([...relayed.recipients].sort(), ['copy@example.com', 'friend@example.org', 'other@example.net']);
    assert.match(relayed.raw, /\r\nCc: Copy <copy@example\.com>\r\n/);
    assert.equal(relayed.mailFrom.toLowerCase(), address.email.toLowerCase());
    assert.match(relayed.raw, /Hello from the web client\./);

    // The Sent copy, opened in the page like received mail.
    assert.equal(await page.getByTestId('folder-sent').getAttribute('aria-pressed'), 'true');
    const item = page.locator('.list li', { hasText: subject });
    await item.waitFor();
    assert.match((await item.textContent()) ?? '', /To Friend <friend@example\.org>, other@example\.net/);
    await page.getByRole('heading', { name: subject }).waitFor();
    assert.match((await page.locator('pre.body').textContent()) ?? '', /Hello from the web client\.\nSecond line\./);
    assert.match((await page.locator('dl.headers').textContent()) ?? '', /Sent/);
    assert.match((await page.locator('dl.headers').textContent()) ?? '', /CcCopy <copy@example\.com>/);
    await screenshot(page, '09-sent-copy');
    const sent = await client.listMail({ folder: 'sent', addressId: address.id });
    assert.equal(sent.messages.length, 1);
    assert.equal(client.openMessage(sent.messages[0]!).subject, subject, 'the copy the page showed is the one the SDK opens');

    // Reply to received mail: the sender, "Re:", the text quoted.
    await client.deliverRaw(address.id, plainMail('Shop <shop@example.com>', address.email, 'Your order', 'It ships tomorrow.'));
    await page.getByTestId('folder-inbox').click();
    const received = page.locator('.list li', { hasText: 'Your order' });
    await received.waitFor({ timeout: 30_000 });
    await received.getByRole('button').click();
    await page.getByRole('button', { name: 'Reply' }).click();
    assert.equal(await page.getByLabel('To', { exact: true }).inputValue(), 'Shop <shop@example.com>');
    assert.equal(await page.getByLabel('Subject', { exact: true }).inputValue(), 'Re: Your order');
    assert.match(await page.getByLabel('Text', { exact: true }).inputValue(), /wrote:\n> It ships tomorrow\./);
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByText('Sent. The copy is in Sent.').waitFor({ timeout: 30_000 });
    const reply = await relayedMail((m) => m.raw.includes('Subject: Re: Your order'));
    assert.deepEqual(reply.recipients, ['shop@example.com']);

    const axe = await accessibilityProblems(page, 'mail with folders');
    assert.deepEqual(axe, []);
  } finally {
    await close();
  }
});

test('mail: star, move to Archive, delete to Trash, empty the trash, search', { skip: STACK_SKIP, timeout: 180_000 }, async () => {
  const { phrase, client } = await newAccount();
  const address = await client.createAddress({ prefix: 'folders' });
  await client.deliverRaw(address.id, plainMail('Bank <alerts@bank.example>', address.email, 'Statement ready', 'Your statement is ready.'));
  await client.deliverRaw(address.id, plainMail('Newsletter <news@letters.example>', address.email, 'Weekly news', 'This week.'));
  await client.deliverRaw(address.id, plainMail('Café Crème <hello@cafe.example>', address.email, 'Your coffee code', 'Code 482913.'));
  const { page, close } = await openBrowser();
  page.on('dialog', (d) => void d.accept());
  try {
    await signInPage(page, phrase);
    await page.locator('.addresses li', { hasText: address.email }).getByRole('button').first().click();
    await page.locator('.list li').nth(2).waitFor({ timeout: 30_000 });

    // Search over what the page decrypted: subjects and senders, accents folded.
    await page.getByLabel('Search subjects and senders').fill('cafe');
    await page.locator('.list li', { hasText: 'Your coffee code' }).waitFor();
    assert.equal(await page.locator('.list li').count(), 1);
    await page.getByLabel('Search subjects and senders').fill('bank statement');
    await page.locator('.list li', { hasText: 'Statement ready' }).waitFor();
    assert.equal(await page.locator('.list li').count(), 1);
    await page.getByLabel('Search subjects and senders').fill('nothing like this');
    await page.getByText('No mail matches').waitFor();
    await page.getByLabel('Search subjects and senders').fill('');

    // Star, then move to Archive.
    await page.locator('.list li', { hasText: 'Statement ready' }).getByRole('button').click();
    await page.getByRole('button', { name: 'Star', exact: true }).click();
    await page.getByRole('button', { name: 'Unstar' }).waitFor();
    await page.locator('.list li', { hasText: 'Statement ready' }).locator('.star').waitFor();
    await page.getByRole('button', { name: 'Move to Archive' }).click();
    await page.getByText('Moved to Archive.').waitFor();
    assert.equal(await page.locator('.list li', { hasText: 'Statement ready' }).count(), 0);
    await page.getByTestId('folder-archive').click();
    await page.locator('.list li', { hasText: 'Statement ready' }).waitFor();
    const archived = (await client.listMail({ folder: 'archive', addressId: address.id })).messages;
    assert.equal(archived.length, 1);
    assert.equal(archived[0]!.starred, true);

    // Delete to Trash, then empty it.
    await page.getByTestId('folder-inbox').click();
    await page.locator('.list li', { hasText: 'Weekly news' }).getByRole('button').click();
    await page.getByRole('region', { name: 'Message' }).getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByText('Moved to Trash.').waitFor();
    await page.getByTestId('folder-trash').click();
    await page.locator('.list li', { hasText: 'Weekly news' }).waitFor();
    await screenshot(page, '10-folders-trash');
    await page.getByRole('button', { name: 'Empty trash' }).click();
    await page.getByText('Trash emptied: 1 message deleted for good.').waitFor();
    const counts = await client.folderCounts(address.id);
    assert.equal(counts.trash.total, 0);
    assert.equal(counts.archive.total, 1);
    assert.equal(counts.inbox.total, 1);
  } finally {
    await close();
  }
});
