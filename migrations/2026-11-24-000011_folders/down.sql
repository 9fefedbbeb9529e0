DROP INDEX messages_account_folder;
ALTER TABLE messages DROP COLUMN outgoing, DROP COLUMN starred, DROP COLUMN folder;
