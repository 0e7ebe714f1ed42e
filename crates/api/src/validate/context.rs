//! The rules that need the server's data (`validate_job_in`): the shape,
//! node groups, nodes and secrets exist, the job fits, shared memory fits
//! the shape, and what the executor requires.

use super::*;

/// What the rules read of a resource shape (and what the console's form
/// shows of it): a [`Shape`] without the rest, so the console builds and
/// keeps only this much of each (building and dropping whole shapes and
/// groups, mostly defaults, was part of the form's download).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShapeChoice {
    pub id: Option<String>,
    pub description: Option<String>,
    pub cpu: Option<f64>,
    pub memory_in_mb: Option<i64>,
    pub accelerator_num: Option<f64>,
    pub accelerator_type: Option<String>,
    pub accelerator_memory_in_mb: Option<i64>,
    pub accelerator_compute_capability: Option<String>,
    pub ephemeral_storage_in_gb: Option<i64>,
}

impl From<&Shape> for ShapeChoice {
    fn from(shape: &Shape) -> ShapeChoice {
        let spec = &shape.spec;
        ShapeChoice {
            id: shape.metadata.id.clone(),
            description: spec.description.clone(),
            cpu: spec.cpu,
            memory_in_mb: spec.memory_in_mb,
            accelerator_num: spec.accelerator_num,
            accelerator_type: spec.accelerator_type.clone(),
            accelerator_memory_in_mb: spec.accelerator_memory_in_mb,
            accelerator_compute_capability: spec.accelerator_compute_capability.clone(),
            ephemeral_storage_in_gb: spec.ephemeral_storage_in_gb,
        }
    }
}

/// What the rules read of a node group (and what the console's form shows
/// of it): its id, nodes, capacity and queue.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeGroupChoice {
    pub id: Option<String>,
    pub nodes: Vec<crate::NodeInfo>,
    pub capacity: crate::ResourceAmounts,
    pub queued_jobs: i64,
}

impl From<&crate::NodeGroup> for NodeGroupChoice {
    fn from(group: &crate::NodeGroup) -> NodeGroupChoice {
        NodeGroupChoice {
            id: group.metadata.id.clone(),
            nodes: group.spec.nodes.clone(),
            capacity: group.spec.capacity,
            queued_jobs: group.status.queued_jobs,
        }
    }
}

/// What the server knows that the rules of a job depend on: the resource
/// shapes, node groups and secrets that exist. The console fills it from the
/// API; the server from its configuration and store.
#[derive(Debug, Clone, Default)]
pub struct ValidationContext {
    pub shapes: Vec<ShapeChoice>,
    pub node_groups: Vec<NodeGroupChoice>,
    /// Names of the secrets the submitting user may reference.
    pub secret_names: Vec<String>,
    /// What the server's executor needs of every job.
    pub requirements: crate::JobRequirements,
    /// Names of the image pull secrets the submitting user may name; `None`
    /// when they are not checked (on Kubernetes a name Jobdeck does not
    /// store names a Secret of the namespace).
    pub image_pull_secret_names: Option<Vec<String>>,
}

impl ValidationContext {
    /// The shape a job runs with: the one it names; when it names none, the
    /// smallest that meets its requirements (`spec.resources`), or, without
    /// requirements, the server's first shape (the server's default).
    pub fn shape_for(&self, spec: &JobSpec) -> Option<&ShapeChoice> {
        match (spec.resource_shape.as_deref(), &spec.resources) {
            (Some(name), _) => self.shapes.iter().find(|s| s.id.as_deref() == Some(name)),
            (None, Some(requirements)) => {
                chosen_offer(&offers(spec, requirements, &self.shapes, &self.node_groups)).map(|o| o.shape)
            }
            (None, None) => self.shapes.first(),
        }
    }
}

