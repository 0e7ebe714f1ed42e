//! Removing a user (offboarding): what it would touch, said first, and the
//! removal itself in one transaction. Stopping their running jobs is the
//! scheduler's (it is the only writer of job state); the server asks it
//! before it calls [`Store::remove_user`].

use jobdeck_api::JobState;
use rusqlite::{params, OptionalExtension};
use serde_json::Value;

use super::changes::Change;
use super::error::StoreResult;
use super::{Store, ACTIVE_STATES};

/// One job, as a removal names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedJob {
    pub id: String,
    pub name: String,
    pub created_by: String,
    pub state: JobState,
}

/// A job of someone else whose environment reads one of the user's public
/// secrets: it would not start again once the secret is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretUse {
    pub secret: String,
    pub job: NamedJob,
}

/// What removing a user touches.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RemovalPreview {
    /// Their jobs that still hold or wait for resources.
    pub active_jobs: Vec<NamedJob>,
    pub secrets: Vec<String>,
    pub image_pull_secrets: Vec<String>,
    pub secret_uses: Vec<SecretUse>,
}

/// What [`Store::remove_user`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removed {
    pub revoked_tokens: usize,
    pub deleted_secrets: usize,
    pub deleted_image_pull_secrets: usize,
}

fn names(conn: &rusqlite::Connection, sql: &str, user: &str) -> rusqlite::Result<Vec<String>> {
    let mut statement = conn.prepare(sql)?;
    let rows = statement.query_map(params![user], |r| r.get(0))?;
    rows.collect()
}

/// The secrets of `owner` that the environment of `spec` (a stored job
/// spec, as JSON) reads.
fn secrets_read(spec: &Value, owner: &str) -> Vec<String> {
    let envs = spec.get("envs").and_then(Value::as_array).into_iter().flatten();
    envs.filter_map(|env| env.get("value_from"))
        .filter(|from| from.get("secret_owner").and_then(Value::as_str) == Some(owner))
        .filter_map(|from| from.get("secret_name_ref").and_then(Value::as_str).map(str::to_string))
        .collect()
}

