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
