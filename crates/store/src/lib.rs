//! Jobdeck's storage: the SQLite store (the only SQL) and, in [`logs`], the
//! replicas' log files.
//!
//! One writer connection and a few reader connections, all in WAL mode, so
//! reads never wait for a write. Every call runs on tokio's blocking pool.
//! Migrations are applied in order at start-up and tracked in
//! `PRAGMA user_version`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use jobdeck_api::{EndReason, EventType, JobState, Visibility};
use rusqlite::Connection;

mod error;
mod events;
mod image_pull_secrets;
pub mod logs;
mod names;
pub mod sealing;
pub use jobs::ACTIVE_STATES;
pub use metrics::MetricSample;
pub use secrets::TakenName;
pub use tokens::{NewToken, TokenOwner};
mod jobs;
mod metrics;
mod replicas;
mod secrets;
pub mod series;
mod tokens;
mod users;

pub use self::error::{StoreError, StoreResult};

/// Milliseconds since the Unix epoch: the time every stored stamp is in.
pub fn now_millis() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

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
    // 2: the lifecycle of jobs (runs, queueing, placement, counts, archiving),
    // replica attempts, events and secrets.
    "ALTER TABLE jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 4000;
    ALTER TABLE jobs ADD COLUMN node_groups TEXT NOT NULL DEFAULT '';
    ALTER TABLE jobs ADD COLUMN reason TEXT;
    ALTER TABLE jobs ADD COLUMN message TEXT;
    ALTER TABLE jobs ADD COLUMN run INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE jobs ADD COLUMN queued_at INTEGER;
    ALTER TABLE jobs ADD COLUMN started_at INTEGER;
    ALTER TABLE jobs ADD COLUMN completed_at INTEGER;
    ALTER TABLE jobs ADD COLUMN archive_at INTEGER;
    ALTER TABLE jobs ADD COLUMN placement TEXT;
    ALTER TABLE jobs ADD COLUMN stop_reason TEXT;
    ALTER TABLE jobs ADD COLUMN job_retries INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE jobs ADD COLUMN succeeded INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE jobs ADD COLUMN failed INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE jobs ADD COLUMN active INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE jobs ADD COLUMN ready INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE jobs ADD COLUMN master_port INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX jobs_by_state ON jobs(state);
    CREATE INDEX jobs_by_archive_at ON jobs(archive_at) WHERE archive_at IS NOT NULL;
    CREATE INDEX jobs_by_name ON jobs(name, created_at DESC);
    CREATE TABLE replicas (
        job_id TEXT NOT NULL,
        completion_index INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        run INTEGER NOT NULL,
        phase TEXT NOT NULL,
        readiness_reason TEXT,
        readiness_message TEXT,
        node TEXT,
        node_group TEXT,
        gpu_ids TEXT NOT NULL DEFAULT '',
        exit_code INTEGER,
        signal INTEGER,
        reason TEXT,
        message TEXT,
        created_at INTEGER NOT NULL,
        start_time INTEGER,
        end_time INTEGER,
        executor_state TEXT,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (job_id, completion_index, attempt)
    ) WITHOUT ROWID;
    CREATE TABLE job_events (
        id INTEGER PRIMARY KEY,
        job_id TEXT NOT NULL,
        type TEXT NOT NULL,
        reason TEXT NOT NULL,
        message TEXT NOT NULL,
        regarding_kind TEXT NOT NULL,
        regarding_name TEXT NOT NULL,
        count INTEGER NOT NULL DEFAULT 1,
        first_time INTEGER NOT NULL,
        last_time INTEGER NOT NULL
    );
    CREATE INDEX job_events_by_job ON job_events(job_id, id);
    CREATE TABLE secrets (
        owner TEXT NOT NULL,
        name TEXT NOT NULL,
        value TEXT NOT NULL,
        visibility TEXT NOT NULL,
        tags TEXT NOT NULL DEFAULT '[]',
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (owner, name)
    );
    CREATE INDEX secrets_by_name ON secrets(name);",
    // 3: listings that stay fast with 100,000 jobs (docs/measurements.md).
    // `jobs_list` walks jobs newest first with every column a listing filters
    // on except labels, so a page is found without reading rows it skips;
    // `job_counts` keeps the number of jobs per (visibility, creator, state,
    // node groups), maintained by triggers, so the total of a listing that
    // filters on nothing else is a sum over a few dozen rows instead of a
    // count over every job; `job_search` is a trigram index of the job ids,
    // which finds the few jobs a name search matches without reading every
    // id (`list_jobs`).
    "DROP INDEX jobs_by_created;
    CREATE INDEX jobs_list ON jobs(created_at DESC, id DESC, visibility, created_by, state, node_groups);
    CREATE TABLE job_counts (
        visibility TEXT NOT NULL,
        created_by TEXT NOT NULL,
        state TEXT NOT NULL,
        node_groups TEXT NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (visibility, created_by, state, node_groups)
    ) WITHOUT ROWID;
    INSERT INTO job_counts SELECT visibility, created_by, state, node_groups, COUNT(*) FROM jobs GROUP BY 1, 2, 3, 4;
    CREATE VIRTUAL TABLE job_search USING fts5(id, tokenize = 'trigram');
    INSERT INTO job_search(id) SELECT id FROM jobs;
    CREATE TRIGGER jobs_searchable_on_insert AFTER INSERT ON jobs BEGIN
        INSERT INTO job_search(id) VALUES (NEW.id);
    END;
    CREATE TRIGGER jobs_searchable_on_delete AFTER DELETE ON jobs BEGIN
        DELETE FROM job_search
            WHERE job_search MATCH char(34) || replace(OLD.id, char(34), char(34) || char(34)) || char(34) AND id = OLD.id;
    END;
    CREATE TRIGGER jobs_counted_on_insert AFTER INSERT ON jobs BEGIN
        INSERT INTO job_counts VALUES (NEW.visibility, NEW.created_by, NEW.state, NEW.node_groups, 1)
            ON CONFLICT DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER jobs_counted_on_delete AFTER DELETE ON jobs BEGIN
        UPDATE job_counts SET n = n - 1 WHERE visibility = OLD.visibility AND created_by = OLD.created_by
            AND state = OLD.state AND node_groups = OLD.node_groups;
        DELETE FROM job_counts WHERE n <= 0;
    END;
    CREATE TRIGGER jobs_counted_on_update AFTER UPDATE OF visibility, created_by, state, node_groups ON jobs
    WHEN OLD.visibility IS NOT NEW.visibility OR OLD.created_by IS NOT NEW.created_by
        OR OLD.state IS NOT NEW.state OR OLD.node_groups IS NOT NEW.node_groups
    BEGIN
        UPDATE job_counts SET n = n - 1 WHERE visibility = OLD.visibility AND created_by = OLD.created_by
            AND state = OLD.state AND node_groups = OLD.node_groups;
        DELETE FROM job_counts WHERE n <= 0;
        INSERT INTO job_counts VALUES (NEW.visibility, NEW.created_by, NEW.state, NEW.node_groups, 1)
            ON CONFLICT DO UPDATE SET n = n + 1;
    END;",
    // 4: image pull secrets (`/imagepullsecrets`): registry credentials a job
    // names in `spec.image_pull_secrets`; names are unique per owner.
    "CREATE TABLE image_pull_secrets (
        owner TEXT NOT NULL,
        name TEXT NOT NULL,
        registry_server TEXT NOT NULL,
        username TEXT NOT NULL,
        password TEXT NOT NULL,
        email TEXT NOT NULL DEFAULT '',
        visibility TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (owner, name)
    );",
    // 5: when a replica waiting out its retry back-off starts (Unix ms), and
    // what the executor calls an attempt (a container, a Slurm job).
    "ALTER TABLE replicas ADD COLUMN retry_at INTEGER;
    ALTER TABLE replicas ADD COLUMN executor_id TEXT;",
    // 6: resource use per replica attempt and series, kept bounded
    // (metrics/series.rs): a point is the mean and peak of `count` samples
    // from time `t` on.
    "CREATE TABLE metrics (
        job_id TEXT NOT NULL,
        completion_index INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        series TEXT NOT NULL,
        t INTEGER NOT NULL,
        mean REAL NOT NULL,
        max REAL NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (job_id, completion_index, attempt, series, t)
    ) WITHOUT ROWID;",
    // 7: tokens with an id to list and revoke them by, a kind, a name, an
    // expiry, when they were last used and revoked, and the token a console
    // session was made from (`origin_id`), so that revoking a token ends its
    // sessions too (auth.rs). Tokens from before keep working: kind `api`,
    // no expiry.
    "CREATE TABLE tokens_v7 (
        id INTEGER PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        name TEXT NOT NULL DEFAULT '',
        created_at INTEGER NOT NULL,
        expires_at INTEGER,
        last_used_at INTEGER,
        revoked_at INTEGER,
        origin_id INTEGER
    );
    INSERT INTO tokens_v7 (hash, user_id, kind, created_at)
        SELECT hash, user_id, 'api', created_at FROM tokens ORDER BY created_at, rowid;
    DROP TABLE tokens;
    ALTER TABLE tokens_v7 RENAME TO tokens;
    CREATE INDEX tokens_by_user ON tokens(user_id, id);
    CREATE INDEX tokens_by_origin ON tokens(origin_id) WHERE origin_id IS NOT NULL;",
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
    /// The keys secret values are sealed with (`use_keys`), once given.
    keys: std::sync::OnceLock<Arc<sealing::SealingKeys>>,
}

