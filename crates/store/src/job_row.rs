//! A job as stored, typed: what the user asked for and what the scheduler
//! made of it. The columns that hold JSON (the metadata, the spec, the
//! placement) and the node groups' `,a,b,` encoding are read and written
//! here and nowhere else; above the store a job is its types.

use std::collections::BTreeMap;

use jobdeck_api::{EndReason, JobSpec, JobState, LogRemovalPolicy, Metadata, Visibility};
use rusqlite::types::Type;
use rusqlite::Row;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::names::column;

/// A job as stored.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobRow {
    pub id: String,
    pub name: String,
    pub created_by: String,
    pub visibility: Visibility,
    /// Unix milliseconds.
    pub created_at: i64,
    pub metadata: StoredMetadata,
    /// The spec as the user gave it, write-only fields (the registry
    /// password) included: never send it to a client as it is.
    pub spec: JobSpec,
    /// The priority class as a number, 1000 (low-1000) … 9000 (high-9000).
    pub priority: i64,
    /// The node groups the job may run in (empty: any).
    pub node_groups: Vec<String>,
    /// The job this one reruns the failed indexes of
    /// (`POST /jobs/{id}/rerun?only=failed`); the other way round is a
    /// query (`Store::reruns_of`).
    pub rerun_of: Option<String>,
    pub runtime: JobRuntime,
    /// What became of its logs once it finished.
    pub logs: KeptLogs,
}

/// When a finished job's logs may go by its own archive time and by the
/// workspace's rule, and when and by which rule they went
/// (`jobdeck_core::retention` is the rule; the store writes `expire_at`
/// and `due_at` with each finish, from the spec).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeptLogs {
    /// Unix ms: finished + `ttl_seconds_after_finished`; `None` while the
    /// job has not finished.
    pub expire_at: Option<i64>,
    /// Unix ms: when they are due by the workspace's rule (the above, held
    /// to its minimum and maximum retention).
    pub due_at: Option<i64>,
    /// Unix ms.
    pub removed_at: Option<i64>,
    pub removed_by: Option<LogRemovalPolicy>,
}

/// The part of a job only the scheduler writes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobRuntime {
    pub state: JobState,
    pub reason: Option<String>,
    pub message: Option<String>,
    /// The current run: 0 first, one more per start after a stop, preemption
    /// or job-level retry.
    pub run: i64,
    /// When the current run entered the queue (Unix ms).
    pub queued_at: Option<i64>,
    /// When the current run was admitted (Unix ms).
    pub started_at: Option<i64>,
    /// When the job reached Completed, Failed or Stopped (Unix ms).
    pub completed_at: Option<i64>,
    /// When the job is to be archived (Unix ms).
    pub archive_at: Option<i64>,
    /// Where the current run is placed, while it holds resources.
    pub placement: Option<Placement>,
    /// Why the current run is being stopped, while it is.
    pub stop_reason: Option<StopReason>,
    /// Job-level failure restarts used.
    pub job_retries: i64,
    pub succeeded: i64,
    pub failed: i64,
    pub active: i64,
    pub ready: i64,
    /// The rendezvous port of the current run (multi-worker jobs).
    pub master_port: i64,
}

/// What the store keeps of a job's metadata beyond its columns: the labels
/// and annotations (the name, creator and visibility have columns).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StoredMetadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

impl From<&Metadata> for StoredMetadata {
    fn from(m: &Metadata) -> Self {
        Self { labels: m.labels.clone(), annotations: m.annotations.clone() }
    }
}

/// One place a replica may run: a node and the GPUs reserved on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slot {
    pub node: String,
    /// GPU indices on the node, handed out as `CUDA_VISIBLE_DEVICES`.
    #[serde(default)]
    pub gpu_ids: Vec<u32>,
}

/// Where the scheduler placed a run: one node group and one slot per replica
/// that may run at the same time (`parallelism` of them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub node_group: String,
    pub slots: Vec<Slot>,
}

/// Why the scheduler stops a run; it becomes the reason of every replica the
/// stop ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StopReason {
    /// A user stopped the job.
    Stopped,
    /// A user deleted the job.
    Deleted,
    /// A job that may preempt needed the resources.
    Preempted,
    /// `active_deadline_seconds` passed.
    DeadlineExceeded,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Stopped => "Stopped",
            StopReason::Deleted => "Deleted",
            StopReason::Preempted => "Preempted",
            StopReason::DeadlineExceeded => "DeadlineExceeded",
        }
    }

    pub fn parse(s: &str) -> Option<StopReason> {
        [StopReason::Stopped, StopReason::Deleted, StopReason::Preempted, StopReason::DeadlineExceeded]
            .into_iter()
            .find(|r| r.as_str() == s)
    }
}

/// The reason the attempts a stop ends are recorded with.
impl From<StopReason> for EndReason {
    fn from(stop: StopReason) -> Self {
        match stop {
            StopReason::Stopped => EndReason::Stopped,
            StopReason::Deleted => EndReason::Deleted,
            StopReason::Preempted => EndReason::Preempted,
            StopReason::DeadlineExceeded => EndReason::DeadlineExceeded,
        }
    }
}

/// A job whose row could be found but not read whole: a JSON column that
/// no longer parses (a damaged database, or a spec written by a release
/// whose fields this one does not know). What the scheduler needs to fail
/// it rather than refuse to start.
#[derive(Debug, Clone, PartialEq)]
pub struct UnreadableJob {
    pub id: String,
    pub runtime: JobRuntime,
    /// What is wrong, naming the column.
    pub problem: String,
}