impl Store {
    /// What removing the user named `name` would touch; `None`: no such
    /// user (or one removed already).
    pub async fn removal_preview(&self, name: &str) -> StoreResult<Option<RemovalPreview>> {
        let name = name.to_string();
        self.read(move |conn| {
            let exists = conn
                .query_row("SELECT 1 FROM users WHERE name = ?1 AND removed_at IS NULL", params![name], |_| Ok(()))
                .optional()?;
            if exists.is_none() {
                return Ok(None);
            }
            let read_job = |r: &rusqlite::Row<'_>| -> rusqlite::Result<(NamedJob, String)> {
                let state: String = r.get(3)?;
                let job = NamedJob {
                    id: r.get(0)?,
                    name: r.get(1)?,
                    created_by: r.get(2)?,
                    state: JobState::parse(&state).unwrap_or_default(),
                };
                Ok((job, r.get(4)?))
            };
            let mut statement = conn.prepare(
                "SELECT id, name, created_by, state, spec FROM jobs WHERE created_by = ?1 ORDER BY created_at",
            )?;
            let own: Vec<(NamedJob, String)> =
                statement.query_map(params![name], read_job)?.collect::<Result<_, _>>()?;
            let active_jobs =
                own.into_iter().map(|(job, _)| job).filter(|job| ACTIVE_STATES.contains(&job.state)).collect();
            // Only a spec that names the owner can pin one of their
            // secrets; each candidate is then read as JSON.
            let mut statement = conn.prepare(
                "SELECT id, name, created_by, state, spec FROM jobs
                 WHERE created_by != ?1 AND instr(spec, 'secret_owner') > 0 ORDER BY created_at",
            )?;
            let others: Vec<(NamedJob, String)> =
                statement.query_map(params![name], read_job)?.collect::<Result<_, _>>()?;
            let mut secret_uses = Vec::new();
            for (job, spec) in others {
                let spec: Value = serde_json::from_str(&spec).unwrap_or(Value::Null);
                for secret in secrets_read(&spec, &name) {
                    secret_uses.push(SecretUse { secret, job: job.clone() });
                }
            }
            Ok(Some(RemovalPreview {
                active_jobs,
                secrets: names(conn, "SELECT name FROM secrets WHERE owner = ?1 ORDER BY name", &name)?,
                image_pull_secrets: names(
                    conn,
                    "SELECT name FROM image_pull_secrets WHERE owner = ?1 ORDER BY name",
                    &name,
                )?,
                secret_uses,
            }))
        })
        .await
    }

    /// Removes the user named `name` at `now`, in one transaction: every
    /// token and session of theirs is revoked, their secrets and pull
    /// secrets are deleted, and the user is marked removed (the row and
    /// name stay). `None`: no such user, or one removed already.
    pub async fn remove_user(&self, name: &str, now: i64) -> StoreResult<Option<Removed>> {
        let name = name.to_string();
        let removed = self
            .write(move |tx| {
                let Some(id) = tx
                    .query_row("SELECT id FROM users WHERE name = ?1 AND removed_at IS NULL", params![name], |r| {
                        r.get::<_, i64>(0)
                    })
                    .optional()?
                else {
                    return Ok(None);
                };
                tx.execute("UPDATE users SET removed_at = ?2 WHERE id = ?1", params![id, now])?;
                let revoked_tokens = tx.execute(
                    "UPDATE tokens SET revoked_at = ?2 WHERE user_id = ?1 AND revoked_at IS NULL",
                    params![id, now],
                )?;
                let deleted_secrets = tx.execute("DELETE FROM secrets WHERE owner = ?1", params![name])?;
                tx.execute("DELETE FROM templates WHERE owner = ?1", params![name])?;
                // Their rules and endpoints go too; the deliveries and rules
                // of an endpoint go with it.
                tx.execute(
                    "DELETE FROM notification_conditions_met
                     WHERE rule_id IN (SELECT id FROM notifications WHERE owner = ?1)",
                    params![name],
                )?;
                tx.execute("DELETE FROM notifications WHERE owner = ?1", params![name])?;
                tx.execute(
                    "DELETE FROM webhook_deliveries WHERE webhook_id IN (SELECT id FROM webhooks WHERE owner = ?1)",
                    params![name],
                )?;
                tx.execute("DELETE FROM webhooks WHERE owner = ?1", params![name])?;
                let deleted_image_pull_secrets =
                    tx.execute("DELETE FROM image_pull_secrets WHERE owner = ?1", params![name])?;
                Ok(Some(Removed { revoked_tokens, deleted_secrets, deleted_image_pull_secrets }))
            })
            .await?;
        if removed.as_ref().is_some_and(|r| r.revoked_tokens > 0) {
            self.publish([Change::TokensRevoked]);
        }
        Ok(removed)
    }

    /// The jobs of `owner` (removed or not) that hold or wait for
    /// resources, oldest first.
    pub async fn active_jobs_of(&self, owner: &str) -> StoreResult<Vec<NamedJob>> {
        let owner = owner.to_string();
        self.read(move |conn| {
            let mut statement =
                conn.prepare("SELECT id, name, created_by, state FROM jobs WHERE created_by = ?1 ORDER BY created_at")?;
            let jobs = statement.query_map(params![owner], |r| {
                let state: String = r.get(3)?;
                Ok(NamedJob {
                    id: r.get(0)?,
                    name: r.get(1)?,
                    created_by: r.get(2)?,
                    state: JobState::parse(&state).unwrap_or_default(),
                })
            })?;
            let jobs: Vec<NamedJob> = jobs.collect::<Result<_, _>>()?;
            Ok(jobs.into_iter().filter(|job| ACTIVE_STATES.contains(&job.state)).collect())
        })
        .await
    }

    /// Whether the identity provider's `issuer` and `subject` are a user an
    /// admin removed.
    pub async fn identity_removed(&self, issuer: &str, subject: &str) -> StoreResult<bool> {
        let (issuer, subject) = (issuer.to_string(), subject.to_string());
        self.read(move |conn| {
            Ok(conn
                .query_row(
                    "SELECT 1 FROM users WHERE issuer = ?1 AND subject = ?2 AND removed_at IS NOT NULL",
                    params![issuer, subject],
                    |_| Ok(()),
                )
                .optional()?
                .is_some())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{database_of_schema, job_row};
    use crate::SecretRow;
    use jobdeck_api::{EnvValue, EnvVar, Role, Visibility};

    fn reading(owner: &str, secret: &str) -> EnvVar {
        let from = EnvValue { secret_name_ref: Some(secret.into()), secret_owner: Some(owner.into()) };
        EnvVar { name: secret.into(), value: None, value_from: Some(from) }
    }

    /// A database of schema 10 gains the column. What removing bob touches
    /// is said first (his running job, his secrets, and ann's job reading
    /// his public secret, not the one reading her own of the same name);
    /// then his tokens stop, his secrets go, he is listed no more, his name
    /// stays taken, and only `ensure_user` (the server's command line)
    /// brings him back.
    #[tokio::test]
    async fn removing_a_user_says_what_it_touches_then_revokes_and_deletes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jobdeck.db");
        drop(database_of_schema(&path, 10));
        let store = Store::open(&path).unwrap();
        let (bob, _) = store.ensure_user("bob", Role::Member, 1).await.unwrap();
        store.ensure_user("ann", Role::Member, 1).await.unwrap();
        let secret = |owner: &str, name: &str, visibility: Visibility| SecretRow {
            owner: owner.into(),
            name: name.into(),
            value: "v".into(),
            visibility,
            tags: vec![],
            created_at: 1,
            updated_at: 1,
        };
        store
            .put_secrets(vec![secret("bob", "HF", Visibility::Public), secret("bob", "MINE", Visibility::Private)])
            .await
            .unwrap();
        store.put_secrets(vec![secret("ann", "MINE", Visibility::Private)]).await.unwrap();
        store.insert_job(job_row("train-1", "bob", "public", 1, "Running"), vec![]).await.unwrap();
        store.insert_job(job_row("old-1", "bob", "public", 2, "Completed"), vec![]).await.unwrap();
        let mut uses = job_row("eval-1", "ann", "public", 3, "Queueing");
        uses.spec.envs = Some(vec![reading("bob", "HF"), reading("ann", "MINE")]);
        store.insert_job(uses, vec![]).await.unwrap();
        let token = crate::NewToken {
            user_id: bob.id,
            hash: "h".into(),
            kind: jobdeck_api::TokenKind::Api,
            name: String::new(),
            created_at: 1,
            expires_at: None,
            origin_id: None,
            masked: None,
        };
        store.insert_token(token).await.unwrap();

        let preview = store.removal_preview("bob").await.unwrap().unwrap();
        assert_eq!(preview.active_jobs.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(), ["train-1"]);
        assert_eq!(preview.secrets, ["HF", "MINE"]);
        assert_eq!(preview.secret_uses.len(), 1, "{:?}", preview.secret_uses);
        assert_eq!((preview.secret_uses[0].secret.as_str(), preview.secret_uses[0].job.id.as_str()), ("HF", "eval-1"));
        assert_eq!(store.removal_preview("nobody").await.unwrap(), None);

        let removed = store.remove_user("bob", 10).await.unwrap().unwrap();
        assert_eq!((removed.revoked_tokens, removed.deleted_secrets), (1, 2));
        assert!(store.token_by_hash("h".into()).await.unwrap().is_none(), "his tokens sign in no more");
        assert!(store.resolve_secret("ann".into(), "HF".into(), Some("bob".into())).await.unwrap().is_none());
        assert!(store.resolve_secret("ann".into(), "MINE".into(), Some("ann".into())).await.unwrap().is_some());
        let listed: Vec<String> = store.list_users(10).await.unwrap().into_iter().map(|u| u.name).collect();
        assert_eq!(listed, ["ann"]);
        assert_eq!(store.user("bob").await.unwrap(), None);
        assert_eq!(store.remove_user("bob", 11).await.unwrap(), None, "once");
        assert_eq!(store.removal_preview("bob").await.unwrap(), None);
        let (back, created) = store.ensure_user("bob", Role::Viewer, 12).await.unwrap();
        assert_eq!((back.id, created), (bob.id, false), "the same user, back");
        assert!(store.user("bob").await.unwrap().is_some());
    }
}
