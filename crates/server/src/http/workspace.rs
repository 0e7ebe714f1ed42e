//! `GET /workspace`: who and what this server is, in the shape Lepton's
//! `WorkspaceInfo` has (so `lep` accepts it) plus Jobdeck's extensions.

use std::path::Path;

use axum::extract::State;
use axum::routing::get;
use axum::Json;
use jobdeck_api::{
    ResourceQuota, Role, TotalResource, Workloads, WorkspaceInfo, WorkspaceLogRetention, WorkspaceRecord,
    WorkspaceShape,
};
use jobdeck_store::now_millis;

use crate::http::auth::CurrentUser;
use crate::http::error::{AppError, AppResult};
use crate::{AppState, Route};
use jobdeck_core::retention::LogBudget;
use jobdeck_core::topology::usage_by_group;

pub fn routes() -> Vec<Route> {
    vec![("/workspace", get(workspace)), ("/", get(workspace_record))]
}

/// `GET /api/v2`: `lep workspace login --workspace-url` asks the URL it is
/// given for the workspace's `display_name` (Lepton's workspace resolver
/// answers there); without it `lep workspace list` shows no name.
pub(crate) async fn workspace_record(State(state): State<AppState>, _user: CurrentUser) -> Json<WorkspaceRecord> {
    Json(WorkspaceRecord { id: state.config.workspace_name.clone(), display_name: state.config.workspace_name.clone() })
}

async fn workspace(State(state): State<AppState>, user: CurrentUser) -> AppResult<Json<WorkspaceInfo>> {
    let config = &state.config;
    // Counts of what the caller may see: another user's private jobs and
    // secrets are not even counted.
    let (_, alive_jobs) = state.store.job_counts(user.name.clone()).await?;
    let secrets = state.store.secrets_visible_to(user.name.clone()).await?.len() as i64;
    let num_image_pull_secrets = state.store.image_pull_secrets_visible_to(user.name.clone()).await?.len() as i64;
    let active = state.store.active_jobs().await?;
    let running_replicas: i64 = active.iter().map(|j| j.runtime.active).sum();
    let usage = usage_by_group(config, &active);
    let mut quota = ResourceQuota::default();
    for group in &config.node_groups {
        let nodes = group.node_list().len() as i64;
        quota.limit.cpu += group.cpu * nodes as f64;
        quota.limit.memory += group.memory_mb * nodes;
        quota.limit.accelerator_num += (group.gpus * nodes) as f64;
        if let Some((in_use, _)) = usage.get(&group.name) {
            quota.used = TotalResource {
                cpu: quota.used.cpu + in_use.cpu,
                memory: quota.used.memory + in_use.memory_in_mb,
                accelerator_num: quota.used.accelerator_num + in_use.gpu as f64,
            };
        }
    }
    let data_dir = config.data_dir.clone();
    let disk = tokio::task::spawn_blocking(move || disk_usage(&data_dir)).await.map_err(AppError::internal)?;
    let rule = state.log_retention;
    let used_bytes = state.store.log_bytes_total().await?;
    let budget = config.logs.disk_budget.map(|bytes| LogBudget { bytes });
    let log_retention = WorkspaceLogRetention {
        minimum_seconds: rule.minimum_ms / 1000,
        maximum_seconds: rule.maximum_ms.map(|ms| ms / 1000),
        paused_until: rule.paused_until.filter(|_| rule.paused_at(now_millis())).map(|ms| ms / 1000),
        used_bytes,
        disk_budget_bytes: budget.map(|b| b.bytes),
        // Admins are the ones who can act (a larger budget, a shorter
        // retention): the warning is theirs.
        warning: budget.filter(|_| user.role == Role::Admin).and_then(|b| b.warning(used_bytes)),
    };
    Ok(Json(WorkspaceInfo {
        id: config.workspace_name.clone(),
        name: config.workspace_name.clone(),
        build_version: env!("CARGO_PKG_VERSION").to_string(),
        executor: config.executor.kind.as_str().to_string(),
        executor_mode: state.executor.mode(),
        container_engine: state.executor.engine(),
        current_user: user.name,
        current_user_role: user.role,
        isolation_warning: state.executor.isolation_warning(),
        log_collection_default: config.log_collection_default,
        job_requirements: state.job_requirements(user.role),
        build_time: option_env!("JOBDECK_BUILD_TIME").unwrap_or("").to_string(),
        git_commit: option_env!("JOBDECK_GIT_COMMIT").unwrap_or("").to_string(),
        workspace_name: config.workspace_name.clone(),
        workspace_tier: "self-hosted".into(),
        workspace_state: "normal".into(),
        supported_shapes: config
            .shapes
            .iter()
            .map(|s| {
                (
                    s.name.clone(),
                    WorkspaceShape {
                        description: s.description.clone(),
                        cpu: Some(s.cpu),
                        memory: Some(s.memory_mb),
                        accelerator_type: s.accelerator_type.clone(),
                        accelerator_num: Some(s.gpus as f64),
                    },
                )
            })
            .collect(),
        workspace_disk_usage_bytes: disk as i64,
        workloads: Workloads {
            num_deployments: 0,
            num_jobs: alive_jobs,
            num_pods: running_replicas,
            num_secrets: secrets,
            num_image_pull_secrets,
        },
        resource_quota: quota,
        dedicated_node_group_only: false,
        log_retention: Some(log_retention),
    }))
}

/// Bytes used by the files under `dir` (symbolic links are not followed).
fn disk_usage(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&path) else { continue };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() {
                total += meta.len();
            }
        }
    }
    total
}
