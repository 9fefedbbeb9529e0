-- Card subscriptions a later card checkout replaced while they still
-- renewed (docs/api.md, Billing): the provider is told to stop each one's
-- renewal when the new one is settled, and the hourly sweep tells it again
-- until it confirms. A row goes once the provider confirmed (its answer, or
-- its notice that the subscription no longer renews).
CREATE TABLE superseded_card_subscriptions (
    subscription_id text PRIMARY KEY,
    account_id      text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    superseded_at   timestamptz NOT NULL
);

CREATE INDEX superseded_card_subscriptions_account
    ON superseded_card_subscriptions (account_id);
