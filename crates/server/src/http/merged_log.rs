//! `GET /jobs/{id}/merged-log`: every rank on one timeline. The lines of
//! several replica attempts of one job (by default the latest attempt of
//! each completion index), ordered by the time they were stored and marked
//! with their replica and line number, a page at a time: the newest, the
//! oldest, those before or after a line's place, or those around one line
//! (a permalink). `download=true` answers the whole merged text
//! (`merged_download.rs`); `search=` the places of the lines that match
//! (`merged_search.rs`).
//!
//! A line's place is its time (`GET /logs`'s nanoseconds: the stored
//! millisecond plus its rank within it, distinct within an attempt) and
//! then its replica's id, so two lines never share a place and a page that
//! continues from the last place of the one before neither skips nor
//! repeats a line. Each page reads at most `limit + 1` lines of each
//! attempt from its side of the place (a binary search on the line times,
//! `lepton_logs::attempt_lines`), so it costs the same at the start of a
//! log of millions of lines as at its end.

use std::time::{Duration, Instant};

use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;

use crate::http::auth::CurrentUser;
use crate::http::error::{AppError, AppResult};
use crate::http::jobs::{query_pairs, visible_job};
use crate::http::lepton_logs::{attempt_lines, places_of, text_filter, Direction, Found};
use crate::http::logs::{flag, matcher, number, search_text, MAX_WAIT_SECONDS, WAIT_POLL};
use crate::http::merged_download::{self, MergedText};
use crate::http::merged_search::{self, WantedMatches, DEFAULT_MATCHES, MAX_MATCHES};
use crate::{AppState, Route};
use jobdeck_api::logs::{MergedLine, MergedLog, MergedSearch};
use jobdeck_api::{parse_replica_id, replica_id};
use jobdeck_core::config::ExecutorKind;
use jobdeck_store::logs::LogStore;

pub fn routes() -> Vec<Route> {
    vec![("/jobs/{id}/merged-log", get(merged_log))]
}

/// Lines a page holds unless asked otherwise: a few screens.
pub const DEFAULT_LIMIT: usize = 500;
/// The most lines one page holds.
pub const MAX_LIMIT: usize = 5_000;
/// The most replica attempts one view merges.
pub const MAX_REPLICAS: usize = 256;

/// A line's place in the merged order: its time, then its replica.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Place {
    pub nanos: i64,
    pub replica: String,
}

impl Place {
    /// `<nanoseconds>:<replica>`, as a `MergedLine`'s `time` and `replica`
    /// make it.
    fn parse(key: &str, value: &str) -> AppResult<Place> {
        value
            .split_once(':')
            .and_then(|(nanos, replica)| {
                let nanos = nanos.parse::<i64>().ok().filter(|n| *n >= 0)?;
                (!replica.is_empty()).then(|| Place { nanos, replica: replica.to_string() })
            })
            .ok_or_else(|| bad(format!("{key} must be a line's <time>:<replica>, not '{value}'")))
    }
}

/// Where a page is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PageAt {
    /// The newest lines (the default).
    Newest,
    /// The oldest lines (`from_start=true`).
    Oldest,
    /// The lines just before a place (`before`).
    Before(Place),
    /// The lines just after a place (`after`).
    After(Place),
    /// Line `line` of `replica` and the lines around it (`around=<replica>:<line>`).
    Around { replica: String, line: u64 },
}

/// A parsed query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergedQuery {
    /// The replica attempts asked for; all the latest ones when `None`.
    pub replicas: Option<Vec<String>>,
    pub at: PageAt,
    pub limit: usize,
    /// A text every line holds (literal, case-sensitive, as `GET /logs`'s `q`).
    pub text: String,
    pub download: bool,
    /// With `after`: how long to wait for a line past the place when none
    /// is there yet (a follow's long poll, as `GET /logs`'s range waits).
    pub wait: Duration,
    /// The lines to find (`search`), answered instead of a page.
    pub search: Option<WantedMatches>,
}

fn bad(message: String) -> AppError {
    AppError::BadRequest(message)
}

