-- The account's event stream (GET /events/stream) reads events in commit
-- order, like the mail wait: only positions (commit_seq, seq) at or below
-- the clock's committed bound (docs/architecture.md, "Commit order").
--
-- A mail batch's events carry its number already. Every other change's
-- events take one here, at COMMIT: a deferred trigger takes the next number
-- from commit_clock, so the clock's row lock is held from the start of the
-- COMMIT to its end and no later number can be taken (by a batch or by
-- another change) before these events are visible. One number per
-- transaction (kept in a transaction-local setting). Notices (born fanned
-- out, push-only) are not streamed and take none.
CREATE FUNCTION events_take_commit_seq() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    taken  text := current_setting('sealpost.event_commit_seq', true);
    number bigint;
BEGIN
    IF taken IS NULL OR taken = '' THEN
        UPDATE commit_clock SET seq = seq + 1 RETURNING seq INTO number;
        PERFORM set_config('sealpost.event_commit_seq', number::text, true);
    ELSE
        number := taken::bigint;
    END IF;
    UPDATE events SET commit_seq = number WHERE seq = NEW.seq;
    RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER events_commit_seq AFTER INSERT ON events
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.commit_seq = 0 AND NOT NEW.fanned_out)
    EXECUTE FUNCTION events_take_commit_seq();

-- Wakes streams: the account id, delivered at COMMIT (PostgreSQL folds the
-- same payload sent twice in one transaction into one).
CREATE FUNCTION events_notify_account() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('sealpost_events', NEW.account_id);
    RETURN NULL;
END
$$;

CREATE TRIGGER events_notify AFTER INSERT ON events
    FOR EACH ROW WHEN (NOT NEW.fanned_out)
    EXECUTE FUNCTION events_notify_account();

CREATE INDEX events_stream ON events (account_id, commit_seq, seq);

-- The greatest stream position pruning deleted: a stream resuming below it
-- may have missed events and is told to resync. One row.
CREATE TABLE event_stream_floor (
    only_row    boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    commit_seq  bigint NOT NULL,
    seq         bigint NOT NULL
);
INSERT INTO event_stream_floor (only_row, commit_seq, seq) VALUES (true, 0, 0);
