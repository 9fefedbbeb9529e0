-- Webhook endpoints, their delivery queue, and fan-out progress on the outbox.
-- Also keeps each device's pairing public key, so its key bundle can be
-- sealed again later.

ALTER TABLE devices ADD COLUMN public_key bytea;

CREATE TABLE webhooks (
    id               text PRIMARY KEY,
    account_id       text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    url              text NOT NULL,
    events           jsonb NOT NULL,
    meta             jsonb,
    -- The signing key: the sender needs it as is (docs/protocol.md).
    secret           text NOT NULL,
    active           boolean NOT NULL,
    disabled_reason  text,
    -- Events from before this instant (created while off) are never sent to it.
    active_since     timestamptz NOT NULL,
    failing_since    timestamptz,
    last_success_at  timestamptz,
    created_at       timestamptz NOT NULL
);
CREATE INDEX webhooks_account ON webhooks (account_id);

CREATE TABLE webhook_deliveries (
    id               text PRIMARY KEY,
    webhook_id       text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    account_id       text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    event_id         text NOT NULL,
    event_type       text NOT NULL,
    -- The event exactly as sent: the bytes the signature covers.
    body             text NOT NULL,
    status           text NOT NULL,
    attempts         integer NOT NULL,
    response_status  integer,
    error            text,
    created_at       timestamptz NOT NULL,
    last_attempt_at  timestamptz,
    next_attempt_at  timestamptz,
    -- Tests and redeliveries: 60 an hour per account.
    manual           boolean NOT NULL DEFAULT false,
    -- A sender holds a delivery until this time; after a crash it is taken again.
    lease_until      timestamptz
);
CREATE INDEX webhook_deliveries_page ON webhook_deliveries (webhook_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_created ON webhook_deliveries (created_at);

-- Events not yet fanned out to webhooks. A flag rather than a sequence
-- cursor: sequence values can commit out of order, a flag cannot be skipped.
ALTER TABLE events ADD COLUMN fanned_out boolean NOT NULL DEFAULT false;
CREATE INDEX events_to_fan_out ON events (seq) WHERE NOT fanned_out;
