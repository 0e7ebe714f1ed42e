//! Jobs.

use jobdeck_api::{JobSpec, JobState, Visibility};
use rusqlite::{params, params_from_iter, OptionalExtension};

use super::changes::Change;
use super::error::{StoreError, StoreResult};
use super::job_row::{job_row, job_row_or_unreadable, json_column, node_groups_column, JOB_COLUMNS};
use super::names::column;
use super::usage::{record_charge, record_log_bytes_today, Holding};
use super::{EventRow, JobRow, JobRuntime, Store, UnreadableJob};

/// The states in which a job still needs the scheduler's attention.
pub const ACTIVE_STATES: &[JobState] = &[
    JobState::Queueing,
    JobState::Starting,
    JobState::Running,
    JobState::Stopping,
    JobState::Deleting,
    JobState::PendingRetry,
    JobState::Restarting,
    JobState::Terminating,
    JobState::Awaiting,
];

/// The SQL of when a finished job's logs may go by its own archive time:
/// `completed` (Unix ms, or NULL while it has not finished) plus the
/// `ttl_seconds_after_finished` of `spec` (its JSON), with the contract's
/// default and limit. Migration 18 wrote the same for the jobs it found.
fn logs_expire_at(completed: &str, spec: &str) -> String {
    format!(
        "{completed} + MIN(MAX(COALESCE(json_extract({spec}, '$.ttl_seconds_after_finished'), {}), 0), {}) * 1000",
        jobdeck_api::defaults::TTL_SECONDS_AFTER_FINISHED,
        jobdeck_api::validate::DURATION_MAX_SECONDS,
    )
}

/// The SQL of when a finished job's logs are due: [`logs_expire_at`] held
/// to the workspace's minimum and maximum retention as the store keeps them
/// (`retention::RULE_SETTINGS`; none kept: neither).
fn logs_due_at(completed: &str, spec: &str) -> String {
    super::retention::due_at_sql(&logs_expire_at(completed, spec), completed)
}

impl Store {
    /// Stores a new job, with its first events, in one transaction.
    pub async fn insert_job(&self, row: JobRow, events: Vec<EventRow>) -> StoreResult<()> {
        let id = row.id.clone();
        self.write(move |tx| insert_job_row(tx, &row, &events)).await?;
        self.publish([Change::Job(id.clone()), Change::Events(id)]);
        Ok(())
    }

    /// Stores many new jobs in one transaction: all or none. For filling a
    /// store at once (the list benchmark's million jobs); the scheduler
    /// stores a job it creates with [`Store::insert_job`].
    pub async fn insert_jobs(&self, rows: Vec<JobRow>) -> StoreResult<()> {
        let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
        self.write(move |tx| rows.iter().try_for_each(|row| insert_job_row(tx, row, &[]))).await?;
        self.publish(ids.into_iter().map(Change::Job));
        Ok(())
    }

