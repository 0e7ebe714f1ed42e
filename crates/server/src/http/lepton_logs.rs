//! `GET /logs`: Lepton's log query (what `leptonai`'s `client.log.get_log`,
//! `lep log get` and the TAO SDK's `get_job_logs` call), served from the log
//! store.
//!
//! Parameters, as `leptonai/api/v2/log.py` sends them: `job` (an id, or a
//! name that names one job) or `replica`; `start` and `end` in nanoseconds
//! (both or neither: neither means from the job's creation to now); `limit`
//! lines (default 5,000, at most 10,000); `q`, a text every returned line
//! contains; `direction` `backward` (newest first, the default) or
//! `forward`; `timestamps` and `job_query_mode` are accepted.
//!
//! The answer has Loki's shape, which the clients read:
//! `{"status": "success", "data": {"resultType": "streams", "result":
//! [{"stream": {"job", "replica"}, "values": [["<ns>", "<line>"], …]}]}}`,
//! one stream per replica attempt, its values in the asked direction.
//!
//! `start` is inclusive and `end` exclusive: `lep log get` pages backwards by
//! asking again with `end` set to the oldest time it got. So that paging
//! never skips or repeats a line, every line of an attempt gets a distinct
//! time: the log store keeps milliseconds, and the k-th line written within
//! one millisecond is given that millisecond plus k nanoseconds.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use axum::extract::{RawQuery, State};
use axum::routing::get;
use axum::Json;

use crate::http::auth::CurrentUser;
use crate::http::error::{AppError, AppResult};
use crate::http::jobs::{query_pairs, visible_job};
use crate::{now_millis, AppState, Route};
use jobdeck_api::logs::{
    LogQueryData, LogQueryLabels, LogQueryResult, LogQueryResultType, LogQueryStatus, LogQueryStream,
};
use jobdeck_api::{parse_replica_id, replica_id};
use jobdeck_store::logs::{LinePattern, LogReader, LogStore};

pub fn routes() -> Vec<Route> {
    vec![("/logs", get(query_logs))]
}

/// Lines a query answers unless it says otherwise (Lepton's default).
pub const DEFAULT_LIMIT: usize = 5_000;
/// The most lines one query answers.
pub const MAX_LIMIT: usize = 10_000;
const NANOS_PER_MILLI: i64 = 1_000_000;

/// Which end of the range the lines come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Newest first.
    Backward,
    /// Oldest first.
    Forward,
}

/// A parsed `GET /logs` query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogQuery {
    pub job: Option<String>,
    pub replica: Option<String>,
    /// `[start, end)` in nanoseconds.
    pub range: Option<(i64, i64)>,
    pub limit: usize,
    pub text: String,
    pub direction: Direction,
}

fn bad(message: String) -> AppError {
    AppError::BadRequest(message)
}

impl LogQuery {
    pub fn parse(pairs: &[(String, String)]) -> AppResult<LogQuery> {
        let mut query = LogQuery {
            job: None,
            replica: None,
            range: None,
            limit: DEFAULT_LIMIT,
            text: String::new(),
            direction: Direction::Backward,
        };
        let (mut start, mut end) = (None, None);
        let nanos = |key: &str, value: &str| -> AppResult<i64> {
            value
                .trim()
                .parse::<i64>()
                .ok()
                .filter(|n| *n >= 0)
                .ok_or_else(|| bad(format!("{key} must be a time in nanoseconds since 1970, not '{value}'")))
        };
        for (key, value) in pairs {
            match key.as_str() {
                "job" | "job_history_name" => query.job = Some(value.clone()).filter(|v| !v.is_empty()),
                "replica" => query.replica = Some(value.clone()).filter(|v| !v.is_empty()),
                "deployment" | "endpoint" => {
                    return Err(bad(format!("{key}: Jobdeck runs jobs only; ask for a job's logs with job=<id>")))
                }
                "start" => start = Some(nanos(key, value)?),
                "end" => end = Some(nanos(key, value)?),
                "limit" => {
                    query.limit = value
                        .trim()
                        .parse::<usize>()
                        .ok()
                        .filter(|n| (1..=MAX_LIMIT).contains(n))
                        .ok_or_else(|| bad(format!("limit must be between 1 and {MAX_LIMIT}, not '{value}'")))?
                }
                "q" => query.text = text_filter(value)?,
                "direction" => {
                    query.direction = match value.as_str() {
                        "backward" => Direction::Backward,
                        "forward" => Direction::Forward,
                        other => return Err(bad(format!("direction must be backward or forward, not '{other}'"))),
                    }
                }
                // Every value carries its time anyway; which jobs count is
                // decided by the job named.
                "job_query_mode" => {
                    crate::http::jobs::parse_query_mode(value)?;
                }
                "timestamps" | "interval_ms" => {}
                other => return Err(bad(format!("unknown parameter '{other}'"))),
            }
        }
        query.range = match (start, end) {
            (Some(start), Some(end)) if end <= start => return Err(bad("end must be after start".into())),
            (Some(start), Some(end)) => Some((start, end)),
            (None, None) => None,
            _ => return Err(bad("start and end go together: give both, or neither for the whole job".into())),
        };
        if query.job.is_none() && query.replica.is_none() {
            return Err(bad("job or replica is required: the logs of one job are searched at a time".into()));
        }
        Ok(query)
    }
}

