// The account's activity log (`GET /activity`), kept live by the event
// stream (`GET /events/stream`): each event shows at once and the log is
// read again. Entries and events carry ids and times only.
import type { Address, OpenApiComponents, StreamedEvent } from '@sealpost/sdk';
import { ApiError } from '@sealpost/sdk';
import { useCallback, useEffect, useState } from 'preact/hooks';

import { activityWords } from '../activityLogic';
import { formatWhen } from '../logic';
import type { Unlocked } from '../session';
import { describe } from '../util';

type Entry = OpenApiComponents['schemas']['ActivityEntry'];

interface LiveEvent extends StreamedEvent {
  at: string;
}

export function Activity({ session }: { session: Unlocked }) {
  const { client } = session;
  const [entries, setEntries] = useState<Entry[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [events, setEvents] = useState<LiveEvent[]>([]);
  const [addresses, setAddresses] = useState<Address[]>([]);
  const [live, setLive] = useState(false);
  const [error, setError] = useState('');

  const load = useCallback(async () => {
    try {
      const page = await client.listActivity({ limit: 50 });
      setEntries(page.activity);
      setCursor(page.nextCursor);
      setAddresses(await client.listAddresses());
    } catch (e) {
      setError(describe(e));
    }
  }, [client]);

  useEffect(() => {
    void load();
    const stop = new AbortController();
    const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
    void (async () => {
      let lastEventId: string | undefined;
      while (!stop.signal.aborted) {
        try {
          setLive(true);
          for await (const event of client.streamEvents({ ...(lastEventId !== undefined ? { lastEventId } : {}), signal: stop.signal })) {
            lastEventId = event.id;
            setEvents((prev) => [{ ...event, at: new Date().toISOString() }, ...prev].slice(0, 50));
            void load();
          }
        } catch (e) {
          if (stop.signal.aborted) break;
          setError(describe(e));
          setLive(false);
          await pause(e instanceof ApiError && e.retryAfter !== undefined ? e.retryAfter * 1000 : 5000);
          continue;
        }
        // The service closed the stream: resume after the last event.
        setLive(false);
        await pause(1000);
      }
      setLive(false);
    })();
    return () => stop.abort();
  }, [client, load]);

  const email = (id: unknown): string | null => (typeof id === 'string' ? (addresses.find((a) => a.id === id)?.email ?? id) : null);

  return (
    <div class="activity">
      <h2>
        Activity <span class={live ? 'live on' : 'live'}>{live ? 'live' : 'connecting'}</span>
      </h2>
      {error && (
        <p class="error" role="alert">
          {error}{' '}
          <button type="button" class="small" onClick={() => setError('')}>
            Dismiss
          </button>
        </p>
      )}
      <section aria-labelledby="live-title">
        <h3 id="live-title">Just now</h3>
        {events.length === 0 ? (
          <p class="muted">Events show here the moment they happen.</p>
        ) : (
          <ul class="events" aria-live="polite">
            {events.map((e) => (
              <li key={`${e.id}-${e.type}`} data-type={e.type}>
                <strong>{activityWords(e.type)}</strong> <span class="muted">{formatWhen(e.at)}</span>{' '}
                {email(e.payload['inboxId']) !== null && <span class="muted">· {email(e.payload['inboxId'])}</span>}
              </li>
            ))}
          </ul>
        )}
      </section>
      <section aria-labelledby="log-title">
        <h3 id="log-title">Log (90 days)</h3>
        {entries.length === 0 ? (
          <p class="muted">Nothing yet.</p>
        ) : (
          <ul class="log">
            {entries.map((a) => (
              <li key={a.id} data-kind={a.kind}>
                <strong>{activityWords(a.kind)}</strong> <span class="muted">{formatWhen(a.createdAt)}</span>
                {a.inboxId != null && <span class="muted"> · {email(a.inboxId)}</span>}
                {a.workerId != null && <span class="muted"> · device {a.workerId}</span>}
              </li>
            ))}
          </ul>
        )}
        {cursor !== null && (
          <button
            type="button"
            onClick={() =>
              void client.listActivity({ limit: 50, cursor }).then(
                (page) => {
                  setEntries((prev) => [...prev, ...page.activity]);
                  setCursor(page.nextCursor);
                },
                (e: unknown) => setError(describe(e)),
              )
            }
          >
            Older
          </button>
        )}
      </section>
    </div>
  );
}
