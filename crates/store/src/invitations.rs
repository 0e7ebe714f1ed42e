//! Invitations: a role an admin offers a teammate, behind a one-time code
//! kept only as its hash.

use jobdeck_api::{InvitationInfo, Role};
use rusqlite::{params, OptionalExtension, Row, Transaction};

use super::error::StoreResult;
use super::users::{identity_user, role_column, user_row};
use super::{NewIdentityUser, Store, UserRow};

/// A new invitation's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewInvitation {
    pub code_hash: String,
    pub role: Role,
    pub note: String,
    /// The admin's user id.
    pub created_by: i64,
    pub created_at: i64,
    pub expires_at: i64,
}

/// Who comes in with an invitation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimant {
    /// A local account under a name the teammate picked.
    Local { name: String },
    /// Whom the identity provider vouched for; a new user is made with the
    /// invitation's role, an existing one is raised to it (never lowered).
    Identity(NewIdentityUser),
}

/// What [`Store::redeem_invitation`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Redemption {
    Admitted(UserRow),
    /// No open invitation has that code: unknown, used, expired or
    /// withdrawn (one answer for all, so a code cannot be probed).
    Unusable,
    /// A local name someone already has; the invitation stays open.
    NameTaken,
}

const SELECT: &str =
    "SELECT i.id, i.role, i.note, c.name, i.created_at, i.expires_at, i.used_at, u.name, i.withdrawn_at
     FROM invitations i LEFT JOIN users c ON c.id = i.created_by LEFT JOIN users u ON u.id = i.used_by";

fn info(row: &Row<'_>, now: i64) -> rusqlite::Result<InvitationInfo> {
    let mut info = InvitationInfo {
        id: row.get(0)?,
        role: role_column(row, 1)?,
        note: row.get(2)?,
        created_by: row.get(3)?,
        created_at: row.get(4)?,
        expires_at: row.get(5)?,
        used_at: row.get(6)?,
        used_by: row.get(7)?,
        withdrawn_at: row.get(8)?,
        ..InvitationInfo::default()
    };
    info.state = info.state_at(now);
    Ok(info)
}

/// The open invitation with `code_hash` at `now`, if any.
fn open_invitation(tx: &rusqlite::Connection, code_hash: &str, now: i64) -> rusqlite::Result<Option<InvitationInfo>> {
    tx.query_row(
        &format!(
            "{SELECT} WHERE i.code_hash = ?1 AND i.used_at IS NULL AND i.withdrawn_at IS NULL AND i.expires_at > ?2"
        ),
        params![code_hash, now],
        |row| info(row, now),
    )
    .optional()
}

/// Makes or finds the user `claimant` is, or says why not.
fn admit(tx: &Transaction<'_>, claimant: Claimant, role: Role, now: i64) -> rusqlite::Result<Option<UserRow>> {
    match claimant {
        Claimant::Local { name } => {
            let made = tx.execute(
                "INSERT INTO users (name, created_at, role) VALUES (?1, ?2, ?3) ON CONFLICT(name) DO NOTHING",
                params![name, now, role.as_str()],
            )?;
            if made == 0 {
                return Ok(None);
            }
            Ok(Some(UserRow { id: tx.last_insert_rowid(), name, role }))
        }
        Claimant::Identity(identity) => {
            let user = identity_user(tx, &NewIdentityUser { role, ..identity })?;
            // An admin's invitation lets a removed user back in.
            tx.execute(
                "UPDATE users SET removed_at = NULL WHERE id = ?1 AND removed_at IS NOT NULL",
                params![user.id],
            )?;
            if user.role >= role {
                return Ok(Some(user));
            }
            tx.execute("UPDATE users SET role = ?2 WHERE id = ?1", params![user.id, role.as_str()])?;
            Ok(Some(UserRow { role, ..user }))
        }
    }
}

impl Store {
    /// Stores a new invitation; returns its id.
    pub async fn create_invitation(&self, new: NewInvitation) -> StoreResult<i64> {
        self.write(move |tx| {
            tx.execute(
                "INSERT INTO invitations (code_hash, role, note, created_by, created_at, expires_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![new.code_hash, new.role.as_str(), new.note, new.created_by, new.created_at, new.expires_at],
            )?;
            Ok(tx.last_insert_rowid())
        })
        .await
    }

    /// The invitation `id` as it stands at `now`.
    pub async fn invitation(&self, id: i64, now: i64) -> StoreResult<Option<InvitationInfo>> {
        self.read(move |conn| {
            conn.query_row(&format!("{SELECT} WHERE i.id = ?1"), params![id], |r| info(r, now)).optional()
        })
        .await
    }

    /// Every invitation, newest first, as it stands at `now`.
    pub async fn list_invitations(&self, now: i64) -> StoreResult<Vec<InvitationInfo>> {
        self.read(move |conn| {
            let mut statement = conn.prepare(&format!("{SELECT} ORDER BY i.id DESC"))?;
            let rows = statement.query_map([], |r| info(r, now))?;
            rows.collect()
        })
        .await
    }

    /// The invitation whose code hashes to `code_hash`, if it is open at
    /// `now`.
    pub async fn open_invitation(&self, code_hash: &str, now: i64) -> StoreResult<Option<InvitationInfo>> {
        let code_hash = code_hash.to_string();
        self.read(move |conn| open_invitation(conn, &code_hash, now)).await
    }

    /// Takes back the invitation `id` if it is still open; returns whether
    /// it was.
    pub async fn withdraw_invitation(&self, id: i64, now: i64) -> StoreResult<bool> {
        self.write(move |tx| {
            let changed = tx.execute(
                "UPDATE invitations SET withdrawn_at = ?2
                 WHERE id = ?1 AND used_at IS NULL AND withdrawn_at IS NULL AND expires_at > ?2",
                params![id, now],
            )?;
            Ok(changed == 1)
        })
        .await
    }

