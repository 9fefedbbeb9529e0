DROP INDEX accounts_card_subscription;
ALTER TABLE accounts
    DROP CONSTRAINT accounts_renewing_has_subscription,
    DROP COLUMN renewing,
    DROP COLUMN card_plan_id,
    DROP COLUMN card_customer_id,
    DROP COLUMN card_subscription_id;