/// A user as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRow {
    pub id: i64,
    pub name: String,
}

/// A job as stored: what the user asked for (indexed columns plus the
/// metadata and spec as JSON text) and what the scheduler made of it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobRow {
    pub id: String,
    pub name: String,
    pub created_by: String,
    pub visibility: Visibility,
    /// Unix milliseconds.
    pub created_at: i64,
    pub metadata_json: String,
    pub spec_json: String,
    /// The priority class as a number, 1000 (low-1000) … 9000 (high-9000).
    pub priority: i64,
    /// The allowed node groups as `,a,b,` (empty: any), for filtering.
    pub node_groups: String,
    pub runtime: JobRuntime,
}

/// The part of a job only the scheduler writes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobRuntime {
    pub state: JobState,
    pub reason: Option<String>,
    pub message: Option<String>,
    /// The current run: 0 first, one more per start after a stop, preemption
    /// or job-level retry.
    pub run: i64,
    /// When the current run entered the queue (Unix ms).
    pub queued_at: Option<i64>,
    /// When the current run was admitted (Unix ms).
    pub started_at: Option<i64>,
    /// When the job reached Completed, Failed or Stopped (Unix ms).
    pub completed_at: Option<i64>,
    /// When the job is to be archived (Unix ms).
    pub archive_at: Option<i64>,
    /// The current run's `Placement` as JSON, while it holds resources.
    pub placement_json: Option<String>,
    /// Why the current run is being stopped, while it is.
    pub stop_reason: Option<String>,
    /// Job-level failure restarts used.
    pub job_retries: i64,
    pub succeeded: i64,
    pub failed: i64,
    pub active: i64,
    pub ready: i64,
    /// The rendezvous port of the current run (multi-worker jobs).
    pub master_port: i64,
}

