// The mail area: addresses, their mail, opened in the page.
import {
  accountSecrets,
  ApiError,
  openLabel,
  sealLabel,
  sharedSecrets,
  type Address,
  type Membership,
  type Domain,
  type FolderCounts,
  type Message,
  type OpenedMessage,
  type Usage,
} from '@sealpost/sdk';
import { Fragment } from 'preact';
import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';

import { saveAttachment } from '../attachments';
import { mergeMessages } from '../logic';
import { LIST_FETCHED, MessageList, Reader, useOpened } from '../mail';
import { checkMail, FOLDERS, moveTargets, parseRecipients, replySubject, replyText, searchMail, type FolderName } from '../mailLogic';
import { describe } from '../util';
import type { Unlocked } from '../session';

interface Counts {
  total: number;
  unread: number;
}

export function Mailbox({ session }: { session: Unlocked }) {
  const { client, keys } = session;
  const [addresses, setAddresses] = useState<Address[]>([]);
  /** The teams this account is in: their addresses are listed as shared, their grants open the mail. */
  const [memberships, setMemberships] = useState<Membership[]>([]);
  const [counts, setCounts] = useState<Record<string, Counts>>({});
  const [domains, setDomains] = useState<Domain[]>([]);
  const [usage, setUsage] = useState<Usage | null>(null);
  const [selected, setSelected] = useState<string | null>(null);
  const [messages, setMessages] = useState<Message[]>([]);
  const [openId, setOpenId] = useState<string | null>(null);
  const [error, setError] = useState('');
  const [live, setLive] = useState(false);
  const [folder, setFolder] = useState<FolderName>('inbox');
  const [folderCounts, setFolderCounts] = useState<FolderCounts | null>(null);
  const [reload, setReload] = useState(0);
  const [search, setSearch] = useState('');
  const [draft, setDraft] = useState<Draft | null>(null);
  const [notice, setNotice] = useState('');
  const readerRef = useRef<HTMLElement>(null);
  // A focus to give once the next render is in the page (the opened message,
  // the compose form): given in that commit, so nothing can see the new
  // content before the focus is on it, as a timer could let it.
  const focusAfterRender = useRef<(() => void) | null>(null);
  const [, setFocusRequest] = useState(0);
  useLayoutEffect(() => {
    const give = focusAfterRender.current;
    focusAfterRender.current = null;
    give?.();
  });
  const focusSoon = (give: () => void) => {
    focusAfterRender.current = give;
    // A render even when the state set beside it is unchanged (the open message opened again).
    setFocusRequest((n) => n + 1);
  };

  const refreshCounts = useCallback(
    async (list: Array<{ id: string }>) => {
      const entries = await Promise.all(
        list.map(async (a) => {
          const f = await client.folderCounts(a.id);
          return [a.id, { total: f.inbox.total, unread: f.inbox.unread }] as const;
        }),
      );
      // Merged: a refresh of the own addresses keeps the shared ones' counts.
      setCounts((prev) => ({ ...prev, ...Object.fromEntries(entries) }));
    },
    [client],
  );

  // The folder counts of the selected address, or of every address.
  useEffect(() => {
    client.folderCounts(selected ?? undefined).then(setFolderCounts, (e: unknown) => setError(describe(e)));
  }, [client, selected, reload, messages.length]);

  const refresh = useCallback(async () => {
    try {
      const [list, teams] = await Promise.all([client.listAddresses(), client.memberships()]);
      setAddresses(list);
      setMemberships(teams);
      setUsage(await client.usage());
      await refreshCounts([...list, ...sharedOf(teams)]);
    } catch (e) {
      setError(describe(e));
    }
  }, [client, refreshCounts]);

  useEffect(() => {
    void refresh();
    client.domains().then(setDomains, (e: unknown) => setError(describe(e)));
  }, [client, refresh]);

  // The folder's mail (of the selected address, or of all): the newest page,
  // then, for one address's inbox, a long-poll for what arrives.
  useEffect(() => {
    // The list shown stays until the new one arrives: a message in both keeps its
    // element (and a keyboard user's focus).
    const stop = new AbortController();
    const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
    void (async () => {
      try {
        const page =
          selected !== null && folder === 'inbox'
            ? await client.listMessages(selected, { limit: 50 })
            : await client.listMail({ folder, ...(selected !== null ? { addressId: selected } : {}), limit: 50 });
        if (!stop.signal.aborted) {
          // Timed (the benchmark's `sealpost:list`) for one address's inbox, as before folders.
          if (selected !== null && folder === 'inbox') performance.mark(LIST_FETCHED);
          // The address's list holds every folder but the trash: keep this folder's.
          setMessages(page.messages.filter((m) => m.folder === folder));
        }
      } catch (e) {
        if (!stop.signal.aborted) setMessages([]);
        setError(describe(e));
      }
      if (selected === null || folder !== 'inbox') return;
      let after: string | undefined;
      while (!stop.signal.aborted) {
        try {
          setLive(true);
          const answer = await client.waitForMessages(selected, { after, timeoutSeconds: 30, signal: stop.signal });
          if (answer !== null) {
            after = answer.cursor;
            const arrived = answer.messages.filter((m) => m.folder === 'inbox');
            if (arrived.length > 0) {
              setMessages((prev) => mergeMessages(prev, arrived));
              void refreshCounts(addresses.length > 0 ? addresses : await client.listAddresses());
            }
          }
        } catch (e) {
          if (stop.signal.aborted) break;
          setLive(false);
          setError(describe(e));
          await pause(e instanceof ApiError && e.retryAfter !== undefined ? e.retryAfter * 1000 : 5000);
        }
      }
      setLive(false);
    })();
    return () => stop.abort();
    // Only the address, the folder and the client restart the wait; counts use the latest list.
  }, [client, selected, folder, reload]);

  // A message opened by id (a Sent copy just made) shows once its folder has it.
  useEffect(() => {
    if (openId !== null && messages.length > 0 && !messages.some((m) => m.id === openId)) setOpenId(null);
  }, [messages]);

  // The account's own keys, and for shared addresses the keys their owners granted.
  const secrets = useMemo(() => sharedSecrets(keys, memberships, accountSecrets(keys)), [keys, memberships]);
  const shared = useMemo(() => sharedOf(memberships), [memberships]);
  const opened = useOpened(messages, secrets, LIST_FETCHED);

  const label = (a: Address): string => {
    if (a.meta === null) return '';
    try {
      return openLabel(keys, a.id, a.meta);
    } catch {
      return '';
    }
  };

  const act = async (work: () => Promise<unknown>) => {
    setError('');
    try {
      await work();
    } catch (e) {
      setError(describe(e));
    }
  };

  const current = messages.find((m) => m.id === openId) ?? null;
  const currentOpened = current !== null ? opened.get(current.id) : undefined;

  // Search: the subjects and senders (recipients of sent mail) already opened in the page.
  const shown = useMemo(() => {
    if (search.trim() === '') return messages;
    const items = messages.map((m) => {
      const o = opened.get(m.id);
      return o === undefined || o instanceof Error ? { id: m.id, subject: null, from: null, to: [] } : { id: m.id, subject: o.subject, from: o.from, to: o.to };
    });
    const hits = searchMail(items, search);
    return messages.filter((m) => hits.has(m.id));
  }, [messages, opened, search]);

  const emailOf = (id: string): string | null => addresses.find((a) => a.id === id)?.email ?? shared.find((a) => a.id === id)?.email ?? null;

  const openMail = (m: Message) => {
    setOpenId(m.id);
    // The reader takes the focus: keyboard and screen-reader users land on it, a phone scrolls to it.
    focusSoon(() => readerRef.current?.focus());
    if (!m.read) {
      void act(async () => {
        await client.markRead(m.id, true);
        setMessages((prev) => prev.map((x) => (x.id === m.id ? { ...x, read: true } : x)));
        await refreshCounts(addresses);
      });
    }
  };

  const compose = (start: Partial<Draft> = {}) => {
    const from = start.from ?? emailOf(selected ?? '') ?? addresses[0]?.email ?? '';
    setNotice('');
    setDraft({ from, to: '', cc: '', subject: '', text: '', ...start });
    // The form takes the focus at its first empty field (To; the text for a reply).
    focusSoon(() => readerRef.current?.querySelector<HTMLElement>(start.to ? 'textarea' : 'input')?.focus());
  };

  return (
    <div class="mailbox">
      <aside class="addresses">
        <h2>Addresses</h2>
        <button type="button" class="primary compose-button" disabled={addresses.length === 0} onClick={() => compose()}>
          Write a mail
        </button>
        <ul>
          <li class={selected === null ? 'selected' : ''}>
            <button type="button" class="link" aria-pressed={selected === null} onClick={() => setSelected(null)}>
              <span class="all">All addresses</span>
            </button>
          </li>
          {addresses.map((a) => (
            <li key={a.id} class={a.id === selected ? 'selected' : ''}>
              <button type="button" class="link" aria-pressed={a.id === selected} onClick={() => setSelected(a.id)}>
                <span class="email">{a.email}</span>
                {label(a) && <span class="label">{label(a)}</span>}
                <span class="count">
                  {counts[a.id]?.unread ?? 0} unread / {counts[a.id]?.total ?? 0}
                </span>
              </button>
              <button
                type="button"
                class="danger small"
                title="Delete this address and its mail"
                onClick={() => {
                  if (!window.confirm(`Delete ${a.email} and all its mail? It is never issued again.`)) return;
                  void act(async () => {
                    await client.deleteAddress(a.id);
                    if (selected === a.id) setSelected(null);
                    await refresh();
                  });
                }}
              >
                Delete
              </button>
            </li>
          ))}
        </ul>
        {shared.length > 0 && (
          <>
            <h3 class="small">Shared with you</h3>
            <ul data-testid="shared-addresses">
              {shared.map((a) => (
                <li key={a.id} class={a.id === selected ? 'selected' : ''}>
                  <button type="button" class="link" aria-pressed={a.id === selected} onClick={() => setSelected(a.id)}>
                    <span class="email">{a.email}</span>
                    <span class="label">{a.access === 'send' ? 'shared: read and send' : 'shared: read'}</span>
                    <span class="count">
                      {counts[a.id]?.unread ?? 0} unread / {counts[a.id]?.total ?? 0}
                    </span>
                  </button>
                </li>
              ))}
            </ul>
          </>
        )}
        <NewAddressForm
          domains={domains}
          onCreate={(fields) =>
            act(async () => {
              const created = await client.createAddress({
                ...(fields.prefix !== undefined ? { prefix: fields.prefix } : {}),
                ...(fields.domain !== undefined ? { domain: fields.domain } : {}),
              });
              if (fields.label) await client.updateAddress(created.id, { meta: sealLabel(keys, created.id, fields.label) });
              await refresh();
              setSelected(created.id);
              setFolder('inbox');
            })
          }
        />
        {usage !== null && <UsagePanel usage={usage} />}
      </aside>

      <section class="messages">
        <h2>
          Mail {selected !== null && folder === 'inbox' && <span class={live ? 'live on' : 'live'}>{live ? 'live' : 'connecting'}</span>}
        </h2>
        <nav class="folders" aria-label="Folders">
          {FOLDERS.map((f) => (
            <button
              key={f}
              type="button"
              class="small"
              data-testid={`folder-${f}`}
              aria-pressed={f === folder}
              onClick={() => {
                setFolder(f);
                setOpenId(null);
              }}
            >
              {FOLDER_TITLES[f]}
              {folderCounts !== null && <span class="count"> {folderCounts[f].total}</span>}
            </button>
          ))}
        </nav>
        <div class="mail-tools">
          <input
            type="search"
            aria-label="Search subjects and senders"
            placeholder="Search subjects and senders"
            value={search}
            onInput={(e) => setSearch((e.target as HTMLInputElement).value)}
          />
          {folder === 'trash' && messages.length > 0 && (
            <button
              type="button"
              class="danger small"
              onClick={() => {
                if (!window.confirm('Delete every message in the trash of all your addresses for good?')) return;
                void act(async () => {
                  const n = await client.emptyTrash();
                  setNotice(`Trash emptied: ${n} message${n === 1 ? '' : 's'} deleted for good.`);
                  setOpenId(null);
                  setReload((r) => r + 1);
                });
              }}
            >
              Empty trash
            </button>
          )}
        </div>
        {notice && (
          <p class="notice" role="status">
            {notice}
          </p>
        )}
        {error && (
          <p class="error" role="alert">
            {error}{' '}
            <button type="button" class="small" onClick={() => setError('')}>
              Dismiss
            </button>
          </p>
        )}
        {addresses.length === 0 && shared.length === 0 ? (
          <p class="muted">Create an address to receive and send mail.</p>
        ) : messages.length === 0 ? (
          <p class="muted">{folder === 'inbox' ? 'No mail yet. New mail shows up here as it arrives.' : `Nothing in ${FOLDER_TITLES[folder]}.`}</p>
        ) : shown.length === 0 ? (
          <p class="muted">No mail matches “{search.trim()}”.</p>
        ) : (
          <MessageList
            messages={shown}
            opened={opened}
            openId={openId}
            onOpen={openMail}
            {...(selected === null ? { showAddress: (m: Message) => emailOf(m.addressId) } : {})}
          />
        )}
      </section>

      <section class="reader" ref={readerRef} tabIndex={-1} aria-label="Message">
        {draft !== null ? (
          <Compose
            draft={draft}
            addresses={addresses}
            onChange={setDraft}
            onCancel={() => setDraft(null)}
            onSend={async (d) => {
              const from = addresses.find((a) => a.email === d.from);
              const sent = await client.sendMail({
                from: d.from,
                to: parseRecipients(d.to),
                cc: parseRecipients(d.cc),
                subject: d.subject,
                text: d.text,
              });
              setDraft(null);
              setNotice(sent.messageId !== null ? 'Sent. The copy is in Sent.' : 'Sent. No copy was kept: the address has no key.');
              if (from !== undefined) setSelected(from.id);
              setFolder('sent');
              setOpenId(sent.messageId);
              setReload((r) => r + 1);
            }}
          />
        ) : current !== null && (
          <Reader
            message={current}
            opened={currentOpened}
            actions={
              <MessageActions
                message={current}
                opened={currentOpened}
                onStar={(starred) =>
                  act(async () => {
                    await client.starMessage(current.id, starred);
                    setMessages((prev) => prev.map((x) => (x.id === current.id ? { ...x, starred } : x)));
                  })
                }
                onMove={(to) =>
                  act(async () => {
                    await client.moveMessage(current.id, to);
                    setMessages((prev) => prev.filter((x) => x.id !== current.id));
                    setOpenId(null);
                    setNotice(`Moved to ${FOLDER_TITLES[to]}.`);
                    await refreshCounts(addresses);
                  })
                }
                onReply={() => {
                  const o = currentOpened;
                  if (o === undefined || o instanceof Error) return;
                  compose({
                    from: emailOf(current.addressId) ?? '',
                    to: o.replyTo ?? o.from ?? '',
                    subject: replySubject(o.subject),
                    text: replyText(o.from, new Date(current.receivedAt).toLocaleString(), o.bodyText),
                  });
                }}
              />
            }
            onRead={(read) =>
              act(async () => {
                await client.markRead(current.id, read);
                setMessages((prev) => prev.map((x) => (x.id === current.id ? { ...x, read } : x)));
                await refreshCounts(addresses);
              })
            }
            onSave={(a) => saveAttachment(client, secrets, current, a)}
            onDelete={() =>
              act(async () => {
                const result = await client.deleteMessage(current.id);
                setMessages((prev) => prev.filter((x) => x.id !== current.id));
                setOpenId(null);
                setNotice(result === 'trashed' ? 'Moved to Trash.' : 'Deleted for good.');
                await refreshCounts(addresses);
              })
            }
          />
        )}
      </section>
    </div>
  );
}

