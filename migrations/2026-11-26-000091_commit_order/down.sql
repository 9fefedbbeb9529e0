DROP INDEX messages_inbox_commit;
ALTER TABLE messages DROP COLUMN commit_seq;
DROP TABLE commit_clock;
