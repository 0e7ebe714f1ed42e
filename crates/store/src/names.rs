//! The store's edge for the contract's enums: a column holds the wire name,
//! and reading a name the enum does not know is a conversion error of that
//! column, never a silent default.

use jobdeck_api::{EventType, JobState, ReplicaPhase, Visibility};
use rusqlite::types::Type;
use rusqlite::Row;

/// An enum stored by its wire name.
pub(super) trait StoredName: Sized + Copy {
    /// What the column holds, for the error message.
    const WHAT: &'static str;
    fn parse(name: &str) -> Option<Self>;
}

impl StoredName for JobState {
    const WHAT: &'static str = "job state";
    fn parse(name: &str) -> Option<Self> {
        JobState::parse(name)
    }
}

impl StoredName for ReplicaPhase {
    const WHAT: &'static str = "replica phase";
    fn parse(name: &str) -> Option<Self> {
        ReplicaPhase::parse(name)
    }
}

impl StoredName for Visibility {
    const WHAT: &'static str = "visibility";
    fn parse(name: &str) -> Option<Self> {
        Visibility::parse(name)
    }
}

impl StoredName for EventType {
    const WHAT: &'static str = "event type";
    fn parse(name: &str) -> Option<Self> {
        EventType::parse(name)
    }
}

/// Reads column `index` of `row` as a `T`.
pub(super) fn column<T: StoredName>(row: &Row<'_>, index: usize) -> rusqlite::Result<T> {
    let name: String = row.get(index)?;
    T::parse(&name).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(index, Type::Text, format!("no {} '{name}'", T::WHAT).into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_unknown_names_are_errors_naming_the_column() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let read = |sql: &str| -> (rusqlite::Result<JobState>, rusqlite::Result<Visibility>) {
            conn.query_row(sql, [], |r| Ok((column::<JobState>(r, 0), column::<Visibility>(r, 1)))).unwrap()
        };
        let (state, visibility) = read("SELECT 'PendingRetry', 'private'");
        assert_eq!(state.unwrap(), JobState::PendingRetry);
        assert_eq!(visibility.unwrap(), Visibility::Private);
        let (state, visibility) = read("SELECT 'Runing', 'Public'");
        assert!(state.unwrap_err().to_string().contains("no job state 'Runing'"));
        assert!(visibility.unwrap_err().to_string().contains("no visibility 'Public'"));
    }
}
