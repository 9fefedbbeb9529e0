DROP INDEX events_to_fan_out;
ALTER TABLE events DROP COLUMN fanned_out;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
ALTER TABLE devices DROP COLUMN public_key;
