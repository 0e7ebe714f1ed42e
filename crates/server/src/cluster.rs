//! What jobs run on: `GET /shapes`, `GET /dedicated-node-groups` and the
//! nodes of a group, `GET /dedicated-node-groups/{id}/nodes`.

use std::collections::BTreeMap;

use axum::extract::{Path, RawQuery, State};
use axum::routing::get;
use axum::Json;
use jobdeck_api::{
    Metadata, Node, NodeAmount, NodeGpu, NodeGroup, NodeGroupSpec, NodeGroupStatus, NodeGroupVolume, NodeInfo,
    NodeResource, NodeSpec, NodeStatus, NodeWorkload, ResourceAmounts, Shape, ShapeSpec, StoragePermission,
};

use crate::auth::CurrentUser;
use crate::config::{Config, NodeGroupConfig, ShapeConfig};
use crate::error::{AppError, AppResult};
use crate::executor::{replica_id, Placement};
use crate::jobs::query_pairs;
use crate::store::{JobRow, ReplicaRow};
use crate::{AppState, Route};

pub fn routes() -> Vec<Route> {
    vec![
        ("/storage-permission/{volume}", get(storage_permission)),
        ("/shapes", get(list_shapes)),
        ("/dedicated-node-groups", get(list_node_groups)),
        ("/dedicated-node-groups/{id}", get(get_node_group)),
        ("/dedicated-node-groups/{id}/nodes", get(list_nodes)),
    ]
}

/// The wire form of a configured shape.
pub fn shape_view(shape: &ShapeConfig) -> Shape {
    Shape {
        metadata: Metadata { id: Some(shape.name.clone()), name: Some(shape.name.clone()), ..Metadata::default() },
        spec: ShapeSpec {
            name: Some(shape.name.clone()),
            description: shape.description.clone(),
            // Every shape runs any kind of Jobdeck workload; Lepton's clients
            // read this list to find shapes.
            listable_in: Some(["deployment", "job", "pod"].map(String::from).to_vec()),
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

/// What each node group has in use and how many jobs wait for it, from the
/// jobs that hold a placement or are queued.
pub fn usage_by_group(config: &Config, active: &[JobRow]) -> BTreeMap<String, (ResourceAmounts, i64)> {
    let mut usage: BTreeMap<String, (ResourceAmounts, i64)> =
        config.node_groups.iter().map(|g| (g.name.clone(), (ResourceAmounts::default(), 0))).collect();
    for job in active {
        let shape = job_shape(config, job);
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
/// `volumes`: the keys of the volumes the executor can mount (its
/// requirements); every group offers all of them.
pub fn node_group_views(config: &Config, active: &[JobRow], volumes: &[String]) -> Vec<NodeGroup> {
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
                    capacity: ResourceAmounts { cpu: n.cpu, memory_in_mb: n.memory_mb, gpu: n.gpus },
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
                    volumes: Some(
                        volumes
                            .iter()
                            .map(|key| NodeGroupVolume {
                                name: jobdeck_api::volume_display_name(key).to_string(),
                                from: "nfs".into(),
                                size_in_gb: 0,
                            })
                            .collect(),
                    ),
                },
                status: NodeGroupStatus { ready_nodes: Some(count), quota_enabled: Some(true), in_use, queued_jobs },
            }
        })
        .collect()
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

/// The shape a stored job runs with: the one it names, else the first.
fn job_shape<'a>(config: &'a Config, job: &JobRow) -> Option<&'a ShapeConfig> {
    let spec: jobdeck_api::JobSpec = serde_json::from_str(&job.spec_json).unwrap_or_default();
    spec.resource_shape.as_deref().and_then(|s| config.shape(s)).or(config.shapes.first())
}

/// The wire form of a group's nodes: each node's capacity, what the admitted
/// runs placed on it hold (the same accounting as the group's `in_use`), and
/// the running replicas on it. `running` holds, per job, its replicas that
/// have not ended; the caller passes only the jobs it may see, so another
/// user's private job never shows up as a workload, although the resources
/// it holds are counted.
pub fn node_views(
    config: &Config,
    group: &NodeGroupConfig,
    active: &[JobRow],
    running: &[(JobRow, Vec<ReplicaRow>)],
) -> Vec<Node> {
    let mut allocated: BTreeMap<String, ResourceAmounts> = BTreeMap::new();
    for job in active {
        let Some(Ok(placement)) = job.runtime.placement_json.as_deref().map(serde_json::from_str::<Placement>) else {
            continue;
        };
        let Some(shape) = job_shape(config, job) else { continue };
        if placement.node_group != group.name {
            continue;
        }
        for slot in &placement.slots {
            let entry = allocated.entry(slot.node.clone()).or_default();
            entry.cpu += shape.cpu;
            entry.memory_in_mb += shape.memory_mb;
            entry.gpu += shape.gpus;
        }
    }
    group
        .node_list()
        .into_iter()
        .map(|node| {
            let used = allocated.get(&node.name).copied().unwrap_or_default();
            let workloads = running
                .iter()
                .flat_map(|(job, replicas)| {
                    let shape = job_shape(config, job);
                    replicas
                        .iter()
                        .filter(|r| r.node.as_deref() == Some(node.name.as_str()))
                        .filter(|r| r.node_group.as_deref().is_none_or(|g| g == group.name))
                        .map(move |r| NodeWorkload {
                            kind: "job".into(),
                            name: job.name.clone(),
                            id: job.id.clone(),
                            replica_id: replica_id(&r.job_id, r.completion_index, r.attempt),
                            workspace: config.workspace_name.clone(),
                            cpu: shape.map(|s| s.cpu),
                            memory: shape.map(|s| s.memory_mb),
                            gpu_count: shape.map(|s| s.gpus as f64),
                        })
                })
                .collect();
            Node {
                metadata: Metadata {
                    id: Some(node.name.clone()),
                    name: Some(node.name.clone()),
                    ..Metadata::default()
                },
                spec: NodeSpec {
                    dedicated_node_group: Some(group.name.clone()),
                    hostname: Some(node.name.clone()),
                    resource: NodeResource {
                        cpu: NodeAmount { allocated: used.cpu, total: node.cpu },
                        memory: NodeAmount { allocated: used.memory_in_mb, total: node.memory_mb },
                        gpu: (node.gpus > 0).then(|| NodeGpu {
                            product: group.gpu_product.clone(),
                            allocated: used.gpu as f64,
                            total: node.gpus as f64,
                        }),
                    },
                    unschedulable: false,
                },
                status: NodeStatus { status: vec!["Ready".into()], workloads },
            }
        })
        .collect()
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
        let visible = job.visibility == "public" || job.created_by == user.name;
        if !visible || job.runtime.placement_json.is_none() {
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