/// One replica attempt as stored.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReplicaRow {
    pub job_id: String,
    pub completion_index: i64,
    pub attempt: i64,
    pub run: i64,
    pub phase: jobdeck_api::ReplicaPhase,
    pub readiness_reason: Option<String>,
    pub readiness_message: Option<String>,
    pub node: Option<String>,
    pub node_group: Option<String>,
    /// Comma-separated GPU indices.
    pub gpu_ids: String,
    pub exit_code: Option<i64>,
    pub signal: Option<i64>,
    /// Why the attempt ended (the column holds its word).
    pub reason: Option<EndReason>,
    pub message: Option<String>,
    pub created_at: i64,
    pub start_time: Option<i64>,
    pub end_time: Option<i64>,
    pub executor_state: Option<String>,
    pub updated_at: i64,
    /// Unix milliseconds: when a pending attempt waiting out its retry
    /// back-off starts.
    pub retry_at: Option<i64>,
    /// What the executor calls the attempt (a container name, a Slurm job
    /// id), shown to users.
    pub executor_id: Option<String>,
}

/// An event to record.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRow {
    pub job_id: String,
    pub kind: EventType,
    pub reason: String,
    pub message: String,
    pub regarding_kind: String,
    pub regarding_name: String,
    /// Unix milliseconds.
    pub time: i64,
}

/// An event as stored, with its repetitions folded into `count`.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    pub kind: EventType,
    pub reason: String,
    pub message: String,
    pub regarding_kind: String,
    pub regarding_name: String,
    pub count: i64,
    pub first_time: i64,
    pub last_time: i64,
}

/// A secret as stored; `value` never leaves the server except into a
/// replica's environment.
#[derive(Debug, Clone, PartialEq)]
pub struct SecretRow {
    pub owner: String,
    pub name: String,
    /// Empty in listings (`secrets_visible_to`), which never open a value.
    pub value: String,
    pub visibility: Visibility,
    pub tags: Vec<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// Registry credentials as stored (`/imagepullsecrets`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImagePullSecretRow {
    pub owner: String,
    pub name: String,
    pub registry_server: String,
    pub username: String,
    /// Empty in listings (`image_pull_secrets_visible_to`).
    pub password: String,
    pub email: String,
    pub visibility: Visibility,
    pub created_at: i64,
    pub updated_at: i64,
}

/// Which jobs a listing covers: alive, archived or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueryMode {
    #[default]
    AliveOnly,
    ArchiveOnly,
    AliveAndArchive,
}

/// The order of a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortKey {
    #[default]
    CreatedAt,
    Name,
    State,
}

/// Which jobs a listing returns.
#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    /// The user asking: they see their own jobs and public ones.
    pub viewer: String,
    /// A substring of the name (case-insensitive).
    pub q: Option<String>,
    /// Exact state names; empty means any.
    pub states: Vec<JobState>,
    /// Node group names (the `node_group` parameter, Jobdeck's own); a job
    /// matches when it may run in one of them: one
    /// of its allowed groups is exactly that name, or it allows every group
    /// and the name is one of this server's groups ([`JobFilter::any_group_matches`]).
    pub node_groups: Vec<String>,
    /// Whether jobs without a node-group restriction match `node_groups`:
    /// true when one of the names is a group of this server (such a job may
    /// run in it); the handler decides, since the store does not know the
    /// configuration.
    pub any_group_matches: bool,
    /// Creators' user names, exactly (case-sensitive); any matches.
    /// (The `creator` parameter, Jobdeck's own.)
    pub created_by: Vec<String>,
    /// Beginnings of creators' names, ignoring case; any matches. (Lepton's
    /// `created_by`, as `lep job list -u` sends it.)
    pub created_by_prefixes: Vec<String>,
    /// Parts of node group names, ignoring case; a job matches when one of
    /// its allowed groups contains one, or it allows every group and
    /// [`JobFilter::any_group_pattern_matches`]. (Lepton's `node_groups`.)
    pub node_group_patterns: Vec<String>,
    /// Whether jobs without a node-group restriction match
    /// `node_group_patterns`: one of this server's groups contains a pattern.
    pub any_group_pattern_matches: bool,
    /// Label conditions: the key exists, or has this value; all must hold.
    pub labels: Vec<(String, Option<String>)>,
    pub mode: QueryMode,
    pub sort: SortKey,
    pub ascending: bool,
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

