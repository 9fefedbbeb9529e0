DROP INDEX messages_held;
