//! Tokens: hashed credentials with a kind, an expiry and a revocation time.
//! Whether a token may sign in is decided by `auth`, which reads the whole
//! row; this module only stores and finds them.

use jobdeck_api::{TokenInfo, TokenKind};
use rusqlite::{params, OptionalExtension, Row};

use super::changes::Change;
use super::error::StoreResult;
use super::users::role_column;
use super::{Store, UserRow};

/// A token to store. The secret itself never reaches the store: only its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewToken {
    pub user_id: i64,
    pub hash: String,
    pub kind: TokenKind,
    pub name: String,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    /// The token a session was made from.
    pub origin_id: Option<i64>,
    /// The secret's first and last characters (`jd_1a2b...9f0e`), which
    /// Lepton's `GET /tokens` lists; `None` keeps none.
    pub masked: Option<String>,
}

/// The token a request presented, with its user: what `auth` needs to
/// decide whether it still signs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenOwner {
    pub token_id: i64,
    pub kind: TokenKind,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
    pub origin_id: Option<i64>,
    pub user: UserRow,
}

const INFO_COLUMNS: &str =
    "t.id, u.name, t.kind, t.name, t.created_at, t.expires_at, t.last_used_at, t.revoked_at, t.origin_id, t.masked";

fn token_info(row: &Row<'_>) -> rusqlite::Result<TokenInfo> {
    let kind: String = row.get(2)?;
    Ok(TokenInfo {
        id: row.get(0)?,
        user: row.get(1)?,
        // A kind this release does not know (written by a newer one) is
        // listed as a plain API token rather than hidden.
        kind: TokenKind::parse(&kind).unwrap_or_default(),
        name: row.get(3)?,
        created_at: row.get(4)?,
        expires_at: row.get(5)?,
        last_used_at: row.get(6)?,
        revoked_at: row.get(7)?,
        origin_id: row.get(8)?,
        masked_value: row.get(9)?,
        current: false,
    })
}

impl Store {
    /// Stores a token; returns its id.
    pub async fn insert_token(&self, token: NewToken) -> StoreResult<i64> {
        self.write(move |tx| {
            tx.execute(
                "INSERT INTO tokens (hash, user_id, kind, name, created_at, expires_at, origin_id, masked)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    token.hash,
                    token.user_id,
                    token.kind.as_str(),
                    token.name,
                    token.created_at,
                    token.expires_at,
                    token.origin_id,
                    token.masked
                ],
            )?;
            Ok(tx.last_insert_rowid())
        })
        .await
    }

    /// The token with this hash and its user, revoked or expired ones too;
    /// none for a user an admin removed.
    pub async fn token_by_hash(&self, hash: String) -> StoreResult<Option<TokenOwner>> {
        self.read(move |conn| {
            conn.query_row(
                "SELECT t.id, t.kind, t.expires_at, t.revoked_at, t.origin_id, u.id, u.name, u.role
                 FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.hash = ?1 AND u.removed_at IS NULL",
                params![hash],
                |r| {
                    let kind: String = r.get(1)?;
                    Ok(TokenOwner {
                        token_id: r.get(0)?,
                        kind: TokenKind::parse(&kind).unwrap_or_default(),
                        expires_at: r.get(2)?,
                        revoked_at: r.get(3)?,
                        origin_id: r.get(4)?,
                        user: UserRow { id: r.get(5)?, name: r.get(6)?, role: role_column(r, 7)? },
                    })
                },
            )
            .optional()
        })
        .await
    }

    /// Records that a token was used at `now`.
    pub async fn touch_token(&self, id: i64, now: i64) -> StoreResult<()> {
        self.write(move |tx| {
            tx.execute("UPDATE tokens SET last_used_at = ?2 WHERE id = ?1", params![id, now])?;
            Ok(())
        })
        .await
    }

    /// Every token, or the tokens of one user, oldest first.
    pub async fn list_tokens(&self, user: Option<String>) -> StoreResult<Vec<TokenInfo>> {
        self.read(move |conn| {
            let sql = format!(
                "SELECT {INFO_COLUMNS} FROM tokens t JOIN users u ON u.id = t.user_id
                 WHERE ?1 IS NULL OR u.name = ?1 ORDER BY t.id"
            );
            let mut statement = conn.prepare(&sql)?;
            let rows = statement.query_map(params![user], token_info)?;
            rows.collect()
        })
        .await
    }

    /// One token by id.
    pub async fn token(&self, id: i64) -> StoreResult<Option<TokenInfo>> {
        self.read(move |conn| {
            let sql = format!("SELECT {INFO_COLUMNS} FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.id = ?1");
            conn.query_row(&sql, params![id], token_info).optional()
        })
        .await
    }

    /// Revokes every console session of a user that still signs in, at
    /// `now` ("sign out everywhere"); their other tokens stay. Returns how
    /// many were revoked.
    pub async fn revoke_sessions_of(&self, user_id: i64, now: i64) -> StoreResult<usize> {
        let revoked = self
            .write(move |tx| {
                Ok(tx.execute(
                    "UPDATE tokens SET revoked_at = ?2 WHERE user_id = ?1 AND kind = 'session' AND revoked_at IS NULL",
                    params![user_id, now],
                )?)
            })
            .await?;
        if revoked > 0 {
            self.publish([Change::TokensRevoked]);
        }
        Ok(revoked)
    }

    /// Revokes a token and every token made from it (its console
    /// sessions) at `now`; those revoked before keep their time. Returns how
    /// many were revoked now.
    pub async fn revoke_token(&self, id: i64, now: i64) -> StoreResult<usize> {
        let revoked = self
            .write(move |tx| {
                Ok(tx.execute(
                    "UPDATE tokens SET revoked_at = ?2 WHERE (id = ?1 OR origin_id = ?1) AND revoked_at IS NULL",
                    params![id, now],
                )?)
            })
            .await?;
        if revoked > 0 {
            self.publish([Change::TokensRevoked]);
        }
        Ok(revoked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_token(user_id: i64, hash: &str, kind: TokenKind, origin_id: Option<i64>) -> NewToken {
        NewToken {
            user_id,
            hash: hash.into(),
            kind,
            name: String::new(),
            created_at: 10,
            expires_at: None,
            origin_id,
            masked: None,
        }
    }

    #[tokio::test]
    async fn revoking_a_token_revokes_the_sessions_made_from_it_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("jobdeck.db")).unwrap();
        let (alice, _) = store.ensure_user("alice", jobdeck_api::Role::Member, 1).await.unwrap();
        let api = store.insert_token(new_token(alice.id, "h1", TokenKind::Api, None)).await.unwrap();
        let session = store.insert_token(new_token(alice.id, "h2", TokenKind::Session, Some(api))).await.unwrap();
        let other = store.insert_token(new_token(alice.id, "h3", TokenKind::Api, None)).await.unwrap();

        assert_eq!(store.revoke_token(api, 50).await.unwrap(), 2);
        assert_eq!(store.revoke_token(api, 60).await.unwrap(), 0, "revoking twice changes nothing");
        let listed = store.list_tokens(Some("alice".into())).await.unwrap();
        let revoked = |id: i64| listed.iter().find(|t| t.id == id).unwrap().revoked_at;
        assert_eq!((revoked(api), revoked(session), revoked(other)), (Some(50), Some(50), None));
        let owner = store.token_by_hash("h2".into()).await.unwrap().unwrap();
        assert_eq!((owner.token_id, owner.revoked_at, owner.user.name.as_str()), (session, Some(50), "alice"));
        assert!(store.list_tokens(Some("bob".into())).await.unwrap().is_empty());
    }
}
