//! The rules a job must follow, run identically by the console before it
//! submits and by the server on every write.
//!
//! There are two entry points, and both return every problem at once as one
//! message per field path (`spec.envs[2].name`):
//!
//! * [`validate_job`] runs every rule that needs nothing but the job;
//! * [`validate_job_in`] adds the rules that need the server's data (the
//!   shape, node groups, nodes and secrets exist; shared memory fits the
//!   shape).
//!
//! Every rule is a hand-written check here, single-field ranges included
//! (`check_ranges`). There is deliberately no regular expression and no
//! `validator` derive: the console runs this code as WebAssembly, and the
//! derive's error machinery (hash maps of `serde_json::Value` parameters) cost
//! the console 7 KB brotli for what `check_ranges` does in a few hundred
//! bytes (see `docs/measurements.md`).
//!
//! When one field breaks several rules, the first is reported: the checks run
//! from the most basic ("must not be empty") to the relational ("is listed
//! twice"), so fixing the reported problem is always the next step.

use crate::defaults::{split_image_reference, Priority, Protocol, PRIORITY_CLASSES};
use crate::{Container, EnvVar, FieldErrors, JobSpec, LeptonJob, Metadata, Mount, Shape};

/// The longest job name Lepton allows (the TAO SDK's generated names are
/// this long), and the default of a workspace's own limit
/// (`JobRequirements::job_name_max_length`; the managed-cluster page's 20 is
/// such a setting).
pub const JOB_NAME_MAX_LEN: usize = 36;
/// The longest name part of a label or annotation key, and the longest label
/// value (Kubernetes).
pub const LABEL_NAME_MAX_LEN: usize = 63;
pub const LABEL_VALUE_MAX_LEN: usize = 63;
/// The longest prefix (`example.com/`) of a label or annotation key.
pub const LABEL_PREFIX_MAX_LEN: usize = 253;
/// Key prefixes Kubernetes keeps for itself; the Kubernetes executor copies
/// labels onto pods, so Jobdeck keeps them out of user labels too.
pub const RESERVED_LABEL_PREFIXES: [&str; 2] = ["kubernetes.io", "k8s.io"];
/// The key prefix of the labels and annotations Jobdeck puts on what it
/// creates (`jobdeck.dev/job-id`, `jobdeck.dev/run`, …). The Kubernetes
/// executor finds a run's Job and pods by them, so a user's key under it
/// could make Jobdeck adopt or lose objects. It is refused here, when the
/// job is created, rather than when a run starts on Kubernetes, so every
/// executor and the console give the same answer.
pub const JOBDECK_LABEL_PREFIX: &str = "jobdeck.dev";
/// The most bytes all annotation keys and values may take together
/// (Kubernetes' limit).
pub const ANNOTATIONS_MAX_BYTES: usize = 256 * 1024;
/// The longest image tag (the OCI distribution spec).
pub const IMAGE_TAG_MAX_LEN: usize = 128;
/// The longest port name (an IANA service name, as Kubernetes requires).
pub const PORT_NAME_MAX_LEN: usize = 15;
/// The most replicas a job may have: completions, parallelism, workers and
/// the workers of a segment. This is the limit Kubernetes puts on an Indexed
/// Job's completions and parallelism.
pub const REPLICAS_MAX: i64 = 100_000;
/// The most retries any retry setting may ask for (`backoff_limit`,
/// `max_failure_retry`, `max_job_failure_retry`): Kubernetes keeps
/// `backoffLimit` in an `int32`.
pub const RETRIES_MAX: i64 = i32::MAX as i64;
/// The longest duration a job may name, in seconds: ten years of 365 days
/// (deadline, maximum queued duration, archive time).
pub const DURATION_MAX_SECONDS: i64 = 10 * 365 * 24 * 60 * 60;
/// The most memory a size may name, in MiB: 1 PiB, far above any machine,
/// and still far from overflowing when counted in bytes.
pub const MEMORY_MAX_MIB: i64 = 1 << 30;
/// The latest start time, in Unix seconds: 9999-12-31T23:59:59Z.
pub const START_AT_MAX: i64 = 253_402_300_799;
/// The highest port number.
pub const PORT_MAX: i64 = 65_535;
/// Environment variables Jobdeck sets in every replica.
pub const RESERVED_ENV_NAMES: [&str; 2] = ["JOB_COMPLETION_INDEX", "JOB_COMPLETIONS"];
/// The prefix of the variables Jobdeck (like Lepton) sets: `LEPTON_JOB_NAME`, …
pub const RESERVED_ENV_PREFIX: &str = "LEPTON_";
/// Mount paths that would hide the operating system of the image. Only the
/// path itself is reserved: `/usr` is, `/usr/share/data` is not. This is
/// Lepton's list (`leptonai/api/v2/job_validation.py`) plus `/var/run`,
/// `/lib32` and `/libx32`.
pub const RESERVED_MOUNT_PATHS: [&str; 24] = [
    "/",
    "/bin",
    "/boot",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/media",
    "/opt",
    "/run",
    "/sbin",
    "/srv",
    "/usr",
    "/usr/bin",
    "/usr/lib",
    "/usr/local",
    "/usr/sbin",
    "/var",
    "/var/run",
    "/sys",
    "/proc",
    "/dev",
    "/dev/shm",
];
/// Trees nothing may be mounted into: the kernel's file systems, the devices,
/// the shared memory Jobdeck mounts at `/dev/shm`, and where Kubernetes puts
/// service-account secrets.
pub const RESERVED_MOUNT_TREES: [&str; 5] = ["/proc", "/sys", "/dev", "/run/secrets", "/var/run/secrets"];