/// Every problem with `job`, including the rules that need server data: the
/// shape exists, the node groups exist, the nodes belong to them, the
/// referenced secrets exist, shared memory fits in the shape's memory, what
/// the executor requires (a command, an image, known volumes) and that the
/// job fits on the chosen nodes at all.
pub fn validate_job_in(job: &LeptonJob, context: &ValidationContext) -> FieldErrors {
    let name_max_len = context.requirements.job_name_max_length.unwrap_or(JOB_NAME_MAX_LEN);
    let mut problems = Problems(validate_job_with_name_limit(job, name_max_len));
    let spec = &job.spec;
    if let Some(name) = spec.resource_shape.as_deref() {
        if !name.is_empty() && context.shape_for(spec).is_none() {
            let known: Vec<&str> = context.shapes.iter().filter_map(|s| s.id.as_deref()).collect();
            problems.add(
                "spec.resource_shape",
                format!("no resource shape named '{name}'; this workspace has {}", or_list(&known)),
            );
        }
    }
    if let Some(requirements) = &spec.resources {
        check_offers(spec, &offers(spec, requirements, &context.shapes, &context.node_groups), &mut problems);
    }
    if let (Some(size), Some(shape)) = (spec.shared_memory_size, context.shape_for(spec)) {
        if let Some(memory) = shape.memory_in_mb {
            if size > memory {
                let id = shape.id.as_deref().unwrap_or("");
                problems.add(
                    "spec.shared_memory_size",
                    format!("must be at most the memory of shape '{id}' ({memory} MiB)"),
                );
            }
        }
    }
    let group_id = |g: &NodeGroupChoice| g.id.clone().unwrap_or_default();
    let groups = spec.node_groups();
    for (i, group) in groups.iter().enumerate() {
        if !group.is_empty() && !context.node_groups.iter().any(|g| &group_id(g) == group) {
            problems.add(
                format!("spec.affinity.allowed_dedicated_node_groups[{i}]"),
                format!("no node group named '{group}'"),
            );
        }
    }
    for (i, node) in spec.nodes().iter().enumerate() {
        let belongs = context
            .node_groups
            .iter()
            .filter(|g| groups.is_empty() || groups.contains(&group_id(g)))
            .any(|g| g.nodes.iter().any(|n| &n.name == node));
        if !node.is_empty() && !belongs {
            problems.add(
                format!("spec.affinity.allowed_nodes_in_node_group[{i}]"),
                format!("node '{node}' is not in the chosen node groups"),
            );
        }
    }
    if let Some(known) = &context.image_pull_secret_names {
        for (i, name) in spec.image_pull_secrets().iter().enumerate() {
            if !name.is_empty() && !known.contains(name) {
                problems.add(format!("spec.image_pull_secrets[{i}]"), format!("no image pull secret named '{name}'"));
            }
        }
    }
    for (i, env) in spec.envs().iter().enumerate() {
        if let Some(secret) = env.secret_ref().filter(|s| !s.is_empty()) {
            if !context.secret_names.iter().any(|s| s == secret) {
                problems
                    .add(format!("spec.envs[{i}].value_from.secret_name_ref"), format!("no secret named '{secret}'"));
            }
        }
    }
    check_requirements(spec, &context.requirements, &mut problems);
    // Whether the job can ever fit is a question about an otherwise valid
    // job: asked of an out-of-range count it would only add a second message
    // about the number the user must change anyway.
    if problems.0.is_empty() {
        if let Some(shape) = context.shape_for(spec) {
            problems.0.extend(check_fit(spec, shape, &context.node_groups));
        }
    }
    problems.0
}

/// What the executor requires of every job (`JobRequirements`).
pub(super) fn check_requirements(spec: &JobSpec, requirements: &crate::JobRequirements, problems: &mut Problems) {
    let command_empty = spec.container.command.as_ref().is_none_or(|c| c.is_empty() || c[0].trim().is_empty());
    if requirements.command_required && command_empty {
        let also = if spec.container.args().is_empty() { "" } else { " (spec.container.args are its arguments)" };
        problems.add(
            "spec.container.command",
            format!("a command is required on this server: it runs replicas as plain processes, and an empty command means the image's own entrypoint, which only a container runs{also}"),
        );
    }
    if requirements.image_ignored && spec.container.working_dir.is_some() {
        problems.add(
            "spec.container.working_dir",
            "is a directory inside the container, and this server runs replicas as plain processes: change directory in the command instead",
        );
    }
    if requirements.image_ignored && spec.container.user.is_some() {
        problems.add(
            "spec.container.user",
            "is a user inside the container, and this server runs replicas as plain processes, as the server's own user",
        );
    }
    if requirements.image_required && spec.container.image.as_deref().is_none_or(|i| i.trim().is_empty()) {
        problems.add("spec.container.image", "an image is required on this server: it runs replicas in containers");
    }
    for (i, env) in spec.envs().iter().enumerate() {
        if let Some(pattern) = requirements.refused_env_name(&env.name) {
            problems.add(
                format!("spec.envs[{i}].name"),
                format!(
                    "'{pattern}' may not be set on this server: a process outside the job's container would read it"
                ),
            );
        }
        if requirements.multi_line_env_refused && env.value.as_deref().is_some_and(|v| v.contains(['\n', '\r'])) {
            problems.add(
                format!("spec.envs[{i}].value"),
                "must be one line on this server: its container engine cannot pass a line break to the container safely",
            );
        }
    }
    if spec.privileged() {
        let allowed = &requirements.privileged_node_groups;
        let groups = spec.node_groups();
        if allowed.is_empty() {
            problems.add(
                "spec.user_security_context.privileged",
                "Jobdeck does not run privileged containers for you here: no node group allows them for your role",
            );
        } else if groups.is_empty() || groups.iter().any(|g| !allowed.contains(g)) {
            let names: Vec<&str> = allowed.iter().map(String::as_str).collect();
            problems.add(
                "spec.user_security_context.privileged",
                format!(
                    "runs only on node groups that allow privileged containers for your role: choose {} in spec.affinity.allowed_dedicated_node_groups",
                    or_list(&names)
                ),
            );
        }
    }
    if let Some(volumes) = &requirements.volumes {
        let known: Vec<&str> = volumes.iter().map(String::as_str).collect();
        for (i, mount) in spec.mounts().iter().enumerate() {
            if !mount.from.is_empty() && volume_key(&mount.from, volumes).is_none() {
                problems.add(
                    format!("spec.mounts[{i}].from"),
                    format!("no volume named '{}' on this server; it has {}", mount.from, or_list(&known)),
                );
            }
        }
    }
}

