//! What Slurm's words for a task mean to a replica: a pending task's
//! reason as its readiness issue, an ended task's state as its end reason.

use jobdeck_api::{EndReason, ReadinessIssue};

use super::cli::TaskState;
use crate::run_ledger::Ending;

/// A pending task's readiness issue from Slurm's reason.
pub(super) fn pending_issue(reason: &str, retry_at: Option<i64>) -> ReadinessIssue {
    let issue = |reason: &str, message: String| ReadinessIssue { reason: reason.into(), message };
    match reason {
        "BeginTime" if retry_at.is_some() => issue("BackOff", "waiting out the retry back-off (BeginTime)".into()),
        "Resources" => {
            issue("NoCapacity", "waiting in Slurm's queue: no node has the resources free yet (Resources)".into())
        }
        "Priority" => issue("Queueing", "waiting in Slurm's queue behind jobs of higher priority (Priority)".into()),
        "" | "None" => issue("Queueing", "waiting in Slurm's queue".into()),
        other => issue("Queueing", format!("waiting in Slurm's queue ({other})")),
    }
}

/// The replica's end reason and message from an ended task.
pub(super) fn ended_reason(task: &TaskState, ending: Option<&Ending>) -> (EndReason, String) {
    let code = match (task.exit_code, task.signal) {
        (_, Some(signal)) => format!("ended by signal {signal}"),
        (Some(code), None) => format!("exited with code {code}"),
        _ => "ended".into(),
    };
    let said = |what: &str| format!("{what} (Slurm: {} {})", task.state, task.reason);
    match task.state.as_str() {
        "COMPLETED" => (EndReason::Completed, "the command exited with code 0".into()),
        "OUT_OF_MEMORY" => {
            (EndReason::OomKilled, said("the replica used more memory than its shape allows and was killed"))
        }
        "TIMEOUT" | "DEADLINE" => (EndReason::DeadlineExceeded, said("the job ran past its time limit (--time)")),
        "NODE_FAIL" | "BOOT_FAIL" => (EndReason::NodeLost, said("its node failed")),
        "PREEMPTED" => (EndReason::Preempted, said("Slurm preempted it")),
        "CANCELLED" => match ending {
            Some(Ending::Stop(reason)) => ((*reason).into(), format!("stopped ({}); scancel", reason.as_str())),
            Some(Ending::Fail { reason, .. }) => (reason.clone(), format!("cancelled: the run is failing ({reason})")),
            None => (EndReason::Cancelled, said("cancelled in Slurm, not by Jobdeck")),
        },
        _ => match task.signal {
            Some(_) => (EndReason::Signaled, format!("the command {code}")),
            None => (EndReason::Error, format!("the command {code}")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jobdeck_core::executor::StopReason;

    #[test]
    fn slurm_states_become_replica_ends() {
        let task = |state: &str, reason: &str, exit: Option<i32>, signal: Option<i32>| TaskState {
            state: state.into(),
            reason: reason.into(),
            exit_code: exit,
            signal,
            ..TaskState::default()
        };
        let stop = Ending::Stop(StopReason::Stopped);
        // (task, ending, replica reason, counts against the limits)
        let cases = [
            (task("COMPLETED", "None", Some(0), None), None, "Completed", false),
            (task("FAILED", "NonZeroExitCode", Some(3), None), None, "Error", true),
            (task("FAILED", "JobLaunchFailure", Some(0), Some(9)), None, "Signaled", true),
            (task("OUT_OF_MEMORY", "OutOfMemory", Some(0), Some(9)), None, "OOMKilled", true),
            (task("TIMEOUT", "TimeLimit", Some(0), Some(15)), None, "DeadlineExceeded", false),
            (task("NODE_FAIL", "NodeDown", None, None), None, "NodeLost", true),
            (task("CANCELLED", "None", Some(0), Some(15)), Some(&stop), "Stopped", false),
            (task("CANCELLED", "None", Some(0), Some(15)), None, "Cancelled", true),
        ];
        for (task, ending, reason, counted) in cases {
            let (got, _) = ended_reason(&task, ending);
            assert_eq!((got.as_str(), got.counts_against_retries()), (reason, counted), "{task:?}");
        }
        assert_eq!(pending_issue("Resources", None).reason, "NoCapacity");
        assert_eq!(pending_issue("Priority", None).reason, "Queueing");
        assert_eq!(pending_issue("BeginTime", Some(1)).reason, "BackOff");
    }
}