/// Makes the database and its WAL files readable by their owner only.
fn restrict_to_owner(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut paths = vec![path.to_path_buf()];
    for suffix in ["-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        paths.push(PathBuf::from(name));
    }
    for p in paths {
        let _ = std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600));
    }
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
    pub fn open(path: &Path) -> StoreResult<Store> {
        let opening = |source| StoreError::Open { path: path.to_path_buf(), source };
        let mut writer = open_connection(path).map_err(opening)?;
        // The database holds secret values: only the server's user may read it.
        restrict_to_owner(path);
        migrate(&mut writer).map_err(|source| StoreError::Migrate { path: path.to_path_buf(), source })?;
        let readers = (0..READERS)
            .map(|_| open_connection(path).map(Mutex::new))
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(opening)?;
        Ok(Store {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                writer: Mutex::new(writer),
                readers,
                next_reader: AtomicUsize::new(0),
                keys: std::sync::OnceLock::new(),
            }),
        })
    }

    /// Seals secret values with `keys` from now on (once; later calls are
    /// ignored), and opens values sealed with them.
    pub fn use_keys(&self, keys: sealing::SealingKeys) {
        let _ = self.inner.keys.set(Arc::new(keys));
    }

    fn keys(&self) -> sealing::Keys {
        self.inner.keys.get().cloned()
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `f` on a reader connection on the blocking pool.
    pub async fn read<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let i = inner.next_reader.fetch_add(1, Ordering::Relaxed) % inner.readers.len();
            let conn = inner.readers[i].lock().unwrap_or_else(|p| p.into_inner());
            f(&conn).map_err(StoreError::from)
        })
        .await?
    }

    /// Runs `f` in a transaction on the writer connection on the blocking pool.
    pub async fn write<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&rusqlite::Transaction) -> Result<T, StoreError> + Send + 'static,
    {
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            let mut conn = inner.writer.lock().unwrap_or_else(|p| p.into_inner());
            let tx = conn.transaction()?;
            let value = f(&tx)?;
            tx.commit()?;
            Ok(value)
        })
        .await?
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use jobdeck_api::TokenKind;

    fn temp_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("jobdeck.db")).unwrap();
        (dir, store)
    }

    pub fn job_row(id: &str, owner: &str, visibility: &str, created_at: i64, state: &str) -> JobRow {
        JobRow {
            id: id.into(),
            name: id.split('-').next().unwrap_or(id).into(),
            created_by: owner.into(),
            visibility: Visibility::parse(visibility).expect("a visibility"),
            created_at,
            metadata_json: "{}".into(),
            spec_json: "{}".into(),
            priority: 4000,
            node_groups: String::new(),
            runtime: JobRuntime { state: JobState::parse(state).expect("a job state"), ..JobRuntime::default() },
        }
    }

    fn page(viewer: &str) -> JobFilter {
        JobFilter { viewer: viewer.into(), page: 1, page_size: 10, ..JobFilter::default() }
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
            let version: i64 = store.read(|c| c.pragma_query_value(None, "user_version", |r| r.get(0))).await.unwrap();
            assert_eq!(version, MIGRATIONS.len() as i64);
        });
    }

    /// A database written before the listing indexes (schema 2) gets its
    /// counts and its name index filled when it is opened.
    #[tokio::test]
    async fn an_older_database_gets_its_listing_indexes_filled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jobdeck.db");
        {
            let conn = Connection::open(&path).unwrap();
            for step in &MIGRATIONS[..2] {
                conn.execute_batch(step).unwrap();
            }
            conn.pragma_update(None, "user_version", 2).unwrap();
            for (id, owner, visibility, state) in [
                ("train-aaaaa", "alice", "public", "Running"),
                ("eval-bbbbb", "bob", "private", "Completed"),
                ("train-ccccc", "bob", "public", "Archived"),
            ] {
                conn.execute(
                    "INSERT INTO jobs (id, name, created_by, visibility, created_at, state, metadata, spec) VALUES (?1, ?1, ?2, ?3, 1, ?4, '{}', '{}')",
                    rusqlite::params![id, owner, visibility, state],
                )
                .unwrap();
            }
        }
        let store = Store::open(&path).unwrap();
        let list = |viewer: &str, q: Option<&str>| JobFilter {
            viewer: viewer.into(),
            q: q.map(String::from),
            mode: QueryMode::AliveAndArchive,
            page: 1,
            page_size: 10,
            ..JobFilter::default()
        };
        assert_eq!(store.list_jobs(list("alice", None)).await.unwrap().1, 2);
        assert_eq!(store.list_jobs(list("bob", None)).await.unwrap().1, 3);
        let (rows, total) = store.list_jobs(list("alice", Some("train"))).await.unwrap();
        assert_eq!((rows.len(), total), (2, 2));
    }

    /// Tokens made before tokens could expire (schema 6) keep signing in
    /// after the upgrade, as API tokens without expiry.
    #[tokio::test]
    async fn tokens_of_an_older_database_keep_working_without_expiry() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jobdeck.db");
        {
            let conn = Connection::open(&path).unwrap();
            for step in &MIGRATIONS[..6] {
                conn.execute_batch(step).unwrap();
            }
            conn.pragma_update(None, "user_version", 6).unwrap();
            conn.execute_batch(
                "INSERT INTO users (id, name, created_at) VALUES (1, 'admin', 1), (2, 'bob', 2);
                 INSERT INTO tokens (hash, user_id, created_at) VALUES ('hash-admin', 1, 10), ('hash-bob', 2, 20);",
            )
            .unwrap();
        }
        let store = Store::open(&path).unwrap();
        let admin = store.token_by_hash("hash-admin".into()).await.unwrap().expect("the admin's token survives");
        assert_eq!(
            (admin.user.name.as_str(), admin.kind, admin.expires_at, admin.revoked_at),
            ("admin", TokenKind::Api, None, None)
        );
        let listed = store.list_tokens(None).await.unwrap();
        let summary: Vec<(i64, &str, i64)> = listed.iter().map(|t| (t.id, t.user.as_str(), t.created_at)).collect();
        assert_eq!(summary, vec![(1, "admin", 10), (2, "bob", 20)], "ids follow the tokens' age");
        // A new token gets the next id, and the old hashes stay unique.
        let id = store
            .insert_token(NewToken {
                user_id: 2,
                hash: "hash-new".into(),
                kind: TokenKind::Session,
                name: "console".into(),
                created_at: 30,
                expires_at: Some(100),
                origin_id: Some(2),
            })
            .await
            .unwrap();
        assert_eq!(id, 3);
        let duplicate = NewToken {
            user_id: 1,
            hash: "hash-bob".into(),
            kind: TokenKind::Api,
            name: String::new(),
            created_at: 40,
            expires_at: None,
            origin_id: None,
        };
        assert!(store.insert_token(duplicate).await.is_err());
    }

    /// Secret values of a database from before sealing (schema 7, in
    /// clear) are sealed at the next start and still resolve; a key
    /// rotated out still opens what it sealed until the start-up pass
    /// seals it again with the new key.
    #[tokio::test]
    async fn clear_values_of_an_older_database_are_sealed_and_keys_rotate() {
        use sealing::SealingKeys;
        const A: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
        const B: &str = "1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100";
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jobdeck.db");
        {
            let conn = Connection::open(&path).unwrap();
            for step in &MIGRATIONS[..7] {
                conn.execute_batch(step).unwrap();
            }
            conn.pragma_update(None, "user_version", 7).unwrap();
            conn.execute_batch(
                "INSERT INTO secrets (owner, name, value, visibility, created_at, updated_at)
                     VALUES ('alice', 'HF_TOKEN', 'hf_clear', 'public', 1, 1);
                 INSERT INTO image_pull_secrets (owner, name, registry_server, username, password, visibility,
                     created_at, updated_at) VALUES ('alice', 'reg', 'r.example', 'u', 'pw_clear', 'private', 1, 1);",
            )
            .unwrap();
        }
        let raw = |path: &Path| {
            let conn = Connection::open(path).unwrap();
            let value: String = conn.query_row("SELECT value FROM secrets", [], |r| r.get(0)).unwrap();
            let password: String = conn.query_row("SELECT password FROM image_pull_secrets", [], |r| r.get(0)).unwrap();
            (value, password)
        };
        let store = Store::open(&path).unwrap();
        assert!(!store.holds_sealed_values().await.unwrap());
        store.use_keys(SealingKeys::from_hex(A, &[]).unwrap());
        assert_eq!(store.seal_stored_secrets().await.unwrap(), 2);
        assert_eq!(store.seal_stored_secrets().await.unwrap(), 0, "sealed once");
        let (value, password) = raw(&path);
        let a_id = SealingKeys::from_hex(A, &[]).unwrap().current_id().to_string();
        assert!(value.starts_with(&format!("sealed:v1:{a_id}:")) && !value.contains("clear"), "{value}");
        assert!(password.starts_with("sealed:v1:") && !password.contains("clear"), "{password}");
        assert!(store.holds_sealed_values().await.unwrap());
        let resolved = store.resolve_secret("bob".into(), "HF_TOKEN".into(), Some("alice".into())).await.unwrap();
        assert_eq!(resolved.as_deref(), Some("hf_clear"));
        let pull = store.resolve_image_pull_secret("alice".into(), "reg".into()).await.unwrap().unwrap();
        assert_eq!(pull.password, "pw_clear");
        drop(store);

        // Rotation: B is current, A is still known; the start-up pass moves
        // every value to B, after which A is no longer needed.
        let store = Store::open(&path).unwrap();
        store.use_keys(SealingKeys::from_hex(B, &[A]).unwrap());
        assert_eq!(store.seal_stored_secrets().await.unwrap(), 2);
        drop(store);
        let store = Store::open(&path).unwrap();
        store.use_keys(SealingKeys::from_hex(B, &[]).unwrap());
        let resolved = store.resolve_secret("alice".into(), "HF_TOKEN".into(), None).await.unwrap();
        assert_eq!(resolved.as_deref(), Some("hf_clear"));
        // A listing opens no value: it neither costs a decryption nor shows one.
        let visible = store.secrets_visible_to("alice".into()).await.unwrap();
        assert_eq!((visible[0].name.as_str(), visible[0].value.as_str()), ("HF_TOKEN", ""));

        // Without the key, a sealed value is an error, never its ciphertext.
        let store = Store::open(&path).unwrap();
        assert!(store.resolve_secret("alice".into(), "HF_TOKEN".into(), None).await.is_err());
    }

    #[tokio::test]
    async fn private_jobs_are_visible_to_their_creator_only() {
        let (_dir, store) = temp_store();
        for (id, owner, visibility) in [("a", "alice", "private"), ("b", "bob", "public")] {
            store.insert_job(job_row(id, owner, visibility, 1, "Queueing"), vec![]).await.unwrap();
        }
        let (rows, total) = store.list_jobs(page("bob")).await.unwrap();
        assert_eq!((rows.len(), total), (1, 1));
        assert_eq!(rows[0].id, "b");
        let (_, total) = store.list_jobs(page("alice")).await.unwrap();
        assert_eq!(total, 2);
        assert!(store.job_visible_to("a".into(), "bob".into()).await.unwrap().is_none());
        assert!(store.job_visible_to("a".into(), "alice".into()).await.unwrap().is_some());
    }

    /// The totals a listing takes from `job_counts` equal the rows it lists,
    /// for every filter, through creations, state changes and deletions.
    #[tokio::test]
    async fn listing_totals_follow_every_change_of_a_job() {
        let (_dir, store) = temp_store();
        let owners = ["alice", "bob", "carol"];
        let groups = ["", ",gpu-a,", ",gpu-b,", ",gpu-a,gpu-b,"];
        let states = ["Queueing", "Running", "Completed", "Archived"];
        for k in 0..60usize {
            let mut row = job_row(
                &format!("job-{k:02}"),
                owners[k % 3],
                if k % 4 == 0 { "private" } else { "public" },
                k as i64,
                states[k % 4],
            );
            row.node_groups = groups[k % 4].into();
            store.insert_job(row, vec![]).await.unwrap();
        }
        let filters = || {
            let mut filters = Vec::new();
            for viewer in owners {
                for mode in [QueryMode::AliveOnly, QueryMode::ArchiveOnly, QueryMode::AliveAndArchive] {
                    for states in [vec![], vec![JobState::Running], vec![JobState::Completed, JobState::Queueing]] {
                        for created_by in [vec![], vec!["bob".to_string()]] {
                            for (node_groups, any_group_matches) in
                                [(vec![], false), (vec!["gpu-a".to_string()], true), (vec!["gpu-b".to_string()], false)]
                            {
                                filters.push(JobFilter {
                                    viewer: viewer.into(),
                                    mode,
                                    states: states.clone(),
                                    created_by: created_by.clone(),
                                    node_groups,
                                    any_group_matches,
                                    page: 1,
                                    page_size: 500,
                                    ..JobFilter::default()
                                });
                            }
                        }
                    }
                }
            }
            filters
        };
        let check = |when: &'static str| {
            let store = store.clone();
            async move {
                for filter in filters() {
                    let (rows, total) = store.list_jobs(filter.clone()).await.unwrap();
                    assert_eq!(total, rows.len() as i64, "{when}: {filter:?}");
                }
            }
        };
        check("after creation").await;
        for k in (0..60usize).step_by(3) {
            let id = format!("job-{k:02}");
            let mut runtime = store.job(id.clone()).await.unwrap().unwrap().runtime;
            runtime.state = JobState::parse(states[(k + 1) % 4]).unwrap();
            store.update_job_runtime(id.clone(), runtime.clone(), vec![]).await.unwrap();
            // Writing the same state again changes no count.
            store.update_job_runtime(id, runtime, vec![]).await.unwrap();
        }
        check("after state changes").await;
        for k in (0..60usize).step_by(7) {
            store.delete_job(format!("job-{k:02}")).await.unwrap();
        }
        check("after deletions").await;
        // A deleted job leaves the name index too.
        let search = |q: &str| JobFilter {
            viewer: "alice".into(),
            q: Some(q.into()),
            mode: QueryMode::AliveAndArchive,
            page: 1,
            page_size: 500,
            ..JobFilter::default()
        };
        assert_eq!(store.list_jobs(search("job-07")).await.unwrap().1, 0);
        assert_eq!(store.list_jobs(search("job-09")).await.unwrap().1, 1);
        let indexed: i64 =
            store.read(|c| c.query_row("SELECT COUNT(*) FROM job_search", [], |r| r.get(0))).await.unwrap();
        assert_eq!(indexed, 60 - 9);
        let counted: i64 =
            store.read(|c| c.query_row("SELECT SUM(n) FROM job_counts", [], |r| r.get(0))).await.unwrap();
        assert_eq!(counted, 60 - 9);
    }

    #[tokio::test]
    async fn duplicate_job_ids_are_a_conflict_and_keep_the_first() {
        let (_dir, store) = temp_store();
        let row = job_row("x", "a", "public", 1, "Queueing");
        store.insert_job(row.clone(), vec![]).await.unwrap();
        let second = JobRow { name: "second".into(), ..row };
        assert!(matches!(store.insert_job(second, vec![]).await, Err(StoreError::DuplicateJob(_))));
        let kept = store.job_visible_to("x".into(), "a".into()).await.unwrap().unwrap();
        assert_eq!(kept.name, "x");
    }

    #[tokio::test]
    async fn listings_filter_sort_and_page() {
        let (_dir, store) = temp_store();
        let jobs = [
            ("train-a", "alice", 1, "Running", ",gpu-a,", r#"{"labels":{"team":"nlp"}}"#),
            ("train-b", "bob", 2, "Completed", ",cpu,", r#"{"labels":{"team":"cv"}}"#),
            ("eval-c", "alice", 3, "Archived", "", "{}"),
            ("eval-d", "albert", 4, "Queueing", ",gpu-b,", "{}"),
        ];
        for (id, owner, at, state, groups, metadata) in jobs {
            let mut row = job_row(id, owner, "public", at, state);
            row.node_groups = groups.into();
            row.metadata_json = metadata.into();
            store.insert_job(row, vec![]).await.unwrap();
        }
        let ids = |rows: Vec<JobRow>| rows.into_iter().map(|r| r.id).collect::<Vec<_>>();
        let cases: Vec<(JobFilter, Vec<&str>, i64)> = vec![
            (page("x"), vec!["eval-d", "train-b", "train-a"], 3),
            (JobFilter { mode: QueryMode::ArchiveOnly, ..page("x") }, vec!["eval-c"], 1),
            (
                JobFilter { mode: QueryMode::AliveAndArchive, ..page("x") },
                vec!["eval-d", "eval-c", "train-b", "train-a"],
                4,
            ),
            (JobFilter { q: Some("TRAIN".into()), ..page("x") }, vec!["train-b", "train-a"], 2),
            (JobFilter { q: Some("%".into()), ..page("x") }, vec![], 0),
            // Three characters or more go through the trigram index, fewer
            // through the walk; both are case-insensitive substrings.
            (JobFilter { q: Some("ain-".into()), ..page("x") }, vec!["train-b", "train-a"], 2),
            (JobFilter { q: Some("Ai".into()), ..page("x") }, vec!["train-b", "train-a"], 2),
            (JobFilter { q: Some("val-d".into()), ..page("x") }, vec!["eval-d"], 1),
            (JobFilter { q: Some("\"al".into()), ..page("x") }, vec![], 0),
            (JobFilter { q: Some("train-a-x".into()), ..page("x") }, vec![], 0),
            (
                JobFilter { states: vec![JobState::Running, JobState::Queueing], ..page("x") },
                vec!["eval-d", "train-a"],
                2,
            ),
            (JobFilter { node_groups: vec!["gpu".into()], ..page("x") }, vec![], 0),
            (JobFilter { node_groups: vec!["gpu-a".into()], ..page("x") }, vec!["train-a"], 1),
            (
                JobFilter { node_groups: vec!["gpu-a".into(), "gpu-b".into()], ..page("x") },
                vec!["eval-d", "train-a"],
                2,
            ),
            (
                JobFilter {
                    node_groups: vec!["cpu".into()],
                    any_group_matches: true,
                    mode: QueryMode::AliveAndArchive,
                    ..page("x")
                },
                vec!["eval-c", "train-b"],
                2,
            ),
            (JobFilter { created_by: vec!["al".into()], ..page("x") }, vec![], 0),
            (
                JobFilter { created_by: vec!["alice".into(), "albert".into()], ..page("x") },
                vec!["eval-d", "train-a"],
                2,
            ),
            (JobFilter { created_by: vec!["ALICE".into()], ..page("x") }, vec![], 0),
            (JobFilter { labels: vec![("team".into(), Some("cv".into()))], ..page("x") }, vec!["train-b"], 1),
            (JobFilter { labels: vec![("team".into(), None)], ..page("x") }, vec!["train-b", "train-a"], 2),
            (JobFilter { sort: SortKey::Name, ascending: true, ..page("x") }, vec!["eval-d", "train-b", "train-a"], 3),
            (JobFilter { sort: SortKey::State, ascending: true, ..page("x") }, vec!["train-b", "eval-d", "train-a"], 3),
            (JobFilter { page: 2, page_size: 2, ..page("x") }, vec!["train-a"], 3),
        ];
        for (filter, expected, total) in cases {
            let description = format!("{filter:?}");
            let (rows, got_total) = store.list_jobs(filter).await.unwrap();
            assert_eq!(ids(rows), expected, "{description}");
            assert_eq!(got_total, total, "{description}");
        }
    }

    #[tokio::test]
    async fn repeated_events_are_counted_not_duplicated() {
        let (_dir, store) = temp_store();
        let event = |reason: &str, time: i64| EventRow {
            job_id: "j".into(),
            kind: EventType::Normal,
            reason: reason.into(),
            message: "m".into(),
            regarding_kind: "Job".into(),
            regarding_name: "j".into(),
            time,
        };
        store.record_event(event("Queued", 1)).await.unwrap();
        store.record_event(event("Queued", 2)).await.unwrap();
        store.record_event(event("Started", 3)).await.unwrap();
        let events = store.events_of("j".into()).await.unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!((events[0].reason.as_str(), events[0].count), ("Started", 1));
        assert_eq!((events[1].reason.as_str(), events[1].count, events[1].last_time), ("Queued", 2, 2));
    }

    #[tokio::test]
    async fn finished_replicas_are_final() {
        let (_dir, store) = temp_store();
        let row = |phase: &str, exit: Option<i64>| ReplicaRow {
            job_id: "j".into(),
            phase: jobdeck_api::ReplicaPhase::parse(phase).unwrap(),
            exit_code: exit,
            ..ReplicaRow::default()
        };
        store.upsert_replica(row("running", None)).await.unwrap();
        store.upsert_replica(row("failed", Some(3))).await.unwrap();
        store.upsert_replica(row("running", None)).await.unwrap();
        store.upsert_replica(row("failed", Some(9))).await.unwrap();
        let got = store.replica("j".into(), 0, 0).await.unwrap().unwrap();
        assert_eq!((got.phase.as_str(), got.exit_code), ("failed", Some(3)));
    }

    /// A secret named `TOKEN`.
    fn secret(owner: &str, visibility: &str, value: &str, at: i64) -> SecretRow {
        SecretRow {
            owner: owner.into(),
            name: "TOKEN".into(),
            value: value.into(),
            visibility: Visibility::parse(visibility).expect("a visibility"),
            tags: vec![],
            created_at: at,
            updated_at: at,
        }
    }

    #[tokio::test]
    async fn secrets_resolve_own_first_then_public() {
        let (_dir, store) = temp_store();
        store.put_secrets(vec![secret("alice", "private", "a", 1), secret("bob", "public", "b", 2)]).await.unwrap();
        let resolve = |who: &str| store.resolve_secret(who.into(), "TOKEN".into(), None);
        assert_eq!(resolve("alice").await.unwrap().as_deref(), Some("a"));
        assert_eq!(resolve("carol").await.unwrap().as_deref(), Some("b"));
        store.put_secrets(vec![secret("carol", "private", "c", 3)]).await.unwrap();
        assert_eq!(resolve("carol").await.unwrap().as_deref(), Some("c"));
        assert_eq!(store.secrets_visible_to("alice".into()).await.unwrap().len(), 2);
        assert!(store.delete_secret("alice".into(), "TOKEN".into()).await.unwrap());
        assert!(!store.delete_secret("alice".into(), "TOKEN".into()).await.unwrap());
        assert_eq!(resolve("alice").await.unwrap().as_deref(), Some("b"));
    }

    /// A public name belongs to its first owner: another user's public
    /// secret of that name is refused whole; a pinned reference reads only
    /// its owner's secret, and only while the job's creator may.
    #[tokio::test]
    async fn a_public_secret_name_cannot_be_taken_over() {
        let (_dir, store) = temp_store();
        assert_eq!(store.put_secrets(vec![secret("alice", "public", "a", 1)]).await.unwrap(), None);
        let taken = store.put_secrets(vec![secret("mallory", "public", "m", 2)]).await.unwrap();
        assert_eq!(taken, Some(TakenName { name: "TOKEN".into(), owner: "alice".into() }));
        assert_eq!(store.secrets_visible_to("bob".into()).await.unwrap().len(), 1, "nothing was written");
        // Private under the same name is the owner's own business.
        assert_eq!(store.put_secrets(vec![secret("mallory", "private", "m", 3)]).await.unwrap(), None);
        let pinned = |owner: &str| store.resolve_secret("bob".into(), "TOKEN".into(), Some(owner.into()));
        assert_eq!(pinned("alice").await.unwrap().as_deref(), Some("a"));
        assert_eq!(pinned("mallory").await.unwrap(), None, "another user's private secret");
        // Alice may update her own public secret.
        assert_eq!(store.put_secrets(vec![secret("alice", "public", "a2", 4)]).await.unwrap(), None);
        assert_eq!(pinned("alice").await.unwrap().as_deref(), Some("a2"));
    }
}
