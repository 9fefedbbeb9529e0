ALTER TABLE pairing_sessions DROP COLUMN kind;
