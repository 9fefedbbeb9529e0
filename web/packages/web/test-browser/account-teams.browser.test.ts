// The teams area against a running stack, with two accounts in two
// browsers: the member's plan has no teams (the area says which plans do)
// and shows its join code; the owner, on Fleet after a sandbox checkout,
// adds the member from that code once the six words match, shares an
// address (sealed in the owner's page to the member's pinned key), and the
// member sees it and reads its mail, opened with the keys granted, in the
// Teams area and in Mail. Then the
// owner takes it back and the member leaves the team.
//
// Needs SEALPOST_API_URL and SEALPOST_SMTP_ADDR (a stack with the sandbox
// provider); skipped without them, except under CI=true.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { teamKeyFingerprint } from '@sealpost/sdk';
import type { Page } from 'playwright-core';

import { accessibilityProblems, eventually, newAccount, openBrowser, plainMail, screenshot, signInPage, STACK_SKIP } from './helpers.js';

/** Opens the Teams area afresh (another area first, so it reads everything again). */
async function openTeams(page: Page): Promise<void> {
  await page.getByTestId('nav-billing').click();
  await page.getByTestId('nav-teams').click();
  await page.getByRole('heading', { name: 'Teams', exact: true }).waitFor();
}

test('teams: an owner on Fleet adds a member, shares an address, the member reads its mail', { skip: STACK_SKIP, timeout: 240_000 }, async (t) => {
  const owner = await newAccount();
  const member = await newAccount();
  const address = await owner.client.createAddress({ prefix: 'team' });
  await owner.client.deliverRaw(address.id, plainMail('Ops <ops@example.com>', address.email, 'Team note', 'The deploy key rotates on Friday.'));

  // Fleet through the sandbox checkout, as the Billing area's test does it by page.
  const checkout = await owner.client.checkout('fleet', 'sandbox');
  const paid = await fetch(checkout.url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'outcome=paid' });
  assert.equal(paid.status, 200);
  await eventually('the owner on Fleet', async () => ((await owner.client.subscription()).planId === 'fleet' ? true : undefined));

  const ownerBrowser = await openBrowser();
  const memberBrowser = await openBrowser();
  const problems: string[] = [];
  const words = teamKeyFingerprint(member.keys.authPublicKey());
  try {
    const mp = memberBrowser.page;
    const op = ownerBrowser.page;
    mp.on('dialog', (d) => void d.accept());
    op.on('dialog', (d) => void d.accept());
    let joinCode = '';

    await t.test('on Free: the join code and its six words, and which plans have teams', async () => {
      await signInPage(mp, member.phrase);
      await openTeams(mp);
      joinCode = ((await mp.getByTestId('join-code').textContent()) ?? '').trim();
      assert.equal(joinCode, `service-team-1.${member.keys.accountId}.${Buffer.from(member.keys.authPublicKey()).toString('base64url')}`);
      assert.equal(await mp.getByTestId('join-fingerprint').textContent(), words);
      // The plans' sizes come from GET /plans, which may answer after the area shows.
      await mp.getByTestId('no-teams').getByText(/Fleet \(25 members\)/).waitFor();
      const note = (await mp.getByTestId('no-teams').textContent()) ?? '';
      assert.match(note, /Fleet \(25 members\)/);
      assert.match(note, /Enterprise/);
      assert.match((await mp.locator('main').textContent()) ?? '', /You are in no team/);
      problems.push(...(await accessibilityProblems(mp, 'teams on free')));
      await screenshot(mp, 'acct-14-teams-free');
    });

    await t.test('the owner adds the member once the six words match', async () => {
      await signInPage(op, owner.phrase);
      await openTeams(op);
      await op.getByTestId('team-count').filter({ hasText: '0 of 25 members' }).waitFor();
      const add = op.getByRole('button', { name: 'Add to the team' });
      // A code with a broken key is refused before anything is sent.
      await op.getByTestId('add-join-code').fill(joinCode.slice(0, -4));
      await op.getByText(/This is not a join code/).waitFor();
      assert.equal(await add.isDisabled(), true);
      await op.getByTestId('add-join-code').fill(joinCode);
      assert.equal(await op.getByTestId('add-fingerprint').textContent(), words);
      assert.equal(await add.isDisabled(), true, 'not before the words are confirmed');
      await op.getByLabel(/These six words match/).check();
      await add.click();
      const item = op.getByTestId(`member-${member.keys.accountId}`);
      await item.waitFor({ timeout: 15_000 });
      assert.equal(await item.getByTestId('member-fingerprint').textContent(), words);
      await op.getByTestId('team-count').filter({ hasText: '1 of 25 members' }).waitFor();
    });

    await t.test('the owner shares an address: sealed to the pinned key, at every epoch', async () => {
      const item = op.getByTestId(`member-${member.keys.accountId}`);
      await item.getByTestId('share-address').selectOption(address.id);
      await item.getByTestId('share-access').selectOption('read');
      await item.getByRole('button', { name: 'Share' }).click();
      await item.getByTestId(`grant-${address.id}`).waitFor({ timeout: 15_000 });
      assert.match((await item.getByTestId(`grant-${address.id}`).textContent()) ?? '', new RegExp(`${address.email.replace(/\./g, '\\.')}.*read, 1 key epoch`));
      const team = await owner.client.team();
      assert.deepEqual(team.members[0]?.grants, [{ addressId: address.id, epoch: 0, access: 'read' }]);
      problems.push(...(await accessibilityProblems(op, 'teams, owner')));
      await screenshot(op, 'acct-15-teams-owner');
    });

    await t.test('the member sees the shared address and reads its mail', async () => {
      await openTeams(mp);
      const membership = mp.getByTestId(`membership-${owner.keys.accountId}`);
      await membership.waitFor({ timeout: 15_000 });
      assert.match((await membership.textContent()) ?? '', /active/);
      const shared = membership.getByTestId(`shared-${address.id}`);
      assert.match((await shared.textContent()) ?? '', new RegExp(address.email.replace(/\./g, '\\.')));
      await shared.getByRole('button', { name: 'Open mail' }).click();
      const mail = mp.getByTestId('shared-mail');
      await mail.getByText('Team note').click();
      await mail.getByText('The deploy key rotates on Friday.').waitFor({ timeout: 15_000 });
      problems.push(...(await accessibilityProblems(mp, 'teams, member')));
      await screenshot(mp, 'acct-16-teams-member');
    });

    await t.test('the Mail area lists the shared address and opens its mail too', async () => {
      await mp.getByTestId('nav-mail').click();
      const list = mp.getByTestId('shared-addresses');
      await list.getByText(address.email).click();
      await mp.locator('section.messages').getByText('Team note').click();
      await mp.locator('section.reader').getByText('The deploy key rotates on Friday.').waitFor({ timeout: 15_000 });
    });

    await t.test('the owner takes it back; the member leaves the team', async () => {
      const item = op.getByTestId(`member-${member.keys.accountId}`);
      await item.getByRole('button', { name: 'Take back' }).click();
      await item.getByText('No address shared.').waitFor({ timeout: 15_000 });
      await openTeams(mp);
      const membership = mp.getByTestId(`membership-${owner.keys.accountId}`);
      await membership.getByText('Nothing shared with you yet.').waitFor({ timeout: 15_000 });
      await membership.getByRole('button', { name: 'Leave this team' }).click();
      await mp.getByText('You are in no team.').waitFor({ timeout: 15_000 });
      assert.deepEqual(await member.client.memberships(), []);
      assert.deepEqual((await owner.client.team()).members, []);
    });

    await t.test('no serious or critical accessibility violation on the teams screens', () => {
      assert.deepEqual(problems, []);
    });
  } finally {
    await ownerBrowser.close();
    await memberBrowser.close();
  }
});
