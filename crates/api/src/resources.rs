//! The other resources of the job API: shapes, node groups, replicas, events,
//! failure analysis and secrets.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::decode::Decode;

use crate::{Metadata, Visibility};

/// What a resource shape provides (`ShapeSpec`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ShapeSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Lepton: the kinds of workload that may use the shape (`deployment`,
    /// `job`, `pod`); programs such as the TAO SDK list only shapes usable
    /// for `deployment`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listable_in: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_in_mb: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ephemeral_storage_in_gb: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accelerator_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accelerator_num: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accelerator_memory_in_mb: Option<i64>,
    /// Extension: the GPU's CUDA compute capability, `major.minor` (`9.0`),
    /// which a job's requirements may ask a minimum of (dstack's
    /// `compute_capability`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accelerator_compute_capability: Option<String>,
    /// Extension: the shared-memory default in MiB for this shape, from the
    /// memory table of the configuration page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_shared_memory_in_mb: Option<i64>,
}

/// A resource shape (`Shape`); its id is `metadata.id`, such as `cpu.small`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Shape {
    pub metadata: Metadata,
    pub spec: ShapeSpec,
}

/// Capacity or usage of a node group.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ResourceAmounts {
    pub cpu: f64,
    pub memory_in_mb: i64,
    pub gpu: i64,
}

/// A node of a node group.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeInfo {
    pub name: String,
    #[serde(default)]
    pub capacity: ResourceAmounts,
}

/// What a node group declares (`DedicatedNodeGroupSpec`, extended).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeGroupSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_product: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_nodes: Option<i64>,
    /// Extension: the group's nodes and what each provides.
    #[serde(default)]
    pub nodes: Vec<NodeInfo>,
    /// Extension: the sum over the nodes.
    #[serde(default)]
    pub capacity: ResourceAmounts,
    /// Lepton: the volumes a job in this group may mount, by name (a mount
    /// names one as `node-nfs:<name>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volumes: Option<Vec<NodeGroupVolume>>,
}

/// A volume of a node group (Lepton's `Volume`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeGroupVolume {
    pub name: String,
    /// Lepton's volume kind: `nfs` for a shared directory.
    pub from: String,
    /// Lepton requires it; Jobdeck does not track sizes (0).
    #[serde(default)]
    pub size_in_gb: i64,
}

/// One path prefix of a volume and who may mount it (Lepton's
/// `/storage-permission/{volume}`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct StoragePermission {
    pub path_prefix: String,
    pub allowed_users: Vec<String>,
    pub nodegroup_id: String,
}

/// What a node group has in use (`DedicatedNodeGroupStatus`, extended).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeGroupStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_nodes: Option<i64>,
    /// Lepton: whether queue priorities apply in this group. `lep job create
    /// --queue-priority` refuses a group without it; Jobdeck queues every group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quota_enabled: Option<bool>,
    /// Extension: resources held by running replicas.
    #[serde(default)]
    pub in_use: ResourceAmounts,
    /// Extension: jobs waiting for capacity in this group.
    #[serde(default)]
    pub queued_jobs: i64,
}

/// A node group (`DedicatedNodeGroup`); its id is `metadata.id`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeGroup {
    pub metadata: Metadata,
    pub spec: NodeGroupSpec,
    pub status: NodeGroupStatus,
}

/// A node as `GET /dedicated-node-groups/{id}/nodes` lists it (Lepton's
/// `Node`). `lep job create --node-id` reads this list to check the ids it is
/// given, and `lep node list` sums it into its capacity table.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Node {
    /// `id` and `name` are both the node's name, which is what a job's
    /// `spec.affinity.allowed_nodes_in_node_group` names.
    pub metadata: Metadata,
    pub spec: NodeSpec,
    pub status: NodeStatus,
}

/// What a node is and holds (`NodeSpec`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeSpec {
    /// The node group's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedicated_node_group: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    #[serde(default)]
    pub resource: NodeResource,
    /// Lepton requires the field; a Jobdeck node always takes work.
    #[serde(default)]
    pub unschedulable: bool,
}

/// A node's capacity (`total`) and what admitted jobs hold of it
/// (`allocated`), in Lepton's units: CPUs, MiB of memory, GPUs.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeResource {
    #[serde(default)]
    pub cpu: NodeAmount<f64>,
    #[serde(default)]
    pub memory: NodeAmount<i64>,
    /// Only on nodes with GPUs, as Lepton leaves it out on CPU nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<NodeGpu>,
}

/// One resource of a node: what is allocated of the total.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeAmount<T> {
    pub allocated: T,
    pub total: T,
}

/// A node's GPUs (`NodeResourceGPU`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeGpu {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product: Option<String>,
    pub allocated: f64,
    pub total: f64,
}

