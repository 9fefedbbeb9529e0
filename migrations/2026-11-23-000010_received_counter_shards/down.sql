-- Fold every counter's shards back into one row (shard 0) before dropping the column.
CREATE TEMPORARY TABLE usage_counters_folded AS
    SELECT account_id, counter, window_start, sum(used)::bigint AS used
    FROM usage_counters GROUP BY account_id, counter, window_start;
DELETE FROM usage_counters;
ALTER TABLE usage_counters DROP CONSTRAINT usage_counters_pkey;
ALTER TABLE usage_counters DROP COLUMN shard;
INSERT INTO usage_counters (account_id, counter, window_start, used)
    SELECT account_id, counter, window_start, used FROM usage_counters_folded;
ALTER TABLE usage_counters ADD PRIMARY KEY (account_id, counter, window_start);
DROP TABLE usage_counters_folded;
