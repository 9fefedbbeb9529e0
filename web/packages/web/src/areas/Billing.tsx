// The plan and billing area: usage against the plan's limits as bars, the
// subscription (balance, renewal, a scheduled change, what a pause holds and
// until when), the plans side by side, checkout with a provider the service
// takes, and the payment history (newest first, a page at a time), pending
// payments followed until they settle.
import type { Payment, Plan, PlanId, Provider, Subscription, Usage } from '@sealpost/sdk';
import { useCallback, useEffect, useState } from 'preact/hooks';

import { describe } from '../util';
import type { Unlocked } from '../session';
import { Feedback } from './shared';

const money = (cents: number, currency: string): string => `${(cents / 100).toFixed(2)} ${currency.toUpperCase()}`;
const day = (at: string): string => new Date(at).toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' });
const count = (n: number): string => n.toLocaleString('en-US');
/** Payments read a page at a time. */
const PAYMENTS_PAGE = 20;
const PROVIDER_WORDS: Record<string, string> = { stripe: 'card', btcpay: 'crypto', sandbox: 'sandbox (test)' };

/** One used-of-limit line: a bar when there is a number to fill, else words. */
function Bar({ label, used, limit, note }: { label: string; used: number; limit: number | null | undefined; note?: string }) {
  const unlimited = limit === null || limit === undefined;
  const full = !unlimited && limit > 0 && used >= limit;
  return (
    <div class={`bar${full ? ' full' : ''}`} data-testid={`usage-${label.toLowerCase().replace(/[^a-z]+/g, '-')}`}>
      <span class="bar-label">{label}</span>
      {unlimited ? (
        <span class="bar-text">{count(used)} (no limit)</span>
      ) : limit === 0 ? (
        <span class="bar-text muted">not in this plan</span>
      ) : (
        <>
          <progress value={Math.min(used, limit)} max={limit} aria-label={`${label}: ${count(used)} of ${count(limit)}`} />
          <span class="bar-text">
            {count(used)} of {count(limit)}
          </span>
        </>
      )}
      {note !== undefined && <span class="bar-note muted">{note}</span>}
    </div>
  );
}

function UsageBars({ usage }: { usage: Usage }) {
  const resets = (at: string) => `resets ${new Date(at).toLocaleString()}`;
  return (
    <section aria-labelledby="usage-title">
      <h2 id="usage-title">Usage of the {usage.plan.name} plan</h2>
      <Bar label="Addresses" used={usage.addresses.used} limit={usage.addresses.limit} note={`${count(usage.addresses.assigned)} on devices`} />
      <Bar label="Devices and agents" used={usage.paired.used} limit={usage.paired.limit} />
      <Bar label="Mail received" used={usage.messagesReceived.used} limit={usage.messagesReceived.limit} note={`30-day window, ${resets(usage.messagesReceived.windowEndsAt)}`} />
      <Bar label="Sent this hour" used={usage.messagesSent.hour.used} limit={usage.messagesSent.hour.limit} />
      <Bar label="Sent today" used={usage.messagesSent.day.used} limit={usage.messagesSent.day.limit} note="restarts 00:00 UTC" />
      <Bar label="Opened this hour" used={usage.objectReads.used} limit={usage.objectReads.limit} note="message bodies and attachments" />
      <Bar label="Stored mail (MB)" used={Math.ceil(usage.storedBytes.used / 1e6)} limit={Math.floor(usage.storedBytes.limit / 1e6)} note={`${count(usage.messagesStored)} messages`} />
      <Bar label="Own domains" used={usage.domains.used} limit={usage.domains.limit ?? null} />
      <Bar label="Webhooks" used={usage.webhooks.used} limit={usage.webhooks.allowed ? (usage.webhooks.limit ?? null) : 0} />
      <Bar label="API keys" used={usage.apiKeys.used} limit={usage.apiKeys.allowed ? (usage.apiKeys.limit ?? null) : 0} />
      <p class="muted small">Agents: {usage.agents.allowed ? `${count(usage.agents.used)} paired` : 'not in this plan'}.</p>
    </section>
  );
}

