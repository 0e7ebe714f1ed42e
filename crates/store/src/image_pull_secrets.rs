//! Image pull secrets: registry credentials, unique per owner by name. A job
//! uses its creator's own one of a name first, then a public one, as with
//! secrets.

use rusqlite::{params, OptionalExtension};

use super::error::StoreResult;
use super::names::column;
use super::sealing::{open_value, row_of, seal_value, Keys};
use super::{ImagePullSecretRow, Store};

const COLUMNS: &str = "owner, name, registry_server, username, password, email, visibility, created_at, updated_at";

/// The associated data a password is sealed with.
fn sealed_row(owner: &str, name: &str) -> String {
    row_of("imagepullsecrets", owner, name)
}

/// A row with its password opened, or left empty when `keys` is `None`
/// (a listing, which never shows it).
fn row(r: &rusqlite::Row<'_>, keys: Option<&Keys>) -> rusqlite::Result<ImagePullSecretRow> {
    let (owner, name): (String, String) = (r.get(0)?, r.get(1)?);
    let password = match keys {
        Some(keys) => open_value(keys, r.get(4)?, &sealed_row(&owner, &name), 4)?,
        None => String::new(),
    };
    Ok(ImagePullSecretRow {
        owner,
        name,
        registry_server: r.get(2)?,
        username: r.get(3)?,
        password,
        email: r.get(5)?,
        visibility: column(r, 6)?,
        created_at: r.get(7)?,
        updated_at: r.get(8)?,
    })
}

impl Store {
    /// Creates or replaces the owner's image pull secret of that name.
    pub async fn put_image_pull_secret(&self, secret: ImagePullSecretRow) -> StoreResult<()> {
        let keys = self.keys();
        self.write(move |tx| {
            let password = seal_value(&keys, &secret.password, &sealed_row(&secret.owner, &secret.name))?;
            tx.execute(
                &format!(
                    "INSERT INTO image_pull_secrets ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)
                     ON CONFLICT(owner, name) DO UPDATE SET registry_server = excluded.registry_server,
                        username = excluded.username, password = excluded.password, email = excluded.email,
                        visibility = excluded.visibility, updated_at = excluded.updated_at"
                ),
                params![
                    secret.owner,
                    secret.name,
                    secret.registry_server,
                    secret.username,
                    password,
                    secret.email,
                    secret.visibility.as_str(),
                    secret.updated_at
                ],
            )?;
            Ok(())
        })
        .await
    }

    /// The image pull secrets `viewer` may see: their own and public ones,
    /// without their passwords (`password` is empty).
    pub async fn image_pull_secrets_visible_to(&self, viewer: String) -> StoreResult<Vec<ImagePullSecretRow>> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM image_pull_secrets WHERE owner = ?1 OR visibility = 'public' ORDER BY name, owner"
            ))?;
            let rows = stmt.query_map(params![viewer], |r| row(r, None))?;
            rows.collect()
        })
        .await
    }

    /// Deletes the owner's own image pull secret; false when there is none.
    pub async fn delete_image_pull_secret(&self, owner: String, name: String) -> StoreResult<bool> {
        self.write(move |tx| {
            Ok(tx.execute("DELETE FROM image_pull_secrets WHERE owner = ?1 AND name = ?2", params![owner, name])? > 0)
        })
        .await
    }

    /// The image pull secret a job of `owner` gets for `name`: the owner's
    /// own, else the newest public one.
    pub async fn resolve_image_pull_secret(
        &self,
        owner: String,
        name: String,
    ) -> StoreResult<Option<ImagePullSecretRow>> {
        let keys = self.keys();
        self.read(move |conn| {
            conn.query_row(
                &format!(
                    "SELECT {COLUMNS} FROM image_pull_secrets WHERE name = ?2 AND (owner = ?1 OR visibility = 'public')
                     ORDER BY owner = ?1 DESC, updated_at DESC LIMIT 1"
                ),
                params![owner, name],
                |r| row(r, Some(&keys)),
            )
            .optional()
        })
        .await
    }
}