/// Problems found so far: one message per field path, the first one found.
#[derive(Default)]
struct Problems(FieldErrors);

impl Problems {
    fn add(&mut self, path: impl Into<String>, message: impl Into<String>) {
        let messages = self.0.entry(path.into()).or_default();
        if messages.is_empty() {
            messages.push(message.into());
        }
    }
}

/// The path of one entry of a string map, such as a label:
/// `metadata.labels["team"]`. The key is quoted as a JSON string so keys with
/// dots and slashes (`example.com/team`) stay unambiguous.
pub fn entry_path(map_path: &str, key: &str) -> String {
    let quoted = serde_json::to_string(key).unwrap_or_default();
    format!("{map_path}[{quoted}]")
}

/// Every problem with `job` that can be found without the server's data, as
/// one message per field path. Empty means valid.
pub fn validate_job(job: &LeptonJob) -> FieldErrors {
    validate_job_with_name_limit(job, JOB_NAME_MAX_LEN)
}

fn validate_job_with_name_limit(job: &LeptonJob, name_max_len: usize) -> FieldErrors {
    let mut problems = Problems::default();
    check_ranges(&job.spec, &mut problems);
    check_metadata(&job.metadata, name_max_len, &mut problems);
    check_spec(&job.spec, &mut problems);
    problems.0
}

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
    /// The shape a job runs with: the one it names, or, when it names none,
    /// the server's first shape (the server's default).
    pub fn shape_for(&self, spec: &JobSpec) -> Option<&ShapeChoice> {
        match spec.resource_shape.as_deref() {
            Some(name) => self.shapes.iter().find(|s| s.id.as_deref() == Some(name)),
            None => self.shapes.first(),
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
fn check_requirements(spec: &JobSpec, requirements: &crate::JobRequirements, problems: &mut Problems) {
    let command_empty = spec.container.command.as_ref().is_none_or(|c| c.is_empty() || c[0].trim().is_empty());
    if requirements.command_required && command_empty {
        problems.add(
            "spec.container.command",
            "a command is required on this server: it runs replicas as plain processes, and an empty command means the image's own entrypoint, which only a container runs",
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
fn decimal(value: f64) -> String {
    let tenths = (value * 10.0).round() as i64;
    match tenths % 10 {
        0 => (tenths / 10).to_string(),
        rest => format!("{}.{}", tenths / 10, rest.abs()),
    }
}

/// A number that must lie in `min..=max` when it is set.
fn check_range(problems: &mut Problems, path: &str, value: Option<i64>, min: i64, max: i64) {
    if value.is_some_and(|v| v < min || v > max) {
        problems.add(path, format!("must be between {min} and {max}"));
    }
}

/// The ranges of a spec's top-level numbers: `(field, least, most)`. The
/// checks below and the server's OpenAPI document both read this table.
pub const SPEC_RANGES: [(&str, i64, i64); 10] = [
    ("completions", 1, REPLICAS_MAX),
    ("parallelism", 1, REPLICAS_MAX),
    ("workers", 1, REPLICAS_MAX),
    ("backoff_limit", 0, RETRIES_MAX),
    ("active_deadline_seconds", 1, DURATION_MAX_SECONDS),
    ("max_queued_duration_seconds", 1, DURATION_MAX_SECONDS),
    ("max_failure_retry", 0, RETRIES_MAX),
    ("max_job_failure_retry", 0, RETRIES_MAX),
    ("ttl_seconds_after_finished", 0, DURATION_MAX_SECONDS),
    ("shared_memory_size", 0, MEMORY_MAX_MIB),
];

/// The ranges of numbers inside a spec's parts: `(type, field, least,
/// most)`, by the contract's type names. The checks below and the server's
/// OpenAPI document (on those types' schemas) both read this table.
pub const PART_RANGES: [(&str, &str, i64, i64); 5] = [
    ("ContainerPort", "container_port", 1, PORT_MAX),
    ("ContainerPort", "host_port", 1, PORT_MAX),
    ("TimeSchedule", "start_at", 0, START_AT_MAX),
    ("SegmentConfig", "count_per_segment", 1, REPLICAS_MAX),
    ("MountOptions", "local_cache_size_mib", 0, MEMORY_MAX_MIB),
];

/// Checks `value` against the range [`PART_RANGES`] gives `kind.field`.
fn check_part_range(problems: &mut Problems, path: &str, kind: &str, field: &str, value: Option<i64>) {
    let (_, _, min, max) = PART_RANGES
        .into_iter()
        .find(|(k, f, _, _)| *k == kind && *f == field)
        .unwrap_or_else(|| unreachable!("{kind}.{field} is not in PART_RANGES"));
    check_range(problems, path, value, min, max);
}

/// The value of a field of [`SPEC_RANGES`].
fn spec_number(spec: &JobSpec, field: &str) -> Option<i64> {
    match field {
        "completions" => spec.completions,
        "parallelism" => spec.parallelism,
        "workers" => spec.workers,
        "backoff_limit" => spec.backoff_limit,
        "active_deadline_seconds" => spec.active_deadline_seconds,
        "max_queued_duration_seconds" => spec.max_queued_duration_seconds,
        "max_failure_retry" => spec.max_failure_retry,
        "max_job_failure_retry" => spec.max_job_failure_retry,
        "ttl_seconds_after_finished" => spec.ttl_seconds_after_finished,
        "shared_memory_size" => spec.shared_memory_size,
        other => unreachable!("{other} is not in SPEC_RANGES"),
    }
}

/// A job name as a regular expression (the length is [`check_job_name`]'s
/// limit), for schemas: what [`check_job_name`] accepts.
pub const JOB_NAME_PATTERN: &str = "^[a-z]([-a-z0-9]*[a-z0-9])?$";

/// Every single-field range of a spec. These run first, so a number out of
/// range is what its field reports. Every number has an upper bound as well
/// as a lower one: the server turns seconds into milliseconds and counts
/// replicas into loops and Kubernetes `int32` fields, and a bound here keeps
/// all of that far from overflowing.
fn check_ranges(spec: &JobSpec, problems: &mut Problems) {
    for (field, min, max) in SPEC_RANGES {
        check_range(problems, &format!("spec.{field}"), spec_number(spec, field), min, max);
    }
    let start_at = spec.time_schedule.as_ref().and_then(|t| t.start_at);
    check_part_range(problems, "spec.time_schedule.start_at", "TimeSchedule", "start_at", start_at);
    let segment = spec.segment_config.as_ref().map(|s| s.count_per_segment);
    let path = "spec.segment_config.count_per_segment";
    check_part_range(problems, path, "SegmentConfig", "count_per_segment", segment);
    for (i, port) in spec.container.ports().iter().enumerate() {
        let path = format!("spec.container.ports[{i}]");
        let container_port = Some(port.container_port);
        check_part_range(
            problems,
            &format!("{path}.container_port"),
            "ContainerPort",
            "container_port",
            container_port,
        );
        check_part_range(problems, &format!("{path}.host_port"), "ContainerPort", "host_port", port.host_port);
    }
    for (i, mount) in spec.mounts().iter().enumerate() {
        let cache = mount.mount_options.as_ref().and_then(|o| o.local_cache_size_mib);
        let path = format!("spec.mounts[{i}].mount_options.local_cache_size_mib");
        check_part_range(problems, &path, "MountOptions", "local_cache_size_mib", cache);
    }
}

/// `a`, `a or b`, `a, b or c`; `none` when empty.
fn or_list(items: &[&str]) -> String {
    match items {
        [] => "none".into(),
        [one] => format!("'{one}'"),
        [rest @ .., last] => {
            let rest: Vec<String> = rest.iter().map(|s| format!("'{s}'")).collect();
            format!("{} or '{last}'", rest.join(", "))
        }
    }
}

/// Whether `s` has the two bytes `pair` next to each other. (Cheaper in the
/// console's WebAssembly than the general substring search.)
fn has_pair(s: &str, pair: &[u8; 2]) -> bool {
    s.as_bytes().windows(2).any(|w| w == pair)
}

/// The keys of a list's items, to find the ones given twice, in the order
/// the items come.
#[derive(Default)]
struct Keys(Vec<(String, usize)>);

impl Keys {
    fn add(&mut self, key: impl Into<String>, index: usize) {
        self.0.push((key.into(), index));
    }

    /// Each item whose key an earlier item had: its index, the key and the
    /// index of the first item with it.
    fn repeats(self) -> Vec<(usize, String, usize)> {
        let keys = self.0;
        let mut repeats = Vec::new();
        let mut first = 0;
        let order = key_order(&keys);
        for (at, &item) in order.iter().enumerate() {
            let (key, index) = &keys[item];
            if at > 0 && keys[order[at - 1]].0 == *key {
                repeats.push((*index, key.clone(), first));
            } else {
                first = *index;
            }
        }
        repeats
    }
}

/// The positions of `keys` sorted by key, equal keys in the order they
/// came: a merge sort. A map of the keys seen cost the console's form
/// 1.6 KB (brotli) and the standard library's sort 1.2 KB more than this;
/// comparing each key with every one before it would take quadratic time on
/// a hostile list, and the server runs these rules on bodies up to 4 MB.
fn key_order(keys: &[(String, usize)]) -> Vec<usize> {
    let count = keys.len();
    let mut order: Vec<usize> = (0..count).collect();
    let mut merged = vec![0; count];
    let mut width = 1;
    while width < count {
        let mut start = 0;
        while start < count {
            let middle = (start + width).min(count);
            let end = (start + 2 * width).min(count);
            let (mut left, mut right) = (start, middle);
            for slot in &mut merged[start..end] {
                // On equal keys the left run's comes first: the sort is stable.
                let take_left = right >= end || (left < middle && keys[order[left]].0 <= keys[order[right]].0);
                *slot = if take_left { order[left] } else { order[right] };
                if take_left {
                    left += 1;
                } else {
                    right += 1;
                }
            }
            start = end;
        }
        std::mem::swap(&mut order, &mut merged);
        width *= 2;
    }
    order
}

fn has_control(s: &str) -> bool {
    s.chars().any(char::is_control)
}

/// A character that broke a rule, quoted: `'B'`, `'é'`, `'\n'`, `'\''`.
/// Control characters, the quote and the backslash are escaped as Rust
/// writes them; everything else is shown as it is. (`{:?}` would say the
/// same of these, with the Unicode tables of its escaping in the console's
/// download.)
fn quoted(c: char) -> String {
    if c.is_control() || c == '\'' || c == '\\' {
        format!("'{}'", c.escape_default())
    } else {
        format!("'{c}'")
    }
}

// ---------------------------------------------------------------- metadata

/// Checks a job name: starts with a lowercase letter; lowercase letters,
/// digits and hyphens only; ends with a letter or digit; at most `max_len`
/// characters. Returns the first broken rule as a sentence.
pub fn check_job_name(name: &str, max_len: usize) -> Result<(), String> {
    let Some(first) = name.chars().next() else {
        return Err("must not be empty".into());
    };
    if !first.is_ascii_lowercase() {
        return Err("must start with a lowercase letter".into());
    }
    if let Some(bad) = name.chars().find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')) {
        return Err(format!("may contain only lowercase letters, digits and hyphens, not {}", quoted(bad)));
    }
    if name.ends_with('-') {
        return Err("must end with a lowercase letter or a digit".into());
    }
    let len = name.chars().count();
    if len > max_len {
        return Err(format!("must be at most {max_len} characters (it has {len})"));
    }
    Ok(())
}

/// Checks a label or annotation key: a Kubernetes qualified name, an
/// optional DNS-subdomain prefix and `/`, then a name of at most 63 letters,
/// digits, `-`, `_` and `.` that starts and ends with a letter or digit.
pub fn check_qualified_name(key: &str) -> Result<(), String> {
    if key.is_empty() {
        return Err("the key must not be empty".into());
    }
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        check_dns_subdomain(prefix).map_err(|m| format!("the key's prefix {m}"))?;
        // A reserved domain covers its subdomains too (`app.kubernetes.io`),
        // as Kubernetes' own rule does.
        let under = |domain: &str| prefix == domain || prefix.strip_suffix(domain).is_some_and(|p| p.ends_with('.'));
        if RESERVED_LABEL_PREFIXES.iter().any(|r| under(r)) {
            return Err(format!("the key's prefix '{prefix}/' is reserved for Kubernetes"));
        }
        if under(JOBDECK_LABEL_PREFIX) {
            return Err(format!("the key's prefix '{prefix}/' is reserved for Jobdeck"));
        }
    }
    check_label_token(name, LABEL_NAME_MAX_LEN).map_err(|m| format!("the key's name {m}"))
}

/// Checks a label value: empty, or at most 63 letters, digits, `-`, `_` and
/// `.` that start and end with a letter or digit.
pub fn check_label_value(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Ok(());
    }
    check_label_token(value, LABEL_VALUE_MAX_LEN).map_err(|m| format!("the value {m}"))
}

fn check_label_token(token: &str, max: usize) -> Result<(), String> {
    if token.is_empty() {
        return Err("must not be empty".into());
    }
    let len = token.chars().count();
    if len > max {
        return Err(format!("must be at most {max} characters (it has {len})"));
    }
    if let Some(bad) = token.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))) {
        return Err(format!("may contain only letters, digits, '-', '_' and '.', not {}", quoted(bad)));
    }
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !alnum(token.chars().next()) || !alnum(token.chars().last()) {
        return Err("must start and end with a letter or digit".into());
    }
    Ok(())
}

