//! The query parameters of `GET /jobs/{id}/replicas/{replica}/log` beyond
//! Lepton's plain stream, and the structured answers they ask for: a line
//! range (with a long-poll `wait` to follow a growing log), a search over
//! the whole log, and a download. The handler in `replicas.rs` authorizes
//! the request and hands it here. See docs/api.md, "Logs".

use std::time::{Duration, Instant};

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;
use jobdeck_api::{LogLine, LogRange, LogSearch};

use crate::http::error::{AppError, AppResult};
use jobdeck_store::logs::{LinePattern, LogStore, Stream};
use jobdeck_store::Store;

/// The most lines one range answer holds.
pub const MAX_RANGE_LINES: u64 = 5_000;
/// The most line text one structured answer (a range here, a `/logs`
/// query) holds: lines may be 64 KiB each, so 5,000 of them could make an
/// answer of hundreds of megabytes. An answer that reaches the bound stops
/// after the line that reaches it (a range's first line always comes), and
/// the client asks again from the line after its last one.
pub const MAX_ANSWER_BYTES: usize = 2 << 20;
/// Lines in a range that names only `from`.
pub const DEFAULT_RANGE_LINES: u64 = 1_000;
/// The longest a range request waits for new lines.
pub const MAX_WAIT_SECONDS: u64 = 30;
/// Matches a search returns unless `limit` says otherwise, and the most it
/// may ask for.
pub const DEFAULT_SEARCH_LIMIT: usize = 100_000;
pub const MAX_SEARCH_LIMIT: usize = 1_000_000;
/// The longest search text or pattern.
pub const MAX_SEARCH_LENGTH: usize = 1_000;

/// What a log request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogRequest {
    /// The text, streamed (Lepton's behaviour); `download` adds a file name.
    /// `follow` is `None` when the request does not say: the handler then
    /// follows an attempt that is running, as Lepton's endpoint does.
    Text { follow: Option<bool>, timestamps: bool, download: bool },
    /// Lines `from..=to` as JSON, waiting up to `wait` for line `from` to
    /// exist while the attempt runs.
    Range { from: RangeStart, to: Option<u64>, wait: Duration },
    /// Line numbers whose text matches.
    Search { text: String, regex: bool, ignore_case: bool, limit: usize },
}

/// Where a range starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeStart {
    /// A line number (1-based).
    Line(u64),
    /// The last `n` lines.
    Tail(u64),
}

/// A `true`/`false` (or `1`/`0`) parameter; a 400 naming `key` otherwise.
pub(crate) fn flag(key: &str, value: &str) -> AppResult<bool> {
    match value {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        other => Err(AppError::BadRequest(format!("{key} must be true or false, not '{other}'"))),
    }
}

/// A whole number parameter within `min..=max`; a 400 naming `key` otherwise.
pub(crate) fn number(key: &str, value: &str, min: u64, max: u64) -> AppResult<u64> {
    match value.trim().parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(AppError::BadRequest(format!("{key} must be a whole number from {min} to {max}, not '{value}'"))),
    }
}

/// A search's text or pattern (`search`, here and in the merged log): not
/// empty, and at most `MAX_SEARCH_LENGTH` characters.
pub(crate) fn search_text(text: String) -> AppResult<String> {
    if text.is_empty() {
        return Err(AppError::BadRequest("search must not be empty".into()));
    }
    if text.chars().count() > MAX_SEARCH_LENGTH {
        return Err(AppError::BadRequest(format!("search must be at most {MAX_SEARCH_LENGTH} characters")));
    }
    Ok(text)
}

