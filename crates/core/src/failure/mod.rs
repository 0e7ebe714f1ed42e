//! Why a replica attempt failed: the one classifier every executor and the
//! failure analysis share (design §7).
//!
//! An attempt's class comes from what the executor saw (its end reason, exit
//! code and signal) and, where a log exists, from the first error in it
//! ([`scan`]). The class decides whether the failure is the user's program's
//! — which with `disable_retry_on_program_error` ends the run at once — or
//! the infrastructure's, which is worth retrying:
//!
//! * the local executor calls [`classify`] with the attempt's exit and its
//!   log's first error when an attempt ends;
//! * the Kubernetes executor calls it with the pod's termination state
//!   (Kubernetes' own pod failure policy acts on exit codes alone, so it
//!   gets the exit-code half of the rule: [`NOT_PROGRAM_ERROR_EXIT_CODES`]);
//! * `GET /jobs/{id}/failure-analysis` ([`analysis`]) explains the result.

pub mod analysis;
pub mod of_job;
pub mod scan;

use jobdeck_api::EndReason;
pub use scan::{Finding, FindingKind, Scanner};

/// The error classes of design §7.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureClass {
    /// The program failed on its own: a non-zero exit, a traceback, a crash.
    Program,
    /// The program ran out of GPU memory.
    CudaOom,
    /// The replica ran out of host memory (killed by the kernel).
    Oom,
    /// Collective communication between workers failed (NCCL).
    Nccl,
    /// The container image could not be pulled.
    ImagePull,
    /// The job ran past its active deadline.
    Deadline,
    /// The job waited in the queue past its maximum queued duration.
    QueueTimeout,
    /// Something outside the program ended it: a kill, a lost node or
    /// supervisor, an eviction, a preemption.
    Infra,
    /// The job's configuration cannot work: a command that does not exist, a
    /// container whose command cannot run.
    Config,
    /// The container engine could not create or start the container for
    /// reasons of its own (its runtime, its storage, its daemon).
    Engine,
}

impl FailureClass {
    pub const ALL: [FailureClass; 10] = [
        FailureClass::Program,
        FailureClass::CudaOom,
        FailureClass::Oom,
        FailureClass::Nccl,
        FailureClass::ImagePull,
        FailureClass::Deadline,
        FailureClass::QueueTimeout,
        FailureClass::Infra,
        FailureClass::Config,
        FailureClass::Engine,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::Program => "ERR_PROGRAM",
            FailureClass::CudaOom => "ERR_CUDA_OOM",
            FailureClass::Oom => "ERR_OOM",
            FailureClass::Nccl => "ERR_NCCL",
            FailureClass::ImagePull => "ERR_IMAGE_PULL",
            FailureClass::Deadline => "ERR_DEADLINE",
            FailureClass::QueueTimeout => "ERR_QUEUE_TIMEOUT",
            FailureClass::Infra => "ERR_INFRA",
            FailureClass::Config => "ERR_CONFIG",
            FailureClass::Engine => "ERR_ENGINE",
        }
    }

    /// Whether the failure is the job's own — its code or its definition —
    /// so running the same thing again fails the same way. This is what
    /// "disable retry on program error" acts on. A CUDA out-of-memory error
    /// is the program's (the same batch needs the same memory); a host OOM
    /// kill, an NCCL failure, a lost node or a preemption are not, as
    /// design §4 counts them as infrastructure.
    pub fn is_program_error(self) -> bool {
        matches!(self, FailureClass::Program | FailureClass::CudaOom | FailureClass::Config)
    }
}

/// Exit codes that do not mean the program failed: success, and the codes a
/// process gets when it is killed from outside (128 + SIGKILL, 128 +
/// SIGTERM) — by a stop, an OOM kill or a node going away. Kubernetes' pod
/// failure policy gets this same list.
pub const NOT_PROGRAM_ERROR_EXIT_CODES: [i32; 3] = [0, 137, 143];

/// Signals a program raises against itself when it crashes; an attempt ended
/// by one of them failed because of the program. Every other signal
/// (SIGKILL, SIGTERM, …) came from outside.
pub const CRASH_SIGNALS: [i32; 6] =
    [libc::SIGSEGV, libc::SIGABRT, libc::SIGBUS, libc::SIGFPE, libc::SIGILL, libc::SIGSYS];

/// What an executor knows about how an attempt ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AttemptEnd<'a> {
    /// The replica's end reason.
    pub reason: Option<&'a EndReason>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
}