impl MergedQuery {
    pub fn parse(pairs: &[(String, String)]) -> AppResult<MergedQuery> {
        let mut query = MergedQuery {
            replicas: None,
            at: PageAt::Newest,
            limit: DEFAULT_LIMIT,
            text: String::new(),
            download: false,
            wait: Duration::ZERO,
            search: None,
        };
        let mut places = Vec::new();
        let (mut search, mut regex, mut ignore_case, mut limit) = (None, false, false, None);
        for (key, value) in pairs {
            match key.as_str() {
                "replicas" => {
                    let replicas: Vec<String> =
                        value.split(',').map(str::trim).filter(|r| !r.is_empty()).map(String::from).collect();
                    if replicas.is_empty() || replicas.len() > MAX_REPLICAS {
                        return Err(bad(format!(
                            "replicas must name 1 to {MAX_REPLICAS} replicas, separated by commas"
                        )));
                    }
                    query.replicas = Some(replicas);
                }
                "before" => places.push((key, PageAt::Before(Place::parse(key, value)?))),
                "after" => places.push((key, PageAt::After(Place::parse(key, value)?))),
                "around" => {
                    let around = value.rsplit_once(':').and_then(|(replica, line)| {
                        let line = line.parse::<u64>().ok().filter(|n| *n >= 1)?;
                        (!replica.is_empty()).then(|| PageAt::Around { replica: replica.to_string(), line })
                    });
                    let around =
                        around.ok_or_else(|| bad(format!("around must be <replica>:<line number>, not '{value}'")))?;
                    places.push((key, around));
                }
                "from_start" => {
                    if flag(key, value)? {
                        places.push((key, PageAt::Oldest));
                    }
                }
                // Its bounds depend on whether it counts lines or matches.
                "limit" => limit = Some(value),
                "search" => search = Some(value.clone()),
                "regex" => regex = flag(key, value)?,
                "ignore_case" => ignore_case = flag(key, value)?,
                "q" => query.text = text_filter(value)?,
                "download" => query.download = flag(key, value)?,
                "wait" => query.wait = Duration::from_secs(number(key, value, 0, MAX_WAIT_SECONDS)?),
                other => return Err(bad(format!("unknown parameter '{other}'"))),
            }
        }
        if let Some(text) = search {
            if !places.is_empty() || query.download || !query.wait.is_zero() {
                return Err(bad("search finds lines over the whole merged log: it cannot be combined with before, after, around, from_start, download or wait".into()));
            }
            let limit = match limit {
                Some(value) => number("limit", value, 1, MAX_MATCHES as u64)? as usize,
                None => DEFAULT_MATCHES,
            };
            query.search = Some(WantedMatches { text: search_text(text)?, regex, ignore_case, limit });
            return Ok(query);
        }
        if regex || ignore_case {
            return Err(bad("regex and ignore_case need search".into()));
        }
        if let Some(value) = limit {
            query.limit = number("limit", value, 1, MAX_LIMIT as u64)? as usize;
        }
        match places.as_slice() {
            [] => {}
            [(_, at)] if !query.download => query.at = at.clone(),
            [(key, _)] => return Err(bad(format!("download answers the whole log; it cannot be combined with {key}"))),
            [(first, _), (second, _), ..] => {
                return Err(bad(format!("{first} and {second} cannot be combined: a page is at one place")))
            }
        }
        if !query.wait.is_zero() && !matches!(query.at, PageAt::After(_)) {
            return Err(bad("wait follows new lines: it needs after, and cannot be combined with download".into()));
        }
        Ok(query)
    }
}

/// One line of the page, with its place.
struct Placed {
    place: Place,
    found: Found,
}

impl Placed {
    fn wire(self) -> MergedLine {
        MergedLine {
            replica: self.place.replica,
            line: self.found.number,
            time: self.place.nanos.to_string(),
            stderr: self.found.stderr,
            text: self.found.text,
        }
    }
}

/// The attempts a page reads: `(replica id, completion index, attempt)`.
pub(crate) type Attempts = Vec<(String, i64, i64)>;

/// The logs one view merges, and the text its lines must hold.
struct Merge<'a> {
    logs: &'a LogStore,
    job_id: &'a str,
    attempts: &'a Attempts,
    text: &'a str,
}

