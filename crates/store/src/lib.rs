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

mod audit;
pub mod changes;
mod error;
mod events;
mod image_pull_secrets;
mod invitations;
pub mod logs;
mod names;
mod notifications;
mod removal;
pub mod sealing;
pub use audit::{AuditFilter, AuditRecord, AuditRow};
pub use invitations::{Claimant, NewInvitation, Redemption};
pub use job_list::{JobPage, TOTAL_COUNT_CAP};
pub use jobs::ACTIVE_STATES;
pub use metrics::MetricSample;
pub use notifications::{Attempted, ConditionMet, DeliveryRow, NewWebhook, NotificationRow, WebhookRow, WebhookTarget};
pub use removal::{NamedJob, RemovalPreview, Removed, SecretUse};
pub use retention::LogsRemoved;
pub use secrets::TakenName;
pub use templates::{SavedTemplate, TemplateRow};
pub use tokens::{NewToken, TokenOwner};
pub use usage::{Charge, Holding, QuotaRow, UsageNowRow, DAY_MS};
pub use users::{NewIdentityUser, RoleChanged, UserSummary};
mod job_list;
mod job_row;
mod jobs;
mod metrics;
mod migrations;
mod replicas;
mod retention;
mod secrets;
pub mod series;
mod templates;
mod tokens;
mod usage;
mod users;

pub use self::error::{StoreError, StoreResult};
pub use self::job_row::{JobRow, JobRuntime, KeptLogs, Placement, Slot, StopReason, StoredMetadata, UnreadableJob};
use self::migrations::migrate;

/// Milliseconds since the Unix epoch: the time every stored stamp is in.
pub fn now_millis() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

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
    /// What each write changed, for the event stream.
    changes: changes::ChangeFeed,
}

/// A user as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRow {
    pub id: i64,
    pub name: String,
    pub role: jobdeck_api::Role,
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
    /// The GPUs of the attempt's slot (the column holds them as `0,1`).
    pub gpu_ids: Vec<u32>,
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
    /// Label conditions (a selector's); all must hold.
    pub labels: Vec<jobdeck_api::LabelCondition>,
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

/// The pages each reader keeps in memory, in KiB (SQLite's default is
/// 2 MiB): a listing at a million jobs walks an index and looks up to a
/// thousand jobs up in another, each a page of its own; with the default
/// the readers, taken in turn, read most of them from the file again at
/// every request (docs/measurements.md, "The list at a million jobs").
const READER_CACHE_KIB: i64 = 16 * 1024;

fn open_reader(path: &Path) -> rusqlite::Result<Connection> {
    let conn = open_connection(path)?;
    conn.pragma_update(None, "cache_size", -READER_CACHE_KIB)?;
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

impl Store {
    /// Opens (creating if needed) the database at `path` and migrates it.
    pub fn open(path: &Path) -> StoreResult<Store> {
        let opening = |source| StoreError::Open { path: path.to_path_buf(), source };
        let mut writer = open_connection(path).map_err(opening)?;
        // The database holds secret values: only the server's user may read it.
        restrict_to_owner(path);
        migrate(&mut writer).map_err(|source| StoreError::Migrate { path: path.to_path_buf(), source })?;
        let readers = (0..READERS)
            .map(|_| open_reader(path).map(Mutex::new))
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(opening)?;
        Ok(Store {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                writer: Mutex::new(writer),
                readers,
                next_reader: AtomicUsize::new(0),
                keys: std::sync::OnceLock::new(),
                changes: changes::ChangeFeed::default(),
            }),
        })
    }

    /// What the store's writes changed, newest last (the event stream's source).
    pub fn changes(&self) -> &changes::ChangeFeed {
        &self.inner.changes
    }

    /// Tells the feed what a committed write changed.
    fn publish(&self, changed: impl IntoIterator<Item = changes::Change>) {
        self.inner.changes.publish(changed);
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
    pub(crate) async fn read<T, F>(&self, f: F) -> StoreResult<T>
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
    pub(crate) async fn write<T, F>(&self, f: F) -> StoreResult<T>
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
mod job_list_tests;
#[cfg(test)]
mod notification_conditions_tests;
#[cfg(test)]
mod notifications_tests;
#[cfg(test)]
mod retention_tests;
#[cfg(test)]
pub(crate) mod tests;
