//! Users and their roles (their tokens are in `tokens.rs`).

use jobdeck_api::Role;
use rusqlite::{params, OptionalExtension, Row, Transaction};

use super::error::StoreResult;
use super::{Store, UserRow};

/// A role as stored; a name this release does not know (written by a newer
/// one) reads as the least powerful role, never a stronger one.
pub(crate) fn role_column(row: &Row<'_>, index: usize) -> rusqlite::Result<Role> {
    let name: String = row.get(index)?;
    Ok(Role::parse(&name).unwrap_or(Role::Viewer))
}

pub(crate) fn user_row(row: &Row<'_>) -> rusqlite::Result<UserRow> {
    Ok(UserRow { id: row.get(0)?, name: row.get(1)?, role: role_column(row, 2)? })
}

/// A user an identity provider vouches for, signing in the first time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewIdentityUser {
    /// The name the provider suggests (already cleaned to what a name here
    /// may hold).
    pub name: String,
    pub issuer: String,
    pub subject: String,
    pub email: Option<String>,
    pub role: Role,
    pub now: i64,
}

/// What [`Store::set_user_role`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoleChanged {
    Changed(UserRow),
    NoSuchUser,
    /// Refused: the user is the workspace's only admin.
    LastAdmin,
}

/// The user `identity` names, made with a unique name first if needed
/// (see [`Store::create_identity_user`]).
pub(crate) fn identity_user(tx: &Transaction<'_>, identity: &NewIdentityUser) -> rusqlite::Result<UserRow> {
    let existing = tx
        .query_row(
            "SELECT id, name, role FROM users WHERE issuer = ?1 AND subject = ?2",
            params![identity.issuer, identity.subject],
            user_row,
        )
        .optional()?;
    if let Some(user) = existing {
        return Ok(user);
    }
    let mut name = identity.name.clone();
    let mut n = 1;
    while tx.query_row("SELECT 1 FROM users WHERE name = ?1", params![name], |_| Ok(())).optional()?.is_some() {
        n += 1;
        name = format!("{}-{n}", identity.name);
    }
    tx.execute(
        "INSERT INTO users (name, created_at, role, issuer, subject, email) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![name, identity.now, identity.role.as_str(), identity.issuer, identity.subject, identity.email],
    )?;
    Ok(UserRow { id: tx.last_insert_rowid(), name, role: identity.role })
}

/// A user as an admin's listing shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserSummary {
    pub name: String,
    pub role: Role,
    pub created_at: i64,
    /// Tokens and sessions that still sign in at the time asked.
    pub live_tokens: i64,
    /// The latest use of any of the user's tokens (to within a minute).
    pub last_seen_at: Option<i64>,
}

impl Store {
    /// Returns the user named `name`, creating it with `role` first if
    /// needed (an existing user keeps its role; a removed one is back: only
    /// `jobdeck token create`, run on the server, names a user this way);
    /// the flag says whether it was created.
    pub async fn ensure_user(&self, name: &str, role: Role, now: i64) -> StoreResult<(UserRow, bool)> {
        let name = name.to_string();
        self.write(move |tx| {
            let created = tx.execute(
                "INSERT INTO users (name, created_at, role) VALUES (?1, ?2, ?3) ON CONFLICT(name) DO NOTHING",
                params![name, now, role.as_str()],
            )? == 1;
            tx.execute("UPDATE users SET removed_at = NULL WHERE name = ?1 AND removed_at IS NOT NULL", params![name])?;
            let user = tx.query_row("SELECT id, name, role FROM users WHERE name = ?1", params![name], user_row)?;
            Ok((user, created))
        })
        .await
    }

