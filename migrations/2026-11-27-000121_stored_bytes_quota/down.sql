DROP TABLE stored_bytes;
ALTER TABLE messages DROP COLUMN stored_bytes;
DROP TABLE registrations;
