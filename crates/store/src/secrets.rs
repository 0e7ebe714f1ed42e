//! Secrets. Names are unique per owner, and a public name belongs to one
//! owner; a job's reference is pinned to an owner when it is created
//! (`secrets::pin_secret_owners`).

use rusqlite::{params, OptionalExtension};

use super::error::StoreResult;
use super::names::column;
use super::sealing::{open_value, row_of, seal_value};
use super::{SecretRow, Store};

/// The associated data a secret's value is sealed with.
fn sealed_row(owner: &str, name: &str) -> String {
    row_of("secrets", owner, name)
}

/// A listed secret: everything but its value, which a listing never opens
/// (`resolve_secret` opens the one a job uses), so listing, counting and
/// validating jobs cost no decryption.
fn secret_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SecretRow> {
    let tags: String = r.get(4)?;
    let (owner, name): (String, String) = (r.get(0)?, r.get(1)?);
    let value = String::new();
    Ok(SecretRow {
        owner,
        name,
        value,
        visibility: column(r, 3)?,
        tags: serde_json::from_str(&tags).unwrap_or_default(),
        created_at: r.get(5)?,
        updated_at: r.get(6)?,
    })
}

impl Store {
    /// Creates or replaces the caller's secrets, all or none. A public one
    /// whose name another owner's public secret already has is not written:
    /// nothing is, and that secret is returned.
    pub async fn put_secrets(&self, rows: Vec<SecretRow>) -> StoreResult<Option<TakenName>> {
        let keys = self.keys();
        self.write(move |tx| {
            for row in rows.iter().filter(|r| r.visibility == jobdeck_api::Visibility::Public) {
                let taken: Option<String> = tx
                    .query_row(
                        "SELECT owner FROM secrets WHERE name = ?1 AND visibility = 'public' AND owner != ?2
                         ORDER BY created_at LIMIT 1",
                        params![row.name, row.owner],
                        |r| r.get(0),
                    )
                    .optional()?;
                if let Some(owner) = taken {
                    return Ok(Some(TakenName { name: row.name.clone(), owner }));
                }
            }
            for row in &rows {
                let tags = serde_json::to_string(&row.tags).unwrap_or_else(|_| "[]".into());
                let value = seal_value(&keys, &row.value, &sealed_row(&row.owner, &row.name))?;
                tx.execute(
                    "INSERT INTO secrets (owner, name, value, visibility, tags, created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)
                     ON CONFLICT(owner, name) DO UPDATE SET value = excluded.value,
                        visibility = excluded.visibility, tags = excluded.tags, updated_at = excluded.updated_at",
                    params![row.owner, row.name, value, row.visibility.as_str(), tags, row.updated_at],
                )?;
            }
            Ok(None)
        })
        .await
    }

    /// The secrets `viewer` may see (their own and public ones), by name,
    /// without their values (`value` is empty).
    pub async fn secrets_visible_to(&self, viewer: String) -> StoreResult<Vec<SecretRow>> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT owner, name, '', visibility, tags, created_at, updated_at FROM secrets
                 WHERE owner = ?1 OR visibility = 'public' ORDER BY name, owner",
            )?;
            let rows = stmt.query_map(params![viewer], secret_row)?;
            rows.collect()
        })
        .await
    }

    /// Deletes the caller's own secret; false when they have none by that name.
    pub async fn delete_secret(&self, owner: String, name: String) -> StoreResult<bool> {
        self.write(move |tx| {
            Ok(tx.execute("DELETE FROM secrets WHERE owner = ?1 AND name = ?2", params![owner, name])? > 0)
        })
        .await
    }

    /// The value a reference to `name` in a job of `owner` resolves to: the
    /// secret of `pinned` (the owner the job was created with) while `owner`
    /// may still read it. A job stored before references were pinned reads
    /// the owner's own secret, else the oldest public one: the one that
    /// existed when such a job could have been made, never one made since.
    pub async fn resolve_secret(
        &self,
        owner: String,
        name: String,
        pinned: Option<String>,
    ) -> StoreResult<Option<String>> {
        let keys = self.keys();
        self.read(move |conn| {
            conn.query_row(
                "SELECT value, owner FROM secrets WHERE name = ?2 AND (owner = ?1 OR visibility = 'public')
                   AND (?3 IS NULL OR owner = ?3)
                 ORDER BY owner = ?1 DESC, created_at ASC LIMIT 1",
                params![owner, name, pinned],
                |r| {
                    let found: String = r.get(1)?;
                    open_value(&keys, r.get(0)?, &sealed_row(&found, &name), 0)
                },
            )
            .optional()
        })
        .await
    }

    /// Seals every stored secret value not sealed with the current key yet:
    /// those written before values were sealed, and those sealed with a key
    /// being rotated out. Returns how many were sealed anew.
    pub async fn seal_stored_secrets(&self) -> StoreResult<usize> {
        let Some(keys) = self.keys() else { return Ok(0) };
        self.write(move |tx| {
            let mut sealed = 0;
            for (table, column) in [("secrets", "value"), ("image_pull_secrets", "password")] {
                let rows: Vec<(String, String, String)> = tx
                    .prepare(&format!("SELECT owner, name, {column} FROM {table}"))?
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                    .collect::<rusqlite::Result<_>>()?;
                let label = if table == "secrets" { "secrets" } else { "imagepullsecrets" };
                for (owner, name, stored) in rows.into_iter().filter(|(_, _, stored)| !keys.is_current(stored)) {
                    let row = row_of(label, &owner, &name);
                    let value = open_value(&Some(keys.clone()), stored, &row, 2)?;
                    let again = seal_value(&Some(keys.clone()), &value, &row)?;
                    tx.execute(
                        &format!("UPDATE {table} SET {column} = ?3 WHERE owner = ?1 AND name = ?2"),
                        params![owner, name, again],
                    )?;
                    sealed += 1;
                }
            }
            Ok(sealed)
        })
        .await
    }

    /// Whether any stored secret value is sealed (with any key): a server
    /// that lost its key must not make a new one and lose them.
    pub async fn holds_sealed_values(&self) -> StoreResult<bool> {
        self.read(|conn| {
            conn.query_row(
                "SELECT EXISTS (SELECT 1 FROM secrets WHERE value LIKE 'sealed:v1:%')
                     OR EXISTS (SELECT 1 FROM image_pull_secrets WHERE password LIKE 'sealed:v1:%')",
                [],
                |r| r.get(0),
            )
        })
        .await
    }
}

/// A public secret's name that another owner already has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenName {
    pub name: String,
    pub owner: String,
}
