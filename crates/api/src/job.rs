//! The job resource: `LeptonJob {metadata, spec, status}` and its parts.
//!
//! Field names follow `leptonai/api/v2/types/job.py` and `deployment.py`.
//! Fields marked "extension" are Jobdeck's own; Lepton clients ignore them.
//!
//! Every type a client sends is `deny_unknown_fields`: a field that is
//! neither Lepton's nor one of Jobdeck's extensions is rejected with its path
//! instead of being dropped silently (see `docs/contract.md`). Lepton fields
//! Jobdeck does not act on are still modelled, so a `lep` payload reads and
//! writes back unchanged.
//!
//! Every rule is in `validate/`, reached through `validate_job`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::decode::Decode;

/// Who may see a resource. The default is public, as in Lepton: only a job
/// explicitly set to private is restricted to its creator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    /// The whole workspace.
    #[default]
    Public,
    /// The creator only.
    Private,
}

impl Visibility {
    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Visibility::Public => "public",
            Visibility::Private => "private",
        }
    }

    pub fn parse(name: &str) -> Option<Visibility> {
        [Visibility::Public, Visibility::Private].into_iter().find(|v| v.as_str() == name)
    }
}

/// `metadata` of a Lepton resource (`httptypes.MetadataV2`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Metadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Unix time in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified_by: Option<String>,
    /// Lepton: the version of a resource built from a template; stored as
    /// sent, not acted upon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Unix time in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<Visibility>,
    /// Lepton: the replica version of a deployment; server-owned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_version: Option<String>,
    /// Extension: free-form key/value notes (the managed-cluster page's
    /// "Annotations").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// Where a job may be scheduled (`LeptonResourceAffinity`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Affinity {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_providers: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_dedicated_node_groups: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_nodes_in_node_group: Option<Vec<String>>,
}

/// One container port (`ContainerPort`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ContainerPort {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub container_port: i64,
    /// Lepton: how an endpoint exposes the port (`HostPortMapping`,
    /// `IngressProxy`). Jobs have no ingress: stored, not acted upon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expose_strategies: Option<Vec<String>>,
    /// `TCP`, `UDP` or `SCTP` in any case; absent means TCP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Lepton: an ingress routing hint (`http`, `grpc`); stored, not acted
    /// upon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_protocol: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_port: Option<i64>,
    /// Lepton: an endpoint load-balancer switch; stored, not acted upon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_load_balancer: Option<bool>,
}

/// The container of a job (`LeptonContainer`) plus registry extensions.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Container {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<ContainerPort>>,
    /// The command and its arguments; empty means the image's entrypoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// Extension: arguments after the command, or after the image's own
    /// entrypoint when `command` is empty, as Kubernetes' `args` and NVCF's
    /// `containerArgs` are. Only a container runs an image's entrypoint: in
    /// process mode and on Slurm without pyxis they need a command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// Extension: the directory the command starts in, inside the
    /// container (Kubernetes' `workingDir`, dstack's `working_dir`); absent,
    /// the image's own. Only a container has one: a server that runs
    /// processes refuses it (`cd` in the command there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<String>,
    /// Extension: who the command runs as inside the container, as dstack's
    /// `user` and `docker run --user` give it: `name_or_id[:group_name_or_id]`
    /// (`ubuntu`, `1000:1000`); absent, the image's own user. It names a
    /// user of the container's own user namespace (docs/security.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Extension: the image tag when `image` has none; defaults to `latest`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_tag: Option<String>,
    /// Extension: private registry user name; needs `registry_password`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_username: Option<String>,
    /// Extension: private registry password. Write-only: the server never
    /// returns it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(write_only))]
    pub registry_password: Option<String>,
}

/// Where an environment variable's value comes from (`EnvValue`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct EnvValue {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_name_ref: Option<String>,
    /// Jobdeck's extension: whose secret the reference reads. The server
    /// pins it when the job is created (the creator's own secret, else the
    /// one public secret of that name), so a secret made later under the
    /// same name never replaces it; a client may name it to choose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_owner: Option<String>,
}

/// One environment variable (`EnvVar`): a literal value or a secret reference.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct EnvVar {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_from: Option<EnvValue>,
}

/// Options of a storage mount (`MountOptions`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct MountOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_cache_size_mib: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
}

/// One storage mount (`Mount`): `from` a volume, `path` inside it, at
/// `mount_path` in the container.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Mount {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(rename = "from")]
    pub from: String,
    pub mount_path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount_options: Option<MountOptions>,
}

/// Log settings (`LeptonLog`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub save_termination_logs: Option<bool>,
    /// Absent follows the workspace default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_collection: Option<bool>,
}

/// Queue settings (`QueueConfig`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct QueueConfig {
    /// `low-1000` … `high-9000`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub can_be_preempted: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub can_preempt: Option<bool>,
}

