//! What an ended attempt means and what happens next: pure rules, tested
//! with tables.

use jobdeck_api::{EndReason, ReplicaPhase};

use super::supervisor::ExitRecord;
use jobdeck_core::failure::{AttemptEnd, FailureClass, FindingKind};

/// How an attempt ended, in the replica's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub phase: ReplicaPhase,
    /// `Completed`, `Error`, `Signaled`, `OOMKilled`, `StartError`, `Lost`,
    /// `NotStarted`, or the reason of the stop that ended it.
    pub reason: EndReason,
    pub message: String,
    /// Counts against the backoff limits.
    pub counts_as_failure: bool,
    /// The user's program is at fault (drives "disable retry on program
    /// error"), as opposed to the infrastructure: the shared classifier's
    /// verdict ([`jobdeck_core::failure::classify`]).
    pub program_error: bool,
}

fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSYS => "SIGSYS",
        _ => return format!("signal {signal}"),
    };
    name.to_string()
}

/// Classifies an ended attempt. `ending` is the reason the run is ending
/// for (a stop, or another replica's failure), if it is; `finding` is the
/// first error in the attempt's log, if one was found.
pub fn classify(record: &ExitRecord, ending: Option<&EndReason>, finding: Option<FindingKind>) -> Verdict {
    let class = |reason: &EndReason| {
        jobdeck_core::failure::classify(
            &AttemptEnd { reason: Some(reason), exit_code: record.exit_code, signal: record.signal },
            finding,
        )
    };
    // Whether the attempt counts against the retry limits is the reason's
    // own rule (`EndReason::counts_against_retries`), the same in every
    // executor.
    let verdict = |phase, reason: EndReason, message: String| Verdict {
        phase,
        counts_as_failure: reason.counts_against_retries(),
        program_error: reason.counts_against_retries() && class(&reason).is_program_error(),
        reason,
        message,
    };
    if record.exit_code == Some(0) && record.start_error.is_none() {
        return verdict(ReplicaPhase::Succeeded, EndReason::Completed, "the command exited with code 0".into());
    }
    if record.not_started {
        return verdict(
            ReplicaPhase::Failed,
            EndReason::NotStarted,
            "the server stopped before this attempt started; it is started again".into(),
        );
    }
    if let Some(reason) = ending.filter(|_| record.stop_requested || !record.lost) {
        let how = match (record.exit_code, record.signal) {
            (_, Some(signal)) => format!("ended by {}", signal_name(signal)),
            (Some(code), None) => format!("exited with code {code}"),
            _ => "ended".into(),
        };
        return verdict(ReplicaPhase::Failed, reason.clone(), format!("stopped ({reason}); the command {how}"));
    }
    if let Some(words) = &record.image_pull_error {
        let message = format!("cannot pull the image: {words}");
        return verdict(ReplicaPhase::Failed, EndReason::ImagePullFailed, message);
    }
    if let Some(words) = &record.config_error {
        return verdict(ReplicaPhase::Failed, EndReason::ConfigError, words.clone());
    }
    if let Some(words) = &record.cannot_run {
        let message = format!("the container's command cannot run: {words}");
        return verdict(ReplicaPhase::Failed, EndReason::ContainerCannotRun, message);
    }
    if let Some(words) = &record.engine_error {
        let message = format!("the container engine could not run the container: {words}");
        return verdict(ReplicaPhase::Failed, EndReason::EngineError, message);
    }
    if let Some(error) = &record.start_error {
        return verdict(ReplicaPhase::Failed, EndReason::StartError, error.clone());
    }
    if record.lost {
        return verdict(
            ReplicaPhase::Failed,
            EndReason::Lost,
            "the replica's supervisor ended without reporting how the command ended".into(),
        );
    }
    if record.oom_killed {
        let victim = match &record.oom_victim {
            Some(victim) => format!("; the kernel killed {victim}"),
            None => String::new(),
        };
        return verdict(
            ReplicaPhase::Failed,
            EndReason::OomKilled,
            format!("the replica used more memory than its shape allows and was killed{victim}"),
        );
    }
    let (reason, message) = match (record.exit_code, record.signal) {
        (_, Some(signal)) => (EndReason::Signaled, format!("the command was ended by {}", signal_name(signal))),
        (Some(code), None) => (EndReason::Error, format!("the command exited with code {code}")),
        (None, None) => (EndReason::Lost, "the command ended without an exit status".into()),
    };
    let class = class(&reason);
    // Say what the log showed when it changes the verdict's meaning (an
    // NCCL failure behind an exit code of 1 is not the program's fault).
    let message = match finding {
        Some(kind) if class != FailureClass::Program => format!("{message} ({})", kind.label()),
        Some(FindingKind::CudaOom) => format!("{message} ({})", FindingKind::CudaOom.label()),
        _ => message,
    };
    verdict(ReplicaPhase::Failed, reason, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(exit_code: Option<i32>, signal: Option<i32>) -> ExitRecord {
        ExitRecord { exit_code, signal, ended_at: 1, ..ExitRecord::default() }
    }

    #[test]
    fn ended_attempts_are_classified() {
        let oom = ExitRecord { oom_killed: true, ..record(None, Some(9)) };
        let start =
            ExitRecord { start_error: Some("cannot start 'nope': No such file".into()), ..record(Some(127), None) };
        let lost = ExitRecord { lost: true, ..record(None, None) };
        let stopped = ExitRecord { stop_requested: true, ..record(None, Some(15)) };
        let not_started = ExitRecord { not_started: true, ..record(None, None) };
        let pull = ExitRecord { image_pull_error: Some("unauthorized".into()), ..record(None, None) };
        let engine = ExitRecord { engine_error: Some("runc: setrlimit".into()), ..record(Some(125), None) };
        let cannot_run = ExitRecord { cannot_run: Some("/nope: not found".into()), ..record(Some(125), None) };
        let config =
            ExitRecord { config_error: Some("'/x' in volume 'v' is a symbolic link".into()), ..record(None, None) };
        // (record, ending, phase, reason, counts, program error)
        let cases: Vec<(ExitRecord, Option<&str>, ReplicaPhase, &str, bool, bool)> = vec![
            (record(Some(0), None), None, ReplicaPhase::Succeeded, "Completed", false, false),
            (record(Some(0), None), Some("Stopped"), ReplicaPhase::Succeeded, "Completed", false, false),
            (record(Some(3), None), None, ReplicaPhase::Failed, "Error", true, true),
            (record(None, Some(libc::SIGSEGV)), None, ReplicaPhase::Failed, "Signaled", true, true),
            (record(None, Some(libc::SIGKILL)), None, ReplicaPhase::Failed, "Signaled", true, false),
            (oom, None, ReplicaPhase::Failed, "OOMKilled", true, false),
            (start, None, ReplicaPhase::Failed, "StartError", true, true),
            (lost.clone(), None, ReplicaPhase::Failed, "Lost", true, false),
            (lost, Some("Stopped"), ReplicaPhase::Failed, "Lost", true, false),
            (stopped.clone(), Some("DeadlineExceeded"), ReplicaPhase::Failed, "DeadlineExceeded", false, false),
            (
                record(Some(1), None),
                Some("BackoffLimitExceeded"),
                ReplicaPhase::Failed,
                "BackoffLimitExceeded",
                false,
                false,
            ),
            (not_started, None, ReplicaPhase::Failed, "NotStarted", false, false),
            (pull.clone(), None, ReplicaPhase::Failed, "ImagePullFailed", true, false),
            (pull, Some("Stopped"), ReplicaPhase::Failed, "Stopped", false, false),
            (engine, None, ReplicaPhase::Failed, "EngineError", true, false),
            (cannot_run, None, ReplicaPhase::Failed, "ContainerCannotRun", true, true),
            (config, None, ReplicaPhase::Failed, "ConfigError", true, true),
        ];
        for (record, ending, phase, reason, counts, program) in cases {
            let v = classify(&record, ending.map(EndReason::parse).as_ref(), None);
            assert_eq!(
                (v.phase, v.reason.as_str(), v.counts_as_failure, v.program_error),
                (phase, reason, counts, program),
                "{record:?} ending {ending:?}"
            );
        }
        assert_eq!(
            classify(&stopped, Some(&EndReason::Stopped), None).message,
            "stopped (Stopped); the command ended by SIGTERM"
        );
    }

    #[test]
    fn the_log_decides_whether_an_exit_is_the_programs_fault() {
        let exit1 = record(Some(1), None);
        // (record, first error in the log, program error, message)
        let cases: Vec<(ExitRecord, Option<FindingKind>, bool, &str)> = vec![
            (exit1.clone(), None, true, "the command exited with code 1"),
            (exit1.clone(), Some(FindingKind::PythonTraceback), true, "the command exited with code 1"),
            (exit1.clone(), Some(FindingKind::CudaOom), true, "the command exited with code 1 (CUDA out of memory)"),
            (exit1.clone(), Some(FindingKind::Nccl), false, "the command exited with code 1 (NCCL error)"),
            (exit1, Some(FindingKind::ImagePull), false, "the command exited with code 1 (Image pull failure)"),
            (record(Some(137), None), None, false, "the command exited with code 137"),
            (
                ExitRecord { oom_killed: true, oom_victim: Some("python3 (pid 42)".into()), ..record(None, Some(9)) },
                None,
                false,
                "the replica used more memory than its shape allows and was killed; the kernel killed python3 (pid 42)",
            ),
        ];
        for (record, finding, program, message) in cases {
            let v = classify(&record, None, finding);
            assert_eq!((v.program_error, v.message.as_str()), (program, message), "{record:?} {finding:?}");
        }
    }
}
