ALTER TABLE accounts DROP COLUMN renewal_reminded_days;
ALTER TABLE accounts DROP COLUMN renewal_reminded_for;
