-- Own domains (docs/domains.md). A claim is one row per account and name;
-- until ownership is proved it reserves nothing, so several accounts may
-- claim one name. At most one row per name is proved.
CREATE TABLE own_domains (
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    token TEXT NOT NULL UNIQUE,
    step TEXT NOT NULL,
    proved_at TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL,
    checked_at TIMESTAMPTZ,
    next_check_at TIMESTAMPTZ NOT NULL,
    checks_in_step INT4 NOT NULL DEFAULT 0,
    -- When the account's plan was first seen without own domains.
    plan_lost_at TIMESTAMPTZ,
    -- The DKIM key made at proof: the private key sealed under the server key.
    dkim_selector TEXT,
    dkim_algorithm TEXT,
    dkim_public_key BYTEA,
    dkim_private_key BYTEA,
    PRIMARY KEY (account_id, name)
);
CREATE UNIQUE INDEX own_domains_proved_name ON own_domains (name) WHERE proved_at IS NOT NULL;
CREATE INDEX own_domains_due ON own_domains (next_check_at);
