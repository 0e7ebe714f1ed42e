//! Workspace-level resources: the workspace itself, shapes and node groups.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::decode::Decode;

/// One entry of `supported_shapes` (Lepton's `ResourceShape`): memory in MiB.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkspaceShape {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<f64>,
    /// MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accelerator_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accelerator_num: Option<f64>,
}

/// Workload counts (Lepton's `Workloads`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Workloads {
    pub num_deployments: i64,
    pub num_jobs: i64,
    pub num_pods: i64,
    pub num_secrets: i64,
    pub num_image_pull_secrets: i64,
}

/// A resource total (Lepton's `TotalResource`): memory in MiB.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TotalResource {
    pub cpu: f64,
    pub memory: i64,
    pub accelerator_num: f64,
}

/// Capacity and use over every node group (Lepton's `ResourceQuota`).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ResourceQuota {
    pub limit: TotalResource,
    pub used: TotalResource,
}

/// What this server's executor needs of every job, beyond the contract's
/// own rules (`GET /workspace`'s `job_requirements`). The console validates
/// with it as the server does, so it cannot send what the server refuses.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobRequirements {
    /// Replicas run as plain processes: an empty command (the image's
    /// entrypoint) cannot run.
    #[serde(default)]
    pub command_required: bool,
    /// Replicas run in containers, so a job needs an image.
    #[serde(default)]
    pub image_required: bool,
    /// Replicas run as plain processes: the image (and with it ports and
    /// storage mounts) is not used; the form says so next to the image.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub image_ignored: bool,
    /// The volumes a storage mount may name (`spec.mounts[].from`); `None`
    /// when this server does not check them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volumes: Option<Vec<String>>,
    /// The longest job name this workspace accepts; `None` means Lepton's
    /// [`crate::JOB_NAME_MAX_LEN`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_name_max_length: Option<usize>,
    /// Variable names a job may not set here, because a process outside
    /// the job's container would read them (`SLURM_*` with a trailing `*`
    /// for a prefix). Empty where every name reaches only the job.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused_env_names: Vec<String>,
    /// The engine has no channel that carries a value with a line break to
    /// the container without passing it through a host process's
    /// environment (docker), so such a value is refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub multi_line_env_refused: bool,
    /// The node groups where the caller's jobs may run privileged
    /// containers (`spec.user_security_context.privileged`): those whose
    /// `privileged_roles` list the caller's role, on an executor that runs
    /// containers. Empty almost everywhere.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub privileged_node_groups: Vec<String>,
}

impl JobRequirements {
    /// The pattern of `refused_env_names` that `name` matches, if any.
    pub fn refused_env_name(&self, name: &str) -> Option<&str> {
        refused_env_name(&self.refused_env_names, name)
    }
}

/// The first of `patterns` (a name, or a prefix ending in `*`) that the
/// variable name `name` matches.
pub fn refused_env_name<'a, P: AsRef<str>>(patterns: &'a [P], name: &str) -> Option<&'a str> {
    patterns.iter().map(AsRef::as_ref).find(|pattern| match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == *pattern,
    })
}

/// The body of `GET /workspace`: Lepton's `WorkspaceInfo` (so `lep` reads it)
/// plus Jobdeck's extensions.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkspaceInfo {
    pub id: String,
    pub name: String,
    /// The server's version (`jobdeck` crate version).
    pub build_version: String,
    /// Extension: the executor kind, `local` or `kubernetes`.
    pub executor: String,
    /// Extension: how the local executor runs replicas, `process` or
    /// `container`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor_mode: Option<String>,
    /// Extension: the container engine replicas run with (`/usr/bin/podman`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_engine: Option<String>,
    /// Extension: the user the request's token belongs to.
    pub current_user: String,
    /// Extension: that user's role, so a client offers only what it may do.
    #[serde(default)]
    pub current_user_role: crate::Role,
    /// Extension: a sentence for a standing notice when jobs run without
    /// isolation from the server's own user (process mode; Slurm without
    /// containers on a cluster whose nodes include the server's host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolation_warning: Option<String>,
    /// Extension: whether logs are collected when a job does not say.
    #[serde(default)]
    pub log_collection_default: bool,
    /// Extension: what the executor needs of every job.
    #[serde(default)]
    pub job_requirements: JobRequirements,
    /// Lepton: when the server was built (RFC 3339, or empty when unknown).
    #[serde(default)]
    pub build_time: String,
    /// Lepton: the commit the server was built from (or empty).
    #[serde(default)]
    pub git_commit: String,
    /// Lepton: the workspace's name.
    #[serde(default)]
    pub workspace_name: String,
    /// Lepton: always `self-hosted` for Jobdeck.
    #[serde(default)]
    pub workspace_tier: String,
    /// Lepton: `normal`.
    #[serde(default)]
    pub workspace_state: String,
    /// Lepton: the resource shapes by id.
    #[serde(default)]
    pub supported_shapes: BTreeMap<String, WorkspaceShape>,
    /// Lepton: bytes used by the data directory (database and logs).
    #[serde(default)]
    pub workspace_disk_usage_bytes: i64,
    #[serde(default)]
    pub workloads: Workloads,
    #[serde(default)]
    pub resource_quota: ResourceQuota,
    /// Lepton: jobs must name a node group; Jobdeck places jobs without one
    /// in any group that fits, so this is `false`.
    #[serde(default)]
    pub dedicated_node_group_only: bool,
    /// Extension: how long finished jobs' logs are kept, and whether their
    /// removal is paused after an upgrade (docs/api.md, "Log retention").
    /// Not in the console's build: no page shows it yet.
    #[cfg(not(target_arch = "wasm32"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_retention: Option<crate::WorkspaceLogRetention>,
}

/// The body of `GET /api/v2` itself: the workspace record `lep workspace
/// login --workspace-url <url>` reads from the URL it is given, for the name
/// `lep workspace list` shows.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkspaceRecord {
    pub id: String,
    pub display_name: String,
}
