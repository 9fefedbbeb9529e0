CREATE FUNCTION pg_temp.base64url_encode(bytea) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT
    AS $$ SELECT translate(encode($1, 'base64'), E'+/=\n', '-_') $$;

ALTER TABLE messages ALTER COLUMN content TYPE jsonb USING jsonb_build_object(
    'v', get_byte(content, 0),
    'epk', pg_temp.base64url_encode(substring(content FROM 2 FOR 32)),
    'n', pg_temp.base64url_encode(substring(content FROM 34 FOR 12)),
    't', pg_temp.base64url_encode(substring(content FROM 46 FOR 16)),
    'c', pg_temp.base64url_encode(substring(content FROM 62)));

ALTER TABLE messages ALTER COLUMN content SET STORAGE EXTERNAL;
