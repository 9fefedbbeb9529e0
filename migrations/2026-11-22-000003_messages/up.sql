-- Messages (sealed on arrival), their attachment blobs, usage counters.

CREATE TABLE messages (
    id           text PRIMARY KEY,
    account_id   text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    inbox_id     text NOT NULL REFERENCES addresses (id) ON DELETE CASCADE,
    received_at  timestamptz NOT NULL,
    read         boolean NOT NULL DEFAULT false,
    size_bytes   bigint NOT NULL,
    key_epoch    integer NOT NULL,
    -- The sealed content box (docs/protocol.md, Message content).
    content      jsonb NOT NULL,
    -- Held while the address is paused after a missed payment: stored, not listed.
    held         boolean NOT NULL DEFAULT false
);
CREATE INDEX messages_inbox_page ON messages (inbox_id, received_at DESC, id DESC) WHERE NOT held;
CREATE INDEX messages_received ON messages (received_at);

CREATE TABLE attachments (
    message_id  text NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    index       integer NOT NULL,
    -- Null when the attachment was over 20 MB and not stored.
    blob_key    text,
    size_bytes  bigint NOT NULL,
    PRIMARY KEY (message_id, index)
);

-- Fixed-window counters: received mail per 30-day window, object reads per
-- hour, sends per hour and day. `window_start` names the window.
CREATE TABLE usage_counters (
    account_id    text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    counter       text NOT NULL,
    window_start  timestamptz NOT NULL,
    used          bigint NOT NULL,
    PRIMARY KEY (account_id, counter, window_start)
);

-- Blobs written for a message whose rows are not committed yet. The message
-- transaction removes its rows; whatever is left after a crash is deleted
-- at start-up, so no orphan blob survives.
CREATE TABLE pending_blobs (
    blob_key    text PRIMARY KEY,
    written_at  timestamptz NOT NULL
);

-- Blobs whose rows are gone (address or account deleted, retention passed),
-- queued in the same transaction and deleted from the blob store after it.
CREATE TABLE blob_garbage (
    blob_key   text PRIMARY KEY,
    queued_at  timestamptz NOT NULL
);