/// A DNS subdomain (RFC 1123): dot-separated labels of lowercase letters,
/// digits and `-`, each starting and ending with a letter or digit; at most
/// 253 characters.
fn check_dns_subdomain(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.len() > LABEL_PREFIX_MAX_LEN {
        return Err(format!("must be at most {LABEL_PREFIX_MAX_LEN} characters (it has {})", name.len()));
    }
    for label in name.split('.') {
        let ok = !label.is_empty()
            && label.len() <= 63
            && label.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !label.starts_with('-')
            && !label.ends_with('-');
        if !ok {
            return Err(format!(
                "'{name}' must be a DNS name: dot-separated parts of lowercase letters, digits and '-', each starting and ending with a letter or digit"
            ));
        }
    }
    Ok(())
}

fn check_metadata(metadata: &Metadata, name_max_len: usize, problems: &mut Problems) {
    // Lepton clients (`lep job create`) send the name as the id. The name's
    // problems are reported at `metadata.name` either way, as the server,
    // which copies such an id into the name, reports them.
    let name = metadata.name.as_deref().or(metadata.id.as_deref()).unwrap_or("");
    if let Err(message) = check_job_name(name, name_max_len) {
        problems.add("metadata.name", message);
    }
    for (key, value) in metadata.labels.iter().flatten() {
        let path = entry_path("metadata.labels", key);
        if let Err(message) = check_qualified_name(key).and_then(|_| check_label_value(value)) {
            problems.add(path, message);
        }
    }
    let mut annotation_bytes = 0;
    for (key, value) in metadata.annotations.iter().flatten() {
        annotation_bytes += key.len() + value.len();
        if let Err(message) = check_qualified_name(key) {
            problems.add(entry_path("metadata.annotations", key), message);
        }
    }
    if annotation_bytes > ANNOTATIONS_MAX_BYTES {
        problems.add(
            "metadata.annotations",
            format!(
                "must take at most {ANNOTATIONS_MAX_BYTES} bytes in total, keys and values (they take {annotation_bytes})"
            ),
        );
    }
}

