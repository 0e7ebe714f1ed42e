//! Executors run the replicas of admitted jobs; the scheduler drives them.
//!
//! The scheduler decides *whether* and *where* a job runs (queueing,
//! priorities, capacity per node group, preemption, deadlines, stop/start,
//! job-level retries, archiving). An executor decides *how*: it runs one
//! *run* of a job — its indexed replicas with their completions, parallelism
//! and per-replica retries, exactly like a Kubernetes `batch/v1` Job in
//! Indexed completion mode — and reports what happens asynchronously through
//! the [`ExecutorHost`] it was built with:
//!
//! * [`ExecutorHost::replica`] — the state of one replica attempt (pending
//!   with a readiness issue, running, succeeded, failed with exit code,
//!   signal and reason, node, times). Persisted before the call returns, so
//!   an executor can rely on it across a restart of the server.
//! * [`ExecutorHost::event`] — an event about the job or one of its replicas.
//! * [`ExecutorHost::outcome`] — the end of a run: succeeded, failed (with a
//!   reason), or stopped because the scheduler asked.
//! * [`ExecutorHost::logs`] — the log store; an executor that does not write
//!   log files itself (Kubernetes) copies the pod logs into it so every log is
//!   served, searched and kept the same way.
//!
//! The implementations live in the `jobdeck-executors` crate: processes or
//! containers on this machine, Slurm and Kubernetes.

pub use jobdeck_api::{parse_replica_id, replica_id, EventType};
pub use jobdeck_store::{Placement, Slot, StopReason};

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use jobdeck_api::{EndReason, FieldErrors, JobRequirements, JobSpec, ReadinessIssue, ReplicaPhase};
use tokio::sync::mpsc;

use crate::config::ExecutorKind;
use jobdeck_store::logs::LogStore;
use jobdeck_store::{EventRow, ReplicaRow, Store, StoreError, StoreResult};

/// A boxed future, so the trait stays object-safe (`Arc<dyn Executor>`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why an executor could not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum ExecutorError {
    /// The executor's own account of what went wrong (a command that
    /// failed, a directory that cannot be removed), already in words.
    #[error("{0}")]
    Failed(String),
    #[error("the executor cannot read or write the store")]
    Store(#[from] StoreError),
}