impl LogRequest {
    /// Reads the query parameters; unknown ones are ignored, as Lepton
    /// clients may send their own.
    pub fn parse(pairs: &[(String, String)]) -> AppResult<LogRequest> {
        let (mut follow, mut timestamps, mut download) = (None, false, false);
        let (mut from, mut to, mut tail, mut wait) = (None, None, None, None);
        let (mut search, mut regex, mut ignore_case, mut limit) = (None, false, false, None);
        for (key, value) in pairs {
            match key.as_str() {
                "follow" => follow = Some(flag(key, value)?),
                "timestamps" => timestamps = flag(key, value)?,
                "download" => download = flag(key, value)?,
                "from" => from = Some(number(key, value, 1, u64::MAX)?),
                "to" => to = Some(number(key, value, 0, u64::MAX)?),
                "tail" => tail = Some(number(key, value, 1, MAX_RANGE_LINES)?),
                "wait" => wait = Some(number(key, value, 0, MAX_WAIT_SECONDS)?),
                "search" => search = Some(value.clone()),
                "regex" => regex = flag(key, value)?,
                "ignore_case" => ignore_case = flag(key, value)?,
                "limit" => limit = Some(number(key, value, 1, MAX_SEARCH_LIMIT as u64)? as usize),
                _ => {}
            }
        }
        let ranged = from.is_some() || to.is_some() || tail.is_some() || wait.is_some();
        if let Some(text) = search {
            if ranged || follow == Some(true) || download {
                return Err(AppError::BadRequest(
                    "search cannot be combined with from, to, tail, wait, follow or download".into(),
                ));
            }
            let text = search_text(text)?;
            return Ok(LogRequest::Search { text, regex, ignore_case, limit: limit.unwrap_or(DEFAULT_SEARCH_LIMIT) });
        }
        if regex || ignore_case || limit.is_some() {
            return Err(AppError::BadRequest("regex, ignore_case and limit need search".into()));
        }
        if ranged {
            if follow == Some(true) || download || timestamps {
                return Err(AppError::BadRequest(
                    "from, to, tail and wait answer JSON lines (with their times); they cannot be combined with follow, download or timestamps".into(),
                ));
            }
            let start = match (from, tail) {
                (Some(_), Some(_)) => return Err(AppError::BadRequest("give either from or tail, not both".into())),
                (Some(line), None) => RangeStart::Line(line),
                (None, Some(n)) => {
                    if to.is_some() {
                        return Err(AppError::BadRequest("to cannot be combined with tail".into()));
                    }
                    RangeStart::Tail(n)
                }
                (None, None) => RangeStart::Line(1),
            };
            if let (RangeStart::Line(first), Some(last)) = (start, to) {
                if last >= first && last - first >= MAX_RANGE_LINES {
                    return Err(AppError::BadRequest(format!(
                        "a range holds at most {MAX_RANGE_LINES} lines (from {first} to {last} is {})",
                        last - first + 1
                    )));
                }
            }
            return Ok(LogRequest::Range { from: start, to, wait: Duration::from_secs(wait.unwrap_or(0)) });
        }
        if download && follow == Some(true) {
            return Err(AppError::BadRequest("download and follow cannot be combined".into()));
        }
        Ok(LogRequest::Text { follow, timestamps, download })
    }
}

/// Which attempt's log.
pub struct Attempt {
    pub store: Store,
    pub logs: LogStore,
    pub job_id: String,
    pub index: i64,
    pub attempt: i64,
}

impl Attempt {
    /// Whether the attempt has ended (or is gone), so its log is final.
    pub async fn ended(&self) -> bool {
        match self.store.replica(self.job_id.clone(), self.index, self.attempt).await {
            Ok(Some(row)) => row.is_finished(),
            Ok(None) => self.store.job(self.job_id.clone()).await.map(|j| j.is_none()).unwrap_or(true),
            Err(_) => true,
        }
    }
}

fn line_count(logs: &LogStore, job_id: &str, index: i64, attempt: i64) -> std::io::Result<u64> {
    match logs.open(job_id, index, attempt)? {
        Some(mut reader) => reader.line_count(),
        None => Ok(0),
    }
}

/// How often a waiting range request looks for new lines. The writer is the
/// replica's supervisor, another process, so the index file is polled.
pub(crate) const WAIT_POLL: Duration = Duration::from_millis(100);

