-- The last renewal reminder sent (7 days, then 1 day before the end of a
-- paid period) and the period end it was about: a payment moves the end,
-- so the next period is reminded again.
ALTER TABLE accounts
    ADD COLUMN renewal_reminded_for timestamptz,
    ADD COLUMN renewal_reminded_days smallint;