/// A node's condition and what runs on it (`NodeStatus`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeStatus {
    /// Conditions; `Ready` for every Jobdeck node (Lepton also has
    /// `NotReady`, `Unhealthy`, …).
    #[serde(default)]
    pub status: Vec<String>,
    /// The running replicas on the node that the caller may see.
    #[serde(default)]
    pub workloads: Vec<NodeWorkload>,
}

/// A replica running on a node (`NodeResourceWorkload`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeWorkload {
    /// Always `job` here.
    #[serde(rename = "type")]
    pub kind: String,
    /// The job's name.
    pub name: String,
    /// The job's id.
    pub id: String,
    pub replica_id: String,
    /// The workspace's id.
    pub workspace: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<f64>,
    /// MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_count: Option<f64>,
}

/// Why a replica is not running yet (`ReplicaReadinessIssue`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReadinessIssue {
    /// `InProgress`, `NoCapacity`, `ConfigError`, `Queueing`, …
    pub reason: String,
    pub message: String,
}

/// Replica phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum ReplicaPhase {
    #[default]
    Pending,
    Running,
    Succeeded,
    Failed,
}

impl ReplicaPhase {
    pub const ALL: [ReplicaPhase; 4] =
        [ReplicaPhase::Pending, ReplicaPhase::Running, ReplicaPhase::Succeeded, ReplicaPhase::Failed];

    /// The wire name (`pending`, …), as serde writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            ReplicaPhase::Pending => "pending",
            ReplicaPhase::Running => "running",
            ReplicaPhase::Succeeded => "succeeded",
            ReplicaPhase::Failed => "failed",
        }
    }

    pub fn parse(name: &str) -> Option<ReplicaPhase> {
        ReplicaPhase::ALL.into_iter().find(|p| p.as_str() == name)
    }

    /// Whether the attempt is over.
    pub fn is_finished(self) -> bool {
        matches!(self, ReplicaPhase::Succeeded | ReplicaPhase::Failed)
    }
}

/// The node a replica runs on (`Node`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReplicaNode {
    pub name: String,
    pub id: String,
    /// Extension: the node group of the node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_group_id: Option<String>,
}

/// The observed state of one attempt of one replica (`ReplicaStatus`,
/// extended with everything the replicas tab shows).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReplicaStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_ip: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<ReplicaNode>,
    /// Extension: the replica's completion index, 0..completions-1.
    pub completion_index: i64,
    /// Extension: 0 for the first attempt, then one more per retry.
    pub attempt: i64,
    /// Extension.
    pub phase: ReplicaPhase,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readiness_issue: Option<ReadinessIssue>,
    /// Extension: the exit code once the process ended on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Extension: the signal that ended the process, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Extension: why the attempt ended (`Completed`, `Error`, `OOMKilled`,
    /// `DeadlineExceeded`, `Preempted`, `Stopped`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Extension: Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<i64>,
    /// Extension: Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_time: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_in_mb: Option<i64>,
    /// Extension: Unix milliseconds; a pending attempt waiting out its retry
    /// back-off starts then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<i64>,
    /// Extension: what the executor calls this attempt (a container name, a
    /// Slurm job id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor_id: Option<String>,
}

/// One replica attempt (`Replica`): `id` and `metadata.id` name it for the
/// log endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Replica {
    pub metadata: Metadata,
    pub id: String,
    pub status: ReplicaStatus,
}

/// What an event is about (a Kubernetes `ObjectReference` in Lepton).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EventSubject {
    pub kind: String,
    pub name: String,
}

/// An event's type, as Kubernetes events have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum EventType {
    #[default]
    Normal,
    Warning,
}

impl EventType {
    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }

    pub fn parse(name: &str) -> Option<EventType> {
        [EventType::Normal, EventType::Warning].into_iter().find(|t| t.as_str() == name)
    }
}

/// One event (`LeptonEvent`, plus `message`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobEvent {
    #[serde(rename = "type")]
    pub kind: EventType,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regarding: Option<EventSubject>,
    pub count: i64,
    /// RFC 3339.
    pub last_observed_time: String,
    #[serde(default)]
    pub message: String,
}

/// A node-level event behind a failure (OOM kill, eviction, preemption).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NodeFailureEvent {
    /// `OOM`, `Evicted`, `Preempted`, …
    pub node_event_name: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_id: Option<String>,
    /// Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<i64>,
    /// Extension: the node the replica ran on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Extension: for an OOM kill, the process the kernel killed, as
    /// `name (pid N)`, when the kernel log names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub victim: Option<String>,
}

/// One log line of an excerpt.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ExcerptLine {
    /// 1-based line number in the replica's log.
    pub line: i64,
    pub text: String,
}

/// The log lines around the first error of one failed replica.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogStream {
    pub replica_id: String,
    pub attempt: i64,
    /// The line the error was found on (1-based).
    pub error_line: i64,
    /// What was found: `Python traceback`, `CUDA out of memory`, …
    pub pattern: String,
    pub lines: Vec<ExcerptLine>,
}

