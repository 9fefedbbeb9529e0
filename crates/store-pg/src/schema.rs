// Mirrors migrations/. Checked against the migrated database by the
// `schema_matches_migrations` test.

diesel::table! {
    accounts (id) {
        id -> Text,
        plan_id -> Text,
        auth_public_key -> Bytea,
        auth_verifier_hash -> Bytea,
        created_at -> Timestamptz,
        paid_until -> Nullable<Timestamptz>,
        lapsed_plan_id -> Nullable<Text>,
        paused_since -> Nullable<Timestamptz>,
        pause_deletes_at -> Nullable<Timestamptz>,
        renewal_reminded_for -> Nullable<Timestamptz>,
        renewal_reminded_days -> Nullable<Int2>,
        pending_plan_id -> Nullable<Text>,
        card_subscription_id -> Nullable<Text>,
        card_customer_id -> Nullable<Text>,
        card_plan_id -> Nullable<Text>,
        renewing -> Bool,
    }
}

diesel::table! {
    card_subscriptions_to_stop (subscription_id) {
        subscription_id -> Text,
        account_id -> Nullable<Text>,
        queued_at -> Timestamptz,
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

diesel::table! {
    retired_ids (kind, id_hash) {
        kind -> Text,
        id_hash -> Bytea,
        retired_at -> Timestamptz,
    }
}

diesel::table! {
    devices (id) {
        id -> Text,
        account_id -> Text,
        kind -> Text,
        platform -> Text,
        disabled -> Bool,
        connected -> Bool,
        created_at -> Timestamptz,
        last_active_at -> Nullable<Timestamptz>,
        paused_at -> Nullable<Timestamptz>,
        profile -> Nullable<Jsonb>,
        key_bundle -> Nullable<Jsonb>,
        keys_updated_at -> Nullable<Timestamptz>,
        public_key -> Nullable<Bytea>,
    }
}

diesel::table! {
    device_credentials (token_hash) {
        token_hash -> Bytea,
        device_id -> Text,
        account_id -> Text,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    pairing_sessions (id) {
        id -> Text,
        token_hash -> Bytea,
        code -> Text,
        state -> Text,
        platform -> Text,
        device_name -> Text,
        public_key -> Bytea,
        handoff_key -> Bytea,
        created_at -> Timestamptz,
        detected_by -> Nullable<Text>,
        claimed_by -> Nullable<Text>,
        #[sql_name = "worker_id"]
        device_id -> Nullable<Text>,
        handoff -> Nullable<Jsonb>,
        last_polled_at -> Timestamptz,
        opened_from -> Nullable<Text>,
        kind -> Text,
    }
}

diesel::table! {
    registrations (id) {
        id -> Int8,
        network_hash -> Bytea,
        registered_at -> Timestamptz,
    }
}

diesel::table! {
    pairing_lookup_failures (key, at) {
        key -> Text,
        at -> Timestamptz,
    }
}

diesel::table! {
    addresses (id) {
        id -> Text,
        account_id -> Text,
        email_address -> Text,
        domain -> Text,
        #[sql_name = "worker_id"]
        device_id -> Nullable<Text>,
        retention_days -> Int2,
        paused_at -> Nullable<Timestamptz>,
        meta -> Nullable<Jsonb>,
        public_key -> Nullable<Bytea>,
        key_epoch -> Int4,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    retired_addresses (address_hash) {
        address_hash -> Bytea,
        retired_at -> Timestamptz,
    }
}

diesel::table! {
    activity (id) {
        id -> Text,
        account_id -> Text,
        kind -> Text,
        #[sql_name = "inbox_id"]
        address_id -> Nullable<Text>,
        #[sql_name = "worker_id"]
        device_id -> Nullable<Text>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    events (id) {
        seq -> Int8,
        id -> Text,
        account_id -> Text,
        #[sql_name = "type"]
        event_type -> Text,
        payload -> Jsonb,
        created_at -> Timestamptz,
        fanned_out -> Bool,
        pushed -> Bool,
        commit_seq -> Int8,
    }
}

diesel::allow_tables_to_appear_in_same_query!(
    devices,
    device_credentials,
    addresses,
    pairing_sessions,
    accounts
);

diesel::table! {
    messages (id) {
        id -> Text,
        account_id -> Text,
        #[sql_name = "inbox_id"]
        address_id -> Text,
        received_at -> Timestamptz,
        read -> Bool,
        size_bytes -> Int8,
        key_epoch -> Int4,
        content -> Bytea,
        held -> Bool,
        folder -> Text,
        starred -> Bool,
        outgoing -> Bool,
        commit_seq -> Int8,
        stored_bytes -> Int8,
    }
}

diesel::table! {
    stored_bytes (account_id, shard) {
        account_id -> Text,
        shard -> Int2,
        bytes -> Int8,
    }
}

diesel::table! {
    attachments (message_id, index) {
        message_id -> Text,
        index -> Int4,
        blob_key -> Nullable<Text>,
        size_bytes -> Int8,
    }
}

diesel::table! {
    usage_counters (account_id, counter, window_start, shard) {
        account_id -> Text,
        counter -> Text,
        window_start -> Timestamptz,
        used -> Int8,
        shard -> Int2,
    }
}

diesel::table! {
    pending_blobs (blob_key) {
        blob_key -> Text,
        written_at -> Timestamptz,
        owner -> Nullable<Text>,
    }
}

diesel::table! {
    blob_garbage (blob_key) {
        blob_key -> Text,
        queued_at -> Timestamptz,
    }
}

diesel::joinable!(messages -> addresses (address_id));
diesel::joinable!(attachments -> messages (message_id));
diesel::allow_tables_to_appear_in_same_query!(messages, attachments);
diesel::allow_tables_to_appear_in_same_query!(messages, addresses);
diesel::allow_tables_to_appear_in_same_query!(messages, devices);
diesel::allow_tables_to_appear_in_same_query!(attachments, addresses);
diesel::joinable!(addresses -> accounts (account_id));

diesel::table! {
    webhooks (id) {
        id -> Text,
        account_id -> Text,
        url -> Text,
        events -> Jsonb,
        meta -> Nullable<Jsonb>,
        secret -> Nullable<Text>,
        secret_sealed -> Nullable<Bytea>,
        active -> Bool,
        disabled_reason -> Nullable<Text>,
        active_since -> Timestamptz,
        failing_since -> Nullable<Timestamptz>,
        last_success_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    webhook_deliveries (id) {
        id -> Text,
        webhook_id -> Text,
        account_id -> Text,
        event_id -> Text,
        event_type -> Text,
        body -> Text,
        status -> Text,
        attempts -> Int4,
        response_status -> Nullable<Int4>,
        error -> Nullable<Text>,
        created_at -> Timestamptz,
        last_attempt_at -> Nullable<Timestamptz>,
        next_attempt_at -> Nullable<Timestamptz>,
        manual -> Bool,
        lease_until -> Nullable<Timestamptz>,
    }
}

diesel::joinable!(webhook_deliveries -> webhooks (webhook_id));
diesel::allow_tables_to_appear_in_same_query!(webhooks, webhook_deliveries);

diesel::allow_tables_to_appear_in_same_query!(webhooks, events);
diesel::joinable!(webhooks -> accounts (account_id));
diesel::allow_tables_to_appear_in_same_query!(webhooks, accounts);

diesel::table! {
    payments (id) {
        id -> Text,
        account_id -> Text,
        plan_id -> Text,
        provider -> Text,
        amount -> Int8,
        currency -> Text,
        status -> Text,
        reference -> Text,
        checkout_url -> Text,
        created_at -> Timestamptz,
        settled_at -> Nullable<Timestamptz>,
        refund_due -> Bool,
    }
}

diesel::joinable!(payments -> accounts (account_id));
diesel::allow_tables_to_appear_in_same_query!(payments, accounts);

diesel::table! {
    notification_preferences (account_id) {
        account_id -> Text,
        new_mail -> Bool,
        device_paired -> Bool,
        device_offline -> Bool,
        new_sign_in -> Bool,
        billing -> Bool,
        support -> Bool,
        webhook_failures -> Bool,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    notification_mutes (address_id) {
        #[sql_name = "inbox_id"]
        address_id -> Text,
        account_id -> Text,
        muted_at -> Timestamptz,
    }
}

diesel::table! {
    push_devices (token) {
        token -> Text,
        account_id -> Text,
        platform -> Text,
        registered_at -> Timestamptz,
    }
}

diesel::table! {
    push_batches (account_id, kind) {
        account_id -> Text,
        kind -> Text,
        count -> Int4,
        due_at -> Timestamptz,
    }
}

diesel::table! {
    push_deliveries (id) {
        id -> Int8,
        token -> Text,
        account_id -> Text,
        platform -> Text,
        kind -> Text,
        count -> Int4,
        attempts -> Int4,
        next_attempt_at -> Timestamptz,
        lease_until -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    team_members (owner_id, member_id) {
        owner_id -> Text,
        member_id -> Text,
        public_key -> Bytea,
        pin -> Jsonb,
        joined_at -> Timestamptz,
    }
}

diesel::table! {
    team_grants (owner_id, member_id, address_id, epoch) {
        owner_id -> Text,
        member_id -> Text,
        #[sql_name = "inbox_id"]
        address_id -> Text,
        epoch -> Int4,
        access -> Text,
        sealed -> Jsonb,
        granted_at -> Timestamptz,
    }
}

diesel::joinable!(team_grants -> addresses (address_id));
diesel::allow_tables_to_appear_in_same_query!(team_members, team_grants);
diesel::allow_tables_to_appear_in_same_query!(team_members, addresses);
diesel::allow_tables_to_appear_in_same_query!(team_members, accounts);
diesel::allow_tables_to_appear_in_same_query!(team_grants, addresses);
diesel::allow_tables_to_appear_in_same_query!(team_grants, accounts);
diesel::allow_tables_to_appear_in_same_query!(team_grants, messages);
diesel::allow_tables_to_appear_in_same_query!(accounts, messages);

diesel::table! {
    support_tickets (id) {
        id -> Text,
        account_id -> Text,
        status -> Text,
        last_author -> Text,
        unread -> Bool,
        header_for_staff -> Jsonb,
        header_for_account -> Jsonb,
        account_key -> Bytea,
        staff_key -> Bytea,
        binding -> Nullable<Bytea>,
        stored_bytes -> Int8,
        message_count -> Int4,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        closed_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    support_messages (id) {
        id -> Text,
        ticket_id -> Text,
        account_id -> Text,
        author -> Text,
        position -> Int4,
        staff_key -> Bytea,
        for_staff -> Jsonb,
        for_account -> Jsonb,
        stored_bytes -> Int8,
        created_at -> Timestamptz,
    }
}

diesel::table! {
    support_bindings (account_id) {
        account_id -> Text,
        account_key -> Bytea,
        staff_key -> Bytea,
        mac -> Bytea,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    operator_switches (id) {
        id -> Bool,
        support_key -> Nullable<Bytea>,
        support_off -> Bool,
        webhooks_paused -> Bool,
        updated_at -> Timestamptz,
    }
}

diesel::table! {
    staff_tokens (id) {
        id -> Text,
        name -> Text,
        token_hash -> Bytea,
        created_at -> Timestamptz,
        revoked_at -> Nullable<Timestamptz>,
        expires_at -> Timestamptz,
        roles -> Array<Text>,
    }
}

diesel::table! {
    staff_audit (id) {
        id -> Int8,
        actor -> Text,
        action -> Text,
        target -> Nullable<Text>,
        note -> Nullable<Text>,
        at -> Timestamptz,
    }
}

diesel::table! {
    abuse_reports (id) {
        id -> Text,
        email_address -> Nullable<Text>,
        message_id -> Nullable<Text>,
        reason -> Text,
        details -> Nullable<Text>,
        contact -> Nullable<Text>,
        status -> Text,
        account_id -> Nullable<Text>,
        created_at -> Timestamptz,
        resolved_at -> Nullable<Timestamptz>,
        resolution -> Nullable<Text>,
    }
}

diesel::table! {
    account_suspensions (account_id) {
        account_id -> Text,
        reason -> Text,
        since -> Timestamptz,
    }
}

diesel::table! {
    own_domains (account_id, name) {
        account_id -> Text,
        name -> Text,
        token -> Text,
        step -> Text,
        proved_at -> Nullable<Timestamptz>,
        created_at -> Timestamptz,
        checked_at -> Nullable<Timestamptz>,
        next_check_at -> Timestamptz,
        checks_in_step -> Int4,
        plan_lost_at -> Nullable<Timestamptz>,
        dkim_selector -> Nullable<Text>,
        dkim_algorithm -> Nullable<Text>,
        dkim_public_key -> Nullable<Bytea>,
        dkim_private_key -> Nullable<Bytea>,
    }
}
diesel::joinable!(own_domains -> accounts (account_id));
diesel::allow_tables_to_appear_in_same_query!(own_domains, accounts);
diesel::allow_tables_to_appear_in_same_query!(own_domains, addresses);
diesel::allow_tables_to_appear_in_same_query!(account_suspensions, sessions);
diesel::allow_tables_to_appear_in_same_query!(account_suspensions, device_credentials);
diesel::allow_tables_to_appear_in_same_query!(account_suspensions, addresses);
diesel::allow_tables_to_appear_in_same_query!(account_suspensions, accounts);
// The access rule looks for a suspended owner inside mail and grant queries.
diesel::allow_tables_to_appear_in_same_query!(account_suspensions, messages);
diesel::allow_tables_to_appear_in_same_query!(account_suspensions, team_grants);

diesel::table! {
    commit_clock (only_row) {
        only_row -> Bool,
        seq -> Int8,
    }
}

diesel::table! {
    commit_in_flight (seq) {
        seq -> Int8,
        registered_at -> Timestamptz,
    }
}

diesel::table! {
    event_stream_floor (only_row) {
        only_row -> Bool,
        commit_seq -> Int8,
        seq -> Int8,
    }
}

diesel::table! {
    api_keys (id) {
        id -> Text,
        account_id -> Text,
        token_hash -> Bytea,
        label -> Jsonb,
        created_at -> Timestamptz,
        last_used_at -> Nullable<Timestamptz>,
        paused_at -> Nullable<Timestamptz>,
    }
}

diesel::allow_tables_to_appear_in_same_query!(account_suspensions, api_keys);
