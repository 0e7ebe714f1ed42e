//! A rerun of a job's failed indexes: which completion indexes it runs.
//!
//! A failed job of many indexes can be run again for only the indexes that
//! did not succeed (`POST /jobs/{id}/rerun?only=failed`): a new job with the
//! same spec and `completion_indexes`, each replica keeping its original
//! `JOB_COMPLETION_INDEX`. This is the one rule for which indexes those are,
//! shared by the job's page (which offers the rerun) and the rerun itself.

use jobdeck_api::{JobSpec, JobState};

/// Why a job has no failed indexes to rerun.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoRerun {
    #[error("the job is {0}; only a failed or stopped job's indexes can be rerun")]
    NotEnded(JobState),
    #[error("a distributed job's {0} workers run together; start it again to rerun them all")]
    Distributed(i64),
    #[error("every index of the job succeeded")]
    AllSucceeded,
}

/// The completion indexes a rerun of `spec`'s failed indexes runs: those of
/// the job's indexes that did not succeed in its last run (`succeeded`
/// holds the ones that did, `Store::succeeded_indexes`): failed, stopped,
/// or never started. A job-level retry runs every index again, so successes
/// of earlier runs do not count.
pub fn failed_indexes(spec: &JobSpec, state: JobState, succeeded: &[i64]) -> Result<Vec<i64>, NoRerun> {
    if !matches!(state, JobState::Failed | JobState::Stopped) {
        return Err(NoRerun::NotEnded(state));
    }
    let workers = spec.workers();
    if workers > 1 {
        return Err(NoRerun::Distributed(workers));
    }
    let failed: Vec<i64> = spec.completion_indexes().into_iter().filter(|i| !succeeded.contains(i)).collect();
    if failed.is_empty() {
        return Err(NoRerun::AllSucceeded);
    }
    Ok(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_indexes_that_did_not_succeed_are_rerun() {
        let spec = JobSpec { completions: Some(5), ..JobSpec::default() };
        assert_eq!(failed_indexes(&spec, JobState::Failed, &[0, 3]), Ok(vec![1, 2, 4]));
        assert_eq!(failed_indexes(&spec, JobState::Stopped, &[0, 3]), Ok(vec![1, 2, 4]));
    }

    #[test]
    fn a_rerun_of_a_rerun_runs_only_what_failed_again() {
        let spec = JobSpec { completions: Some(64), completion_indexes: Some(vec![9, 3, 40]), ..JobSpec::default() };
        assert_eq!(failed_indexes(&spec, JobState::Failed, &[3]), Ok(vec![9, 40]));
    }

    #[test]
    fn nothing_is_rerun_of_a_running_distributed_or_successful_job() {
        let spec = JobSpec { completions: Some(2), ..JobSpec::default() };
        for state in [JobState::Running, JobState::Queueing, JobState::Completed] {
            assert_eq!(failed_indexes(&spec, state, &[]), Err(NoRerun::NotEnded(state)));
        }
        let distributed = JobSpec { workers: Some(4), ..JobSpec::default() };
        assert_eq!(failed_indexes(&distributed, JobState::Failed, &[]), Err(NoRerun::Distributed(4)));
        assert_eq!(failed_indexes(&spec, JobState::Stopped, &[0, 1]), Err(NoRerun::AllSucceeded));
    }
}
