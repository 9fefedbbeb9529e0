// The parts of a mailbox both kinds of session share: opening a list of
// messages (timed with the User Timing API), the list, and the reader with
// its attachments.
import type { AddressSecrets, AttachmentInfo, Message, OpenedMessage } from '@sealpost/sdk';
import { openMessage } from '@sealpost/sdk';
import type { ComponentChildren } from 'preact';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';

import { formatBytes, formatWhen } from './logic';
import { safeMailDocument } from './sanitize';

/** The mark set when a page of mail has arrived, before it is opened and shown. */
export const LIST_FETCHED = 'sealpost:list-fetched';

/**
 * The messages opened with `secrets`. When `fetchedMark` names a
 * `performance.mark` set as a page of mail arrived, the time from it to the
 * list being in the document is recorded as the measure `sealpost:list`
 * (`detail`: how many messages, and the milliseconds spent decrypting).
 */
export function useOpened(messages: Message[], secrets: AddressSecrets | null, fetchedMark: string | null): Map<string, OpenedMessage | Error> {
  const decryptMs = useRef(0);
  const opened = useMemo(() => {
    const started = performance.now();
    const out = new Map<string, OpenedMessage | Error>();
    for (const m of messages) {
      try {
        if (secrets === null) throw new Error('no keys yet');
        out.set(m.id, openMessage(secrets, m));
      } catch (e) {
        out.set(m.id, e instanceof Error ? e : new Error(String(e)));
      }
    }
    decryptMs.current = performance.now() - started;
    return out;
  }, [messages, secrets]);
  useLayoutEffect(() => {
    if (fetchedMark === null || performance.getEntriesByName(fetchedMark, 'mark').length === 0) return;
    if (messages.length === 0) {
      // An empty page: nothing to time, and no stale mark for a later list.
      performance.clearMarks(fetchedMark);
      return;
    }
    const detail = { messages: messages.length, decryptMs: decryptMs.current };
    performance.measure('sealpost:list', { start: fetchedMark, end: performance.now(), detail });
    performance.clearMarks(fetchedMark);
  }, [opened, fetchedMark]);
  return opened;
}

export function MessageList({
  messages,
  opened,
  openId,
  onOpen,
  showAddress,
}: {
  messages: Message[];
  opened: Map<string, OpenedMessage | Error>;
  openId: string | null;
  onOpen: (m: Message) => void;
  showAddress?: (m: Message) => string | null;
}) {
  return (
    <ul class="list">
      {messages.map((m) => {
        const o = opened.get(m.id);
        const ok = o !== undefined && !(o instanceof Error);
        const to = showAddress?.(m) ?? null;
        return (
          <li key={m.id} class={`${m.read ? '' : 'unread'} ${m.id === openId ? 'selected' : ''}`}>
            <button type="button" class="link" onClick={() => onOpen(m)}>
              <span class="from">
                {m.starred && (
                  <span class="star" title="Starred">
                    ★{' '}
                  </span>
                )}
                {ok ? (m.outgoing ? `To ${o.to.join(', ') || '—'}` : (o.from ?? '—')) : 'Unreadable'}
              </span>
              <span class="subject">{ok ? (o.subject ?? '(no subject)') : (o?.message ?? '')}</span>
              <span class="when">
                {formatWhen(m.receivedAt)}
                {to !== null && <> · {to}</>}
              </span>
              {ok && o.codes.length > 0 && <span class="badge">{o.codes[0]}</span>}
            </button>
          </li>
        );
      })}
    </ul>
  );
}

function Copy({ text }: { text: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      class="small"
      onClick={() => {
        void navigator.clipboard.writeText(text).then(() => {
          setDone(true);
          setTimeout(() => setDone(false), 1500);
        });
      }}
    >
      {done ? 'Copied' : 'Copy'}
    </button>
  );
}