    /// A job by id, whoever may see it (for the scheduler).
    pub async fn job(&self, id: String) -> StoreResult<Option<JobRow>> {
        self.read(move |conn| {
            conn.query_row(&format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?1"), params![id], job_row).optional()
        })
        .await
    }

    /// Up to `limit` jobs named `name` that `viewer` may see, newest first
    /// (Lepton clients address a job by its name as well as by its id).
    pub async fn jobs_named_visible_to(&self, name: String, viewer: String, limit: i64) -> StoreResult<Vec<JobRow>> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {JOB_COLUMNS} FROM jobs WHERE name = ?1 AND (visibility = 'public' OR created_by = ?2)
                 ORDER BY created_at DESC, id DESC LIMIT ?3"
            ))?;
            let rows = stmt.query_map(params![name, viewer, limit], job_row)?;
            rows.collect()
        })
        .await
    }

    /// The ids of the reruns of job `id` that `viewer` may see, oldest
    /// first.
    pub async fn reruns_visible_to(&self, id: String, viewer: String) -> StoreResult<Vec<String>> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT id FROM jobs WHERE rerun_of = ?1 AND (visibility = 'public' OR created_by = ?2)
                 ORDER BY created_at, id",
            )?;
            let rows = stmt.query_map(params![id, viewer], |r| r.get(0))?;
            rows.collect()
        })
        .await
    }

    /// A job by id, if `viewer` may see it.
    pub async fn job_visible_to(&self, id: String, viewer: String) -> StoreResult<Option<JobRow>> {
        self.read(move |conn| {
            conn.query_row(
                &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?1 AND (visibility = 'public' OR created_by = ?2)"),
                params![id, viewer],
                job_row,
            )
            .optional()
        })
        .await
    }

    /// Every job the scheduler still has to look after.
    pub async fn active_jobs(&self) -> StoreResult<Vec<JobRow>> {
        self.read(|conn| active_rows(conn, job_row)).await
    }

    /// How long the last runs of `owner`'s jobs named `name` took to
    /// complete, newest first (milliseconds; at most `limit`): what a
    /// queued job's start estimate takes a running job without a deadline
    /// to need. Only completed runs count: a failed one says little about
    /// how long the work takes.
    pub async fn completed_run_lengths(&self, owner: String, name: String, limit: usize) -> StoreResult<Vec<i64>> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT completed_at - started_at FROM jobs
                 WHERE name = ?1 AND created_by = ?2 AND state = 'Completed'
                   AND started_at IS NOT NULL AND completed_at IS NOT NULL
                 ORDER BY created_at DESC LIMIT ?3",
            )?;
            let rows = stmt.query_map(params![name, owner, limit as i64], |r| r.get(0))?;
            rows.collect()
        })
        .await
    }

    /// The jobs in `state` (the notifications' condition watch reads the
    /// running ones).
    pub async fn jobs_in_state(&self, state: JobState) -> StoreResult<Vec<JobRow>> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(&format!("SELECT {JOB_COLUMNS} FROM jobs WHERE state = ?1"))?;
            let rows = stmt.query_map(params![state.as_str()], job_row)?;
            rows.collect()
        })
        .await
    }

    /// The active jobs as the scheduler reads them when it starts: a job
    /// whose metadata, spec or placement cannot be read is handed back as
    /// such, so one damaged row fails one job, not the server's start.
    pub async fn active_jobs_to_recover(&self) -> StoreResult<Vec<Result<JobRow, UnreadableJob>>> {
        self.read(|conn| active_rows(conn, job_row_or_unreadable)).await
    }

    /// Writes what the scheduler made of a job, with the events of the
    /// change, in one transaction. Returns false when the job is gone.
    pub async fn update_job_runtime(
        &self,
        id: String,
        runtime: JobRuntime,
        holding: Option<Holding>,
        events: Vec<EventRow>,
    ) -> StoreResult<bool> {
        let job = id.clone();
        let any_events = !events.is_empty();
        let changed = self
            .write(move |tx| {
                let r = &runtime;
                let now = super::now_millis();
                super::notifications::record_transition(
                    tx,
                    &id,
                    r.state,
                    r.reason.as_deref(),
                    r.message.as_deref(),
                    now,
                )?;
                // A run that starts again (completed_at none) has logs of
                // its own: what became of the earlier run's is its events'.
                let changed = tx.execute(
                    &format!("UPDATE jobs SET state = ?2, reason = ?3, message = ?4, run = ?5, queued_at = ?6, started_at = ?7,
                    completed_at = ?8, archive_at = ?9, placement = ?10, stop_reason = ?11, job_retries = ?12,
                    succeeded = ?13, failed = ?14, active = ?15, ready = ?16, master_port = ?17,
                    logs_expire_at = {}, logs_due_at = {},
                    logs_removed_at = CASE WHEN ?8 IS NULL THEN NULL ELSE logs_removed_at END,
                    logs_removed_by = CASE WHEN ?8 IS NULL THEN NULL ELSE logs_removed_by END
                 WHERE id = ?1", logs_expire_at("?8", "spec"), logs_due_at("?8", "spec")),
                    params![
                        id,
                        r.state.as_str(),
                        r.reason,
                        r.message,
                        r.run,
                        r.queued_at,
                        r.started_at,
                        r.completed_at,
                        r.archive_at,
                        r.placement.as_ref().map(json_column),
                        r.stop_reason.map(|s| s.as_str()),
                        r.job_retries,
                        r.succeeded,
                        r.failed,
                        r.active,
                        r.ready,
                        r.master_port,
                    ],
                )?;
                if changed == 0 {
                    return Ok(false);
                }
                record_charge(tx, &id, r.run, r.placement.as_ref(), holding, r.started_at, now)?;
                for event in &events {
                    super::events::record(tx, event)?;
                }
                Ok(true)
            })
            .await?;
        if changed {
            self.publish(std::iter::once(Change::Job(job.clone())).chain(any_events.then_some(Change::Events(job))));
        }
        Ok(changed)
    }

    /// Gives a job another creator (a removed user's job handed over), with
    /// the event that says so, in one transaction. Returns false when the
    /// job is gone.
    pub async fn set_job_owner(&self, id: String, owner: String, events: Vec<EventRow>) -> StoreResult<bool> {
        let job = id.clone();
        let changed = self
            .write(move |tx| {
                if tx.execute("UPDATE jobs SET created_by = ?2 WHERE id = ?1", params![id, owner])? == 0 {
                    return Ok(false);
                }
                for event in &events {
                    super::events::record(tx, event)?;
                }
                Ok(true)
            })
            .await?;
        if changed {
            self.publish([Change::Job(job.clone()), Change::Events(job)]);
        }
        Ok(changed)
    }

    /// Replaces a job's spec (the `stopped` flag is the only field that
    /// changes after creation).
    pub async fn update_job_spec(&self, id: String, spec: JobSpec) -> StoreResult<()> {
        let job = id.clone();
        self.write(move |tx| {
            tx.execute("UPDATE jobs SET spec = ?2 WHERE id = ?1", params![id, json_column(&spec)])?;
            Ok(())
        })
        .await?;
        self.publish([Change::Job(job)]);
        Ok(())
    }

    /// Deletes a job with its replicas, events, metrics and notification rules.
    pub async fn delete_job(&self, id: String) -> StoreResult<()> {
        let job = id.clone();
        let deleted = self
            .write(move |tx| {
                let owner: Option<(String, Visibility)> = tx
                    .query_row("SELECT created_by, visibility FROM jobs WHERE id = ?1", params![id], |r| {
                        Ok((r.get(0)?, column(r, 1)?))
                    })
                    .optional()?;
                tx.execute("DELETE FROM replicas WHERE job_id = ?1", params![id])?;
                tx.execute("DELETE FROM job_events WHERE job_id = ?1", params![id])?;
                tx.execute("DELETE FROM metrics WHERE job_id = ?1", params![id])?;
                // A rule for this job alone has nothing left to watch; the
                // deliveries already made about it stay in their history.
                tx.execute("DELETE FROM notifications WHERE job_id = ?1", params![id])?;
                tx.execute("DELETE FROM notification_conditions_met WHERE job_id = ?1", params![id])?;
                tx.execute("DELETE FROM jobs WHERE id = ?1", params![id])?;
                if let Some((owner, _)) = &owner {
                    record_log_bytes_today(tx, owner, super::now_millis())?;
                }
                Ok(owner)
            })
            .await?;
        if let Some((created_by, visibility)) = deleted {
            self.publish([Change::JobDeleted { id: job, created_by, visibility }]);
        }
        Ok(())
    }

    /// Ids of finished jobs whose archive time has come.
    pub async fn jobs_due_for_archive(&self, now: i64) -> StoreResult<Vec<String>> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT id FROM jobs WHERE archive_at IS NOT NULL AND archive_at <= ?1 AND state != 'Archived'",
            )?;
            let rows = stmt.query_map(params![now], |r| r.get(0))?;
            rows.collect()
        })
        .await
    }

    /// The earliest pending archive time, to set the scheduler's timer.
    pub async fn next_archive_time(&self) -> StoreResult<Option<i64>> {
        self.read(move |conn| {
            conn.query_row(
                "SELECT MIN(archive_at) FROM jobs WHERE archive_at IS NOT NULL AND state != 'Archived'",
                [],
                |r| r.get(0),
            )
        })
        .await
    }

    /// How many jobs `viewer` may see (public ones and their own private
    /// ones) and how many of those are not archived.
    pub async fn job_counts(&self, viewer: String) -> StoreResult<(i64, i64)> {
        self.read(move |conn| {
            conn.prepare_cached(
                "SELECT COALESCE(SUM(n), 0), COALESCE(SUM(CASE WHEN state != 'Archived' THEN n END), 0)
                 FROM job_counts WHERE visibility = 'public' OR created_by = ?1",
            )?
            .query_row(params![viewer], |r| Ok((r.get(0)?, r.get(1)?)))
        })
        .await
    }
}