/// One way an object-storage data source is attached (`DataSourceAttachment`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct DataSourceAttachment {
    /// `object` or `object.aistore`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attach_with: Option<String>,
    /// `awsProfile` or `mscProfile`.
    pub mode: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_name: Option<String>,
}

/// An object-storage data source attached to a job (`StorageAttachment`).
/// Jobdeck has no data sources: a job that asks for one is rejected.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct StorageAttachment {
    pub data_source_name: String,
    pub attachments: Vec<DataSourceAttachment>,
}

/// Who the container runs as (`LeptonUserSecurityContext`). Jobdeck does not
/// run privileged containers: `privileged: true` is rejected.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct UserSecurityContext {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_specific_user: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub privileged: Option<bool>,
}

/// Metrics settings (`LeptonMetrics`); stored, not acted upon.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Metrics {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_pulling_from_replica: Option<bool>,
}

/// Reserved capacity to run in (`ReservationConfig`). Jobdeck has no
/// reservations: a job naming one is rejected.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ReservationConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_burst_to_other_reservations: Option<bool>,
}

/// When a job may start (`LeptonJobTimeSchedule`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct TimeSchedule {
    /// Unix time in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<i64>,
}

/// Workers per NVLink domain (`LeptonJobSegmentConfig`); a placement hint
/// Jobdeck stores but does not act upon.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SegmentConfig {
    pub count_per_segment: i64,
}

/// The desired state of a job (`LeptonJobUserSpec`) plus extensions.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_shape: Option<String>,
    /// Extension (dstack's `resources`): what one replica needs, for a job
    /// that names no shape; the server writes the smallest shape that meets
    /// it into `resource_shape` when it creates the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<crate::ResourceRequirements>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    #[serde(default)]
    pub container: Container,
    /// Shared memory in MiB; absent uses the shape's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_memory_size: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<i64>,
    /// Extension: run only these completion indexes of `completions`, each
    /// replica with its own index as `JOB_COMPLETION_INDEX` (and
    /// `JOB_COMPLETIONS` still `completions`), as a rerun of the failed
    /// indexes of a job does (`POST /jobs/{id}/rerun?only=failed`). Absent:
    /// every index. Not for a distributed job, whose workers run together.
    ///
    /// Not in the console's build of this type (wasm32): every page reads
    /// jobs, only the overview shows this, and reads it on its own; a clone
    /// made in the console runs every index.
    #[cfg(not(target_arch = "wasm32"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_indexes: Option<Vec<i64>>,
    /// Retries of one failed replica; default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_failure_retry: Option<i64>,
    /// Restarts of the whole job after it failed; default 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_job_failure_retry: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envs: Option<Vec<EnvVar>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mounts: Option<Vec<Mount>>,
    /// Lepton: object-storage data sources. Jobdeck has none, so a job with
    /// any is rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_attachments: Option<Vec<StorageAttachment>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_secrets: Option<Vec<String>>,
    /// The archive time in seconds; default 3 days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intra_job_communication: Option<bool>,
    /// Lepton: who the container runs as; `privileged` is rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_security_context: Option<UserSecurityContext>,
    /// Lepton: metrics settings; stored, not acted upon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<LogConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_config: Option<QueueConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<bool>,
    /// Lepton: reserved capacity; a reservation id is rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservation_config: Option<ReservationConfig>,
    /// Lepton: the earliest start time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_schedule: Option<TimeSchedule>,
    /// Lepton: workers per NVLink domain; stored, not acted upon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment_config: Option<SegmentConfig>,
    /// Extension: the number of workers; more than one turns on intra-job
    /// communication with completions = parallelism = workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<i64>,
    /// Extension: retries of failed replicas before the job fails
    /// (Kubernetes `backoffLimit`); default 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_limit: Option<i64>,
    /// Extension: seconds the job may run before it is failed with
    /// `DeadlineExceeded`; absent means no deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i64>,
    /// Extension: seconds the job may wait in the queue before it fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_queued_duration_seconds: Option<i64>,
    /// Extension: fail without retry when a program error is detected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_retry_on_program_error: Option<bool>,
    /// Extension (Kubernetes' name; NVCF's `terminationGracePeriodDuration`):
    /// seconds between SIGTERM and SIGKILL when a replica is stopped;
    /// absent means the executor's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<i64>,
    /// Extension (dstack's `retry.duration`): seconds from the job's
    /// creation within which a failed run is restarted (as often as it fails
    /// unless `max_job_failure_retry` bounds it) and a preempted run requeued;
    /// after them, either ends the job. Absent: no window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_window_seconds: Option<i64>,
}

