/**
 * What a reader takes out of a decrypted message: the text of an HTML body,
 * one-time codes and links. A faithful port of the CLI's
 * `bins/cli/src/mailtext.rs` (the reference; a shared fixture,
 * `bins/cli/tests/data/codes.json`, is checked by both).
 *
 * Heuristics, on purpose simple:
 * - HTML becomes text by dropping comments, `script`, `style` and `head`,
 *   turning block ends and `<br>` into line breaks, removing the remaining
 *   tags and decoding entities.
 * - A code is a 4 to 8 digit number (or two groups of three digits, given
 *   joined) that is not part of a date, time, decimal, amount, phone number,
 *   order number (`#1234`) or link, or an upper-case code of letters and
 *   digits (`AB12CD`, `X7K9-P2Q4`, `G-123456`) close to a word such as
 *   "code", "verification", "OTP" or "one-time". Codes close to such a word
 *   come first; a lone 4-digit year (1900 to 2099) far from one is skipped.
 * - A link is an `http`/`https` URL in the text, an `<a href>` of the HTML,
 *   or a URL in its text.
 *
 * Porting notes: Rust's `regex` is Unicode-aware by default, so `\b` here is
 * written as look-arounds on Unicode word characters, `\d` as `\p{Nd}` and
 * `\s` as `\p{White_Space}`; distances are counted in UTF-8 bytes, as the
 * Rust code does.
 */

/** A Unicode word character, as Rust's `regex` defines `\w`. */
const W = String.raw`[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]`;
/** `\b` before a word character / after a word character. */
const B_START = `(?<!${W})`;
const B_END = `(?!${W})`;
const S = String.raw`\p{White_Space}`;

const COMMENT = /<!--[\s\S]*?-->/gu;
const HIDDEN = new RegExp(`<(?:script|style|head)${B_END}[^>]*>[\\s\\S]*?</(?:script|style|head)${S}*>`, 'giu');
const BREAK = new RegExp(
  `<br${B_END}[^>]*>|</?(?:p|div|tr|li|ul|ol|table|h[1-6]|blockquote|section|article|header|footer|hr)${B_END}[^>]*>`,
  'giu',
);
const CELL_END = new RegExp(`</t[dh]${S}*>`, 'giu');
const TAG = /<[^>]*>/gu;
const ENTITY = /&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z]{2,8});/gu;
const SPACES = /[ \t\u00a0]+/gu;
const BLANK_LINES = /\n{3,}/gu;

// A link ends at a space, a control character or a character URLs escape.
const URL_SOURCE = `${B_START}https?://[^${S}\\p{Cc}<>"'\`{}|\\\\^\\[\\]]+`;
const URL_RE = (): RegExp => new RegExp(URL_SOURCE, 'giu');
const HREF = new RegExp(
  `<a${B_END}[^>]*?${B_START}href${S}*=${S}*(?:"([^"]*)"|'([^']*)'|([^${S}>]+))`,
  'giu',
);

const KEYWORD = new RegExp(
  `${B_START}(?:codes?|passcodes?|verification|verify|otp|one[- ]?time|pin|2fa|two[- ]factor|authentication|confirmation|confirm|security)${B_END}`,
  'giu',
);
const NUMBER = new RegExp(`${B_START}(?:\\p{Nd}{4,8}|\\p{Nd}{3}[- ]\\p{Nd}{3})${B_END}`, 'gu');
const ALPHANUMERIC = new RegExp(`${B_START}[A-Z0-9]{1,8}(?:-[A-Z0-9]{1,8}){0,3}${B_END}`, 'gu');

/** How far (in UTF-8 bytes) a code may follow a keyword, or precede one. */
const AFTER_KEYWORD = 80;
const BEFORE_KEYWORD = 40;

const encoder = new TextEncoder();
const byteLength = (text: string): number => encoder.encode(text).length;

/** Rust's `str::trim`: Unicode White_Space at both ends. */
function rustTrim(text: string): string {
  return text.replace(/^\p{White_Space}+|\p{White_Space}+$/gu, '');
}

