//! A job's replicas, events and logs: `/jobs/{id}/replicas`,
//! `/jobs/{id}/events` and `/jobs/{id}/replicas/{replica}/log` (its ranges,
//! search and download are answered by `log_api`).

use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;
use bytes::Bytes;
use jobdeck_api::{
    EventSubject, JobEvent, JobSpec, JobState, Metadata, ReadinessIssue, Replica, ReplicaNode, ReplicaPhase,
    ReplicaStatus,
};

use crate::http::auth::CurrentUser;
use crate::http::error::{AppError, AppResult};
use crate::http::jobs::{query_pairs, visible_job};
use crate::http::logs::{self, LogRequest};
use crate::{AppState, Route};
use jobdeck_api::{parse_replica_id, replica_id, EndReason};
use jobdeck_core::config::ShapeConfig;
use jobdeck_store::logs::LogStore;
use jobdeck_store::{JobRow, ReplicaRow, Store, StoredEvent};

use crate::http::stream;

pub fn routes() -> Vec<Route> {
    vec![
        ("/jobs/{id}/replicas", get(list_replicas)),
        ("/jobs/{id}/events", get(list_events)),
        ("/jobs/{id}/replicas/{replica}/log", get(replica_log)),
    ]
}

/// The wire form of a stored attempt; `shape` is the job's resource shape,
/// whose CPU and memory Lepton reports on every replica.
pub fn replica_view(row: &ReplicaRow, shape: Option<&ShapeConfig>) -> Replica {
    let id = replica_id(&row.job_id, row.completion_index, row.attempt);
    Replica {
        metadata: Metadata {
            id: Some(id.clone()),
            name: Some(id.clone()),
            created_at: Some(row.created_at),
            ..Metadata::default()
        },
        id,
        status: ReplicaStatus {
            public_ip: None,
            node: row.node.clone().map(|node| ReplicaNode {
                name: node.clone(),
                id: node,
                node_group_id: row.node_group.clone(),
            }),
            completion_index: row.completion_index,
            attempt: row.attempt,
            phase: row.phase,
            readiness_issue: match (&row.readiness_reason, &row.readiness_message) {
                // A pending attempt says what it waits for; an ended one
                // keeps Lepton's `Failed` issue (an image that cannot be
                // pulled).
                (Some(reason), message) if row.phase == ReplicaPhase::Pending || reason == "Failed" => {
                    Some(ReadinessIssue { reason: reason.clone(), message: message.clone().unwrap_or_default() })
                }
                _ => None,
            },
            exit_code: row.exit_code.map(|c| c as i32),
            signal: row.signal.map(|s| s as i32),
            reason: row.reason.as_ref().map(EndReason::to_string),
            message: row.message.clone(),
            start_time: row.start_time,
            end_time: row.end_time,
            cpu: shape.map(|s| s.cpu),
            memory_in_mb: shape.map(|s| s.memory_mb),
            retry_at: row.retry_at.filter(|_| row.phase == ReplicaPhase::Pending),
            executor_id: row.executor_id.clone(),
        },
    }
}

/// The replicas a queued job will start first, pending with the job's
/// readiness issue; they are not stored until the job is admitted.
fn queued_replicas(job: &JobRow, spec: &JobSpec, stored: &[ReplicaRow], shape: Option<&ShapeConfig>) -> Vec<Replica> {
    // The contract's counts (workers make completions and parallelism), kept
    // in range for a job stored before the bounds existed.
    // The first indexes it runs: its chosen ones, or 0, 1, … (not listed
    // whole: a job may have 100,000).
    let completions = spec.completions().clamp(1, jobdeck_api::validate::REPLICAS_MAX);
    let parallelism = spec.parallelism().clamp(1, completions);
    let indexes: Vec<i64> = match spec.chosen_indexes() {
        Some(chosen) if !chosen.is_empty() => chosen.iter().copied().take(parallelism as usize).collect(),
        _ => (0..parallelism).collect(),
    };
    let issue = ReadinessIssue {
        reason: job.runtime.reason.clone().unwrap_or_else(|| "Queueing".into()),
        message: job.runtime.message.clone().unwrap_or_else(|| "waiting in the queue".into()),
    };
    indexes
        .into_iter()
        .map(|index| {
            let attempt =
                stored.iter().filter(|r| r.completion_index == index).map(|r| r.attempt + 1).max().unwrap_or(0);
            let row = ReplicaRow {
                job_id: job.id.clone(),
                completion_index: index,
                attempt,
                run: job.runtime.run,
                phase: ReplicaPhase::Pending,
                readiness_reason: Some(issue.reason.clone()),
                readiness_message: Some(issue.message.clone()),
                created_at: job.runtime.queued_at.unwrap_or(job.created_at),
                ..ReplicaRow::default()
            };
            replica_view(&row, shape)
        })
        .collect()
}

