DROP INDEX pending_blobs_owner;
ALTER TABLE pending_blobs DROP COLUMN owner;
