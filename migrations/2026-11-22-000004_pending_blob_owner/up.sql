-- The ingest instance that registered a pending blob. Each running instance
-- holds a session-level advisory lock on hashtextextended(owner, 0) for its
-- lifetime, so recovery can tell a crashed delivery (lock free) from one in
-- flight (lock held) at once, without waiting for a grace period. Rows
-- written before this column, and rows recovery has taken over, have none.
ALTER TABLE pending_blobs ADD COLUMN owner text;
CREATE INDEX pending_blobs_owner ON pending_blobs (owner);