    /// Gives the user named `name` the role `role`, from their next request
    /// on. The workspace's last admin keeps the role (checked in the same
    /// transaction, so two admins demoting each other cannot leave none).
    pub async fn set_user_role(&self, name: &str, role: Role) -> StoreResult<RoleChanged> {
        let name = name.to_string();
        self.write(move |tx| {
            let Some(user) = tx
                .query_row(
                    "SELECT id, name, role FROM users WHERE name = ?1 AND removed_at IS NULL",
                    params![name],
                    user_row,
                )
                .optional()?
            else {
                return Ok(RoleChanged::NoSuchUser);
            };
            if user.role == Role::Admin && role != Role::Admin {
                let admins: i64 =
                    tx.query_row("SELECT COUNT(*) FROM users WHERE role = 'admin' AND removed_at IS NULL", [], |r| {
                        r.get(0)
                    })?;
                if admins <= 1 {
                    return Ok(RoleChanged::LastAdmin);
                }
            }
            tx.execute("UPDATE users SET role = ?2 WHERE id = ?1", params![user.id, role.as_str()])?;
            Ok(RoleChanged::Changed(UserRow { role, ..user }))
        })
        .await
    }

    /// The user the identity provider `issuer` knows as `subject`, if they
    /// have signed in before.
    pub async fn user_by_identity(&self, issuer: &str, subject: &str) -> StoreResult<Option<UserRow>> {
        let (issuer, subject) = (issuer.to_string(), subject.to_string());
        self.read(move |conn| {
            conn.query_row(
                "SELECT id, name, role FROM users WHERE issuer = ?1 AND subject = ?2",
                params![issuer, subject],
                user_row,
            )
            .optional()
        })
        .await
    }

    /// Makes the user `issuer` knows as `subject`, named `name` or, when
    /// another user has that name (a local user, or someone else of the
    /// provider's), `name-2`, `name-3`, …; or returns them if they exist
    /// already (two first sign-ins at once).
    pub async fn create_identity_user(&self, identity: NewIdentityUser) -> StoreResult<UserRow> {
        self.write(move |tx| Ok(identity_user(tx, &identity)?)).await
    }

    /// The user named `name`, if there is one (and was not removed).
    pub async fn user(&self, name: &str) -> StoreResult<Option<UserRow>> {
        let name = name.to_string();
        self.read(move |conn| {
            conn.query_row(
                "SELECT id, name, role FROM users WHERE name = ?1 AND removed_at IS NULL",
                params![name],
                user_row,
            )
            .optional()
        })
        .await
    }

    /// The address mail for `name` goes to: the one their sign-in gave, or
    /// an admin set; `None` without one (or without such a user).
    pub async fn user_email(&self, name: &str) -> StoreResult<Option<String>> {
        let name = name.to_string();
        self.read(move |conn| {
            let email: Option<Option<String>> = conn
                .query_row("SELECT email FROM users WHERE name = ?1 AND removed_at IS NULL", params![name], |r| {
                    r.get(0)
                })
                .optional()?;
            Ok(email.flatten().filter(|e| !e.is_empty()))
        })
        .await
    }

    /// Sets (or, with `None`, clears) `name`'s address; false when there is
    /// no such user.
    pub async fn set_user_email(&self, name: &str, email: Option<String>) -> StoreResult<bool> {
        let name = name.to_string();
        self.write(move |tx| {
            Ok(tx
                .execute("UPDATE users SET email = ?2 WHERE name = ?1 AND removed_at IS NULL", params![name, email])?
                == 1)
        })
        .await
    }

    /// Every user by name (but those removed), with what an admin needs to
    /// know of each at `now`.
    pub async fn list_users(&self, now: i64) -> StoreResult<Vec<UserSummary>> {
        self.read(move |conn| {
            let mut statement = conn.prepare(
                "SELECT u.name, u.role, u.created_at,
                    COUNT(t.id) FILTER (WHERE t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > ?1)),
                    MAX(t.last_used_at)
                 FROM users u LEFT JOIN tokens t ON t.user_id = u.id
                 WHERE u.removed_at IS NULL
                 GROUP BY u.id ORDER BY u.name",
            )?;
            let rows = statement.query_map(params![now], |r| {
                Ok(UserSummary {
                    name: r.get(0)?,
                    role: role_column(r, 1)?,
                    created_at: r.get(2)?,
                    live_tokens: r.get(3)?,
                    last_seen_at: r.get(4)?,
                })
            })?;
            rows.collect()
        })
        .await
    }
}
