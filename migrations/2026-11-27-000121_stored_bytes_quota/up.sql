-- Registrations per client network: only a hash of the network is kept,
-- each row for an hour (the window the limit counts), then swept.
CREATE TABLE registrations (
    id            bigserial PRIMARY KEY,
    network_hash  bytea NOT NULL,
    registered_at timestamptz NOT NULL
);
CREATE INDEX registrations_by_network ON registrations (network_hash, registered_at);

-- What each message takes in storage, sealed: its content box as JSON and
-- its sealed attachment blobs. Kept with the row so a deletion takes off
-- exactly what the insert added.
ALTER TABLE messages ADD COLUMN stored_bytes bigint NOT NULL DEFAULT 0;
-- 61 bytes: a sealed blob's header (version, ephemeral key, nonce, tag).
UPDATE messages m SET stored_bytes = octet_length(m.content::text)
    + coalesce((SELECT sum(t.size_bytes + 61) FROM attachments t
                WHERE t.message_id = m.id AND t.blob_key IS NOT NULL), 0);
ALTER TABLE messages ALTER COLUMN stored_bytes DROP DEFAULT;

-- An account's stored bytes, the sum of its shards (a shard per message id,
-- as the received counter), changed in the transaction of every insert and
-- deletion of its messages.
CREATE TABLE stored_bytes (
    account_id text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    shard      smallint NOT NULL,
    bytes      bigint NOT NULL,
    PRIMARY KEY (account_id, shard)
);
INSERT INTO stored_bytes (account_id, shard, bytes)
    SELECT account_id, 0, sum(stored_bytes) FROM messages GROUP BY account_id;
