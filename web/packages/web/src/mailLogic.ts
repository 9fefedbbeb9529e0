// Pure logic of the mail area (no DOM): searching what the page already
// decrypted, the folders the API has, recipients typed in a form, replies.

/** The folders of `GET /messages/folders`, in the order they are shown. */
export const FOLDERS = ['inbox', 'sent', 'archive', 'trash'] as const;
export type FolderName = (typeof FOLDERS)[number];

/** Where a message may be moved from `folder`: received mail never into Sent, sent copies never into Inbox. */
export function moveTargets(folder: FolderName, outgoing: boolean): FolderName[] {
  return FOLDERS.filter((f) => f !== folder && !(outgoing && f === 'inbox') && !(!outgoing && f === 'sent'));
}

/** What search looks at: the subject and sender (or, for sent mail, the recipients) the page decrypted. */
export interface Searchable {
  id: string;
  subject: string | null;
  from: string | null;
  to: string[];
}

/**
 * The ids whose subject or sender (recipients for sent mail) contain every
 * word of `query`, case- and accent-insensitively. An empty query matches all.
 */
export function searchMail(items: Searchable[], query: string): Set<string> {
  const words = fold(query).split(/\s+/).filter((w) => w.length > 0);
  const out = new Set<string>();
  for (const item of items) {
    const hay = fold([item.subject ?? '', item.from ?? '', ...item.to].join(' '));
    if (words.every((w) => hay.includes(w))) out.add(item.id);
  }
  return out;
}

function fold(text: string): string {
  return text.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();
}

/** Recipients typed as `a@x.com, B <b@y.org>; c@z.net` (commas, semicolons or new lines). */
export function parseRecipients(text: string): string[] {
  return text
    .split(/[,;\n]/)
    .map((r) => r.trim())
    .filter((r) => r.length > 0);
}

/** The API's limits on a mail, checked before sending so the person reads them in words. */
export const SEND_LIMITS = { recipients: 50, subjectChars: 998, bodyBytes: 512 * 1024 } as const;

/** What is wrong with a mail before it is sent (empty when nothing is). */
export function checkMail(mail: { to: string[]; cc?: string[]; subject: string; text: string }): string[] {
  const problems: string[] = [];
  const everyone = [...mail.to, ...(mail.cc ?? [])];
  if (mail.to.length === 0) problems.push('Add at least one recipient.');
  if (everyone.length > SEND_LIMITS.recipients)
    problems.push(`A mail goes to at most ${SEND_LIMITS.recipients} recipients, To and Cc together; this one has ${everyone.length}.`);
  for (const r of everyone) {
    const address = /<([^<>]*)>\s*$/.exec(r)?.[1] ?? r;
    if (!/^[^\s@<>]+@[^\s@<>[\]]+\.[^\s@<>[\]]+$/.test(address)) problems.push(`"${r}" is not an email address (name@example.com).`);
  }
  if (/[\u0000-\u001f\u007f]/.test(mail.subject)) problems.push('The subject cannot hold line breaks or control characters.');
  if ([...mail.subject].length > SEND_LIMITS.subjectChars) problems.push(`The subject is longer than ${SEND_LIMITS.subjectChars} characters.`);
  if (new TextEncoder().encode(mail.text).length > SEND_LIMITS.bodyBytes) problems.push('The text is longer than 512 KiB.');
  return problems;
}

/** A reply's subject: `Re: ` once. */
export function replySubject(subject: string | null): string {
  const s = (subject ?? '').trim();
  return /^re:/i.test(s) ? s : `Re: ${s}`;
}

/** A reply's text: the original quoted under a line naming its sender. */
export function replyText(from: string | null, when: string, text: string): string {
  const quoted = text
    .split('\n')
    .map((l) => `> ${l}`)
    .join('\n');
  return `\n\nOn ${when}, ${from ?? 'someone'} wrote:\n${quoted}`;
}
