-- Plans that renew by card (docs/api.md, Billing): the card provider's
-- subscription behind the account's paid period, its customer (for the
-- provider's billing portal) and the plan it renews, and whether it renews
-- (false once renewal is turned off at the provider, a renewal charge
-- failed, or the subscription ended there). The customer stays after the
-- subscription ends: the portal still shows its invoices.
ALTER TABLE accounts
    ADD COLUMN card_subscription_id text,
    ADD COLUMN card_customer_id     text,
    ADD COLUMN card_plan_id         text,
    ADD COLUMN renewing             boolean NOT NULL DEFAULT false,
    ADD CONSTRAINT accounts_renewing_has_subscription
        CHECK (NOT renewing OR (card_subscription_id IS NOT NULL AND card_plan_id IS NOT NULL));

-- Provider notices name the subscription.
CREATE UNIQUE INDEX accounts_card_subscription ON accounts (card_subscription_id)
    WHERE card_subscription_id IS NOT NULL;
