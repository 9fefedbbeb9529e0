// Pure helpers of the web client (no DOM): tested with node --test.

/** The policy inside the frame that shows a message's HTML: no scripts, no remote anything. */
export const MAIL_FRAME_CSP =
  "default-src 'none'; img-src data:; style-src 'unsafe-inline'; font-src data:; form-action 'none'; base-uri 'none'";

/** The frame document for already sanitised HTML: a strict policy and a base target for links. */
export function frameDocument(sanitisedHtml: string): string {
  return (
    '<!doctype html><html><head><meta charset="utf-8">' +
    `<meta http-equiv="Content-Security-Policy" content="${MAIL_FRAME_CSP}">` +
    '<meta name="referrer" content="no-referrer"><base target="_blank">' +
    '<style>body{font-family:system-ui,sans-serif;margin:12px;color:#111;word-wrap:break-word}img[data-blocked]{outline:1px dashed #aaa}</style>' +
    `</head><body>${sanitisedHtml}</body></html>`
  );
}

const CSS_IMPORT = /@import\b[^;]*;?/gi;
const CSS_REMOTE_URL = /url\(\s*(?!['"]?\s*data:)(?:"[^"]*"|'[^']*'|[^)]*)\)/gi;
const CSS_IMAGE_SET = /(?:-webkit-)?image-set\(/gi;
const CSS_REMOTE_ANY = /@import|url\(|image-set\(/i;

/**
 * A message's CSS (a `style` attribute or a `<style>` element) with every
 * remote reference removed: `url()` that is not `data:`, `image-set()`
 * (which takes bare strings as URLs) and `@import`. CSS with escapes that
 * could spell one of those is dropped whole rather than unescaped. The
 * frame's policy blocks such loads anyway; removing them means the browser
 * never even tries.
 */
export function stripRemoteCss(css: string): { css: string; removed: number } {
  if (css.includes('\\')) {
    const plain = css
      .replace(/\\([0-9a-f]{1,6})\s?/gi, (_, hex: string) => {
        const code = Number.parseInt(hex, 16);
        return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : '\ufffd';
      })
      .replace(/\\(.)/g, '$1');
    if (CSS_REMOTE_ANY.test(plain)) return { css: '', removed: 1 };
  }
  let removed = 0;
  const out = css
    .replace(CSS_IMPORT, () => {
      removed += 1;
      return '';
    })
    .replace(CSS_REMOTE_URL, () => {
      removed += 1;
      return 'none';
    })
    .replace(CSS_IMAGE_SET, () => {
      removed += 1;
      return 'blocked-image-set(';
    });
  return { css: out, removed };
}

/** `count` distinct word positions (0-based, ascending) of a 12-word phrase to type back. */
export function confirmPositions(count = 3, random: () => number = Math.random, words = 12): number[] {
  const picked = new Set<number>();
  while (picked.size < Math.min(count, words)) picked.add(Math.floor(random() * words));
  return [...picked].sort((a, b) => a - b);
}

/** Whether the typed words match the phrase's words at `positions` (case and spaces ignored). */
export function confirmationMatches(phrase: string, positions: number[], typed: string[]): boolean {
  const words = phrase.trim().split(/\s+/);
  return positions.every((p, i) => (typed[i] ?? '').trim().toLowerCase() === words[p]);
}

/** A size for people. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** A timestamp for people: the time today, else the date. */
export function formatWhen(iso: string, now: Date = new Date()): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const sameDay = d.toDateString() === now.toDateString();
  return sameDay
    ? d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })
    : d.toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' });
}

interface Listed {
  id: string;
  receivedAt: string;
}

/** Merges newly seen messages into a list: one entry per id (the newer copy), newest first. */
export function mergeMessages<T extends Listed>(existing: T[], incoming: T[]): T[] {
  const byId = new Map(existing.map((m) => [m.id, m]));
  for (const m of incoming) byId.set(m.id, m);
  return [...byId.values()].sort((a, b) =>
    a.receivedAt === b.receivedAt ? (a.id < b.id ? 1 : -1) : a.receivedAt < b.receivedAt ? 1 : -1,
  );
}

/**
 * A file name to save an attachment under: the sender's name without
 * directories, control characters or characters Windows refuses, never
 * empty, hidden (leading dot) or over 200 characters; `attachment-N` when
 * the sender gave none.
 */
export function safeFileName(name: string | null, index: number): string {
  const fallback = `attachment-${index + 1}`;
  if (name === null) return fallback;
  const base = name.split(/[\\/]/).pop() ?? '';
  let clean = base
    .replace(/[\u0000-\u001f\u007f-\u009f<>:"|?*\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, '_')
    .replace(/^[\s.]+/, '')
    .replace(/[\s.]+$/, '')
    .trim();
  if (/^(con|prn|aux|nul|com\d|lpt\d)(\..*)?$/i.test(clean)) clean = `_${clean}`;
  if (clean.length > 200) {
    const dot = clean.lastIndexOf('.');
    const ext = dot > 0 && clean.length - dot <= 16 ? clean.slice(dot) : '';
    clean = clean.slice(0, 200 - ext.length) + ext;
  }
  return clean === '' ? fallback : clean;
}
