// The own domains area: a setup guide for each domain, step by step in
// words (as `sealpost domain check` says them): the TXT record to publish
// with copy buttons, "Check now", the nameservers to set, and live. A domain
// not yet live is checked again every 30 seconds while the area is shown.
import type { OwnDomain } from '@sealpost/sdk';
import { useEffect, useState } from 'preact/hooks';

import type { Unlocked } from '../session';
import { Feedback, useArea } from './shared';

const STEPS: Array<[string, string]> = [
  ['verify_ownership', 'Prove ownership'],
  ['change_nameservers', 'Set the nameservers'],
  ['setting_up', 'Mail routing'],
  ['live', 'Live'],
];

/** Where a step sits in the guide (awaiting_setup is between proving and the nameservers; attention stands apart). */
function stepIndex(step: string): number {
  if (step === 'awaiting_setup') return 1;
  const i = STEPS.findIndex(([s]) => s === step);
  return i < 0 ? 0 : i;
}

function Copy({ text, what }: { text: string; what: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      class="small"
      aria-label={`Copy the ${what}`}
      onClick={() =>
        void navigator.clipboard?.writeText(text).then(() => {
          setDone(true);
          setTimeout(() => setDone(false), 2000);
        })
      }
    >
      {done ? 'Copied' : 'Copy'}
    </button>
  );
}

/** What the step means and what to do next, in words. */
function NextStep({ d }: { d: OwnDomain }) {
  const ns = d.nameservers ?? [];
  const nsList = (
    <ul class="records">
      {ns.map((n) => (
        <li key={n}>
          <code data-testid="nameserver">{n}</code> <Copy text={n} what={`nameserver ${n}`} />
        </li>
      ))}
    </ul>
  );
  switch (d.step) {
    case 'verify_ownership':
      return (
        <>
          <p>Ownership is not proved yet: the TXT record does not show in DNS. Publish this record at your DNS provider:</p>
          <table class="payments record">
            <tbody>
              <tr>
                <th scope="row">Name</th>
                <td>
                  <code data-testid="txt-name">{d.verification.name}</code> <Copy text={d.verification.name} what="record name" />
                </td>
              </tr>
              <tr>
                <th scope="row">Type</th>
                <td>
                  <code>{d.verification.type}</code>
                </td>
              </tr>
              <tr>
                <th scope="row">Value</th>
                <td>
                  <code data-testid="txt-value">{d.verification.value}</code> <Copy text={d.verification.value} what="record value" />
                </td>
              </tr>
            </tbody>
          </table>
          <p>Then check now (DNS changes can take a few minutes to show).</p>
        </>
      );
    case 'awaiting_setup':
      return <p>Ownership proved; the nameserver lookup did not answer. Wait a few minutes, then check now.</p>;
    case 'change_nameservers':
      return (
        <>
          <p>
            Ownership proved. At your registrar, set the nameservers of <strong>{d.domain}</strong> to exactly these two (no others):
          </p>
          {nsList}
          <p>Then check now.</p>
        </>
      );
    case 'setting_up':
      return <p>Delegated to the service's nameservers; waiting for its MX record to show in DNS. Wait a few minutes, then check now.</p>;
    case 'live':
      return (
        <p>
          <strong>{d.domain} is live: it receives mail.</strong> Create addresses on it in Addresses (any name before the @).
        </p>
      );
    case 'attention':
      return d.verifiedAt == null ? (
        <p>Another account proved this domain first; this claim cannot go on. Remove it.</p>
      ) : (
        <>
          <p>The domain's delegation or MX record went away. At your registrar, make sure the nameservers are exactly:</p>
          {nsList}
          <p>Then check now.</p>
        </>
      );
    default:
      return <p>The service reports the step “{d.step}”, which this page does not know.</p>;
  }
}

