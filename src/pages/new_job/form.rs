//! The create-job form's state and its one mapping to and from `LeptonJob`.
//!
//! The form holds what people typed, as text (`FormState`). `to_job` turns it
//! into the job the API takes and `from_job` fills it from a job (a clone, an
//! imported spec, a shared draft); nothing else converts between the two.
//! The rules a job must follow are the contract's (`jobdeck_api`); here is
//! only what turning text into JSON needs (a number must be a number).
//!
//! Which input shows the problems of a field path (`spec.envs[2].name`) is
//! decided by two tables, `FIELDS` and `LISTS`, so a message from the
//! contract or from the server's 422 lands on the input it is about.

use std::collections::BTreeMap;

use jobdeck_api::{
    defaults, ContainerPort, EnvValue, EnvVar, FieldErrors, LeptonJob, LogConfig, Mount, Priority, Protocol,
    QueueConfig, Visibility,
};

use crate::pages::new_job::field::Control;
use crate::pages::new_job::list_editor::Column;

/// A field of the form: one input for one value of the job.
#[derive(Debug)]
pub struct Field {
    /// The input's id.
    pub id: &'static str,
    /// The name the product pages use.
    pub label: &'static str,
    /// One line from the product pages, with the field's rule.
    pub help: &'static str,
    /// The default as people read it; fields whose default depends on the
    /// workspace say so in `NewJobPage`.
    pub default: &'static str,
    pub control: Control,
    pub placeholder: &'static str,
    /// The field paths whose problems this input shows: a path matches when
    /// it is one of these or continues one with `.` or `[`.
    pub paths: &'static [&'static str],
}

/// A list of the form: rows of cells.
#[derive(Debug)]
pub struct List {
    pub id: &'static str,
    pub label: &'static str,
    pub help: &'static str,
    pub add_label: &'static str,
    /// The field path of the list; rows are `[i]`, or `["key"]` in a map.
    pub path: &'static str,
    /// A key/value map (labels, annotations) rather than a list.
    pub keyed: bool,
    pub columns: &'static [Column],
    /// For each column, the suffixes after `[i]` whose problems it shows.
    pub column_paths: &'static [&'static [&'static str]],
    /// A new row's cells.
    pub new_row: [&'static str; 3],
}

/// A field of the form: an index into `FIELDS` and `FormState::v`, typed
/// so that it can index nothing else (a list's index is a [`ListId`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FieldId(usize);

/// A list of the form: an index into `LISTS` and `FormState::lists`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ListId(usize);

pub const NAME: FieldId = FieldId(0);
pub const NODE_GROUPS: FieldId = FieldId(1);
pub const NODES: FieldId = FieldId(2);
pub const PRIORITY: FieldId = FieldId(3);
pub const SHAPE: FieldId = FieldId(4);
pub const CAN_PREEMPT: FieldId = FieldId(5);
pub const CAN_BE_PREEMPTED: FieldId = FieldId(6);
pub const WORKERS: FieldId = FieldId(7);
pub const COMPLETIONS: FieldId = FieldId(8);
pub const PARALLELISM: FieldId = FieldId(9);
pub const BACKOFF_LIMIT: FieldId = FieldId(10);
pub const DEADLINE: FieldId = FieldId(11);
pub const IMAGE: FieldId = FieldId(12);
pub const TAG: FieldId = FieldId(13);
pub const REGISTRY_USERNAME: FieldId = FieldId(14);
pub const REGISTRY_PASSWORD: FieldId = FieldId(15);
pub const PULL_SECRETS: FieldId = FieldId(16);
pub const COMMAND: FieldId = FieldId(17);
pub const LOG_COLLECTION: FieldId = FieldId(18);
pub const SHARED_MEMORY: FieldId = FieldId(19);
pub const MAX_REPLICA_RETRY: FieldId = FieldId(20);
pub const MAX_JOB_RETRY: FieldId = FieldId(21);
pub const NO_RETRY_ON_PROGRAM_ERROR: FieldId = FieldId(22);
pub const ARCHIVE_TIME: FieldId = FieldId(23);
pub const VISIBILITY: FieldId = FieldId(24);
/// The number of fields.
pub const FIELD_COUNT: usize = 25;

pub const PORTS: ListId = ListId(0);
pub const ENVS: ListId = ListId(1);
pub const MOUNTS: ListId = ListId(2);
pub const LABELS: ListId = ListId(3);
pub const ANNOTATIONS: ListId = ListId(4);
/// The number of lists.
pub const LIST_COUNT: usize = 5;

impl FieldId {
    /// Every field, in the order of `FIELDS`.
    pub fn all() -> impl Iterator<Item = FieldId> {
        (0..FIELD_COUNT).map(FieldId)
    }

    /// What the field is: its id, label, help and default.
    pub fn def(self) -> &'static Field {
        &FIELDS[self.0]
    }
}

impl ListId {
    /// The list's place in `LISTS`, as events name it.
    pub fn index(self) -> usize {
        self.0
    }

    /// The list at `index` in `LISTS`, if there is one.
    pub fn from_index(index: usize) -> Option<ListId> {
        (index < LIST_COUNT).then_some(ListId(index))
    }

    /// Every list, in the order of `LISTS`.
    pub fn all() -> impl Iterator<Item = ListId> {
        (0..LIST_COUNT).map(ListId)
    }

    /// What the list is: its id, columns and the paths of its cells.
    pub fn def(self) -> &'static List {
        &LISTS[self.0]
    }
}

/// What was typed in each field, indexed by [`FieldId`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Values([String; FIELD_COUNT]);

impl std::ops::Index<FieldId> for Values {
    type Output = String;
    fn index(&self, id: FieldId) -> &String {
        &self.0[id.0]
    }
}

impl std::ops::IndexMut<FieldId> for Values {
    fn index_mut(&mut self, id: FieldId) -> &mut String {
        &mut self.0[id.0]
    }
}

/// The rows of each list, indexed by [`ListId`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lists([Vec<Row>; LIST_COUNT]);

impl std::ops::Index<ListId> for Lists {
    type Output = Vec<Row>;
    fn index(&self, id: ListId) -> &Vec<Row> {
        &self.0[id.0]
    }
}

