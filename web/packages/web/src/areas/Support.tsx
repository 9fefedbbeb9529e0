// The support area: sealed requests (tickets) as `sealpost support` makes
// them. Each header and message is sealed in this page twice, to the
// support team's key and to the account's vault key, and opened here with
// the vault key; the service keeps both copies and reads neither. A new
// request first binds the vault key to the current support key (`POST
// /support/key`), so staff can check the key is the account's. A key
// rotated meanwhile (409 `staff_key_changed`) is fetched again and the
// request sealed again, once, and the page says so. Also the abuse report
// form (no account needed; the welcome page has it too).
import {
  openTicketHeader,
  openTicketMessage,
  type AccountKeys,
  type SupportOverview,
  type Ticket,
  type TicketDetail,
  type TicketHeader,
} from '@sealpost/sdk';
import { useCallback, useEffect, useState } from 'preact/hooks';

import { AbuseReportForm } from '../AbuseReport';
import type { Unlocked } from '../session';
import { authorWords, choiceWords, KEY_CHANGED_WORDS, TICKET_CATEGORIES, TICKET_PRIORITIES, UNAVAILABLE_WORDS } from '../supportLogic';
import { describe } from '../util';
import { Feedback, useArea } from './shared';

/** How often an open request is read again for support's answer. */
const FOLLOW_MS = 10_000;

const when = (at: string | null | undefined): string => (at == null ? '—' : new Date(at).toLocaleString());

function headerOf(keys: AccountKeys, ticket: Ticket): TicketHeader | null {
  try {
    return openTicketHeader(keys.vaultSecret(), ticket.id, ticket.header);
  } catch {
    return null;
  }
}

export function Support({ session }: { session: Unlocked }) {
  const { client, keys } = session;
  const [overview, setOverview] = useState<SupportOverview | null>(null);
  const [shown, setShown] = useState<string | null>(null);
  const [detail, setDetail] = useState<TicketDetail | null>(null);

  const { error, setError, notice, busy, refresh, act } = useArea(async () => {
    setOverview(await client.support());
    if (shown !== null) setDetail(await client.getTicket(shown));
  }, client);

  // The request shown is read when chosen, then followed for support's answer.
  const follow = useCallback(async () => {
    if (shown === null) return;
    try {
      setDetail(await client.getTicket(shown));
    } catch (e) {
      setError(describe(e));
    }
  }, [client, shown, setError]);
  useEffect(() => {
    setDetail(null);
    if (shown === null) return;
    void follow();
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') void follow();
    }, FOLLOW_MS);
    return () => clearInterval(timer);
  }, [shown, follow]);

  const available = overview !== null && overview.available && overview.staffKey != null;
  const tickets = overview?.tickets ?? [];
  const openCount = tickets.filter((t) => t.status === 'open').length;

  return (
    <main class="area support">
      <h1>Support</h1>
      <p class="muted">
        Ask the support team for help. Your request is sealed in this page twice: to the support team's key and to your own key. The service stores
        it and can read neither copy; your recovery phrase opens your requests again anywhere.
      </p>
      <Feedback error={error} notice={notice} />
      {overview !== null && !available && (
        <p class="pause" data-testid="support-unavailable">
          {UNAVAILABLE_WORDS}
        </p>
      )}
      {available && (
        <NewRequest
          busy={busy}
          full={openCount >= 5}
          onSend={(header, text, reset) =>
            act(async () => {
              const { ticket, keyChanged } = await client.openTicket(header, text, keys);
              reset();
              setShown(ticket.id);
              return `${keyChanged ? `${KEY_CHANGED_WORDS} ` : ''}Request sent. Support's answer appears here, under Your requests.`;
            })
          }
        />
      )}
      <h2>Your requests</h2>
      {overview !== null && tickets.length === 0 && <p class="muted">No requests yet.</p>}
      <ul class="ticket-list">
        {tickets.map((t) => {
          const header = headerOf(keys, t);
          const open = shown === t.id;
          return (
            <li key={t.id} class={`ticket${open ? ' current' : ''}`} data-testid={`ticket-${t.id}`}>
              <div class="device-head">
                <button type="button" class="link" aria-expanded={open} onClick={() => setShown(open ? null : t.id)}>
                  {header?.subject || (header === null ? '(does not open with this phrase)' : '(no subject)')}
                </button>
                <span class={`status ${t.status === 'open' ? 'online' : ''}`}>{t.status === 'open' ? 'open' : 'closed'}</span>
                {t.unread && <span class="badge">new answer</span>}
              </div>
              <p class="muted small">
                {header !== null && `${choiceWords(TICKET_CATEGORIES, header.category)} · priority ${choiceWords(TICKET_PRIORITIES, header.priority).toLowerCase()} · `}
                last message by {authorWords(t.lastAuthor).toLowerCase()} · {when(t.updatedAt)}
              </p>
              {open && detail !== null && detail.ticket.id === t.id && (
                <Thread
                  keys={keys}
                  detail={detail}
                  available={available}
                  busy={busy}
                  onReply={(text, reset) =>
                    act(async () => {
                      const { keyChanged } = await client.replyToTicket(t.id, text, keys);
                      reset();
                      return `${keyChanged ? `${KEY_CHANGED_WORDS} ` : ''}Reply sent.`;
                    })
                  }
                  onClose={() =>
                    act(async () => {
                      await client.closeTicket(t.id);
                      return 'Request closed. Reopen it if you need more help with it.';
                    })
                  }
                  onReopen={() =>
                    act(async () => {
                      await client.reopenTicket(t.id);
                      return 'Request open again.';
                    })
                  }
                />
              )}
            </li>
          );
        })}
      </ul>
      <p class="muted small">
        <button type="button" class="link" onClick={() => void refresh()}>
          Check for answers now
        </button>
      </p>
      <AbuseReportForm client={client} />
    </main>
  );
}

