-- The table holds every card subscription queued to be stopped at the
-- provider: those a later card checkout replaced, and (since 000331) those
-- of erased accounts. Its name said only the first.
ALTER TABLE superseded_card_subscriptions RENAME TO card_subscriptions_to_stop;
ALTER TABLE card_subscriptions_to_stop RENAME COLUMN superseded_at TO queued_at;
ALTER INDEX superseded_card_subscriptions_pkey RENAME TO card_subscriptions_to_stop_pkey;
ALTER INDEX superseded_card_subscriptions_account RENAME TO card_subscriptions_to_stop_account;
ALTER TABLE card_subscriptions_to_stop
    RENAME CONSTRAINT superseded_card_subscriptions_account_id_fkey
    TO card_subscriptions_to_stop_account_id_fkey;