impl std::ops::IndexMut<ListId> for Lists {
    fn index_mut(&mut self, id: ListId) -> &mut Vec<Row> {
        &mut self.0[id.0]
    }
}

/// The shell that runs the Command text, as `/bin/sh -c <text>`: every image
/// with a shell has it.
pub const SHELL: &str = "/bin/sh";

const fn f(
    id: &'static str,
    label: &'static str,
    help: &'static str,
    default: &'static str,
    control: Control,
    placeholder: &'static str,
    paths: &'static [&'static str],
) -> Field {
    Field { id, label, help, default, control, placeholder, paths }
}

use Control::*;

/// Every field, in the order of `NAME` … `VISIBILITY`.
pub static FIELDS: [Field; FIELD_COUNT] = [
    f("job-name", "Job name", "A name for the job: starts with a lowercase letter; lowercase letters, digits and hyphens; ends with a letter or digit; at most 36 characters unless the workspace sets fewer.", "none, a name is required", Text, "train-llama", &["metadata.name", "metadata.id"]),
    f("node-groups", "Node group", "Select one or more node groups to determine what resources this job can use.", "any node group", Choices, "", &["spec.affinity.allowed_dedicated_node_groups"]),
    f("nodes", "Nodes", "Launch the job on these nodes of the chosen node groups only.", "no specific nodes", Choices, "", &["spec.affinity.allowed_nodes_in_node_group", "spec.affinity"]),
    f("priority", "Priority", "When the node group has limited resources, higher-priority jobs get them first.", "Medium (4)", Select, "", &["spec.queue_config.priority_class", "spec.queue_config"]),
    f("resource-shape", "Resource shape", "The instance type the job runs on, from the CPU and GPU shapes of this workspace.", "", Select, "", &["spec.resource_shape"]),
    f("can-preempt", "Can preempt lower priority workload", "Whether the job can preempt lower-priority workloads.", "off", Check, "", &["spec.queue_config.can_preempt"]),
    f("can-be-preempted", "Can be preempted by higher priority workload", "Whether the job can be preempted by higher-priority workloads.", "off", Check, "", &["spec.queue_config.can_be_preempted"]),
    f("workers", "Workers", "The number of workers to launch; more than one runs them together with intra-job communication, and completions and parallelism follow the workers.", "1", Number, "1", &["spec.workers", "spec.intra_job_communication", "spec.segment_config"]),
    f("completions", "Completions", "The number of pods that must complete successfully for the job to be done; 1 or greater.", "1", Number, "1", &["spec.completions"]),
    f("parallelism", "Parallelism", "The maximum number of pods that run at the same time; 1 or greater and at most Completions.", "1", Number, "1", &["spec.parallelism"]),
    f("backoff-limit", "Backoff limit", "The number of retries before the job is marked as failed; 0 or greater.", "3", Number, "3", &["spec.backoff_limit"]),
    f("active-deadline", "Active deadline seconds", "The maximum time in seconds the job may run before it is terminated; 1 or greater, empty for no deadline.", "no deadline", Number, "", &["spec.active_deadline_seconds"]),
    f("image", "Container image", "The container image to run, such as nvcr.io/nvidia/base/ubuntu.", "none; needed when jobs run in containers", Text, "nvcr.io/nvidia/base/ubuntu", &["spec.container.image"]),
    f("image-tag", "Container tag", "The image tag, such as latest; leave it empty when the image already names one.", "latest", Text, "latest", &["spec.container.image_tag"]),
    f("registry-username", "Registry username", "Only for an image in a private registry: leave both empty for public images; if you give one, give the other.", "none (a public image)", Text, "", &["spec.container.registry_username"]),
    f("registry-password", "Registry password", "Write-only: never shown again and never copied into drafts, clones or copies.", "none", Password, "", &["spec.container.registry_password"]),
    f("pull-secrets", "Image pull secrets", "Or the names of stored image pull secrets, separated by commas.", "none", Text, "", &["spec.image_pull_secrets"]),
    f("command", "Command", "The command to run when the container starts, run by /bin/sh -c (lep's --command uses /bin/bash -c), such as python3 train.py.", "the image's entrypoint", Area, "python3 train.py --epochs 10", &["spec.container.command"]),
    f("log-collection", "Log collection", "Whether to collect the logs from the container.", "", Select, "", &["spec.log"]),
    f("shared-memory", "Shared memory", "The size of the shared memory (/dev/shm) allocated to the container, in MiB; the default follows the memory of the resource shape.", "", Number, "", &["spec.shared_memory_size"]),
    f("max-replica-retry", "Max replica failure retry", "Maximum number of times to retry a failed replica.", "no per-replica limit; the backoff limit bounds the retries", Number, "", &["spec.max_failure_retry"]),
    f("max-job-retry", "Max job failure retry", "Maximum number of failure restarts of the entire job.", "0", Number, "0", &["spec.max_job_failure_retry"]),
    f("no-retry-on-program-error", "Disable retry when program error occurs", "If on, the job is not retried when a program error is detected in the logs.", "off", Check, "", &["spec.disable_retry_on_program_error"]),
    f("archive-time", "Archive time", "How long the job's logs and record are kept after it ends, such as 3d, 12h, 90m or 3600 (seconds).", "3d (3 days)", Text, "3d", &["spec.ttl_seconds_after_finished"]),
    f("visibility", "Visibility", "Private: only you can see the job. Public: everyone in the workspace can.", "Public", Select, "", &["metadata.visibility"]),
];

const fn col(label: &'static str, control: Control, placeholder: &'static str) -> Column {
    Column { label, control, options: &[], placeholder }
}