function Attachments({ list, onSave }: { list: AttachmentInfo[]; onSave: ((a: AttachmentInfo) => Promise<string>) | undefined }) {
  const [state, setState] = useState<Record<number, string>>({});
  return (
    <div class="attachments">
      <h3>Attachments</h3>
      <ul>
        {list.map((a) => (
          <li key={a.index}>
            <span class="file">{a.filename ?? `attachment-${a.index + 1}`}</span>{' '}
            <span class="muted">
              {a.contentType || 'unknown type'}, {formatBytes(a.sizeBytes)}
            </span>{' '}
            {!a.stored ? (
              <span class="muted">(over 20 MB: not kept)</span>
            ) : onSave !== undefined ? (
              <button
                type="button"
                class="small"
                disabled={state[a.index] === 'busy'}
                aria-label={`Save ${a.filename ?? `attachment ${a.index + 1}`}`}
                onClick={() => {
                  setState((s) => ({ ...s, [a.index]: 'busy' }));
                  onSave(a).then(
                    (name) => setState((s) => ({ ...s, [a.index]: `Saved as ${name}` })),
                    (e: unknown) => setState((s) => ({ ...s, [a.index]: e instanceof Error ? e.message : String(e) })),
                  );
                }}
              >
                {state[a.index] === 'busy' ? 'Opening…' : 'Save'}
              </button>
            ) : null}
            {state[a.index] !== undefined && state[a.index] !== 'busy' && (
              <span class="muted" role="status">
                {' '}
                {state[a.index]}
              </span>
            )}
          </li>
        ))}
      </ul>
    </div>
  );
}

export function Reader({
  message,
  opened,
  onRead,
  onDelete,
  onSave,
  actions,
}: {
  message: Message;
  opened: OpenedMessage | Error | undefined;
  onRead: (read: boolean) => Promise<void>;
  onDelete?: () => Promise<void>;
  onSave?: (a: AttachmentInfo) => Promise<string>;
  /** More buttons for the row of actions (star, reply, move). */
  actions?: ComponentChildren;
}) {
  const [view, setView] = useState<'text' | 'html'>('text');
  useEffect(() => setView('text'), [message.id]);
  if (opened === undefined) return null;
  if (opened instanceof Error) return <p class="error">This message cannot be opened: {opened.message}</p>;
  const html = opened.html !== null ? safeMailDocument(opened.html) : null;
  return (
    <article>
      <h2>{opened.subject ?? '(no subject)'}</h2>
      <dl class="headers">
        <dt>From</dt>
        <dd>{opened.from ?? '—'}</dd>
        {opened.to.length > 0 && (
          <>
            <dt>To</dt>
            <dd>{opened.to.join(', ')}</dd>
          </>
        )}
        {opened.cc.length > 0 && (
          <>
            <dt>Cc</dt>
            <dd>{opened.cc.join(', ')}</dd>
          </>
        )}
        <dt>{message.outgoing ? 'Sent' : 'Received'}</dt>
        <dd>{new Date(message.receivedAt).toLocaleString()}</dd>
        <dt>Size</dt>
        <dd>{formatBytes(message.sizeBytes)}</dd>
      </dl>
      {(opened.codes.length > 0 || opened.links.length > 0) && (
        <div class="found">
          {opened.codes.map((c) => (
            <div class="code" key={`c${c}`}>
              <code>{c}</code> <Copy text={c} />
            </div>
          ))}
          {opened.links.map((l) => (
            <div class="found-link" key={`l${l}`}>
              <span class="url" title={l}>
                {l}
              </span>{' '}
              <Copy text={l} />
            </div>
          ))}
        </div>
      )}
      <div class="row">
        <button type="button" onClick={() => void onRead(!message.read)}>
          Mark {message.read ? 'unread' : 'read'}
        </button>
        {actions}
        {onDelete !== undefined && (
          <button type="button" class="danger" onClick={() => void onDelete()}>
            {message.folder === 'trash' ? 'Delete for good' : 'Delete'}
          </button>
        )}
        {html !== null && (
          <button type="button" onClick={() => setView(view === 'text' ? 'html' : 'text')}>
            Show {view === 'text' ? 'HTML' : 'text'}
          </button>
        )}
      </div>
      {opened.attachments.length > 0 && <Attachments key={message.id} list={opened.attachments} onSave={onSave} />}
      {view === 'html' && html !== null ? (
        <>
          {html.blocked > 0 && <p class="muted">{html.blocked} remote image(s) blocked.</p>}
          <iframe
            class="mail-html"
            title="Message (HTML)"
            sandbox="allow-popups allow-popups-to-escape-sandbox"
            referrerpolicy="no-referrer"
            srcDoc={html.doc}
          />
        </>
      ) : (
        <pre class="body">{opened.bodyText || '(no body)'}</pre>
      )}
    </article>
  );
}