function NewAddressForm({
  domains,
  onCreate,
}: {
  domains: Domain[];
  onCreate: (fields: { prefix?: string; domain?: string; label?: string }) => Promise<void>;
}) {
  const [prefix, setPrefix] = useState('');
  const [domain, setDomain] = useState('');
  const [label, setLabel] = useState('');
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="new-address"
      onSubmit={(e) => {
        e.preventDefault();
        setBusy(true);
        const fields: { prefix?: string; domain?: string; label?: string } = {};
        if (prefix.trim()) fields.prefix = prefix.trim();
        if (domain) fields.domain = domain;
        if (label.trim()) fields.label = label.trim();
        void onCreate(fields).finally(() => {
          setBusy(false);
          setPrefix('');
          setLabel('');
        });
      }}
    >
      <h3>New address</h3>
      <input aria-label="Prefix (optional)" placeholder="prefix (optional)" value={prefix} onInput={(e) => setPrefix((e.target as HTMLInputElement).value)} />
      <select aria-label="Domain" value={domain} onChange={(e) => setDomain((e.target as HTMLSelectElement).value)}>
        <option value="">{domains[0]?.domain ?? 'default domain'}</option>
        {domains.slice(1).map((d) => (
          <option key={d.domain} value={d.domain}>
            {d.domain}
          </option>
        ))}
      </select>
      <input aria-label="Label, sealed (optional)" placeholder="label, sealed (optional)" value={label} onInput={(e) => setLabel((e.target as HTMLInputElement).value)} />
      <button type="submit" class="primary" disabled={busy}>
        {busy ? 'Creating…' : 'Create address'}
      </button>
    </form>
  );
}

