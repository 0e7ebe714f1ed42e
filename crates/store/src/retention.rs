//! Finished jobs whose logs are due to go, and their going: the metrics
//! rows, the measured log bytes and the removal's record, in one
//! transaction (the files are `LogStore::remove_job`'s). The rule that says
//! when is `jobdeck_core::retention`, kept here as the SQL that times each
//! finished job (`logs_due_at`); the scheduler applies it.

use jobdeck_api::{FailureAnalysis, LogRemovalPolicy};
use rusqlite::{params, OptionalExtension};

use super::changes::Change;
use super::error::StoreResult;
use super::job_row::{job_column_count, job_row, JOB_COLUMNS};
use super::usage::record_log_bytes_today;
use super::{EventRow, JobRow, Store};

/// What the scheduler records of one job whose logs it removed.
#[derive(Debug, Clone)]
pub struct LogsRemoved {
    pub job_id: String,
    /// Unix ms.
    pub at: i64,
    pub policy: LogRemovalPolicy,
    /// Its failure analysis as it was with its logs, to be served after.
    pub analysis: Option<FailureAnalysis>,
    pub event: EventRow,
}

/// The names the workspace's rule is kept under in `store_settings`, in
/// milliseconds: the minimum, and the maximum (absent: none).
const MINIMUM: &str = "logs_minimum_retention_ms";
const MAXIMUM: &str = "logs_maximum_retention_ms";
/// The minimum an admin set in the console, in milliseconds, which stands
/// over the config's until withdrawn (absent: none).
const CONSOLE_MINIMUM: &str = "logs_console_minimum_retention_ms";

/// Ten years in milliseconds: the contract's longest archive time, and so
/// no maximum at all.
const NO_MAXIMUM_MS: i64 = jobdeck_api::validate::DURATION_MAX_SECONDS * 1000;

/// The SQL of when a finished job's logs are due: `expire_at` (its own
/// archive time, SQL) held to `completed` (its finish, SQL) plus the
/// minimum and the maximum the store keeps. NULL while it has not finished.
/// `jobdeck_core::retention::LogRetentionRule::removal` is the same rule,
/// which names the bound that set the time (`GET /jobs/{id}` and the
/// removal's event say it); the API tests hold the two together.
pub(super) fn due_at_sql(expire_at: &str, completed: &str) -> String {
    format!(
        "MIN(MAX({expire_at}, {completed} + COALESCE((SELECT value FROM store_settings WHERE name = '{MINIMUM}'), 0)),
             {completed} + COALESCE((SELECT value FROM store_settings WHERE name = '{MAXIMUM}'), {NO_MAXIMUM_MS}))"
    )
}

/// Keeps `value` as the setting `name` in `store_settings`, or removes the
/// setting (`None`).
fn keep_setting(tx: &rusqlite::Transaction<'_>, name: &str, value: Option<i64>) -> rusqlite::Result<()> {
    match value {
        Some(value) => tx.execute(
            "INSERT INTO store_settings (name, value) VALUES (?1, ?2)
             ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            params![name, value],
        )?,
        None => tx.execute("DELETE FROM store_settings WHERE name = ?1", params![name])?,
    };
    Ok(())
}

impl Store {
    /// Keeps the workspace's rule (`maximum_ms` `None`: none) and, when it
    /// differs from the one kept (a changed `[logs]`, or the first start
    /// after the upgrade), times every finished job that still has logs by
    /// it again. Answers how many were timed again. The server calls this
    /// at start, before the scheduler looks for due jobs.
    pub async fn use_log_retention(&self, minimum_ms: i64, maximum_ms: Option<i64>) -> StoreResult<usize> {
        self.write(move |tx| {
            let kept = |name: &str| -> rusqlite::Result<Option<i64>> {
                tx.query_row("SELECT value FROM store_settings WHERE name = ?1", params![name], |r| r.get(0)).optional()
            };
            if kept(MINIMUM)? == Some(minimum_ms) && kept(MAXIMUM)? == maximum_ms {
                return Ok(0);
            }
            keep_setting(tx, MINIMUM, Some(minimum_ms))?;
            keep_setting(tx, MAXIMUM, maximum_ms)?;
            tx.execute(
                &format!(
                    "UPDATE jobs SET logs_due_at = {}
                     WHERE completed_at IS NOT NULL AND logs_removed_at IS NULL",
                    due_at_sql("logs_expire_at", "completed_at")
                ),
                [],
            )
            .map_err(Into::into)
        })
        .await
    }

    /// The minimum log retention an admin set in the console (ms), if any.
    pub async fn console_minimum_retention(&self) -> StoreResult<Option<i64>> {
        self.read(|conn| {
            conn.query_row("SELECT value FROM store_settings WHERE name = ?1", params![CONSOLE_MINIMUM], |r| r.get(0))
                .optional()
        })
        .await
    }

    /// Keeps the minimum log retention an admin set in the console (ms), or
    /// withdraws it (`None`). The jobs are timed by it when the scheduler
    /// then calls [`Store::use_log_retention`].
    pub async fn set_console_minimum_retention(&self, minimum_ms: Option<i64>) -> StoreResult<()> {
        self.write(move |tx| Ok(keep_setting(tx, CONSOLE_MINIMUM, minimum_ms)?)).await
    }

