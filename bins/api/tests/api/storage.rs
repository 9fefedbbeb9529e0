//! What the database holds: hashes, never tokens, phrases or verifiers.

use diesel::QueryableByName;
use diesel_async::RunQueryDsl;
use sealpost_seal::{b64, sha256};

use crate::support::{Api, new_keys};

#[derive(QueryableByName)]
struct Row {
    #[diesel(sql_type = diesel::sql_types::Text)]
    text: String,
}

#[derive(QueryableByName)]
struct Table {
    #[diesel(sql_type = diesel::sql_types::Text)]
    name: String,
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Every row of every table as text, one row a line.
pub async fn database_text(api: &Api) -> String {
    let mut conn = api.app.db.connect().await;
    let tables: Vec<Table> = diesel::sql_query(
        "SELECT table_name::text AS name FROM information_schema.tables \
         WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
    )
    .load(&mut conn)
    .await
    .unwrap();
    let mut everything = String::new();
    for table in &tables {
        let rows: Vec<Row> =
            diesel::sql_query(format!("SELECT t::text AS text FROM \"{}\" t", table.name))
                .load(&mut conn)
                .await
                .unwrap();
        for row in rows {
            everything.push_str(&row.text);
            everything.push('\n');
        }
    }
    everything
}

#[tokio::test(flavor = "multi_thread")]
async fn no_token_phrase_or_verifier_is_stored_in_the_clear() {
    let api = Api::spawn().await;
    let (phrase, keys) = new_keys();
    let registered = api.register(&keys).await;
    let second = api.sign_in(&keys).await;

    let everything = database_text(&api).await;
    assert!(
        everything.contains(&keys.account_id()),
        "the scan sees the data"
    );

    let verifier = keys.auth_verifier();
    let mut secrets = vec![
        ("phrase", phrase.words().to_string()),
        ("verifier (base64url)", b64::encode(&verifier)),
        ("verifier (hex)", hex(&verifier)),
    ];
    for (label, token) in [
        ("first token", &registered.token),
        ("second token", &second),
    ] {
        secrets.push((label, token.clone()));
        secrets.push((label, hex(&b64::decode(token).unwrap())));
    }
    for word in phrase
        .words()
        .split(' ')
        .collect::<std::collections::HashSet<_>>()
    {
        // Whole words could appear by chance in hex only if they were hex; none of the BIP-39 list is long hex.
        assert!(
            !everything.contains(&format!("{word} ")),
            "a phrase word is stored"
        );
    }
    for (label, secret) in secrets {
        assert!(
            !everything.contains(&secret),
            "{label} is stored in the clear"
        );
    }
    // What is stored instead: the hashes.
    assert!(everything.contains(&hex(&sha256(registered.token.as_bytes()))));
    assert!(everything.contains(&hex(&sha256(&verifier))));
}