export function Domains({ session }: { session: Unlocked }) {
  const { client } = session;
  const [domains, setDomains] = useState<OwnDomain[]>([]);
  const [limit, setLimit] = useState<number | null>(null);
  const [name, setName] = useState('');
  const [loaded, setLoaded] = useState(false);

  const { error, notice, busy, refresh, act } = useArea(async () => {
    const [list, usage] = await Promise.all([client.listOwnDomains(), client.usage()]);
    setDomains(list);
    setLimit(usage.domains.limit ?? null);
    setLoaded(true);
  }, client);

  // Live: a domain still on its way is checked again every 30 seconds.
  const waiting = domains.filter((d) => d.step !== 'live' && !(d.step === 'attention' && d.verifiedAt == null)).map((d) => d.domain).join(',');
  useEffect(() => {
    if (waiting === '') return undefined;
    const timer = setInterval(() => {
      void Promise.all(waiting.split(',').map((d) => client.checkOwnDomain(d))).then(
        (fresh) => setDomains((prev) => prev.map((p) => fresh.find((f) => f.domain === p.domain) ?? p)),
        () => undefined,
      );
    }, 30_000);
    return () => clearInterval(timer);
  }, [client, waiting]);

  const check = (domain: string) =>
    act(async () => {
      const d = await client.checkOwnDomain(domain);
      setDomains((prev) => prev.map((p) => (p.domain === d.domain ? d : p)));
      return `Checked ${d.domain}: ${STEPS.find(([s]) => s === d.step)?.[1] ?? d.step.replace(/_/g, ' ')}.`;
    });

  return (
    <main class="area domains">
      <h1>Own domains</h1>
      <p class="muted">
        Addresses on a domain of your own, with any name before the @ (Scale plan and up{limit !== null && limit > 0 ? `: ${domains.length} of ${limit}` : ''}).
      </p>
      <Feedback error={error} notice={notice} />
      {limit === 0 ? (
        <p>Own domains come with the Scale plan and up: see Plan and billing.</p>
      ) : (
        <form
          class="approve row"
          onSubmit={(e) => {
            e.preventDefault();
            void act(async () => {
              const added = await client.addOwnDomain(name.trim());
              setName('');
              await refresh();
              return `Added ${added.domain.domain}: publish its TXT record below.`;
            });
          }}
        >
          <label class="inline">
            Domain
            <input required placeholder="example.com" autoComplete="off" value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
          </label>
          <button type="submit" class="primary" disabled={busy || name.trim() === ''}>
            Add domain
          </button>
        </form>
      )}
      {loaded && domains.length === 0 && limit !== 0 && <p class="muted">No own domains yet.</p>}
      <ul class="webhook-list">
        {domains.map((d) => {
          const at = stepIndex(d.step);
          return (
            <li key={d.domain} data-testid={`domain-${d.domain}`}>
              <h2 class="domain-name">{d.domain}</h2>
              <ol class="steps" aria-label={`Setup of ${d.domain}`}>
                {STEPS.map(([s, label], i) => (
                  <li key={s} class={i < at || d.step === 'live' ? 'done' : i === at ? 'now' : undefined} aria-current={i === at && d.step !== 'live' ? 'step' : undefined}>
                    {label}
                  </li>
                ))}
              </ol>
              <div class="guide" data-testid="domain-guide" aria-live="polite">
                <NextStep d={d} />
                {d.receivesUntil != null && (
                  <p class="error">
                    The plan no longer includes own domains: no new addresses, and mail is received until {new Date(d.receivesUntil).toLocaleString()}, refused
                    after.
                  </p>
                )}
              </div>
              <p class="muted small">Last checked {d.checkedAt != null ? new Date(d.checkedAt).toLocaleString() : 'never'}.</p>
              <div class="row">
                {d.step !== 'live' && (
                  <button type="button" class="primary" disabled={busy} onClick={() => void check(d.domain)}>
                    Check now
                  </button>
                )}
                <button
                  type="button"
                  class="danger"
                  disabled={busy}
                  aria-label={`Remove ${d.domain}`}
                  onClick={() => {
                    if (!window.confirm(`Remove ${d.domain}? Delete its addresses first.`)) return;
                    void act(async () => {
                      await client.removeOwnDomain(d.domain);
                      await refresh();
                      return `Removed ${d.domain}.`;
                    });
                  }}
                >
                  Remove
                </button>
              </div>
            </li>
          );
        })}
      </ul>
    </main>
  );
}
