//! The cluster as the API shows it: the wire forms of the configured shapes,
//! node groups and nodes with what the active jobs use of them (read from
//! each job's stored `Placement`, which the store defines and the scheduler
//! makes). Pure views of the config and stored rows; `http/cluster.rs`
//! serves them, `spec.rs` and `http/jobs.rs` check jobs against them.

use std::collections::BTreeMap;

use jobdeck_api::{
    replica_id, Metadata, Node, NodeAmount, NodeGpu, NodeGroup, NodeGroupSpec, NodeGroupStatus, NodeGroupVolume,
    NodeInfo, NodeResource, NodeSpec, NodeStatus, NodeWorkload, ResourceAmounts, Shape, ShapeSpec,
};

use crate::config::{Config, NodeGroupConfig, ShapeConfig};
use jobdeck_store::{JobRow, ReplicaRow};

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
            accelerator_compute_capability: shape.compute_capability().map(|(major, minor)| format!("{major}.{minor}")),
            default_shared_memory_in_mb: Some(jobdeck_api::shared_memory_default_mib(shape.memory_mb)),
        },
    }
}

/// What each node group has in use and how many jobs wait for it, from the
/// jobs that hold a placement or are queued.
pub fn usage_by_group(config: &Config, active: &[JobRow]) -> BTreeMap<String, (ResourceAmounts, i64)> {
    let mut usage: BTreeMap<String, (ResourceAmounts, i64)> =
        config.node_groups.iter().map(|g| (g.name.clone(), (ResourceAmounts::default(), 0))).collect();
    for job in active {
        let shape = job_shape(config, job);
        match &job.runtime.placement {
            Some(placement) => {
                if let (Some(entry), Some(shape)) = (usage.get_mut(&placement.node_group), shape) {
                    let n = placement.slots.len() as i64;
                    entry.0.cpu += shape.cpu * n as f64;
                    entry.0.memory_in_mb += shape.memory_mb * n;
                    entry.0.gpu += shape.gpus * n;
                }
            }
            _ if job.runtime.state == jobdeck_api::JobState::Queueing => {
                for (name, entry) in usage.iter_mut() {
                    if job.node_groups.is_empty() || job.node_groups.contains(name) {
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

/// The shape a stored job runs with: the one it names, else the first.
pub fn job_shape<'a>(config: &'a Config, job: &JobRow) -> Option<&'a ShapeConfig> {
    job.spec.resource_shape.as_deref().and_then(|s| config.shape(s)).or(config.shapes.first())
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
        let Some(placement) = &job.runtime.placement else {
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