impl Merge<'_> {
    /// Up to `limit` lines on one side of `from` (all of them when `None`) over
    /// every attempt, nearest first, and whether more lie past them. `Forward`
    /// reads the places after `from` (from it, when `inclusive`), `Backward`
    /// those before it.
    fn one_side(
        &self,
        direction: Direction,
        from: Option<&Place>,
        inclusive: bool,
        limit: usize,
    ) -> std::io::Result<(Vec<Placed>, bool)> {
        let (start, end) = match (direction, from) {
            (_, None) => (0, i64::MAX),
            (Direction::Forward, Some(place)) => (place.nanos, i64::MAX),
            (Direction::Backward, Some(place)) => (0, place.nanos.saturating_add(1)),
        };
        let mut all = Vec::new();
        for (replica, index, attempt) in self.attempts {
            let Some(mut reader) = self.logs.open(self.job_id, *index, *attempt)? else { continue };
            // One more than the page, so that whether more lie past it is known;
            // and one more again, for the line at `from`'s own time.
            for found in attempt_lines(&mut reader, self.text, direction, start, end, limit + 2)? {
                let place = Place { nanos: found.nanos, replica: replica.clone() };
                let on_side = match (direction, from) {
                    (_, None) => true,
                    (Direction::Forward, Some(from)) => place > *from || (inclusive && place == *from),
                    (Direction::Backward, Some(from)) => place < *from,
                };
                if on_side {
                    all.push(Placed { place, found });
                }
            }
        }
        match direction {
            Direction::Forward => all.sort_by(|a, b| a.place.cmp(&b.place)),
            Direction::Backward => all.sort_by(|a, b| b.place.cmp(&a.place)),
        }
        let mut more = all.len() > limit;
        all.truncate(limit);
        let read = all.len();
        crate::http::logs::within_bytes(&mut all, |line| line.found.text.len());
        more |= all.len() < read;
        Ok((all, more))
    }

    /// The place of line `line` of `replica`, if it exists.
    fn place_of(&self, replica: &str, line: u64) -> std::io::Result<Option<Place>> {
        let Some((_, index, attempt)) = self.attempts.iter().find(|(id, ..)| id == replica) else { return Ok(None) };
        let Some(mut reader) = self.logs.open(self.job_id, *index, *attempt)? else { return Ok(None) };
        let placed = places_of(&mut reader, &[line], "")?;
        Ok(placed.first().map(|&(_, nanos)| Place { nanos, replica: replica.to_string() }))
    }

    /// A page of the merged log: its lines oldest first, and whether more come
    /// before and after them.
    fn page(&self, at: &PageAt, limit: usize) -> std::io::Result<Option<(Vec<Placed>, bool, bool)>> {
        let backward = |from: Option<&Place>, limit| {
            self.one_side(Direction::Backward, from, false, limit).map(|(mut lines, more)| {
                lines.reverse();
                (lines, more)
            })
        };
        let forward =
            |from: Option<&Place>, inclusive, limit| self.one_side(Direction::Forward, from, inclusive, limit);
        Ok(Some(match at {
            PageAt::Newest => {
                let (lines, before) = backward(None, limit)?;
                (lines, before, false)
            }
            PageAt::Oldest => {
                let (lines, after) = forward(None, false, limit)?;
                (lines, false, after)
            }
            PageAt::Before(place) => {
                let (lines, before) = backward(Some(place), limit)?;
                (lines, before, true)
            }
            PageAt::After(place) => {
                let (lines, after) = forward(Some(place), false, limit)?;
                (lines, true, after)
            }
            PageAt::Around { replica, line } => {
                let Some(place) = self.place_of(replica, *line)? else { return Ok(None) };
                // The line itself, whatever the text filter, is on screen.
                let (mut lines, before) = backward(Some(&place), limit / 2)?;
                let (after_lines, after) = forward(Some(&place), true, limit - limit / 2)?;
                lines.extend(after_lines);
                (lines, before, after)
            }
        }))
    }
}

/// The replica attempts `query` names, checked against the job's, or the
/// latest attempt of each completion index; and `also` (a permalink's
/// replica, which may be an earlier attempt), when it is one of the job's.
/// In the order of their ids' index and attempt.
fn chosen_attempts(
    job_id: &str,
    rows: &[(i64, i64, bool)],
    asked: Option<&[String]>,
    also: Option<&str>,
) -> AppResult<(Attempts, bool)> {
    let mut chosen: Vec<(i64, i64, bool)> = match asked {
        Some(asked) => asked
            .iter()
            .map(|replica| {
                parse_replica_id(job_id, replica)
                    .and_then(|(index, attempt)| rows.iter().find(|r| (r.0, r.1) == (index, attempt)).copied())
                    .ok_or_else(|| bad(format!("replicas: '{replica}' is not a replica of job '{job_id}'")))
            })
            .collect::<AppResult<_>>()?,
        None => {
            let mut latest: Vec<(i64, i64, bool)> = Vec::new();
            for row in rows {
                match latest.iter_mut().find(|l| l.0 == row.0) {
                    Some(l) if l.1 < row.1 => *l = *row,
                    Some(_) => {}
                    None => latest.push(*row),
                }
            }
            latest
        }
    };
    let also = also.and_then(|replica| parse_replica_id(job_id, replica));
    chosen.extend(rows.iter().filter(|r| also == Some((r.0, r.1))));
    chosen.sort_by_key(|r| (r.0, r.1));
    chosen.dedup();
    let running = chosen.iter().any(|r| !r.2);
    Ok((
        chosen.into_iter().map(|(index, attempt, _)| (replica_id(job_id, index, attempt), index, attempt)).collect(),
        running,
    ))
}