/// Every list, in the order of `PORTS` … `ANNOTATIONS`.
pub static LISTS: [List; LIST_COUNT] = [
    List {
        id: "ports",
        label: "Container ports",
        help: "The ports the container listens on, each with a protocol (TCP, UDP or SCTP).",
        add_label: "Add port",
        path: "spec.container.ports",
        keyed: false,
        columns: &[
            col("Port", Number, "8080"),
            Column { label: "Protocol", control: Select, options: &[("TCP", "TCP"), ("UDP", "UDP"), ("SCTP", "SCTP")], placeholder: "" },
        ],
        column_paths: &[&[".container_port", ".host_port", ".name", ".expose_strategies"], &[".protocol"]],
        new_row: ["", "TCP", ""],
    },
    List {
        id: "envs",
        label: "Environment variables",
        help: "Passed to the job's container. Names are letters, digits and _; JOB_COMPLETION_INDEX, JOB_COMPLETIONS and names starting with LEPTON_ are set by Jobdeck.",
        add_label: "Add variable",
        path: "spec.envs",
        keyed: false,
        columns: &[
            col("Name", Text, "HF_HOME"),
            Column { label: "Source", control: Select, options: &[("value", "Value"), ("secret", "Secret")], placeholder: "" },
            col("Value", Text, ""),
        ],
        column_paths: &[&[".name"], &[], &[".value", ".value_from"]],
        new_row: ["", "value", ""],
    },
    List {
        id: "mounts",
        label: "Storage",
        help: "Mount storage into the container: a volume (node-local, or node-<type>:<name>), a path in it, and an absolute mount path.",
        add_label: "Add mount",
        path: "spec.mounts",
        keyed: false,
        columns: &[col("Volume", Text, "node-local"), col("Path in volume", Text, "/data"), col("Mount path", Text, "/mnt/data")],
        column_paths: &[&[".from"], &[".path"], &[".mount_path", ".mount_options"]],
        new_row: ["", "", ""],
    },
    List {
        id: "labels",
        label: "Labels",
        help: "Key/value labels to find the job by, such as team=vision.",
        add_label: "Add label",
        path: "metadata.labels",
        keyed: true,
        columns: &[col("Key", Text, "team"), col("Value", Text, "vision")],
        column_paths: &[&[], &[]],
        new_row: ["", "", ""],
    },
    List {
        id: "annotations",
        label: "Annotations",
        help: "Attach custom key/value metadata to the job.",
        add_label: "Add annotation",
        path: "metadata.annotations",
        keyed: true,
        columns: &[col("Key", Text, "example.com/ticket"), col("Value", Text, "")],
        column_paths: &[&[], &[]],
        new_row: ["", "", ""],
    },
];

/// One row of a list: up to three cells, as typed.
pub type Row = [String; 3];

/// What the form holds: every field and list as typed.
#[derive(Debug, Clone, PartialEq)]
pub struct FormState {
    /// The fields, indexed by `NAME` … `VISIBILITY`.
    pub v: Values,
    /// The lists, indexed by `PORTS` … `ANNOTATIONS`.
    pub lists: Lists,
    /// Whether the shared memory was typed; until then the field shows the
    /// default of the chosen shape and follows it.
    pub shared_memory_typed: bool,
    /// The shell that runs the Command text; a cloned job keeps its own.
    pub shell: String,
    /// A command that was an argument list rather than a shell line (from a
    /// clone or an import): the text it shows as, and the list, kept as it
    /// was unless the text is edited.
    pub argv: Option<(String, Vec<String>)>,
    /// The parts of a cloned or imported job that the form has no input for,
    /// carried through unchanged.
    pub base: LeptonJob,
}

impl Default for FormState {
    fn default() -> Self {
        let mut v = Values::default();
        v[PRIORITY] = defaults::PRIORITY.class().to_string();
        v[VISIBILITY] = visibility_key(defaults::VISIBILITY).to_string();
        FormState {
            v,
            lists: Default::default(),
            shared_memory_typed: false,
            shell: SHELL.to_string(),
            argv: None,
            base: LeptonJob::default(),
        }
    }
}

fn visibility_key(visibility: Visibility) -> &'static str {
    match visibility {
        Visibility::Public => "public",
        Visibility::Private => "private",
    }
}

fn some_text(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

fn some_list<T>(list: Vec<T>) -> Option<Vec<T>> {
    (!list.is_empty()).then_some(list)
}

/// Comma-separated names, trimmed, empty ones left out.
pub fn split_names(s: &str) -> Vec<String> {
    s.split(',').map(str::trim).filter(|n| !n.is_empty()).map(String::from).collect()
}

/// Reads a whole number; `Ok(None)` when empty.
fn parse_int(s: &str) -> Result<Option<i64>, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    s.parse().map(Some).map_err(|_| format!("must be a whole number, not '{s}'"))
}

/// Reads a duration: seconds, or a number with `s`, `m`, `h` or `d`.
pub fn parse_duration(s: &str) -> Result<Option<i64>, String> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    let (number, unit) = match s.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (s.get(..i).unwrap_or_default().trim(), c.to_ascii_lowercase()),
        _ => (s, 's'),
    };
    let scale = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86400,
        _ => 0,
    };
    match number.parse::<i64>() {
        Ok(n) if scale > 0 => Ok(Some(n.saturating_mul(scale))),
        _ => Err(format!("must be a duration such as 3d, 12h, 90m or 3600 (seconds), not '{s}'")),
    }
}

/// A duration in seconds in the largest unit that divides it: `3d`, `90m`.
pub fn format_duration(seconds: i64) -> String {
    for (scale, unit) in [(86400, 'd'), (3600, 'h'), (60, 'm')] {
        if seconds != 0 && seconds % scale == 0 {
            return format!("{}{unit}", seconds / scale);
        }
    }
    seconds.to_string()
}

/// Quotes an argument for a POSIX shell when it needs it.
pub fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty() && arg.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// Whether `program` is a shell whose `-c` argument the Command field shows.
fn is_shell(program: &str) -> bool {
    matches!(program, "/bin/sh" | "/bin/bash" | "sh" | "bash" | "/usr/bin/bash" | "/usr/bin/sh")
}

/// The lines of a text as typed, or empty.
fn number_text(n: Option<i64>) -> String {
    n.map(|n| n.to_string()).unwrap_or_default()
}

