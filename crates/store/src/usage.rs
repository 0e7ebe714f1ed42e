//! Quotas set in the console, and what users use: the resources each run
//! held from admission to release ("charges"), the jobs waiting in the
//! queue, and the bytes of logs each job keeps on disk.
//!
//! Charges are written in the transaction that writes the run's placement
//! ([`Store::update_job_runtime`]), so usage cannot drift from what the
//! scheduler held. They stay when their job is deleted: usage over time is
//! a record of what was used, not of what still exists.

use std::collections::HashMap;

use jobdeck_api::{QuotaLimits, QuotaScope, Role};
use rusqlite::{params, OptionalExtension, Row, Transaction};

use super::error::StoreResult;
use super::job_row::Placement;
use super::users::role_column;
use super::Store;

/// A day's number: whole days since the Unix epoch, UTC.
pub const DAY_MS: i64 = 86_400_000;

/// A quota an admin set in the console.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaRow {
    pub scope: QuotaScope,
    pub name: String,
    pub limits: QuotaLimits,
    pub updated_by: String,
    pub updated_at: i64,
}

/// What a run holds while it is placed: the scheduler says it with the
/// placement it writes.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Holding {
    /// CPUs of one replica slot (its shape's).
    pub cpus_per_replica: f64,
}

/// What one run held, and from when to when (Unix ms; `ended_at` absent
/// while it still holds it).
#[derive(Debug, Clone, PartialEq)]
pub struct Charge {
    pub job_id: String,
    pub user: String,
    pub gpus: i64,
    pub cpus: f64,
    pub replicas: i64,
    pub started_at: i64,
    pub ended_at: Option<i64>,
}

/// One user's use now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageNowRow {
    pub user: String,
    pub role: Role,
    pub running_gpus: i64,
    pub running_replicas: i64,
    pub queued_jobs: i64,
    pub log_bytes: i64,
}

/// A stored quota; `None` for a scope this release does not know (written
/// by a newer one), which then limits nobody.
fn quota_row(r: &Row<'_>) -> rusqlite::Result<Option<QuotaRow>> {
    let scope: String = r.get(0)?;
    let Some(scope) = QuotaScope::parse(&scope) else { return Ok(None) };
    Ok(Some(QuotaRow {
        scope,
        name: r.get(1)?,
        limits: QuotaLimits {
            running_gpus: r.get(2)?,
            running_replicas: r.get(3)?,
            queued_jobs: r.get(4)?,
            log_bytes: r.get(5)?,
        },
        updated_by: r.get(6)?,
        updated_at: r.get(7)?,
    }))
}

/// Opens, closes or keeps the charge of a job's current run so it matches
/// `placement`: part of every write of a job's runtime.
pub(super) fn record_charge(
    tx: &Transaction,
    job_id: &str,
    run: i64,
    placement: Option<&Placement>,
    holding: Option<Holding>,
    started_at: Option<i64>,
    now: i64,
) -> rusqlite::Result<()> {
    let open: Option<(i64, i64)> = tx
        .query_row("SELECT id, run FROM usage_charges WHERE job_id = ?1 AND ended_at IS NULL", params![job_id], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?;
    let still_open = match (open, placement) {
        (Some((_, open_run)), Some(_)) if open_run == run => return Ok(()),
        (Some((id, _)), _) => {
            tx.execute("UPDATE usage_charges SET ended_at = ?2 WHERE id = ?1", params![id, now])?;
            false
        }
        (None, _) => false,
    };
    if let (Some(placement), false) = (placement, still_open) {
        let replicas = placement.slots.len() as i64;
        let gpus: i64 = placement.slots.iter().map(|s| s.gpu_ids.len() as i64).sum();
        let cpus = holding.map_or(0.0, |h| h.cpus_per_replica) * replicas as f64;
        tx.execute(
            "INSERT INTO usage_charges (job_id, run, user, node_group, replicas, gpus, cpus, started_at)
             SELECT id, ?2, created_by, ?3, ?4, ?5, ?6, ?7 FROM jobs WHERE id = ?1",
            params![job_id, run, placement.node_group, replicas, gpus, cpus, started_at.unwrap_or(now)],
        )?;
    }
    Ok(())
}

/// Writes `user`'s log bytes of today as the sum over their jobs now.
pub(super) fn record_log_bytes_today(tx: &Transaction, user: &str, now: i64) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO log_bytes_days (day, user, bytes)
         SELECT ?2, ?1, COALESCE(SUM(log_bytes), 0) FROM jobs WHERE created_by = ?1
         ON CONFLICT (user, day) DO UPDATE SET bytes = excluded.bytes",
        params![user, now.div_euclid(DAY_MS)],
    )?;
    Ok(())
}

