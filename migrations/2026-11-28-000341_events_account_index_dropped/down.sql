CREATE INDEX events_account ON events (account_id, created_at);
