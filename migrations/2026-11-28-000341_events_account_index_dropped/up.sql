-- `events_account (account_id, created_at)` served the account's event
-- reads before the event stream; every read and the erasure's cascade now
-- go through `events_stream (account_id, commit_seq, seq)`, which leads
-- with the same column. Each delivery paid for the unused index's upkeep.
DROP INDEX events_account;
