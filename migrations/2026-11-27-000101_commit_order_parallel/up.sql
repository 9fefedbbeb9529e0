-- Commit order without a lock held until COMMIT (see docs/architecture.md,
-- "Commit order"). A batch takes its number from commit_clock in a short
-- transaction of its own that also records the number here, in flight;
-- the batch's own transaction deletes that row first and holds its lock
-- until it ends, so its messages and the end of "in flight" become visible
-- together. A reader sees every number below the smallest one in flight
-- (or, when none is, up to commit_clock's), and no number below it can
-- still become visible.
--
-- A row left behind by a batch that never ran its transaction (a crash
-- between the two, a rolled-back batch whose clean-up failed) is unlocked;
-- committers delete such rows once they are older than a few seconds
-- (FOR UPDATE SKIP LOCKED leaves alone the rows of batches still running).
CREATE TABLE commit_in_flight (
    seq            bigint PRIMARY KEY,
    registered_at  timestamptz NOT NULL DEFAULT now()
);

-- The commit number of the batch that wrote an event (0: written by
-- another change), the same as its messages', so events can later be read
-- in the mail's commit order.
ALTER TABLE events ADD COLUMN commit_seq bigint NOT NULL DEFAULT 0;
