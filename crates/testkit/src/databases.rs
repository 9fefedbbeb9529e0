//! The test databases' life on the PostgreSQL server, in one place: the
//! names they get, dropping one, and dropping what earlier runs left behind
//! (`cargo xtask test` before each run; the benchmarks before theirs).
//!
//! Names carry the process id of their creator: `sealpost_test_<pid>_<uuid>`
//! for tests and stacks, `<prefix><pid>` for a benchmark's database, so a
//! leftover is a database whose process no longer runs here.

use std::path::Path;

use diesel::QueryableByName;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use sealpost_store_pg::quote_ident;
use sealpost_store_pg::test_server::admin;
pub use sealpost_store_pg::test_server::{DatabaseError, drop_database};

/// Serialises template creation across test processes.
pub(crate) const TEMPLATE_LOCK: i64 = 0x5ea1_7e57;

/// The prefix of every test and stack database.
pub(crate) const TEST_PREFIX: &str = "sealpost_test_";

/// A new test database's name, owned by this process.
pub(crate) fn test_database_name() -> String {
    format!(
        "{TEST_PREFIX}{}_{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    )
}

/// Whether process `pid` runs on this machine.
pub fn process_alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

#[derive(QueryableByName)]
struct Named {
    #[diesel(sql_type = diesel::sql_types::Text)]
    datname: String,
}

#[derive(QueryableByName)]
struct Locked {
    #[diesel(sql_type = diesel::sql_types::Bool)]
    locked: bool,
}

/// What [`drop_test_leftovers`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Cleanup {
    /// Databases and templates dropped.
    pub dropped: usize,
    /// Test databases of processes still running (a concurrent run), kept.
    pub kept: usize,
    /// Whether the templates were dropped too (only when no run is going on).
    pub templates_dropped: bool,
}

/// Drops the test databases of processes that no longer run, and the
/// migrated templates (`sealpost_tpl_%`) when no other run uses them: tests
/// recreate their template once.
pub async fn drop_test_leftovers(server: &str) -> Result<Cleanup, DatabaseError> {
    let mut conn = admin(server).await?;
    let tests = list(&mut conn, r"sealpost\_test\_%").await?;
    let (live, leftovers): (Vec<String>, Vec<String>) =
        tests.into_iter().partition(|name| owner_runs(name));
    let mut cleanup = Cleanup {
        dropped: drop_all(&mut conn, leftovers).await,
        kept: live.len(),
        templates_dropped: false,
    };
    // Hold the template lock so no template is being built meanwhile.
    cleanup.templates_dropped = live.is_empty()
        && diesel::sql_query(format!(
            "SELECT pg_try_advisory_lock({TEMPLATE_LOCK}) AS locked"
        ))
        .get_result::<Locked>(&mut conn)
        .await?
        .locked;
    if cleanup.templates_dropped {
        let templates = list(&mut conn, r"sealpost\_tpl\_%").await?;
        cleanup.dropped += drop_all(&mut conn, templates).await;
    }
    Ok(cleanup)
}

/// Drops `<prefix><pid>` databases whose process no longer runs (a
/// benchmark's, from a run that did not finish).
pub async fn drop_run_leftovers(server: &str, prefix: &str) {
    let Ok(mut conn) = admin(server).await else {
        return;
    };
    let Ok(names) = list(&mut conn, &format!("{}%", prefix.replace('_', r"\_"))).await else {
        return;
    };
    let dead: Vec<String> = names
        .into_iter()
        .filter(|name| {
            name.strip_prefix(prefix)
                .and_then(|pid| pid.parse::<u32>().ok())
                .is_some_and(|pid| !process_alive(pid))
        })
        .collect();
    drop_all(&mut conn, dead).await;
}

async fn list(
    conn: &mut AsyncPgConnection,
    pattern: &str,
) -> Result<Vec<String>, diesel::result::Error> {
    let names: Vec<Named> =
        diesel::sql_query("SELECT datname FROM pg_database WHERE datname LIKE $1 ORDER BY datname")
            .bind::<diesel::sql_types::Text, _>(pattern)
            .load(conn)
            .await?;
    Ok(names.into_iter().map(|named| named.datname).collect())
}

/// Whether `sealpost_test_<pid>_<uuid>` belongs to a process running here.
fn owner_runs(name: &str) -> bool {
    name.strip_prefix(TEST_PREFIX)
        .and_then(|rest| rest.split('_').next())
        .and_then(|pid| pid.parse::<u32>().ok())
        .is_some_and(|pid| pid != std::process::id() && process_alive(pid))
}

async fn drop_all(conn: &mut AsyncPgConnection, names: Vec<String>) -> usize {
    let mut dropped = 0;
    for name in names {
        let quoted = quote_ident(&name);
        // A template cannot be dropped while marked as one.
        let result = async {
            diesel::sql_query(format!("ALTER DATABASE {quoted} IS_TEMPLATE false"))
                .execute(&mut *conn)
                .await?;
            diesel::sql_query(format!("DROP DATABASE IF EXISTS {quoted} WITH (FORCE)"))
                .execute(&mut *conn)
                .await
        }
        .await;
        if result.is_ok() {
            dropped += 1;
        }
    }
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_databases_of_running_processes() {
        assert!(owner_runs("sealpost_test_1_0123abcd"));
        assert!(!owner_runs("sealpost_test_4000000000_0123abcd"));
        assert!(!owner_runs("sealpost_test_xyz"));
        assert!(!owner_runs(&test_database_name()), "this process's own");
    }
}
