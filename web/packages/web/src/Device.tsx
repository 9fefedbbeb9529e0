// This browser as a device of an account: pairing (a code and the key's
// fingerprint shown here, approved on a device that holds the phrase), then
// the mail of the addresses assigned to it, opened with its key bundle.
// Kept: the credential and the non-extractable device key, in IndexedDB
// (deviceStore.ts). The bundle and the address keys live in memory only.
import {
  ApiError,
  DeviceKey,
  KeyBundle,
  SealpostClient,
  spacedCode,
  type Address,
  type Message,
} from '@sealpost/sdk';
import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks';

import { BASE_URL, describe } from './util';
import { saveAttachment } from './attachments';
import { saveDevice, type StoredDevice } from './deviceStore';
import { mergeMessages } from './logic';
import { LIST_FETCHED, MessageList, Reader, useOpened } from './mail';

export interface PairedDevice {
  stored: StoredDevice;
  /** The `wkr_` id, once known (the pairing answer, or the first heartbeat). */
  id?: string;
}

/** How often the page polls its pairing session, and later its mail. */
const PAIR_POLL_MS = 2_000;
const MAIL_POLL_MS = 10_000;

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    });
  });

const transient = (e: unknown) => !(e instanceof ApiError) || e.status === 429 || e.status >= 500;

function deviceName(): string {
  const ua = navigator.userAgent;
  const browser = /Firefox\//.test(ua) ? 'Firefox' : /Edg\//.test(ua) ? 'Edge' : /Chrom(e|ium)\//.test(ua) ? 'Chromium' : /Safari\//.test(ua) ? 'Safari' : 'browser';
  const os = /Windows/.test(ua) ? 'Windows' : /Mac OS X/.test(ua) ? 'macOS' : /Android/.test(ua) ? 'Android' : /Linux/.test(ua) ? 'Linux' : /iPhone|iPad/.test(ua) ? 'iOS' : '';
  return `Web (${browser}${os ? ` on ${os}` : ''})`;
}

type PairPhase = 'starting' | 'waiting' | 'detected' | 'failed';

export function PairDevice({ onPaired, onCancel }: { onPaired: (d: PairedDevice) => void; onCancel: () => void }) {
  const [phase, setPhase] = useState<PairPhase>('starting');
  const [code, setCode] = useState('');
  const [fingerprint, setFingerprint] = useState('');
  const [error, setError] = useState('');
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    const stop = new AbortController();
    const client = new SealpostClient({ baseUrl: BASE_URL });
    let token: string | undefined;
    let claimed = false;
    setPhase('starting');
    setError('');
    void (async () => {
      try {
        let key: DeviceKey;
        try {
          key = await DeviceKey.generate();
        } catch (e) {
          throw new Error(`this browser cannot make a non-extractable X25519 key (WebCrypto): ${describe(e)}`);
        }
        const opened = await client.openPairing({ platform: 'web', deviceName: deviceName(), publicKey: key.publicKey });
        if (stop.signal.aborted) {
          await client.cancelPairing(opened.token).catch(() => undefined);
          return;
        }
        token = opened.token;
        setCode(opened.code);
        setFingerprint(key.fingerprint);
        setPhase('waiting');
        for (;;) {
          await sleep(PAIR_POLL_MS, stop.signal);
          if (stop.signal.aborted) return;
          let poll;
          try {
            poll = await client.pollPairing(token, stop.signal);
          } catch (e) {
            if (stop.signal.aborted) return;
            if (e instanceof ApiError && e.status === 404) throw new Error('The pairing session expired or was cancelled. Start again for a new code.');
            if (transient(e)) continue;
            throw e;
          }
          if (poll.deviceId !== null && poll.credential !== null) {
            claimed = true;
            const stored: StoredDevice = { credential: poll.credential, ...key.pair() };
            await saveDevice(stored);
            onPaired({ stored, id: poll.deviceId });
            return;
          }
          if (poll.state === 'operator_detected') setPhase('detected');
          if (poll.state === 'awaiting_inbox' || poll.state === 'inbox_assigned') {
            throw new Error('The session was claimed, but its credential was already collected. Remove that device and pair again.');
          }
        }
      } catch (e) {
        if (stop.signal.aborted) return;
        setError(describe(e));
        setPhase('failed');
      }
    })();
    return () => {
      stop.abort();
      if (token !== undefined && !claimed) void client.cancelPairing(token).catch(() => undefined);
    };
  }, [attempt]);

  return (
    <main class="card pairing">
      <h1>Pair this browser</h1>
      {phase === 'starting' && <p class="muted">Making this browser's key…</p>}
      {(phase === 'waiting' || phase === 'detected') && (
        <>
          <p>On a device that holds your recovery phrase, approve this code:</p>
          <p class="pair-code" data-testid="pair-code" aria-label={`Pairing code ${code.split('').join(' ')}`}>
            {spacedCode(code)}
          </p>
          <pre class="command">sealpost device pair {code}</pre>
          <p>
            Key fingerprint <code data-testid="pair-fingerprint">{fingerprint}</code>. The approving device shows the same
            fingerprint; if it differs, do not approve.
          </p>
          <p class="muted" role="status">
            {phase === 'detected' ? 'Your account found this browser; waiting for the approval…' : 'Waiting for the approval…'}
          </p>
        </>
      )}
      {phase === 'failed' && <p class="error">{error}</p>}
      <div class="row">
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
        {phase === 'failed' && (
          <button type="button" class="primary" onClick={() => setAttempt((n) => n + 1)}>
            Start again
          </button>
        )}
      </div>
      <p class="muted">
        Only the device credential and this browser's key (which cannot be read out of the browser) are kept, in this
        browser's IndexedDB, until you unpair.
      </p>
    </main>
  );
}

