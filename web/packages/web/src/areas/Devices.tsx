// The devices area: approve a pairing code typed from another device (its
// name and key fingerprint shown to compare first), and the devices and
// agents paired: their names (sealed profiles opened here), the addresses
// each holds (key bundles sealed here to the device's own key), rename,
// disable, remove. Everything is sealed exactly as `sealpost device pair`
// and `sealpost address assign` seal it.
import { keyFingerprint, b64decodeN, type Address, type Device, type PairingLookup } from '@sealpost/sdk';
import { useState } from 'preact/hooks';

import type { Unlocked } from '../session';
import { describe } from '../util';
import { Feedback, useArea } from './shared';

/** The device's name from its sealed profile, or why there is none to show. */
function nameOf(session: Unlocked, device: Device): string {
  try {
    const name = session.client.deviceProfile(device, session.keys).name;
    return name === '' ? '(no name)' : name;
  } catch {
    return '(unreadable)';
  }
}

function when(at: string | null): string {
  return at === null ? 'never' : new Date(at).toLocaleString();
}

export function Devices({ session }: { session: Unlocked }) {
  const { client, keys } = session;
  const [devices, setDevices] = useState<Device[]>([]);
  const [addresses, setAddresses] = useState<Address[]>([]);
  const [loaded, setLoaded] = useState(false);

  const { error, notice, act } = useArea(async () => {
    const [d, a] = await Promise.all([client.listDevices({ limit: 200 }), client.listAddresses()]);
    setDevices(d);
    setAddresses(a);
    setLoaded(true);
  }, client);

  return (
    <main class="area devices">
      <h1>Devices</h1>
      <ApproveForm session={session} onApproved={(text) => void act(async () => text)} />
      <Feedback error={error} notice={notice} />
      <h2>Paired</h2>
      {loaded && devices.length === 0 && <p class="muted">No devices yet. Approve one with the code it shows.</p>}
      <ul class="device-list">
        {devices.map((d) => (
          <DeviceRow
            key={d.id}
            device={d}
            name={nameOf(session, d)}
            held={addresses.filter((a) => a.deviceId === d.id)}
            others={addresses.filter((a) => a.deviceId !== d.id)}
            onRename={(name) =>
              act(async () => {
                await client.renameDevice(d.id, name, keys);
                return `Renamed to “${name}”.`;
              })
            }
            onDisable={() =>
              act(async () => {
                await client.disableDevice(d.id);
                return `Disabled ${d.id}; its credential no longer works.`;
              })
            }
            onRemove={() =>
              act(async () => {
                await client.removeDevice(d.id);
                return `Removed ${d.id}; its addresses are unassigned.`;
              })
            }
            onAssign={(addressId) =>
              act(async () => {
                const a = await client.assignAddress(addressId, d.id, keys);
                return `Assigned ${a.email}; its keys were sealed to the device and sent.`;
              })
            }
            onUnassign={(addressId) =>
              act(async () => {
                await client.unassignAddress(addressId, d.id, keys);
                return 'Unassigned; the device was sent its keys without that address.';
              })
            }
          />
        ))}
      </ul>
    </main>
  );
}

function ApproveForm({ session, onApproved }: { session: Unlocked; onApproved: (notice: string) => void }) {
  const { client, keys } = session;
  const [code, setCode] = useState('');
  const [found, setFound] = useState<PairingLookup | null>(null);
  const [name, setName] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');

  const lookUp = async () => {
    setBusy(true);
    setError('');
    try {
      const f = await client.lookupPairing(code);
      setFound(f);
      setName(f.deviceName);
    } catch (e) {
      setError(describe(e));
    } finally {
      setBusy(false);
    }
  };

  const approve = async () => {
    if (found === null) return;
    setBusy(true);
    setError('');
    try {
      const device = await client.approvePairing(found, name.trim() === '' ? found.deviceName : name.trim(), keys);
      setFound(null);
      setCode('');
      onApproved(`Paired ${device.id}. Give it an address below.`);
    } catch (e) {
      setError(describe(e));
    } finally {
      setBusy(false);
    }
  };

  if (found !== null) {
    let fingerprint = '(malformed key)';
    try {
      fingerprint = keyFingerprint(b64decodeN(found.publicKey, 32, 'publicKey'));
    } catch {
      // shown as malformed; the claim would fail too
    }
    return (
      <section class="approve" aria-labelledby="approve-title">
        <h2 id="approve-title">Approve this {found.kind}?</h2>
        <dl>
          <dt>Name it reported</dt>
          <dd data-testid="approve-name">{found.deviceName}</dd>
          <dt>Platform</dt>
          <dd>{found.platform}</dd>
          <dt>Key fingerprint</dt>
          <dd>
            <code class="fingerprint" data-testid="approve-fingerprint">
              {fingerprint}
            </code>
          </dd>
        </dl>
        <p>
          The device shows a fingerprint too. <strong>Approve only if the two are the same</strong>: if they differ, someone in between
          put in their own key.
        </p>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void approve();
          }}
        >
          <label>
            Name (sealed, only you can read it)
            <input value={name} maxLength={100} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
          </label>
          {error && <p class="error">{error}</p>}
          <div class="row">
            <button type="button" onClick={() => setFound(null)}>
              Cancel
            </button>
            <button type="submit" class="primary" disabled={busy}>
              {busy ? 'Approving…' : 'The fingerprints match: approve'}
            </button>
          </div>
        </form>
      </section>
    );
  }

  return (
    <section class="approve" aria-labelledby="pair-title">
      <h2 id="pair-title">Pair a device</h2>
      <p class="muted">
        On the new device (an app, a browser, or <code>sealpost agent pair</code>), start pairing; it shows an 8-digit code.
      </p>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          void lookUp();
        }}
      >
        <label class="inline">
          Pairing code
          <input
            inputMode="numeric"
            autoComplete="off"
            placeholder="1234 5678"
            value={code}
            onInput={(e) => setCode((e.target as HTMLInputElement).value)}
          />
        </label>
        <button type="submit" class="primary" disabled={busy || code.replace(/[\s-]/g, '').length !== 8}>
          {busy ? 'Looking up…' : 'Look up'}
        </button>
      </form>
      {error && <p class="error">{error}</p>}
    </section>
  );
}

