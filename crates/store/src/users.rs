//! Users (their tokens are in `tokens.rs`).

use rusqlite::params;

use super::error::StoreResult;
use super::{Store, UserRow};

impl Store {
    /// Returns the user named `name`, creating it first if needed; the flag
    /// says whether it was created.
    pub async fn ensure_user(&self, name: &str, now: i64) -> StoreResult<(UserRow, bool)> {
        let name = name.to_string();
        self.write(move |tx| {
            let created = tx.execute(
                "INSERT INTO users (name, created_at) VALUES (?1, ?2) ON CONFLICT(name) DO NOTHING",
                params![name, now],
            )? == 1;
            let user = tx.query_row("SELECT id, name FROM users WHERE name = ?1", params![name], |r| {
                Ok(UserRow { id: r.get(0)?, name: r.get(1)? })
            })?;
            Ok((user, created))
        })
        .await
    }
}
