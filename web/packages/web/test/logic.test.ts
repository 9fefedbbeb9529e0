import assert from 'node:assert/strict';
import { test } from 'node:test';

import { confirmationMatches, confirmPositions, formatBytes, frameDocument, MAIL_FRAME_CSP, mergeMessages, safeFileName, stripRemoteCss } from '../src/logic.js';

const PHRASE = 'abandon ability able about above absent absorb abstract absurd abuse access accident';

test('phrase confirmation: three distinct positions, typed words compared loosely', () => {
  for (let i = 0; i < 50; i++) {
    const p = confirmPositions();
    assert.equal(p.length, 3);
    assert.equal(new Set(p).size, 3);
    assert.ok(p.every((x) => x >= 0 && x < 12));
    assert.deepEqual([...p].sort((a, b) => a - b), p);
  }
  assert.ok(confirmationMatches(PHRASE, [0, 5, 11], ['abandon', ' ABSENT ', 'accident']));
  assert.ok(!confirmationMatches(PHRASE, [0, 5, 11], ['abandon', 'absent', 'access']));
  assert.ok(!confirmationMatches(PHRASE, [0, 5, 11], ['abandon', 'absent']));
});

test('mail frame: strict policy, no scripts, no remote images', () => {
  assert.match(MAIL_FRAME_CSP, /default-src 'none'/);
  assert.match(MAIL_FRAME_CSP, /img-src data:/);
  assert.doesNotMatch(MAIL_FRAME_CSP, /script-src/);
  const doc = frameDocument('<p>hi</p>');
  assert.ok(doc.includes(`content="${MAIL_FRAME_CSP}"`));
  assert.ok(doc.includes('<body><p>hi</p></body>'));
  assert.ok(doc.indexOf('Content-Security-Policy') < doc.indexOf('<body>'));
});

test('messages merge by id, newest first', () => {
  const a = { id: 'msg_a', receivedAt: '2026-11-22T10:00:00.000Z', read: false };
  const b = { id: 'msg_b', receivedAt: '2026-11-22T11:00:00.000Z', read: false };
  const merged = mergeMessages([a], [b, { ...a, read: true }]);
  assert.deepEqual(merged.map((m) => m.id), ['msg_b', 'msg_a']);
  assert.equal(merged[1]?.read, true);
});

test('sizes for people', () => {
  assert.equal(formatBytes(512), '512 B');
  assert.equal(formatBytes(2048), '2.0 KiB');
  assert.equal(formatBytes(3 * 1024 * 1024), '3.0 MiB');
});

test('no secret storage in the web client source, but the device record in IndexedDB', async () => {
  const { readdirSync, readFileSync, statSync } = await import('node:fs');
  const dir = new URL('../../src/', import.meta.url);
  // Every source file, the areas' subdirectory included.
  for (const name of readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    if (statSync(new URL(name, dir)).isDirectory()) continue;
    const text = readFileSync(new URL(name, dir), 'utf8');
    for (const api of ['localStorage', 'sessionStorage', 'document.cookie', 'caches.open']) {
      assert.ok(!text.includes(api), `${name} uses ${api}`);
    }
    // Only the device store touches IndexedDB.
    if (name !== 'deviceStore.ts') assert.ok(!text.includes('indexedDB'), `${name} uses indexedDB`);
  }
  // ... and it writes one record: the credential and the key pair, nothing else.
  const store = readFileSync(new URL('deviceStore.ts', dir), 'utf8');
  const puts = [...store.matchAll(/\.put\(([^)]*)\)/g)].map((m) => m[1]);
  assert.deepEqual(puts, ['{ credential: device.credential, privateKey: device.privateKey, publicKey: device.publicKey }, KEY']);
  assert.match(store, /generateKey|DeviceKey|non-extractable/);
});

test('mail CSS keeps its styles and loses every remote reference', () => {
  assert.deepEqual(stripRemoteCss('color: red; font-weight: bold'), { css: 'color: red; font-weight: bold', removed: 0 });
  assert.deepEqual(stripRemoteCss("background-image: url('https://t.example/p.gif')"), { css: 'background-image: none', removed: 1 });
  assert.deepEqual(stripRemoteCss('background: url( http://t.example/a.png ) no-repeat'), { css: 'background: none no-repeat', removed: 1 });
  assert.deepEqual(stripRemoteCss('background: url("data:image/png;base64,AAAA")'), { css: 'background: url("data:image/png;base64,AAAA")', removed: 0 });
  assert.equal(stripRemoteCss('@import "https://t.example/x.css"; p { color: red }').css, ' p { color: red }');
  const set = stripRemoteCss('background-image: image-set("https://t.example/a.png" 1x)');
  assert.equal(set.removed, 1);
  assert.ok(!/(^|[^-])image-set\(/.test(set.css));
  // Escapes that spell url( are dropped whole, never unescaped.
  assert.deepEqual(stripRemoteCss('background: \\75 rl(https://t.example/a.png)'), { css: '', removed: 1 });
  assert.deepEqual(stripRemoteCss('content: "\\201C"'), { css: 'content: "\\201C"', removed: 0 });
  assert.deepEqual(stripRemoteCss('content: "\\110000"'), { css: 'content: "\\110000"', removed: 0 });
});

test('attachment file names: no directories, controls or hidden names', () => {
  assert.equal(safeFileName('report.pdf', 0), 'report.pdf');
  assert.equal(safeFileName(null, 2), 'attachment-3');
  assert.equal(safeFileName('../../etc/passwd', 0), 'passwd');
  assert.equal(safeFileName('C:\\Users\\x\\evil.exe', 0), 'evil.exe');
  assert.equal(safeFileName('.bashrc', 0), 'bashrc');
  assert.equal(safeFileName('...', 1), 'attachment-2');
  assert.equal(safeFileName('a\u0000b\nc.txt', 0), 'a_b_c.txt');
  assert.equal(safeFileName('invoice\u202egpj.exe', 0), 'invoice_gpj.exe');
  assert.equal(safeFileName('CON.txt', 0), '_CON.txt');
  assert.equal(safeFileName('Résumé 2024.docx', 0), 'Résumé 2024.docx');
  const long = safeFileName(`${'x'.repeat(300)}.tar.gz`, 0);
  assert.equal(long.length, 200);
  assert.ok(long.endsWith('.gz'));
});