/// Registry credentials from a stored image pull secret the job names in
/// `spec.image_pull_secrets`. Never log one: it holds a password.
#[derive(Clone, PartialEq, Eq)]
pub struct PullCredential {
    /// The image pull secret's name.
    pub name: String,
    /// The registry as the user wrote it (`https://nvcr.io`).
    pub registry_server: String,
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for PullCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PullCredential")
            .field("name", &self.name)
            .field("registry_server", &self.registry_server)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

impl PullCredential {
    /// The registry host these credentials are for: the server without a
    /// scheme, path or trailing slash, Docker Hub's aliases as `docker.io`,
    /// so it compares with the host of an image reference.
    pub fn registry_host(&self) -> String {
        let server = self.registry_server.trim();
        let server = server.split_once("://").map_or(server, |(_, rest)| rest);
        let host = server.split('/').next().unwrap_or("").to_ascii_lowercase();
        match host.as_str() {
            "index.docker.io" | "registry-1.docker.io" | "registry.hub.docker.com" => "docker.io".into(),
            _ => host,
        }
    }
}

/// Everything an executor needs to run one run of a job. Defaults are already
/// applied: executors never re-derive them.
#[derive(Debug, Clone)]
pub struct JobLaunch {
    pub job_id: String,
    pub job_name: String,
    /// The run number: 0 for the first, one more after each stop/start,
    /// preemption or job-level retry. Reports carry it so late reports of an
    /// earlier run are ignored.
    pub run: i64,
    /// The job's spec as stored (it includes write-only fields such as the
    /// registry password, which the executor may need).
    pub spec: JobSpec,
    /// The spec with the server's defaults applied: the shape, completions,
    /// parallelism, workers, retry limits, shared memory, log collection.
    /// The one resolution of the job every executor works from.
    pub resolved: crate::spec::ResolvedSpec,
    pub placement: Placement,
    /// The job's own environment with secret references resolved, in order.
    /// Secret values live only here and in the replica's process
    /// environment: never log a `JobLaunch`.
    pub env: Vec<(String, String)>,
    /// The first attempt number this run may use; attempt numbers stay
    /// unique per completion index across runs, so replica ids never repeat.
    pub first_attempt: i64,
    /// The rendezvous port for multi-worker jobs.
    pub master_port: u16,
    /// The stored image pull secrets the job names, resolved for its
    /// creator. Names that are not stored are not here: on Kubernetes they
    /// name Secrets of the namespace.
    pub pull_credentials: Vec<PullCredential>,
}

impl JobLaunch {
    /// A run of a job with its resolved settings; the job's environment,
    /// rendezvous port and pull credentials are the caller's to fill in.
    pub fn new(
        job_id: &str,
        job_name: &str,
        run: i64,
        spec: &JobSpec,
        resolved: &crate::spec::ResolvedSpec,
        placement: Placement,
    ) -> JobLaunch {
        JobLaunch {
            job_id: job_id.to_string(),
            job_name: job_name.to_string(),
            run,
            spec: spec.clone(),
            resolved: resolved.clone(),
            placement,
            env: Vec::new(),
            first_attempt: 0,
            master_port: 0,
            pull_credentials: Vec::new(),
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOutcome {
    /// Every completion index succeeded.
    Succeeded,
    /// The run failed; `reason` says why (`BackoffLimitExceeded`,
    /// `ProgramError`, or a cluster's own word).
    Failed {
        reason: EndReason,
        message: String,
        /// Whether the failure was the user program's (no job-level retry
        /// when `disable_retry_on_program_error` is on).
        program_error: bool,
    },
    /// Every replica ended after [`Executor::stop`].
    Stopped,
}

/// The state of one replica attempt, as an executor observed it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaObservation {
    pub job_id: String,
    pub run: i64,
    pub completion_index: i64,
    pub attempt: i64,
    pub phase: ReplicaPhase,
    pub readiness_issue: Option<ReadinessIssue>,
    pub node: Option<String>,
    pub node_group: Option<String>,
    pub gpu_ids: Vec<u32>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Why the attempt ended.
    pub reason: Option<EndReason>,
    pub message: Option<String>,
    /// Unix milliseconds.
    pub start_time: Option<i64>,
    pub end_time: Option<i64>,
    /// Opaque state the executor wants back after a restart (a process id,
    /// a pod uid, …), as JSON text. Never shown to users.
    pub executor_state: Option<String>,
    /// Unix milliseconds: when a pending attempt waiting out its retry
    /// back-off starts.
    pub retry_at: Option<i64>,
    /// What the executor calls this attempt (a container name, a Slurm job
    /// id), shown to users.
    pub executor_id: Option<String>,
}

impl ReplicaObservation {
    /// A new pending attempt.
    pub fn pending(job_id: &str, run: i64, completion_index: i64, attempt: i64) -> Self {
        Self {
            job_id: job_id.to_string(),
            run,
            completion_index,
            attempt,
            phase: ReplicaPhase::Pending,
            readiness_issue: None,
            node: None,
            node_group: None,
            gpu_ids: Vec::new(),
            exit_code: None,
            signal: None,
            reason: None,
            message: None,
            start_time: None,
            end_time: None,
            executor_state: None,
            retry_at: None,
            executor_id: None,
        }
    }
}

impl ReplicaObservation {
    /// The store's row of this observation, recorded at `now` (the store
    /// knows nothing of executors).
    pub fn into_row(self, now: i64) -> ReplicaRow {
        let o = self;
        ReplicaRow {
            job_id: o.job_id,
            completion_index: o.completion_index,
            attempt: o.attempt,
            run: o.run,
            phase: o.phase,
            readiness_reason: o.readiness_issue.as_ref().map(|i| i.reason.clone()),
            readiness_message: o.readiness_issue.map(|i| i.message),
            node: o.node,
            node_group: o.node_group,
            gpu_ids: o.gpu_ids,
            exit_code: o.exit_code.map(i64::from),
            signal: o.signal.map(i64::from),
            reason: o.reason,
            message: o.message,
            created_at: now,
            start_time: o.start_time,
            end_time: o.end_time,
            executor_state: o.executor_state,
            updated_at: now,
            retry_at: o.retry_at,
            executor_id: o.executor_id,
        }
    }
}

/// An event an executor reports; `regarding` names a replica (by replica id)
/// or is `None` for the job itself.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutorEvent {
    pub job_id: String,
    pub kind: EventType,
    pub reason: String,
    pub message: String,
    pub regarding_replica: Option<String>,
}

/// What executors tell the scheduler loop.
#[derive(Debug)]
pub enum HostMessage {
    /// A replica of the job changed; the scheduler refreshes the job's counts
    /// and state.
    ReplicaChanged { job_id: String, run: i64 },
    /// A run ended.
    Outcome { job_id: String, run: i64, outcome: RunOutcome },
}

/// The services the control plane offers executors.
#[derive(Clone)]
pub struct ExecutorHost {
    store: Store,
    logs: LogStore,
    tx: mpsc::UnboundedSender<HostMessage>,
    metrics_now: crate::metrics::Now,
}

impl ExecutorHost {
    pub fn new(store: Store, logs: LogStore, tx: mpsc::UnboundedSender<HostMessage>) -> Self {
        Self { store, logs, tx, metrics_now: crate::metrics::Now::default() }
    }

