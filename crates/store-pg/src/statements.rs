//! The SQL of the API's busiest read as this store sends it, each statement
//! followed by its parameters (diesel's `debug_query`: the text sent to
//! PostgreSQL, then `-- binds: [...]`). `cargo xtask bench api` runs these
//! same statements in `pgbench` as the page's reference, so the reference
//! cannot drift from the store's queries.

use sealpost_kernel::{AddressId, PageRequest, Timestamp};
use sealpost_messages::store::Reader;

/// What `GET /inboxes/:id/messages` sends for a session's bearer token: the
/// session (one round trip), then the access check and the page together
/// (pipelined: one round trip).
pub struct PageStatements {
    pub bearer: String,
    pub check: String,
    pub page: String,
}

pub fn page_statements(
    token_hash: &[u8; 32],
    reader: &Reader,
    address: &AddressId,
    now: Timestamp,
    page: &PageRequest,
) -> PageStatements {
    let [check, page] = crate::messages::page_sql(reader, address, now, page);
    PageStatements {
        bearer: crate::accounts::session_bearer_sql(token_hash),
        check,
        page,
    }
}
