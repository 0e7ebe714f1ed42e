//! What the form holds (`FormState`) and its one mapping to and from the
//! wire job: `to_job` and `from_job`.

use std::collections::BTreeMap;

use jobdeck_api::{
    defaults, parse_duration, short_duration, ContainerPort, EnvValue, EnvVar, FieldErrors, LeptonJob, LogConfig,
    Mount, Protocol, QueueConfig, Visibility,
};

use super::*;

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
        // Durations are typed as people write them and sent as seconds.
        for (field, path, target) in [
            (DEADLINE, "spec.active_deadline_seconds", &mut spec.active_deadline_seconds),
            (QUEUE_LIMIT, "spec.max_queued_duration_seconds", &mut spec.max_queued_duration_seconds),
            (GRACE_PERIOD, "spec.termination_grace_period_seconds", &mut spec.termination_grace_period_seconds),
            (ARCHIVE_TIME, "spec.ttl_seconds_after_finished", &mut spec.ttl_seconds_after_finished),
        ] {
            *target = note(parse_duration(&v[field]), path, &mut problems);
        }

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
        container.working_dir = some_text(&v[WORKING_DIR]);
        // One argument per line. Arguments the form was filled with stay as
        // they were until the text is edited, even one holding a line break.
        let kept = &self.base.spec.container.args;
        container.args = if kept.as_deref().unwrap_or_default().join("\n") == v[ARGS] {
            kept.clone()
        } else {
            some_list(v[ARGS].lines().filter(|line| !line.is_empty()).map(String::from).collect())
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
        for (field, seconds) in [
            (DEADLINE, spec.active_deadline_seconds),
            (QUEUE_LIMIT, spec.max_queued_duration_seconds),
            (GRACE_PERIOD, spec.termination_grace_period_seconds),
            (ARCHIVE_TIME, spec.ttl_seconds_after_finished),
        ] {
            v[field] = seconds.map(short_duration).unwrap_or_default();
        }

        let container = &spec.container;
        v[IMAGE] = container.image.clone().unwrap_or_default();
        v[TAG] = container.image_tag.clone().unwrap_or_default();
        v[REGISTRY_USERNAME] = container.registry_username.clone().unwrap_or_default();
        v[REGISTRY_PASSWORD] = container.registry_password.clone().unwrap_or_default();
        v[ARGS] = container.args().join("\n");
        v[WORKING_DIR] = container.working_dir.clone().unwrap_or_default();
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
