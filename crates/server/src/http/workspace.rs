//! `GET /workspace`: who and what this server is, in the shape Lepton's
//! `WorkspaceInfo` has (so `lep` accepts it) plus Jobdeck's extensions.

use std::path::Path;

use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use axum::Json;
use jobdeck_api::{
    LogRetentionSetting, QuotaSource, ResourceQuota, Role, TotalResource, Workloads, WorkspaceInfo,
    WorkspaceLogRetention, WorkspaceRecord, WorkspaceShape,
};
use jobdeck_store::now_millis;

use crate::http::audit;
use crate::http::auth::CurrentUser;
use crate::http::error::{ApiJson, AppError, AppResult};
use crate::{AppState, Route};
use jobdeck_core::retention::LogBudget;
use jobdeck_core::topology::usage_by_group;

pub fn routes() -> Vec<Route> {
    vec![
        ("/workspace", get(workspace)),
        ("/workspace/log-retention", axum::routing::put(set_minimum_retention).delete(withdraw_minimum_retention)),
        ("/", get(workspace_record)),
    ]
}

/// `GET /api/v2`: `lep workspace login --workspace-url` asks the URL it is
/// given for the workspace's `display_name` (Lepton's workspace resolver
/// answers there); without it `lep workspace list` shows no name.
pub(crate) async fn workspace_record(State(state): State<AppState>, _user: CurrentUser) -> Json<WorkspaceRecord> {
    Json(WorkspaceRecord { id: state.config.workspace_name.clone(), display_name: state.config.workspace_name.clone() })
}

/// `PUT /workspace/log-retention`: an admin's minimum log retention, over
/// the config's. Every finished job is timed by it again; logs it lets go
/// are removed at once (docs/api.md, "Log retention"). Answers the
/// workspace's rule as `GET /workspace` shows it.
async fn set_minimum_retention(
    State(state): State<AppState>,
    admin: CurrentUser,
    ApiJson(setting): ApiJson<LogRetentionSetting>,
) -> AppResult<Response> {
    let maximum_seconds = state.log_retention.borrow().maximum_ms.map(|ms| ms / 1000);
    let problems = setting.problems(maximum_seconds);
    if !problems.is_empty() {
        return Err(AppError::Validation(problems));
    }
    state.scheduler.set_minimum_retention(Some(setting.minimum_seconds.saturating_mul(1000))).await?;
    tracing::info!(minimum_seconds = setting.minimum_seconds, by = admin.name, "minimum log retention set");
    let rule = log_retention_of(&state, &admin).await?;
    Ok(audit::noted(Json(rule), "log_retention".to_string(), Some(format!("{} s", setting.minimum_seconds))))
}

/// `DELETE /workspace/log-retention`: withdraws the console's minimum; the
/// config's is in force again. 404 when the console set none.
async fn withdraw_minimum_retention(State(state): State<AppState>, admin: CurrentUser) -> AppResult<Response> {
    if !state.log_retention.borrow().minimum_from_console {
        return Err(AppError::NotFound(
            "no minimum log retention was set in the console (the config's [logs] minimum_retention is in force)"
                .into(),
        ));
    }
    state.scheduler.set_minimum_retention(None).await?;
    tracing::info!(by = admin.name, "minimum log retention withdrawn");
    let rule = log_retention_of(&state, &admin).await?;
    Ok(audit::noted(Json(rule), "log_retention".to_string(), None))
}

/// The workspace's log retention as `user` may read it: the rule, the logs'
/// use, and the budget's warning for admins.
async fn log_retention_of(state: &AppState, user: &CurrentUser) -> AppResult<WorkspaceLogRetention> {
    let rule = *state.log_retention.borrow();
    let used_bytes = state.store.log_bytes_total().await?;
    let budget = state.config.logs.disk_budget.map(|bytes| LogBudget { bytes });
    Ok(WorkspaceLogRetention {
        minimum_seconds: rule.minimum_ms / 1000,
        maximum_seconds: rule.maximum_ms.map(|ms| ms / 1000),
        paused_until: rule.paused_until.filter(|_| rule.paused_at(now_millis())).map(|ms| ms / 1000),
        used_bytes,
        disk_budget_bytes: budget.map(|b| b.bytes),
        // Admins are the ones who can act (a larger budget, a shorter
        // retention): the warning is theirs.
        warning: budget.filter(|_| user.role == Role::Admin).and_then(|b| b.warning(used_bytes)),
        minimum_source: if rule.minimum_from_console { QuotaSource::Console } else { QuotaSource::Config },
    })
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
    let log_retention = log_retention_of(&state, &user).await?;
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