/// The text every line must hold (`q`, here and in the merged log).
pub(crate) fn text_filter(value: &str) -> AppResult<String> {
    if value.chars().any(char::is_control) {
        return Err(bad("q must not contain control characters".into()));
    }
    Ok(value.to_string())
}

/// One line found, with its distinct time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub nanos: i64,
    /// Its number in the attempt's log (1-based).
    pub number: u64,
    pub stderr: bool,
    pub text: String,
}

/// The first line (1-based) whose time is at least `millis`, or `count + 1`
/// (a line written since `count` was read is past it).
fn first_at_or_after(reader: &mut LogReader, count: u64, millis: i64) -> std::io::Result<u64> {
    Ok(reader.first_at_or_after(millis)?.min(count + 1))
}

/// What one attempt's lines are read for: the lines in `[start, end)`
/// nanoseconds that contain `text`, each given its distinct time.
pub(crate) struct AttemptScan {
    text: String,
    /// The text compiled, so that whole blocks without it are passed over.
    wanted: Option<LinePattern>,
    start: i64,
    end: i64,
}

impl AttemptScan {
    pub(crate) fn new(text: &str, start: i64, end: i64) -> AttemptScan {
        let wanted = (!text.is_empty()).then(|| LinePattern::compile(text, false, false).ok()).flatten();
        AttemptScan { text: text.to_string(), wanted, start, end }
    }

    /// The wanted lines among lines `from..=to` of an attempt of `count`
    /// lines, oldest first.
    pub(crate) fn chunk(&self, reader: &mut LogReader, count: u64, from: u64, to: u64) -> std::io::Result<Vec<Found>> {
        if let Some(wanted) = &self.wanted {
            if !reader.may_hold(from, to, wanted)? {
                return Ok(Vec::new());
            }
        }
        let lines = reader.lines(from, to)?;
        let Some(head) = lines.first() else { return Ok(Vec::new()) };
        // The rank of the chunk's first line within its millisecond.
        let mut rank = (from - first_at_or_after(reader, count, head.time)?) as i64;
        let mut millis = head.time;
        let mut found = Vec::new();
        for line in lines {
            if line.time != millis {
                millis = line.time;
                rank = 0;
            }
            let nanos = line.time * NANOS_PER_MILLI + rank.min(NANOS_PER_MILLI - 1);
            rank += 1;
            if nanos >= self.start && nanos < self.end && line.text.contains(&self.text) {
                let stderr = line.stream == jobdeck_store::logs::Stream::Stderr;
                found.push(Found { nanos, number: line.number, stderr, text: line.text });
            }
        }
        Ok(found)
    }
}

/// How far apart two wanted lines may be for [`places_of`] to read the
/// lines between rather than look the second one up anew.
const PLACE_GAP: u64 = 4_096;

