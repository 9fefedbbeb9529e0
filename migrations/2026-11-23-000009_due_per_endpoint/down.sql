CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (webhook_id) WHERE lease_until IS NOT NULL;
DROP INDEX webhook_deliveries_in_flight;
DROP INDEX webhook_deliveries_due_per_endpoint;