/// Which attempts `GET /jobs/{id}/replicas` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempts {
    /// The newest attempt of each completion index, as Lepton lists a
    /// job's replicas (its pods): the first entry is the one `lep job log`
    /// follows when no replica is named.
    Current,
    /// Every attempt, earlier ones included (Jobdeck's `attempts=all`, for
    /// the console's attempt history).
    All,
}

fn parse_attempts(raw: Option<&str>) -> AppResult<Attempts> {
    let mut attempts = Attempts::Current;
    for (key, value) in query_pairs(raw) {
        if key == "attempts" {
            attempts = match value.as_str() {
                "current" => Attempts::Current,
                "all" => Attempts::All,
                _ => return Err(AppError::BadRequest(format!("attempts must be current or all, not '{value}'"))),
            };
        }
    }
    Ok(attempts)
}

async fn list_replicas(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> AppResult<Json<Vec<Replica>>> {
    // `job_query_mode` is accepted with any value and ignored: the TAO SDK
    // sends `archive_and_live`, which is none of Lepton's listing modes.
    let attempts = parse_attempts(raw.as_deref())?;
    let job = visible_job(&state, &user, &id).await?;
    Ok(Json(replicas_of(&state, &job, attempts).await?))
}

/// A job's replicas as `GET /jobs/{id}/replicas` lists them (the event
/// stream sends the same).
pub async fn replicas_of(state: &AppState, job: &JobRow, attempts: Attempts) -> AppResult<Vec<Replica>> {
    let spec = &job.spec;
    let shape = state.config.shape_of(spec);
    let rows = state.store.replicas_of(job.id.clone()).await?;
    let mut replicas: Vec<Replica> = rows.iter().map(|row| replica_view(row, shape)).collect();
    if job.runtime.state == JobState::Queueing {
        replicas.extend(queued_replicas(job, spec, &rows, shape));
    }
    replicas.sort_by_key(|r| (r.status.completion_index, r.status.attempt));
    if attempts == Attempts::Current {
        // Sorted by index then attempt: the last of each index is its newest.
        let mut newest: Vec<Replica> = Vec::with_capacity(replicas.len());
        for replica in replicas {
            match newest.last_mut() {
                Some(last) if last.status.completion_index == replica.status.completion_index => *last = replica,
                _ => newest.push(replica),
            }
        }
        replicas = newest;
    }
    Ok(replicas)
}

/// 410 for a job whose logs the retention removed, saying when and by
/// which rule (the log viewer shows the sentence; Lepton clients print it).
pub fn logs_still_kept(job: &JobRow) -> AppResult<()> {
    let Some(removed_at) = job.logs.removed_at else { return Ok(()) };
    let policy = job.logs.removed_by.unwrap_or_default();
    Err(AppError::Gone(
        "logs_removed",
        format!(
            "the logs of job '{}' were removed at {} by {}; its events and failure analysis stay",
            job.id,
            crate::http::auth::format_time(removed_at),
            policy.in_words()
        ),
    ))
}

pub(crate) fn rfc3339(millis: i64) -> String {
    let time = std::time::UNIX_EPOCH + Duration::from_millis(millis.max(0) as u64);
    humantime::format_rfc3339_millis(time).to_string()
}

async fn list_events(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> AppResult<Response> {
    let job = visible_job(&state, &user, &id).await?;
    if stream::asks_for_a_stream(&headers, raw.as_deref())? {
        return stream::job_events(state, user, job, &headers).await;
    }
    Ok(Json(events_of(&state, &job.id).await?).into_response())
}

/// A job's events as `GET /jobs/{id}/events` lists them, newest first.
pub async fn events_of(state: &AppState, job_id: &str) -> AppResult<Vec<JobEvent>> {
    Ok(state.store.events_of(job_id.to_string()).await?.into_iter().map(event_view).collect())
}

/// The wire form of a stored event.
pub fn event_view(e: StoredEvent) -> JobEvent {
    JobEvent {
        kind: e.kind,
        reason: e.reason,
        regarding: Some(EventSubject { kind: e.regarding_kind, name: e.regarding_name }),
        count: e.count,
        last_observed_time: rfc3339(e.last_time),
        message: e.message,
    }
}

/// Whether `job` collects logs.
pub fn collects_logs(state: &AppState, job: &JobRow) -> bool {
    job.spec.log_collection(state.config.log_collection_default)
}

/// Where a log stream is.
struct Tail {
    store: Store,
    logs: LogStore,
    job_id: String,
    index: i64,
    attempt: i64,
    /// The number of the next line to send (the log store's lines are
    /// read by number, whichever format holds them).
    next_line: u64,
    follow: bool,
    timestamps: bool,
    done: bool,
    /// A follow holds one of its user's follower permits until it ends.
    _follower: Option<crate::http::request_limits::Permit>,
}

const CHUNK: usize = 256 * 1024;
const POLL: Duration = Duration::from_millis(250);

impl Tail {
    /// Reads what was stored since the last read, formatted.
    async fn read(&mut self) -> std::io::Result<Option<Bytes>> {
        let logs = self.logs.clone();
        let (job, index, attempt, next_line, timestamps) =
            (self.job_id.clone(), self.index, self.attempt, self.next_line, self.timestamps);
        let (text, next) = tokio::task::spawn_blocking(move || -> std::io::Result<(String, u64)> {
            let Some(mut reader) = logs.open(&job, index, attempt)? else {
                return Ok((String::new(), next_line));
            };
            let (lines, next) = reader.read_from(next_line, CHUNK)?;
            let mut text = String::with_capacity(lines.iter().map(|l| l.2.len() + 32).sum());
            for (time, _, line) in lines {
                if timestamps {
                    text.push_str(&rfc3339(time));
                    text.push(' ');
                }
                text.push_str(&line);
                text.push('\n');
            }
            Ok((text, next))
        })
        .await
        .map_err(std::io::Error::other)??;
        self.next_line = next;
        Ok((!text.is_empty()).then(|| Bytes::from(text)))
    }

    /// Whether the attempt has ended (or is gone), so no more lines come.
    async fn attempt_over(&self) -> bool {
        match self.store.replica(self.job_id.clone(), self.index, self.attempt).await {
            Ok(Some(row)) => row.is_finished(),
            Ok(None) => self.store.job(self.job_id.clone()).await.map(|j| j.is_none()).unwrap_or(true),
            Err(_) => true,
        }
    }

    /// The next chunk of the response, or `None` at its end.
    async fn next(&mut self) -> Option<std::io::Result<Bytes>> {
        if self.done {
            return None;
        }
        loop {
            match self.read().await {
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Ok(Some(bytes)) => return Some(Ok(bytes)),
                Ok(None) if !self.follow => {
                    self.done = true;
                    return None;
                }
                Ok(None) => {
                    if self.attempt_over().await {
                        // The supervisor flushes every line before it reports
                        // the end, so one more read gets the last of them.
                        self.done = true;
                        return match self.read().await {
                            Ok(Some(bytes)) => Some(Ok(bytes)),
                            _ => None,
                        };
                    }
                    tokio::time::sleep(POLL).await;
                }
            }
        }
    }
}

async fn replica_log(
    State(state): State<AppState>,
    user: CurrentUser,
    Path((id, replica)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
) -> AppResult<Response> {
    let request = LogRequest::parse(&query_pairs(raw.as_deref()))?;
    let job = visible_job(&state, &user, &id).await?;
    let id = job.id.clone();
    let not_found = || AppError::NotFound(format!("replica '{replica}' of job '{id}' not found"));
    let (index, attempt) = parse_replica_id(&id, &replica).ok_or_else(not_found)?;
    let stored = state.store.replica(id.clone(), index, attempt).await?;
    if stored.is_none() {
        // A queued job's pending replicas are listed before they exist; their
        // log is empty until they start.
        let spec = &job.spec;
        let queued = job.runtime.state == JobState::Queueing
            && queued_replicas(&job, spec, &state.store.replicas_of(id.clone()).await?, None)
                .iter()
                .any(|r| r.id == replica);
        if !queued {
            return Err(not_found());
        }
    }
    logs_still_kept(&job)?;
    if !collects_logs(&state, &job) {
        return Err(AppError::NotFoundCode(
            "log_collection_disabled",
            format!("job '{id}' does not collect logs (spec.log.enable_collection is false)"),
        ));
    }
    let (follow, timestamps, download) = match request {
        LogRequest::Text { follow, timestamps, download } => (follow, timestamps, download),
        LogRequest::Range { from, to, wait } => {
            let _follower = if wait.is_zero() { None } else { Some(state.user_limits.follow(&user)?) };
            let at = logs::Attempt { store: state.store.clone(), logs: state.logs.clone(), job_id: id, index, attempt };
            return logs::range(at, from, to, wait).await;
        }
        LogRequest::Search { text, regex, ignore_case, limit } => {
            let at = logs::Attempt { store: state.store.clone(), logs: state.logs.clone(), job_id: id, index, attempt };
            return logs::search(at, text, regex, ignore_case, limit).await;
        }
    };
    // Lepton's log endpoint streams a running replica's log until the replica
    // ends: `lep job log` reads it to the end and only then prints "End of
    // log", so a request that does not say follows an attempt that has
    // started and not ended. `follow=false` asks for what is there now; an
    // attempt still queued or already ended answers at once either way.
    let follow = follow.unwrap_or_else(|| !download && stored.as_ref().is_some_and(|row| !row.is_finished()));
    let follower = if follow { Some(state.user_limits.follow(&user)?) } else { None };
    let tail = Tail {
        store: state.store.clone(),
        logs: state.logs.clone(),
        job_id: id,
        index,
        attempt,
        next_line: 1,
        follow,
        timestamps,
        done: false,
        _follower: follower,
    };
    let stream =
        futures_util::stream::unfold(tail, |mut tail| async move { tail.next().await.map(|item| (item, tail)) });
    Ok(logs::text_stream(Body::from_stream(stream), download.then_some(replica.as_str())))
}