function SubscriptionPanel({ sub, plans }: { sub: Subscription; plans: Plan[] }) {
  const planName = (id: PlanId | null | undefined) => plans.find((p) => p.id === id)?.name ?? id ?? '';
  const pause = sub.pause ?? null;
  return (
    <section aria-labelledby="sub-title">
      <h2 id="sub-title">Subscription</h2>
      <dl class="facts">
        <dt>Plan</dt>
        <dd data-testid="current-plan">{sub.planName}</dd>
        <dt>Balance</dt>
        <dd>{money(sub.balance.amount, sub.balance.currency)}</dd>
        {sub.renewsAt != null && (
          <>
            <dt>Paid until</dt>
            <dd>{day(sub.renewsAt)}</dd>
          </>
        )}
        {sub.planId !== 'free' && (
          <>
            <dt>Renewal</dt>
            <dd data-testid="renewing">
              {sub.renewing ? 'renews automatically by card' : sub.planId === 'enterprise' ? 'by contract' : 'does not renew by itself: pay again before the date above'}
            </dd>
          </>
        )}
        {sub.pendingPlanId != null && (
          <>
            <dt>Scheduled change</dt>
            <dd data-testid="pending-plan">
              to {planName(sub.pendingPlanId)}
              {sub.pendingAt != null ? ` on ${day(sub.pendingAt)}` : ' at the end of the paid month'}
            </dd>
          </>
        )}
      </dl>
      {pause !== null && (
        <div class="pause" role="note" data-testid="pause">
          <h3>Paused after a missed payment</h3>
          <p>
            Since {day(pause.since)}, these are paused and their mail is held: {count(pause.addresses)} addresses, {count(pause.devices)} devices,{' '}
            {count(pause.apiKeys)} API keys, {count(pause.domains)} own domains.
          </p>
          <p>
            <strong>Unless paid, they are deleted on {day(pause.deletesAt)}.</strong>{' '}
            {pause.planId != null
              ? `Pay for the ${planName(pause.planId)} plan below to release them.`
              : 'The plan is paid, but it does not cover everything still paused: move to a plan that does, or remove what it does not cover.'}
          </p>
        </div>
      )}
    </section>
  );
}

/** A plan's limits, row by row. */
const ROWS: Array<[string, (p: Plan) => string]> = [
  ['Price / 30 days', (p) => (p.priceCents == null ? 'by contract' : p.priceCents === 0 ? 'free' : money(p.priceCents, p.currency))],
  ['Addresses', (p) => count(p.limits.addresses)],
  ['Devices', (p) => (p.limits.devices == null ? 'unlimited' : count(p.limits.devices))],
  ['Mail received / 30 days', (p) => count(p.limits.receivedPer30Days)],
  ['Sent / hour', (p) => count(p.limits.sendsPerHour)],
  ['Sent / day', (p) => count(p.limits.sendsPerDay)],
  ['Opened / hour', (p) => count(p.limits.objectReadsPerHour)],
  ['Stored mail', (p) => `${count(Math.round(p.limits.storedBytes / 1e9))} GB`],
  ['Own domains', (p) => (p.limits.ownDomains === 0 ? '—' : count(p.limits.ownDomains))],
  ['Webhooks', (p) => (p.limits.webhooks === 0 ? '—' : count(p.limits.webhooks))],
  ['Team members', (p) => (p.limits.teamMembers === 0 ? '—' : count(p.limits.teamMembers))],
  ['API keys and agents', (p) => (p.limits.apiKeys === 0 && !p.limits.agents ? '—' : 'yes')],
];

