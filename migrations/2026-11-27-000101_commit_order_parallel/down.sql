ALTER TABLE events DROP COLUMN commit_seq;
DROP TABLE commit_in_flight;
