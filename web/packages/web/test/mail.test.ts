import assert from 'node:assert/strict';
import { test } from 'node:test';

import { checkMail, moveTargets, parseRecipients, replySubject, replyText, searchMail } from '../src/mailLogic.js';

const items = [
  { id: 'a', subject: 'Your code for Café', from: 'Shop <no-reply@shop.example>', to: ['me@mail.test'] },
  { id: 'b', subject: 'Invoice 42', from: 'billing@bank.example', to: ['me@mail.test'] },
  { id: 'c', subject: null, from: null, to: ['friend@else.example'] },
];

test('search: subject, sender and recipients, every word, case and accents folded', () => {
  assert.deepEqual([...searchMail(items, '')], ['a', 'b', 'c']);
  assert.deepEqual([...searchMail(items, 'cafe')], ['a']);
  assert.deepEqual([...searchMail(items, 'SHOP code')], ['a']);
  assert.deepEqual([...searchMail(items, 'bank')], ['b']);
  assert.deepEqual([...searchMail(items, 'friend')], ['c']);
  assert.deepEqual([...searchMail(items, 'invoice shop')], []);
});

test('recipients and the limits checked before sending', () => {
  assert.deepEqual(parseRecipients('a@x.com, B <b@y.org>;\n c@z.net ,'), ['a@x.com', 'B <b@y.org>', 'c@z.net']);
  assert.deepEqual(checkMail({ to: ['a@x.com', 'B <b@y.org>'], subject: 'Hi', text: 'x' }), []);
  assert.deepEqual(checkMail({ to: [], subject: '', text: '' }), ['Add at least one recipient.']);
  assert.match(checkMail({ to: ['nobody'], subject: '', text: '' })[0]!, /not an email address/);
  assert.match(checkMail({ to: ['a@[1.2.3.4]'], subject: '', text: '' })[0]!, /not an email address/);
  assert.match(checkMail({ to: Array.from({ length: 51 }, (_, i) => `a${i}@x.com`), subject: '', text: '' })[0]!, /at most 50/);
  const copies = Array.from({ length: 50 }, (_, i) => `c${i}@x.com`);
  assert.match(checkMail({ to: ['a@x.com'], cc: copies, subject: '', text: '' })[0]!, /at most 50 recipients, To and Cc together; this one has 51/);
  assert.match(checkMail({ to: ['a@x.com'], cc: ['not-an-address'], subject: '', text: '' })[0]!, /"not-an-address" is not an email address/);
  assert.deepEqual(checkMail({ to: ['a@x.com'], cc: ['C <c@x.com>'], subject: 'Hi', text: 'x' }), []);
  assert.match(checkMail({ to: ['a@x.com'], subject: 'a\nBcc: x', text: '' })[0]!, /line breaks/);
  assert.match(checkMail({ to: ['a@x.com'], subject: 'x'.repeat(999), text: '' })[0]!, /998/);
  assert.match(checkMail({ to: ['a@x.com'], subject: '', text: 'é'.repeat(300 * 1024) })[0]!, /512 KiB/);
});

test('folders a message may move to, and replies', () => {
  assert.deepEqual(moveTargets('inbox', false), ['archive', 'trash']);
  assert.deepEqual(moveTargets('sent', true), ['archive', 'trash']);
  assert.deepEqual(moveTargets('trash', true), ['sent', 'archive']);
  assert.deepEqual(moveTargets('archive', false), ['inbox', 'trash']);
  assert.equal(replySubject('Hello'), 'Re: Hello');
  assert.equal(replySubject('RE: Hello'), 'RE: Hello');
  assert.equal(replySubject(null), 'Re: ');
  assert.equal(replyText('a@x.com', 'Monday', 'one\ntwo'), '\n\nOn Monday, a@x.com wrote:\n> one\n> two');
});

test('activity kinds and event types in words', async () => {
  const { activityWords } = await import('../src/activityLogic.js');
  assert.equal(activityWords('inbox.created'), 'An address was created');
  assert.equal(activityWords('mail.sent'), activityWords('message.sent'));
  assert.equal(activityWords('something.new'), 'something.new');
});
