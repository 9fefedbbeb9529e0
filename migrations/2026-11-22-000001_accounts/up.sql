-- Accounts, sign-in challenges and operator sessions.
-- Secrets are kept only as SHA-256: the verifier, session tokens.

CREATE TABLE accounts (
    id                  text PRIMARY KEY,
    plan_id             text NOT NULL DEFAULT 'free',
    auth_public_key     bytea NOT NULL CHECK (length(auth_public_key) = 32),
    auth_verifier_hash  bytea NOT NULL CHECK (length(auth_verifier_hash) = 32),
    created_at          timestamptz NOT NULL
);

-- An erased account's id may never be registered again (docs/protocol.md
-- "Errors": an id used by anyone, ever, is id_taken). Only its hash is kept.
CREATE TABLE retired_account_ids (
    id_hash     bytea PRIMARY KEY,
    retired_at  timestamptz NOT NULL
);

-- No foreign key: challenges are issued for unknown accounts too, so the
-- answer does not reveal whether an account exists.
CREATE TABLE auth_challenges (
    nonce_hash        bytea PRIMARY KEY,
    account_id        text NOT NULL,
    challenge_secret  bytea NOT NULL,
    expires_at        timestamptz NOT NULL
);
CREATE INDEX auth_challenges_expiry ON auth_challenges (expires_at);

CREATE TABLE sessions (
    id          text PRIMARY KEY,
    account_id  text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    token_hash  bytea NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);
CREATE INDEX sessions_account ON sessions (account_id);
CREATE INDEX sessions_expiry ON sessions (expires_at);