export function Billing({ session }: { session: Unlocked }) {
  const { client } = session;
  const [usage, setUsage] = useState<Usage | null>(null);
  const [sub, setSub] = useState<Subscription | null>(null);
  const [plans, setPlans] = useState<Plan[]>([]);
  const [providers, setProviders] = useState<Provider[]>([]);
  const [provider, setProvider] = useState('');
  const [payments, setPayments] = useState<Payment[]>([]);
  const [paymentsCursor, setPaymentsCursor] = useState<string | null>(null);
  const [paymentsLoaded, setPaymentsLoaded] = useState(false);
  /** The payments started in this page: followed until they settle (older pending ones are not). */
  const [started, setStarted] = useState<string[]>([]);
  const [checkoutUrl, setCheckoutUrl] = useState<string | null>(null);
  const [error, setError] = useState('');
  const [notice, setNotice] = useState('');
  const [busy, setBusy] = useState(false);

  const refresh = useCallback(async () => {
    try {
      const [u, s, history] = await Promise.all([client.usage(), client.subscription(), client.listPayments({ limit: PAYMENTS_PAGE })]);
      setUsage(u);
      setSub(s);
      // The newest page again (older pages are read again with the button).
      setPayments(history.payments);
      setPaymentsCursor(history.nextCursor);
      setPaymentsLoaded(true);
    } catch (e) {
      setError(describe(e));
    }
  }, [client]);

  const morePayments = async () => {
    if (paymentsCursor === null) return;
    try {
      const next = await client.listPayments({ limit: PAYMENTS_PAGE, cursor: paymentsCursor });
      setPayments((prev) => [...prev, ...next.payments.filter((p) => !prev.some((x) => x.id === p.id))]);
      setPaymentsCursor(next.nextCursor);
    } catch (e) {
      setError(describe(e));
    }
  };

  useEffect(() => {
    void refresh();
    client.plans().then(setPlans, (e: unknown) => setError(describe(e)));
    client.billingProviders().then(
      (list) => {
        setProviders(list);
        setProvider((p) => (p === '' ? (list[0]?.id ?? '') : p));
      },
      (e: unknown) => setError(describe(e)),
    );
  }, [client, refresh]);

  // Payments started here are checked every 3 seconds until they settle; a paid one changes the plan.
  const pending = payments.filter((p) => p.status === 'pending' && started.includes(p.id)).map((p) => p.id);
  const pendingKey = pending.join(',');
  useEffect(() => {
    if (pendingKey === '') return undefined;
    const timer = setInterval(() => {
      void (async () => {
        try {
          const fresh = await Promise.all(pendingKey.split(',').map((id) => client.payment(id)));
          setPayments((prev) => prev.map((p) => fresh.find((f) => f.id === p.id) ?? p));
          if (fresh.some((f) => f.status !== 'pending')) {
            const paid = fresh.find((f) => f.status === 'paid');
            if (paid !== undefined) setNotice(`Payment ${paid.id} is paid: the plan changed.`);
            setCheckoutUrl(null);
            await refresh();
          }
        } catch (e) {
          setError(describe(e));
        }
      })();
    }, 3000);
    return () => clearInterval(timer);
  }, [client, pendingKey, refresh]);

  const current = plans.find((p) => p.id === sub?.planId);

  const choose = async (plan: Plan) => {
    setBusy(true);
    setError('');
    setNotice('');
    try {
      const dearer = (plan.priceCents ?? Infinity) > (current?.priceCents ?? 0);
      if (dearer) {
        const sold = plan.id as 'operator' | 'scale' | 'fleet';
        const checkout = await client.checkout(sold, provider as Provider['id']);
        setPayments((prev) => [checkout.payment, ...prev]);
        setStarted((prev) => [...prev, checkout.payment.id]);
        setCheckoutUrl(checkout.url);
        window.open(checkout.url, '_blank', 'noopener,noreferrer');
      } else {
        const s = await client.changePlan(plan.id);
        setSub(s);
        setNotice(s.pendingPlanId != null ? `The move to ${plan.name} is scheduled.` : `Moved to ${plan.name}.`);
        await refresh();
      }
    } catch (e) {
      setError(describe(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="area billing">
      <h1>Plan and billing</h1>
      <Feedback error={error} notice={notice} />
      <div class="billing-top">
        {sub !== null && <SubscriptionPanel sub={sub} plans={plans} />}
        {usage !== null && <UsageBars usage={usage} />}
      </div>

      <section aria-labelledby="plans-title">
        <h2 id="plans-title">Plans</h2>
        {providers.length === 0 ? (
          <p class="muted">This service takes no payments: upgrades are not available here.</p>
        ) : (
          providers.length > 1 && (
            <label class="inline">
              Pay with
              <select value={provider} onChange={(e) => setProvider((e.target as HTMLSelectElement).value)}>
                {providers.map((p) => (
                  <option key={p.id} value={p.id}>
                    {p.kind === 'card' ? 'Card' : p.kind === 'crypto' ? 'Crypto' : 'Sandbox (test)'}
                  </option>
                ))}
              </select>
            </label>
          )
        )}
        <div class="table-scroll">
          <table class="plans">
            <thead>
              <tr>
                <th scope="col">Limit</th>
                {plans.map((p) => (
                  <th key={p.id} scope="col" class={p.id === sub?.planId ? 'current' : undefined}>
                    {p.name}
                    {p.id === sub?.planId && <span class="muted"> (yours)</span>}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {ROWS.map(([label, value]) => (
                <tr key={label}>
                  <th scope="row">{label}</th>
                  {plans.map((p) => (
                    <td key={p.id} class={p.id === sub?.planId ? 'current' : undefined}>
                      {value(p)}
                    </td>
                  ))}
                </tr>
              ))}
              <tr>
                <th scope="row">
                  <span class="visually-hidden">Choose</span>
                </th>
                {plans.map((p) => {
                  const dearer = (p.priceCents ?? Infinity) > (current?.priceCents ?? 0);
                  return (
                    <td key={p.id}>
                      {p.id === sub?.planId ? (
                        <span class="muted">current</span>
                      ) : p.priceCents == null ? (
                        <span class="muted">contact us</span>
                      ) : dearer && (!p.purchasable || providers.length === 0) ? null : (
                        <button type="button" class={dearer ? 'primary' : undefined} disabled={busy} onClick={() => void choose(p)}>
                          {dearer ? `Upgrade to ${p.name}` : `Move to ${p.name}`}
                        </button>
                      )}
                    </td>
                  );
                })}
              </tr>
            </tbody>
          </table>
        </div>
        <p class="muted small">
          An upgrade is paid first, through the provider's page; a move to a cheaper plan needs the addresses and devices to fit it.
        </p>
      </section>

      {checkoutUrl !== null && (
        <p class="checkout" role="status">
          Checkout opened in a new tab. If it did not open,{' '}
          <a href={checkoutUrl} target="_blank" rel="noopener noreferrer" data-testid="checkout-link">
            go to the payment page
          </a>
          . This page follows the payment and changes when it is paid.
        </p>
      )}

      <section aria-labelledby="payments-title">
        <h2 id="payments-title">Payment history</h2>
        <p class="muted small">
          Every checkout started, newest first, and the renewals charged by card. The card itself stays with the payment provider: this service never holds
          it.
        </p>
        {!paymentsLoaded ? null : payments.length === 0 ? (
          <p class="muted">No payments yet.</p>
        ) : (
          <table class="payments">
            <thead>
              <tr>
                <th scope="col">Payment</th>
                <th scope="col">Plan</th>
                <th scope="col">Amount</th>
                <th scope="col">Started</th>
                <th scope="col">Paid with</th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
              {payments.map((p) => (
                <tr key={p.id} data-testid={`payment-${p.id}`}>
                  <td>
                    <code>{p.id}</code>
                  </td>
                  <td>{plans.find((x) => x.id === p.planId)?.name ?? p.planId}</td>
                  <td>{money(p.amount, p.currency)}</td>
                  <td>{new Date(p.createdAt).toLocaleString()}</td>
                  <td>{PROVIDER_WORDS[p.provider] ?? p.provider}</td>
                  <td class={`pay-${p.status}`} data-testid="payment-status">
                    {p.status}
                    {p.settledAt != null && <span class="muted small"> {day(p.settledAt)}</span>}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {paymentsCursor !== null && (
          <button type="button" class="small" onClick={() => void morePayments()}>
            Show older payments
          </button>
        )}
      </section>
    </main>
  );
}
