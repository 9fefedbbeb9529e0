import {
  AccountKeys,
  generatePhrase,
  SealpostClient,
} from '@sealpost/sdk';
import { useCallback, useEffect, useState } from 'preact/hooks';

import { BASE_URL, describe } from './util';
import { AbuseReportForm } from './AbuseReport';
import { AccountView } from './AccountView';
import { DeviceSession, PairDevice, type PairedDevice } from './Device';
import { forgetDevice, loadDevice } from './deviceStore';
import { confirmationMatches, confirmPositions } from './logic';
import type { Unlocked } from './session';


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
        <Welcome
          onReady={(session) =>
            setMode({
              kind: 'account',
              session: {
                ...session,
                signedOut: () => {
                  session.keys.wipe();
                  setMode({ kind: 'welcome' });
                },
              },
            })
          }
          onPair={() => setMode({ kind: 'pairing' })}
        />
      ) : mode.kind === 'account' ? (
        <AccountView session={mode.session} />
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

type Step = 'choose' | 'show' | 'confirm' | 'signin' | 'abuse';

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

  if (step === 'abuse') {
    return (
      <main class="card">
        <AbuseReportForm client={new SealpostClient({ baseUrl: BASE_URL })} heading="h1" />
        <div class="row">
          <button type="button" onClick={() => setStep('choose')}>
            Back
          </button>
        </div>
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
      <p class="muted small">
        Got spam or phishing from an address of this service?{' '}
        <button type="button" class="inline-link" onClick={() => setStep('abuse')}>
          Report abuse
        </button>{' '}
        (no account needed).
      </p>
    </main>
  );
}
