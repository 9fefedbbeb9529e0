//! Locks that keep a background job to one process at a time, however many
//! processes run the jobs.

use diesel::QueryableByName;
use diesel::sql_types::{Bool, Integer};
use diesel_async::pooled_connection::deadpool::Object;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use sealpost_kernel::StoreError;

use crate::{PgStore, db_error};

/// The first half of every job lock's two-part key: the two-part key space
/// is apart from the one-part keys of migrations and ingest instances.
const JOB_LOCK_CLASS: i32 = 0x5ea1_70b5;

/// A job that one process at a time runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Job {
    /// The hourly sweep pass.
    Sweeps,
}

impl Job {
    fn key(self) -> i32 {
        match self {
            Job::Sweeps => 1,
        }
    }
}

/// Held while this process runs a job: a session-level advisory lock on a
/// connection of its own, out of the pool. Dropping it closes that
/// connection, which releases the lock (as the process dying does).
#[must_use = "the job is free for other processes as soon as this is dropped"]
pub struct JobLock {
    _session: AsyncPgConnection,
}

#[derive(QueryableByName)]
struct Taken {
    #[diesel(sql_type = Bool)]
    taken: bool,
}

impl PgStore {
    /// Takes `job`'s lock unless another process holds it (`None` then).
    pub async fn try_job_lock(&self, job: Job) -> Result<Option<JobLock>, StoreError> {
        let mut conn = self.conn().await?;
        let taken = diesel::sql_query("SELECT pg_try_advisory_lock($1, $2) AS taken")
            .bind::<Integer, _>(JOB_LOCK_CLASS)
            .bind::<Integer, _>(job.key())
            .get_result::<Taken>(&mut conn)
            .await;
        match taken {
            Ok(Taken { taken: true }) => Ok(Some(JobLock {
                _session: Object::take(conn),
            })),
            // Not taken: the connection holds nothing and goes back to the pool.
            Ok(Taken { taken: false }) => Ok(None),
            Err(error) => {
                // It may hold the lock after all: closing it releases it.
                drop(Object::take(conn));
                Err(db_error(error))
            }
        }
    }
}