/// The distinct times of lines `numbers` (ascending) of an attempt, those
/// whose text holds `text`, as `(number, nanoseconds)`; numbers past the
/// end are left out. Lines near each other are read in one pass, counting
/// each one's rank within its millisecond as [`AttemptScan::chunk`] does;
/// a line far from the one before is looked up on its own.
pub(crate) fn places_of(reader: &mut LogReader, numbers: &[u64], text: &str) -> std::io::Result<Vec<(u64, i64)>> {
    let count = reader.line_count()?;
    let mut placed = Vec::with_capacity(numbers.len());
    let mut next = 0;
    while next < numbers.len() && numbers[next] <= count {
        let start = numbers[next];
        // The run's lines: number, millisecond, rank counted from the run's
        // start, and whether the run's first millisecond had not ended (its
        // rank then needs the lines of that millisecond before the start).
        let mut run: Vec<(u64, i64, i64, bool)> = Vec::new();
        let (mut first_millis, mut millis, mut rank, mut first) = (None, 0, 0, true);
        reader.visit(start, |number, time, _, line| {
            if number > count {
                return ControlFlow::Break(());
            }
            if first_millis.is_none() {
                first_millis = Some(time);
                millis = time;
            } else if time != millis {
                (millis, rank, first) = (time, 0, false);
            }
            while next < numbers.len() && numbers[next] < number {
                next += 1;
            }
            if numbers.get(next) == Some(&number) {
                next += 1;
                if text.is_empty() || std::str::from_utf8(line).is_ok_and(|l| l.contains(text)) {
                    run.push((number, time, rank, first));
                }
            }
            rank += 1;
            match numbers.get(next) {
                Some(&wanted) if wanted <= number + PLACE_GAP => ControlFlow::Continue(()),
                _ => ControlFlow::Break(()),
            }
        })?;
        let Some(first_millis) = first_millis else { break };
        let before_start = (start - first_at_or_after(reader, count, first_millis)?.min(start)) as i64;
        placed.extend(run.into_iter().map(|(number, time, rank, first)| {
            let rank = if first { before_start + rank } else { rank };
            (number, time * NANOS_PER_MILLI + rank.min(NANOS_PER_MILLI - 1))
        }));
    }
    Ok(placed)
}

/// How many lines an attempt's log is read at a time.
pub(crate) const CHUNK: u64 = 2_000;

/// Up to `limit` lines of one attempt in `[start, end)` nanoseconds that
/// contain `text`, in `direction` (the merged log's pages read them too,
/// `merged_log.rs`).
pub(crate) fn attempt_lines(
    reader: &mut LogReader,
    text: &str,
    direction: Direction,
    start: i64,
    end: i64,
    limit: usize,
) -> std::io::Result<Vec<Found>> {
    let count = reader.line_count()?;
    let first = first_at_or_after(reader, count, start.div_euclid(NANOS_PER_MILLI))?;
    // The first line past the range: its millisecond starts at or after `end`.
    let past = first_at_or_after(reader, count, end.saturating_add(NANOS_PER_MILLI - 1).div_euclid(NANOS_PER_MILLI))?;
    let scan = AttemptScan::new(text, start, end);
    let mut found = Vec::new();
    match direction {
        Direction::Forward => {
            let mut from = first;
            while from < past && found.len() < limit {
                let to = (from + CHUNK - 1).min(past - 1);
                found.extend(scan.chunk(reader, count, from, to)?);
                from = to + 1;
            }
        }
        Direction::Backward => {
            let mut to = past;
            while to > first && found.len() < limit {
                let from = to.saturating_sub(CHUNK).max(first);
                found.extend(scan.chunk(reader, count, from, to - 1)?.into_iter().rev());
                to = from;
            }
        }
    }
    found.truncate(limit);
    // Lines past the bound cannot be in the answer, which is bounded the same
    // way over every attempt in the same order (`answer`).
    crate::http::logs::within_bytes(&mut found, |line| line.text.len());
    Ok(found)
}

