DROP TABLE push_deliveries;
DROP TABLE push_batches;
DROP INDEX events_to_push;
ALTER TABLE events DROP COLUMN pushed;
