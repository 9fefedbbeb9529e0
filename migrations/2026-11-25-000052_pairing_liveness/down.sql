DROP INDEX pairing_opened_from;
ALTER TABLE pairing_sessions DROP COLUMN opened_from, DROP COLUMN last_polled_at;
