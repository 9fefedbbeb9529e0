// The abuse report form (`POST /abuse/reports`): no account needed, so it
// is reachable signed out (the welcome page) as well as from Support.
import type { AbuseReport, SealpostClient } from '@sealpost/sdk';
import { useState } from 'preact/hooks';

import { Feedback } from './areas/shared';
import { ABUSE_CONTACT_MAX, ABUSE_DETAILS_MAX, ABUSE_REASONS, abuseReportBody, type AbuseForm } from './supportLogic';
import { describe } from './util';

const EMPTY: AbuseForm = { target: 'address', value: '', reason: '', details: '', contact: '' };

/** The form; `headingLevel` fits where it is shown (its own page, or a section of Support). */
export function AbuseReportForm({ client, heading = 'h2' }: { client: SealpostClient; heading?: 'h1' | 'h2' }) {
  const [form, setForm] = useState<AbuseForm>(EMPTY);
  const [error, setError] = useState('');
  const [notice, setNotice] = useState('');
  const [busy, setBusy] = useState(false);
  const Heading = heading;
  const set = (change: Partial<AbuseForm>) => setForm((f) => ({ ...f, ...change }));
  const value = (e: Event) => (e.target as HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement).value;

  const send = async () => {
    setError('');
    setNotice('');
    const checked = abuseReportBody(form);
    if ('problem' in checked) {
      setError(checked.problem);
      return;
    }
    setBusy(true);
    try {
      await client.reportAbuse(checked.body as AbuseReport);
      setForm(EMPTY);
      setNotice("Report received. The service's staff review every report; the answer is the same whether or not the address or message exists.");
    } catch (e) {
      setError(describe(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form
      class="approve abuse-form"
      aria-labelledby="abuse-title"
      onSubmit={(e) => {
        e.preventDefault();
        void send();
      }}
    >
      <Heading id="abuse-title">Report abuse</Heading>
      <p class="muted">
        An address of this service sent you spam, phishing or worse? Tell the service's staff. No account is needed; the report holds only what you type
        here.
      </p>
      <Feedback error={error} notice={notice} />
      <fieldset>
        <legend>What do you report?</legend>
        <label class="check">
          <input type="radio" name="abuse-target" checked={form.target === 'address'} onChange={() => set({ target: 'address' })} /> An address of this
          service
        </label>
        <label class="check">
          <input type="radio" name="abuse-target" checked={form.target === 'message'} onChange={() => set({ target: 'message' })} /> A message (its id)
        </label>
      </fieldset>
      <div class="grid-form">
        <label>
          {form.target === 'address' ? 'The address' : 'The message id'}
          <input
            value={form.value}
            inputMode={form.target === 'address' ? 'email' : 'text'}
            autoComplete="off"
            spellcheck={false}
            placeholder={form.target === 'address' ? 'someone@example.com' : 'msg_…'}
            onInput={(e) => set({ value: value(e) })}
          />
        </label>
        <label>
          Reason
          <select value={form.reason} onChange={(e) => set({ reason: value(e) })}>
            <option value="">Choose…</option>
            {ABUSE_REASONS.map((r) => (
              <option key={r.id} value={r.id}>
                {r.words}
              </option>
            ))}
          </select>
        </label>
      </div>
      <label>
        Details (optional: what happened, when)
        <textarea rows={4} maxLength={ABUSE_DETAILS_MAX} value={form.details} onInput={(e) => set({ details: value(e) })} />
      </label>
      <label>
        How staff can reach you (optional)
        <input maxLength={ABUSE_CONTACT_MAX} value={form.contact} autoComplete="email" onInput={(e) => set({ contact: value(e) })} />
      </label>
      <div class="row">
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Sending…' : 'Send report'}
        </button>
      </div>
    </form>
  );
}
