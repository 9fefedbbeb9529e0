// The addresses area: every address with its sealed label (opened here), its
// retention and the device that holds it; a new address with the options the
// plan allows (a prefix, or on Scale and up the exact local part; a shared or
// own domain; retention; a label sealed to the vault key); the label and the
// retention changed; an address deleted for good.
import { newAddressId, openLabel, sealLabel, type Address, type Device, type Domain, type Usage } from '@sealpost/sdk';
import { useState } from 'preact/hooks';

import type { Unlocked } from '../session';
import { Feedback, useArea } from './shared';

function labelOf(session: Unlocked, a: Address): string {
  if (a.meta === null) return '';
  try {
    return openLabel(session.keys, a.id, a.meta);
  } catch {
    return '(unreadable)';
  }
}

function deviceName(session: Unlocked, d: Device | undefined): string {
  if (d === undefined) return '';
  try {
    return session.client.deviceProfile(d, session.keys).name || d.id;
  } catch {
    return d.id;
  }
}

export function Addresses({ session }: { session: Unlocked }) {
  const { client, keys } = session;
  const [addresses, setAddresses] = useState<Address[]>([]);
  const [devices, setDevices] = useState<Device[]>([]);
  const [domains, setDomains] = useState<Domain[]>([]);
  const [usage, setUsage] = useState<Usage | null>(null);
  const [editing, setEditing] = useState<string | null>(null);

  const { error, notice, act } = useArea(async () => {
    const [a, d, dom, u] = await Promise.all([client.listAddresses(), client.listDevices({ limit: 200 }), client.domains(), client.usage()]);
    setAddresses(a);
    setDevices(d);
    setDomains(dom);
    setUsage(u);
  }, client);

  // The exact local part is a Scale-and-up option, as own domains are.
  const exactNames = (usage?.domains.limit ?? 0) > 0;
  const full = usage !== null && usage.addresses.remaining <= 0;

  return (
    <main class="area addresses-area">
      <h1>Addresses</h1>
      {usage !== null && (
        <p class="muted">
          {usage.addresses.used} of {usage.addresses.limit} addresses on the {usage.plan.name} plan ({usage.addresses.assigned} on devices). Every address counts,
          assigned or not.
        </p>
      )}
      <Feedback error={error} notice={notice} />
      <CreateForm
        domains={domains}
        exactNames={exactNames}
        full={full}
        onCreate={(f) =>
          act(async () => {
            // The id is chosen here so the label can be sealed to it before the address exists.
            const id = newAddressId();
            const created = await client.createAddress({
              id,
              ...(f.domain ? { domain: f.domain } : {}),
              ...(f.prefix ? { prefix: f.prefix } : {}),
              ...(f.localPart ? { localPart: f.localPart } : {}),
              retentionDays: f.retentionDays,
              ...(f.label ? { meta: sealLabel(keys, id, f.label) } : {}),
            });
            return `Created ${created.email}.`;
          })
        }
      />
      <h2>Your addresses</h2>
      <div class="table-scroll">
        <table class="payments address-table">
          <thead>
            <tr>
              <th scope="col">Address</th>
              <th scope="col">Label</th>
              <th scope="col">Keeps mail</th>
              <th scope="col">Held by</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {addresses.map((a) => {
              const label = labelOf(session, a);
              const holder = devices.find((d) => d.id === a.deviceId);
              return (
                <tr key={a.id} data-testid={`address-${a.id}`}>
                  <td>
                    <span class="email">{a.email}</span>
                    {a.pausedAt !== null && <span class="muted small"> · paused (a missed payment)</span>}
                    {a.publicKey === null && <span class="muted small"> · has no key: refuses mail</span>}
                  </td>
                  <td>{label || <span class="muted">—</span>}</td>
                  <td>{a.retentionDays} days</td>
                  <td>{a.deviceId === null ? <span class="muted">no device</span> : deviceName(session, holder) || a.deviceId}</td>
                  <td>
                    {editing === a.id ? (
                      <EditForm
                        address={a}
                        label={label === '(unreadable)' ? '' : label}
                        onCancel={() => setEditing(null)}
                        onSave={(next) =>
                          act(async () => {
                            const update: { meta?: ReturnType<typeof sealLabel>; retentionDays?: number } = {};
                            if (next.label !== label) update.meta = sealLabel(keys, a.id, next.label);
                            if (next.retentionDays !== a.retentionDays) update.retentionDays = next.retentionDays;
                            if (Object.keys(update).length > 0) await client.updateAddress(a.id, update as Parameters<typeof client.updateAddress>[1]);
                            setEditing(null);
                            return `Saved ${a.email}.`;
                          })
                        }
                      />
                    ) : (
                      <div class="row tight">
                        <button type="button" class="small" onClick={() => setEditing(a.id)} aria-label={`Edit ${a.email}`}>
                          Edit
                        </button>
                        <button
                          type="button"
                          class="small danger"
                          aria-label={`Delete ${a.email}`}
                          onClick={() => {
                            if (!window.confirm(`Delete ${a.email} and its mail? The address is never issued again, to anyone.`)) return;
                            void act(async () => {
                              await client.deleteAddress(a.id);
                              return `Deleted ${a.email}.`;
                            });
                          }}
                        >
                          Delete
                        </button>
                      </div>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      <p class="muted small">Give an address to a device in Devices: its keys are sealed to that device there.</p>
    </main>
  );
}

interface NewFields {
  domain: string;
  prefix: string;
  localPart: string;
  retentionDays: number;
  label: string;
}

function CreateForm({ domains, exactNames, full, onCreate }: { domains: Domain[]; exactNames: boolean; full: boolean; onCreate: (f: NewFields) => Promise<void> }) {
  const [f, setF] = useState<NewFields>({ domain: '', prefix: '', localPart: '', retentionDays: 7, label: '' });
  const [exact, setExact] = useState(false);
  const [busy, setBusy] = useState(false);
  const set = (k: keyof NewFields) => (e: Event) => {
    const v = (e.target as HTMLInputElement).value;
    setF((prev) => ({ ...prev, [k]: k === 'retentionDays' ? Number(v) : v }));
  };
  return (
    <form
      class="approve"
      onSubmit={(e) => {
        e.preventDefault();
        setBusy(true);
        const fields = { ...f, prefix: exact ? '' : f.prefix.trim(), localPart: exact ? f.localPart.trim() : '', label: f.label.trim() };
        void onCreate(fields).finally(() => {
          setBusy(false);
          setF((prev) => ({ ...prev, prefix: '', localPart: '', label: '' }));
        });
      }}
    >
      <h2>New address</h2>
      {exactNames && (
        <fieldset class="events">
          <legend>Name</legend>
          <label class="check">
            <input type="radio" name="naming" checked={!exact} onChange={() => setExact(false)} /> A prefix and a random ending
          </label>
          <label class="check">
            <input type="radio" name="naming" checked={exact} onChange={() => setExact(true)} /> Exactly this name
          </label>
        </fieldset>
      )}
      <div class="grid-form">
        {exact ? (
          <label>
            Name before the @
            <input required value={f.localPart} onInput={set('localPart')} autoComplete="off" />
          </label>
        ) : (
          <label>
            Prefix (optional; a random ending is added)
            <input value={f.prefix} onInput={set('prefix')} autoComplete="off" />
          </label>
        )}
        <label>
          Domain
          <select value={f.domain} onChange={set('domain')}>
            <option value="">{domains[0]?.domain ?? 'default domain'}</option>
            {domains.slice(1).map((d) => (
              <option key={d.domain} value={d.domain}>
                {d.domain}
                {d.reserved ? ' (your own)' : ''}
              </option>
            ))}
          </select>
        </label>
        <label>
          Keep mail for (days, 1 to 90)
          <input type="number" min={1} max={90} required value={f.retentionDays} onInput={set('retentionDays')} />
        </label>
        <label>
          Label (sealed, only you can read it)
          <input value={f.label} maxLength={200} onInput={set('label')} />
        </label>
      </div>
      {!exactNames && <p class="muted small">The exact name before the @ and own domains come with the Scale plan and up.</p>}
      <button type="submit" class="primary" disabled={busy || full}>
        {busy ? 'Creating…' : full ? 'The plan’s addresses are all used' : 'Create address'}
      </button>
    </form>
  );
}

function EditForm({ address, label, onSave, onCancel }: { address: Address; label: string; onSave: (n: { label: string; retentionDays: number }) => Promise<void>; onCancel: () => void }) {
  const [l, setL] = useState(label);
  const [days, setDays] = useState(address.retentionDays);
  return (
    <form
      class="row tight"
      onSubmit={(e) => {
        e.preventDefault();
        void onSave({ label: l.trim(), retentionDays: days });
      }}
    >
      <label class="inline">
        Label
        <input value={l} maxLength={200} onInput={(e) => setL((e.target as HTMLInputElement).value)} />
      </label>
      <label class="inline">
        Days
        <input type="number" min={1} max={90} value={days} onInput={(e) => setDays(Number((e.target as HTMLInputElement).value))} />
      </label>
      <button type="submit" class="small primary">
        Save
      </button>
      <button type="button" class="small" onClick={onCancel}>
        Cancel
      </button>
    </form>
  );
}
