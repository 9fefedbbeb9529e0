-- What a claim of the session makes: a device, or an agent (a machine such
-- as a CI runner). Sessions opened before were all devices.
ALTER TABLE pairing_sessions
    ADD COLUMN kind text NOT NULL DEFAULT 'device'
    CONSTRAINT pairing_sessions_kind CHECK (kind IN ('device', 'agent'));