// -------------------------------------------------------------------- spec

fn check_spec(spec: &JobSpec, problems: &mut Problems) {
    check_replica_counts(spec, problems);
    if spec.resource_shape.as_deref().is_some_and(|s| s.trim().is_empty()) {
        problems.add("spec.resource_shape", "must not be empty; leave it out for the default shape");
    }
    check_container(&spec.container, problems);
    check_envs(spec.envs(), problems);
    check_mounts(spec.mounts(), problems);
    if let Some(affinity) = &spec.affinity {
        let lists = [
            ("spec.affinity.allowed_dedicated_node_groups", &affinity.allowed_dedicated_node_groups),
            ("spec.affinity.allowed_nodes_in_node_group", &affinity.allowed_nodes_in_node_group),
            ("spec.affinity.allowed_providers", &affinity.allowed_providers),
        ];
        for (path, list) in lists {
            check_name_list(path, list.as_deref().unwrap_or(&[]), problems);
        }
    }
    check_name_list("spec.image_pull_secrets", spec.image_pull_secrets(), problems);
    if let Some(class) = spec.queue_config.as_ref().and_then(|q| q.priority_class.as_deref()) {
        if Priority::from_class(class).is_none() {
            let hint = match Priority::parse(class) {
                Some(p) => format!(" ('{class}' is written '{}')", p.class()),
                None => String::new(),
            };
            problems.add(
                "spec.queue_config.priority_class",
                format!("must be one of {} (priority 1 to 9){hint}", PRIORITY_CLASSES.join(", ")),
            );
        }
    }
    if spec.storage_attachments.as_ref().is_some_and(|a| !a.is_empty()) {
        problems.add(
            "spec.storage_attachments",
            "Jobdeck has no object-storage data sources; mount a volume with spec.mounts instead",
        );
    }
    if spec.user_security_context.as_ref().and_then(|c| c.privileged) == Some(true) {
        problems.add("spec.user_security_context.privileged", "Jobdeck does not run privileged containers");
    }
    if spec.reservation_config.as_ref().and_then(|r| r.reservation_id.as_ref()).is_some() {
        problems.add("spec.reservation_config.reservation_id", "Jobdeck has no reservations; leave this out");
    }
    if let Some(segment) = &spec.segment_config {
        let workers = spec.workers();
        if segment.count_per_segment >= 1 {
            if workers <= 1 {
                problems.add("spec.segment_config", "needs more than one worker");
            } else if workers % segment.count_per_segment != 0 {
                problems.add(
                    "spec.segment_config.count_per_segment",
                    format!("must divide the number of workers ({workers})"),
                );
            }
        }
    }
}

