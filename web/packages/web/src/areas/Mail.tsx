// The mail area: addresses, their mail, opened in the page.
import { accountSecrets, ApiError, openLabel, sealLabel, type Address, type Domain, type Message, type Usage } from '@sealpost/sdk';
import { Fragment } from 'preact';
import { useCallback, useEffect, useMemo, useState } from 'preact/hooks';

import { saveAttachment } from '../attachments';
import { mergeMessages } from '../logic';
import { LIST_FETCHED, MessageList, Reader, useOpened } from '../mail';
import { describe } from '../util';
import type { Unlocked } from '../session';

interface Counts {
  total: number;
  unread: number;
}

export function Mailbox({ session }: { session: Unlocked }) {
  const { client, keys } = session;
  const [addresses, setAddresses] = useState<Address[]>([]);
  const [counts, setCounts] = useState<Record<string, Counts>>({});
  const [domains, setDomains] = useState<Domain[]>([]);
  const [usage, setUsage] = useState<Usage | null>(null);
  const [selected, setSelected] = useState<string | null>(null);
  const [messages, setMessages] = useState<Message[]>([]);
  const [openId, setOpenId] = useState<string | null>(null);
  const [error, setError] = useState('');
  const [live, setLive] = useState(false);

  const refreshCounts = useCallback(
    async (list: Address[]) => {
      const entries = await Promise.all(
        list.map(async (a) => {
          const f = await client.folderCounts(a.id);
          return [a.id, { total: f.inbox.total, unread: f.inbox.unread }] as const;
        }),
      );
      setCounts(Object.fromEntries(entries));
    },
    [client],
  );

  const refresh = useCallback(async () => {
    try {
      const list = await client.listAddresses();
      setAddresses(list);
      setUsage(await client.usage());
      await refreshCounts(list);
    } catch (e) {
      setError(describe(e));
    }
  }, [client, refreshCounts]);

  useEffect(() => {
    void refresh();
    client.domains().then(setDomains, (e: unknown) => setError(describe(e)));
  }, [client, refresh]);

  // The selected address's mail: the newest page, then a long-poll for what arrives.
  useEffect(() => {
    setMessages([]);
    setOpenId(null);
    if (selected === null) return undefined;
    const stop = new AbortController();
    const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
    void (async () => {
      try {
        const page = await client.listMessages(selected, { limit: 50 });
        if (!stop.signal.aborted) {
          performance.mark(LIST_FETCHED);
          setMessages(page.messages);
        }
      } catch (e) {
        setError(describe(e));
      }
      let after: string | undefined;
      while (!stop.signal.aborted) {
        try {
          setLive(true);
          const answer = await client.waitForMessages(selected, { after, timeoutSeconds: 30, signal: stop.signal });
          if (answer !== null) {
            after = answer.cursor;
            if (answer.messages.length > 0) {
              setMessages((prev) => mergeMessages(prev, answer.messages));
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
    // Only the address and the client restart the wait; counts use the latest list.
  }, [client, selected]);

  const secrets = useMemo(() => accountSecrets(keys), [keys]);
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

  return (
    <div class="mailbox">
      <aside class="addresses">
        <h2>Addresses</h2>
        <ul>
          {addresses.map((a) => (
            <li key={a.id} class={a.id === selected ? 'selected' : ''}>
              <button type="button" class="link" onClick={() => setSelected(a.id)}>
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
            })
          }
        />
        {usage !== null && <UsagePanel usage={usage} />}
      </aside>

      <section class="messages">
        <h2>
          Mail {selected !== null && <span class={live ? 'live on' : 'live'}>{live ? 'live' : 'connecting'}</span>}
        </h2>
        {error && (
          <p class="error" role="alert">
            {error}{' '}
            <button type="button" class="small" onClick={() => setError('')}>
              Dismiss
            </button>
          </p>
        )}
        {selected === null ? (
          <p class="muted">Choose an address, or create one.</p>
        ) : messages.length === 0 ? (
          <p class="muted">No mail yet. New mail shows up here as it arrives.</p>
        ) : (
          <MessageList
            messages={messages}
            opened={opened}
            openId={openId}
            onOpen={(m) => {
              setOpenId(m.id);
              if (!m.read) {
                void act(async () => {
                  await client.markRead(m.id, true);
                  setMessages((prev) => prev.map((x) => (x.id === m.id ? { ...x, read: true } : x)));
                  await refreshCounts(addresses);
                });
              }
            }}
          />
        )}
      </section>

      <section class="reader">
        {current !== null && (
          <Reader
            message={current}
            opened={opened.get(current.id)}
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
                await client.deleteMessage(current.id);
                setMessages((prev) => prev.filter((x) => x.id !== current.id));
                setOpenId(null);
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

