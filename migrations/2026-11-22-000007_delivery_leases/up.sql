-- Deliveries a sender holds: few at any time, counted per endpoint on every
-- claim to cap each endpoint's attempts in flight.
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (webhook_id) WHERE lease_until IS NOT NULL;
