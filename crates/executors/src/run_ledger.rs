//! What a run's controller keeps, whatever runs its replicas: which
//! completion indexes succeeded, the failures counted against the job's
//! retry limits, the decision after each failure, and how the run is
//! ending. The local and the Slurm executors each drive their replicas
//! their own way (supervisors, `sbatch`) and share this ledger, so a rule
//! such as "a stop wins over a failure already under way" or "a run fails
//! when its failures pass the backoff limit" is written once.

use std::collections::{BTreeMap, BTreeSet};

use jobdeck_api::EndReason;
use jobdeck_store::logs::LogStore;
use jobdeck_store::ReplicaRow;

use jobdeck_core::executor::{RunOutcome, StopReason};
use jobdeck_core::failure::FindingKind;

/// How a run is ending, once it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// The scheduler asked for a stop.
    Stop(StopReason),
    /// The run's failures passed its limits.
    Fail { reason: EndReason, message: String, program_error: bool },
}

impl Ending {
    /// The reason the attempts this ending ends are recorded with.
    pub fn reason(&self) -> EndReason {
        match self {
            Ending::Stop(stop) => EndReason::from(*stop),
            Ending::Fail { reason, .. } => reason.clone(),
        }
    }
}

/// The limits that decide whether a failed attempt is retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryLimits {
    pub backoff_limit: i64,
    pub max_failure_retry: Option<i64>,
    pub disable_retry_on_program_error: bool,
}

/// What to do after a counted failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Start a new attempt of the same completion index.
    Retry,
    /// Fail the run.
    Fail { reason: EndReason, message: String, program_error: bool },
}

/// A failed attempt as the ledger needs it: what it said, and whether the
/// user's program is at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure<'a> {
    pub replica: &'a str,
    pub message: &'a str,
    pub program_error: bool,
}

/// Which limit a run's failures have passed, if any, in the order the
/// limits are judged: a program error with retry on program error disabled,
/// then the backoff limit (all failures), then the retries allowed per unit
/// (`worst_unit`: the failures of the unit that failed most).
fn limit_passed(limits: RetryLimits, failures_total: i64, worst_unit: i64, program_error: bool) -> Option<EndReason> {
    if program_error && limits.disable_retry_on_program_error {
        Some(EndReason::ProgramError)
    } else if failures_total > limits.backoff_limit {
        Some(EndReason::BackoffLimitExceeded)
    } else if limits.max_failure_retry.is_some_and(|per_unit| worst_unit > per_unit) {
        Some(EndReason::MaxFailureRetryExceeded)
    } else {
        None
    }
}

/// Decides after a failure, with the failure already counted in
/// `failures_total` and `failures_of_unit`.
pub fn decide(limits: RetryLimits, failures_total: i64, failures_of_unit: i64, failure: &Failure<'_>) -> Decision {
    let Failure { replica, message, program_error } = *failure;
    let Some(reason) = limit_passed(limits, failures_total, failures_of_unit, program_error) else {
        return Decision::Retry;
    };
    let message = match reason {
        EndReason::ProgramError => format!(
            "replica {replica} failed with a program error ({message}) and retry on program error is disabled"
        ),
        EndReason::BackoffLimitExceeded => format!(
            "{}; the last: replica {replica}: {message}",
            over_backoff_limit(failures_total, limits.backoff_limit)
        ),
        _ => format!(
            "replica {replica} failed {failures_of_unit} times, more than the {} retries allowed per replica: {message}",
            limits.max_failure_retry.unwrap_or(0)
        ),
    };
    Decision::Fail { reason, message, program_error }
}

/// Why a run failed on its backoff limit: "2 attempts failed, more than the
/// backoff limit of 1".
pub fn over_backoff_limit(failures: i64, limit: i64) -> String {
    let attempts = if failures == 1 { "attempt" } else { "attempts" };
    format!("{failures} {attempts} failed, more than the backoff limit of {limit}")
}

/// One run's successes, counted failures and ending.
#[derive(Debug)]
pub struct RunLedger {
    /// How many completion indexes the run runs (all of the job's, or a
    /// rerun's failed ones): it succeeds once that many have.
    to_succeed: i64,
    limits: RetryLimits,
    succeeded: BTreeSet<i64>,
    failures_total: i64,
    /// Counted failures by unit: the completion index, or for a
    /// multi-worker run the allocation its workers fail together in.
    failures_by_unit: BTreeMap<i64, i64>,
    ending: Option<Ending>,
}

impl RunLedger {
    pub fn new(to_succeed: i64, limits: RetryLimits) -> RunLedger {
        RunLedger {
            to_succeed,
            limits,
            succeeded: BTreeSet::new(),
            failures_total: 0,
            failures_by_unit: BTreeMap::new(),
            ending: None,
        }
    }

