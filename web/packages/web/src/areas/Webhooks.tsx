// The webhooks area: endpoints (their names sealed to the vault key and
// opened here), the signing secret shown once, switching on and off, the
// delivery log with each delivery's status, redelivery and a test event.
import { openWebhookName, type Delivery, type Webhook, type WebhookEventType } from '@sealpost/sdk';
import { useCallback, useEffect, useState } from 'preact/hooks';

import type { Unlocked } from '../session';
import { describe } from '../util';
import { Feedback, useArea } from './shared';

function nameOf(session: Unlocked, w: Webhook): string {
  if (w.meta == null) return '(no name)';
  try {
    return openWebhookName(session.keys, w.id, w.meta) || '(no name)';
  } catch {
    return '(unreadable)';
  }
}

const when = (at: string | null | undefined): string => (at == null ? '—' : new Date(at).toLocaleString());

export function Webhooks({ session }: { session: Unlocked }) {
  const { client, keys } = session;
  const [webhooks, setWebhooks] = useState<Webhook[]>([]);
  const [eventTypes, setEventTypes] = useState<string[]>([]);
  const [secret, setSecret] = useState<{ id: string; secret: string } | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [loaded, setLoaded] = useState(false);

  const { error, setError, notice, setNotice, act } = useArea(async () => {
    const list = await client.listWebhooks();
    setWebhooks(list.webhooks);
    setEventTypes(list.eventTypes);
    setLoaded(true);
  }, client);

  return (
    <main class="area webhooks">
      <h1>Webhooks</h1>
      <p class="muted">
        The service posts events (ids only, never mail content) to your https endpoints, signed with the endpoint's secret in the{' '}
        <code>Service-Signature</code> header.
      </p>
      <Feedback error={error} notice={notice} />
      {secret !== null && (
        <div class="secret" role="note" aria-labelledby="secret-title">
          <h2 id="secret-title">The signing secret, shown this once</h2>
          <p>Copy it into your receiver now: the service never shows it again (rotate it to get a new one).</p>
          <div class="row">
            <code class="secret-value" data-testid="webhook-secret">
              {secret.secret}
            </code>
            <button type="button" onClick={() => void navigator.clipboard?.writeText(secret.secret).then(() => setNotice('Secret copied.'))}>
              Copy
            </button>
            <button type="button" onClick={() => setSecret(null)}>
              I have kept it
            </button>
          </div>
        </div>
      )}
      <NewWebhook
        eventTypes={eventTypes}
        onCreate={(fields) =>
          act(async () => {
            const created = await client.createWebhook(fields, keys);
            setSecret({ id: created.webhook.id, secret: created.secret });
            setOpen(created.webhook.id);
            return `Created ${created.webhook.id}.`;
          })
        }
      />
      <h2>Endpoints</h2>
      {loaded && webhooks.length === 0 && <p class="muted">No webhooks yet.</p>}
      <ul class="webhook-list">
        {webhooks.map((w) => (
          <li key={w.id} class="webhook" data-testid={`webhook-${w.id}`}>
            <div class="device-head">
              <span class="device-name">{nameOf(session, w)}</span>
              <span class={`status ${w.status === 'active' ? 'online' : 'disabled'}`}>
                {w.status}
                {w.disabledReason === 'failing' ? ' (every attempt failed for 3 days)' : ''}
              </span>
              <code>{w.url}</code>
            </div>
            <p class="muted small">
              Events: {w.events.join(', ')} · last success {when(w.lastSuccessAt)}
              {w.failingSince != null && ` · failing since ${when(w.failingSince)}`}
            </p>
            <div class="row">
              <button type="button" onClick={() => setOpen(open === w.id ? null : w.id)} aria-expanded={open === w.id}>
                Deliveries
              </button>
              <button
                type="button"
                disabled={w.status !== 'active'}
                onClick={() =>
                  void act(async () => {
                    await client.testWebhook(w.id);
                    setOpen(w.id);
                    return 'A webhook.test event is on its way.';
                  })
                }
              >
                Send a test
              </button>
              <button
                type="button"
                onClick={() =>
                  void act(async () => {
                    await client.updateWebhook(w.id, { status: w.status === 'active' ? 'disabled' : 'active' });
                    return w.status === 'active' ? 'Switched off: events meanwhile are not sent.' : 'Switched on.';
                  })
                }
              >
                {w.status === 'active' ? 'Switch off' : 'Switch on'}
              </button>
              <button
                type="button"
                onClick={() => {
                  if (!window.confirm('Rotate the secret? The old one stops at once.')) return;
                  void act(async () => {
                    setSecret({ id: w.id, secret: await client.rotateWebhookSecret(w.id) });
                    return 'New secret made; the old one no longer signs.';
                  });
                }}
              >
                Rotate secret
              </button>
              <button
                type="button"
                class="danger"
                onClick={() => {
                  if (!window.confirm('Remove this webhook and its delivery log?')) return;
                  void act(async () => {
                    await client.deleteWebhook(w.id);
                    return 'Removed.';
                  });
                }}
              >
                Remove
              </button>
            </div>
            {open === w.id && <Deliveries session={session} webhookId={w.id} onError={setError} />}
          </li>
        ))}
      </ul>
    </main>
  );
}

