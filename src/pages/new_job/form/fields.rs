//! The tables behind every input: each field's and list's label, help,
//! default and the field paths whose problems it shows, and the order the
//! sections show them in.

use jobdeck_api::Priority;

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
pub struct FieldId(pub(super) usize);

/// A list of the form: an index into `LISTS` and `FormState::lists`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ListId(pub(super) usize);

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
pub const QUEUE_LIMIT: FieldId = FieldId(25);
pub const GRACE_PERIOD: FieldId = FieldId(26);
pub const ARGS: FieldId = FieldId(27);
pub const WORKING_DIR: FieldId = FieldId(28);
/// The number of fields.
pub const FIELD_COUNT: usize = 29;

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

/// Every field, in the order of `NAME` … `WORKING_DIR`.
pub static FIELDS: [Field; FIELD_COUNT] = [
    f("job-name", "Job name", "A name for the job: starts with a lowercase letter; lowercase letters, digits and hyphens; ends with a letter or digit; at most 36 characters unless the workspace sets fewer.", "a readable name the server picks, such as brave-otter", Text, "train-llama", &["metadata.name", "metadata.id"]),
    f("node-groups", "Node group", "Select one or more node groups to determine what resources this job can use.", "any node group", Choices, "", &["spec.affinity.allowed_dedicated_node_groups"]),
    f("nodes", "Nodes", "Launch the job on these nodes of the chosen node groups only.", "no specific nodes", Choices, "", &["spec.affinity.allowed_nodes_in_node_group", "spec.affinity"]),
    f("priority", "Priority", "When the node group has limited resources, higher-priority jobs get them first.", "Medium (4)", Select, "", &["spec.queue_config.priority_class", "spec.queue_config"]),
    f("resource-shape", "Resource shape", "The instance type each replica runs on.", "", Select, "", &["spec.resource_shape", "spec.resources"]),
    f("can-preempt", "Can preempt lower priority workload", "Whether the job can preempt lower-priority workloads.", "off", Check, "", &["spec.queue_config.can_preempt"]),
    f("can-be-preempted", "Can be preempted by higher priority workload", "Whether the job can be preempted by higher-priority workloads.", "off", Check, "", &["spec.queue_config.can_be_preempted"]),
    f("workers", "Workers", "How many workers to launch; more than one run together and reach each other, and completions and parallelism follow them.", "1", Number, "1", &["spec.workers", "spec.intra_job_communication", "spec.segment_config"]),
    f("completions", "Completions", "The number of pods that must complete successfully for the job to be done; 1 or greater.", "1", Number, "1", &["spec.completions"]),
    f("parallelism", "Parallelism", "The maximum number of pods that run at the same time; 1 or greater and at most Completions.", "1", Number, "1", &["spec.parallelism"]),
    f("backoff-limit", "Backoff limit", "The number of retries before the job is marked as failed; 0 or greater.", "3", Number, "3", &["spec.backoff_limit"]),
    f("active-deadline", "Active deadline", "How long the job may run before it is stopped and failed, such as 4h, 90m, 1d or PT4H30M; empty for no deadline.", "no deadline", Text, "4h", &["spec.active_deadline_seconds"]),
    f("image", "Container image", "The container image to run, such as nvcr.io/nvidia/base/ubuntu.", "none; needed when jobs run in containers", Text, "nvcr.io/nvidia/base/ubuntu", &["spec.container.image"]),
    f("image-tag", "Container tag", "The image tag, such as latest; leave it empty when the image already names one.", "latest", Text, "latest", &["spec.container.image_tag"]),
    f("registry-username", "Registry username", "Only for a private registry: give both or neither.", "none (a public image)", Text, "", &["spec.container.registry_username"]),
    f("registry-password", "Registry password", "Write-only: never shown again and never copied into drafts, clones or copies.", "none", Password, "", &["spec.container.registry_password"]),
    f("pull-secrets", "Image pull secrets", "Or the names of stored image pull secrets, separated by commas.", "none", Text, "", &["spec.image_pull_secrets"]),
    f("command", "Command", "The command to run when the container starts, run by /bin/sh -c (lep's --command uses /bin/bash -c), such as python3 train.py.", "the image's entrypoint", Area, "python3 train.py --epochs 10", &["spec.container.command"]),
    f("log-collection", "Log collection", "Whether to collect the logs from the container.", "", Select, "", &["spec.log"]),
    f("shared-memory", "Shared memory", "The size of /dev/shm in the container, in MiB; the default follows the resource shape's memory.", "", Number, "", &["spec.shared_memory_size"]),
    f("max-replica-retry", "Max replica failure retry", "Maximum number of times to retry a failed replica.", "no per-replica limit; the backoff limit bounds the retries", Number, "", &["spec.max_failure_retry"]),
    f("max-job-retry", "Max job failure retry", "Maximum number of failure restarts of the entire job.", "0", Number, "0", &["spec.max_job_failure_retry"]),
    f("no-retry-on-program-error", "Disable retry when program error occurs", "If on, the job is not retried when a program error is detected in the logs.", "off", Check, "", &["spec.disable_retry_on_program_error"]),
    f("archive-time", "Archive time", "Archived this long after it ends, such as 3d, 12h or P1D. Its logs, metrics and run directory go then, but never before the workspace's minimum log retention (default 7d) nor after its maximum; its record and events stay.", "3d (3 days)", Text, "3d", &["spec.ttl_seconds_after_finished"]),
    f("visibility", "Visibility", "Private: only you can see the job. Public: everyone in the workspace can.", "Public", Select, "", &["metadata.visibility"]),
    f("queue-limit", "Queue limit", "How long the job may wait in the queue before it fails, such as 72h or PT72H.", "none, it waits until it fits (unless the workspace sets a limit)", Text, "72h", &["spec.max_queued_duration_seconds"]),
    f("grace-period", "Termination grace period", "When a replica is stopped: the time between SIGTERM and SIGKILL to save its work, such as 5m; at most 1d.", "the server's (30s unless set otherwise)", Text, "30s", &["spec.termination_grace_period_seconds"]),
    f("args", "Arguments", "One per line, not run by a shell: after the command, or to the image's entrypoint when Command is empty.", "none", Area, "--epochs\n10", &["spec.container.args"]),
    f("working-dir", "Working directory", "The directory the command starts in, inside the container: an absolute path that exists in the image or a volume.", "the image's own", Text, "/workspace", &["spec.container.working_dir"]),
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
        items: &[
            Item::Field(COMPLETIONS),
            Item::Field(PARALLELISM),
            Item::Field(BACKOFF_LIMIT),
            Item::Field(DEADLINE),
            Item::Field(QUEUE_LIMIT),
            Item::Field(GRACE_PERIOD),
        ],
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
            Item::Field(ARGS),
            Item::Field(WORKING_DIR),
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
