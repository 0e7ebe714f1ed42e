//! Why a replica's attempt, a run or a job ended: one word on the wire
//! (`Replica.status.reason`, `LeptonJobStatus.reason`), one enum everywhere
//! else.
//!
//! The words are Kubernetes' and Lepton's where they have one (`OOMKilled`,
//! `DeadlineExceeded`, `BackoffLimitExceeded`), so Lepton clients read
//! them as they read Lepton's. A word this enum does not know (a cluster's
//! own, such as a container runtime's reason) is kept as
//! [`EndReason::Other`] and counts as a failure: the parser never fails and
//! never loses the word.

use std::fmt;

/// Why something ended. [`EndReason::parse`] and [`EndReason::as_str`] are
/// the one place a reason is a string; everything else matches on this.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum EndReason {
    /// The command exited with code 0.
    Completed,
    /// The command exited with a code other than 0.
    Error,
    /// A signal ended the command.
    Signaled,
    /// The kernel killed the replica for using more memory than its shape
    /// allows.
    OomKilled,
    /// The replica's command could not be started.
    StartError,
    /// The replica's supervisor (or its whole node) went away without
    /// saying how the command ended.
    Lost,
    /// The server stopped before the attempt started; it is started again.
    NotStarted,
    /// The container's image could not be pulled.
    ImagePullFailed,
    /// The job's configuration cannot run here (a volume, a secret).
    ConfigError,
    /// The container's command cannot run (not found, not executable).
    ContainerCannotRun,
    /// The container engine failed to run the container.
    EngineError,
    /// A user stopped the job.
    Stopped,
    /// A user deleted the job.
    Deleted,
    /// A job of higher priority took the resources.
    Preempted,
    /// The job ran past `active_deadline_seconds`.
    DeadlineExceeded,
    /// The job waited in the queue past `max_queued_duration_seconds`.
    MaxQueuedDurationExceeded,
    /// The node the replica ran on failed (Slurm's `NODE_FAIL`).
    NodeLost,
    /// The cluster evicted the replica's pod (node pressure).
    Evicted,
    /// Cancelled by someone other than Jobdeck (`scancel` by hand).
    Cancelled,
    /// The run failed: its replicas failed more often than
    /// `max_failure_retry` allows.
    BackoffLimitExceeded,
    /// The run failed on a program error with
    /// `disable_retry_on_program_error` on.
    ProgramError,
    /// The run failed: one completion index failed more often than
    /// `max_job_failure_retry` allows.
    MaxFailureRetryExceeded,
    /// The job could not start: the executor refused or failed to launch
    /// it.
    ExecutorError,
    /// The job could not start: a secret it names is gone.
    SecretNotFound,
    /// A word from a cluster this enum does not name.
    Other(String),
}

/// Every named reason, for the parser and the tests.
const NAMED: [EndReason; 24] = [
    EndReason::Completed,
    EndReason::Error,
    EndReason::Signaled,
    EndReason::OomKilled,
    EndReason::StartError,
    EndReason::Lost,
    EndReason::NotStarted,
    EndReason::ImagePullFailed,
    EndReason::ConfigError,
    EndReason::ContainerCannotRun,
    EndReason::EngineError,
    EndReason::Stopped,
    EndReason::Deleted,
    EndReason::Preempted,
    EndReason::DeadlineExceeded,
    EndReason::MaxQueuedDurationExceeded,
    EndReason::NodeLost,
    EndReason::Evicted,
    EndReason::Cancelled,
    EndReason::BackoffLimitExceeded,
    EndReason::ProgramError,
    EndReason::MaxFailureRetryExceeded,
    EndReason::ExecutorError,
    EndReason::SecretNotFound,
];

impl EndReason {
    /// The reason's word on the wire and in the store.
    pub fn as_str(&self) -> &str {
        match self {
            EndReason::Completed => "Completed",
            EndReason::Error => "Error",
            EndReason::Signaled => "Signaled",
            EndReason::OomKilled => "OOMKilled",
            EndReason::StartError => "StartError",
            EndReason::Lost => "Lost",
            EndReason::NotStarted => "NotStarted",
            EndReason::ImagePullFailed => "ImagePullFailed",
            EndReason::ConfigError => "ConfigError",
            EndReason::ContainerCannotRun => "ContainerCannotRun",
            EndReason::EngineError => "EngineError",
            EndReason::Stopped => "Stopped",
            EndReason::Deleted => "Deleted",
            EndReason::Preempted => "Preempted",
            EndReason::DeadlineExceeded => "DeadlineExceeded",
            EndReason::MaxQueuedDurationExceeded => "MaxQueuedDurationExceeded",
            EndReason::NodeLost => "NodeLost",
            EndReason::Evicted => "Evicted",
            EndReason::Cancelled => "Cancelled",
            EndReason::BackoffLimitExceeded => "BackoffLimitExceeded",
            EndReason::ProgramError => "ProgramError",
            EndReason::MaxFailureRetryExceeded => "MaxFailureRetryExceeded",
            EndReason::ExecutorError => "ExecutorError",
            EndReason::SecretNotFound => "SecretNotFound",
            EndReason::Other(word) => word,
        }
    }

