-- Spread a counter over several rows per (account, counter, window) so that
-- concurrent deliveries to one account do not all wait on one row lock from
-- their upsert until their commit. A counter's value is the sum of its
-- shards. Only `received` uses more than shard 0; every existing row
-- (object reads included) becomes shard 0, so no count changes.
ALTER TABLE usage_counters ADD COLUMN shard smallint NOT NULL DEFAULT 0;
ALTER TABLE usage_counters DROP CONSTRAINT usage_counters_pkey;
ALTER TABLE usage_counters ADD PRIMARY KEY (account_id, counter, window_start, shard);