async fn merged_log(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> AppResult<Response> {
    let query = MergedQuery::parse(&query_pairs(raw.as_deref()))?;
    let job = visible_job(&state, &user, &id).await?;
    crate::http::replicas::logs_still_kept(&job)?;
    if !crate::http::replicas::collects_logs(&state, &job) {
        return Err(AppError::NotFoundCode(
            "log_collection_disabled",
            format!("job '{}' does not collect logs (spec.log.enable_collection is false)", job.id),
        ));
    }
    let rows = attempt_rows(&state, &job.id).await?;
    let permalink = match &query.at {
        PageAt::Around { replica, .. } => Some(replica.as_str()),
        _ => None,
    };
    let (attempts, running) = chosen_attempts(&job.id, &rows, query.replicas.as_deref(), permalink)?;
    let logs = state.logs.clone();
    let job_id = job.id.clone();
    if query.download {
        let text = query.text;
        let merged = tokio::task::spawn_blocking(move || MergedText::open(&logs, &job_id, &attempts, &text))
            .await
            .map_err(AppError::internal)?
            .map_err(AppError::internal)?;
        return Ok(merged_download::response(merged, &format!("{}-merged", job.id)));
    }
    let replicas: Vec<String> = attempts.iter().map(|a| a.0.clone()).collect();
    if let Some(wanted) = query.search {
        let pattern = matcher(&wanted.text, wanted.regex, wanted.ignore_case)?;
        let holding = query.text;
        let (matches, truncated) = tokio::task::spawn_blocking(move || {
            merged_search::find(&logs, &job_id, &attempts, &pattern, &holding, wanted.limit)
        })
        .await
        .map_err(AppError::internal)?
        .map_err(AppError::internal)?;
        let mut response = Json(MergedSearch { replicas, matches, truncated }).into_response();
        response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        return Ok(response);
    }
    let approximate_order = state.executor.kind() == ExecutorKind::Slurm;
    let read = |at: PageAt| {
        let (logs, job_id, attempts, text) = (logs.clone(), job_id.clone(), attempts.clone(), query.text.clone());
        let limit = query.limit;
        async move {
            tokio::task::spawn_blocking(move || {
                Merge { logs: &logs, job_id: &job_id, attempts: &attempts, text: &text }.page(&at, limit)
            })
            .await
            .map_err(AppError::internal)?
            .map_err(AppError::internal)
        }
    };
    // A follow's long poll: a page after the last place that is empty while
    // a replica still runs is asked again once a log has grown, until the
    // wait is over.
    let deadline = Instant::now() + query.wait;
    let mut running = running;
    let found = loop {
        let found = read(query.at.clone()).await?;
        let empty = matches!(&found, Some((lines, ..)) if lines.is_empty());
        if !empty || !running || Instant::now() >= deadline {
            break found;
        }
        running = wait_for_lines(&state, &job.id, &attempts, query.replicas.as_deref(), deadline).await?;
    };
    let Some((lines, more_before, more_after)) = found else {
        return Err(AppError::NotFound("around: that line is not in the replicas merged".into()));
    };
    let answer = MergedLog {
        replicas,
        lines: lines.into_iter().map(Placed::wire).collect(),
        more_before,
        more_after,
        running,
        approximate_order,
    };
    let mut response = Json(answer).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// The job's replica attempts as `(completion index, attempt, finished)`.
async fn attempt_rows(state: &AppState, job_id: &str) -> AppResult<Vec<(i64, i64, bool)>> {
    Ok(state
        .store
        .replicas_of(job_id.to_string())
        .await?
        .iter()
        .map(|r| (r.completion_index, r.attempt, r.is_finished()))
        .collect())
}

/// The lines stored of `attempts`, all together.
fn line_total(logs: &LogStore, job_id: &str, attempts: &Attempts) -> std::io::Result<u64> {
    let mut total = 0;
    for (_, index, attempt) in attempts {
        if let Some(mut reader) = logs.open(job_id, *index, *attempt)? {
            total += reader.line_count()?;
        }
    }
    Ok(total)
}

/// Waits until a log of `attempts` grows, every one of them has ended or
/// `deadline` has passed, looking every `WAIT_POLL` (the writers are the
/// replicas' supervisors, other processes); answers whether one still runs.
async fn wait_for_lines(
    state: &AppState,
    job_id: &str,
    attempts: &Attempts,
    asked: Option<&[String]>,
    deadline: Instant,
) -> AppResult<bool> {
    let count = || {
        let (logs, job_id, attempts) = (state.logs.clone(), job_id.to_string(), attempts.clone());
        async move {
            tokio::task::spawn_blocking(move || line_total(&logs, &job_id, &attempts))
                .await
                .map_err(AppError::internal)?
                .map_err(AppError::internal)
        }
    };
    let before = count().await?;
    loop {
        tokio::time::sleep(WAIT_POLL).await;
        let running = chosen_attempts(job_id, &attempt_rows(state, job_id).await?, asked, None)?.1;
        if !running || Instant::now() >= deadline || count().await? != before {
            return Ok(running);
        }
    }
}

#[cfg(test)]
#[path = "merged_log_tests.rs"]
mod tests;