/** A signature of a list, to skip re-opening mail when a poll brings nothing new. */
const listKey = (list: Message[]) => list.map((m) => `${m.id}:${m.read ? 1 : 0}`).join(',');

export function DeviceSession({ device, onIdentified }: { device: PairedDevice; onIdentified: (id: string) => void }) {
  const client = useMemo(() => new SealpostClient({ baseUrl: BASE_URL, token: device.stored.credential }), [device.stored.credential]);
  const [key, setKey] = useState<DeviceKey | null>(null);
  const [deviceId, setDeviceId] = useState<string | null>(device.id ?? null);
  const [bundle, setBundle] = useState<KeyBundle | null>(null);
  const bundleAt = useRef<string | null>(null);
  const [addresses, setAddresses] = useState<Address[]>([]);
  const [selected, setSelected] = useState<string | null>(null);
  const [messages, setMessages] = useState<Message[]>([]);
  const [openId, setOpenId] = useState<string | null>(null);
  const [error, setError] = useState('');
  const [removed, setRemoved] = useState(false);
  const [loaded, setLoaded] = useState(false);

  // The key from storage, and who this device is (the heartbeat also reports it active).
  useEffect(() => {
    let live = true;
    DeviceKey.fromPair(device.stored).then(
      (k) => live && setKey(k),
      (e: unknown) => live && setError(`The stored device key is unusable: ${describe(e)}`),
    );
    const stop = new AbortController();
    void (async () => {
      while (!stop.signal.aborted) {
        try {
          const d = await client.heartbeat();
          if (!live) return;
          setDeviceId(d.id);
          onIdentified(d.id);
          setError('');
          return;
        } catch (e) {
          if (!live) return;
          if (e instanceof ApiError && (e.status === 401 || e.status === 403)) {
            setRemoved(true);
            return;
          }
          setError(describe(e));
          await sleep(5_000, stop.signal);
        }
      }
    })();
    return () => {
      live = false;
      stop.abort();
    };
  }, [client]);

  // The bundle lives as long as this view: zeroed when it goes (unpair, reload).
  useEffect(() => () => bundle?.wipe(), [bundle]);

  const refresh = useCallback(
    async (signal: AbortSignal) => {
      if (key === null || deviceId === null) return;
      const list = await client.listAddresses();
      if (signal.aborted) return;
      setAddresses(list);
      const sealed = await client.deviceKeys(deviceId);
      if (signal.aborted) return;
      const at = sealed?.updatedAt ?? 'none';
      if (at !== bundleAt.current) {
        const next = sealed === null ? KeyBundle.empty() : await KeyBundle.open(key, deviceId, sealed.keys);
        if (signal.aborted) {
          next.wipe();
          return;
        }
        bundleAt.current = at;
        setBundle(next);
      }
      const mail = selected === null ? await client.deviceMessages() : (await client.listMessages(selected, { limit: 50 })).messages;
      if (signal.aborted) return;
      setMessages((prev) => {
        if (listKey(prev) === listKey(mail) && prev.length > 0) return prev;
        performance.mark(LIST_FETCHED);
        return mergeMessages([], mail);
      });
      setLoaded(true);
    },
    [client, key, deviceId, selected],
  );

  useEffect(() => {
    if (key === null || deviceId === null || removed) return undefined;
    const stop = new AbortController();
    void (async () => {
      while (!stop.signal.aborted) {
        try {
          await refresh(stop.signal);
          if (!stop.signal.aborted) setError('');
        } catch (e) {
          if (stop.signal.aborted) break;
          if (e instanceof ApiError && e.status === 401) {
            setRemoved(true);
            break;
          }
          setError(describe(e));
        }
        await sleep(MAIL_POLL_MS, stop.signal);
      }
    })();
    return () => stop.abort();
  }, [refresh, removed]);

  useEffect(() => {
    setMessages([]);
    setOpenId(null);
    setLoaded(false);
  }, [selected]);

  const opened = useOpened(messages, bundle, LIST_FETCHED);
  const current = messages.find((m) => m.id === openId) ?? null;
  const emailOf = useMemo(() => new Map(addresses.map((a) => [a.id, a.email])), [addresses]);
  const keyless = addresses.filter((a) => bundle !== null && !bundle.addressIds.includes(a.id));

  const act = async (work: () => Promise<unknown>) => {
    setError('');
    try {
      await work();
    } catch (e) {
      setError(describe(e));
    }
  };

  if (removed) {
    return (
      <main class="card">
        <h1>This device was removed</h1>
        <p>The account no longer accepts this browser's credential. Unpair it, then pair it again if you want.</p>
      </main>
    );
  }

  return (
    <div class="mailbox device">
      <aside class="addresses">
        <h2>Addresses of this device</h2>
        {addresses.length === 0 ? (
          <p class="muted" data-testid="no-addresses">
            None yet. Assign one from a device that holds the phrase:{' '}
            <code>sealpost address assign ADDRESS_ID {deviceId ?? 'DEVICE_ID'}</code>
          </p>
        ) : (
          <ul>
            <li class={selected === null ? 'selected' : ''}>
              <button type="button" class="link" onClick={() => setSelected(null)}>
                <span class="email">All addresses</span>
              </button>
            </li>
            {addresses.map((a) => (
              <li key={a.id} class={a.id === selected ? 'selected' : ''}>
                <button type="button" class="link" onClick={() => setSelected(a.id)}>
                  <span class="email">{a.email}</span>
                </button>
              </li>
            ))}
          </ul>
        )}
        {keyless.length > 0 && (
          <p class="muted">
            No key yet for {keyless.map((a) => a.email).join(', ')}: the account has not sent this device its keys.
          </p>
        )}
      </aside>
      <section class="messages">
        <h2>Mail</h2>
        {error && (
          <p class="error" role="alert">
            {error}{' '}
            <button type="button" class="small" onClick={() => setError('')}>
              Dismiss
            </button>
          </p>
        )}
        {messages.length === 0 ? (
          <p class="muted">{loaded ? 'No mail yet. New mail shows up here within seconds.' : 'Loading…'}</p>
        ) : (
          <MessageList
            messages={messages}
            opened={opened}
            openId={openId}
            showAddress={selected === null ? (m) => emailOf.get(m.addressId) ?? m.addressId : undefined}
            onOpen={(m) => {
              setOpenId(m.id);
              if (!m.read) {
                void act(async () => {
                  await client.markRead(m.id, true);
                  setMessages((prev) => prev.map((x) => (x.id === m.id ? { ...x, read: true } : x)));
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
              })
            }
            {...(bundle !== null ? { onSave: (a) => saveAttachment(client, bundle, current, a) } : {})}
          />
        )}
      </section>
    </div>
  );
}