    /// Lets `claimant` in with the invitation whose code hashes to
    /// `code_hash`: in one transaction the invitation is found open, the
    /// user made or found and the invitation marked used, so two uses at
    /// once admit one.
    pub async fn redeem_invitation(&self, code_hash: &str, claimant: Claimant, now: i64) -> StoreResult<Redemption> {
        let code_hash = code_hash.to_string();
        self.write(move |tx| {
            let Some(invitation) = open_invitation(tx, &code_hash, now)? else { return Ok(Redemption::Unusable) };
            let Some(user) = admit(tx, claimant, invitation.role, now)? else { return Ok(Redemption::NameTaken) };
            tx.execute(
                "UPDATE invitations SET used_at = ?2, used_by = ?3 WHERE id = ?1",
                params![invitation.id, now, user.id],
            )?;
            let user = tx.query_row("SELECT id, name, role FROM users WHERE id = ?1", params![user.id], user_row)?;
            Ok(Redemption::Admitted(user))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::database_of_schema;

    fn new(code_hash: &str, role: Role, created_by: i64, expires_at: i64) -> NewInvitation {
        NewInvitation {
            code_hash: code_hash.into(),
            role,
            note: "for bob".into(),
            created_by,
            created_at: 1,
            expires_at,
        }
    }

    fn local(name: &str) -> Claimant {
        Claimant::Local { name: name.into() }
    }

    fn identity(subject: &str, role: Role) -> Claimant {
        Claimant::Identity(NewIdentityUser {
            name: subject.into(),
            issuer: "https://id.example".into(),
            subject: subject.into(),
            email: None,
            role,
            now: 2,
        })
    }

    /// An invitation admits one person once, with its role; a taken name
    /// leaves it open; used, withdrawn and expired ones admit nobody. A
    /// database of schema 9 gains the table and keeps its users.
    #[tokio::test]
    async fn an_invitation_admits_one_person_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jobdeck.db");
        {
            let conn = database_of_schema(&path, 9);
            conn.execute_batch(
                "INSERT INTO users (id, name, created_at, role) VALUES (1, 'root', 1, 'admin'), (2, 'bob', 1, 'member');",
            )
            .unwrap();
        }
        let store = Store::open(&path).unwrap();
        let id = store.create_invitation(new("h1", Role::Viewer, 1, 100)).await.unwrap();
        assert_eq!(store.redeem_invitation("h1", local("bob"), 10).await.unwrap(), Redemption::NameTaken);
        assert_eq!(store.open_invitation("h1", 10).await.unwrap().map(|i| i.id), Some(id), "still open");
        let Redemption::Admitted(vera) = store.redeem_invitation("h1", local("vera"), 11).await.unwrap() else {
            panic!("vera is let in")
        };
        assert_eq!((vera.name.as_str(), vera.role), ("vera", Role::Viewer));
        assert_eq!(store.redeem_invitation("h1", local("eve"), 12).await.unwrap(), Redemption::Unusable);
        assert_eq!(store.user("eve").await.unwrap(), None, "a second use makes nobody");
        let listed = store.invitation(id, 12).await.unwrap().unwrap();
        assert_eq!(listed.state, jobdeck_api::InvitationState::Used);
        assert_eq!((listed.used_by.as_deref(), listed.created_by.as_deref()), (Some("vera"), Some("root")));

        store.create_invitation(new("h2", Role::Member, 1, 100)).await.unwrap();
        assert_eq!(store.redeem_invitation("h2", local("late"), 100).await.unwrap(), Redemption::Unusable, "expired");
        let withdrawn = store.create_invitation(new("h3", Role::Member, 1, 100)).await.unwrap();
        assert!(store.withdraw_invitation(withdrawn, 20).await.unwrap());
        assert!(!store.withdraw_invitation(withdrawn, 21).await.unwrap(), "only once");
        assert_eq!(store.redeem_invitation("h3", local("w"), 22).await.unwrap(), Redemption::Unusable);
        assert_eq!(store.redeem_invitation("nope", local("n"), 22).await.unwrap(), Redemption::Unusable);
        let states: Vec<_> = store.list_invitations(100).await.unwrap().into_iter().map(|i| i.state).collect();
        use jobdeck_api::InvitationState::*;
        assert_eq!(states, vec![Withdrawn, Expired, Used]);
    }

    /// Through the identity provider, an invitation makes the user with its
    /// role, or raises an existing user to it, never lowers one.
    #[tokio::test]
    async fn an_invitation_binds_to_the_identity_and_never_lowers_a_role() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("jobdeck.db")).unwrap();
        let (admin, _) = store.ensure_user("root", Role::Admin, 1).await.unwrap();
        store.create_invitation(new("a", Role::Admin, admin.id, 100)).await.unwrap();
        let Redemption::Admitted(ann) = store.redeem_invitation("a", identity("ann", Role::Viewer), 3).await.unwrap()
        else {
            panic!("ann is let in")
        };
        assert_eq!(ann.role, Role::Admin, "the invitation's role, not the default");
        assert_eq!(store.user_by_identity("https://id.example", "ann").await.unwrap(), Some(ann.clone()));
        store.create_invitation(new("b", Role::Viewer, admin.id, 100)).await.unwrap();
        let Redemption::Admitted(same) = store.redeem_invitation("b", identity("ann", Role::Viewer), 4).await.unwrap()
        else {
            panic!("ann again")
        };
        assert_eq!((same.id, same.role), (ann.id, Role::Admin), "an invitation never lowers a role");
    }
}
