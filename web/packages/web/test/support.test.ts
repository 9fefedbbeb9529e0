import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ABUSE_REASONS, abuseReportBody, authorWords, choiceWords, TICKET_CATEGORIES, TICKET_PRIORITIES } from '../src/supportLogic.js';

const form = { target: 'address' as const, value: ' Bad@Example.com ', reason: 'spam', details: '', contact: '' };

test('abuse report: exactly one target, trimmed, empty optional fields left out', () => {
  assert.deepEqual(abuseReportBody(form), { body: { emailAddress: 'Bad@Example.com', reason: 'spam' } });
  assert.deepEqual(abuseReportBody({ ...form, target: 'message', value: 'msg_abc', details: ' It asked for my card ', contact: 'me@example.org' }), {
    body: { messageId: 'msg_abc', reason: 'spam', details: 'It asked for my card', contact: 'me@example.org' },
  });
});

test('abuse report: what to fix, in words', () => {
  assert.deepEqual(abuseReportBody({ ...form, value: '  ' }), { problem: 'Type the address you report.' });
  assert.deepEqual(abuseReportBody({ ...form, target: 'message', value: '' }), { problem: 'Type the id of the message you report.' });
  assert.deepEqual(abuseReportBody({ ...form, value: 'not an address' }), { problem: 'not an address is not an email address.' });
  assert.deepEqual(abuseReportBody({ ...form, reason: 'rude' }), { problem: 'Choose a reason.' });
  // Characters, not UTF-16 units: 4000 emoji are accepted, 4001 are not.
  assert.ok('body' in abuseReportBody({ ...form, details: '🧾'.repeat(4000) }));
  assert.deepEqual(abuseReportBody({ ...form, details: 'x'.repeat(4001) }), { problem: 'The details are longer than 4000 characters.' });
  assert.deepEqual(abuseReportBody({ ...form, contact: 'x'.repeat(321) }), { problem: 'The contact is longer than 320 characters.' });
});

test('abuse reasons are the API\'s, each once', () => {
  assert.deepEqual(
    ABUSE_REASONS.map((r) => r.id),
    ['spam', 'phishing', 'malware', 'harassment', 'illegal_content', 'impersonation', 'other'],
  );
});

test('support choices and authors in words', () => {
  assert.deepEqual(TICKET_PRIORITIES.map((p) => p.id), ['low', 'normal', 'high', 'urgent']);
  assert.equal(choiceWords(TICKET_CATEGORIES, 'billing'), 'Plan, billing or payments');
  assert.equal(choiceWords(TICKET_CATEGORIES, 'made-up-by-the-cli'), 'made-up-by-the-cli');
  assert.equal(authorWords('staff'), 'Support');
  assert.equal(authorWords('account'), 'You');
});