impl Store {
    /// The quotas set in the console.
    pub async fn quotas(&self) -> StoreResult<Vec<QuotaRow>> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT scope, name, running_gpus, running_replicas, queued_jobs, log_bytes, updated_by, updated_at
                 FROM quotas ORDER BY scope, name",
            )?;
            let rows = stmt.query_map([], quota_row)?;
            rows.filter_map(Result::transpose).collect()
        })
        .await
    }

    /// Sets (or replaces) a role's or user's quota.
    pub async fn set_quota(&self, row: QuotaRow) -> StoreResult<()> {
        self.write(move |tx| {
            let l = row.limits;
            tx.execute(
                "INSERT INTO quotas (scope, name, running_gpus, running_replicas, queued_jobs, log_bytes, updated_by, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT (scope, name) DO UPDATE SET running_gpus = excluded.running_gpus,
                    running_replicas = excluded.running_replicas, queued_jobs = excluded.queued_jobs,
                    log_bytes = excluded.log_bytes, updated_by = excluded.updated_by, updated_at = excluded.updated_at",
                params![
                    row.scope.as_str(),
                    row.name,
                    l.running_gpus,
                    l.running_replicas,
                    l.queued_jobs,
                    l.log_bytes,
                    row.updated_by,
                    row.updated_at
                ],
            )?;
            Ok(())
        })
        .await
    }

    /// Deletes a console quota; false when there was none.
    pub async fn delete_quota(&self, scope: QuotaScope, name: String) -> StoreResult<bool> {
        self.write(move |tx| {
            Ok(tx.execute("DELETE FROM quotas WHERE scope = ?1 AND name = ?2", params![scope.as_str(), name])? > 0)
        })
        .await
    }

    /// Every user's role, removed users' included (their usage stays theirs).
    pub async fn user_roles(&self) -> StoreResult<HashMap<String, Role>> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached("SELECT name, role FROM users")?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, role_column(r, 1)?)))?;
            rows.collect()
        })
        .await
    }

    /// Each user's log bytes on disk, as last measured, over all their jobs.
    pub async fn log_bytes_by_user(&self) -> StoreResult<HashMap<String, i64>> {
        self.read(|conn| {
            let mut stmt =
                conn.prepare_cached("SELECT created_by, SUM(log_bytes) FROM jobs WHERE log_bytes > 0 GROUP BY 1")?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect()
        })
        .await
    }

    /// Records what jobs' logs take on disk now (`(job id, bytes)`), and
    /// each of their creators' totals for today; jobs that are gone are
    /// skipped.
    pub async fn set_log_bytes_many(&self, sizes: Vec<(String, i64)>, now: i64) -> StoreResult<()> {
        self.write(move |tx| {
            let mut owners = std::collections::BTreeSet::new();
            for (job_id, bytes) in &sizes {
                let owner: Option<String> = tx
                    .query_row(
                        // A measure taken before a removal finished is stale:
                        // a job whose logs went keeps 0.
                        "UPDATE jobs SET log_bytes = ?2 WHERE id = ?1 AND log_bytes != ?2 AND logs_removed_at IS NULL
                         RETURNING created_by",
                        params![job_id, bytes],
                        |r| r.get(0),
                    )
                    .optional()?;
                owners.extend(owner);
            }
            for owner in owners {
                record_log_bytes_today(tx, &owner, now)?;
            }
            Ok(())
        })
        .await
    }

    /// Every user's use now: what their placed runs hold, how many of their
    /// jobs wait in the queue, their log bytes. Removed users are left out.
    pub async fn usage_now(&self) -> StoreResult<Vec<UsageNowRow>> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT u.name, u.role,
                    (SELECT COALESCE(SUM(gpus), 0) FROM usage_charges WHERE user = u.name AND ended_at IS NULL),
                    (SELECT COALESCE(SUM(replicas), 0) FROM usage_charges WHERE user = u.name AND ended_at IS NULL),
                    (SELECT COUNT(*) FROM jobs WHERE created_by = u.name AND state = 'Queueing'),
                    (SELECT COALESCE(SUM(log_bytes), 0) FROM jobs WHERE created_by = u.name)
                 FROM users u WHERE u.removed_at IS NULL ORDER BY u.name",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok(UsageNowRow {
                    user: r.get(0)?,
                    role: role_column(r, 1)?,
                    running_gpus: r.get(2)?,
                    running_replicas: r.get(3)?,
                    queued_jobs: r.get(4)?,
                    log_bytes: r.get(5)?,
                })
            })?;
            rows.collect()
        })
        .await
    }

    /// The charges that overlap `[from, to)` (Unix ms).
    pub async fn charges_between(&self, from: i64, to: i64) -> StoreResult<Vec<Charge>> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT job_id, user, gpus, cpus, replicas, started_at, ended_at FROM usage_charges
                 WHERE started_at < ?2 AND (ended_at IS NULL OR ended_at > ?1) ORDER BY started_at",
            )?;
            let rows = stmt.query_map(params![from, to], |r| {
                Ok(Charge {
                    job_id: r.get(0)?,
                    user: r.get(1)?,
                    gpus: r.get(2)?,
                    cpus: r.get(3)?,
                    replicas: r.get(4)?,
                    started_at: r.get(5)?,
                    ended_at: r.get(6)?,
                })
            })?;
            rows.collect()
        })
        .await
    }

    /// Each user's log bytes per day from day `from` to day `to`
    /// (inclusive), with each user's last value before `from` as day `from`'s
    /// starting point: `(day, user, bytes)` in day order.
    pub async fn log_bytes_days(&self, from: i64, to: i64) -> StoreResult<Vec<(i64, String, i64)>> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT MAX(day), user, bytes FROM log_bytes_days WHERE day < ?1 GROUP BY user
                 UNION ALL
                 SELECT day, user, bytes FROM log_bytes_days WHERE day >= ?1 AND day <= ?2
                 ORDER BY 1, 2",
            )?;
            let rows = stmt.query_map(params![from, to], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            rows.collect()
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{database_of_schema, job_row};
    use crate::{JobRuntime, Slot};
    use jobdeck_api::JobState;

    /// A database of schema 11 with a run holding three GPUs on two slots:
    /// after the upgrade the run is charged from its admission, and when it
    /// ends the charge closes; the next run is charged anew with its CPUs.
    /// A deleted job's charges stay (usage over time is a record), and log
    /// bytes sum per user, per day.
    #[tokio::test]
    async fn an_upgrade_charges_the_runs_that_hold_resources_and_charges_outlive_their_jobs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jobdeck.db");
        let conn = database_of_schema(&path, 11);
        conn.execute_batch(
            r#"INSERT INTO users (name, created_at, role) VALUES ('bob', 1, 'member');
               INSERT INTO jobs (id, name, created_by, visibility, created_at, state, metadata, spec, run, started_at, placement)
               VALUES ('train-1', 'train', 'bob', 'public', 1, 'Running', '{}', '{}', 0, 1000,
                 '{"node_group":"local","slots":[{"node":"a","gpu_ids":[0,1]},{"node":"a","gpu_ids":[2]}]}');"#,
        )
        .unwrap();
        drop(conn);
        let store = Store::open(&path).unwrap();
        let charges = store.charges_between(0, i64::MAX).await.unwrap();
        assert_eq!(charges.len(), 1, "{charges:?}");
        assert_eq!(
            (charges[0].gpus, charges[0].replicas, charges[0].started_at, charges[0].ended_at),
            (3, 2, 1000, None)
        );
        let now = store.usage_now().await.unwrap();
        assert_eq!((now[0].user.as_str(), now[0].running_gpus, now[0].running_replicas), ("bob", 3, 2));

        let mut job = store.job("train-1".into()).await.unwrap().unwrap();
        job.runtime = JobRuntime { state: JobState::Queueing, run: 1, ..JobRuntime::default() };
        store.update_job_runtime("train-1".into(), job.runtime.clone(), None, vec![]).await.unwrap();
        let placement =
            Placement { node_group: "local".into(), slots: vec![Slot { node: "a".into(), gpu_ids: vec![] }] };
        job.runtime = JobRuntime {
            state: JobState::Running,
            run: 1,
            started_at: Some(5000),
            placement: Some(placement),
            ..job.runtime
        };
        let holding = Some(Holding { cpus_per_replica: 2.5 });
        store.update_job_runtime("train-1".into(), job.runtime.clone(), holding, vec![]).await.unwrap();
        store.update_job_runtime("train-1".into(), job.runtime.clone(), holding, vec![]).await.unwrap();
        let charges = store.charges_between(0, i64::MAX).await.unwrap();
        assert_eq!(charges.len(), 2, "one charge per run, not per write: {charges:?}");
        assert!(charges[0].ended_at.is_some());
        assert_eq!((charges[1].cpus, charges[1].started_at, charges[1].ended_at), (2.5, 5000, None));

        store.insert_job(job_row("eval-1", "bob", "public", 2, "Completed"), vec![]).await.unwrap();
        store
            .set_log_bytes_many(vec![("train-1".into(), 700), ("eval-1".into(), 300), ("gone".into(), 5)], DAY_MS * 3)
            .await
            .unwrap();
        assert_eq!(store.log_bytes_by_user().await.unwrap()["bob"], 1000);
        store.delete_job("eval-1".into()).await.unwrap();
        assert_eq!(store.log_bytes_by_user().await.unwrap()["bob"], 700);
        assert_eq!(store.charges_between(0, i64::MAX).await.unwrap().len(), 2, "charges outlive their jobs");
        let days = store.log_bytes_days(0, i64::MAX / DAY_MS).await.unwrap();
        let today = crate::now_millis() / DAY_MS;
        assert_eq!(
            days,
            [(3, "bob".to_string(), 1000), (today, "bob".to_string(), 700)],
            "the deletion is today's total"
        );
    }

    #[tokio::test]
    async fn console_quotas_are_set_replaced_and_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("jobdeck.db")).unwrap();
        let row = |gpus| QuotaRow {
            scope: QuotaScope::Role,
            name: "member".into(),
            limits: QuotaLimits { running_gpus: Some(gpus), ..Default::default() },
            updated_by: "admin".into(),
            updated_at: 1,
        };
        store.set_quota(row(8)).await.unwrap();
        store.set_quota(row(4)).await.unwrap();
        assert_eq!(store.quotas().await.unwrap(), [row(4)]);
        assert!(store.delete_quota(QuotaScope::Role, "member".into()).await.unwrap());
        assert!(!store.delete_quota(QuotaScope::Role, "member".into()).await.unwrap());
        assert!(store.quotas().await.unwrap().is_empty());
    }
}
