-- Sealed secrets cannot be opened without the server key: endpoints whose
-- secret is sealed get a placeholder and need their secret rotated.
ALTER TABLE webhooks DROP CONSTRAINT webhooks_one_secret;
UPDATE webhooks SET secret = 'whsec_rotate_me' WHERE secret IS NULL;
ALTER TABLE webhooks DROP COLUMN secret_sealed;
ALTER TABLE webhooks ALTER COLUMN secret SET NOT NULL;
DELETE FROM auth_challenges;
ALTER TABLE auth_challenges ADD COLUMN challenge_secret bytea NOT NULL;
