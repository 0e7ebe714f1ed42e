//! The scheduler's own errors: what a command or a creation can meet on
//! the way, with its source. The handlers turn them into HTTP answers at
//! their edge (`error.rs`); the scheduler knows nothing of HTTP.

use jobdeck_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    /// No such job (or one the caller may not see; the handlers decide).
    #[error("{0}")]
    NotFound(String),
    /// The job's state refuses the command, or the job cannot be taken up
    /// again; the sentence says why.
    #[error("{0}")]
    Refused(String),
    /// The job's creator's quota refuses it: with a field, it could never
    /// run under the quota (a 422 naming it); without, their queue is full.
    #[error("{message}")]
    OverQuota { field: Option<&'static str>, message: String },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Anything else: a broken invariant, a scheduler that stopped.
    #[error("{0}")]
    Internal(Box<dyn std::error::Error + Send + Sync>),
}

impl SchedulerError {
    /// An internal error keeping `cause` (and its sources) for the log.
    pub fn internal(cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        SchedulerError::Internal(cause.into())
    }
}

pub type SchedulerResult<T> = Result<T, SchedulerError>;
