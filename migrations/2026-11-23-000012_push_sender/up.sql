-- Push reads the outbox with a flag of its own, so it and the webhook
-- fan-out both see every row. Rows written before push existed count as
-- seen (the column is added with default true), new rows start unseen.
ALTER TABLE events ADD COLUMN pushed boolean NOT NULL DEFAULT true;
ALTER TABLE events ALTER COLUMN pushed SET DEFAULT false;
CREATE INDEX events_to_push ON events (seq) WHERE NOT pushed;

-- An open burst of one push kind for one account: `count` outbox rows so
-- far, sent as one push at `due_at`.
CREATE TABLE push_batches (
    account_id  text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    kind        text NOT NULL,
    count       integer NOT NULL,
    due_at      timestamptz NOT NULL,
    PRIMARY KEY (account_id, kind)
);
CREATE INDEX push_batches_due ON push_batches (due_at);

-- One push to one token, until delivered, dropped or given up. Goes with
-- its token.
CREATE TABLE push_deliveries (
    id               bigserial PRIMARY KEY,
    token            text NOT NULL REFERENCES push_devices (token) ON DELETE CASCADE,
    account_id       text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    platform         text NOT NULL,
    kind             text NOT NULL,
    count            integer NOT NULL,
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL,
    lease_until      timestamptz,
    created_at       timestamptz NOT NULL
);
CREATE INDEX push_deliveries_due ON push_deliveries (next_attempt_at);
CREATE INDEX push_deliveries_token ON push_deliveries (token);
