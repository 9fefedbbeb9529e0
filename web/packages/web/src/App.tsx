import {
  accountSecrets,
  AccountKeys,
  ApiError,
  generatePhrase,
  openLabel,
  sealLabel,
  SealpostClient,
  type Address,
  type Domain,
  type Message,
  type Usage,
} from '@sealpost/sdk';
import { Fragment } from 'preact';
import { useCallback, useEffect, useMemo, useState } from 'preact/hooks';

import { saveAttachment } from './attachments';
import { BASE_URL, describe } from './util';
import { DeviceSession, PairDevice, type PairedDevice } from './Device';
import { forgetDevice, loadDevice } from './deviceStore';
import { confirmationMatches, confirmPositions, mergeMessages } from './logic';
import { LIST_FETCHED, MessageList, Reader, useOpened } from './mail';

/**
 * The signed-in state. Kept in memory only: nothing here (or anything
 * secret) goes to web storage, databases, cookies or a URL.
 */
interface Unlocked {
  client: SealpostClient;
  keys: AccountKeys;
}

/** The build the server embeds (`webBuild` of `GET /`): the same id the API reports. */
function useBuildId(): string | null {
  const [id, setId] = useState<string | null>(null);
  useEffect(() => {
    const stop = new AbortController();
    fetch(new URL('/', BASE_URL), { signal: stop.signal, headers: { accept: 'application/json' } })
      .then((r) => (r.ok ? (r.json() as Promise<{ webBuild?: unknown }>) : null))
      .then((index) => {
        if (index !== null && typeof index.webBuild === 'string') setId(index.webBuild);
      })
      .catch(() => undefined);
    return () => stop.abort();
  }, []);
  return id;
}

type Mode = { kind: 'loading' } | { kind: 'welcome' } | { kind: 'account'; session: Unlocked } | { kind: 'pairing' } | { kind: 'device'; device: PairedDevice };

export function App() {
  const [mode, setMode] = useState<Mode>({ kind: 'loading' });
  const build = useBuildId();
  // A browser paired as a device comes back paired: its credential and key are in IndexedDB.
  useEffect(() => {
    loadDevice().then(
      (stored) => setMode(stored !== null ? { kind: 'device', device: { stored } } : { kind: 'welcome' }),
      () => setMode({ kind: 'welcome' }),
    );
  }, []);
  const lock = useCallback(async () => {
    if (mode.kind !== 'account') return;
    const { session } = mode;
    // The session ends on the server first (a few seconds at most), so the
    // welcome screen means the token is dead; keys and token are dropped either way.
    try {
      await Promise.race([session.client.signOut(), new Promise((resolve) => setTimeout(resolve, 5_000))]);
    } catch {
      // The token is forgotten either way.
    }
    session.keys.wipe();
    setMode({ kind: 'welcome' });
  }, [mode]);
  const unpair = useCallback(async () => {
    if (!window.confirm('Unpair this browser? Its device credential and key are deleted from it; the account can pair it again.')) return;
    await forgetDevice();
    setMode({ kind: 'welcome' });
  }, []);
  return (
    <div class="app">
      <header class="top">
        <strong>Sealpost</strong>
        {mode.kind === 'account' && (
          <span class="who">
            <code>{mode.session.keys.accountId}</code>
            <button type="button" onClick={() => void lock()} title="Forget the keys and the session">
              Lock
            </button>
          </span>
        )}
        {mode.kind === 'device' && (
          <span class="who">
            <span>This browser is a device</span>
            {mode.device.id !== undefined && <code data-testid="device-id">{mode.device.id}</code>}
            <button type="button" onClick={() => void unpair()} title="Delete this browser's device credential and key">
              Unpair
            </button>
          </span>
        )}
      </header>
      {mode.kind === 'loading' ? (
        <main class="card" aria-busy="true">
          <p class="muted">Loading…</p>
        </main>
      ) : mode.kind === 'welcome' ? (
        <Welcome onReady={(session) => setMode({ kind: 'account', session })} onPair={() => setMode({ kind: 'pairing' })} />
      ) : mode.kind === 'account' ? (
        <Mailbox session={mode.session} />
      ) : mode.kind === 'pairing' ? (
        <PairDevice onPaired={(device) => setMode({ kind: 'device', device })} onCancel={() => setMode({ kind: 'welcome' })} />
      ) : (
        <DeviceSession
          key={mode.device.stored.credential}
          device={mode.device}
          onIdentified={(id) => setMode((m) => (m.kind === 'device' && m.device.id !== id ? { kind: 'device', device: { ...m.device, id } } : m))}
        />
      )}
      <footer class="build">
        Sealpost web client{' '}
        {build !== null ? (
          <>
            build <code data-testid="web-build">{build}</code>
          </>
        ) : (
          'development build'
        )}
      </footer>
    </div>
  );
}

