//! Job events. A repetition of the newest event of a job (same type, reason,
//! message and subject) is folded into it, as Kubernetes counts repeated
//! events, so a flapping condition cannot flood the table.

use rusqlite::{params, OptionalExtension, Transaction};

use super::changes::Change;
use super::error::StoreResult;
use super::names::column;
use super::{EventRow, Store, StoredEvent};

/// Records `event` inside an open transaction.
pub(super) fn record(tx: &Transaction<'_>, event: &EventRow) -> rusqlite::Result<()> {
    let newest: Option<(i64, String, String, String, String, String)> = tx
        .query_row(
            "SELECT id, type, reason, message, regarding_kind, regarding_name FROM job_events
             WHERE job_id = ?1 ORDER BY id DESC LIMIT 1",
            params![event.job_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
        )
        .optional()?;
    if let Some((id, kind, reason, message, regarding_kind, regarding_name)) = newest {
        if kind == event.kind.as_str()
            && reason == event.reason
            && message == event.message
            && regarding_kind == event.regarding_kind
            && regarding_name == event.regarding_name
        {
            tx.execute(
                "UPDATE job_events SET count = count + 1, last_time = ?2 WHERE id = ?1",
                params![id, event.time],
            )?;
            return Ok(());
        }
    }
    tx.execute(
        "INSERT INTO job_events (job_id, type, reason, message, regarding_kind, regarding_name, count, first_time, last_time)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, ?7)",
        params![
            event.job_id,
            event.kind.as_str(),
            event.reason,
            event.message,
            event.regarding_kind,
            event.regarding_name,
            event.time
        ],
    )?;
    Ok(())
}

impl Store {
    pub async fn record_event(&self, event: EventRow) -> StoreResult<()> {
        let job = event.job_id.clone();
        self.write(move |tx| {
            record(tx, &event)?;
            Ok(())
        })
        .await?;
        self.publish([Change::Events(job)]);
        Ok(())
    }

    /// A job's events, newest first.
    pub async fn events_of(&self, job_id: String) -> StoreResult<Vec<StoredEvent>> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT type, reason, message, regarding_kind, regarding_name, count, first_time, last_time
                 FROM job_events WHERE job_id = ?1 ORDER BY id DESC",
            )?;
            let rows = stmt.query_map(params![job_id], |r| {
                Ok(StoredEvent {
                    kind: column(r, 0)?,
                    reason: r.get(1)?,
                    message: r.get(2)?,
                    regarding_kind: r.get(3)?,
                    regarding_name: r.get(4)?,
                    count: r.get(5)?,
                    first_time: r.get(6)?,
                    last_time: r.get(7)?,
                })
            })?;
            rows.collect()
        })
        .await
    }
}