/// When each failed replica failed, for the "who failed first" view.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReplicaFailure {
    pub replica_id: String,
    pub completion_index: i64,
    pub attempt: i64,
    /// Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Extension: Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<i64>,
    /// Extension: this attempt's own error class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub err_class: Option<String>,
    /// Extension: how the attempt ended, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One attempt of the analysed run on the failure view's time axis
/// (extension).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReplicaSpan {
    pub replica_id: String,
    pub completion_index: i64,
    pub attempt: i64,
    pub phase: ReplicaPhase,
    /// Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<i64>,
    /// Unix milliseconds; absent while the attempt runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The body of `GET /jobs/{id}/failure-analysis`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FailureAnalysis {
    /// `ERR_PROGRAM`, `ERR_CUDA_OOM`, `ERR_OOM`, `ERR_NCCL`,
    /// `ERR_IMAGE_PULL`, `ERR_DEADLINE`, `ERR_QUEUE_TIMEOUT`, `ERR_INFRA`,
    /// `ERR_CONFIG`, or empty when the job has not failed.
    pub err_class: String,
    pub suggestion: String,
    #[serde(default)]
    pub job_failure_by_node_event: Vec<NodeFailureEvent>,
    #[serde(default)]
    pub log_streams: Vec<LogStream>,
    /// Extension: failed replicas, first failure first.
    #[serde(default)]
    pub failed_replicas: Vec<ReplicaFailure>,
    /// Extension: whether the class is a program error (drives "disable retry
    /// on program error") rather than an infrastructure one.
    #[serde(default)]
    pub program_error: bool,
    /// Extension: what happened, in one sentence ("Replica 1 ran out of GPU
    /// memory."); empty when the job has not failed.
    #[serde(default)]
    pub summary: String,
    /// Extension: every attempt of the analysed run, for a shared time axis.
    #[serde(default)]
    pub timeline: Vec<ReplicaSpan>,
    /// Extension: for an out-of-memory kill, the memory the first killed
    /// replica used up to the kill, against its limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_curve: Option<MemoryCurve>,
}

/// A replica's memory over time up to its end, for the failure analysis of
/// an out-of-memory kill.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MemoryCurve {
    pub replica_id: String,
    pub limit_bytes: i64,
    /// `[t (Unix ms), mean, max]` in bytes, oldest first.
    pub points: Vec<(i64, f64, f64)>,
}

/// A stored secret (`SecretItem`); `value` is write-only and never returned.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Secret {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(write_only))]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<Visibility>,
}

/// A stored image pull secret (Lepton's `/imagepullsecrets`): registry
/// credentials a job names in `spec.image_pull_secrets`. `password` is
/// write-only and never returned.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ImagePullSecret {
    /// `name` (or `id`, which Lepton clients send as well) names it; the
    /// server fills `owner` and `visibility`.
    pub metadata: crate::Metadata,
    pub spec: ImagePullSecretSpec,
}

/// The credentials of an [`ImagePullSecret`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ImagePullSecretSpec {
    /// The registry these credentials are for, such as `https://nvcr.io` or
    /// `registry.example.com:5000`.
    #[serde(default)]
    pub registry_server: String,
    #[serde(default)]
    pub username: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(write_only))]
    pub password: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

/// Free-form string maps, as labels and annotations are.
pub type StringMap = BTreeMap<String, String>;

/// The replica id of an attempt: `<job id>-<completion index>-<attempt>`.
pub fn replica_id(job_id: &str, completion_index: i64, attempt: i64) -> String {
    format!("{job_id}-{completion_index}-{attempt}")
}

/// Splits a replica id of `job_id` into (completion index, attempt).
pub fn parse_replica_id(job_id: &str, replica_id: &str) -> Option<(i64, i64)> {
    let rest = replica_id.strip_prefix(job_id)?.strip_prefix('-')?;
    let (index, attempt) = rest.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.len() <= 12 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(index) || !digits(attempt) {
        return None;
    }
    Some((index.parse().ok()?, attempt.parse().ok()?))
}

#[cfg(test)]
mod replica_id_tests {
    use super::*;

    #[test]
    fn replica_ids_round_trip_and_reject_strangers() {
        let id = replica_id("train-ab12c", 3, 1);
        assert_eq!(id, "train-ab12c-3-1");
        assert_eq!(parse_replica_id("train-ab12c", &id), Some((3, 1)));
        let cases = [
            "train-ab12c",
            "train-ab12c-3",
            "train-ab12c-x-1",
            "train-ab12c-3-",
            "other-3-1",
            "train-ab12c-3-1-2",
            "train-ab12c--3-1",
        ];
        for bad in cases {
            assert_eq!(parse_replica_id("train-ab12c", bad), None, "{bad}");
        }
    }
}