impl FormState {
    /// The job the form describes, and the problems of turning the text into
    /// JSON (a number that is not one), by field path.
    pub fn to_job(&self) -> (LeptonJob, FieldErrors) {
        let v = &self.v;
        let mut problems = FieldErrors::new();
        fn note<T>(result: Result<Option<T>, String>, path: &str, problems: &mut FieldErrors) -> Option<T> {
            result.unwrap_or_else(|message| {
                problems.insert(path.to_string(), vec![message]);
                None
            })
        }
        macro_rules! int {
            ($index:expr, $path:expr) => {
                note(parse_int(&v[$index]), $path, &mut problems)
            };
        }
        let mut job = self.base.clone();
        job.status = None;

        let spec = &mut job.spec;
        spec.resource_shape = some_text(&v[SHAPE]);
        let mut affinity = spec.affinity.take().unwrap_or_default();
        affinity.allowed_dedicated_node_groups = some_list(split_names(&v[NODE_GROUPS]));
        affinity.allowed_nodes_in_node_group = some_list(split_names(&v[NODES]));
        spec.affinity = (affinity != Default::default()).then_some(affinity);
        let mut queue = spec.queue_config.take().unwrap_or_default();
        queue.priority_class = some_text(&v[PRIORITY]).filter(|c| c != defaults::PRIORITY.class());
        queue.can_preempt = (!v[CAN_PREEMPT].is_empty()).then_some(true);
        queue.can_be_preempted = (!v[CAN_BE_PREEMPTED].is_empty()).then_some(true);
        spec.queue_config = (queue != QueueConfig::default()).then_some(queue);
        spec.workers = int!(WORKERS, "spec.workers");
        // With more than one worker, completions and parallelism follow the
        // workers and their inputs are off.
        let many_workers = spec.workers.is_some_and(|w| w > 1);
        spec.completions = if many_workers { None } else { int!(COMPLETIONS, "spec.completions") };
        spec.parallelism = if many_workers { None } else { int!(PARALLELISM, "spec.parallelism") };
        spec.backoff_limit = int!(BACKOFF_LIMIT, "spec.backoff_limit");
        spec.active_deadline_seconds = int!(DEADLINE, "spec.active_deadline_seconds");

        let container = &mut spec.container;
        container.image = some_text(&v[IMAGE]);
        container.image_tag = some_text(&v[TAG]);
        container.registry_username = some_text(&v[REGISTRY_USERNAME]);
        container.registry_password = (!v[REGISTRY_PASSWORD].is_empty()).then(|| v[REGISTRY_PASSWORD].clone());
        container.command = match &self.argv {
            Some((text, argv)) if *text == v[COMMAND] => Some(argv.clone()),
            _ if v[COMMAND].trim().is_empty() => None,
            _ => Some(vec![self.shell.clone(), "-c".into(), v[COMMAND].clone()]),
        };
        let mut ports = Vec::new();
        for (i, row) in self.lists[PORTS].iter().enumerate() {
            let path = format!("spec.container.ports[{i}].container_port");
            let port = note(parse_int(&row[0]), &path, &mut problems).unwrap_or(0);
            ports.push(ContainerPort {
                container_port: port,
                protocol: some_text(&row[1]),
                name: some_text(&row[2]),
                ..Default::default()
            });
        }
        container.ports = some_list(ports);
        spec.image_pull_secrets = some_list(split_names(&v[PULL_SECRETS]));

        let enable_collection = match v[LOG_COLLECTION].as_str() {
            "on" => Some(true),
            "off" => Some(false),
            _ => None,
        };
        let mut log = spec.log.take().unwrap_or_default();
        log.enable_collection = enable_collection;
        spec.log = (log != LogConfig::default()).then_some(log);

        spec.envs = some_list(
            self.lists[ENVS]
                .iter()
                .map(|row| {
                    let secret = row[1] == "secret";
                    EnvVar {
                        name: row[0].trim().to_string(),
                        value: (!secret).then(|| row[2].clone()),
                        value_from: secret
                            .then(|| EnvValue { secret_name_ref: Some(row[2].trim().to_string()), secret_owner: None }),
                    }
                })
                .collect(),
        );
        spec.mounts = some_list(
            self.lists[MOUNTS]
                .iter()
                .map(|row| Mount {
                    from: row[0].trim().to_string(),
                    path: some_text(&row[1]),
                    mount_path: row[2].trim().to_string(),
                    ..Default::default()
                })
                .collect(),
        );
        spec.shared_memory_size =
            if self.shared_memory_typed { int!(SHARED_MEMORY, "spec.shared_memory_size") } else { None };
        spec.max_failure_retry = int!(MAX_REPLICA_RETRY, "spec.max_failure_retry");
        spec.max_job_failure_retry = int!(MAX_JOB_RETRY, "spec.max_job_failure_retry");
        spec.disable_retry_on_program_error = (!v[NO_RETRY_ON_PROGRAM_ERROR].is_empty()).then_some(true);
        spec.ttl_seconds_after_finished =
            note(parse_duration(&v[ARCHIVE_TIME]), "spec.ttl_seconds_after_finished", &mut problems);

        let metadata = &mut job.metadata;
        metadata.name = some_text(&v[NAME]);
        // Visibility is always sent: it decides who sees the job, so it
        // should not depend on a default elsewhere.
        metadata.visibility = Some(if v[VISIBILITY] == "private" { Visibility::Private } else { Visibility::Public });
        for (list, target) in [(LABELS, &mut metadata.labels), (ANNOTATIONS, &mut metadata.annotations)] {
            let mut map = BTreeMap::new();
            for (i, row) in self.lists[list].iter().enumerate() {
                let key = row[0].trim().to_string();
                if map.insert(key.clone(), row[1].trim().to_string()).is_some() {
                    // A map cannot hold a key twice; the second row would be
                    // lost without a word.
                    problems.insert(
                        format!("{}[{i}]", list.def().path),
                        vec![format!("the key '{key}' is already listed above")],
                    );
                }
            }
            *target = (!map.is_empty()).then_some(map);
        }
        (job, problems)
    }