/// Workers, completions and parallelism: with more than one worker the
/// other two follow the workers; otherwise parallelism ≤ completions.
fn check_replica_counts(spec: &JobSpec, problems: &mut Problems) {
    // A count out of range reports only its own range: comparing the others
    // with it would name a number the user has to change anyway.
    let in_range = |n: &i64| (1..=REPLICAS_MAX).contains(n);
    if spec.workers.is_some_and(|w| !in_range(&w)) {
        return;
    }
    if let Some(workers) = spec.workers.filter(|w| *w > 1) {
        for (path, value) in [("spec.completions", spec.completions), ("spec.parallelism", spec.parallelism)] {
            if value.is_some_and(|v| v != workers) {
                problems.add(path, format!("must equal the number of workers ({workers}) or be left out"));
            }
        }
        if spec.intra_job_communication == Some(false) {
            problems.add(
                "spec.intra_job_communication",
                format!("must be on (or left out) with more than one worker ({workers})"),
            );
        }
        return;
    }
    let completions = spec.completions();
    if let Some(parallelism) = spec.parallelism {
        if in_range(&completions) && parallelism > completions {
            problems.add("spec.parallelism", format!("must be less than or equal to completions ({completions})"));
        }
    }
}

/// A list of names (node groups, nodes, pull secrets): none empty, none twice.
fn check_name_list(path: &str, names: &[String], problems: &mut Problems) {
    let mut seen = Keys::default();
    for (i, name) in names.iter().enumerate() {
        if name.trim().is_empty() {
            problems.add(format!("{path}[{i}]"), "must not be empty");
        } else {
            seen.add(name, i);
        }
    }
    for (i, name, first) in seen.repeats() {
        problems.add(format!("{path}[{i}]"), format!("'{name}' is already listed at {path}[{first}]"));
    }
}

// --------------------------------------------------------------- container

