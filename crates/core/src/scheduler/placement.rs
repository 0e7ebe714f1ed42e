//! Capacity arithmetic: what is free on each node, whether a job's replicas
//! fit, why not, and which jobs a preemption would evict. Pure functions,
//! tested with tables.

use std::collections::BTreeMap;

use crate::config::{Config, ShapeConfig};
use crate::executor::{Placement, Slot};

/// CPU amounts are compared with this slack so 0.1 + 0.2 fits in 0.3.
const EPSILON: f64 = 1e-6;

/// One node and what is taken on it.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeState {
    pub name: String,
    pub cpu: f64,
    pub memory_mb: i64,
    /// One flag per GPU index: taken or not.
    pub gpus: Vec<bool>,
    pub used_cpu: f64,
    pub used_memory_mb: i64,
}

impl NodeState {
    fn free_cpu(&self) -> f64 {
        self.cpu - self.used_cpu
    }

    fn free_memory(&self) -> i64 {
        self.memory_mb - self.used_memory_mb
    }

    fn free_gpus(&self) -> usize {
        self.gpus.iter().filter(|taken| !**taken).count()
    }

    fn fits(&self, shape: &ShapeConfig) -> bool {
        self.free_cpu() + EPSILON >= shape.cpu
            && self.free_memory() >= shape.memory_mb
            && self.free_gpus() as i64 >= shape.gpus
    }

    /// Takes one replica's resources; returns the GPU indices it got.
    fn take(&mut self, shape: &ShapeConfig) -> Vec<u32> {
        self.used_cpu += shape.cpu;
        self.used_memory_mb += shape.memory_mb;
        let mut ids = Vec::new();
        for (i, taken) in self.gpus.iter_mut().enumerate() {
            if ids.len() as i64 == shape.gpus {
                break;
            }
            if !*taken {
                *taken = true;
                ids.push(i as u32);
            }
        }
        ids
    }

    fn release(&mut self, shape: &ShapeConfig, gpu_ids: &[u32]) {
        self.used_cpu = (self.used_cpu - shape.cpu).max(0.0);
        self.used_memory_mb = (self.used_memory_mb - shape.memory_mb).max(0);
        for id in gpu_ids {
            if let Some(flag) = self.gpus.get_mut(*id as usize) {
                *flag = false;
            }
        }
    }
}

/// A node group and what is taken on each of its nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupState {
    pub name: String,
    pub nodes: Vec<NodeState>,
}

impl GroupState {
    /// GPUs free on all its nodes together.
    pub fn free_gpus(&self) -> usize {
        self.nodes.iter().map(NodeState::free_gpus).sum()
    }

    /// CPUs free on all its nodes together.
    pub fn free_cpu(&self) -> f64 {
        self.nodes.iter().map(|n| n.free_cpu().max(0.0)).sum()
    }
}

/// The state of every group, given the placements that hold resources.
pub fn group_states<'a>(
    config: &Config,
    placed: impl IntoIterator<Item = (&'a Placement, &'a ShapeConfig)>,
) -> BTreeMap<String, GroupState> {
    let mut groups: BTreeMap<String, GroupState> = config
        .node_groups
        .iter()
        .map(|g| {
            let nodes = g
                .node_list()
                .into_iter()
                .map(|n| NodeState {
                    name: n.name,
                    cpu: n.cpu,
                    memory_mb: n.memory_mb,
                    gpus: vec![false; n.gpus.max(0) as usize],
                    used_cpu: 0.0,
                    used_memory_mb: 0,
                })
                .collect();
            (g.name.clone(), GroupState { name: g.name.clone(), nodes })
        })
        .collect();
    for (placement, shape) in placed {
        let Some(group) = groups.get_mut(&placement.node_group) else { continue };
        for slot in &placement.slots {
            if let Some(node) = group.nodes.iter_mut().find(|n| n.name == slot.node) {
                node.used_cpu += shape.cpu;
                node.used_memory_mb += shape.memory_mb;
                for id in &slot.gpu_ids {
                    if let Some(flag) = node.gpus.get_mut(*id as usize) {
                        *flag = true;
                    }
                }
            }
        }
    }
    groups
}