    /// The form filled from `job`: a clone, an imported spec or a shared
    /// draft. What the server owns (id, creator, times, status) is dropped.
    pub fn from_job(job: &LeptonJob) -> FormState {
        let mut s = FormState::default();
        let mut base = job.clone();
        base.status = None;
        let metadata = &mut base.metadata;
        let name = metadata.name.take().or_else(|| metadata.id.clone()).unwrap_or_default();
        metadata.id = None;
        metadata.created_at = None;
        metadata.created_by = None;
        metadata.owner = None;
        metadata.version = None;
        metadata.last_modified_at = None;
        metadata.last_modified_by = None;
        let v = &mut s.v;
        v[NAME] = name;
        if let Some(visibility) = job.metadata.visibility {
            v[VISIBILITY] = visibility_key(visibility).to_string();
        }
        for (list, map) in [(LABELS, &job.metadata.labels), (ANNOTATIONS, &job.metadata.annotations)] {
            s.lists[list] = map.iter().flatten().map(|(k, v)| [k.clone(), v.clone(), String::new()]).collect();
        }

        let spec = &job.spec;
        v[SHAPE] = spec.resource_shape.clone().unwrap_or_default();
        v[NODE_GROUPS] = spec.node_groups().join(",");
        v[NODES] = spec.nodes().join(",");
        if let Some(queue) = &spec.queue_config {
            if let Some(class) = &queue.priority_class {
                v[PRIORITY] = class.clone();
            }
            v[CAN_PREEMPT] = check(queue.can_preempt);
            v[CAN_BE_PREEMPTED] = check(queue.can_be_preempted);
        }
        // A `lep --num-workers N` job (completions = parallelism = N with
        // intra-job communication) shows as N workers.
        let workers = spec.workers();
        if workers > 1 {
            v[WORKERS] = workers.to_string();
            base.spec.intra_job_communication = None;
        } else {
            v[WORKERS] = number_text(spec.workers);
            v[COMPLETIONS] = number_text(spec.completions);
            v[PARALLELISM] = number_text(spec.parallelism);
        }
        v[BACKOFF_LIMIT] = number_text(spec.backoff_limit);
        v[DEADLINE] = number_text(spec.active_deadline_seconds);

        let container = &spec.container;
        v[IMAGE] = container.image.clone().unwrap_or_default();
        v[TAG] = container.image_tag.clone().unwrap_or_default();
        v[REGISTRY_USERNAME] = container.registry_username.clone().unwrap_or_default();
        v[REGISTRY_PASSWORD] = container.registry_password.clone().unwrap_or_default();
        match container.command() {
            [] => {}
            [shell, flag, text] if is_shell(shell) && flag == "-c" => {
                s.shell = shell.clone();
                v[COMMAND] = text.clone();
            }
            argv => {
                let text: Vec<String> = argv.iter().map(|a| shell_quote(a)).collect();
                let text = text.join(" ");
                v[COMMAND] = text.clone();
                s.argv = Some((text, argv.to_vec()));
            }
        }
        s.lists[PORTS] = container
            .ports()
            .iter()
            .map(|p| {
                let protocol = p.protocol.as_deref().map_or(Some(Protocol::Tcp), Protocol::parse);
                let protocol =
                    protocol.map_or_else(|| p.protocol.clone().unwrap_or_default(), |p| p.as_str().to_string());
                [p.container_port.to_string(), protocol, p.name.clone().unwrap_or_default()]
            })
            .collect();
        v[PULL_SECRETS] = spec.image_pull_secrets().join(", ");
        v[LOG_COLLECTION] = match spec.log.as_ref().and_then(|l| l.enable_collection) {
            Some(true) => "on".into(),
            Some(false) => "off".into(),
            None => String::new(),
        };

        s.lists[ENVS] = spec
            .envs()
            .iter()
            .map(|e| match e.value_from.as_ref().and_then(|f| f.secret_name_ref.clone()) {
                Some(secret) if e.value.is_none() => [e.name.clone(), "secret".into(), secret],
                _ => [e.name.clone(), "value".into(), e.value.clone().unwrap_or_default()],
            })
            .collect();
        s.lists[MOUNTS] = spec
            .mounts()
            .iter()
            .map(|m| [m.from.clone(), m.path.clone().unwrap_or_default(), m.mount_path.clone()])
            .collect();
        s.shared_memory_typed = spec.shared_memory_size.is_some();
        v[SHARED_MEMORY] = number_text(spec.shared_memory_size);
        v[MAX_REPLICA_RETRY] = number_text(spec.max_failure_retry);
        v[MAX_JOB_RETRY] = number_text(spec.max_job_failure_retry);
        v[NO_RETRY_ON_PROGRAM_ERROR] = check(spec.disable_retry_on_program_error);
        v[ARCHIVE_TIME] = spec.ttl_seconds_after_finished.map(format_duration).unwrap_or_default();
        s.base = base;
        s
    }

    /// The form for a copy of an existing job: everything but the registry
    /// password, which is never copied (the server never returns it either;
    /// this holds even if a stored job carried one).
    pub fn for_clone(job: &LeptonJob) -> FormState {
        let mut job = job.clone();
        job.spec.container.registry_password = None;
        FormState::from_job(&job)
    }

    /// The job as a teammate may see it: without the registry password.
    pub fn shareable_job(&self) -> LeptonJob {
        let mut job = self.to_job().0;
        job.spec.container.registry_password = None;
        job
    }

    /// Adds a row to `list`.
    pub fn add_row(&mut self, list: ListId) {
        self.lists[list].push(list.def().new_row.map(String::from));
    }
}

fn check(flag: Option<bool>) -> String {
    if flag == Some(true) {
        "1".into()
    } else {
        String::new()
    }
}

/// The input a problem of a field path is shown at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A field of `FIELDS`.
    Field(FieldId),
    /// A cell: list, row, column.
    Cell(ListId, usize, usize),
    /// A list as a whole.
    List(ListId),
}

impl Target {
    /// The id of the input (or, for a list, its add button).
    pub fn input_id(self) -> String {
        match self {
            Target::Field(i) => i.def().id.to_string(),
            Target::Cell(l, r, c) => crate::pages::new_job::list_editor::cell_id(l.def().id, r, c),
            Target::List(l) => format!("{}-add", l.def().id),
        }
    }
}

