-- Devices, pairing, addresses, the activity log and the event outbox.

-- Client-chosen ids (wkr_, ibx_, ...) can never be used twice, by anyone,
-- also after their record and account are gone. Kept as SHA-256.
CREATE TABLE retired_ids (
    kind        text NOT NULL,
    id_hash     bytea NOT NULL,
    retired_at  timestamptz NOT NULL,
    PRIMARY KEY (kind, id_hash)
);

CREATE TABLE devices (
    id              text PRIMARY KEY,
    account_id      text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    kind            text NOT NULL CHECK (kind IN ('device', 'agent')),
    platform        text NOT NULL,
    disabled        boolean NOT NULL DEFAULT false,
    connected       boolean NOT NULL DEFAULT true,
    created_at      timestamptz NOT NULL,
    last_active_at  timestamptz,
    paused_at       timestamptz,
    profile         jsonb,
    key_bundle      jsonb,
    keys_updated_at timestamptz
);
CREATE INDEX devices_account_page ON devices (account_id, created_at DESC, id DESC);
CREATE INDEX devices_stale ON devices (last_active_at) WHERE connected AND NOT disabled;

CREATE TABLE device_credentials (
    token_hash  bytea PRIMARY KEY,
    device_id   text NOT NULL UNIQUE REFERENCES devices (id) ON DELETE CASCADE,
    account_id  text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    created_at  timestamptz NOT NULL
);

CREATE TABLE pairing_sessions (
    id           text PRIMARY KEY,
    token_hash   bytea NOT NULL UNIQUE,
    code         text NOT NULL,
    state        text NOT NULL,
    platform     text NOT NULL,
    device_name  text NOT NULL,
    public_key   bytea NOT NULL,
    handoff_key  bytea NOT NULL,
    created_at   timestamptz NOT NULL,
    detected_by  text REFERENCES accounts (id) ON DELETE SET NULL,
    claimed_by   text REFERENCES accounts (id) ON DELETE CASCADE,
    worker_id    text,
    handoff      jsonb
);
-- The code is unique among sessions nobody claimed yet.
CREATE UNIQUE INDEX pairing_live_code ON pairing_sessions (code) WHERE claimed_by IS NULL;
CREATE INDEX pairing_created ON pairing_sessions (created_at);

CREATE TABLE pairing_lookup_failures (
    key  text NOT NULL,
    at   timestamptz NOT NULL
);
CREATE INDEX pairing_lookup_failures_key ON pairing_lookup_failures (key, at);

CREATE TABLE addresses (
    id              text PRIMARY KEY,
    account_id      text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    email_address   text NOT NULL UNIQUE,
    domain          text NOT NULL,
    worker_id       text REFERENCES devices (id) ON DELETE SET NULL,
    retention_days  smallint NOT NULL CHECK (retention_days BETWEEN 1 AND 90),
    paused_at       timestamptz,
    meta            jsonb,
    public_key      bytea,
    key_epoch       integer NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL
);
CREATE INDEX addresses_account ON addresses (account_id, created_at DESC, id DESC);
CREATE INDEX addresses_worker ON addresses (worker_id) WHERE worker_id IS NOT NULL;

-- Deleted addresses are never issued again, to anyone: SHA-256 of the lowercased address.
CREATE TABLE retired_addresses (
    address_hash  bytea PRIMARY KEY,
    retired_at    timestamptz NOT NULL
);

CREATE TABLE activity (
    id          text PRIMARY KEY,
    account_id  text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    kind        text NOT NULL,
    inbox_id    text,
    worker_id   text,
    created_at  timestamptz NOT NULL
);
CREATE INDEX activity_account_page ON activity (account_id, created_at DESC, id DESC);
CREATE INDEX activity_created ON activity (created_at);

-- The transactional outbox: written in the same transaction as the change
-- that caused it; the webhook sender and push read it by `seq`.
CREATE TABLE events (
    seq         bigserial UNIQUE,
    id          text PRIMARY KEY,
    account_id  text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    type        text NOT NULL,
    payload     jsonb NOT NULL,
    created_at  timestamptz NOT NULL
);
CREATE INDEX events_account ON events (account_id, created_at);
