-- Erasing an account whose card subscription still renews queues that
-- subscription to be stopped at the provider, like a replaced one: the
-- row must outlive the account, and keeps no account id once it is gone
-- (erased ids are remembered as SHA-256 only).
ALTER TABLE superseded_card_subscriptions
    ALTER COLUMN account_id DROP NOT NULL,
    DROP CONSTRAINT superseded_card_subscriptions_account_id_fkey,
    ADD CONSTRAINT superseded_card_subscriptions_account_id_fkey
        FOREIGN KEY (account_id) REFERENCES accounts (id) ON DELETE SET NULL;
