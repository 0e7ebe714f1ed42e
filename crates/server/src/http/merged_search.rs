//! A merged log's search (`GET /jobs/{id}/merged-log?search=…`): the lines
//! of every replica merged that match a text or a regular expression, in
//! the merged order, each named by its replica, line number and time, so
//! the console steps from one to the next by opening the merged log
//! around it (`around=<replica>:<line>`) with every rank's lines beside it.
//!
//! Each attempt is searched as one replica's log is (`LogReader::search`:
//! blocks whose filter lacks the pattern's text are not read), and only the
//! lines found are then read again for their times (`places_of`).

use jobdeck_api::logs::MergedMatch;
use jobdeck_store::logs::{LinePattern, LogStore};

use crate::http::lepton_logs::places_of;
use crate::http::merged_log::{Attempts, Place};

/// Matches a search answers unless `limit` says otherwise, and the most it
/// may ask for: each is a replica, a line and a time (about 70 bytes of
/// JSON), so the most is a few megabytes.
pub const DEFAULT_MATCHES: usize = 10_000;
pub const MAX_MATCHES: usize = 100_000;

/// A search as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WantedMatches {
    pub text: String,
    pub regex: bool,
    pub ignore_case: bool,
    pub limit: usize,
}

/// The oldest `limit` lines of `attempts` that `pattern` matches and that
/// hold `holding` (the merged log's `q`, which the lines shown hold), in
/// the merged order; and whether more may match.
pub fn find(
    logs: &LogStore,
    job_id: &str,
    attempts: &Attempts,
    pattern: &LinePattern,
    holding: &str,
    limit: usize,
) -> std::io::Result<(Vec<MergedMatch>, bool)> {
    let mut found: Vec<(Place, u64)> = Vec::new();
    let mut truncated = false;
    for (replica, index, attempt) in attempts {
        let Some(mut reader) = logs.open(job_id, *index, *attempt)? else { continue };
        // An attempt's first `limit` matches hold every one of its lines that
        // can be among the first `limit` of all.
        let (_, numbers, more) = reader.search(pattern, limit)?;
        // A line left out for lacking `holding` may have let a later match
        // in: when the attempt had more, the answer may lack some.
        truncated |= more;
        for (number, nanos) in places_of(&mut reader, &numbers, holding)? {
            found.push((Place { nanos, replica: replica.clone() }, number));
        }
    }
    found.sort();
    truncated |= found.len() > limit;
    found.truncate(limit);
    let matches = found
        .into_iter()
        .map(|(place, line)| MergedMatch { replica: place.replica, line, time: place.nanos.to_string() })
        .collect();
    Ok((matches, truncated))
}
