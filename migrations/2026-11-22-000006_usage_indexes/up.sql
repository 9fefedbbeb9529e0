-- GET /usage and GET /overview count an account's stored messages, held ones
-- included. messages_inbox_page covers only mail that is not held; this
-- (small) index finds the held rest without scanning every message.
CREATE INDEX messages_held ON messages (inbox_id, received_at) WHERE held;
