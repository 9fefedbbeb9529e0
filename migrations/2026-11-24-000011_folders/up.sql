-- Folders and stars: every message sits in one folder; `outgoing` marks the
-- copy of mail sent from the service (it lives in `sent`, never `inbox`).
ALTER TABLE messages
    ADD COLUMN folder text NOT NULL DEFAULT 'inbox'
        CHECK (folder IN ('inbox', 'sent', 'archive', 'trash')),
    ADD COLUMN starred boolean NOT NULL DEFAULT false,
    ADD COLUMN outgoing boolean NOT NULL DEFAULT false;
-- `GET /messages`: the account's listed mail by folder, newest first.
CREATE INDEX messages_account_folder ON messages (account_id, folder, received_at DESC, id DESC)
    WHERE NOT held;
