// The codes fixture shared with the CLI (bins/cli/tests/data/codes.json):
// the Rust test `mailtext::tests::shared_codes_fixture_matches` checks the
// same file against the reference implementation.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { codesAndLinks, htmlToText, trimUrl, urlsIn } from '../src/index.js';
import { CODES_PATH, readJson } from './helpers.js';

interface Case {
  name: string;
  subject: string | null;
  text: string | null;
  html: string | null;
  codes: string[];
  links: string[];
}

const cases = readJson<Case[]>(CODES_PATH);

test('codes fixture: has the cases of mailtext.rs and realistic mails', () => {
  assert.ok(cases.length >= 30);
  assert.equal(new Set(cases.map((c) => c.name)).size, cases.length, 'names are unique');
  assert.ok(cases.filter((c) => c.name.startsWith('signup-')).length >= 5);
});

for (const c of cases) {
  test(`codes fixture: ${c.name}`, () => {
    const found = codesAndLinks(c.subject, c.text, c.html);
    assert.deepEqual(found.codes, c.codes, 'codes');
    assert.deepEqual(found.links, c.links, 'links');
  });
}

test('html becomes readable text (mailtext.rs html_becomes_readable_text)', () => {
  const html =
    '<html><head><title>T</title><style>p{color:red}</style></head><body>' +
    '<!-- hidden --><p>Hello&nbsp;<b>there</b>,</p><p>Your code:<br>482913</p>' +
    '<script>var x = 1;</script><table><tr><td>a</td><td>b</td></tr></table>' +
    '<p>&lt;ok&gt; &amp; &#8364;5 &#x41; &unknown;</p></body></html>';
  assert.equal(htmlToText(html), 'Hello there,\n\nYour code:\n482913\n\na b\n\n<ok> & €5 A &unknown;');
  // Invalid code points stay as written.
  assert.equal(htmlToText('&#xD800; &#x110000; &#65;'), '&#xD800; &#x110000; A');
});

test('urls end at control characters; parentheses the url opened stay', () => {
  assert.deepEqual(urlsIn('see https://example.com/x\u001b[8m and https://example.com/\u009by'), [
    'https://example.com/x',
    'https://example.com/',
  ]);
  assert.equal(
    trimUrl('https://en.wikipedia.org/wiki/Rust_(programming_language)'),
    'https://en.wikipedia.org/wiki/Rust_(programming_language)',
  );
  assert.equal(trimUrl('https://example.com/a).,'), 'https://example.com/a');
  assert.deepEqual(urlsIn('https://'), []);
});
