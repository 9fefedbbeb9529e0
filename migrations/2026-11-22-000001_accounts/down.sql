DROP TABLE sessions;
DROP TABLE auth_challenges;
DROP TABLE retired_account_ids;
DROP TABLE accounts;