    /// Shares the newest samples with the API (the list's GPU figure).
    pub fn with_metrics(mut self, now: crate::metrics::Now) -> Self {
        self.metrics_now = now;
        self
    }

    /// Stores a tick of resource samples (`crate::metrics`).
    pub async fn metrics(&self, samples: Vec<jobdeck_store::MetricSample>) -> StoreResult<()> {
        self.metrics_now.record(&samples);
        self.store.append_metrics(samples).await
    }

    /// Records the state of a replica attempt (insert or update) and tells
    /// the scheduler. Returns once it is durable.
    pub async fn replica(&self, observation: ReplicaObservation) -> StoreResult<()> {
        let job_id = observation.job_id.clone();
        let run = observation.run;
        self.store.upsert_replica(observation.into_row(jobdeck_store::now_millis())).await?;
        let _ = self.tx.send(HostMessage::ReplicaChanged { job_id, run });
        Ok(())
    }

    /// Records an event about job `job_id`, or its replica `replica`, for a
    /// run controller. An event that cannot be written is logged and left:
    /// events are the job's history, and the run goes on without one.
    pub async fn note(&self, job_id: &str, kind: EventType, reason: &str, message: String, replica: Option<String>) {
        let event = ExecutorEvent {
            job_id: job_id.to_string(),
            kind,
            reason: reason.into(),
            message,
            regarding_replica: replica,
        };
        if let Err(error) = self.event(event).await {
            tracing::warn!(job = %job_id, reason, error = %crate::error_chain(&error), "cannot record an event");
        }
    }

    /// Records that `replica` (attempt `attempt`) started on `node`; `how`
    /// adds what the executor knows of it (its Slurm job). One wording for
    /// every executor.
    pub async fn note_replica_started(&self, job_id: &str, replica: &str, attempt: i64, node: &str, how: &str) {
        let message = format!("replica {replica} (attempt {attempt}) started on node {node}{how}");
        self.note(job_id, EventType::Normal, "Started", message, Some(replica.to_string())).await;
    }

    /// Records that `replica` succeeded.
    pub async fn note_replica_succeeded(&self, job_id: &str, replica: &str) {
        let message = format!("replica {replica} succeeded");
        self.note(job_id, EventType::Normal, "Succeeded", message, Some(replica.to_string())).await;
    }

    /// Records that `replica` ended without success, for `reason`.
    pub async fn note_replica_failed(&self, job_id: &str, replica: &str, reason: &str, message: &str) {
        let message = format!("replica {replica}: {message}");
        self.note(job_id, EventType::Warning, reason, message, Some(replica.to_string())).await;
    }

    /// Replaces the executor's state of an attempt, also once it ended
    /// (`Store::set_executor_state`).
    pub async fn executor_state(
        &self,
        job_id: &str,
        completion_index: i64,
        attempt: i64,
        state: String,
    ) -> StoreResult<()> {
        self.store.set_executor_state(job_id.to_string(), completion_index, attempt, state).await
    }

    /// Records an event.
    pub async fn event(&self, event: ExecutorEvent) -> StoreResult<()> {
        let regarding = match &event.regarding_replica {
            Some(replica) => ("Replica".to_string(), replica.clone()),
            None => ("Job".to_string(), event.job_id.clone()),
        };
        self.store
            .record_event(EventRow {
                job_id: event.job_id,
                kind: event.kind,
                reason: event.reason,
                message: event.message,
                regarding_kind: regarding.0,
                regarding_name: regarding.1,
                time: jobdeck_store::now_millis(),
            })
            .await
    }

    /// Reports the end of a run.
    pub fn outcome(&self, job_id: &str, run: i64, outcome: RunOutcome) {
        self.metrics_now.forget(job_id);
        let _ = self.tx.send(HostMessage::Outcome { job_id: job_id.to_string(), run, outcome });
    }

    /// Every recorded attempt of a job, oldest first.
    pub async fn attempts(&self, job_id: &str) -> StoreResult<Vec<ReplicaRow>> {
        self.store.replicas_of(job_id.to_string()).await
    }

