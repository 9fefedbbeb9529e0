DROP TABLE event_stream_floor;
DROP INDEX events_stream;
DROP TRIGGER events_notify ON events;
DROP FUNCTION events_notify_account();
DROP TRIGGER events_commit_seq ON events;
DROP FUNCTION events_take_commit_seq();