function NewRequest({ busy, full, onSend }: { busy: boolean; full: boolean; onSend: (header: TicketHeader, text: string, reset: () => void) => Promise<void> }) {
  const [subject, setSubject] = useState('');
  const [category, setCategory] = useState('technical');
  const [priority, setPriority] = useState('normal');
  const [text, setText] = useState('');
  const value = (e: Event) => (e.target as HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement).value;
  const reset = () => {
    setSubject('');
    setText('');
    setPriority('normal');
  };
  return (
    <form
      class="approve"
      aria-labelledby="new-request-title"
      onSubmit={(e) => {
        e.preventDefault();
        void onSend({ category, priority, subject: subject.trim() }, text, reset);
      }}
    >
      <h2 id="new-request-title">New request</h2>
      {full && <p class="muted">Five requests are open: close one before opening another.</p>}
      <label>
        Subject
        <input required maxLength={200} value={subject} onInput={(e) => setSubject(value(e))} />
      </label>
      <div class="grid-form">
        <label>
          What it is about
          <select value={category} onChange={(e) => setCategory(value(e))}>
            {TICKET_CATEGORIES.map((c) => (
              <option key={c.id} value={c.id}>
                {c.words}
              </option>
            ))}
          </select>
        </label>
        <label>
          Priority
          <select value={priority} onChange={(e) => setPriority(value(e))}>
            {TICKET_PRIORITIES.map((p) => (
              <option key={p.id} value={p.id}>
                {p.words}
              </option>
            ))}
          </select>
        </label>
      </div>
      <label>
        Your message
        <textarea required rows={5} value={text} onInput={(e) => setText(value(e))} />
      </label>
      <div class="row">
        <button type="submit" class="primary" disabled={busy || full || subject.trim() === '' || text.trim() === ''}>
          {busy ? 'Sealing and sending…' : 'Send request'}
        </button>
      </div>
    </form>
  );
}

function Thread({
  keys,
  detail,
  available,
  busy,
  onReply,
  onClose,
  onReopen,
}: {
  keys: AccountKeys;
  detail: TicketDetail;
  available: boolean;
  busy: boolean;
  onReply: (text: string, reset: () => void) => Promise<void>;
  onClose: () => Promise<void>;
  onReopen: () => Promise<void>;
}) {
  const [text, setText] = useState('');
  const { ticket, messages } = detail;
  const header = headerOf(keys, ticket);
  const open = ticket.status === 'open';
  const textOf = (id: string, box: unknown): string | null => {
    try {
      return openTicketMessage(keys.vaultSecret(), ticket.id, id, box);
    } catch {
      return null;
    }
  };
  return (
    <section class="thread" aria-label="The request's messages" data-testid="ticket-thread">
      {header !== null && (
        <dl class="facts small">
          <dt>About</dt>
          <dd>{choiceWords(TICKET_CATEGORIES, header.category)}</dd>
          <dt>Priority</dt>
          <dd>{choiceWords(TICKET_PRIORITIES, header.priority)}</dd>
          <dt>Opened</dt>
          <dd>{when(ticket.createdAt)}</dd>
          {ticket.closedAt != null && (
            <>
              <dt>Closed</dt>
              <dd>{when(ticket.closedAt)}</dd>
            </>
          )}
        </dl>
      )}
      <ol class="messages">
        {messages.map((m) => {
          const body = textOf(m.id, m.box);
          return (
            <li key={m.id} class={`message from-${m.author}`} data-testid="ticket-message">
              <p class="small">
                <strong>{authorWords(m.author)}</strong> <span class="muted">{when(m.at)}</span>
              </p>
              {body !== null ? <p class="message-text">{body}</p> : <p class="muted">(this message does not open with this phrase)</p>}
            </li>
          );
        })}
      </ol>
      {open ? (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void onReply(text, () => setText(''));
          }}
        >
          <label>
            Your reply
            <textarea rows={3} value={text} disabled={!available} onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} />
          </label>
          <div class="row">
            <button type="submit" class="primary" disabled={busy || !available || text.trim() === ''}>
              Send reply
            </button>
            <button type="button" disabled={busy} onClick={() => void onClose()}>
              Close request
            </button>
          </div>
        </form>
      ) : (
        <div class="row">
          <span class="muted">This request is closed.</span>
          <button type="button" disabled={busy} onClick={() => void onReopen()}>
            Reopen request
          </button>
        </div>
      )}
    </section>
  );
}
