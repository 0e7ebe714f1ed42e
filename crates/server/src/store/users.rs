//! Users and their hashed tokens.

use rusqlite::{params, OptionalExtension};

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

    pub async fn insert_token(&self, user_id: i64, hash: String, now: i64) -> StoreResult<()> {
        self.write(move |tx| {
            tx.execute(
                "INSERT INTO tokens (hash, user_id, created_at) VALUES (?1, ?2, ?3)",
                params![hash, user_id, now],
            )?;
            Ok(())
        })
        .await
    }

    pub async fn user_by_token_hash(&self, hash: String) -> StoreResult<Option<UserRow>> {
        self.read(move |conn| {
            conn.query_row(
                "SELECT u.id, u.name FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.hash = ?1",
                params![hash],
                |r| Ok(UserRow { id: r.get(0)?, name: r.get(1)? }),
            )
            .optional()
        })
        .await
    }
}
