-- A message's content is a sealed box: ciphertext, base64 in JSON, which
-- no compression shrinks. Stored EXTERNAL, PostgreSQL still moves large
-- values out of line but no longer runs pglz over every one first (for a
-- 100 KB message, most of the insert's CPU). Rows already stored keep
-- their form; both read the same.
ALTER TABLE messages ALTER COLUMN content SET STORAGE EXTERNAL;