/// The answer to `query` over the attempts `(completion index, attempt)` of
/// `job_id`, in Loki's shape.
fn answer(
    logs: &LogStore,
    job_id: &str,
    attempts: &[(i64, i64)],
    query: &LogQuery,
    range: (i64, i64),
) -> std::io::Result<LogQueryResult> {
    let mut all: Vec<(i64, String, String)> = Vec::new();
    for &(index, attempt) in attempts {
        let Some(mut reader) = logs.open(job_id, index, attempt)? else { continue };
        let replica = replica_id(job_id, index, attempt);
        for line in attempt_lines(&mut reader, &query.text, query.direction, range.0, range.1, query.limit)? {
            all.push((line.nanos, replica.clone(), line.text));
        }
    }
    // The newest (or oldest) `limit` lines over every attempt.
    match query.direction {
        Direction::Backward => all.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1))),
        Direction::Forward => all.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1))),
    }
    all.truncate(query.limit);
    crate::http::logs::within_bytes(&mut all, |(_, _, text)| text.len());
    let mut streams: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for (nanos, replica, text) in all {
        streams.entry(replica).or_default().push((nanos.to_string(), text));
    }
    let result = streams
        .into_iter()
        .map(|(replica, values)| LogQueryStream { stream: LogQueryLabels { job: job_id.to_string(), replica }, values })
        .collect();
    Ok(LogQueryResult {
        status: LogQueryStatus::Success,
        data: LogQueryData { result_type: LogQueryResultType::Streams, result },
    })
}

