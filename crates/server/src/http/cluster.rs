//! What jobs run on: `GET /shapes`, `GET /dedicated-node-groups` and the
//! nodes of a group, `GET /dedicated-node-groups/{id}/nodes`.

use axum::extract::{Path, RawQuery, State};
use axum::routing::get;
use axum::Json;
use jobdeck_api::{Node, NodeGroup, Shape, StoragePermission, Visibility};

use crate::http::auth::CurrentUser;
use crate::http::error::{AppError, AppResult};
use crate::http::jobs::query_pairs;
use crate::{AppState, Route};
use jobdeck_core::config::ShapeConfig;
use jobdeck_core::topology::{node_group_views, node_views, shape_view};
use jobdeck_store::ReplicaRow;

pub fn routes() -> Vec<Route> {
    vec![
        ("/storage-permission/{volume}", get(storage_permission)),
        ("/shapes", get(list_shapes)),
        ("/dedicated-node-groups", get(list_node_groups)),
        ("/dedicated-node-groups/{id}", get(get_node_group)),
        ("/dedicated-node-groups/{id}/nodes", get(list_nodes)),
    ]
}

/// `GET /shapes`, or with `node_groups=<id>` (repeated or comma-separated)
/// the shapes one replica of which fits on a node of one of those groups, as
/// Lepton answers the TAO SDK's per-group shape query.
async fn list_shapes(
    State(state): State<AppState>,
    _user: CurrentUser,
    RawQuery(raw): RawQuery,
) -> AppResult<Json<Vec<Shape>>> {
    let mut groups = Vec::new();
    for (key, value) in query_pairs(raw.as_deref()) {
        if key == "node_groups" || key == "node_group" {
            for name in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                let group = state
                    .config
                    .node_group(name)
                    .ok_or_else(|| AppError::NotFound(format!("node_groups: no node group named '{name}'")))?;
                groups.push(group);
            }
        }
    }
    let fits = |shape: &ShapeConfig| {
        groups.is_empty()
            || groups.iter().any(|g| {
                let product = match (&shape.accelerator_type, &g.gpu_product) {
                    (Some(wanted), Some(has)) => wanted == has,
                    _ => true,
                };
                g.cpu >= shape.cpu && g.memory_mb >= shape.memory_mb && g.gpus >= shape.gpus && product
            })
    };
    Ok(Json(state.config.shapes.iter().filter(|s| fits(s)).map(shape_view).collect()))
}

/// The keys of the volumes this server's executor mounts.
pub fn mountable_volumes(state: &AppState) -> Vec<String> {
    state.executor.requirements().volumes.unwrap_or_default()
}

/// `GET /storage-permission/{volume}?nodegroup_id=<group>`: which path
/// prefixes of a volume may be mounted, and by whom. Jobdeck does not
/// restrict paths inside a volume: every signed-in user may mount all of it,
/// so the answer is the whole volume (`/`) for everyone (`*`), in each group
/// asked about (every group, when none is).
async fn storage_permission(
    State(state): State<AppState>,
    _user: CurrentUser,
    Path(volume): Path<String>,
    RawQuery(raw): RawQuery,
) -> AppResult<Json<Vec<StoragePermission>>> {
    let volumes = mountable_volumes(&state);
    if jobdeck_api::volume_key(&volume, &volumes).is_none() {
        return Err(AppError::NotFound(format!("no volume named '{volume}' on this server")));
    }
    let mut groups: Vec<String> = Vec::new();
    for (key, value) in query_pairs(raw.as_deref()) {
        if key == "nodegroup_id" && !value.is_empty() {
            if state.config.node_group(&value).is_none() {
                return Err(AppError::NotFound(format!("nodegroup_id: no node group named '{value}'")));
            }
            groups.push(value);
        }
    }
    if groups.is_empty() {
        groups = state.config.node_groups.iter().map(|g| g.name.clone()).collect();
    }
    Ok(Json(
        groups
            .into_iter()
            .map(|group| StoragePermission {
                path_prefix: "/".into(),
                allowed_users: vec!["*".into()],
                nodegroup_id: group,
            })
            .collect(),
    ))
}

async fn list_node_groups(State(state): State<AppState>, _user: CurrentUser) -> AppResult<Json<Vec<NodeGroup>>> {
    let active = state.store.active_jobs().await?;
    Ok(Json(node_group_views(&state.config, &active, &mountable_volumes(&state))))
}

async fn get_node_group(
    State(state): State<AppState>,
    _user: CurrentUser,
    Path(id): Path<String>,
) -> AppResult<Json<NodeGroup>> {
    let active = state.store.active_jobs().await?;
    node_group_views(&state.config, &active, &mountable_volumes(&state))
        .into_iter()
        .find(|g| g.metadata.id.as_deref() == Some(id.as_str()))
        .map(Json)
        .ok_or_else(|| AppError::NotFound(format!("node group '{id}' not found")))
}

/// `GET /dedicated-node-groups/{id}/nodes`; `idle=true` keeps the nodes
/// nothing is placed on, as Lepton's `list_idle_nodes` asks.
async fn list_nodes(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> AppResult<Json<Vec<Node>>> {
    let group = state
        .config
        .node_groups
        .iter()
        .find(|g| g.name == id)
        .ok_or_else(|| AppError::NotFound(format!("node group '{id}' not found")))?;
    let mut idle_only = false;
    for (key, value) in query_pairs(raw.as_deref()) {
        if key == "idle" {
            idle_only = match value.as_str() {
                "true" | "1" => true,
                "false" | "0" => false,
                other => return Err(AppError::BadRequest(format!("idle must be true or false, not '{other}'"))),
            };
        }
    }
    let active = state.store.active_jobs().await?;
    let mut running = Vec::new();
    for job in &active {
        let visible = job.visibility == Visibility::Public || job.created_by == user.name;
        if !visible || job.runtime.placement.is_none() {
            continue;
        }
        let replicas: Vec<ReplicaRow> = state
            .store
            .replicas_of(job.id.clone())
            .await?
            .into_iter()
            .filter(|r| r.run == job.runtime.run && !r.is_finished() && r.node.is_some())
            .collect();
        if !replicas.is_empty() {
            running.push((job.clone(), replicas));
        }
    }
    let mut nodes = node_views(&state.config, group, &active, &running);
    if idle_only {
        nodes.retain(|n| {
            let r = &n.spec.resource;
            r.cpu.allocated == 0.0 && r.memory.allocated == 0 && r.gpu.as_ref().is_none_or(|g| g.allocated == 0.0)
        });
    }
    Ok(Json(nodes))
}
