//! What jobs run on: `GET /shapes` and `GET /dedicated-node-groups`.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::routing::get;
use axum::Json;
use jobdeck_api::{
    Metadata, NodeGroup, NodeGroupSpec, NodeGroupStatus, NodeInfo, ResourceAmounts, Shape, ShapeSpec,
};

use crate::auth::CurrentUser;
use crate::config::{Config, ShapeConfig};
use crate::error::{AppError, AppResult};
use crate::executor::Placement;
use crate::store::JobRow;
use crate::{AppState, Route};

pub fn routes() -> Vec<Route> {
    vec![
        ("/shapes", get(list_shapes)),
        ("/dedicated-node-groups", get(list_node_groups)),
        ("/dedicated-node-groups/{id}", get(get_node_group)),
    ]
}

/// The wire form of a configured shape.
pub fn shape_view(shape: &ShapeConfig) -> Shape {
    Shape {
        metadata: Metadata {
            id: Some(shape.name.clone()),
            name: Some(shape.name.clone()),
            ..Metadata::default()
        },
        spec: ShapeSpec {
            name: Some(shape.name.clone()),
            description: shape.description.clone(),
            cpu: Some(shape.cpu),
            memory_in_mb: Some(shape.memory_mb),
            ephemeral_storage_in_gb: shape.ephemeral_storage_gb,
            accelerator_type: shape.accelerator_type.clone(),
            accelerator_num: Some(shape.gpus as f64),
            accelerator_memory_in_mb: shape.accelerator_memory_mb,
            default_shared_memory_in_mb: Some(jobdeck_api::shared_memory_default_mib(shape.memory_mb)),
        },
    }
}

async fn list_shapes(State(state): State<AppState>, _user: CurrentUser) -> Json<Vec<Shape>> {
    Json(state.config.shapes.iter().map(shape_view).collect())
}

/// What each node group has in use and how many jobs wait for it, from the
/// jobs that hold a placement or are queued.
pub fn usage_by_group(config: &Config, active: &[JobRow]) -> BTreeMap<String, (ResourceAmounts, i64)> {
    let mut usage: BTreeMap<String, (ResourceAmounts, i64)> = config
        .node_groups
        .iter()
        .map(|g| (g.name.clone(), (ResourceAmounts::default(), 0)))
        .collect();
    for job in active {
        let spec: jobdeck_api::JobSpec = serde_json::from_str(&job.spec_json).unwrap_or_default();
        let shape = spec
            .resource_shape
            .as_deref()
            .and_then(|s| config.shape(s))
            .or(config.shapes.first());
        match job.runtime.placement_json.as_deref().map(serde_json::from_str::<Placement>) {
            Some(Ok(placement)) => {
                if let (Some(entry), Some(shape)) = (usage.get_mut(&placement.node_group), shape) {
                    let n = placement.slots.len() as i64;
                    entry.0.cpu += shape.cpu * n as f64;
                    entry.0.memory_in_mb += shape.memory_mb * n;
                    entry.0.gpu += shape.gpus * n;
                }
            }
            _ if job.runtime.state == "Queueing" => {
                let groups: Vec<&str> = job.node_groups.split(',').filter(|g| !g.is_empty()).collect();
                for (name, entry) in usage.iter_mut() {
                    if groups.is_empty() || groups.contains(&name.as_str()) {
                        entry.1 += 1;
                    }
                }
            }
            _ => {}
        }
    }
    usage
}

/// The wire form of every node group with its usage.
pub fn node_group_views(config: &Config, active: &[JobRow]) -> Vec<NodeGroup> {
    let usage = usage_by_group(config, active);
    config
        .node_groups
        .iter()
        .map(|group| {
            let nodes: Vec<NodeInfo> = group
                .node_list()
                .into_iter()
                .map(|n| NodeInfo {
                    name: n.name,
                    capacity: ResourceAmounts {
                        cpu: n.cpu,
                        memory_in_mb: n.memory_mb,
                        gpu: n.gpus,
                    },
                })
                .collect();
            let count = nodes.len() as i64;
            let (in_use, queued_jobs) = usage.get(&group.name).copied().unwrap_or_default();
            NodeGroup {
                metadata: Metadata {
                    id: Some(group.name.clone()),
                    name: Some(group.name.clone()),
                    ..Metadata::default()
                },
                spec: NodeGroupSpec {
                    gpu_product: group.gpu_product.clone(),
                    desired_nodes: Some(count),
                    capacity: ResourceAmounts {
                        cpu: group.cpu * count as f64,
                        memory_in_mb: group.memory_mb * count,
                        gpu: group.gpus * count,
                    },
                    nodes,
                },
                status: NodeGroupStatus {
                    ready_nodes: Some(count),
                    quota_enabled: Some(true),
                    in_use,
                    queued_jobs,
                },
            }
        })
        .collect()
}

async fn list_node_groups(State(state): State<AppState>, _user: CurrentUser) -> AppResult<Json<Vec<NodeGroup>>> {
    let active = state.store.active_jobs().await?;
    Ok(Json(node_group_views(&state.config, &active)))
}

async fn get_node_group(
    State(state): State<AppState>,
    _user: CurrentUser,
    Path(id): Path<String>,
) -> AppResult<Json<NodeGroup>> {
    let active = state.store.active_jobs().await?;
    node_group_views(&state.config, &active)
        .into_iter()
        .find(|g| g.metadata.id.as_deref() == Some(id.as_str()))
        .map(Json)
        .ok_or_else(|| AppError::NotFound(format!("node group '{id}' not found")))
}