async fn query_logs(
    State(state): State<AppState>,
    user: CurrentUser,
    RawQuery(raw): RawQuery,
) -> AppResult<Json<LogQueryResult>> {
    let query = LogQuery::parse(&query_pairs(raw.as_deref()))?;
    // A replica id starts with its job's id, so a query by replica alone
    // finds its job by trying the prefixes before each '-'.
    let job = match (&query.job, &query.replica) {
        (Some(job), _) => visible_job(&state, &user, job).await?,
        (None, Some(replica)) => {
            let mut found = None;
            for (cut, _) in replica.match_indices('-') {
                let candidate = &replica[..cut];
                if parse_replica_id(candidate, replica).is_some() {
                    if let Some(row) = state.store.job_visible_to(candidate.to_string(), user.name.clone()).await? {
                        found = Some(row);
                        break;
                    }
                }
            }
            found.ok_or_else(|| AppError::NotFound(format!("replica '{replica}' not found")))?
        }
        (None, None) => unreachable!("parse requires one"),
    };
    crate::http::replicas::logs_still_kept(&job)?;
    if !job.spec.log_collection(state.config.log_collection_default) {
        return Err(AppError::NotFoundCode(
            "log_collection_disabled",
            format!("job '{}' does not collect logs (spec.log.enable_collection is false)", job.id),
        ));
    }
    let mut attempts: Vec<(i64, i64)> =
        state.store.replicas_of(job.id.clone()).await?.iter().map(|r| (r.completion_index, r.attempt)).collect();
    if let Some(replica) = &query.replica {
        let wanted = parse_replica_id(&job.id, replica)
            .ok_or_else(|| AppError::NotFound(format!("replica '{replica}' of job '{}' not found", job.id)))?;
        attempts.retain(|a| *a == wanted);
    }
    // Without a range: from the job's creation to now (and a little past, so
    // a line written this millisecond is in).
    let range = query.range.unwrap_or(((job.created_at - 1) * NANOS_PER_MILLI, (now_millis() + 1) * NANOS_PER_MILLI));
    let logs = state.logs.clone();
    let job_id = job.id.clone();
    let answer = tokio::task::spawn_blocking(move || answer(&logs, &job_id, &attempts, &query, range))
        .await
        .map_err(AppError::internal)?
        .map_err(AppError::internal)?;
    Ok(Json(answer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use jobdeck_store::logs::{LogWriter, Stream};

    fn pairs(query: &str) -> Vec<(String, String)> {
        query_pairs(Some(query))
    }

    #[test]
    fn bad_queries_name_the_parameter() {
        let cases = [
            ("", "job or replica is required"),
            ("job=a&start=5", "start and end go together"),
            ("job=a&start=5&end=5", "end must be after start"),
            ("job=a&start=x&end=5", "start must be a time in nanoseconds"),
            ("job=a&start=-1&end=5", "start must be a time in nanoseconds"),
            ("job=a&limit=0", "limit must be between 1 and 10000"),
            ("job=a&limit=10001", "limit must be between 1 and 10000"),
            ("job=a&direction=up", "direction must be backward or forward"),
            ("job=a&q=a%00b", "q must not contain control characters"),
            ("deployment=d", "deployment: Jobdeck runs jobs only"),
            ("job=a&colour=red", "unknown parameter 'colour'"),
        ];
        for (raw, expected) in cases {
            match LogQuery::parse(&pairs(raw)) {
                Err(AppError::BadRequest(message)) => assert!(message.starts_with(expected), "{raw}: {message}"),
                other => panic!("{raw}: {other:?}"),
            }
        }
        let query = LogQuery::parse(&pairs(
            "job=tao-job-1&start=10&end=20&limit=7&q=loss&direction=forward&timestamps=True&job_query_mode=alive_and_archive",
        ))
        .unwrap();
        assert_eq!(query.range, Some((10, 20)));
        assert_eq!((query.limit, query.text.as_str(), query.direction), (7, "loss", Direction::Forward));
    }

    /// An attempt's log: `(millisecond, text)` lines.
    fn attempt(dir: &std::path::Path, lines: &[(i64, &str)]) -> LogReader {
        let store = LogStore::new(dir);
        let (log, idx) = store.paths("job-1", 0, 0);
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        let mut writer = LogWriter::create(&log, &idx).unwrap();
        for (time, text) in lines {
            writer.append(Stream::Stdout, *time, text.as_bytes()).unwrap();
        }
        writer.flush().unwrap();
        store.open("job-1", 0, 0).unwrap().unwrap()
    }

    fn texts(found: &[Found]) -> Vec<&str> {
        found.iter().map(|f| f.text.as_str()).collect()
    }

    #[test]
    fn lines_in_one_millisecond_get_distinct_rising_times() {
        let dir = tempfile::tempdir().unwrap();
        let mut reader = attempt(dir.path(), &[(5, "a"), (5, "b"), (5, "c"), (7, "d")]);
        let found = attempt_lines(&mut reader, "", Direction::Forward, 0, i64::MAX, 100).unwrap();
        let times: Vec<i64> = found.iter().map(|f| f.nanos).collect();
        assert_eq!(times, [5_000_000, 5_000_001, 5_000_002, 7_000_000]);
        let newest_first = attempt_lines(&mut reader, "", Direction::Backward, 0, i64::MAX, 100).unwrap();
        assert_eq!(texts(&newest_first), ["d", "c", "b", "a"]);
    }

    /// Paging backwards as `lep log get` does (`end` = the oldest time seen)
    /// returns every line once, even when a page ends inside a millisecond.
    #[test]
    fn paging_backwards_by_the_oldest_time_returns_every_line_once() {
        let dir = tempfile::tempdir().unwrap();
        let lines: Vec<(i64, String)> = (0..25).map(|i| (100 + i / 4, format!("line {i}"))).collect();
        let borrowed: Vec<(i64, &str)> = lines.iter().map(|(t, s)| (*t, s.as_str())).collect();
        let mut reader = attempt(dir.path(), &borrowed);
        let mut end = i64::MAX;
        let mut seen = Vec::new();
        loop {
            let page = attempt_lines(&mut reader, "", Direction::Backward, 0, end, 3).unwrap();
            let Some(oldest) = page.last() else { break };
            end = oldest.nanos;
            seen.extend(page.into_iter().map(|f| f.text));
        }
        seen.reverse();
        let expected: Vec<String> = (0..25).map(|i| format!("line {i}")).collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn ranges_and_text_filter_lines() {
        let dir = tempfile::tempdir().unwrap();
        let mut reader =
            attempt(dir.path(), &[(1, "epoch 1 loss 3"), (2, "saving"), (3, "epoch 2 loss 2"), (4, "epoch 3 loss 1")]);
        let found = attempt_lines(&mut reader, "loss", Direction::Forward, 2_000_000, 4_000_000, 100).unwrap();
        assert_eq!(texts(&found), ["epoch 2 loss 2"]);
        let found = attempt_lines(&mut reader, "loss", Direction::Backward, 0, i64::MAX, 2).unwrap();
        assert_eq!(texts(&found), ["epoch 3 loss 1", "epoch 2 loss 2"]);
    }
}
