-- What an account wants pushed to its phones. No row: every kind on.
CREATE TABLE notification_preferences (
    account_id        text PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    new_mail          boolean NOT NULL,
    device_paired     boolean NOT NULL,
    device_offline    boolean NOT NULL,
    new_sign_in       boolean NOT NULL,
    billing           boolean NOT NULL,
    support           boolean NOT NULL,
    webhook_failures  boolean NOT NULL,
    updated_at        timestamptz NOT NULL
);

-- Addresses whose new mail is not pushed; gone with the address.
CREATE TABLE notification_mutes (
    inbox_id    text PRIMARY KEY REFERENCES addresses (id) ON DELETE CASCADE,
    account_id  text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    muted_at    timestamptz NOT NULL
);
CREATE INDEX notification_mutes_account ON notification_mutes (account_id);

-- Push tokens of the account's phones. A token belongs to one account at a
-- time: the latest that registered it.
CREATE TABLE push_devices (
    token          text PRIMARY KEY,
    account_id     text NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    platform       text NOT NULL CHECK (platform IN ('ios', 'android')),
    registered_at  timestamptz NOT NULL
);
CREATE INDEX push_devices_account ON push_devices (account_id, registered_at DESC);
