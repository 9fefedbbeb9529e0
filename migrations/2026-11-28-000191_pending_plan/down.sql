ALTER TABLE accounts DROP COLUMN pending_plan_id;