// ---- Create an account or sign in ---------------------------------------------------

type Step = 'choose' | 'show' | 'confirm' | 'signin';

function Welcome({ onReady, onPair }: { onReady: (s: Unlocked) => void; onPair: () => void }) {
  const [step, setStep] = useState<Step>('choose');
  const [phrase, setPhrase] = useState('');
  const [positions, setPositions] = useState<number[]>([]);
  const [typed, setTyped] = useState<string[]>([]);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  const run = async (work: () => Promise<void>) => {
    setBusy(true);
    setError('');
    try {
      await work();
    } catch (e) {
      setError(describe(e));
    } finally {
      setBusy(false);
    }
  };

  const create = () => {
    setPhrase(generatePhrase());
    setStep('show');
  };

  const register = () =>
    run(async () => {
      if (!confirmationMatches(phrase, positions, typed)) throw new Error('Those words do not match the phrase.');
      const keys = await AccountKeys.fromPhrase(phrase);
      const client = await SealpostClient.register({ baseUrl: BASE_URL, keys });
      setPhrase('');
      onReady({ client, keys });
    });

  const signIn = () =>
    run(async () => {
      const keys = await AccountKeys.fromPhrase(phrase);
      const client = await SealpostClient.signIn({ baseUrl: BASE_URL, keys });
      setPhrase('');
      onReady({ client, keys });
    });

  if (step === 'show') {
    return (
      <main class="card">
        <h1>Your recovery phrase</h1>
        <p>
          These 12 words are the only key to your account and your mail. Write them down now: they are shown once, and
          nobody (Sealpost included) can recover them.
        </p>
        <ol class="phrase">
          {phrase.split(' ').map((w, i) => (
            <li key={i}>{w}</li>
          ))}
        </ol>
        <div class="row">
          <button type="button" onClick={() => setStep('choose')}>
            Back
          </button>
          <button
            type="button"
            class="primary"
            onClick={() => {
              const p = confirmPositions(3, () => {
                const b = new Uint32Array(1);
                crypto.getRandomValues(b);
                return (b[0] as number) / 2 ** 32;
              });
              setPositions(p);
              setTyped(p.map(() => ''));
              setStep('confirm');
            }}
          >
            I have written them down
          </button>
        </div>
      </main>
    );
  }

  if (step === 'confirm') {
    return (
      <main class="card">
        <h1>Confirm your phrase</h1>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void register();
          }}
        >
          {positions.map((p, i) => (
            <label key={p}>
              Word {p + 1}
              <input
                autoComplete="off"
                spellcheck={false}
                autoCapitalize="off"
                value={typed[i]}
                onInput={(e) => {
                  const next = [...typed];
                  next[i] = (e.target as HTMLInputElement).value;
                  setTyped(next);
                }}
              />
            </label>
          ))}
          {error && <p class="error">{error}</p>}
          <div class="row">
            <button type="button" onClick={() => setStep('show')}>
              Show the words again
            </button>
            <button type="submit" class="primary" disabled={busy}>
              {busy ? 'Creating…' : 'Create account'}
            </button>
          </div>
        </form>
      </main>
    );
  }

  if (step === 'signin') {
    return (
      <main class="card">
        <h1>Sign in</h1>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void signIn();
          }}
        >
          <label>
            Recovery phrase (12 words)
            <textarea
              rows={3}
              autoComplete="off"
              spellcheck={false}
              autoCapitalize="off"
              value={phrase}
              onInput={(e) => setPhrase((e.target as HTMLTextAreaElement).value)}
            />
          </label>
          {error && <p class="error">{error}</p>}
          <div class="row">
            <button
              type="button"
              onClick={() => {
                setPhrase('');
                setStep('choose');
              }}
            >
              Back
            </button>
            <button type="submit" class="primary" disabled={busy}>
              {busy ? 'Signing in…' : 'Sign in'}
            </button>
          </div>
        </form>
      </main>
    );
  }

  return (
    <main class="card">
      <h1>End-to-end encrypted disposable email</h1>
      <p>Your mail is opened in this page with keys made from your recovery phrase. They stay in memory until you lock.</p>
      <div class="row">
        <button type="button" class="primary" onClick={create}>
          Create an account
        </button>
        <button type="button" onClick={() => setStep('signin')}>
          Sign in with my phrase
        </button>
      </div>
      <h2>Or use this browser as a device</h2>
      <p>
        Pair it with your account from a device that holds your phrase: this browser then reads the mail of the addresses
        you assign to it, and never sees the phrase. It stays paired until you unpair it.
      </p>
      <div class="row">
        <button type="button" onClick={onPair}>
          Pair this browser as a device
        </button>
      </div>
    </main>
  );
}

// ---- The mailbox --------------------------------------------------------------------------

interface Counts {
  total: number;
  unread: number;
}

function Mailbox({ session }: { session: Unlocked }) {
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