function UsagePanel({ usage }: { usage: Usage }) {
  const rows: Array<[string, string]> = [
    ['Plan', usage.plan.name],
    ['Addresses', `${usage.addresses.used} of ${usage.addresses.limit}`],
    ['Received (30 days)', `${usage.messagesReceived.used} of ${usage.messagesReceived.limit}`],
    ['Stored messages', String(usage.messagesStored)],
    ['Opened this hour', `${usage.objectReads.used} of ${usage.objectReads.limit}`],
  ];
  return (
    <div class="usage">
      <h3>Usage</h3>
      <dl>
        {rows.map(([k, v]) => (
          <Fragment key={k}>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </Fragment>
        ))}
      </dl>
    </div>
  );
}


const FOLDER_TITLES: Record<FolderName, string> = { inbox: 'Inbox', sent: 'Sent', archive: 'Archive', trash: 'Trash' };

/** A mail being written: the address it goes from, and the fields as typed. */
interface Draft {
  from: string;
  to: string;
  cc: string;
  subject: string;
  text: string;
}

function MessageActions({
  message,
  opened,
  onStar,
  onMove,
  onReply,
}: {
  message: Message;
  opened: OpenedMessage | Error | undefined;
  onStar: (starred: boolean) => Promise<void>;
  onMove: (folder: FolderName) => Promise<void>;
  onReply: () => void;
}) {
  const folder = message.folder as FolderName;
  return (
    <>
      <button type="button" aria-pressed={message.starred} onClick={() => void onStar(!message.starred)}>
        {message.starred ? 'Unstar' : 'Star'}
      </button>
      {!message.outgoing && opened !== undefined && !(opened instanceof Error) && (
        <button type="button" onClick={onReply}>
          Reply
        </button>
      )}
      {moveTargets(folder, message.outgoing).map((f) => (
        <button key={f} type="button" onClick={() => void onMove(f)}>
          Move to {FOLDER_TITLES[f]}
        </button>
      ))}
    </>
  );
}

