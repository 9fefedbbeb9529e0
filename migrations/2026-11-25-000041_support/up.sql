-- In-app support. The header and every message are two sealed boxes (one
-- for the support team's key, one for the account's); the service keeps
-- who wrote, when, the keys sealed to and the open and read flags.
CREATE TABLE support_tickets (
    id                  text PRIMARY KEY,
    account_id          text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    status              text NOT NULL CHECK (status IN ('open', 'resolved')),
    last_author         text NOT NULL CHECK (last_author IN ('account', 'staff')),
    -- A staff message the account has not read.
    unread              boolean NOT NULL DEFAULT false,
    header_for_staff    jsonb NOT NULL,
    header_for_account  jsonb NOT NULL,
    account_key         bytea NOT NULL,
    staff_key           bytea NOT NULL,
    binding             bytea,
    -- Ciphertext of the header and every message, both copies.
    stored_bytes        bigint NOT NULL,
    message_count       integer NOT NULL,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    closed_at           timestamptz
);
CREATE INDEX support_tickets_account ON support_tickets (account_id, created_at DESC);
CREATE INDEX support_tickets_idle ON support_tickets (updated_at) WHERE status = 'open';
CREATE INDEX support_tickets_closed ON support_tickets (closed_at) WHERE closed_at IS NOT NULL;

CREATE TABLE support_messages (
    id            text PRIMARY KEY,
    ticket_id     text NOT NULL REFERENCES support_tickets (id) ON DELETE CASCADE,
    account_id    text NOT NULL,
    author        text NOT NULL CHECK (author IN ('account', 'staff')),
    -- 0 for the ticket's first message.
    position      integer NOT NULL,
    staff_key     bytea NOT NULL,
    for_staff     jsonb NOT NULL,
    for_account   jsonb NOT NULL,
    stored_bytes  bigint NOT NULL,
    created_at    timestamptz NOT NULL
);
CREATE INDEX support_messages_ticket ON support_messages (ticket_id, position);
CREATE INDEX support_messages_replies ON support_messages (account_id, created_at)
    WHERE author = 'account' AND position > 0;

-- The account's latest vouching for a support key (POST /support/key).
CREATE TABLE support_bindings (
    account_id   text PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    account_key  bytea NOT NULL,
    staff_key    bytea NOT NULL,
    mac          bytea NOT NULL,
    updated_at   timestamptz NOT NULL
);

-- Operator switches: one row. support_key overrides SEALPOST_SUPPORT_KEY
-- once staff rotate it.
CREATE TABLE operator_switches (
    id               boolean PRIMARY KEY DEFAULT true CHECK (id),
    support_key      bytea,
    support_off      boolean NOT NULL DEFAULT false,
    webhooks_paused  boolean NOT NULL DEFAULT false,
    updated_at       timestamptz NOT NULL DEFAULT now()
);
INSERT INTO operator_switches (id) VALUES (true);