/// Inserts `row` and its first `events` in the transaction `tx`.
fn insert_job_row(tx: &rusqlite::Transaction<'_>, row: &JobRow, events: &[EventRow]) -> StoreResult<()> {
    let r = &row.runtime;
    let inserted = tx
        .prepare_cached(&format!(
            "INSERT INTO jobs (id, name, created_by, visibility, created_at, metadata, spec, priority,
            node_groups, state, reason, message, run, queued_at, started_at, completed_at, archive_at,
            placement, stop_reason, job_retries, succeeded, failed, active, ready, master_port, rerun_of,
            logs_expire_at, logs_due_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,
            ?20, ?21, ?22, ?23, ?24, ?25, ?26, {}, {})
         ON CONFLICT(id) DO NOTHING",
            logs_expire_at("?16", "?7"),
            logs_due_at("?16", "?7")
        ))?
        .execute(params![
            row.id,
            row.name,
            row.created_by,
            row.visibility.as_str(),
            row.created_at,
            json_column(&row.metadata),
            json_column(&row.spec),
            row.priority,
            node_groups_column(&row.node_groups),
            r.state.as_str(),
            r.reason,
            r.message,
            r.run,
            r.queued_at,
            r.started_at,
            r.completed_at,
            r.archive_at,
            r.placement.as_ref().map(json_column),
            r.stop_reason.map(|s| s.as_str()),
            r.job_retries,
            r.succeeded,
            r.failed,
            r.active,
            r.ready,
            r.master_port,
            row.rerun_of,
        ])?;
    if inserted == 0 {
        return Err(StoreError::DuplicateJob(row.id.clone()));
    }
    for event in events {
        super::events::record(tx, event)?;
    }
    Ok(())
}

/// The rows of the jobs in [`ACTIVE_STATES`], each read by `read`.
fn active_rows<T>(
    conn: &rusqlite::Connection,
    read: fn(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Vec<T>> {
    let marks = vec!["?"; ACTIVE_STATES.len()].join(", ");
    let mut stmt = conn.prepare(&format!("SELECT {JOB_COLUMNS} FROM jobs WHERE state IN ({marks})"))?;
    let rows = stmt.query_map(params_from_iter(ACTIVE_STATES.iter().map(|s| s.as_str())), read)?;
    rows.collect()
}
