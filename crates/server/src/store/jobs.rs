//! Jobs.

use rusqlite::{params, OptionalExtension};

use super::{JobFilter, JobRow, Store};
use crate::error::{AppError, AppResult};

impl Store {
    pub async fn insert_job(&self, row: JobRow) -> AppResult<()> {
        self.write(move |tx| {
            let inserted = tx.execute(
                "INSERT INTO jobs (id, name, created_by, visibility, created_at, state, metadata, spec)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(id) DO NOTHING",
                params![
                    row.id,
                    row.name,
                    row.created_by,
                    row.visibility,
                    row.created_at,
                    row.state,
                    row.metadata_json,
                    row.spec_json
                ],
            )?;
            if inserted == 0 {
                return Err(AppError::Conflict(format!("a job with id '{}' already exists", row.id)));
            }
            Ok(())
        })
        .await
    }

    /// A job by id, if `viewer` may see it.
    pub async fn job_visible_to(&self, id: String, viewer: String) -> AppResult<Option<JobRow>> {
        self.read(move |conn| {
            conn.query_row(
                "SELECT id, name, created_by, visibility, created_at, state, metadata, spec
                 FROM jobs WHERE id = ?1 AND (visibility = 'public' OR created_by = ?2)",
                params![id, viewer],
                job_row,
            )
            .optional()
        })
        .await
    }

    /// One page of the jobs `filter.viewer` may see, newest first, and the
    /// total count over all pages.
    pub async fn list_jobs(&self, filter: JobFilter) -> AppResult<(Vec<JobRow>, i64)> {
        self.read(move |conn| {
            let total: i64 = conn.query_row(
                "SELECT COUNT(*) FROM jobs WHERE visibility = 'public' OR created_by = ?1",
                params![filter.viewer],
                |r| r.get(0),
            )?;
            let mut stmt = conn.prepare_cached(
                "SELECT id, name, created_by, visibility, created_at, state, metadata, spec
                 FROM jobs WHERE visibility = 'public' OR created_by = ?1
                 ORDER BY created_at DESC, id LIMIT ?2 OFFSET ?3",
            )?;
            let offset = (filter.page - 1).max(0) * filter.page_size;
            let rows = stmt
                .query_map(params![filter.viewer, filter.page_size, offset], job_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok((rows, total))
        })
        .await
    }
}

fn job_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<JobRow> {
    Ok(JobRow {
        id: r.get(0)?,
        name: r.get(1)?,
        created_by: r.get(2)?,
        visibility: r.get(3)?,
        created_at: r.get(4)?,
        state: r.get(5)?,
        metadata_json: r.get(6)?,
        spec_json: r.get(7)?,
    })
}
