//! The store's own errors. The store knows nothing of HTTP: the handlers'
//! error type converts from this one at their edge (`error.rs`).

use std::path::PathBuf;

/// What can go wrong reading or writing the database.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The data directory's disk is full: the transaction was rolled back
    /// and nothing of it is stored.
    #[error("the data directory's disk is full")]
    DiskFull(#[source] rusqlite::Error),
    /// A new job's id is taken (ids carry a random suffix, so this is rare).
    #[error("a job with id '{0}' already exists")]
    DuplicateJob(String),
    #[error("cannot open the database {}", path.display())]
    Open { path: PathBuf, source: rusqlite::Error },
    #[error("cannot migrate the database {}", path.display())]
    Migrate { path: PathBuf, source: rusqlite::Error },
    #[error("a database statement failed")]
    Sqlite(#[source] rusqlite::Error),
    /// The blocking task that ran the statement panicked or was cancelled.
    #[error("a database task did not finish")]
    Task(#[from] tokio::task::JoinError),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DiskFull) => StoreError::DiskFull(e),
            _ => StoreError::Sqlite(e),
        }
    }
}

pub type StoreResult<T> = Result<T, StoreError>;
