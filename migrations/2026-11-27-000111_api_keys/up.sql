-- Long-lived API keys (docs/api.md "API keys"). The token is stored only as
-- its SHA-256, like session and device tokens; the label is sealed by the
-- client. last_used_at is kept to the hour (it is written at most once an
-- hour per key). paused_at is set while a missed payment pauses the key.
CREATE TABLE api_keys (
    id            text PRIMARY KEY,
    account_id    text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    token_hash    bytea NOT NULL UNIQUE,
    label         jsonb NOT NULL,
    created_at    timestamptz NOT NULL,
    last_used_at  timestamptz,
    paused_at     timestamptz
);
CREATE INDEX api_keys_account ON api_keys (account_id, created_at, id);
