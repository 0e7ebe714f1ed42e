//! Private job templates: each belongs to the user who saved it and is
//! named by an id unique among theirs. Their content is kept as the JSON
//! the user sent; the rules it must follow are checked before it is saved
//! (`jobdeck_core::templates`).

use rusqlite::{params, OptionalExtension};

use super::error::StoreResult;
use super::Store;

/// A stored template.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TemplateRow {
    pub owner: String,
    pub id: String,
    pub name: String,
    /// JSON: the job with its placeholders.
    pub content: String,
    /// JSON: the parameters' schema.
    pub json_schema: String,
    /// Unix ms.
    pub created_at: i64,
}

/// What [`Store::save_template`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SavedTemplate {
    Saved,
    /// The owner already has a template with this id.
    Taken,
    /// The owner already has `limit` templates.
    Full,
}

fn read_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<TemplateRow> {
    Ok(TemplateRow {
        owner: r.get(0)?,
        id: r.get(1)?,
        name: r.get(2)?,
        content: r.get(3)?,
        json_schema: r.get(4)?,
        created_at: r.get(5)?,
    })
}

const COLUMNS: &str = "owner, id, name, content, json_schema, created_at";

impl Store {
    /// Saves a new template unless its owner has one with its id or has
    /// `limit` already.
    pub async fn save_template(&self, row: TemplateRow, limit: usize) -> StoreResult<SavedTemplate> {
        self.write(move |tx| {
            let count: i64 =
                tx.query_row("SELECT COUNT(*) FROM templates WHERE owner = ?1", [&row.owner], |r| r.get(0))?;
            if count as usize >= limit {
                return Ok(SavedTemplate::Full);
            }
            let inserted = tx.execute(
                &format!("INSERT OR IGNORE INTO templates ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"),
                params![row.owner, row.id, row.name, row.content, row.json_schema, row.created_at],
            )?;
            Ok(if inserted == 1 { SavedTemplate::Saved } else { SavedTemplate::Taken })
        })
        .await
    }

    /// `owner`'s templates, by name.
    pub async fn templates_of(&self, owner: String) -> StoreResult<Vec<TemplateRow>> {
        self.read(move |conn| {
            let mut statement =
                conn.prepare(&format!("SELECT {COLUMNS} FROM templates WHERE owner = ?1 ORDER BY name, id"))?;
            let rows = statement.query_map([owner], read_row)?;
            rows.collect()
        })
        .await
    }

    /// `owner`'s template `id`, if they have it.
    pub async fn template(&self, owner: String, id: String) -> StoreResult<Option<TemplateRow>> {
        self.read(move |conn| {
            conn.query_row(
                &format!("SELECT {COLUMNS} FROM templates WHERE owner = ?1 AND id = ?2"),
                params![owner, id],
                read_row,
            )
            .optional()
        })
        .await
    }

    /// Deletes `owner`'s template `id`; whether there was one.
    pub async fn delete_template(&self, owner: String, id: String) -> StoreResult<bool> {
        self.write(move |tx| {
            Ok(tx.execute("DELETE FROM templates WHERE owner = ?1 AND id = ?2", params![owner, id])? == 1)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::database_of_schema;

    fn row(owner: &str, id: &str) -> TemplateRow {
        TemplateRow {
            owner: owner.into(),
            id: id.into(),
            name: id.into(),
            content: r#"{"spec":{}}"#.into(),
            json_schema: "{}".into(),
            created_at: 1,
        }
    }

    /// A database of schema 13 (the release before templates) with a user
    /// and an audit entry: after the upgrade both are there and templates
    /// are kept per owner, an id once per owner, up to the limit, and go
    /// with their owner's removal.
    #[tokio::test]
    async fn templates_are_kept_per_owner_after_an_upgrade_and_go_with_their_owner() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jobdeck.db");
        let conn = database_of_schema(&path, 13);
        conn.execute_batch(
            "INSERT INTO users (name, created_at, role) VALUES ('bob', 1, 'member');
             INSERT INTO audit_log (time, actor, action, target, outcome, detail, source)
             VALUES (5, 'admin', 'user.role', 'bob', 'ok', 'role member', '127.0.0.1');",
        )
        .unwrap();
        drop(conn);
        let store = Store::open(&path).unwrap();
        let audit = store.audit(crate::AuditFilter { limit: 10, ..Default::default() }).await.unwrap();
        assert_eq!(audit.len(), 1, "the upgrade keeps what was there");

        assert_eq!(store.save_template(row("bob", "train"), 2).await.unwrap(), SavedTemplate::Saved);
        assert_eq!(store.save_template(row("bob", "train"), 2).await.unwrap(), SavedTemplate::Taken);
        assert_eq!(store.save_template(row("ann", "train"), 2).await.unwrap(), SavedTemplate::Saved, "per owner");
        assert_eq!(store.save_template(row("bob", "eval"), 2).await.unwrap(), SavedTemplate::Saved);
        assert_eq!(store.save_template(row("bob", "more"), 2).await.unwrap(), SavedTemplate::Full);
        let bobs: Vec<String> = store.templates_of("bob".into()).await.unwrap().into_iter().map(|t| t.id).collect();
        assert_eq!(bobs, ["eval", "train"]);
        assert!(store.template("ann".into(), "eval".into()).await.unwrap().is_none(), "bob's are not ann's");
        assert!(store.delete_template("bob".into(), "eval".into()).await.unwrap());
        assert!(!store.delete_template("bob".into(), "eval".into()).await.unwrap());

        store.remove_user("bob", 10).await.unwrap();
        assert!(store.templates_of("bob".into()).await.unwrap().is_empty(), "removed with their owner");
        assert_eq!(store.templates_of("ann".into()).await.unwrap().len(), 1);
    }
}
