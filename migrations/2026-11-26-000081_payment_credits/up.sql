-- A payment that settled for a plan cheaper than the account's running paid
-- plan (an expired invoice confirmed after an upgrade) bought nothing: it is
-- kept as a credit and its refund is due (docs/api.md, Billing).
ALTER TABLE payments ADD COLUMN refund_due boolean NOT NULL DEFAULT false;