/// Checks an image reference such as `nvcr.io/nvidia/pytorch:25.08-py3`.
pub fn check_image(image: &str) -> Result<(), String> {
    if image.trim().is_empty() {
        return Err("must not be empty; leave it out for the default".into());
    }
    if image.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("must not contain spaces or control characters".into());
    }
    // An engine reads its command line with option parsing: a reference
    // that starts with '-' would be taken as one of its options (a volume
    // of the host's root, say) wherever it is not behind `--`.
    if image.starts_with('-') {
        return Err("must not start with '-': a container engine would read it as an option".into());
    }
    let parts = split_image_reference(image);
    if parts.name.is_empty() || parts.name.ends_with('/') || parts.name.starts_with('/') {
        return Err("must name an image, such as 'nvcr.io/nvidia/pytorch'".into());
    }
    // Registries are host names (case-insensitive); repository paths must be
    // lowercase or every container engine refuses to pull them.
    let (host, repository) = match parts.name.split_once('/') {
        Some((host, rest)) if host.contains(['.', ':']) || host == "localhost" => (Some(host), rest),
        _ => (None, parts.name),
    };
    if repository.chars().any(|c| c.is_ascii_uppercase()) {
        return Err(format!("must be lowercase in its repository path ('{repository}')"));
    }
    if let Some(host) = host {
        check_registry_host(host)?;
    }
    for part in repository.split('/') {
        check_repository_part(part)?;
    }
    if let Some(tag) = parts.tag {
        check_image_tag(tag).map_err(|m| format!("has an invalid tag: it {m}"))?;
    }
    if let Some(digest) = parts.digest {
        let valid = digest.split_once(':').is_some_and(|(algorithm, hex)| {
            !algorithm.is_empty() && !hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit())
        });
        if !valid {
            return Err(format!("has an invalid digest '{digest}': it must look like 'sha256:<hex>'"));
        }
    }
    Ok(())
}

/// Checks the registry of an image reference: a host name (letters,
/// digits and '-' between dots) or a bracketed IPv6 address, with an
/// optional port.
fn check_registry_host(host: &str) -> Result<(), String> {
    let bad = || Err(format!("has an invalid registry '{host}': it must be a host name with an optional port"));
    let (name, port) = match host.rsplit_once(':') {
        Some((name, port)) if !name.ends_with(':') && !port.contains(']') => (name, Some(port)),
        _ => (host, None),
    };
    if port.is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit())) {
        return bad();
    }
    if let Some(inner) = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        if inner.is_empty() || !inner.chars().all(|c| c.is_ascii_hexdigit() || c == ':') {
            return bad();
        }
        return Ok(());
    }
    let label_ok = |label: &str| {
        let bytes = label.as_bytes();
        !bytes.is_empty()
            && bytes[0].is_ascii_alphanumeric()
            && bytes[bytes.len() - 1].is_ascii_alphanumeric()
            && bytes.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-')
    };
    if name.split('.').all(label_ok) {
        Ok(())
    } else {
        bad()
    }
}

/// Checks one part of an image's repository path (between slashes):
/// lowercase letters and digits, joined by one '.', one or two '_', or any
/// number of '-' (the OCI distribution grammar).
fn check_repository_part(part: &str) -> Result<(), String> {
    let bad = || {
        Err(format!(
            "has an invalid name part '{part}': each part is lowercase letters and digits, joined by '.', '_', '__' or '-'"
        ))
    };
    let bytes = part.as_bytes();
    let alphanumeric = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if !bytes.first().is_some_and(alphanumeric) || !bytes.last().is_some_and(alphanumeric) {
        return bad();
    }
    // The separator before the current character: its first character,
    // its length and whether all of it is that character.
    let (mut first, mut length, mut uniform) = (0u8, 0usize, true);
    for b in bytes {
        if alphanumeric(b) {
            let allowed = length == 0
                || (uniform && first == b'-')
                || (uniform && first == b'_' && length <= 2)
                || (first == b'.' && length == 1);
            if !allowed {
                return bad();
            }
            length = 0;
        } else if matches!(b, b'.' | b'_' | b'-') {
            if length == 0 {
                (first, uniform) = (*b, true);
            } else {
                uniform &= *b == first;
            }
            length += 1;
        } else {
            return bad();
        }
    }
    Ok(())
}

/// Checks an image tag: at most 128 letters, digits, `_`, `.` and `-`, not
/// starting with `.` or `-`.
pub fn check_image_tag(tag: &str) -> Result<(), String> {
    let Some(first) = tag.chars().next() else {
        return Err("must not be empty".into());
    };
    let len = tag.chars().count();
    if len > IMAGE_TAG_MAX_LEN {
        return Err(format!("must be at most {IMAGE_TAG_MAX_LEN} characters (it has {len})"));
    }
    if !(first.is_ascii_alphanumeric() || first == '_') {
        return Err("must start with a letter, a digit or '_'".into());
    }
    if let Some(bad) = tag.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))) {
        return Err(format!("may contain only letters, digits, '_', '.' and '-', not {}", quoted(bad)));
    }
    Ok(())
}

/// Checks a port name: an IANA service name as Kubernetes requires, at most
/// 15 lowercase letters, digits and single hyphens, with at least one letter.
pub fn check_port_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty; leave it out for an unnamed port".into());
    }
    let len = name.chars().count();
    if len > PORT_NAME_MAX_LEN {
        return Err(format!("must be at most {PORT_NAME_MAX_LEN} characters (it has {len})"));
    }
    if let Some(bad) = name.chars().find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')) {
        return Err(format!("may contain only lowercase letters, digits and '-', not {}", quoted(bad)));
    }
    if !name.chars().any(|c| c.is_ascii_lowercase()) {
        return Err("must contain at least one letter".into());
    }
    if name.starts_with('-') || name.ends_with('-') || has_pair(name, b"--") {
        return Err("must not start or end with '-' or contain '--'".into());
    }
    Ok(())
}