/// Whether `path` is `prefix` or continues it with `.` or `[`.
fn continues(path: &str, prefix: &str) -> Option<usize> {
    let rest = path.strip_prefix(prefix)?;
    (rest.is_empty() || rest.starts_with(['.', '['])).then_some(prefix.len())
}

/// The input that shows the problems of `path`, if the form has one.
pub fn target_of(path: &str, state: &FormState) -> Option<Target> {
    for l in ListId::all() {
        let list = l.def();
        let Some(at) = continues(path, list.path) else { continue };
        // Read without slicing by position or searching for a string: their
        // panic and search code was 1.5 KB (brotli) of the form's download.
        let Some(inner) = path.get(at..).and_then(|rest| rest.strip_prefix('[')) else {
            return Some(Target::List(l));
        };
        let bytes = inner.as_bytes();
        let end = if inner.starts_with('"') {
            bytes.windows(2).position(|pair| pair == b"\"]").map(|e| e + 1)
        } else {
            bytes.iter().position(|&b| b == b']')
        };
        let Some((index, suffix)) = end.and_then(|end| Some((inner.get(..end)?, inner.get(end + 1..)?))) else {
            return Some(Target::List(l));
        };
        let row = match index.parse::<usize>() {
            Ok(row) => Some(row),
            // A map entry: `["key"]`, the key as a JSON string.
            Err(_) => crate::api::parse_json::<String>(index)
                .ok()
                .and_then(|key| state.lists[l].iter().position(|r| r[0].trim() == key)),
        };
        let col =
            list.column_paths.iter().position(|suffixes| suffixes.iter().any(|s| suffix.starts_with(s))).unwrap_or(0);
        return Some(match row {
            Some(row) if row < state.lists[l].len() => Target::Cell(l, row, col),
            _ => Target::List(l),
        });
    }
    FieldId::all()
        .filter_map(|i| i.def().paths.iter().filter_map(|p| continues(path, p)).max().map(|len| (len, i)))
        .max()
        .map(|(_, i)| Target::Field(i))
}

/// Problems placed on the form: the first message per input id, and those
/// about parts of the job the form has no input for, as `path: message`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Placed {
    pub by_input: ByInput,
    pub other: Vec<String>,
}

/// A message per input id, in the order they were placed. A form has a few
/// dozen problems at most, so a list does; a map's removal and rebalancing
/// code was a kilobyte of the form's download.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ByInput(Vec<(String, String)>);

impl ByInput {
    pub fn get(&self, id: &str) -> Option<&String> {
        self.0.iter().find(|(input, _)| input == id).map(|(_, message)| message)
    }

    pub fn contains_key(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    /// Keeps the first message of each input.
    pub fn add(&mut self, id: String, message: &str) {
        if !self.contains_key(&id) {
            self.0.push((id, message.to_string()));
        }
    }

    pub fn remove(&mut self, id: &str) {
        self.0.retain(|(input, _)| input != id);
    }

    /// Drops the messages of the inputs whose id starts with `prefix`.
    pub fn remove_under(&mut self, prefix: &str) {
        self.0.retain(|(input, _)| !input.starts_with(prefix));
    }

    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(input, _)| input)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::ops::Index<&str> for ByInput {
    type Output = String;

    fn index(&self, id: &str) -> &String {
        self.get(id).expect("a message for the input")
    }
}

impl Placed {
    /// Places each problem on its input.
    pub fn place(errors: &FieldErrors, state: &FormState) -> Placed {
        let mut placed = Placed::default();
        for (path, messages) in errors {
            let Some(message) = messages.first() else { continue };
            match target_of(path, state) {
                Some(target) => {
                    placed.by_input.add(target.input_id(), message);
                }
                None => placed.other.push(format!("{path}: {message}")),
            }
        }
        placed
    }