/// Whether the job could run at all: `parallelism` replicas of its shape at
/// once on the nodes of its node groups (the chosen nodes only, when it
/// names some), with nothing else running. A job that could not would wait
/// forever, so it is refused with what is too big. The server runs the same
/// check on its own view of the cluster before it schedules a stored job.
pub fn check_fit(spec: &JobSpec, shape: &ShapeChoice, node_groups: &[NodeGroupChoice]) -> FieldErrors {
    let mut problems = Problems(FieldErrors::new());
    let cpu = shape.cpu.unwrap_or(0.0);
    let memory = shape.memory_in_mb.unwrap_or(0);
    let gpus = shape.accelerator_num.unwrap_or(0.0).ceil() as i64;
    let shape_id = shape.id.as_deref().unwrap_or("");
    let parallelism = spec.parallelism().clamp(1, spec.completions().max(1));
    let chosen = spec.node_groups();
    let nodes = spec.nodes();
    let per_node = |n: &crate::NodeInfo| {
        let by_cpu = if cpu > 0.0 { (n.capacity.cpu / cpu + 1e-9).floor() as i64 } else { i64::MAX };
        let by_memory = if memory > 0 { n.capacity.memory_in_mb / memory } else { i64::MAX };
        let by_gpu = if gpus > 0 { n.capacity.gpu / gpus } else { i64::MAX };
        by_cpu.min(by_memory).min(by_gpu)
    };
    let mut best: Option<(&str, String)> = None;
    let mut node_known = nodes.is_empty();
    for group in node_groups {
        let name = group.id.as_deref().unwrap_or("");
        if !chosen.is_empty() && !chosen.iter().any(|c| c == name) {
            continue;
        }
        let usable: Vec<&crate::NodeInfo> =
            group.nodes.iter().filter(|n| nodes.is_empty() || nodes.contains(&n.name)).collect();
        node_known |= !usable.is_empty();
        let fits = usable.iter().map(|n| per_node(n)).fold(0i64, |a, b| a.saturating_add(b));
        if fits >= parallelism {
            return problems.0;
        }
        if best.is_none() && !usable.is_empty() {
            best = Some(match usable.iter().map(|n| per_node(n)).max().unwrap_or(0) {
                0 => {
                    let largest = usable
                        .iter()
                        .max_by(|a, b| a.capacity.cpu.total_cmp(&b.capacity.cpu))
                        .map(|n| n.capacity)
                        .unwrap_or_default();
                    (
                        "spec.resource_shape",
                        format!(
                            "shape '{shape_id}' needs {} CPU, {memory} MiB memory and {gpus} GPU per replica, more than any node of group '{name}' has ({} CPU, {} MiB, {} GPU)",
                            decimal(cpu),
                            decimal(largest.cpu),
                            largest.memory_in_mb,
                            largest.gpu
                        ),
                    )
                }
                _ => (
                    "spec.parallelism",
                    format!(
                        "{parallelism} replicas must run at once, but group '{name}' can hold at most {fits} replicas of shape '{shape_id}'"
                    ),
                ),
            });
        }
    }
    if !node_known {
        problems.add("spec.affinity.allowed_nodes_in_node_group", "none of these nodes is in the chosen node groups");
    } else if let Some((path, message)) = best {
        problems.add(path, message);
    }
    problems.0
}

/// A CPU count as people write it (`2`, `0.5`), without a float printer:
/// in the console's WebAssembly that printer alone costs kilobytes.
pub(super) fn decimal(value: f64) -> String {
    let tenths = (value * 10.0).round() as i64;
    match tenths % 10 {
        0 => (tenths / 10).to_string(),
        rest => format!("{}.{}", tenths / 10, rest.abs()),
    }
}
