//! Replica attempts.

use jobdeck_api::EndReason;
use rusqlite::{params, OptionalExtension};

use super::changes::Change;
use super::error::StoreResult;
use super::names::column;
use super::{ReplicaRow, Store};

const REPLICA_COLUMNS: &str = "job_id, completion_index, attempt, run, phase, readiness_reason, readiness_message,
    node, node_group, gpu_ids, exit_code, signal, reason, message, created_at, start_time, end_time,
    executor_state, updated_at, retry_at, executor_id";

impl Store {
    /// Inserts an attempt or updates it. An attempt that already ended
    /// (`succeeded` or `failed`) is final: later reports cannot change it, so
    /// a report repeated after a restart is harmless.
    pub async fn upsert_replica(&self, row: ReplicaRow) -> StoreResult<()> {
        let job = row.job_id.clone();
        self.write(move |tx| {
            tx.execute(
                &format!(
                    "INSERT INTO replicas ({REPLICA_COLUMNS})
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)
                     ON CONFLICT(job_id, completion_index, attempt) DO UPDATE SET
                        run = excluded.run, phase = excluded.phase,
                        readiness_reason = excluded.readiness_reason,
                        readiness_message = excluded.readiness_message,
                        node = COALESCE(excluded.node, node),
                        node_group = COALESCE(excluded.node_group, node_group),
                        gpu_ids = excluded.gpu_ids,
                        exit_code = excluded.exit_code, signal = excluded.signal,
                        reason = excluded.reason, message = excluded.message,
                        start_time = COALESCE(excluded.start_time, start_time),
                        end_time = excluded.end_time,
                        executor_state = COALESCE(excluded.executor_state, executor_state),
                        updated_at = excluded.updated_at,
                        retry_at = excluded.retry_at,
                        executor_id = COALESCE(excluded.executor_id, executor_id)
                     WHERE phase NOT IN ('succeeded', 'failed')"
                ),
                params![
                    row.job_id,
                    row.completion_index,
                    row.attempt,
                    row.run,
                    row.phase.as_str(),
                    row.readiness_reason,
                    row.readiness_message,
                    row.node,
                    row.node_group,
                    row.gpu_ids.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
                    row.exit_code,
                    row.signal,
                    row.reason.as_ref().map(EndReason::as_str),
                    row.message,
                    row.created_at,
                    row.start_time,
                    row.end_time,
                    row.executor_state,
                    row.updated_at,
                    row.retry_at,
                    row.executor_id,
                ],
            )?;
            Ok(())
        })
        .await?;
        self.publish([Change::Replicas(job)]);
        Ok(())
    }

    /// Replaces what the executor keeps about an attempt, also after the
    /// attempt ended: [`Self::upsert_replica`] leaves an ended attempt as it
    /// is, but what the executor knows of it can still change after its end
    /// (the Kubernetes executor finishes copying a pod's log once the
    /// container has stopped, and records it here so a restart does not copy
    /// it again).
    pub async fn set_executor_state(
        &self,
        job_id: String,
        completion_index: i64,
        attempt: i64,
        state: String,
    ) -> StoreResult<()> {
        self.write(move |tx| {
            tx.execute(
                "UPDATE replicas SET executor_state = ?4, updated_at = ?5
                 WHERE job_id = ?1 AND completion_index = ?2 AND attempt = ?3",
                params![job_id, completion_index, attempt, state, crate::now_millis()],
            )?;
            Ok(())
        })
        .await
    }

    /// Every attempt of a job, by completion index then attempt.
    pub async fn replicas_of(&self, job_id: String) -> StoreResult<Vec<ReplicaRow>> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {REPLICA_COLUMNS} FROM replicas WHERE job_id = ?1 ORDER BY completion_index, attempt"
            ))?;
            let rows = stmt.query_map(params![job_id], replica_row)?;
            rows.collect()
        })
        .await
    }

    /// The completion indexes of run `run` of a job that succeeded, in
    /// order (a rerun of the failed indexes runs the others).
    pub async fn succeeded_indexes(&self, job_id: String, run: i64) -> StoreResult<Vec<i64>> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT DISTINCT completion_index FROM replicas
                 WHERE job_id = ?1 AND run = ?2 AND phase = 'succeeded' ORDER BY completion_index",
            )?;
            let rows = stmt.query_map(params![job_id, run], |r| r.get(0))?;
            rows.collect()
        })
        .await
    }

    /// One attempt.
    pub async fn replica(
        &self,
        job_id: String,
        completion_index: i64,
        attempt: i64,
    ) -> StoreResult<Option<ReplicaRow>> {
        self.read(move |conn| {
            conn.query_row(
                &format!(
                    "SELECT {REPLICA_COLUMNS} FROM replicas WHERE job_id = ?1 AND completion_index = ?2 AND attempt = ?3"
                ),
                params![job_id, completion_index, attempt],
                replica_row,
            )
            .optional()
        })
        .await
    }
}

fn replica_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ReplicaRow> {
    Ok(ReplicaRow {
        job_id: r.get(0)?,
        completion_index: r.get(1)?,
        attempt: r.get(2)?,
        run: r.get(3)?,
        phase: column(r, 4)?,
        readiness_reason: r.get(5)?,
        readiness_message: r.get(6)?,
        node: r.get(7)?,
        node_group: r.get(8)?,
        gpu_ids: gpu_ids_of(r, 9)?,
        exit_code: r.get(10)?,
        signal: r.get(11)?,
        reason: r.get::<_, Option<String>>(12)?.as_deref().map(EndReason::parse),
        message: r.get(13)?,
        created_at: r.get(14)?,
        start_time: r.get(15)?,
        end_time: r.get(16)?,
        executor_state: r.get(17)?,
        updated_at: r.get(18)?,
        retry_at: r.get(19)?,
        executor_id: r.get(20)?,
    })
}

impl ReplicaRow {
    /// The stored form of an executor's observation.
    pub fn is_finished(&self) -> bool {
        self.phase.is_finished()
    }
}

/// Reads the GPU indices of column `index`, written as `0,1`; anything
/// else is a conversion error of that column.
fn gpu_ids_of(r: &rusqlite::Row<'_>, index: usize) -> rusqlite::Result<Vec<u32>> {
    let text: String = r.get(index)?;
    text.split(',').filter(|id| !id.is_empty()).map(|id| id.parse::<u32>()).collect::<Result<_, _>>().map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(
            index,
            rusqlite::types::Type::Text,
            format!("the GPU indices '{text}' cannot be read: {e}").into(),
        )
    })
}
