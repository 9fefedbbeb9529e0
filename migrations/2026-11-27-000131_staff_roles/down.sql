DROP INDEX support_tickets_active;
DROP INDEX abuse_reports_created_id;
CREATE INDEX abuse_reports_created ON abuse_reports (created_at DESC);
DROP INDEX staff_audit_at_id;
CREATE INDEX staff_audit_at ON staff_audit (at DESC);
ALTER TABLE staff_tokens DROP CONSTRAINT staff_tokens_known_roles;
ALTER TABLE staff_tokens DROP COLUMN roles;
ALTER TABLE staff_tokens DROP COLUMN expires_at;