    /// The reason a word names; a word no variant names is kept as
    /// [`EndReason::Other`].
    pub fn parse(word: &str) -> EndReason {
        NAMED.iter().find(|named| named.as_str() == word).cloned().unwrap_or_else(|| EndReason::Other(word.to_string()))
    }

    /// Whether an attempt that ended for this reason counts against the
    /// job's retry limits (`max_failure_retry`, `max_job_failure_retry`).
    /// Success, a stop by a user or by the scheduler (preemption, a
    /// deadline), an attempt the server never started and a replica ended
    /// because another one failed the run do not; every failure of the
    /// replica or of its node does, a reason from a cluster included.
    pub fn counts_against_retries(&self) -> bool {
        !matches!(
            self,
            EndReason::Completed
                | EndReason::Stopped
                | EndReason::Deleted
                | EndReason::Preempted
                | EndReason::DeadlineExceeded
                | EndReason::MaxQueuedDurationExceeded
                | EndReason::NotStarted
                | EndReason::BackoffLimitExceeded
                | EndReason::ProgramError
                | EndReason::MaxFailureRetryExceeded
        )
    }

    /// Whether an attempt ended for this reason because its run was
    /// stopped or failed on another replica's account: not a failure to
    /// explain on its own.
    pub fn is_collateral(&self) -> bool {
        matches!(
            self,
            EndReason::Stopped
                | EndReason::Deleted
                | EndReason::NotStarted
                | EndReason::BackoffLimitExceeded
                | EndReason::ProgramError
                | EndReason::MaxFailureRetryExceeded
        )
    }

    /// Whether the reason is an event of the node rather than of the
    /// program (design §7's node events).
    pub fn is_node_event(&self) -> bool {
        matches!(
            self,
            EndReason::OomKilled | EndReason::Evicted | EndReason::Preempted | EndReason::NodeLost | EndReason::Lost
        )
    }
}

impl fmt::Display for EndReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for EndReason {
    fn from(word: &str) -> Self {
        EndReason::parse(word)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_reason_reads_back_from_its_word_and_others_keep_theirs() {
        for reason in NAMED {
            assert_eq!(EndReason::parse(reason.as_str()), reason);
            assert!(!matches!(reason, EndReason::Other(_)));
        }
        let words: std::collections::HashSet<&str> = NAMED.iter().map(EndReason::as_str).collect();
        assert_eq!(words.len(), NAMED.len(), "no two reasons share a word");
        assert_eq!(EndReason::parse("CreateContainerError"), EndReason::Other("CreateContainerError".into()));
        assert_eq!(EndReason::parse("CreateContainerError").as_str(), "CreateContainerError");
        assert_eq!(EndReason::OomKilled.to_string(), "OOMKilled");
    }

    /// What counts against the retry limits, one row a reason: the local
    /// and Slurm executors both read this (they once kept an allow-list and
    /// a deny-list that disagreed on image pulls and node failures).
    #[test]
    fn what_counts_against_retries() {
        let rows = [
            ("Completed", false),
            ("Error", true),
            ("Signaled", true),
            ("OOMKilled", true),
            ("StartError", true),
            ("Lost", true),
            ("NotStarted", false),
            ("ImagePullFailed", true),
            ("ConfigError", true),
            ("ContainerCannotRun", true),
            ("EngineError", true),
            ("Stopped", false),
            ("Deleted", false),
            ("Preempted", false),
            ("DeadlineExceeded", false),
            ("MaxQueuedDurationExceeded", false),
            ("NodeLost", true),
            ("Evicted", true),
            ("Cancelled", true),
            ("BackoffLimitExceeded", false),
            ("ProgramError", false),
            ("MaxFailureRetryExceeded", false),
            ("ExecutorError", true),
            ("SecretNotFound", true),
            ("SomethingAClusterSaid", true),
        ];
        assert_eq!(rows.len(), NAMED.len() + 1, "every reason has a row");
        for (word, counts) in rows {
            assert_eq!(EndReason::parse(word).counts_against_retries(), counts, "{word}");
        }
    }
}