fn check_container(container: &Container, problems: &mut Problems) {
    let image = container.image.as_deref();
    if let Some(image) = image {
        if let Err(message) = check_image(image) {
            problems.add("spec.container.image", message);
        }
    }
    if let Some(tag) = container.image_tag.as_deref() {
        let embedded = image.map(split_image_reference);
        let message = match embedded {
            None => Err("needs an image (spec.container.image)".to_string()),
            Some(parts) if parts.digest.is_some() => Err("must be left out when the image pins a digest".to_string()),
            Some(parts) if parts.tag.is_some() => Err(format!(
                "must be left out when the image already names a tag ('{}')",
                parts.tag.unwrap_or_default()
            )),
            Some(_) => check_image_tag(tag),
        };
        if let Err(message) = message {
            problems.add("spec.container.image_tag", message);
        }
    }
    let username = container.registry_username.as_deref();
    let password = container.registry_password.as_deref();
    for (path, value) in
        [("spec.container.registry_username", username), ("spec.container.registry_password", password)]
    {
        if value.is_some_and(str::is_empty) {
            problems.add(path, "must not be empty; leave it out for a public image");
        }
    }
    match (username, password) {
        (Some(_), None) => {
            problems.add("spec.container.registry_password", "is required when a registry username is set")
        }
        (None, Some(_)) => {
            problems.add("spec.container.registry_username", "is required when a registry password is set")
        }
        _ => {}
    }
    for (i, arg) in container.command().iter().enumerate() {
        if arg.contains('\0') {
            problems.add(format!("spec.container.command[{i}]"), "must not contain a NUL character");
        }
    }
    let (mut seen_ports, mut seen_names) = (Keys::default(), Keys::default());
    for (i, port) in container.ports().iter().enumerate() {
        let path = format!("spec.container.ports[{i}]");
        let protocol = match port.protocol.as_deref() {
            None => Some(Protocol::Tcp),
            Some(p) => Protocol::parse(p),
        };
        if protocol.is_none() {
            problems.add(format!("{path}.protocol"), "must be TCP, UDP or SCTP");
        }
        if let (Some(protocol), true) = (protocol, (1..=PORT_MAX).contains(&port.container_port)) {
            seen_ports.add(format!("{}/{protocol}", port.container_port), i);
        }
        if let Some(name) = port.name.as_deref() {
            if let Err(message) = check_port_name(name) {
                problems.add(format!("{path}.name"), message);
            } else {
                seen_names.add(name, i);
            }
        }
        for (j, strategy) in port.expose_strategies.iter().flatten().enumerate() {
            if !matches!(strategy.as_str(), "HostPortMapping" | "IngressProxy") {
                problems.add(format!("{path}.expose_strategies[{j}]"), "must be HostPortMapping or IngressProxy");
            }
        }
    }
    for (i, port, first) in seen_ports.repeats() {
        let message = format!("{port} is already listed at spec.container.ports[{first}]");
        problems.add(format!("spec.container.ports[{i}].container_port"), message);
    }
    for (i, name, first) in seen_names.repeats() {
        let message = format!("'{name}' is already used by spec.container.ports[{first}]");
        problems.add(format!("spec.container.ports[{i}].name"), message);
    }
}

// --------------------------------------------------------------------- env

/// An environment variable name's form as a regular expression, for
/// schemas: what [`check_env_name`] accepts, apart from the names and the
/// prefix Jobdeck reserves.
pub const ENV_NAME_PATTERN: &str = "^[A-Za-z_][A-Za-z0-9_]*$";

/// Checks an environment variable name: a C identifier (a letter or `_`, then
/// letters, digits and `_`) that Jobdeck does not set itself.
pub fn check_env_name(name: &str) -> Result<(), String> {
    let Some(first) = name.chars().next() else {
        return Err("must not be empty".into());
    };
    if !(first.is_ascii_alphabetic() || first == '_') {
        return Err("must start with a letter or '_'".into());
    }
    if let Some(bad) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '_')) {
        return Err(format!("may contain only letters, digits and '_', not {}", quoted(bad)));
    }
    if RESERVED_ENV_NAMES.contains(&name) {
        return Err(format!("'{name}' is reserved: Jobdeck sets it in every replica"));
    }
    if name.starts_with(RESERVED_ENV_PREFIX) {
        return Err(format!(
            "must not start with '{RESERVED_ENV_PREFIX}': that prefix is reserved for variables Jobdeck sets"
        ));
    }
    Ok(())
}

fn check_envs(envs: &[EnvVar], problems: &mut Problems) {
    let mut seen = Keys::default();
    for (i, env) in envs.iter().enumerate() {
        let path = format!("spec.envs[{i}]");
        if let Err(message) = check_env_name(&env.name) {
            problems.add(format!("{path}.name"), message);
        } else {
            seen.add(&env.name, i);
        }
        if env.value.as_deref().is_some_and(|v| v.contains('\0')) {
            problems.add(format!("{path}.value"), "must not contain a NUL character");
        }
        if let Some(from) = &env.value_from {
            if env.value.is_some() {
                problems.add(
                    format!("{path}.value_from"),
                    "must be left out when a value is given: a variable has either a value or a secret reference, not both",
                );
            } else if from.secret_name_ref.as_deref().is_none_or(|s| s.trim().is_empty()) {
                problems.add(format!("{path}.value_from.secret_name_ref"), "must name a secret");
            }
        }
    }
    for (i, name, first) in seen.repeats() {
        problems.add(format!("spec.envs[{i}].name"), format!("'{name}' is already set by spec.envs[{first}]"));
    }
}

