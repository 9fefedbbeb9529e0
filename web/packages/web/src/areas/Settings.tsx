// Notifications and sessions: which pushes the account's phones get, the
// addresses whose new mail is muted, the signed-in sessions, signing out.
import type { Address, OpenApiComponents } from '@sealpost/sdk';
import { useCallback, useEffect, useState } from 'preact/hooks';

import { formatWhen } from '../logic';
import type { Unlocked } from '../session';
import { Feedback } from './shared';
import { describe } from '../util';

type Preferences = OpenApiComponents['schemas']['NotificationPreferences'];
type SessionInfo = OpenApiComponents['schemas']['Session'];

/** Each kind of push in words, in the order shown. */
const KINDS: Array<[keyof Preferences, string]> = [
  ['newMail', 'New mail'],
  ['devicePaired', 'A device was paired'],
  ['deviceOffline', 'A device has been offline for two hours'],
  ['newSignIn', 'Someone signed in to the account'],
  ['billing', 'Billing: payments and plan changes'],
  ['support', 'Support replies'],
  ['webhookFailures', 'A webhook was switched off after failing'],
];

export function Settings({ session }: { session: Unlocked }) {
  const { client } = session;
  const [preferences, setPreferences] = useState<Preferences | null>(null);
  const [muted, setMuted] = useState<string[]>([]);
  const [addresses, setAddresses] = useState<Address[]>([]);
  const [sessions, setSessions] = useState<SessionInfo[]>([]);
  const [error, setError] = useState('');
  const [notice, setNotice] = useState('');

  const load = useCallback(async () => {
    try {
      const [settings, list, live] = await Promise.all([client.notificationSettings(), client.listAddresses(), client.listSessions()]);
      setPreferences(settings.preferences);
      setMuted(settings.mutedInboxes);
      setAddresses(list);
      setSessions(live);
    } catch (e) {
      setError(describe(e));
    }
  }, [client]);
  useEffect(() => void load(), [load]);

  const act = async (work: () => Promise<void>) => {
    setError('');
    setNotice('');
    try {
      await work();
    } catch (e) {
      setError(describe(e));
      void load();
    }
  };

  const others = sessions.filter((s) => !s.current).length;

  return (
    <div class="settings">
      <Feedback error={error} notice={notice} />
      <section aria-labelledby="notifications-title">
        <h2 id="notifications-title">Notifications</h2>
        <p class="muted">What your phones are told. Pushes never name a sender, a subject or an address.</p>
        {preferences === null ? (
          <p class="muted">Loading…</p>
        ) : (
          <fieldset>
            <legend>Send a push when</legend>
            {KINDS.map(([kind, words]) => (
              <label key={kind} class="check">
                <input
                  type="checkbox"
                  checked={preferences[kind]}
                  onChange={(e) => {
                    const on = (e.target as HTMLInputElement).checked;
                    // Shown at once; the answer (or a reload after a refusal) has the last word.
                    setPreferences((p) => (p === null ? p : { ...p, [kind]: on }));
                    void act(async () => {
                      const next = await client.updateNotificationPreferences({ [kind]: on });
                      setPreferences(next.preferences);
                      setMuted(next.mutedInboxes);
                    });
                  }}
                />
                {words}
              </label>
            ))}
          </fieldset>
        )}
        <fieldset>
          <legend>Mute new mail of an address</legend>
          {addresses.length === 0 && <p class="muted">No addresses yet.</p>}
          {addresses.map((a) => (
            <label key={a.id} class="check">
              <input
                type="checkbox"
                checked={muted.includes(a.id)}
                data-testid={`mute-${a.id}`}
                onChange={(e) => {
                  const on = (e.target as HTMLInputElement).checked;
                  setMuted((m) => (on ? [...m.filter((x) => x !== a.id), a.id] : m.filter((x) => x !== a.id)));
                  void act(async () => {
                    const now = await client.muteAddress(a.id, on);
                    setMuted((m) => (now ? [...m.filter((x) => x !== a.id), a.id] : m.filter((x) => x !== a.id)));
                    setNotice(now ? `New mail of ${a.email} is muted.` : `New mail of ${a.email} is pushed again.`);
                  });
                }}
              />
              Mute {a.email}
            </label>
          ))}
        </fieldset>
      </section>

      <section aria-labelledby="sessions-title">
        <h2 id="sessions-title">Sessions</h2>
        <p class="muted">Every place signed in with your recovery phrase. Sessions last 30 days.</p>
        <ul class="sessions">
          {sessions.map((s) => (
            <li key={s.id} data-testid="session">
              <span>
                <code>{s.id}</code> {s.current && <strong>(this browser)</strong>}
              </span>
              <span class="muted">
                signed in {formatWhen(s.createdAt)}, ends {new Date(s.expiresAt).toLocaleDateString()}
              </span>
              {!s.current && (
                <button
                  type="button"
                  class="small"
                  aria-label={`Sign out session ${s.id}`}
                  onClick={() =>
                    void act(async () => {
                      await client.signOutSession(s.id);
                      setSessions((list) => list.filter((x) => x.id !== s.id));
                      setNotice('That session is signed out.');
                    })
                  }
                >
                  Sign out
                </button>
              )}
            </li>
          ))}
        </ul>
        <div class="row">
          <button
            type="button"
            disabled={others === 0}
            onClick={() =>
              void act(async () => {
                const n = await client.signOutOtherSessions();
                // The list and the notice change together: the notice never
                // stands beside sessions it says are gone.
                const left = await client.listSessions();
                setSessions(left);
                setNotice(`Signed out ${n} other session${n === 1 ? '' : 's'}. This browser stays signed in.`);
              })
            }
          >
            Sign out other sessions
          </button>
          <button
            type="button"
            class="danger"
            onClick={() => {
              if (!window.confirm('Sign out everywhere, this browser included? You will need your recovery phrase to sign in again.')) return;
              void act(async () => {
                await client.signOutOtherSessions();
                await client.signOut();
                session.signedOut?.();
              });
            }}
          >
            Sign out everywhere
          </button>
        </div>
      </section>
    </div>
  );
}
