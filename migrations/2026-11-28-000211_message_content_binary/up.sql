-- A message's sealed content as bytes rather than JSON: version (1 byte)
-- || epk (32) || n (12) || t (16) || c, the binary box layout (version 2
-- is exactly the binary box of docs/protocol.md; rows sealed as version 1
-- keep the same field lengths). As base64 in jsonb, each insert had the
-- ingest encode and PostgreSQL parse about 4/3 of the ciphertext, and each
-- read decode it again. Rows stored before keep their `stored_bytes` (the
-- JSON's length), so deleting them takes off exactly what they added.
CREATE FUNCTION pg_temp.base64url_decode(text) RETURNS bytea
    LANGUAGE sql IMMUTABLE STRICT
    AS $$ SELECT decode(rpad(translate($1, '-_', '+/'), (length($1) + 3) / 4 * 4, '='), 'base64') $$;

ALTER TABLE messages ALTER COLUMN content TYPE bytea USING
    set_byte('\x00'::bytea, 0, (content ->> 'v')::int)
    || pg_temp.base64url_decode(content ->> 'epk')
    || pg_temp.base64url_decode(content ->> 'n')
    || pg_temp.base64url_decode(content ->> 't')
    || pg_temp.base64url_decode(content ->> 'c');

-- Ciphertext does not compress; large values still go out of line
-- (as migration 000181 set for the JSON form; a type change resets it).
ALTER TABLE messages ALTER COLUMN content SET STORAGE EXTERNAL;