/// Places `count` replicas of `shape` on the group's nodes (first fit, in
/// node order, only on `allowed_nodes` when any are given). `None` when they
/// do not all fit at once.
pub fn fit(group: &GroupState, shape: &ShapeConfig, count: i64, allowed_nodes: &[String]) -> Option<Vec<Slot>> {
    let mut scratch = group.clone();
    let mut slots = Vec::with_capacity(count.max(0) as usize);
    for _ in 0..count {
        let node = scratch
            .nodes
            .iter_mut()
            .filter(|n| allowed_nodes.is_empty() || allowed_nodes.contains(&n.name))
            .find(|n| n.fits(shape))?;
        let gpu_ids = node.take(shape);
        slots.push(Slot { node: node.name.clone(), gpu_ids });
    }
    Some(slots)
}

fn plural(n: f64, one: &str, many: &str) -> String {
    let shown = if n.fract().abs() < EPSILON { format!("{}", n.round() as i64) } else { format!("{n:.2}") };
    format!("{shown} {}", if (n - 1.0).abs() < EPSILON { one } else { many })
}

/// Why `count` replicas of `shape` do not fit in `group`, in the words of
/// a readiness issue: "needs 2 GPUs, 0 free in group local".
pub fn shortage(group: &GroupState, shape: &ShapeConfig, count: i64, allowed_nodes: &[String]) -> String {
    let nodes: Vec<&NodeState> =
        group.nodes.iter().filter(|n| allowed_nodes.is_empty() || allowed_nodes.contains(&n.name)).collect();
    let free_cpu: f64 = nodes.iter().map(|n| n.free_cpu().max(0.0)).sum();
    let free_memory: i64 = nodes.iter().map(|n| n.free_memory().max(0)).sum();
    let free_gpus: usize = nodes.iter().map(|n| n.free_gpus()).sum();
    let n = count as f64;
    let mut short = Vec::new();
    if shape.gpus > 0 && (free_gpus as i64) < shape.gpus * count {
        short.push(format!("{}, {free_gpus} free", plural((shape.gpus * count) as f64, "GPU", "GPUs")));
    }
    if free_cpu + EPSILON < shape.cpu * n {
        short.push(format!("{}, {} free", plural(shape.cpu * n, "CPU", "CPUs"), plural(free_cpu, "", "").trim_end()));
    }
    if free_memory < shape.memory_mb * count {
        short.push(format!("{} MiB memory, {free_memory} MiB free", shape.memory_mb * count));
    }
    if short.is_empty() {
        format!(
            "needs {count} replica(s) of {} CPU, {} MiB, {} GPU each on one node, but no node of group {} has that much free",
            shape.cpu, shape.memory_mb, shape.gpus, group.name
        )
    } else {
        format!("needs {} in group {}", short.join(" and "), group.name)
    }
}

/// A running job that a preemption could evict.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub job_id: String,
    pub priority: i64,
    /// When its run was admitted; newer runs are evicted first.
    pub started_at: i64,
    pub placement: Placement,
    pub shape: ShapeConfig,
}

/// The fewest candidates (lowest priority first, then newest) whose eviction
/// lets `count` replicas of `shape` fit in `group`; `None` when even evicting
/// all of them is not enough. Candidates must already be filtered to
/// preemptible jobs of lower priority placed in this group.
pub fn plan_preemption(
    group: &GroupState,
    shape: &ShapeConfig,
    count: i64,
    allowed_nodes: &[String],
    mut candidates: Vec<Candidate>,
) -> Option<Vec<String>> {
    candidates.sort_by(|a, b| a.priority.cmp(&b.priority).then(b.started_at.cmp(&a.started_at)));
    let mut scratch = group.clone();
    let mut victims = Vec::new();
    for candidate in candidates {
        if candidate.placement.node_group != group.name {
            continue;
        }
        for slot in &candidate.placement.slots {
            if let Some(node) = scratch.nodes.iter_mut().find(|n| n.name == slot.node) {
                node.release(&candidate.shape, &slot.gpu_ids);
            }
        }
        victims.push(candidate.job_id);
        if fit(&scratch, shape, count, allowed_nodes).is_some() {
            return Some(victims);
        }
    }
    None
}