/// The class of a failed attempt. The executor's end reason is the
/// strongest evidence (the kernel said OOM, the scheduler said deadline);
/// then a specific error in the log (CUDA out of memory, NCCL, a missing
/// command, an image pull); then how the process ended. A generic traceback
/// or crash in the log does not change what the exit status says.
pub fn classify(end: &AttemptEnd<'_>, finding: Option<FindingKind>) -> FailureClass {
    use EndReason::*;
    match end.reason {
        Some(OomKilled) => return FailureClass::Oom,
        Some(DeadlineExceeded) => return FailureClass::Deadline,
        Some(MaxQueuedDurationExceeded) => return FailureClass::QueueTimeout,
        Some(Evicted | Preempted | NodeLost | Lost | Stopped | Deleted) => return FailureClass::Infra,
        Some(ImagePullFailed) => return FailureClass::ImagePull,
        Some(EngineError) => return FailureClass::Engine,
        Some(StartError | ContainerCannotRun | ConfigError | SecretNotFound) => return FailureClass::Config,
        // The log and the exit status say more for these.
        Some(
            Completed
            | Error
            | Signaled
            | NotStarted
            | Cancelled
            | BackoffLimitExceeded
            | ProgramError
            | MaxFailureRetryExceeded
            | ExecutorError
            | Other(_),
        )
        | None => {}
    }
    match finding {
        Some(FindingKind::CudaOom) => return FailureClass::CudaOom,
        Some(FindingKind::Nccl) => return FailureClass::Nccl,
        Some(FindingKind::HostOom) => return FailureClass::Oom,
        Some(FindingKind::CommandNotFound) => return FailureClass::Config,
        Some(FindingKind::ImagePull) => return FailureClass::ImagePull,
        _ => {}
    }
    if is_program_exit(end.exit_code, end.signal) {
        FailureClass::Program
    } else {
        FailureClass::Infra
    }
}

/// Whether a process's end is its own failure: a crash signal, or a
/// non-zero exit code that is not 128 + an outside signal.
pub fn is_program_exit(exit_code: Option<i32>, signal: Option<i32>) -> bool {
    match (exit_code, signal) {
        (_, Some(signal)) => CRASH_SIGNALS.contains(&signal),
        (Some(code), None) => !NOT_PROGRAM_ERROR_EXIT_CODES.contains(&code),
        (None, None) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use FailureClass::*;

    fn end(reason: Option<&'static str>, exit_code: Option<i32>, signal: Option<i32>) -> AttemptEnd<'static> {
        // The table lives for the test; its reasons are leaked to match.
        let reason = reason.map(|word| &*Box::leak(Box::new(EndReason::parse(word))));
        AttemptEnd { reason, exit_code, signal }
    }

    #[test]
    fn attempts_are_classified_by_reason_then_log_then_exit() {
        // (how it ended, the log's first error, class, program error)
        let cases: Vec<(AttemptEnd, Option<FindingKind>, FailureClass, bool)> = vec![
            (end(Some("Error"), Some(1), None), None, Program, true),
            (end(Some("Error"), Some(1), None), Some(FindingKind::PythonTraceback), Program, true),
            (end(Some("Error"), Some(1), None), Some(FindingKind::CudaOom), CudaOom, true),
            (end(Some("Error"), Some(1), None), Some(FindingKind::Nccl), Nccl, false),
            (end(Some("Error"), Some(127), None), Some(FindingKind::CommandNotFound), Config, true),
            (end(Some("Error"), Some(125), None), Some(FindingKind::ImagePull), ImagePull, false),
            (end(Some("Error"), Some(1), None), Some(FindingKind::HostOom), Oom, false),
            (end(Some("Error"), Some(137), None), None, Infra, false),
            (end(Some("Error"), Some(143), None), None, Infra, false),
            (end(Some("Error"), Some(139), None), None, Program, true),
            (end(Some("Signaled"), None, Some(libc::SIGSEGV)), None, Program, true),
            (end(Some("Signaled"), None, Some(libc::SIGKILL)), Some(FindingKind::PythonTraceback), Infra, false),
            (end(Some("OOMKilled"), None, Some(libc::SIGKILL)), Some(FindingKind::Nccl), Oom, false),
            (end(Some("StartError"), Some(127), None), None, Config, true),
            (end(Some("ContainerCannotRun"), Some(128), None), None, Config, true),
            (
                end(Some("DeadlineExceeded"), None, Some(libc::SIGTERM)),
                Some(FindingKind::PythonTraceback),
                Deadline,
                false,
            ),
            (end(Some("Preempted"), None, Some(libc::SIGTERM)), None, Infra, false),
            (end(Some("Evicted"), None, None), None, Infra, false),
            (end(Some("Lost"), None, None), None, Infra, false),
            (end(Some("ImagePullFailed"), None, None), None, ImagePull, false),
            (end(Some("EngineError"), Some(125), None), None, Engine, false),
            (end(None, None, None), None, Infra, false),
        ];
        for (attempt, finding, class, program) in cases {
            let got = classify(&attempt, finding);
            assert_eq!((got, got.is_program_error()), (class, program), "{attempt:?} {finding:?}");
        }
    }

    #[test]
    fn class_names_are_the_designs() {
        let names: Vec<&str> = FailureClass::ALL.iter().map(|c| c.as_str()).collect();
        for name in
            ["ERR_PROGRAM", "ERR_OOM", "ERR_IMAGE_PULL", "ERR_DEADLINE", "ERR_INFRA", "ERR_CONFIG", "ERR_QUEUE_TIMEOUT"]
        {
            assert!(names.contains(&name), "{name}");
        }
    }
}
