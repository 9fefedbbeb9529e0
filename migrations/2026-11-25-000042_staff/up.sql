-- Staff tokens: made by an operator command, shown once, stored as SHA-256.
CREATE TABLE staff_tokens (
    id          text PRIMARY KEY,
    name        text NOT NULL,
    token_hash  bytea NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL,
    revoked_at  timestamptz
);

-- Every staff action, newest read first.
CREATE TABLE staff_audit (
    id      bigserial PRIMARY KEY,
    actor   text NOT NULL,
    action  text NOT NULL,
    target  text,
    note    text,
    at      timestamptz NOT NULL
);
CREATE INDEX staff_audit_at ON staff_audit (at DESC);

-- Reports from anyone. account_id is what the target resolved to when the
-- report came in (staff only; the reporter is never told).
CREATE TABLE abuse_reports (
    id             text PRIMARY KEY,
    email_address  text,
    message_id     text,
    reason         text NOT NULL,
    details        text,
    contact        text,
    status         text NOT NULL CHECK (status IN ('open', 'resolved')),
    account_id     text,
    created_at     timestamptz NOT NULL,
    resolved_at    timestamptz,
    resolution     text,
    CHECK ((email_address IS NULL) <> (message_id IS NULL))
);
CREATE INDEX abuse_reports_created ON abuse_reports (created_at DESC);

-- A suspended account: nothing of it is deleted.
CREATE TABLE account_suspensions (
    account_id  text PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    reason      text NOT NULL,
    since       timestamptz NOT NULL
);