/// Frees what `placement` holds in a group state (for planning).
pub fn release(groups: &mut BTreeMap<String, GroupState>, placement: &Placement, shape: &ShapeConfig) {
    if let Some(group) = groups.get_mut(&placement.node_group) {
        for slot in &placement.slots {
            if let Some(node) = group.nodes.iter_mut().find(|n| n.name == slot.node) {
                node.release(shape, &slot.gpu_ids);
            }
        }
    }
}

/// Takes what `placement` holds in a group state.
pub fn occupy(groups: &mut BTreeMap<String, GroupState>, placement: &Placement, shape: &ShapeConfig) {
    if let Some(group) = groups.get_mut(&placement.node_group) {
        for slot in &placement.slots {
            if let Some(node) = group.nodes.iter_mut().find(|n| n.name == slot.node) {
                node.used_cpu += shape.cpu;
                node.used_memory_mb += shape.memory_mb;
                for id in &slot.gpu_ids {
                    if let Some(flag) = node.gpus.get_mut(*id as usize) {
                        *flag = true;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{MachineInfo, NodeGroupConfig};

    fn shape(name: &str, cpu: f64, memory_mb: i64, gpus: i64) -> ShapeConfig {
        ShapeConfig {
            name: name.into(),
            cpu,
            memory_mb,
            gpus,
            accelerator_type: None,
            accelerator_memory_mb: None,
            compute_capability: None,
            ephemeral_storage_gb: None,
            description: None,
        }
    }

    fn config(nodes: u32, cpu: f64, memory_mb: i64, gpus: i64) -> Config {
        let mut config = Config::for_machine(
            "/tmp/x",
            &MachineInfo {
                hostname: "h".into(),
                cpus: 1.0,
                memory_mb: 1,
                gpus: 0,
                gpu_product: None,
                gpu_memory_mb: None,
            },
        );
        config.node_groups = vec![NodeGroupConfig {
            name: "g".into(),
            cpu,
            memory_mb,
            gpus,
            gpu_product: None,
            nodes: Some(nodes),
            node_names: None,
            node_selector: Default::default(),
            privileged_roles: Vec::new(),
        }];
        config
    }

    #[test]
    fn replicas_fill_nodes_first_fit_and_get_distinct_gpus() {
        let config = config(2, 8.0, 65536, 4);
        let groups = group_states(&config, []);
        let g = &groups["g"];
        let gpu2 = shape("gpu.2", 2.0, 8192, 2);
        let cases: Vec<(i64, Option<Vec<(&str, Vec<u32>)>>)> = vec![
            (1, Some(vec![("g-node-1", vec![0, 1])])),
            (2, Some(vec![("g-node-1", vec![0, 1]), ("g-node-1", vec![2, 3])])),
            (3, Some(vec![("g-node-1", vec![0, 1]), ("g-node-1", vec![2, 3]), ("g-node-2", vec![0, 1])])),
            (5, None),
        ];
        for (count, expected) in cases {
            let got = fit(g, &gpu2, count, &[])
                .map(|slots| slots.into_iter().map(|s| (s.node, s.gpu_ids)).collect::<Vec<_>>());
            let expected = expected.map(|e| e.into_iter().map(|(n, g)| (n.to_string(), g)).collect::<Vec<_>>());
            assert_eq!(got, expected, "{count} replicas");
        }
        let only_second = fit(g, &gpu2, 1, &["g-node-2".to_string()]).unwrap();
        assert_eq!(only_second[0].node, "g-node-2");
    }

    #[test]
    fn held_placements_reduce_what_is_free() {
        let config = config(1, 4.0, 16384, 2);
        let held =
            Placement { node_group: "g".into(), slots: vec![Slot { node: "g-node-1".into(), gpu_ids: vec![0] }] };
        let gpu1 = shape("gpu.1", 1.0, 4096, 1);
        let groups = group_states(&config, [(&held, &gpu1)]);
        let slots = fit(&groups["g"], &gpu1, 1, &[]).unwrap();
        assert_eq!(slots[0].gpu_ids, [1]);
        assert!(fit(&groups["g"], &gpu1, 2, &[]).is_none());
    }

    #[test]
    fn shortages_name_what_is_missing() {
        let config = config(1, 2.0, 8192, 0);
        let small = shape("cpu.small", 1.0, 4096, 0);
        let held = Placement { node_group: "g".into(), slots: vec![Slot { node: "g-node-1".into(), gpu_ids: vec![] }] };
        let groups = group_states(&config, [(&held, &small)]);
        let g = &groups["g"];
        let cases = [
            (shape("cpu.small", 1.0, 4096, 0), 2, "needs 2 CPUs, 1 free and 8192 MiB memory, 4096 MiB free in group g"),
            (shape("gpu", 1.0, 1024, 2), 1, "needs 2 GPUs, 0 free in group g"),
            (shape("mem", 0.5, 6000, 0), 1, "needs 6000 MiB memory, 4096 MiB free in group g"),
        ];
        for (shape, count, expected) in cases {
            assert_eq!(shortage(g, &shape, count, &[]), expected);
        }
        // Enough in total but split over two nodes.
        let split = config_two_half_full();
        let groups = group_states(&split.0, [(&split.1, &split.2), (&split.3, &split.2)]);
        let message = shortage(&groups["g"], &shape("big", 2.0, 1024, 0), 1, &[]);
        assert!(message.contains("no node of group g has that much free"), "{message}");
    }

    fn config_two_half_full() -> (Config, Placement, ShapeConfig, Placement) {
        let config = config(2, 2.0, 8192, 0);
        let one = shape("one", 1.0, 1024, 0);
        let a = Placement { node_group: "g".into(), slots: vec![Slot { node: "g-node-1".into(), gpu_ids: vec![] }] };
        let b = Placement { node_group: "g".into(), slots: vec![Slot { node: "g-node-2".into(), gpu_ids: vec![] }] };
        (config, a, one, b)
    }

    #[test]
    fn preemption_evicts_the_fewest_lowest_priority_newest_jobs() {
        let config = config(1, 4.0, 16384, 0);
        let one = shape("one", 1.0, 1024, 0);
        let placed = |slots: usize| Placement {
            node_group: "g".into(),
            slots: (0..slots).map(|_| Slot { node: "g-node-1".into(), gpu_ids: vec![] }).collect(),
        };
        let candidates = vec![
            Candidate {
                job_id: "old-low".into(),
                priority: 1000,
                started_at: 1,
                placement: placed(1),
                shape: one.clone(),
            },
            Candidate {
                job_id: "new-low".into(),
                priority: 1000,
                started_at: 5,
                placement: placed(1),
                shape: one.clone(),
            },
            Candidate { job_id: "mid".into(), priority: 4000, started_at: 2, placement: placed(2), shape: one.clone() },
        ];
        let held: Vec<(Placement, ShapeConfig)> =
            candidates.iter().map(|c| (c.placement.clone(), c.shape.clone())).collect();
        let groups = group_states(&config, held.iter().map(|(p, s)| (p, s)));
        let g = &groups["g"];
        let cases: Vec<(i64, Option<Vec<&str>>)> = vec![
            (1, Some(vec!["new-low"])),
            (2, Some(vec!["new-low", "old-low"])),
            (3, Some(vec!["new-low", "old-low", "mid"])),
            (5, None),
        ];
        for (count, expected) in cases {
            let got = plan_preemption(g, &one, count, &[], candidates.clone());
            assert_eq!(got, expected.map(|v| v.into_iter().map(String::from).collect()), "{count} replicas");
        }
    }
}