    pub fn logs(&self) -> &LogStore {
        &self.logs
    }

    /// The job's metadata as stored (id, name, creator, labels and
    /// annotations), for executors that carry it onto what they create;
    /// `None` once the job is gone.
    pub async fn job_metadata(&self, job_id: &str) -> Result<Option<jobdeck_api::Metadata>, ExecutorError> {
        let Some(row) = self.store.job(job_id.to_string()).await? else {
            return Ok(None);
        };
        Ok(Some(jobdeck_api::Metadata {
            id: Some(row.id),
            name: Some(row.name),
            created_by: Some(row.created_by),
            labels: row.metadata.labels,
            annotations: row.metadata.annotations,
            ..jobdeck_api::Metadata::default()
        }))
    }
}

/// Runs the replicas of admitted jobs. See the module documentation.
pub trait Executor: Send + Sync + 'static {
    fn kind(&self) -> ExecutorKind;

    /// What this executor needs of every job (a command, an image, known
    /// volumes). The contract checks it (`validate_job_in`), on the server
    /// and, through `GET /workspace`, in the console.
    fn requirements(&self) -> JobRequirements {
        JobRequirements::default()
    }

    /// Whether this executor can run a job's containers privileged, where
    /// the config opens a node group to it (`privileged_roles`).
    fn runs_privileged_containers(&self) -> bool {
        false
    }

    /// Image pull secrets a job may name that are not stored in Jobdeck:
    /// on Kubernetes, the namespace's Secrets the config allows.
    fn cluster_pull_secrets(&self) -> Vec<String> {
        Vec::new()
    }

    /// Problems that make a job impossible to run on this executor, by field
    /// path (for example an empty command in process mode). Checked when a
    /// job is created, next to the contract's own rules.
    fn check_spec(&self, spec: &JobSpec) -> FieldErrors {
        let _ = spec;
        FieldErrors::new()
    }

    /// Sentences about what this executor enforces on this machine (memory
    /// limits, container engine, …), shown at start-up and in events.
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }

    /// A sentence saying that jobs run without isolation from the server's
    /// own user, when they do here; the console shows it on every page
    /// (docs/security.md, "Unisolated is never silent").
    fn isolation_warning(&self) -> Option<String> {
        None
    }

    /// How replicas run, for executors with modes: the local executor's
    /// `process` or `container`.
    fn mode(&self) -> Option<String> {
        None
    }

    /// The container engine replicas run with, when one is used here.
    fn engine(&self) -> Option<String> {
        None
    }

    /// Starts a run. Must return promptly; everything after the start is
    /// reported through the host, ending with exactly one
    /// [`ExecutorHost::outcome`] for `(job_id, run)`. Starting a run that is
    /// already running does nothing.
    fn start(&self, launch: JobLaunch) -> BoxFuture<'_, Result<(), ExecutorError>>;

    /// Stops a run: no new attempt starts; every running replica gets SIGTERM
    /// (or its pod is deleted), then SIGKILL after the grace period; each
    /// ended replica is reported with `reason` and the run's outcome is
    /// [`RunOutcome::Stopped`]. Stopping a run the executor does not know
    /// reports `Stopped` at once.
    fn stop(&self, job_id: &str, run: i64, reason: StopReason) -> BoxFuture<'_, Result<(), ExecutorError>>;

    /// Hands a running run the job's environment anew (its secret
    /// references were replaced): attempts that start from now on get
    /// `env`; those running keep theirs. `false` when the executor does not
    /// drive that run or cannot hand values to one that is going; the next
    /// run then resolves the secrets again, as every run does.
    fn replace_env(&self, job_id: &str, run: i64, env: Vec<(String, String)>) -> bool {
        let _ = (job_id, run, env);
        false
    }

    /// Called once at start-up with every run the store says was started and
    /// has not ended: re-attach to what still runs, report what ended while
    /// the server was down (with its real exit status), and carry on. Never
    /// starts an attempt that may still be running.
    fn recover(&self, runs: Vec<JobLaunch>) -> BoxFuture<'_, Result<(), ExecutorError>>;

    /// Frees what the executor keeps for a job (working directories,
    /// containers, cluster objects) once it is deleted or its logs are
    /// removed (`scheduler/log_removal.rs`); the log store is the
    /// scheduler's business.
    fn forget(&self, job_id: &str) -> BoxFuture<'_, Result<(), ExecutorError>>;
}

/// Labels and annotations an executor may attach to what it creates.
pub type StringMap = BTreeMap<String, String>;
