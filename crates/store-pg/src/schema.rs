// Mirrors migrations/. Checked against the migrated database by the
// `schema_matches_migrations` test.

diesel::table! {
    accounts (id) {
        id -> Text,
        plan_id -> Text,
        auth_public_key -> Bytea,
        auth_verifier_hash -> Bytea,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    retired_account_ids (id_hash) {
        id_hash -> Bytea,
        retired_at -> Timestamptz,
    }
}

diesel::table! {
    auth_challenges (nonce_hash) {
        nonce_hash -> Bytea,
        account_id -> Text,
        challenge_secret -> Bytea,
        expires_at -> Timestamptz,
    }
}

diesel::table! {
    sessions (id) {
        id -> Text,
        account_id -> Text,
        token_hash -> Bytea,
        created_at -> Timestamptz,
        expires_at -> Timestamptz,
    }
}

diesel::joinable!(sessions -> accounts (account_id));
diesel::allow_tables_to_appear_in_same_query!(
    accounts,
    retired_account_ids,
    auth_challenges,
    sessions
);