    /// Up to `limit` finished jobs that still have logs and whose logs are
    /// due at `now`, the longest due first (one range of the index on the
    /// due time of jobs that still have logs).
    pub async fn jobs_with_logs_due(&self, now: i64, limit: i64) -> StoreResult<Vec<JobRow>> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {JOB_COLUMNS} FROM jobs
                 WHERE logs_due_at IS NOT NULL AND logs_removed_at IS NULL AND logs_due_at <= ?1
                 ORDER BY logs_due_at LIMIT ?2"
            ))?;
            let rows = stmt.query_map(params![now, limit], job_row)?;
            rows.collect()
        })
        .await
    }

    /// Up to `limit` finished jobs that still have logs on disk, the one
    /// that finished longest ago first (the disk budget's order).
    pub async fn jobs_with_logs_longest_finished(&self, limit: i64) -> StoreResult<Vec<JobRow>> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {JOB_COLUMNS} FROM jobs
                 WHERE completed_at IS NOT NULL AND logs_removed_at IS NULL AND log_bytes > 0
                 ORDER BY completed_at LIMIT ?1"
            ))?;
            let rows = stmt.query_map(params![limit], job_row)?;
            rows.collect()
        })
        .await
    }

    /// The bytes every job's logs take, as last measured.
    pub async fn log_bytes_total(&self) -> StoreResult<i64> {
        self.read(|conn| {
            conn.query_row("SELECT COALESCE(SUM(log_bytes), 0) FROM jobs WHERE log_bytes > 0", [], |r| r.get(0))
        })
        .await
    }

    /// Up to `limit` jobs whose logs take the most (as last measured),
    /// largest first, each with the bytes they take.
    pub async fn jobs_with_largest_logs(&self, limit: i64) -> StoreResult<Vec<(JobRow, i64)>> {
        self.read(move |conn| {
            // The bytes come after the job's columns, which `job_row` reads
            // by their places.
            let bytes_at = job_column_count();
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {JOB_COLUMNS}, log_bytes FROM jobs WHERE log_bytes > 0 ORDER BY log_bytes DESC LIMIT ?1"
            ))?;
            let rows = stmt.query_map(params![limit], |r| Ok((job_row(r)?, r.get::<_, i64>(bytes_at)?)))?;
            rows.collect()
        })
        .await
    }

    /// When the next finished job's logs fall due (Unix ms), if any job
    /// still has logs.
    pub async fn next_logs_due(&self) -> StoreResult<Option<i64>> {
        self.read(|conn| {
            conn.query_row(
                "SELECT MIN(logs_due_at) FROM jobs WHERE logs_due_at IS NOT NULL AND logs_removed_at IS NULL",
                [],
                |r| r.get(0),
            )
        })
        .await
    }

    /// Records that a job's logs went: when, by which rule, its failure
    /// analysis kept, its metrics and measured log bytes dropped, and its
    /// event; answers the bytes its logs took as last measured. A job that
    /// started again meanwhile (no finish time) is left as it is; `None`
    /// then.
    pub async fn record_logs_removed(&self, removed: LogsRemoved) -> StoreResult<Option<i64>> {
        let job = removed.job_id.clone();
        let freed = self
            .write(move |tx| {
                let measured: Option<(String, i64)> = tx
                    .query_row(
                        "SELECT created_by, log_bytes FROM jobs
                         WHERE id = ?1 AND completed_at IS NOT NULL AND logs_removed_at IS NULL",
                        params![removed.job_id],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .optional()?;
                let Some((owner, bytes)) = measured else { return Ok(None) };
                tx.execute(
                    "UPDATE jobs SET logs_removed_at = ?2, logs_removed_by = ?3, log_bytes = 0 WHERE id = ?1",
                    params![removed.job_id, removed.at, removed.policy.as_str()],
                )?;
                tx.execute("DELETE FROM metrics WHERE job_id = ?1", params![removed.job_id])?;
                if let Some(analysis) = &removed.analysis {
                    tx.execute(
                        "INSERT INTO kept_failure_analyses (job_id, analysis) VALUES (?1, ?2)
                         ON CONFLICT (job_id) DO UPDATE SET analysis = excluded.analysis",
                        params![removed.job_id, super::job_row::json_column(analysis)],
                    )?;
                }
                super::events::record(tx, &removed.event)?;
                record_log_bytes_today(tx, &owner, removed.at)?;
                Ok(Some(bytes))
            })
            .await?;
        if freed.is_some() {
            self.publish([Change::Job(job.clone()), Change::Events(job.clone()), Change::Metrics(job)]);
        }
        Ok(freed)
    }

    /// The failure analysis kept when a job's logs went.
    pub async fn kept_failure_analysis(&self, id: String) -> StoreResult<Option<FailureAnalysis>> {
        let text: Option<String> = self
            .read(move |conn| {
                conn.query_row("SELECT analysis FROM kept_failure_analyses WHERE job_id = ?1", params![id], |r| {
                    r.get(0)
                })
                .optional()
            })
            .await?;
        // An analysis this release cannot read is as if none was kept: the
        // handler analyses what is left.
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    }

    /// When this store was upgraded to a release that removes logs (Unix
    /// ms), if it held jobs then.
    pub async fn logs_removal_upgraded_at(&self) -> StoreResult<Option<i64>> {
        self.read(|conn| {
            conn.query_row("SELECT value FROM store_settings WHERE name = 'logs_removal_upgrade'", [], |r| r.get(0))
                .optional()
        })
        .await
    }
}
