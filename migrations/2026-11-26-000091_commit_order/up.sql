-- The order in which messages became visible, for the cursor of
-- GET /inboxes/:id/messages/wait (received_at is when DATA began, not when
-- the message was committed: a large message begun earlier can commit later).
--
-- One row. Each commit batch takes the next number by updating it as the
-- start of its last statements and keeps the row lock until its COMMIT is
-- done, so the next batch can take a number only once this one is visible
-- (or rolled back): numbers follow commit order, and a reader that sees a
-- number sees every smaller one. Releasing held mail takes a number too.
CREATE TABLE commit_clock (
    only_row  boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    seq       bigint NOT NULL
);
INSERT INTO commit_clock (only_row, seq) VALUES (true, 0);

-- 0: committed before the clock (and sent copies, which no wait returns).
ALTER TABLE messages ADD COLUMN commit_seq bigint NOT NULL DEFAULT 0;
CREATE INDEX messages_inbox_commit ON messages (inbox_id, commit_seq, id)
    WHERE NOT held AND NOT outgoing;
