-- Secrets at rest. A sign-in challenge's secret is derived from its nonce
-- under the server key (SEALPOST_SERVER_KEY) and no longer stored; challenges
-- in flight (two minutes at most) are dropped with the column.
DELETE FROM auth_challenges;
ALTER TABLE auth_challenges DROP COLUMN challenge_secret;

-- Webhook signing secrets are sealed under the server key. `secret` keeps
-- rows written before this migration until the API or jobs process seals
-- them at start-up (it needs the key, which the database never sees).
ALTER TABLE webhooks ALTER COLUMN secret DROP NOT NULL;
ALTER TABLE webhooks ADD COLUMN secret_sealed bytea;
ALTER TABLE webhooks ADD CONSTRAINT webhooks_one_secret
    CHECK ((secret IS NULL) <> (secret_sealed IS NULL));