function Compose({
  draft,
  addresses,
  onChange,
  onCancel,
  onSend,
}: {
  draft: Draft;
  addresses: Address[];
  onChange: (d: Draft) => void;
  onCancel: () => void;
  onSend: (d: Draft) => Promise<void>;
}) {
  const [problems, setProblems] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  const set = (field: keyof Draft) => (e: Event) => onChange({ ...draft, [field]: (e.target as HTMLInputElement).value });
  return (
    <form
      class="compose"
      aria-label="Write a mail"
      onSubmit={(e) => {
        e.preventDefault();
        const found = checkMail({ to: parseRecipients(draft.to), cc: parseRecipients(draft.cc), subject: draft.subject, text: draft.text });
        setProblems(found);
        if (found.length > 0) return;
        setBusy(true);
        onSend(draft).then(
          () => setBusy(false),
          (err: unknown) => {
            setBusy(false);
            setProblems([describe(err)]);
          },
        );
      }}
    >
      <h2>Write a mail</h2>
      <label>
        From
        <select aria-label="From" value={draft.from} onChange={set('from')}>
          {addresses.map((a) => (
            <option key={a.id} value={a.email}>
              {a.email}
            </option>
          ))}
        </select>
      </label>
      <label>
        To
        <input value={draft.to} onInput={set('to')} placeholder="name@example.com, another@example.org" autocomplete="off" />
      </label>
      <label>
        Cc
        <input value={draft.cc} onInput={set('cc')} placeholder="Copies, as To" autocomplete="off" />
      </label>
      <label>
        Subject
        <input value={draft.subject} onInput={set('subject')} />
      </label>
      <label>
        Text
        <textarea rows={12} value={draft.text} onInput={set('text')} />
      </label>
      <p class="muted small">
        Up to 50 recipients, To and Cc together. The service signs the mail and hands it to its outgoing server; a copy sealed to the sending address stays in Sent.
      </p>
      {problems.length > 0 && (
        <ul class="error" role="alert">
          {problems.map((p) => (
            <li key={p}>{p}</li>
          ))}
        </ul>
      )}
      <div class="row">
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Sending…' : 'Send'}
        </button>
        <button type="button" onClick={onCancel}>
          Discard
        </button>
      </div>
    </form>
  );
}

/** The addresses shared with this account by active teams. */
function sharedOf(memberships: Membership[]): Array<{ id: string; email: string; access: 'read' | 'send' }> {
  return memberships.filter((m) => m.active).flatMap((m) => m.addresses.map((a) => ({ id: a.addressId, email: a.email, access: a.access })));
}
