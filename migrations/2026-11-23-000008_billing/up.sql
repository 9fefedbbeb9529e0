-- Billing: the renewal clock and pause on the account row, and payments.

-- paid_until: end of the paid 30-day period (NULL on Free and Enterprise).
-- A lapse sets paused_since and pause_deletes_at and keeps the lapsed plan in
-- lapsed_plan_id until a payment; after a payment that left something paused,
-- lapsed_plan_id is NULL while paused_since stays (pause.planId null).
ALTER TABLE accounts
    ADD COLUMN paid_until        timestamptz,
    ADD COLUMN lapsed_plan_id    text,
    ADD COLUMN paused_since      timestamptz,
    ADD COLUMN pause_deletes_at  timestamptz,
    ADD CONSTRAINT accounts_pause_whole CHECK ((paused_since IS NULL) = (pause_deletes_at IS NULL));

-- The lapse sweep's query: paid periods that end, on accounts not paused.
CREATE INDEX accounts_paid_until ON accounts (paid_until) WHERE paid_until IS NOT NULL AND paused_since IS NULL;

CREATE TABLE payments (
    id            text PRIMARY KEY,
    account_id    text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    plan_id       text NOT NULL,
    provider      text NOT NULL,
    amount        bigint NOT NULL CHECK (amount >= 0),
    currency      text NOT NULL,
    status        text NOT NULL CHECK (status IN ('pending', 'paid', 'failed')),
    -- The provider's id for the checkout: notices name it.
    reference     text NOT NULL,
    checkout_url  text NOT NULL,
    created_at    timestamptz NOT NULL,
    settled_at    timestamptz,
    UNIQUE (provider, reference)
);
CREATE INDEX payments_account ON payments (account_id, created_at DESC);

-- Releasing a paused account walks its paused rows oldest first.
CREATE INDEX addresses_paused ON addresses (account_id, created_at) WHERE paused_at IS NOT NULL;
CREATE INDEX devices_paused ON devices (account_id, created_at) WHERE paused_at IS NOT NULL;