/// Answers a range: the lines that exist of those asked for, the total, and
/// whether more can come. With `wait`, a request for lines past the end
/// waits until the first of them is written or the attempt ends — a follow
/// that costs one small request per batch of new lines.
pub async fn range(attempt: Attempt, from: RangeStart, to: Option<u64>, wait: Duration) -> AppResult<Response> {
    let deadline = Instant::now() + wait;
    let mut ended = attempt.ended().await;
    if let RangeStart::Line(first) = from {
        loop {
            let (logs, job, index, number) =
                (attempt.logs.clone(), attempt.job_id.clone(), attempt.index, attempt.attempt);
            let count = blocking(move || line_count(&logs, &job, index, number)).await?;
            if count >= first || ended || Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(WAIT_POLL).await;
            ended = attempt.ended().await;
        }
    }
    let (logs, job, index, number) = (attempt.logs.clone(), attempt.job_id.clone(), attempt.index, attempt.attempt);
    let (total_lines, lines) = blocking(move || {
        let Some(mut reader) = logs.open(&job, index, number)? else {
            return Ok((0, Vec::new()));
        };
        let count = reader.line_count()?;
        let (first, last) = match from {
            RangeStart::Line(first) => (first, to.unwrap_or(first.saturating_add(DEFAULT_RANGE_LINES - 1))),
            RangeStart::Tail(n) => (count.saturating_sub(n) + 1, count),
        };
        let last = last.min(first.saturating_add(MAX_RANGE_LINES - 1));
        let mut lines: Vec<LogLine> = reader
            .lines(first, last)?
            .into_iter()
            .map(|l| LogLine { line: l.number, time: l.time, stderr: l.stream == Stream::Stderr, text: l.text })
            .collect();
        // A tail keeps the lines nearest the end; a range those nearest its start.
        match from {
            RangeStart::Tail(_) => {
                lines.reverse();
                within_bytes(&mut lines, |l| l.text.len());
                lines.reverse();
            }
            RangeStart::Line(_) => within_bytes(&mut lines, |l| l.text.len()),
        }
        Ok((count, lines))
    })
    .await?;
    let mut response = Json(LogRange { total_lines, ended, lines }).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// Cuts `items` after the first one whose text brings their sum to
/// [`MAX_ANSWER_BYTES`], so an answer holds at least one line.
pub fn within_bytes<T>(items: &mut Vec<T>, bytes: impl Fn(&T) -> usize) {
    let mut sum = 0usize;
    let keep = items
        .iter()
        .position(|item| {
            sum = sum.saturating_add(bytes(item));
            sum >= MAX_ANSWER_BYTES
        })
        .map_or(items.len(), |at| at + 1);
    items.truncate(keep);
}

/// Builds the matcher for a search: the text as a literal unless `regex`
/// (`LinePattern::compile` bounds a pattern's size and time).
pub fn matcher(text: &str, regex: bool, ignore_case: bool) -> AppResult<LinePattern> {
    LinePattern::compile(text, regex, ignore_case).map_err(|e| match e {
        regex::Error::Syntax(message) => {
            AppError::BadRequest(format!("search is not a valid regular expression: {}", message.trim()))
        }
        _ => AppError::BadRequest("search is too large a regular expression".into()),
    })
}

/// Answers a search over every line of the log.
pub async fn search(
    attempt: Attempt,
    text: String,
    regex: bool,
    ignore_case: bool,
    limit: usize,
) -> AppResult<Response> {
    let pattern = matcher(&text, regex, ignore_case)?;
    let (logs, job, index, number) = (attempt.logs, attempt.job_id, attempt.index, attempt.attempt);
    let (total_lines, matches, truncated) = blocking(move || match logs.open(&job, index, number)? {
        Some(mut reader) => reader.search(&pattern, limit),
        None => Ok((0, Vec::new(), false)),
    })
    .await?;
    let mut response = Json(LogSearch { total_lines, matches, truncated }).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// The `Content-Disposition` of a downloaded log: the replica id as the
/// file name (ids are letters, digits and hyphens; anything else is
/// replaced so the header stays well formed).
pub fn attachment(replica: &str) -> HeaderValue {
    let name: String = replica
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' { c } else { '_' })
        .collect();
    HeaderValue::from_str(&format!("attachment; filename=\"{name}.log\""))
        .unwrap_or(HeaderValue::from_static("attachment"))
}

/// A log's text streamed as `body`: plain UTF-8, never sniffed or cached,
/// and left uncompressed (the response compressor holds streamed lines
/// back and, for a body that ends while it waits, cut the end of the
/// stream in our tests with `requests`); a download when `attachment`
/// names the file (see [`attachment`]).
pub fn text_stream(body: axum::body::Body, attachment_name: Option<&str>) -> Response {
    let mut response = (axum::http::StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("identity"));
    if let Some(name) = attachment_name {
        headers.insert(header::CONTENT_DISPOSITION, attachment(name));
    }
    response
}

async fn blocking<T: Send + 'static>(work: impl FnOnce() -> std::io::Result<T> + Send + 'static) -> AppResult<T> {
    tokio::task::spawn_blocking(work).await.map_err(AppError::internal)?.map_err(AppError::internal)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(query: &str) -> AppResult<LogRequest> {
        LogRequest::parse(&crate::http::jobs::query_pairs(Some(query)))
    }

    #[test]
    fn parameters_name_what_is_asked_for() {
        let cases: Vec<(&str, LogRequest)> = vec![
            ("", LogRequest::Text { follow: None, timestamps: false, download: false }),
            ("follow=true&timestamps=1", LogRequest::Text { follow: Some(true), timestamps: true, download: false }),
            ("follow=false", LogRequest::Text { follow: Some(false), timestamps: false, download: false }),
            ("download=true&timestamps=true", LogRequest::Text { follow: None, timestamps: true, download: true }),
            ("unknown=x", LogRequest::Text { follow: None, timestamps: false, download: false }),
            ("from=10&to=20", LogRequest::Range { from: RangeStart::Line(10), to: Some(20), wait: Duration::ZERO }),
            (
                "from=11&wait=25",
                LogRequest::Range { from: RangeStart::Line(11), to: None, wait: Duration::from_secs(25) },
            ),
            ("tail=100", LogRequest::Range { from: RangeStart::Tail(100), to: None, wait: Duration::ZERO }),
            ("to=0", LogRequest::Range { from: RangeStart::Line(1), to: Some(0), wait: Duration::ZERO }),
            (
                "search=a%2Bb&regex=true&ignore_case=true&limit=5",
                LogRequest::Search { text: "a+b".into(), regex: true, ignore_case: true, limit: 5 },
            ),
            (
                "search=x",
                LogRequest::Search { text: "x".into(), regex: false, ignore_case: false, limit: DEFAULT_SEARCH_LIMIT },
            ),
        ];
        for (query, expected) in cases {
            assert_eq!(parse(query).unwrap(), expected, "{query}");
        }
    }

    #[test]
    fn contradictions_and_bad_values_are_refused_by_name() {
        let cases = [
            ("from=0", "from must be a whole number from 1"),
            ("from=x", "from must be a whole number"),
            ("to=-1", "to must be a whole number"),
            ("tail=0", "tail must be a whole number from 1 to 5000"),
            ("wait=31", "wait must be a whole number from 0 to 30"),
            ("from=1&to=5001", "at most 5000 lines"),
            ("from=1&tail=3", "either from or tail"),
            ("tail=3&to=9", "to cannot be combined with tail"),
            ("from=1&follow=true", "cannot be combined with follow"),
            ("search=", "search must not be empty"),
            ("search=a&from=1", "search cannot be combined"),
            ("regex=true", "need search"),
            ("search=a&limit=0", "limit must be a whole number from 1"),
            ("download=true&follow=true", "download and follow cannot be combined"),
            ("follow=maybe", "follow must be true or false"),
        ];
        for (query, message) in cases {
            match parse(query) {
                Err(AppError::BadRequest(m)) => assert!(m.contains(message), "{query}: {m}"),
                other => panic!("{query}: {other:?}"),
            }
        }
        let long = format!("search={}", "a".repeat(MAX_SEARCH_LENGTH + 1));
        assert!(parse(&long).is_err());
    }

    #[test]
    fn searches_are_literal_unless_asked_and_bad_patterns_are_named() {
        assert!(matcher("a.c", false, false).unwrap().is_match(b"xa.cx"));
        assert!(!matcher("a.c", false, false).unwrap().is_match(b"abc"));
        assert!(matcher("a.c", true, false).unwrap().is_match(b"abc"));
        assert!(matcher("ABC", false, true).unwrap().is_match(b"xabcx"));
        match matcher("(unclosed", true, false) {
            Err(AppError::BadRequest(m)) => assert!(m.starts_with("search is not a valid regular expression"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(matcher("(a{1000}){1000}", true, false).is_err(), "huge patterns are refused");
    }

    #[test]
    fn answers_stop_after_the_line_that_reaches_the_byte_bound() {
        let line = MAX_ANSWER_BYTES / 4;
        let mut lines = vec![line; 10];
        within_bytes(&mut lines, |n| *n);
        assert_eq!(lines.len(), 4, "the fourth line reaches the bound");
        let mut huge = vec![MAX_ANSWER_BYTES * 2, 1];
        within_bytes(&mut huge, |n| *n);
        assert_eq!(huge, vec![MAX_ANSWER_BYTES * 2], "one line always comes");
        let mut small = vec![10; 100];
        within_bytes(&mut small, |n| *n);
        assert_eq!(small.len(), 100);
    }

    #[test]
    fn download_names_are_safe_header_values() {
        assert_eq!(attachment("train-ab12c-0-1"), "attachment; filename=\"train-ab12c-0-1.log\"");
        assert_eq!(attachment("a\"b\r\nc"), "attachment; filename=\"a_b__c.log\"");
    }
}