    /// How many problems remain.
    pub fn count(&self) -> usize {
        self.by_input.len() + self.other.len()
    }
}

/// Every input id in the order the form shows them, to find the first
/// problem.
pub fn input_order(state: &FormState) -> Vec<String> {
    let mut ids = Vec::new();
    for item in LAYOUT.iter().flat_map(|s| s.items) {
        match *item {
            Item::Field(i) => ids.push(i.def().id.to_string()),
            Item::List(l) => {
                for row in 0..state.lists[l].len() {
                    for col in 0..l.def().columns.len() {
                        ids.push(Target::Cell(l, row, col).input_id());
                    }
                }
                ids.push(Target::List(l).input_id());
            }
        }
    }
    ids
}

/// One thing a section shows.
#[derive(Debug, Clone, Copy)]
pub enum Item {
    Field(FieldId),
    List(ListId),
}

/// A section of the form.
#[derive(Debug)]
pub struct Section {
    pub id: &'static str,
    pub title: &'static str,
    pub intro: &'static str,
    pub items: &'static [Item],
}

/// The sections of the configuration page, plus the managed-cluster page's
/// optional details.
pub static LAYOUT: [Section; 4] = [
    Section {
        id: "resource",
        title: "Resource",
        intro: "What the job runs on and how it is queued.",
        items: &[
            Item::Field(NAME),
            Item::Field(SHAPE),
            Item::Field(PRIORITY),
            Item::Field(WORKERS),
            Item::Field(NODE_GROUPS),
            Item::Field(NODES),
            Item::Field(CAN_PREEMPT),
            Item::Field(CAN_BE_PREEMPTED),
        ],
    },
    Section {
        id: "details",
        title: "Optional details",
        intro: "How the job's pods complete and are retried; all optional.",
        items: &[Item::Field(COMPLETIONS), Item::Field(PARALLELISM), Item::Field(BACKOFF_LIMIT), Item::Field(DEADLINE)],
    },
    Section {
        id: "container",
        title: "Container",
        intro: "The image to run, how to pull it and what to start.",
        items: &[
            Item::Field(IMAGE),
            Item::Field(TAG),
            Item::Field(REGISTRY_USERNAME),
            Item::Field(REGISTRY_PASSWORD),
            Item::Field(PULL_SECRETS),
            Item::Field(COMMAND),
            Item::List(PORTS),
            Item::Field(LOG_COLLECTION),
        ],
    },
    Section {
        id: "advanced",
        title: "Advanced",
        intro: "Environment, storage, retries, retention and who may see the job.",
        items: &[
            Item::List(ENVS),
            Item::List(MOUNTS),
            Item::Field(SHARED_MEMORY),
            Item::Field(MAX_REPLICA_RETRY),
            Item::Field(MAX_JOB_RETRY),
            Item::Field(NO_RETRY_ON_PROGRAM_ERROR),
            Item::Field(ARCHIVE_TIME),
            Item::Field(VISIBILITY),
            Item::List(LABELS),
            Item::List(ANNOTATIONS),
        ],
    },
];

/// The priority options, lowest first, as `(class, "Medium (4)")`.
pub fn priority_options() -> Vec<(String, String)> {
    Priority::all().map(|p| (p.class().to_string(), p.label())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    fn state_with(pairs: &[(FieldId, &str)]) -> FormState {
        let mut s = FormState::default();
        for (i, text) in pairs {
            s.v[*i] = text.to_string();
        }
        s
    }

    #[wasm_bindgen_test]
    fn every_field_and_list_is_in_the_layout_once() {
        let mut fields = [0; FIELD_COUNT];
        let mut lists = [0; LIST_COUNT];
        for item in LAYOUT.iter().flat_map(|s| s.items) {
            match *item {
                Item::Field(i) => fields[i.0] += 1,
                Item::List(l) => lists[l.0] += 1,
            }
        }
        assert_eq!(fields, [1; FIELD_COUNT]);
        assert_eq!(lists, [1; LIST_COUNT]);
        for list in &LISTS {
            assert_eq!(list.columns.len(), list.column_paths.len(), "{}", list.id);
        }
    }

    #[wasm_bindgen_test]
    fn an_empty_form_is_a_job_with_defaults_left_out() {
        let (job, problems) = FormState::default().to_job();
        assert!(problems.is_empty(), "{problems:?}");
        let json = serde_json::to_string(&job).unwrap();
        assert_eq!(json, r#"{"metadata":{"visibility":"public"},"spec":{"container":{}}}"#);
    }

    #[wasm_bindgen_test]
    fn fields_map_to_the_job() {
        let mut s = state_with(&[
            (NAME, " train "),
            (SHAPE, "gpu.1xh100"),
            (NODE_GROUPS, "a,b"),
            (PRIORITY, "high-9000"),
            (CAN_PREEMPT, "1"),
            (COMPLETIONS, "4"),
            (PARALLELISM, "2"),
            (BACKOFF_LIMIT, "0"),
            (DEADLINE, "3600"),
            (IMAGE, "busybox"),
            (TAG, "1.36"),
            (REGISTRY_USERNAME, "me"),
            (REGISTRY_PASSWORD, "pw"),
            (PULL_SECRETS, "one, two"),
            (COMMAND, "echo hi\necho bye"),
            (LOG_COLLECTION, "off"),
            (SHARED_MEMORY, "1024"),
            (ARCHIVE_TIME, "12h"),
            (VISIBILITY, "private"),
        ]);
        s.shared_memory_typed = true;
        s.lists[ENVS] = vec![["A".into(), "value".into(), "1".into()], ["TOKEN".into(), "secret".into(), "hf".into()]];
        s.lists[PORTS] = vec![["8080".into(), "UDP".into(), String::new()]];
        s.lists[MOUNTS] = vec![["node-local".into(), "/d".into(), "/mnt/d".into()]];
        s.lists[LABELS] = vec![["team".into(), "vision".into(), String::new()]];
        let (job, problems) = s.to_job();
        assert!(problems.is_empty(), "{problems:?}");
        let spec = &job.spec;
        assert_eq!(job.metadata.name.as_deref(), Some("train"));
        assert_eq!(job.metadata.visibility, Some(Visibility::Private));
        assert_eq!(job.metadata.labels.as_ref().unwrap()["team"], "vision");
        assert_eq!(spec.resource_shape.as_deref(), Some("gpu.1xh100"));
        assert_eq!(spec.node_groups(), ["a".to_string(), "b".into()]);
        assert_eq!(spec.priority().level(), 9);
        assert!(spec.can_preempt() && !spec.can_be_preempted());
        assert_eq!((spec.completions(), spec.parallelism(), spec.backoff_limit()), (4, 2, 0));
        assert_eq!(spec.active_deadline_seconds, Some(3600));
        assert_eq!(spec.container.image_reference().as_deref(), Some("busybox:1.36"));
        assert_eq!(spec.container.registry_password.as_deref(), Some("pw"));
        assert_eq!(spec.image_pull_secrets(), ["one".to_string(), "two".into()]);
        assert_eq!(spec.container.command(), ["/bin/sh".to_string(), "-c".into(), "echo hi\necho bye".into()]);
        assert_eq!(spec.container.ports()[0].container_port, 8080);
        assert!(!spec.log_collection(true));
        assert_eq!(spec.envs()[1].value_from.as_ref().unwrap().secret_name_ref.as_deref(), Some("hf"));
        assert_eq!(spec.envs()[1].value, None);
        assert_eq!(spec.mounts()[0].mount_path, "/mnt/d");
        assert_eq!(spec.shared_memory_size, Some(1024));
        assert_eq!(spec.ttl_seconds_after_finished, Some(12 * 3600));

        // Back to the form and out again: the same job.
        let again = FormState::from_job(&job);
        assert_eq!(again.to_job().0, job);
        assert_eq!(again.shareable_job().spec.container.registry_password, None);
    }

    #[wasm_bindgen_test]
    fn text_that_is_no_number_is_a_problem_of_its_field() {
        let mut s = state_with(&[(COMPLETIONS, "four"), (ARCHIVE_TIME, "3 weeks")]);
        s.lists[PORTS] = vec![["80x".into(), "TCP".into(), String::new()]];
        let (job, problems) = s.to_job();
        assert_eq!(job.spec.completions, None);
        assert_eq!(problems["spec.completions"], ["must be a whole number, not 'four'"]);
        assert!(problems["spec.ttl_seconds_after_finished"][0].starts_with("must be a duration"));
        assert!(problems.contains_key("spec.container.ports[0].container_port"));
    }

    #[wasm_bindgen_test]
    fn more_than_one_worker_leaves_completions_and_parallelism_out() {
        let s = state_with(&[(WORKERS, "4"), (COMPLETIONS, "2")]);
        let spec = s.to_job().0.spec;
        assert_eq!((spec.workers, spec.completions, spec.parallelism), (Some(4), None, None));
        // And a `lep --num-workers 3` job reads as three workers.
        let mut lep = LeptonJob::default();
        lep.spec.completions = Some(3);
        lep.spec.parallelism = Some(3);
        lep.spec.intra_job_communication = Some(true);
        let form = FormState::from_job(&lep);
        assert_eq!(form.v[WORKERS], "3");
        assert_eq!(form.to_job().0.spec.workers(), 3);
    }

    #[wasm_bindgen_test]
    fn commands_keep_their_shell_or_argument_list() {
        let mut job = LeptonJob::default();
        job.spec.container.command = Some(vec!["/bin/bash".into(), "-c".into(), "echo hi".into()]);
        let s = FormState::from_job(&job);
        assert_eq!(s.v[COMMAND], "echo hi");
        assert_eq!(s.to_job().0.spec.container.command, job.spec.container.command);

        job.spec.container.command = Some(vec!["python3".into(), "train.py".into(), "--note".into(), "it's".into()]);
        let mut s = FormState::from_job(&job);
        assert_eq!(s.v[COMMAND], r"python3 train.py --note 'it'\''s'");
        assert_eq!(s.to_job().0.spec.container.command, job.spec.container.command);
        // Edited, it runs as a shell line.
        s.v[COMMAND] = "python3 eval.py".into();
        assert_eq!(s.to_job().0.spec.container.command.unwrap(), ["/bin/sh", "-c", "python3 eval.py"]);
    }

    #[wasm_bindgen_test]
    fn a_clone_drops_what_the_server_owns_and_keeps_the_rest() {
        let job: LeptonJob = serde_json::from_str(
            r#"{"metadata":{"id":"train-ab12c","name":"train","created_by":"alice","created_at":5,"visibility":"private"},
                "spec":{"resource_shape":"cpu.small","container":{"image":"busybox","command":["/bin/sh","-c","true"]},
                        "max_queued_duration_seconds":600,"intra_job_communication":true},
                "status":{"state":"Running"}}"#,
        )
        .unwrap();
        let s = FormState::from_job(&job);
        let (again, _) = s.to_job();
        assert_eq!(again.metadata.id, None);
        assert_eq!(again.metadata.created_by, None);
        assert_eq!(again.status, None);
        assert_eq!(again.metadata.name.as_deref(), Some("train"));
        assert_eq!(again.spec.max_queued_duration_seconds, Some(600));
        assert_eq!(again.spec.intra_job_communication, Some(true));
    }

    #[wasm_bindgen_test]
    fn paths_land_on_their_inputs() {
        let mut s = FormState::default();
        s.lists[ENVS] = vec![Default::default(); 3];
        s.lists[LABELS] =
            vec![["a".into(), String::new(), String::new()], ["example.com/team".into(), String::new(), String::new()]];
        let cases: &[(&str, Option<&str>)] = &[
            ("metadata.name", Some("job-name")),
            ("metadata.id", Some("job-name")),
            ("spec.container.image", Some("image")),
            ("spec.container.image_tag", Some("image-tag")),
            ("spec.parallelism", Some("parallelism")),
            ("spec.intra_job_communication", Some("workers")),
            ("spec.queue_config.priority_class", Some("priority")),
            ("spec.queue_config.can_preempt", Some("can-preempt")),
            ("spec.affinity.allowed_dedicated_node_groups[1]", Some("node-groups")),
            ("spec.container.command[0]", Some("command")),
            ("spec.envs[2].name", Some("envs-2-0")),
            ("spec.envs[2].value_from.secret_name_ref", Some("envs-2-2")),
            ("spec.envs[1].value", Some("envs-1-2")),
            ("spec.envs[7].name", Some("envs-add")),
            ("spec.envs", Some("envs-add")),
            ("metadata.labels[\"example.com/team\"]", Some("labels-1-0")),
            ("metadata.labels[1]", Some("labels-1-0")),
            ("spec.storage_attachments", None),
            ("spec.containerx", None),
        ];
        for (path, id) in cases {
            assert_eq!(target_of(path, &s).map(Target::input_id).as_deref(), *id, "{path}");
        }
        let mut errors = FieldErrors::new();
        errors.insert("spec.storage_attachments".into(), vec!["no".into()]);
        errors.insert("metadata.name".into(), vec!["first".into(), "second".into()]);
        let placed = Placed::place(&errors, &s);
        assert_eq!(placed.by_input["job-name"], "first");
        assert_eq!(placed.other, ["spec.storage_attachments: no"]);
        assert_eq!(placed.count(), 2);
    }

    #[wasm_bindgen_test]
    fn a_key_listed_twice_is_a_problem_of_the_second_row() {
        let mut s = FormState::default();
        s.lists[LABELS] = vec![["team".into(), "a".into(), String::new()], ["team".into(), "b".into(), String::new()]];
        let (_, problems) = s.to_job();
        let placed = Placed::place(&problems, &s);
        assert_eq!(placed.by_input["labels-1-0"], "the key 'team' is already listed above");
    }

    #[wasm_bindgen_test]
    fn durations_read_and_print() {
        assert_eq!(parse_duration("3d"), Ok(Some(259200)));
        assert_eq!(parse_duration(" 90 m "), Ok(Some(5400)));
        assert_eq!(parse_duration("3600"), Ok(Some(3600)));
        assert_eq!(parse_duration(""), Ok(None));
        assert!(parse_duration("3w").is_err());
        assert!(parse_duration("d").is_err());
        assert_eq!(format_duration(259200), "3d");
        assert_eq!(format_duration(5400), "90m");
        assert_eq!(format_duration(7), "7");
        assert_eq!(format_duration(0), "0");
    }
}