// ------------------------------------------------------------------ mounts

/// Checks a mount path: absolute, normalized (no `.` or `..` segments, no
/// `//`, no trailing `/`), without `:` (container engines split volume
/// arguments on it) and not a reserved system path
/// ([`RESERVED_MOUNT_PATHS`], [`RESERVED_MOUNT_TREES`]).
pub fn check_mount_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("must not be empty".into());
    }
    if !path.starts_with('/') {
        return Err("must be an absolute path (start with '/')".into());
    }
    if has_control(path) {
        return Err("must not contain control characters".into());
    }
    // Judge the path as the container would resolve it, so `/etc/` or
    // `/data/../etc` cannot slip past the reserved list.
    let normal = normalize_path(path);
    if RESERVED_MOUNT_PATHS.contains(&normal.as_str()) {
        return Err(format!("'{normal}' is a system path and cannot be a mount path"));
    }
    if let Some(tree) =
        RESERVED_MOUNT_TREES.iter().find(|t| normal.strip_prefix(*t).is_some_and(|rest| rest.starts_with('/')))
    {
        return Err(format!("'{normal}' is inside '{tree}', which nothing may be mounted into"));
    }
    if path.contains(':') {
        return Err("must not contain ':'".into());
    }
    if path.split('/').any(|s| s == "..") {
        return Err("must not contain '..' segments".into());
    }
    if path.split('/').any(|s| s == ".") {
        return Err("must not contain '.' segments".into());
    }
    if has_pair(path, b"//") {
        return Err("must not contain '//'".into());
    }
    if path.len() > 1 && path.ends_with('/') {
        return Err("must not end with '/'".into());
    }
    Ok(())
}

/// `path` with `.`, `..`, repeated and trailing slashes resolved, as an
/// absolute path.
fn normalize_path(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Checks the volume a mount comes `from`: a volume name, `node-local`, or
/// `node-<type>:<name>` as the lep CLI writes it.
/// Lepton's form of a node-group volume in a mount's `from`.
pub const NODE_VOLUME_PREFIX: &str = "node-nfs:";

/// The name Lepton clients know a configured volume by: the volume's key
/// without [`NODE_VOLUME_PREFIX`]. A mount names the volume by its key or by
/// `node-nfs:<name>` (as the TAO SDK writes it).
pub fn volume_display_name(key: &str) -> &str {
    key.strip_prefix(NODE_VOLUME_PREFIX).unwrap_or(key)
}

/// The configured volume key a mount's `from` names, among `keys`.
pub fn volume_key<'a>(from: &str, keys: impl IntoIterator<Item = &'a String>) -> Option<&'a String> {
    let wanted = volume_display_name(from);
    keys.into_iter().find(|key| key.as_str() == from || volume_display_name(key) == wanted)
}

pub fn check_volume(from: &str) -> Result<(), String> {
    if from.trim().is_empty() {
        return Err("must name a volume".into());
    }
    if from.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("must not contain spaces or control characters".into());
    }
    if from.starts_with("node-") && from != "node-local" {
        let valid = from
            .split_once(':')
            .is_some_and(|(kind, name)| kind.len() > "node-".len() && !name.is_empty() && !name.contains(':'));
        if !valid {
            return Err("must be 'node-local' or 'node-<type>:<name>', such as 'node-nfs:my-nfs'".into());
        }
    }
    Ok(())
}

/// Checks the path inside a volume: it may not climb out of the volume,
/// and holds no `:` or `,`, which a container engine's volume argument
/// (`-v source:target:options`) would read as its separators.
pub fn check_volume_path(path: &str) -> Result<(), String> {
    if has_control(path) {
        return Err("must not contain control characters".into());
    }
    if path.split('/').any(|s| s == "..") {
        return Err("must not contain '..' segments: a mount stays inside its volume".into());
    }
    if path.contains([':', ',']) {
        return Err("must not contain ':' or ',' (container engines split volume arguments on them)".into());
    }
    Ok(())
}

fn check_mounts(mounts: &[Mount], problems: &mut Problems) {
    let mut seen = Keys::default();
    for (i, mount) in mounts.iter().enumerate() {
        let path = format!("spec.mounts[{i}]");
        if let Err(message) = check_mount_path(&mount.mount_path) {
            problems.add(format!("{path}.mount_path"), message);
        } else {
            seen.add(&mount.mount_path, i);
        }
        if let Err(message) = check_volume(&mount.from) {
            problems.add(format!("{path}.from"), message);
        }
        if let Some(Err(message)) = mount.path.as_deref().map(check_volume_path) {
            problems.add(format!("{path}.path"), message);
        }
    }
    for (i, path, first) in seen.repeats() {
        problems
            .add(format!("spec.mounts[{i}].mount_path"), format!("'{path}' is already used by spec.mounts[{first}]"));
    }
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