/// The columns a [`JobRow`] is read from, in [`job_row`]'s order.
pub(super) const JOB_COLUMNS: &str =
    "id, name, created_by, visibility, created_at, metadata, spec, priority, node_groups,
    state, reason, message, run, queued_at, started_at, completed_at, archive_at, placement, stop_reason,
    job_retries, succeeded, failed, active, ready, master_port, rerun_of,
    logs_expire_at, logs_due_at, logs_removed_at, logs_removed_by";

/// How many columns [`JOB_COLUMNS`] names: a query that asks for one more
/// after them finds it at this place.
pub(super) fn job_column_count() -> usize {
    JOB_COLUMNS.split(',').count()
}

/// The node groups as their column holds them: `,a,b,` (so a filter can
/// look for `,a,`), empty for any.
pub(super) fn node_groups_column(groups: &[String]) -> String {
    if groups.is_empty() {
        String::new()
    } else {
        format!(",{},", groups.join(","))
    }
}

fn node_groups_of(column: &str) -> Vec<String> {
    column.split(',').filter(|g| !g.is_empty()).map(String::from).collect()
}

/// A value as the JSON text its column holds.
pub(super) fn json_column<T: Serialize>(value: &T) -> String {
    // The types stored this way hold strings, numbers, maps and lists
    // only: serializing them cannot fail.
    serde_json::to_string(value).expect("a stored value serializes")
}

/// Reads column `index` of `row` as JSON text holding a `T`; text that does
/// not parse is a conversion error of that column.
fn parse_json<T: DeserializeOwned>(row: &Row<'_>, index: usize, what: &str) -> rusqlite::Result<T> {
    let text: String = row.get(index)?;
    serde_json::from_str(&text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(index, Type::Text, format!("the {what} cannot be read: {e}").into())
    })
}

fn stop_reason(row: &Row<'_>, index: usize) -> rusqlite::Result<Option<StopReason>> {
    let Some(name) = row.get::<_, Option<String>>(index)? else {
        return Ok(None);
    };
    StopReason::parse(&name).map(Some).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(index, Type::Text, format!("no stop reason '{name}'").into())
    })
}

/// The runtime columns; the placement is left out (`None`) when
/// `with_placement` is false, for a job whose placement cannot be read.
fn runtime(r: &Row<'_>, with_placement: bool) -> rusqlite::Result<JobRuntime> {
    let placement = match r.get::<_, Option<String>>(17)? {
        Some(_) if with_placement => Some(parse_json(r, 17, "placement")?),
        _ => None,
    };
    Ok(JobRuntime {
        state: column(r, 9)?,
        reason: r.get(10)?,
        message: r.get(11)?,
        run: r.get(12)?,
        queued_at: r.get(13)?,
        started_at: r.get(14)?,
        completed_at: r.get(15)?,
        archive_at: r.get(16)?,
        placement,
        stop_reason: stop_reason(r, 18)?,
        job_retries: r.get(19)?,
        succeeded: r.get(20)?,
        failed: r.get(21)?,
        active: r.get(22)?,
        ready: r.get(23)?,
        master_port: r.get(24)?,
    })
}

/// Reads a row of [`JOB_COLUMNS`].
pub(super) fn job_row(r: &Row<'_>) -> rusqlite::Result<JobRow> {
    let node_groups: String = r.get(8)?;
    Ok(JobRow {
        id: r.get(0)?,
        name: r.get(1)?,
        created_by: r.get(2)?,
        visibility: column(r, 3)?,
        created_at: r.get(4)?,
        metadata: parse_json(r, 5, "metadata")?,
        spec: parse_json(r, 6, "spec")?,
        priority: r.get(7)?,
        node_groups: node_groups_of(&node_groups),
        rerun_of: r.get(25)?,
        runtime: runtime(r, true)?,
        logs: KeptLogs {
            expire_at: r.get(26)?,
            due_at: r.get(27)?,
            removed_at: r.get(28)?,
            removed_by: r.get::<_, Option<String>>(29)?.as_deref().and_then(LogRemovalPolicy::parse),
        },
    })
}

/// Reads a row of [`JOB_COLUMNS`], or, when its metadata, spec or placement
/// does not parse, what the scheduler needs to fail the job.
pub(super) fn job_row_or_unreadable(r: &Row<'_>) -> rusqlite::Result<Result<JobRow, UnreadableJob>> {
    const JSON_COLUMNS: [usize; 3] = [5, 6, 17];
    match job_row(r) {
        Ok(row) => Ok(Ok(row)),
        Err(rusqlite::Error::FromSqlConversionFailure(index, _, cause)) if JSON_COLUMNS.contains(&index) => {
            let runtime = runtime(r, true).or_else(|_| runtime(r, false))?;
            Ok(Err(UnreadableJob { id: r.get(0)?, runtime, problem: cause.to_string() }))
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_groups_read_back_as_they_were_written() {
        for groups in [vec![], vec!["a".to_string()], vec!["a".to_string(), "gpu-b".to_string()]] {
            assert_eq!(node_groups_of(&node_groups_column(&groups)), groups);
        }
        assert_eq!(node_groups_column(&["a".into(), "b".into()]), ",a,b,");
    }

    #[test]
    fn stop_reasons_read_back_by_name() {
        for reason in [StopReason::Stopped, StopReason::Deleted, StopReason::Preempted, StopReason::DeadlineExceeded] {
            assert_eq!(StopReason::parse(reason.as_str()), Some(reason));
        }
        assert_eq!(StopReason::parse("stopped"), None);
    }
}
