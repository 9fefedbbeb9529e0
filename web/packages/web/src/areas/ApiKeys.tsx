// The API keys area: the account's keys with their labels (sealed to the
// vault key, opened here), a new key whose `spk_` token is shown once, and
// revoking one. Agents (machines paired with `sealpost agent pair`) are
// approved in Devices, like any device.
import { openApiKeyLabel, type ApiKey } from '@sealpost/sdk';
import { useState } from 'preact/hooks';

import type { Unlocked } from '../session';
import { Feedback, useArea } from './shared';

const when = (at: string | null | undefined): string => (at == null ? 'never' : new Date(at).toLocaleString());

export function ApiKeys({ session }: { session: Unlocked }) {
  const { client, keys } = session;
  const [list, setList] = useState<ApiKey[]>([]);
  const [loaded, setLoaded] = useState(false);
  const [label, setLabel] = useState('');
  const [token, setToken] = useState<string | null>(null);

  const { error, notice, setNotice, busy, act } = useArea(async () => {
    setList(await client.listApiKeys());
    setLoaded(true);
  }, client);

  const labelOf = (k: ApiKey): string => {
    try {
      return openApiKeyLabel(keys, k.id, k.label) || '(no label)';
    } catch {
      return '(unreadable)';
    }
  };

  return (
    <main class="area api-keys">
      <h1>API keys</h1>
      <p class="muted">
        A key lets a script use the API as this account without the phrase: it cannot read sealed labels or mail unless the script holds keys. Agents
        (machines paired with <code>sealpost agent pair</code>) are approved in Devices.
      </p>
      <Feedback error={error} notice={notice} />
      {token !== null && (
        <div class="secret" role="note" aria-labelledby="token-title">
          <h2 id="token-title">The key's token, shown this once</h2>
          <p>Keep it where your script reads it: the service never shows it again (make a new key if it is lost).</p>
          <div class="row">
            <code class="secret-value" data-testid="api-key-token">
              {token}
            </code>
            <button type="button" onClick={() => void navigator.clipboard?.writeText(token).then(() => setNotice('Token copied.'))}>
              Copy
            </button>
            <button type="button" onClick={() => setToken(null)}>
              I have kept it
            </button>
          </div>
        </div>
      )}
      <form
        class="approve row"
        onSubmit={(e) => {
          e.preventDefault();
          void act(async () => {
            const created = await client.createApiKey(label.trim(), keys);
            setToken(created.token);
            setLabel('');
            return `Created ${created.apiKey.id}.`;
          });
        }}
      >
        <label class="inline">
          Label (sealed, only you can read it)
          <input required maxLength={100} value={label} onInput={(e) => setLabel((e.target as HTMLInputElement).value)} />
        </label>
        <button type="submit" class="primary" disabled={busy || label.trim() === ''}>
          Create key
        </button>
      </form>
      <h2>Keys</h2>
      {loaded && list.length === 0 && <p class="muted">No keys.</p>}
      {list.length > 0 && (
        <table class="payments">
          <thead>
            <tr>
              <th scope="col">Label</th>
              <th scope="col">Key</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.map((k) => (
              <tr key={k.id} data-testid={`api-key-${k.id}`}>
                <td>
                  {labelOf(k)}
                  {k.paused && <span class="muted small"> · paused (a missed payment)</span>}
                </td>
                <td>
                  <code>{k.id}</code>
                </td>
                <td>{when(k.createdAt)}</td>
                <td>{when(k.lastUsedAt)}</td>
                <td>
                  <button
                    type="button"
                    class="small danger"
                    disabled={busy}
                    aria-label={`Revoke ${labelOf(k)}`}
                    onClick={() => {
                      if (!window.confirm('Revoke this key? Its token stops working at once.')) return;
                      void act(async () => {
                        await client.revokeApiKey(k.id);
                        return `Revoked ${k.id}.`;
                      });
                    }}
                  >
                    Revoke
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </main>
  );
}
