//! SQLite storage: the only module that holds SQL.
//!
//! One writer connection and a few reader connections, all in WAL mode, so
//! reads never wait for a write. Every call runs on tokio's blocking pool.
//! Migrations are applied in order at start-up and tracked in
//! `PRAGMA user_version`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

mod jobs;
mod users;

use crate::error::{AppError, AppResult};

/// The schema, one step per entry; a step is never edited once released,
/// only followed by new ones.
const MIGRATIONS: &[&str] = &[
    // 1: users, hashed tokens and jobs.
    "CREATE TABLE users (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        created_at INTEGER NOT NULL
    );
    CREATE TABLE tokens (
        hash TEXT PRIMARY KEY,
        user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        created_at INTEGER NOT NULL
    );
    CREATE TABLE jobs (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        created_by TEXT NOT NULL,
        visibility TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        state TEXT NOT NULL,
        metadata TEXT NOT NULL,
        spec TEXT NOT NULL
    );
    CREATE INDEX jobs_by_created ON jobs(created_at DESC, id);",
];

const READERS: usize = 4;

/// A handle on the database, cheap to clone.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    writer: Mutex<Connection>,
    readers: Vec<Mutex<Connection>>,
    next_reader: AtomicUsize,
}

/// A user as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRow {
    pub id: i64,
    pub name: String,
}

/// A job as stored: indexed columns plus the metadata and spec as JSON text.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRow {
    pub id: String,
    pub name: String,
    pub created_by: String,
    pub visibility: String,
    pub created_at: i64,
    pub state: String,
    pub metadata_json: String,
    pub spec_json: String,
}

/// Which jobs a listing returns.
#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    /// The user asking: they see their own jobs and public ones.
    pub viewer: String,
    pub page: i64,
    pub page_size: i64,
}

fn open_connection(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    Ok(conn)
}

fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    let current: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    for (index, step) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(step)?;
        tx.pragma_update(None, "user_version", (index + 1) as i64)?;
        tx.commit()?;
    }
    Ok(())
}

impl Store {
    /// Opens (creating if needed) the database at `path` and migrates it.
    pub fn open(path: &Path) -> Result<Store, String> {
        let mut writer = open_connection(path)
            .map_err(|e| format!("cannot open database {}: {e}", path.display()))?;
        migrate(&mut writer)
            .map_err(|e| format!("cannot migrate database {}: {e}", path.display()))?;
        let readers = (0..READERS)
            .map(|_| open_connection(path).map(Mutex::new))
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(|e| format!("cannot open database {}: {e}", path.display()))?;
        Ok(Store {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                writer: Mutex::new(writer),
                readers,
                next_reader: AtomicUsize::new(0),
            }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `f` on a reader connection on the blocking pool.
    pub async fn read<T, F>(&self, f: F) -> AppResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let i = inner.next_reader.fetch_add(1, Ordering::Relaxed) % inner.readers.len();
            let conn = inner.readers[i].lock().unwrap_or_else(|p| p.into_inner());
            f(&conn).map_err(AppError::from)
        })
        .await
        .map_err(AppError::internal)?
    }

    /// Runs `f` in a transaction on the writer connection on the blocking pool.
    pub async fn write<T, F>(&self, f: F) -> AppResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Transaction) -> Result<T, AppError> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = inner.writer.lock().unwrap_or_else(|p| p.into_inner());
            let tx = conn.transaction()?;
            let value = f(&tx)?;
            tx.commit()?;
            Ok(value)
        })
        .await
        .map_err(AppError::internal)?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("jobdeck.db")).unwrap();
        (dir, store)
    }

    #[test]
    fn migrations_are_applied_once_and_reopening_keeps_data() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jobdeck.db");
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let store = Store::open(&path).unwrap();
            store.ensure_user("admin", 1).await.unwrap();
        });
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let store = Store::open(&path).unwrap();
            let (user, created) = store.ensure_user("admin", 2).await.unwrap();
            assert!(!created, "the admin user survived a reopen");
            assert_eq!(user.name, "admin");
            let version: i64 = store
                .read(|c| c.pragma_query_value(None, "user_version", |r| r.get(0)))
                .await
                .unwrap();
            assert_eq!(version, MIGRATIONS.len() as i64);
        });
    }

    #[tokio::test]
    async fn private_jobs_are_visible_to_their_creator_only() {
        let (_dir, store) = temp_store();
        for (id, owner, visibility) in [("a", "alice", "private"), ("b", "bob", "public")] {
            store
                .insert_job(JobRow {
                    id: id.into(),
                    name: id.into(),
                    created_by: owner.into(),
                    visibility: visibility.into(),
                    created_at: 1,
                    state: "Queueing".into(),
                    metadata_json: "{}".into(),
                    spec_json: "{}".into(),
                })
                .await
                .unwrap();
        }
        let page = |viewer: &str| JobFilter { viewer: viewer.into(), page: 1, page_size: 10 };
        let (rows, total) = store.list_jobs(page("bob")).await.unwrap();
        assert_eq!((rows.len(), total), (1, 1));
        assert_eq!(rows[0].id, "b");
        let (_, total) = store.list_jobs(page("alice")).await.unwrap();
        assert_eq!(total, 2);
        assert!(store.job_visible_to("a".into(), "bob".into()).await.unwrap().is_none());
        assert!(store.job_visible_to("a".into(), "alice".into()).await.unwrap().is_some());
    }

    #[tokio::test]
    async fn duplicate_job_ids_are_a_conflict_and_keep_the_first() {
        let (_dir, store) = temp_store();
        let row = JobRow {
            id: "x".into(),
            name: "first".into(),
            created_by: "a".into(),
            visibility: "public".into(),
            created_at: 1,
            state: "Queueing".into(),
            metadata_json: "{}".into(),
            spec_json: "{}".into(),
        };
        store.insert_job(row.clone()).await.unwrap();
        let second = JobRow { name: "second".into(), ..row };
        assert!(matches!(store.insert_job(second).await, Err(AppError::Conflict(_))));
        let kept = store.job_visible_to("x".into(), "a".into()).await.unwrap().unwrap();
        assert_eq!(kept.name, "first");
    }
}