function DeviceRow({
  device,
  name,
  held,
  others,
  onRename,
  onDisable,
  onRemove,
  onAssign,
  onUnassign,
}: {
  device: Device;
  name: string;
  held: Address[];
  others: Address[];
  onRename: (name: string) => Promise<void>;
  onDisable: () => Promise<void>;
  onRemove: () => Promise<void>;
  onAssign: (addressId: string) => Promise<void>;
  onUnassign: (addressId: string) => Promise<void>;
}) {
  const [renaming, setRenaming] = useState(false);
  const [newName, setNewName] = useState(name);
  const [pick, setPick] = useState('');
  const [busy, setBusy] = useState(false);
  const run = (f: () => Promise<void>) => {
    setBusy(true);
    void f().finally(() => setBusy(false));
  };
  return (
    <li class="device" data-testid={`device-${device.id}`}>
      <div class="device-head">
        <span class="device-name">{name}</span>
        <span class={`status ${device.status}`}>{device.status}</span>
        <span class="muted">
          {device.kind} · {device.platform} · <code>{device.id}</code>
        </span>
      </div>
      <p class="muted small">
        Paired {when(device.createdAt)} · last active {when(device.lastActiveAt)}
        {device.pausedAt !== null && ` · paused since ${when(device.pausedAt)} (a missed payment)`}
      </p>
      <div class="held">
        <h3>Addresses it holds</h3>
        {held.length === 0 ? (
          <p class="muted">None.</p>
        ) : (
          <ul>
            {held.map((a) => (
              <li key={a.id}>
                <span class="email">{a.email}</span>{' '}
                <button type="button" class="small" disabled={busy} onClick={() => run(() => onUnassign(a.id))} aria-label={`Unassign ${a.email} from ${name}`}>
                  Unassign
                </button>
              </li>
            ))}
          </ul>
        )}
        {device.status !== 'disabled' && others.length > 0 && (
          <form
            class="row"
            onSubmit={(e) => {
              e.preventDefault();
              if (pick !== '') run(() => onAssign(pick));
            }}
          >
            <select aria-label={`Address to give ${name}`} value={pick} onChange={(e) => setPick((e.target as HTMLSelectElement).value)}>
              <option value="">Choose an address…</option>
              {others.map((a) => (
                <option key={a.id} value={a.id}>
                  {a.email}
                  {a.deviceId !== null ? ' (moves from another device)' : ''}
                </option>
              ))}
            </select>
            <button type="submit" disabled={busy || pick === ''}>
              Assign
            </button>
          </form>
        )}
      </div>
      {renaming ? (
        <form
          class="row"
          onSubmit={(e) => {
            e.preventDefault();
            if (newName.trim() !== '') run(() => onRename(newName.trim()).then(() => setRenaming(false)));
          }}
        >
          <label class="inline">
            New name
            <input value={newName} maxLength={100} onInput={(e) => setNewName((e.target as HTMLInputElement).value)} />
          </label>
          <button type="submit" class="primary" disabled={busy}>
            Save
          </button>
          <button type="button" onClick={() => setRenaming(false)}>
            Cancel
          </button>
        </form>
      ) : (
        <div class="row">
          <button type="button" disabled={busy || name === '(unreadable)'} onClick={() => setRenaming(true)} aria-label={`Rename ${name}`}>
            Rename
          </button>
          {device.status !== 'disabled' && (
            <button
              type="button"
              disabled={busy}
              aria-label={`Disable ${name}`}
              onClick={() => {
                if (window.confirm(`Disable ${name}? Its credential stops working at once.`)) run(onDisable);
              }}
            >
              Disable
            </button>
          )}
          <button
            type="button"
            class="danger"
            disabled={busy}
            aria-label={`Remove ${name}`}
            onClick={() => {
              if (window.confirm(`Remove ${name}? Its credential stops and its addresses become unassigned.`)) run(onRemove);
            }}
          >
            Remove
          </button>
        </div>
      )}
    </li>
  );
}