    /// Records a completion index as succeeded.
    pub fn succeed(&mut self, index: i64) {
        self.succeeded.insert(index);
    }

    pub fn succeeded(&self) -> &BTreeSet<i64> {
        &self.succeeded
    }

    /// Counts a failure read back from the store after a restart, without
    /// deciding anything ([`RunLedger::judge_restored`] does once all are
    /// read).
    pub fn count_restored_failure(&mut self, unit: i64) {
        self.failures_total += 1;
        *self.failures_by_unit.entry(unit).or_default() += 1;
    }

    /// Counts a failure of `unit` against the limits and decides what
    /// follows. A failure while the run is already ending is not counted.
    pub fn fail(&mut self, unit: i64, failure: &Failure<'_>) -> Option<Decision> {
        if self.ending.is_some() {
            return None;
        }
        self.failures_total += 1;
        let of_unit = {
            let count = self.failures_by_unit.entry(unit).or_default();
            *count += 1;
            *count
        };
        Some(decide(self.limits, self.failures_total, of_unit, failure))
    }

    /// The failures counted against `unit` so far (its retry back-off
    /// grows with them).
    pub fn failures_of(&self, unit: i64) -> i64 {
        self.failures_by_unit.get(&unit).copied().unwrap_or(0)
    }

    /// After a restart: the stored failures decide again, so no index
    /// restarts that the limits had already given up on. `program_error`
    /// says whether any stored failure was the program's. Returns whether
    /// the run is now ending.
    pub fn judge_restored(&mut self, program_error: bool) -> bool {
        let worst_unit = self.failures_by_unit.values().copied().max().unwrap_or(0);
        let Some(reason) = limit_passed(self.limits, self.failures_total, worst_unit, program_error) else {
            return false;
        };
        let message = match reason {
            EndReason::ProgramError => {
                "a replica failed with a program error and retry on program error is disabled".to_string()
            }
            EndReason::BackoffLimitExceeded => over_backoff_limit(self.failures_total, self.limits.backoff_limit),
            _ => format!("a replica failed {worst_unit} times, more than the retries allowed per replica"),
        };
        let program_error = program_error && reason == EndReason::ProgramError;
        self.begin_ending(Ending::Fail { reason, message, program_error })
    }

    /// Begins ending the run; returns whether this ending took. A stop wins
    /// over a failure already under way (the scheduler waits for the stop
    /// it asked for); anything else after the first ending is ignored.
    pub fn begin_ending(&mut self, ending: Ending) -> bool {
        match (&self.ending, &ending) {
            (None, _) | (Some(Ending::Fail { .. }), Ending::Stop(_)) => {
                self.ending = Some(ending);
                true
            }
            _ => false,
        }
    }

    pub fn ending(&self) -> Option<&Ending> {
        self.ending.as_ref()
    }

    pub fn is_ending(&self) -> bool {
        self.ending.is_some()
    }

    /// How the run ended, once it has: every index succeeded, or it is
    /// ending and none of its attempts is still alive (`all_done`).
    pub fn outcome(&self, all_done: bool) -> Option<RunOutcome> {
        if !all_done {
            return None;
        }
        match &self.ending {
            None if self.succeeded.len() as i64 >= self.to_succeed => Some(RunOutcome::Succeeded),
            None => None,
            Some(Ending::Stop(_)) => Some(RunOutcome::Stopped),
            Some(Ending::Fail { reason, message, program_error }) => Some(RunOutcome::Failed {
                reason: reason.clone(),
                message: message.clone(),
                program_error: *program_error,
            }),
        }
    }
}

/// The kind of the first error in an ended attempt's log, by the failure
/// analysis's own scanner (its answer is cached for the analysis). A large
/// log takes a moment to scan, so it runs on the blocking pool; a log that
/// cannot be read has no finding (and says so in the server's log).
pub async fn first_error(logs: &LogStore, job_id: &str, index: i64, attempt: i64) -> Option<FindingKind> {
    let logs = logs.clone();
    let job = job_id.to_string();
    let scan = tokio::task::spawn_blocking(move || {
        jobdeck_core::failure::scan::first_error(&logs, &job, index, attempt, true)
    });
    match scan.await {
        Ok(Ok(finding)) => finding.map(|f| f.kind),
        Ok(Err(e)) => {
            tracing::warn!(job = %job_id, index, attempt, error = %e, "cannot scan the log for errors");
            None
        }
        Err(_) => None,
    }
}

