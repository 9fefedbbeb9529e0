DELETE FROM superseded_card_subscriptions WHERE account_id IS NULL;
ALTER TABLE superseded_card_subscriptions
    DROP CONSTRAINT superseded_card_subscriptions_account_id_fkey,
    ADD CONSTRAINT superseded_card_subscriptions_account_id_fkey
        FOREIGN KEY (account_id) REFERENCES accounts (id) ON DELETE CASCADE,
    ALTER COLUMN account_id SET NOT NULL;
