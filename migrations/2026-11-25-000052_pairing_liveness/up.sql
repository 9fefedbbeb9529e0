-- Pairing sessions nobody polls expire within minutes, and sessions per
-- client address are capped: the last poll and a hash of the opening
-- address are kept with each session.
ALTER TABLE pairing_sessions ADD COLUMN last_polled_at timestamptz;
UPDATE pairing_sessions SET last_polled_at = created_at;
ALTER TABLE pairing_sessions ALTER COLUMN last_polled_at SET NOT NULL;
ALTER TABLE pairing_sessions ADD COLUMN opened_from text;
CREATE INDEX pairing_opened_from ON pairing_sessions (opened_from, last_polled_at)
    WHERE claimed_by IS NULL;
