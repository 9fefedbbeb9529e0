-- A cheaper plan chosen during a paid period, applied by the hourly sweep
-- at `paid_until` (docs/api.md, "Plans and usage").
ALTER TABLE accounts ADD COLUMN pending_plan_id TEXT;