/// Job states, as Lepton names them. The default is where a new job begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum JobState {
    Starting,
    Running,
    Failed,
    Completed,
    Stopped,
    Stopping,
    Deleting,
    Deleted,
    Restarting,
    Archived,
    #[default]
    Queueing,
    Awaiting,
    PendingRetry,
    Terminating,
    #[serde(rename = "UNK", other)]
    Unknown,
}

impl JobState {
    pub const ALL: [JobState; 15] = [
        JobState::Starting,
        JobState::Running,
        JobState::Failed,
        JobState::Completed,
        JobState::Stopped,
        JobState::Stopping,
        JobState::Deleting,
        JobState::Deleted,
        JobState::Restarting,
        JobState::Archived,
        JobState::Queueing,
        JobState::Awaiting,
        JobState::PendingRetry,
        JobState::Terminating,
        JobState::Unknown,
    ];

    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Starting => "Starting",
            JobState::Running => "Running",
            JobState::Failed => "Failed",
            JobState::Completed => "Completed",
            JobState::Stopped => "Stopped",
            JobState::Stopping => "Stopping",
            JobState::Deleting => "Deleting",
            JobState::Deleted => "Deleted",
            JobState::Restarting => "Restarting",
            JobState::Archived => "Archived",
            JobState::Queueing => "Queueing",
            JobState::Awaiting => "Awaiting",
            JobState::PendingRetry => "PendingRetry",
            JobState::Terminating => "Terminating",
            JobState::Unknown => "UNK",
        }
    }

    pub fn parse(name: &str) -> Option<JobState> {
        JobState::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// True once the job has stopped for good: nothing runs and nothing will
    /// run unless someone starts it again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobState::Completed | JobState::Failed | JobState::Stopped | JobState::Deleted | JobState::Archived
        )
    }
}

impl std::fmt::Display for JobState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The observed state of a job (`LeptonJobStatus`). Server-owned: what a
/// client sends here is ignored, so unknown fields (such as Lepton's
/// `job_history`, which Jobdeck does not keep) are tolerated.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<JobState>,
    #[serde(default)]
    pub ready: i64,
    #[serde(default)]
    pub active: i64,
    #[serde(default)]
    pub failed: i64,
    #[serde(default)]
    pub succeeded: i64,
    /// Unix time in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_time: Option<i64>,
    /// Unix time in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<i64>,
    /// Extension: why the job is in its state (`DeadlineExceeded`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Extension: a sentence explaining `reason`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Extension: a running job's GPU utilization now (percent, the mean
    /// over its replicas' GPUs), when its GPUs are sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_utilization: Option<f64>,
    /// Extension: a running job whose GPUs have stayed under 5 % for the
    /// last 10 minutes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gpu_idle: bool,
    /// Jobdeck's extension, in `GET /jobs/{id}` while the job is queued:
    /// its place among the queued jobs that wait for any of its node
    /// groups, in the scheduler's admission order (priority, then
    /// submission); 1 is admitted first once it fits. Jobs the caller may
    /// not see are counted too (never named). A job ahead that does not fit
    /// does not hold it back, and jobs held by their creator's quota are
    /// not counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_position: Option<i64>,
    /// Jobdeck's extension, in `GET /jobs/{id}` while the job is queued:
    /// what would let it start now (a smaller shape, fewer replicas at
    /// once, another node group), each a change of its spec and the reason,
    /// and what holds it that no change of its own helps (jobs of higher
    /// priority ahead, its creator's quota).
    ///
    /// This field and the next are not in the console's build of this type
    /// (wasm32): every page holds, clones and compares jobs, only the
    /// overview shows these, and their code there was 0.5 KB of every job
    /// page's first load; the overview reads them from the answer on its
    /// own (`JobJson::start_suggestions`).
    #[cfg(not(target_arch = "wasm32"))]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub start_suggestions: Vec<crate::StartSuggestion>,
    /// Jobdeck's extension, in `GET /jobs/{id}` while the job is queued and
    /// there is a basis for it: when it may start (the admission order
    /// replayed forward over the running jobs' deadlines).
    #[cfg(not(target_arch = "wasm32"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_estimate: Option<crate::StartEstimate>,
    /// Jobdeck's extension: the job whose failed indexes this one reruns
    /// (`POST /jobs/{id}/rerun?only=failed`). Like the next two, not in
    /// the console's build of this type: only the overview shows them, and
    /// reads them from the answer on its own.
    #[cfg(not(target_arch = "wasm32"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_of: Option<String>,
    /// Jobdeck's extension, in `GET /jobs/{id}`: the reruns of this job's
    /// failed indexes the caller may see, oldest first.
    #[cfg(not(target_arch = "wasm32"))]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reruns: Vec<String>,
    /// Jobdeck's extension, in `GET /jobs/{id}` of a failed or stopped job
    /// that runs more than one index, one by one (not a distributed job):
    /// the completion indexes that did not succeed in its last run, which a
    /// rerun of its failed indexes runs.
    #[cfg(not(target_arch = "wasm32"))]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rerun_indexes: Vec<i64>,
    /// Jobdeck's extension, in `GET /jobs/{id}` of a finished job: when its
    /// logs, metrics and run directory go (or went), and which rule says so
    /// (docs/api.md, "Log retention"). Not in the console's build: its
    /// events tab says when they went.
    #[cfg(not(target_arch = "wasm32"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_retention: Option<crate::LogRetention>,
}