/** The readable text of an HTML body. */
export function htmlToText(html: string): string {
  let text = html.replace(COMMENT, '');
  text = text.replace(HIDDEN, '');
  text = text.replace(BREAK, '\n');
  text = text.replace(CELL_END, ' ');
  text = text.replace(TAG, '');
  text = decodeEntities(text);
  text = text.replace(SPACES, ' ');
  // Rust's `lines()`: split on `\n`, a trailing `\r` dropped (trim does it),
  // no empty last line after a final `\n` (the final trim makes it moot).
  const lines = text.split('\n').map(rustTrim);
  return rustTrim(lines.join('\n').replace(BLANK_LINES, '\n\n'));
}

const NAMED: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  ndash: '\u2013',
  mdash: '\u2014',
  hellip: '\u2026',
  rsquo: '\u2019',
  lsquo: '\u2018',
  rdquo: '\u201d',
  ldquo: '\u201c',
  copy: '\u00a9',
};

function fromCodePoint(value: number): string | undefined {
  if (!Number.isFinite(value) || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff)) return undefined;
  return String.fromCodePoint(value);
}

/** Decodes numeric entities and the named ones mail commonly uses; others stay. */
function decodeEntities(text: string): string {
  return text.replace(ENTITY, (whole: string, name: string) => {
    let decoded: string | undefined;
    if (name.startsWith('#x') || name.startsWith('#X')) {
      decoded = fromCodePoint(parseInt(name.slice(2), 16));
    } else if (name.startsWith('#')) {
      decoded = fromCodePoint(parseInt(name.slice(1), 10));
    } else {
      decoded = Object.hasOwn(NAMED, name) ? NAMED[name] : undefined;
    }
    return decoded ?? whole;
  });
}

/** The one-time codes and links of a message. */
export interface Found {
  /** Codes close to a keyword first, then the others. */
  codes: string[];
  links: string[];
}

/** Searches the subject, the text body and the HTML body, in that order. */
export function codesAndLinks(
  subject: string | null | undefined,
  text: string | null | undefined,
  html: string | null | undefined,
): Found {
  const htmlText = html == null ? undefined : htmlToText(html);
  const sources = [subject, text, htmlText].filter((s): s is string => s != null);

  const close: string[] = [];
  const far: string[] = [];
  for (const source of sources) {
    for (const [code, near] of codesIn(source)) (near ? close : far).push(code);
  }
  const codes: string[] = [];
  for (const code of [...close, ...far]) pushOnce(codes, code);

  const links: string[] = [];
  if (text != null) for (const link of urlsIn(text)) pushOnce(links, link);
  if (html != null) for (const link of hrefsIn(html)) pushOnce(links, link);
  if (htmlText !== undefined) for (const link of urlsIn(htmlText)) pushOnce(links, link);
  return { codes, links };
}

function pushOnce(list: string[], item: string): void {
  if (!list.includes(item)) list.push(item);
}

/** Every URL in `text`, without the punctuation that ends a sentence. */
export function urlsIn(text: string): string[] {
  return [...text.matchAll(URL_RE())]
    .map((m) => trimUrl(m[0]))
    .filter((url) => byteLength(url) > 'https://'.length);
}

const count = (text: string, c: string): number => text.split(c).length - 1;

/** Drops trailing sentence punctuation, and a closing parenthesis the URL did not open. */
export function trimUrl(url: string): string {
  for (;;) {
    let trimmed = url.replace(/[.,;:!?*]+$/u, '');
    if (trimmed.endsWith(')')) {
      const inner = trimmed.slice(0, -1);
      if (count(inner, '(') < count(inner, ')') + 1) trimmed = inner;
    }
    if (trimmed.length === url.length) return url;
    url = trimmed;
  }
}

const asciiLower = (text: string): string => text.replace(/[A-Z]/g, (c) => c.toLowerCase());

/** The `http`/`https` targets of the HTML's links. */
function hrefsIn(html: string): string[] {
  const out: string[] = [];
  for (const m of html.matchAll(HREF)) {
    const raw = m[1] ?? m[2] ?? m[3];
    if (raw === undefined) continue;
    const url = decodeEntities(rustTrim(raw));
    const lower = asciiLower(url);
    if ((lower.startsWith('http://') || lower.startsWith('https://')) && byteLength(url) > 'https://'.length) {
      out.push(url);
    }
  }
  return out;
}

