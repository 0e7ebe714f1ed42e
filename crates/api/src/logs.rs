//! The structured answers of the log endpoint
//! (`GET /jobs/{id}/replicas/{replica}/log` with `from`/`to` or `search`).
//!
//! A plain `GET` of that endpoint streams text, as Lepton clients expect;
//! these types are what the console reads when it asks for line ranges (to
//! draw only the lines on screen) and for the line numbers a search matches.

use serde::{Deserialize, Serialize};

use crate::decode::Decode;

fn is_false(b: &bool) -> bool {
    !*b
}

/// One stored log line.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogLine {
    /// 1-based line number within the attempt's log.
    pub line: u64,
    /// Unix milliseconds when the line was read.
    pub time: i64,
    /// The line came from standard error (left out for standard output).
    #[serde(default, skip_serializing_if = "is_false")]
    pub stderr: bool,
    /// The text as the program wrote it, ANSI escape codes included, without
    /// the newline. Never HTML: show it as text.
    pub text: String,
}

/// The answer to a line-range request (`from`, `to`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogRange {
    /// How many lines the log holds now.
    pub total_lines: u64,
    /// The attempt has ended: the log will not grow any more.
    pub ended: bool,
    /// The lines asked for that exist, in order; empty when the range starts
    /// past the end.
    pub lines: Vec<LogLine>,
}

/// The answer to a search (`search`, `regex`, `ignore_case`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogSearch {
    /// How many lines were searched (the log's length when the search ran).
    pub total_lines: u64,
    /// The numbers of the matching lines, ascending.
    pub matches: Vec<u64>,
    /// More lines matched than `limit`; `matches` holds the first ones.
    #[serde(default, skip_serializing_if = "is_false")]
    pub truncated: bool,
}

/// The answer of Lepton's log query (`GET /logs`), in the shape of Loki's
/// query API that Lepton serves: one stream per replica attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogQueryResult {
    pub status: LogQueryStatus,
    pub data: LogQueryData,
}

/// Always `success`: a query that fails answers an error instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum LogQueryStatus {
    Success,
}

/// The streams found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogQueryData {
    #[serde(rename = "resultType")]
    pub result_type: LogQueryResultType,
    pub result: Vec<LogQueryStream>,
}

/// Always `streams`: Lepton answers log lines, never metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum LogQueryResultType {
    Streams,
}

/// The lines of one replica attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogQueryStream {
    pub stream: LogQueryLabels,
    /// `[time in nanoseconds since 1970 as text, line]`, in the query's
    /// direction.
    pub values: Vec<(String, String)>,
}

/// Which job and replica attempt a stream's lines come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogQueryLabels {
    pub job: String,
    pub replica: String,
}

/// One line of a merged log (`GET /jobs/{id}/merged-log`): a line of one
/// replica attempt, placed among the others by the time it was stored.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MergedLine {
    /// The replica attempt the line is from.
    pub replica: String,
    /// Its number in that attempt's log (1-based), as a line range and a
    /// permalink (`#L<n>`) name it.
    pub line: u64,
    /// Nanoseconds since 1970, as a decimal string (past JavaScript's exact
    /// integers): the stored millisecond plus the line's rank within it, so
    /// every line of an attempt has its own (as `GET /logs` answers them).
    /// With the replica it is the line's place: `after` and `before` take
    /// `<time>:<replica>`.
    pub time: String,
    /// The line came from standard error (left out for standard output).
    #[serde(default, skip_serializing_if = "is_false")]
    pub stderr: bool,
    /// The text as written, ANSI codes included. Never HTML.
    pub text: String,
}

/// A line a merged log's search found: where it is, as a permalink
/// (`around=<replica>:<line>`) and a page (`after=<time>:<replica>`) name it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MergedMatch {
    /// The replica attempt the line is from.
    pub replica: String,
    /// Its number in that attempt's log (1-based).
    pub line: u64,
    /// Its time, as a [`MergedLine`]'s.
    pub time: String,
}

/// The answer to a merged log's search (`search`, `regex`, `ignore_case`):
/// the matching lines of every replica merged, in the merged order.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MergedSearch {
    /// The replica attempts searched, in the order of their labels.
    pub replicas: Vec<String>,
    /// The lines found, oldest first.
    pub matches: Vec<MergedMatch>,
    /// More lines matched than `limit`; `matches` holds the oldest ones.
    #[serde(default, skip_serializing_if = "is_false")]
    pub truncated: bool,
}

/// A page of a merged log, oldest line first whichever way it was read.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MergedLog {
    /// The replica attempts merged, in the order of their labels.
    pub replicas: Vec<String>,
    pub lines: Vec<MergedLine>,
    /// Lines (matching the filter) come before the first one.
    pub more_before: bool,
    /// Lines (matching the filter) come after the last one now.
    pub more_after: bool,
    /// Some attempt merged has not ended: more lines may come.
    pub running: bool,
    /// The lines' times are when the server copied them, not when they were
    /// written (Slurm's output files have no times), so the order across
    /// replicas is right only to the copy's interval.
    #[serde(default, skip_serializing_if = "is_false")]
    pub approximate_order: bool,
}