/// Whether any of `failures`, a run's failed attempts read back from the
/// store after a restart, was the program's: each attempt's end and the
/// first error of its log (when the job keeps logs), classified as when it
/// ended. What [`RunLedger::judge_restored`] needs.
pub async fn restored_program_error(logs: &LogStore, job_id: &str, keeps_logs: bool, failures: &[&ReplicaRow]) -> bool {
    for row in failures {
        let finding =
            if keeps_logs { first_error(logs, job_id, row.completion_index, row.attempt).await } else { None };
        let end = jobdeck_core::failure::AttemptEnd {
            reason: row.reason.as_ref(),
            exit_code: row.exit_code.map(|c| c as i32),
            signal: row.signal.map(|s| s as i32),
        };
        if jobdeck_core::failure::classify(&end, finding).is_program_error() {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(backoff: i64, per_unit: Option<i64>, disable: bool) -> RetryLimits {
        RetryLimits { backoff_limit: backoff, max_failure_retry: per_unit, disable_retry_on_program_error: disable }
    }

    #[test]
    fn retries_follow_the_limits() {
        let program = Failure { replica: "r-0-0", message: "the command exited with code 1", program_error: true };
        let infra = Failure { replica: "r-0-0", message: "the command was ended by SIGKILL", program_error: false };
        // (limits, total failures, failures of the unit, failure, expected reason or retry)
        let cases: Vec<(RetryLimits, i64, i64, &Failure, Option<EndReason>)> = vec![
            (limits(1, None, false), 1, 1, &program, None),
            (limits(1, None, false), 2, 2, &program, Some(EndReason::BackoffLimitExceeded)),
            (limits(0, None, false), 1, 1, &program, Some(EndReason::BackoffLimitExceeded)),
            (limits(3, None, true), 1, 1, &program, Some(EndReason::ProgramError)),
            (limits(3, None, true), 1, 1, &infra, None),
            (limits(i64::MAX, Some(1), false), 2, 1, &program, None),
            (limits(i64::MAX, Some(1), false), 2, 2, &program, Some(EndReason::MaxFailureRetryExceeded)),
            (limits(i64::MAX, Some(0), false), 1, 1, &infra, Some(EndReason::MaxFailureRetryExceeded)),
        ];
        for (limits, total, of_unit, failure, expected) in cases {
            let got = match decide(limits, total, of_unit, failure) {
                Decision::Retry => None,
                Decision::Fail { reason, .. } => Some(reason),
            };
            assert_eq!(got, expected, "{limits:?} total {total} unit {of_unit} {failure:?}");
        }
    }

    #[test]
    fn the_backoff_limit_message_counts_in_words() {
        assert_eq!(over_backoff_limit(1, 0), "1 attempt failed, more than the backoff limit of 0");
        assert_eq!(over_backoff_limit(4, 3), "4 attempts failed, more than the backoff limit of 3");
    }

    #[test]
    fn a_stop_wins_over_a_failure_and_nothing_else_replaces_an_ending() {
        let mut ledger = RunLedger::new(2, limits(0, None, false));
        let failure =
            Ending::Fail { reason: EndReason::BackoffLimitExceeded, message: "m".into(), program_error: true };
        assert!(ledger.begin_ending(failure.clone()));
        assert!(!ledger.begin_ending(failure));
        assert!(ledger.begin_ending(Ending::Stop(StopReason::Stopped)));
        assert!(!ledger.begin_ending(Ending::Stop(StopReason::Deleted)));
        assert_eq!(ledger.ending().map(Ending::reason), Some(EndReason::Stopped));
        assert_eq!(ledger.outcome(false), None, "not while an attempt is alive");
        assert_eq!(ledger.outcome(true), Some(RunOutcome::Stopped));
    }

    #[test]
    fn a_run_succeeds_when_every_index_did_and_failures_while_ending_are_not_counted() {
        let mut ledger = RunLedger::new(2, limits(0, None, false));
        ledger.succeed(0);
        assert_eq!(ledger.outcome(true), None);
        ledger.succeed(1);
        assert_eq!(ledger.outcome(true), Some(RunOutcome::Succeeded));

        let mut ledger = RunLedger::new(2, limits(0, None, false));
        let failure = Failure { replica: "r-0-0", message: "exit 1", program_error: true };
        assert!(matches!(ledger.fail(0, &failure), Some(Decision::Fail { .. })));
        ledger.begin_ending(Ending::Stop(StopReason::Stopped));
        assert_eq!(ledger.fail(1, &failure), None, "a run already ending counts nothing more");
    }

    #[test]
    fn restored_failures_decide_again() {
        let mut ledger = RunLedger::new(4, limits(1, None, false));
        ledger.count_restored_failure(0);
        assert!(!ledger.judge_restored(false));
        ledger.count_restored_failure(1);
        assert!(ledger.judge_restored(false));
        assert_eq!(ledger.ending().map(Ending::reason), Some(EndReason::BackoffLimitExceeded));

        let mut ledger = RunLedger::new(4, limits(9, None, true));
        ledger.count_restored_failure(0);
        assert!(ledger.judge_restored(true));
        assert!(matches!(
            ledger.ending(),
            Some(Ending::Fail { reason: EndReason::ProgramError, program_error: true, .. })
        ));
    }
}
