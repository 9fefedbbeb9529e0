// Pure logic of the support area and the abuse report form: the choices in
// words, and the abuse report body checked as the service checks it.

/** Ticket categories (the header is sealed: the service never reads them). */
export const TICKET_CATEGORIES: ReadonlyArray<{ id: string; words: string }> = [
  { id: 'technical', words: 'Something does not work' },
  { id: 'billing', words: 'Plan, billing or payments' },
  { id: 'account', words: 'My account or my phrase' },
  { id: 'abuse', words: 'Abuse or security' },
  { id: 'other', words: 'Something else' },
];

export const TICKET_PRIORITIES: ReadonlyArray<{ id: string; words: string }> = [
  { id: 'low', words: 'Low' },
  { id: 'normal', words: 'Normal' },
  { id: 'high', words: 'High' },
  { id: 'urgent', words: 'Urgent' },
];

/** A category or priority id in words; one another client chose, as itself. */
export function choiceWords(list: ReadonlyArray<{ id: string; words: string }>, id: string): string {
  return list.find((c) => c.id === id)?.words ?? id;
}

/** Who wrote a message, as the account reads it. */
export const authorWords = (author: string): string => (author === 'staff' ? 'Support' : author === 'account' ? 'You' : author);

/** What the page says when support's key was rotated while a request was sealed, and it sealed it again. */
export const KEY_CHANGED_WORDS =
  "The support team's key changed while this was being sealed: the page fetched the new key, sealed it again to it and sent it.";

/** What the area says while support takes no requests (no support key, or switched off). */
export const UNAVAILABLE_WORDS =
  'In-app support is unavailable on this service right now: new requests and replies cannot be sent. Your requests stay listed here; try again later.';

export const ABUSE_REASONS: ReadonlyArray<{ id: string; words: string }> = [
  { id: 'spam', words: 'Spam' },
  { id: 'phishing', words: 'Phishing (someone posing as a bank, shop or service)' },
  { id: 'malware', words: 'Malware or a harmful attachment' },
  { id: 'harassment', words: 'Harassment or threats' },
  { id: 'illegal_content', words: 'Illegal content' },
  { id: 'impersonation', words: 'Impersonation of a person or organisation' },
  { id: 'other', words: 'Something else' },
];

export const ABUSE_DETAILS_MAX = 4000;
export const ABUSE_CONTACT_MAX = 320;

/** The abuse form as typed. */
export interface AbuseForm {
  /** What is reported: an address of this service, or a message id. */
  target: 'address' | 'message';
  value: string;
  reason: string;
  details: string;
  contact: string;
}

/** `POST /abuse/reports`'s body. */
export interface AbuseReportBody {
  emailAddress?: string;
  messageId?: string;
  reason: string;
  details?: string;
  contact?: string;
}

/**
 * The report body from the form, trimmed, with exactly one of
 * `emailAddress` and `messageId`, empty optional fields left out; or what
 * to fix, in words.
 */
export function abuseReportBody(form: AbuseForm): { body: AbuseReportBody } | { problem: string } {
  const value = form.value.trim();
  if (value === '') return { problem: form.target === 'address' ? 'Type the address you report.' : 'Type the id of the message you report.' };
  if (form.target === 'address' && !/^[^\s@]+@[^\s@]+$/.test(value)) return { problem: `${value} is not an email address.` };
  if (!ABUSE_REASONS.some((r) => r.id === form.reason)) return { problem: 'Choose a reason.' };
  const details = form.details.trim();
  const contact = form.contact.trim();
  // The service counts characters (Unicode scalar values).
  if ([...details].length > ABUSE_DETAILS_MAX) return { problem: `The details are longer than ${ABUSE_DETAILS_MAX} characters.` };
  if ([...contact].length > ABUSE_CONTACT_MAX) return { problem: `The contact is longer than ${ABUSE_CONTACT_MAX} characters.` };
  const body: AbuseReportBody = form.target === 'address' ? { emailAddress: value, reason: form.reason } : { messageId: value, reason: form.reason };
  if (details !== '') body.details = details;
  if (contact !== '') body.contact = contact;
  return { body };
}
