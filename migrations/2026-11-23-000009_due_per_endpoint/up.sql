-- The sender's claim walks the endpoints that have pending deliveries and
-- takes each one's oldest due deliveries up to its free attempt slots, so an
-- endpoint at its cap (a silent or failing receiver) never fills the claim
-- and crowds out the others' due deliveries.
CREATE INDEX webhook_deliveries_due_per_endpoint
    ON webhook_deliveries (webhook_id, next_attempt_at) WHERE status = 'pending';
-- Leased deliveries per endpoint, counted on every claim: with the lease end
-- in the index the count reads only the endpoint's live leases.
CREATE INDEX webhook_deliveries_in_flight
    ON webhook_deliveries (webhook_id, lease_until) WHERE lease_until IS NOT NULL;
DROP INDEX webhook_deliveries_leased;