/** UTF-8 byte offset of every UTF-16 index of `text` (length + 1 entries). */
function byteOffsets(text: string): Uint32Array {
  const out = new Uint32Array(text.length + 1);
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    out[i] = bytes;
    const unit = text.charCodeAt(i);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        out[i + 1] = bytes; // inside a pair: never a match boundary
        bytes += 4;
        i++;
        continue;
      }
      bytes += 3;
    } else bytes += 3;
  }
  out[text.length] = bytes;
  return out;
}

/** The codes in one text, each with whether it is close to a keyword. */
function codesIn(source: string): Array<[string, boolean]> {
  // Links hold numbers too (ids, tracking); blank them out, keeping the
  // (byte) offsets.
  const text = source.replace(URL_RE(), (m) => ' '.repeat(byteLength(m)));
  const at = byteOffsets(text);
  const keywords = [...text.matchAll(KEYWORD)].map((m) => [at[m.index] as number, at[m.index + m[0].length] as number]);
  const near = (start: number, end: number): boolean =>
    keywords.some(
      ([kStart, kEnd]) =>
        (start >= (kEnd as number) && start - (kEnd as number) <= AFTER_KEYWORD) ||
        ((kStart as number) >= end && (kStart as number) - end <= BEFORE_KEYWORD),
    );

  const found: Array<[number, string, boolean]> = [];
  for (const m of text.matchAll(NUMBER)) {
    const s = m.index;
    const e = s + m[0].length;
    if (!standsAlone(text, s, e)) continue;
    const close = near(at[s] as number, at[e] as number);
    const digits = m[0].replace(/[^0-9]/g, '');
    if (!close && isYear(digits)) continue;
    found.push([at[s] as number, digits, close]);
  }
  for (const m of text.matchAll(ALPHANUMERIC)) {
    const code = m[0];
    const s = m.index;
    const e = s + code.length;
    const letters = code.replace(/[^A-Z]/g, '').length;
    const digits = code.replace(/[^0-9]/g, '').length;
    const plain = code.replace(/[^A-Za-z0-9]/g, '').length;
    if (letters === 0 || digits === 0 || plain < 4 || plain > 16) continue;
    if (!standsAlone(text, s, e) || !near(at[s] as number, at[e] as number)) continue;
    found.push([at[s] as number, code, true]);
  }
  found.sort((a, b) => a[0] - b[0]); // stable, as Rust's sort_by_key
  return found.map(([, code, close]) => [code, close]);
}

/** A 4-digit number from 1900 to 2099. */
function isYear(digits: string): boolean {
  return digits.length === 4 && (digits.startsWith('19') || digits.startsWith('20'));
}

/** The two characters (code points) before index `i`, nearest first. */
function twoBefore(text: string, i: number): [string | undefined, string | undefined] {
  const chars = Array.from(text.slice(Math.max(0, i - 4), i));
  return [chars[chars.length - 1], chars[chars.length - 2]];
}

/** The two characters (code points) from index `i`. */
function twoAfter(text: string, i: number): [string | undefined, string | undefined] {
  const chars = Array.from(text.slice(i, i + 4));
  return [chars[0], chars[1]];
}

const isAsciiDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';
const ALNUM = /^[\p{Alphabetic}\p{N}]$/u;

/**
 * Whether `text[start..end]` is a value of its own: not continued by another
 * number through `-`, `/`, `.`, `:`, `,` or `_` (dates, times, decimals,
 * phone numbers), not an amount, percentage or `#` number.
 */
function standsAlone(text: string, start: number, end: number): boolean {
  const [prev, prev2] = twoBefore(text, start);
  const [next, next2] = twoAfter(text, end);
  const joins = (c: string | undefined): boolean => c !== undefined && '-/.:,_'.includes(c);
  if ((joins(prev) && isAsciiDigit(prev2)) || (joins(next) && isAsciiDigit(next2))) return false;
  const marks = (c: string | undefined): boolean => c !== undefined && ['$', '€', '£', '¥', '#', '+', '%'].includes(c);
  // "-123456" after a word is part of it (`ORDER-123456`), after a space a list dash.
  const wordBefore = (prev === '-' || prev === '_') && prev2 !== undefined && ALNUM.test(prev2);
  return !(marks(prev) || marks(next) || wordBefore);
}