/// A job: `metadata` + `spec` + `status` (`LeptonJob`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct LeptonJob {
    pub metadata: Metadata,
    #[serde(default)]
    pub spec: JobSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<JobStatus>,
}

impl LeptonJob {
    /// The job's id, falling back to its name.
    pub fn id(&self) -> &str {
        self.metadata.id.as_deref().or(self.metadata.name.as_deref()).unwrap_or("")
    }

    pub fn state(&self) -> Option<JobState> {
        self.status.as_ref().and_then(|s| s.state)
    }
}

/// The body of `GET /jobs`: Lepton clients read `jobs`; the rest is paging.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobList {
    pub jobs: Vec<LeptonJob>,
    /// Extension: how many jobs match the filters over all pages.
    #[serde(default)]
    pub total: i64,
    /// Extension: the listing filters by name or label and `total` stopped
    /// counting there: at least that many match.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub total_capped: bool,
    #[serde(default)]
    pub page: i64,
    #[serde(default)]
    pub page_size: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job with every struct of it present once, and no map (a map takes
    /// any key).
    fn every_struct_of_a_job() -> serde_json::Value {
        serde_json::json!({
            "metadata": {"name": "a"},
            "spec": {
                "affinity": {},
                "container": {"ports": [{"container_port": 80}]},
                "envs": [{"name": "A", "value_from": {}}],
                "mounts": [{"from": "x", "mount_path": "/m", "mount_options": {}}],
                "storage_attachments": [{"data_source_name": "d", "attachments": [{"mode": "ro"}]}],
                "user_security_context": {},
                "metrics": {},
                "log": {},
                "queue_config": {},
                "reservation_config": {},
                "time_schedule": {},
                "segment_config": {"count_per_segment": 1}
            },
            "status": {}
        })
    }

    /// The JSON pointers of every object in `value`.
    fn object_paths(value: &serde_json::Value, at: String, paths: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(fields) => {
                paths.push(at.clone());
                for (key, inner) in fields {
                    object_paths(inner, format!("{at}/{key}"), paths);
                }
            }
            serde_json::Value::Array(items) => {
                for (i, inner) in items.iter().enumerate() {
                    object_paths(inner, format!("{at}/{i}"), paths);
                }
            }
            _ => {}
        }
    }

    /// serde and the console's reader (`Decode`, reading a person's JSON)
    /// agree: the status takes fields it does not name, nothing else does.
    #[test]
    fn only_the_status_tolerates_unknown_fields() {
        let job = every_struct_of_a_job();
        serde_json::from_value::<LeptonJob>(job.clone()).unwrap();
        let mut paths = Vec::new();
        object_paths(&job, String::new(), &mut paths);
        assert_eq!(paths.len(), 20, "{paths:?}");
        for path in paths {
            let mut changed = job.clone();
            changed.pointer_mut(&path).unwrap().as_object_mut().unwrap().insert("not_a_field".into(), 1.into());
            let decoded = <LeptonJob as crate::Decode>::decode(&changed, true).is_ok();
            let accepted = serde_json::from_value::<LeptonJob>(changed).is_ok();
            assert_eq!(accepted, path == "/status", "an unknown field at {path:?}");
            assert_eq!(decoded, accepted, "Decode at {path:?}");
        }
    }

    #[test]
    fn unknown_state_names_map_to_unknown() {
        let s: JobState = serde_json::from_str("\"Exploding\"").unwrap();
        assert_eq!(s, JobState::Unknown);
        assert_eq!(serde_json::to_string(&JobState::Unknown).unwrap(), "\"UNK\"");
    }

    #[test]
    fn state_names_round_trip() {
        for s in JobState::ALL {
            assert_eq!(JobState::parse(s.as_str()), Some(s));
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(serde_json::from_str::<JobState>(&json).unwrap(), s);
        }
    }

    #[test]
    fn minimal_lepton_job_parses() {
        let job: LeptonJob = serde_json::from_str(
            r#"{"metadata":{"id":"hello","name":"hello"},
                "spec":{"resource_shape":"cpu.small","container":{"command":["/bin/bash","-c","echo hi"]}}}"#,
        )
        .unwrap();
        assert_eq!(job.id(), "hello");
        assert_eq!(
            job.spec.container.command.as_deref(),
            Some(&["/bin/bash".to_string(), "-c".into(), "echo hi".into()][..])
        );
    }
}