function NewWebhook({ eventTypes, onCreate }: { eventTypes: string[]; onCreate: (f: { url: string; events: Array<WebhookEventType | '*'>; name?: string }) => Promise<void> }) {
  const [url, setUrl] = useState('');
  const [name, setName] = useState('');
  const [all, setAll] = useState(true);
  const [chosen, setChosen] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="approve"
      onSubmit={(e) => {
        e.preventDefault();
        setBusy(true);
        const events = (all ? ['*'] : chosen) as Array<WebhookEventType | '*'>;
        void onCreate({ url: url.trim(), events, ...(name.trim() ? { name: name.trim() } : {}) }).finally(() => {
          setBusy(false);
          setUrl('');
          setName('');
        });
      }}
    >
      <h2>New webhook</h2>
      <label>
        Endpoint URL (https)
        <input type="url" required placeholder="https://example.com/hooks/sealpost" value={url} onInput={(e) => setUrl((e.target as HTMLInputElement).value)} />
      </label>
      <label>
        Name (sealed, only you can read it)
        <input value={name} maxLength={100} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
      </label>
      <fieldset class="events">
        <legend>Events</legend>
        <label class="check">
          <input type="checkbox" checked={all} onChange={(e) => setAll((e.target as HTMLInputElement).checked)} /> All events
        </label>
        {!all &&
          eventTypes.map((t) => (
            <label key={t} class="check">
              <input
                type="checkbox"
                checked={chosen.includes(t)}
                onChange={(e) => setChosen((c) => ((e.target as HTMLInputElement).checked ? [...c, t] : c.filter((x) => x !== t)))}
              />{' '}
              {t}
            </label>
          ))}
      </fieldset>
      <button type="submit" class="primary" disabled={busy || url.trim() === '' || (!all && chosen.length === 0)}>
        {busy ? 'Creating…' : 'Create webhook'}
      </button>
    </form>
  );
}

function Deliveries({ session, webhookId, onError }: { session: Unlocked; webhookId: string; onError: (text: string) => void }) {
  const { client } = session;
  const [deliveries, setDeliveries] = useState<Delivery[]>([]);
  const [loaded, setLoaded] = useState(false);

  const load = useCallback(async () => {
    try {
      setDeliveries((await client.webhookDeliveries(webhookId, { limit: 50 })).deliveries);
      setLoaded(true);
    } catch (e) {
      onError(describe(e));
    }
  }, [client, webhookId, onError]);

  // Followed every 3 seconds while shown: a pending delivery settles on its own.
  useEffect(() => {
    void load();
    const timer = setInterval(() => void load(), 3000);
    return () => clearInterval(timer);
  }, [load]);

  return (
    <div class="deliveries">
      <h3>Deliveries</h3>
      {loaded && deliveries.length === 0 && <p class="muted">None yet.</p>}
      {deliveries.length > 0 && (
        <table class="payments">
          <thead>
            <tr>
              <th scope="col">Event</th>
              <th scope="col">Status</th>
              <th scope="col">Attempts</th>
              <th scope="col">Answer</th>
              <th scope="col">Last attempt</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {deliveries.map((d) => (
              <tr key={d.id} data-testid={`delivery-${d.id}`}>
                <td>
                  {d.eventType} <code class="small">{d.eventId}</code>
                </td>
                <td class={d.status === 'succeeded' ? 'pay-paid' : d.status === 'failed' ? 'pay-failed' : undefined}>{d.status}</td>
                <td>{d.attempts}</td>
                <td>{d.responseStatus != null ? `HTTP ${d.responseStatus}` : (d.error ?? '—')}</td>
                <td>
                  {when(d.lastAttemptAt)}
                  {d.nextAttemptAt != null && <span class="muted small"> · next {when(d.nextAttemptAt)}</span>}
                </td>
                <td>
                  <button
                    type="button"
                    class="small"
                    aria-label={`Redeliver ${d.eventType} ${d.eventId}`}
                    onClick={() =>
                      void client.redeliver(webhookId, d.id).then(
                        () => load(),
                        (e: unknown) => onError(describe(e)),
                      )
                    }
                  >
                    Redeliver
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
