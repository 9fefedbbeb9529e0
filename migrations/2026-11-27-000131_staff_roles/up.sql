-- Staff tokens expire and carry roles (read, reply, moderate, rotate).
-- Tokens made before keep what they could do, every role, for 90 days from
-- now; their holders then need a new one.
ALTER TABLE staff_tokens ADD COLUMN expires_at timestamptz;
UPDATE staff_tokens SET expires_at = now() + interval '90 days';
ALTER TABLE staff_tokens ALTER COLUMN expires_at SET NOT NULL;
ALTER TABLE staff_tokens ADD COLUMN roles text[] NOT NULL
    DEFAULT '{read,reply,moderate,rotate}';
ALTER TABLE staff_tokens ALTER COLUMN roles DROP DEFAULT;
ALTER TABLE staff_tokens ADD CONSTRAINT staff_tokens_known_roles
    CHECK (roles <@ ARRAY['read', 'reply', 'moderate', 'rotate']::text[]);

-- The staff lists page by (time, id), newest first.
DROP INDEX staff_audit_at;
CREATE INDEX staff_audit_at_id ON staff_audit (at DESC, id DESC);
DROP INDEX abuse_reports_created;
CREATE INDEX abuse_reports_created_id ON abuse_reports (created_at DESC, id DESC);
CREATE INDEX support_tickets_active ON support_tickets (updated_at DESC, id DESC);
