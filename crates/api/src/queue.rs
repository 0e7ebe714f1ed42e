//! What would let a queued job start (`status.start_suggestions`, a
//! Jobdeck extension of `GET /jobs/{id}`): each a change to the job's
//! specification and the reason in words, or only a reason where no change
//! of the job's own helps (jobs of higher priority ahead, a quota).

use serde::{Deserialize, Serialize};

use crate::Decode;

/// What kind of help a suggestion is. The console words its link by it;
/// the reason says the rest. (The default is only what the console's reader
/// holds for a field it could not read.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum SuggestionKind {
    /// A smaller resource shape fits now (fewer GPUs, or fewer CPUs and
    /// less memory, a replica).
    #[serde(rename = "smaller_shape")]
    #[default]
    SmallerShape,
    /// Fewer replicas at once (`parallelism`) fit now; the completions stay.
    #[serde(rename = "fewer_at_once")]
    FewerAtOnce,
    /// Another node group has the room now.
    #[serde(rename = "other_node_group")]
    OtherNodeGroup,
    /// Jobs of higher priority wait ahead for the same node groups
    /// (counted, never named). No change of the job's own helps.
    #[serde(rename = "priority_ahead")]
    PriorityAhead,
    /// The creator's quota holds the job; its reason is the quota's words.
    #[serde(rename = "quota")]
    Quota,
}

/// A change to a job's specification, as a JSON merge patch (RFC 7386) of
/// its `spec`: only the fields named are changed, an object's fields
/// merged, a list replaced whole.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SpecChange {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_shape: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<i64>,
    /// A node group named alone, with `allowed_nodes_in_node_group` emptied
    /// (any node of it) where the job named nodes of another group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<AffinityChange>,
}

/// The part of `spec.affinity` a suggestion may change. Its own type, not
/// `Affinity`: the server's document lists its node groups as the only
/// values of `Affinity`'s (a job must name one), while a suggestion is an
/// answer, never read from a request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AffinityChange {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_dedicated_node_groups: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_nodes_in_node_group: Option<Vec<String>>,
}

/// One thing that would let a queued job start, and why.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct StartSuggestion {
    pub kind: SuggestionKind,
    /// The change to make (a merge patch of the spec); absent where no
    /// change of the job's own helps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<SpecChange>,
    /// The reason in words: "fits now with 4 GPUs a replica instead of 8
    /// (shape gpu.4x) in node group local".
    pub reason: String,
}

/// What a start estimate rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum EstimateBasis {
    /// The deadlines (`active_deadline_seconds`, plus the time a stop may
    /// take) of the running jobs whose resources it needs: it starts by
    /// then at the latest, unless jobs of higher priority arrive first or a
    /// preemption takes the room.
    #[serde(rename = "deadlines")]
    #[default]
    Deadlines,
    /// As `deadlines`, with a running job that has no deadline taken to
    /// run as long as its earlier runs did (the median of the last five
    /// completed jobs of the same name and creator): likely, not a limit.
    #[serde(rename = "history")]
    History,
}

/// When a queued job may start (`status.start_estimate`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct StartEstimate {
    /// Unix time in seconds.
    pub at: i64,
    pub basis: EstimateBasis,
    /// How sure, in words: "at the latest, when the running jobs' deadlines
    /// end; sooner if they end earlier".
    pub reason: String,
}

/// One job of `GET /queue`, in the admission order. A job the caller may
/// not see keeps its place, priority and node groups (so the caller can
/// tell how much waits ahead of them and why) but not its id, name, owner,
/// shape or message.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct QueueEntry {
    /// 1 for the first to be admitted when capacity frees, among the jobs
    /// listed; absent for a job its creator's quota holds (it holds back
    /// nobody behind it, and starts only once its creator is under quota).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<i64>,
    /// Absent for a job the caller may not see, as are the fields below
    /// that say so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    /// `low-1000` … `high-9000`.
    pub priority_class: String,
    pub node_groups: Vec<String>,
    /// Absent for a job the caller may not see.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_shape: Option<String>,
    /// Replicas it runs at once.
    pub replicas: i64,
    pub gpus_per_replica: i64,
    /// Unix milliseconds it entered the queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_at: Option<i64>,
    pub held_by_quota: bool,
    /// It may stop lower-priority preemptible jobs to start.
    pub can_preempt: bool,
    /// Once running, a higher-priority job may stop it.
    pub can_be_preempted: bool,
    /// Why it waits, in its status's words; absent for a job the caller may
    /// not see.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// `GET /queue`: the queued jobs, first to be admitted first, and how many
/// of them the caller may not see.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct QueueList {
    pub jobs: Vec<QueueEntry>,
    pub hidden: i64,
}
