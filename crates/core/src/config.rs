//! Server settings gathered from the command line and the config file.
//!
//! The config file (`jobdeck serve --config jobdeck.toml`) declares the node
//! groups, the resource shapes and the executor; docs/config.md describes
//! every key. Without a file, or for a section the file leaves out, the
//! defaults of design §10 apply: one node group `local` sized from this
//! machine, the shapes `cpu.small`, `cpu.medium`, `cpu.large` and one GPU
//! shape per GPU count the machine has, and the local executor in container
//! mode when a working docker or podman is installed (process mode
//! otherwise).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;

mod audit;
mod auth;
mod gpu;
mod limits;
mod logs;
mod machine;
mod networks;
mod notifications;
mod quotas;
mod secrets;
pub use audit::AuditConfig;
pub use auth::{parse_duration, AuthConfig, OidcConfig};
pub use gpu::{known_compute_capability, parse_compute_capability};
pub use limits::LimitsConfig;
pub use logs::LogsConfig;
pub use machine::{default_node_groups, default_shapes, MachineInfo};
pub use networks::{is_network, Ipv4Network};
pub use notifications::{is_special, Destination, EmailConfig, NotificationsConfig, SmtpTls};
pub use quotas::QuotasConfig;
pub use secrets::{KeyLocation, SecretsConfig};

/// Why a config cannot be used. The command line prints it with its chain
/// of sources (`error_chain`): "invalid config file x.toml: shapes[0].cpu
/// must be more than 0".
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the config file {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file was read; what it says cannot be used.
    #[error("invalid config file {}", path.display())]
    InFile {
        path: PathBuf,
        #[source]
        source: Box<ConfigError>,
    },
    /// Not TOML, or a key or value the config does not have.
    #[error(transparent)]
    Toml(#[from] toml::de::Error),
    /// An executor's own section (`[executor.slurm]`, …) that does not read
    /// as its settings.
    #[error("{section}")]
    Section {
        section: &'static str,
        #[source]
        source: toml::de::Error,
    },
    /// A broken rule, as a sentence that names its key.
    #[error("{0}")]
    Rule(String),
}

/// How the server runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the database, logs and replica working directories live.
    pub data_dir: PathBuf,
    /// The built console to serve (trunk's `dist/`), if any.
    pub console_dir: Option<PathBuf>,
    /// The workspace's display name (and id).
    pub workspace_name: String,
    /// Whether logs are collected when a job does not say.
    pub log_collection_default: bool,
    /// The longest job name accepted, at most Lepton's 36 (the contract's
    /// `JOB_NAME_MAX_LEN`); the managed-cluster page's 20 is such a setting.
    pub job_name_max_length: usize,
    /// The queue limit a new job gets when it names none
    /// (`spec.max_queued_duration_seconds`, written into the job when it is
    /// created); `None`, the default, leaves such jobs waiting as long as it
    /// takes, as Lepton does.
    pub default_max_queued_duration_seconds: Option<i64>,
    /// Which executor runs replicas, and its settings.
    pub executor: ExecutorConfig,
    /// Where replicas may run; never empty.
    pub node_groups: Vec<NodeGroupConfig>,
    /// The resource shapes a job may ask for; never empty.
    pub shapes: Vec<ShapeConfig>,
    /// `[auth]`: how long sign-in links and sessions live.
    pub auth: AuthConfig,
    /// `[limits]`: timeouts, and what one user may hold at once.
    pub limits: LimitsConfig,
    /// `[secrets]`: where the key sealing secret values is kept.
    pub secrets: SecretsConfig,
    /// `[quotas]`: what each role and named user may hold; an admin's
    /// setting in the console replaces a role's or user's here.
    pub quotas: QuotasConfig,
    /// `[audit]`: how long the audit log keeps its entries.
    pub audit: AuditConfig,
    /// `[logs]`: how long finished jobs' logs are kept.
    pub logs: LogsConfig,
    /// `[notifications]`: where webhooks may be sent, and their retries.
    pub notifications: NotificationsConfig,
    /// The `jobdeck` binary that runs replica supervisors (`jobdeck
    /// supervise`). `None` means the running executable, which is right for
    /// `jobdeck serve`; in-process tests point it at the built binary.
    pub supervisor_bin: Option<PathBuf>,
}

/// The executor kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutorKind {
    /// Replicas run on this machine (design §5).
    Local,
    /// Replicas are pods of `batch/v1` Jobs on a cluster (design §5, issue 8).
    Kubernetes,
    /// Replicas are tasks of Slurm job arrays (docs/slurm.md, issue 19).
    Slurm,
}

impl ExecutorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutorKind::Local => "local",
            ExecutorKind::Kubernetes => "kubernetes",
            ExecutorKind::Slurm => "slurm",
        }
    }
}

/// `[executor]`.
#[derive(Debug, Clone)]
pub struct ExecutorConfig {
    pub kind: ExecutorKind,
    /// `[executor.local]`.
    pub local: LocalExecutorConfig,
    /// `[executor.kubernetes]` exactly as written: the Kubernetes executor
    /// owns and parses its own settings.
    pub kubernetes: toml::Table,
    /// `[executor.slurm]` exactly as written, for the Slurm executor.
    pub slurm: toml::Table,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        Self {
            kind: ExecutorKind::Local,
            local: LocalExecutorConfig::default(),
            kubernetes: toml::Table::new(),
            slurm: toml::Table::new(),
        }
    }
}

/// How the local executor starts a replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LocalMode {
    /// Container mode when a working docker or podman is installed, process
    /// mode otherwise; decided once at start by the local executor, which
    /// probes the engine.
    Auto,
    /// The job's command runs as a plain process; the image is ignored.
    Process,
    /// The job's image runs under a container engine (docker or podman).
    Container,
}

impl LocalMode {
    pub fn as_str(self) -> &'static str {
        match self {
            LocalMode::Auto => "auto",
            LocalMode::Process => "process",
            LocalMode::Container => "container",
        }
    }
}

/// When container mode pulls a replica's image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PullPolicy {
    /// Only when the engine does not have the image yet, as `docker run`
    /// does.
    Missing,
    /// Before every attempt, so every user's credentials are checked
    /// against the registry even when another job pulled the image before
    /// (Kubernetes' `AlwaysPullImages` for a shared machine).
    Always,
}

/// `[executor.local]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LocalExecutorConfig {
    /// `auto` (default), `process` or `container`.
    pub mode: LocalMode,
    /// The container engine binary: `docker`, `podman` or a path to either.
    /// Empty (the default) means podman, else docker, whichever is on `PATH`.
    pub engine: String,
    /// When images are pulled in container mode.
    pub pull_policy: PullPolicy,
    /// Seconds between SIGTERM and SIGKILL when a replica is stopped.
    pub grace_period_seconds: u64,
    /// Whether to limit each replica's memory to its shape (cgroups) when the
    /// machine allows it.
    pub memory_limits: bool,
    /// Host directories behind the volume names jobs mount (`spec.mounts[].from`).
    pub volumes: BTreeMap<String, PathBuf>,
    /// The wait before a failed replica's first retry, doubled for each
    /// further failure of the same replica, as Kubernetes' Job controller
    /// does (10 s, 20 s, 40 s, …).
    pub retry_backoff_seconds: u64,
    /// The longest wait between retries (Kubernetes: 6 minutes).
    pub retry_backoff_max_seconds: u64,
    /// Variables for the container engine's process (`CONTAINERS_CONF`,
    /// `CONTAINERS_REGISTRIES_CONF`, `DOCKER_HOST`, …), over those of the
    /// server's own environment; containers never see them.
    pub engine_environment: BTreeMap<String, String>,
    /// How often running replicas' CPU, memory and GPUs are sampled, in
    /// milliseconds; 0 turns sampling off.
    pub metrics_interval_ms: u64,
    /// Container mode: the most processes and threads one container may
    /// hold (the engine's `--pids-limit`), so a fork bomb in one job cannot
    /// exhaust the machine's process table.
    pub pids_limit: u32,
    /// Container mode on podman: networks no job may reach, as addresses
    /// with an optional prefix length. The default is the link-local range,
    /// where clouds answer instance metadata (and credentials) at
    /// `169.254.169.254`.
    pub blocked_networks: Vec<String>,
    /// Container mode on podman: the IPv4 range each run's own network
    /// gets a `/24` of. Jobs may not reach any of it but their own `/24`.
    pub network_pool: String,
    /// Container mode on podman: `host` (the default) runs a job's root as
    /// the host's root, for files of volumes; `auto` gives every run a user
    /// namespace of its own (`--userns=auto`), so its root is an unprivileged
    /// user of the host, different for each run (docs/security.md).
    pub user_namespace: UserNamespace,
}

/// How a container's users map to the host's (`executor.local.user_namespace`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UserNamespace {
    /// The container's root is the host's root.
    Host,
    /// A range of the host's subordinate ids of its own per run (podman).
    Auto,
}

impl Default for LocalExecutorConfig {
    fn default() -> Self {
        Self {
            mode: LocalMode::Auto,
            engine: String::new(),
            pull_policy: PullPolicy::Missing,
            grace_period_seconds: 30,
            memory_limits: true,
            volumes: BTreeMap::new(),
            retry_backoff_seconds: 10,
            retry_backoff_max_seconds: 360,
            engine_environment: BTreeMap::new(),
            metrics_interval_ms: 5_000,
            pids_limit: 8192,
            blocked_networks: vec!["169.254.0.0/16".into()],
            network_pool: "10.89.0.0/16".into(),
            user_namespace: UserNamespace::Host,
        }
    }
}

impl LocalExecutorConfig {
    /// The wait before the retry that follows a replica's `failures`-th
    /// failed attempt (1 for the first): the base doubled per earlier
    /// failure, capped.
    pub fn retry_backoff(&self, failures: i64) -> std::time::Duration {
        retry_backoff(self.retry_backoff_seconds, self.retry_backoff_max_seconds, failures)
    }
}

/// The wait before a failed replica's retry after its `failures`-th failure,
/// as Kubernetes' Job controller waits: `base` seconds, doubled for each
/// further failure, at most `max`.
pub fn retry_backoff(base: u64, max: u64, failures: i64) -> std::time::Duration {
    let doublings = (failures.max(1) - 1).min(32) as u32;
    std::time::Duration::from_secs(base.saturating_mul(1u64 << doublings).min(max))
}

/// One node of a node group, with what it provides.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeConfig {
    pub name: String,
    pub cpu: f64,
    pub memory_mb: i64,
    pub gpus: i64,
}

/// `[[node_groups]]`: a named set of identical nodes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeGroupConfig {
    pub name: String,
    /// CPUs per node.
    pub cpu: f64,
    /// Memory per node, MiB.
    pub memory_mb: i64,
    /// GPUs per node.
    #[serde(default)]
    pub gpus: i64,
    /// The GPU model, such as `NVIDIA-H100-80GB-HBM3`.
    #[serde(default)]
    pub gpu_product: Option<String>,
    /// How many nodes the group has (default 1); named `<group>-node-<i>`
    /// unless `node_names` names them.
    #[serde(default)]
    pub nodes: Option<u32>,
    #[serde(default)]
    pub node_names: Option<Vec<String>>,
    /// Node labels that select this group's nodes on a cluster (Kubernetes
    /// executor); unused by the local executor.
    #[serde(default)]
    pub node_selector: BTreeMap<String, String>,
    /// The roles whose members may run privileged containers on this
    /// group's nodes (`spec.user_security_context.privileged`, `lep job
    /// create --privileged`); none by default. Risk: a privileged container
    /// has every capability and every device of the node, so its job can
    /// take over the node, read every other job's files and GPUs on it, and
    /// reach the server's own data if the server runs there
    /// (docs/config.md, "Privileged containers").
    #[serde(default)]
    pub privileged_roles: Vec<jobdeck_api::Role>,
}

impl NodeGroupConfig {
    /// The group's nodes, each with the per-node resources.
    pub fn node_list(&self) -> Vec<NodeConfig> {
        let names: Vec<String> = match (&self.node_names, self.nodes) {
            (Some(names), _) => names.clone(),
            (None, Some(n)) if n != 1 => (1..=n).map(|i| format!("{}-node-{i}", self.name)).collect(),
            (None, _) => vec![format!("{}-node-1", self.name)],
        };
        names
            .into_iter()
            .map(|name| NodeConfig { name, cpu: self.cpu, memory_mb: self.memory_mb, gpus: self.gpus })
            .collect()
    }
}

/// `[[shapes]]`: what one replica of a job with this shape gets.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShapeConfig {
    pub name: String,
    pub cpu: f64,
    /// MiB.
    pub memory_mb: i64,
    #[serde(default)]
    pub gpus: i64,
    #[serde(default)]
    pub accelerator_type: Option<String>,
    #[serde(default)]
    pub accelerator_memory_mb: Option<i64>,
    /// The GPU's CUDA compute capability, `major.minor` (`8.0`); absent,
    /// read from `accelerator_type` for the GPUs NVIDIA lists
    /// ([`known_compute_capability`]).
    #[serde(default)]
    pub compute_capability: Option<String>,
    #[serde(default)]
    pub ephemeral_storage_gb: Option<i64>,
    #[serde(default)]
    pub description: Option<String>,
}

/// The config file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    workspace_name: Option<String>,
    log_collection_default: Option<bool>,
    job_name_max_length: Option<usize>,
    default_max_queued_duration: Option<String>,
    executor: Option<ExecutorSection>,
    node_groups: Option<Vec<NodeGroupConfig>>,
    shapes: Option<Vec<ShapeConfig>>,
    auth: Option<AuthConfig>,
    limits: Option<LimitsConfig>,
    secrets: Option<SecretsConfig>,
    quotas: Option<quotas::QuotasSection>,
    audit: Option<AuditConfig>,
    logs: Option<LogsConfig>,
    notifications: Option<NotificationsConfig>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExecutorSection {
    kind: Option<ExecutorKind>,
    local: Option<LocalExecutorConfig>,
    kubernetes: Option<toml::Table>,
    slurm: Option<toml::Table>,
}

impl Config {
    /// Defaults for a data directory, as `jobdeck serve` uses without a
    /// config file.
    pub fn for_data_dir(data_dir: impl Into<PathBuf>) -> Self {
        Self::for_machine(data_dir, &MachineInfo::detect())
    }

    /// Defaults for a data directory on a given machine.
    pub fn for_machine(data_dir: impl Into<PathBuf>, machine: &MachineInfo) -> Self {
        Self {
            data_dir: data_dir.into(),
            console_dir: None,
            workspace_name: "jobdeck".into(),
            log_collection_default: true,
            job_name_max_length: jobdeck_api::JOB_NAME_MAX_LEN,
            default_max_queued_duration_seconds: None,
            executor: ExecutorConfig::default(),
            node_groups: default_node_groups(machine),
            shapes: default_shapes(machine),
            auth: AuthConfig::default(),
            limits: LimitsConfig::default(),
            secrets: SecretsConfig::default(),
            quotas: QuotasConfig::default(),
            audit: AuditConfig::default(),
            logs: LogsConfig::default(),
            notifications: NotificationsConfig::default(),
            supervisor_bin: None,
        }
    }

    /// Reads a config file; any unknown key is an error naming it, so a typo
    /// does not silently fall back to a default.
    pub fn from_file(path: &Path, data_dir: &Path) -> Result<Self, ConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_path_buf(), source })?;
        Self::from_toml(&text, data_dir, &MachineInfo::detect())
            .map_err(|e| ConfigError::InFile { path: path.to_path_buf(), source: Box::new(e) })
    }

    /// Parses config text over the defaults for `machine`.
    pub fn from_toml(text: &str, data_dir: &Path, machine: &MachineInfo) -> Result<Self, ConfigError> {
        let file: ConfigFile = toml::from_str(text)?;
        let mut config = Config::for_machine(data_dir, machine);
        if let Some(name) = file.workspace_name {
            config.workspace_name = name;
        }
        if let Some(default) = file.log_collection_default {
            config.log_collection_default = default;
        }
        if let Some(max) = file.job_name_max_length {
            config.job_name_max_length = max;
        }
        if let Some(text) = file.default_max_queued_duration {
            config.default_max_queued_duration_seconds = match jobdeck_api::parse_duration(&text) {
                Ok(seconds) => seconds,
                Err(problem) => return Err(ConfigError::Rule(format!("default_max_queued_duration {problem}"))),
            };
        }
        if let Some(executor) = file.executor {
            if let Some(kind) = executor.kind {
                config.executor.kind = kind;
            }
            if let Some(local) = executor.local {
                config.executor.local = local;
            }
            if let Some(kubernetes) = executor.kubernetes {
                config.executor.kubernetes = kubernetes;
            }
            if let Some(slurm) = executor.slurm {
                config.executor.slurm = slurm;
            }
        }
        if let Some(groups) = file.node_groups {
            config.node_groups = groups;
        }
        if let Some(shapes) = file.shapes {
            config.shapes = shapes;
        }
        if let Some(auth) = file.auth {
            config.auth = auth;
        }
        if let Some(limits) = file.limits {
            config.limits = limits;
        }
        if let Some(secrets) = file.secrets {
            config.secrets = secrets;
        }
        if let Some(quotas) = file.quotas {
            config.quotas = quotas.into();
        }
        if let Some(audit) = file.audit {
            config.audit = audit;
        }
        if let Some(logs) = file.logs {
            config.logs = logs;
        }
        if let Some(notifications) = file.notifications {
            config.notifications = notifications;
        }
        config.check()?;
        Ok(config)
    }

    /// The rules a config must follow, each broken one named by its key.
    pub fn check(&self) -> Result<(), ConfigError> {
        self.first_broken_rule().map_or(Ok(()), |rule| Err(ConfigError::Rule(rule)))
    }

    /// The sentence of the first rule this config breaks.
    fn first_broken_rule(&self) -> Option<String> {
        if self.workspace_name.trim().is_empty() {
            return Some("workspace_name must not be empty".into());
        }
        if let Some(seconds) = self.default_max_queued_duration_seconds {
            if !(1..=jobdeck_api::validate::DURATION_MAX_SECONDS).contains(&seconds) {
                return Some(format!(
                    "default_max_queued_duration must be between 1 second and {} days, or off",
                    jobdeck_api::validate::DURATION_MAX_SECONDS / 86_400
                ));
            }
        }
        if !(1..=jobdeck_api::JOB_NAME_MAX_LEN).contains(&self.job_name_max_length) {
            return Some(format!(
                "job_name_max_length must be between 1 and {} (Lepton's limit)",
                jobdeck_api::JOB_NAME_MAX_LEN
            ));
        }
        if self.node_groups.is_empty() {
            return Some("node_groups must declare at least one node group".into());
        }
        if let Some(rule) = self
            .auth
            .broken_rule()
            .or_else(|| self.limits.broken_rule())
            .or_else(|| self.quotas.broken_rule())
            .or_else(|| self.audit.broken_rule())
            .or_else(|| self.logs.broken_rule())
            .or_else(|| self.notifications.broken_rule())
            .or_else(|| self.secrets.broken_rule(&self.data_dir))
        {
            return Some(rule);
        }
        // A job mounting such a volume would read every secret and token.
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let data_dir = canonical(&self.data_dir);
        for (name, dir) in &self.executor.local.volumes {
            if data_dir.starts_with(canonical(dir)) {
                return Some(format!(
                    "executor.local.volumes.{name} ('{}') contains the data directory ({}), which holds every \
                     secret and token",
                    dir.display(),
                    self.data_dir.display()
                ));
            }
        }
        for (i, network) in self.executor.local.blocked_networks.iter().enumerate() {
            if !is_network(network) {
                return Some(format!(
                    "executor.local.blocked_networks[{i}] '{network}' must be an IP address or network, such as \
                     169.254.0.0/16"
                ));
            }
        }
        let pool = &self.executor.local.network_pool;
        if Ipv4Network::parse(pool).is_none_or(|network| network.subnets_24().next().is_none()) {
            return Some(format!(
                "executor.local.network_pool '{pool}' must be an IPv4 network of at least a /24, such as 10.89.0.0/16"
            ));
        }
        let mut group_names = BTreeSet::new();
        let mut node_names = BTreeSet::new();
        for (i, group) in self.node_groups.iter().enumerate() {
            let key = format!("node_groups[{i}]");
            if !is_resource_name(&group.name) {
                return Some(format!(
                    "{key}.name '{}' must be 1 to 63 lowercase letters, digits, '-' or '.'",
                    group.name
                ));
            }
            if !group_names.insert(group.name.clone()) {
                return Some(format!("{key}.name '{}' is declared twice", group.name));
            }
            if !(group.cpu > 0.0) {
                return Some(format!("{key}.cpu must be more than 0"));
            }
            if group.memory_mb <= 0 {
                return Some(format!("{key}.memory_mb must be more than 0"));
            }
            if group.gpus < 0 {
                return Some(format!("{key}.gpus must be 0 or more"));
            }
            if group.nodes == Some(0) {
                return Some(format!("{key}.nodes must be at least 1"));
            }
            if let (Some(names), Some(n)) = (&group.node_names, group.nodes) {
                if names.len() != n as usize {
                    return Some(format!("{key}.node_names has {} names but nodes is {n}", names.len()));
                }
            }
            if group.node_names.as_ref().is_some_and(|n| n.is_empty()) {
                return Some(format!("{key}.node_names must name at least one node"));
            }
            for node in group.node_list() {
                if node.name.trim().is_empty() {
                    return Some(format!("{key}.node_names must not contain an empty name"));
                }
                if !node_names.insert(node.name.clone()) {
                    return Some(format!("{key}: node '{}' is declared twice", node.name));
                }
            }
        }
        if self.shapes.is_empty() {
            return Some("shapes must declare at least one resource shape".into());
        }
        let mut shape_names = BTreeSet::new();
        for (i, shape) in self.shapes.iter().enumerate() {
            let key = format!("shapes[{i}]");
            if !is_resource_name(&shape.name) {
                return Some(format!(
                    "{key}.name '{}' must be 1 to 63 lowercase letters, digits, '-' or '.'",
                    shape.name
                ));
            }
            if !shape_names.insert(shape.name.clone()) {
                return Some(format!("{key}.name '{}' is declared twice", shape.name));
            }
            if !(shape.cpu > 0.0) {
                return Some(format!("{key}.cpu must be more than 0"));
            }
            if shape.memory_mb <= 0 {
                return Some(format!("{key}.memory_mb must be more than 0"));
            }
            if shape.gpus < 0 {
                return Some(format!("{key}.gpus must be 0 or more"));
            }
            if let Some(text) = &shape.compute_capability {
                if parse_compute_capability(text).is_none() {
                    return Some(format!("{key}.compute_capability '{text}' must be major.minor, such as 8.0"));
                }
            }
        }
        if self.executor.local.retry_backoff_max_seconds < self.executor.local.retry_backoff_seconds {
            return Some("executor.local.retry_backoff_max_seconds must be at least retry_backoff_seconds".into());
        }
        None
    }

    pub fn shape(&self, name: &str) -> Option<&ShapeConfig> {
        self.shapes.iter().find(|s| s.name == name)
    }

    /// The shape a job's replicas run with: the one it names, else the
    /// server's first (the contract's default).
    pub fn shape_of(&self, spec: &jobdeck_api::JobSpec) -> Option<&ShapeConfig> {
        match spec.resource_shape.as_deref() {
            Some(name) => self.shape(name),
            None => self.shapes.first(),
        }
    }

    pub fn node_group(&self, name: &str) -> Option<&NodeGroupConfig> {
        self.node_groups.iter().find(|g| g.name == name)
    }
}

fn is_resource_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_back_off_doubles_up_to_its_cap() {
        // (failures so far, seconds) with Kubernetes' 10 s and 360 s.
        for (failures, seconds) in [(0, 10), (1, 10), (2, 20), (3, 40), (6, 320), (7, 360), (100, 360)] {
            assert_eq!(retry_backoff(10, 360, failures).as_secs(), seconds, "{failures}");
        }
        assert_eq!(retry_backoff(0, 360, 5).as_secs(), 0);
    }

    #[test]
    fn blocked_networks_and_the_network_pool_are_checked() {
        let config = "[executor.local]\nblocked_networks = [\"169.254.0.0/16\", \"metadata\"]\n";
        let refused = Config::from_toml(config, Path::new("/tmp/x"), &machine(0)).unwrap_err().to_string();
        assert!(refused.contains("executor.local.blocked_networks[1] 'metadata'"), "{refused}");
        let config = "[executor.local]\nnetwork_pool = \"10.89.0.0/25\"\n";
        let refused = Config::from_toml(config, Path::new("/tmp/x"), &machine(0)).unwrap_err().to_string();
        assert!(refused.contains("executor.local.network_pool '10.89.0.0/25'"), "{refused}");
    }

    fn machine(gpus: i64) -> MachineInfo {
        MachineInfo {
            hostname: "box".into(),
            cpus: 16.0,
            memory_mb: 65536,
            gpus,
            gpu_product: (gpus > 0).then(|| "NVIDIA-H100-80GB-HBM3".into()),
            gpu_memory_mb: (gpus > 0).then_some(81559),
        }
    }

    #[test]
    fn defaults_have_one_local_group_sized_from_the_machine() {
        let config = Config::for_machine("/tmp/x", &machine(0));
        assert_eq!(config.node_groups.len(), 1);
        let group = &config.node_groups[0];
        assert_eq!(group.name, "local");
        assert_eq!((group.cpu, group.memory_mb, group.gpus), (16.0, 65536, 0));
        assert_eq!(group.node_list()[0].name, "box");
        let names: Vec<_> = config.shapes.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["cpu.small", "cpu.medium", "cpu.large"]);
        assert_eq!(config.executor.kind, ExecutorKind::Local);
        assert_eq!(config.default_max_queued_duration_seconds, None, "jobs wait as long as it takes");
        config.check().unwrap();
        for (text, seconds) in [("72h", Some(259_200)), ("PT72H", Some(259_200)), ("off", None)] {
            let config =
                Config::from_toml(&format!("default_max_queued_duration = '{text}'"), Path::new("/d"), &machine(0));
            assert_eq!(config.unwrap().default_max_queued_duration_seconds, seconds, "{text}");
        }
    }

    /// A volume at or above the data directory would hand a job every
    /// secret and token; one beside it is fine.
    #[test]
    fn a_volume_that_contains_the_data_directory_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("srv/jobdeck");
        std::fs::create_dir_all(&data).unwrap();
        std::os::unix::fs::symlink(root.path().join("srv"), root.path().join("link")).unwrap();
        for volume in [root.path().join("srv"), data.clone(), root.path().join("link"), root.path().to_path_buf()] {
            let mut config = Config::for_machine(&data, &machine(0));
            config.executor.local.volumes = [("shared".to_string(), volume.clone())].into();
            let rule = config.first_broken_rule().unwrap_or_else(|| panic!("{} was accepted", volume.display()));
            assert!(rule.starts_with("executor.local.volumes.shared ("), "{rule}");
            assert!(rule.contains("contains the data directory"), "{rule}");
        }
        let mut config = Config::for_machine(&data, &machine(0));
        config.executor.local.volumes = [("shared".to_string(), root.path().join("srv/datasets"))].into();
        config.check().unwrap();
    }

    #[test]
    fn a_machine_with_gpus_gets_one_gpu_shape_per_count() {
        let config = Config::for_machine("/tmp/x", &machine(2));
        let gpu: Vec<_> = config.shapes.iter().filter(|s| s.gpus > 0).collect();
        assert_eq!(gpu.len(), 2);
        assert_eq!(gpu[0].name, "gpu.1xh100-80gb-hbm3");
        assert_eq!((gpu[0].gpus, gpu[0].cpu), (1, 8.0));
        assert_eq!(gpu[1].name, "gpu.2xh100-80gb-hbm3");
        assert_eq!(gpu[1].accelerator_type.as_deref(), Some("NVIDIA-H100-80GB-HBM3"));
        config.check().unwrap();
    }

    #[test]
    fn a_config_file_replaces_groups_shapes_and_executor() {
        let text = r#"
            workspace_name = "lab"
            [executor]
            kind = "local"
            [executor.local]
            grace_period_seconds = 2
            [executor.kubernetes]
            namespace = "jobs"
            [[node_groups]]
            name = "gpu-a"
            cpu = 32
            memory_mb = 262144
            gpus = 8
            nodes = 2
            [[shapes]]
            name = "gpu.1x"
            cpu = 4
            memory_mb = 32768
            gpus = 1
        "#;
        let config = Config::from_toml(text, Path::new("/d"), &machine(0)).unwrap();
        assert_eq!(config.workspace_name, "lab");
        assert_eq!(config.executor.local.grace_period_seconds, 2);
        assert_eq!(config.executor.kubernetes["namespace"].as_str(), Some("jobs"));
        let nodes = config.node_groups[0].node_list();
        assert_eq!(nodes.len(), 2);
        assert_eq!(nodes[1].name, "gpu-a-node-2");
        assert_eq!(config.shapes.len(), 1);
    }

    #[test]
    fn quotas_are_read_per_role_and_user_with_byte_units() {
        let text =
            "[quotas.roles.member]\nrunning_gpus = 8\nlog_bytes = \"50GB\"\n[quotas.users.alice]\nqueued_jobs = 3\n";
        let config = Config::from_toml(text, Path::new("/d"), &machine(0)).unwrap();
        let member = config.quotas.roles[&jobdeck_api::Role::Member];
        assert_eq!((member.running_gpus, member.log_bytes, member.queued_jobs), (Some(8), Some(50_000_000_000), None));
        assert_eq!(config.quotas.users["alice"].queued_jobs, Some(3));
    }

    #[test]
    fn broken_config_files_name_the_key() {
        let cases: &[(&str, &str)] = &[
            ("colour = 1", "unknown field `colour`"),
            ("[[node_groups]]\nname = \"a\"\ncpu = 0\nmemory_mb = 1", "node_groups[0].cpu must be more than 0"),
            (
                "[[node_groups]]\nname = \"a\"\ncpu = 1\nmemory_mb = 1\n[[node_groups]]\nname = \"a\"\ncpu = 1\nmemory_mb = 1",
                "node_groups[1].name 'a' is declared twice",
            ),
            ("[[node_groups]]\nname = \"A\"\ncpu = 1\nmemory_mb = 1", "node_groups[0].name 'A' must be"),
            ("[[shapes]]\nname = \"s\"\ncpu = 1\nmemory_mb = 0", "shapes[0].memory_mb must be more than 0"),
            (
                "[[shapes]]\nname = \"s\"\ncpu = 1\nmemory_mb = 1\ngpus = 1\ncompute_capability = \"eight\"",
                "shapes[0].compute_capability 'eight' must be major.minor, such as 8.0",
            ),
            ("[executor]\nkind = \"nomad\"", "unknown variant `nomad`"),
            ("[executor.local]\nretry_backoff_seconds = 20\nretry_backoff_max_seconds = 10", "retry_backoff_max_seconds"),
            ("[executor.local]\ngrace = 1", "unknown field `grace`"),
            (
                "[[node_groups]]\nname = \"a\"\ncpu = 1\nmemory_mb = 1\nnodes = 2\nnode_names = [\"x\"]",
                "node_groups[0].node_names has 1 names but nodes is 2",
            ),
            ("[quotas.roles.owner]\nrunning_gpus = 1", "unknown variant `owner`"),
            ("[quotas.users.alice]\ngpus = 1", "unknown field `gpus`"),
            ("[quotas.users.alice]\nlog_bytes = \"5 parsecs\"", "'5 parsecs' is not a byte count"),
            ("[quotas.roles.member]\nrunning_gpus = -2", "quotas.roles.member.running_gpus must be from 0"),
            ("[audit]\nretention = \"1h\"", "audit.retention must be at least 1d"),
            (
                "[logs]\nminimum_retention = \"7d\"\nmaximum_retention = \"1d\"",
                "logs.maximum_retention must be at least logs.minimum_retention",
            ),
            ("[logs]\nmaximum_retention = \"always\"", "not 'always', or \"forever\""),
            ("default_max_queued_duration = \"soon\"", "default_max_queued_duration must be a duration such as 2h"),
            ("default_max_queued_duration = \"PT0S\"", "default_max_queued_duration must be between 1 second"),
        ];
        for (text, expected) in cases {
            let err = Config::from_toml(text, Path::new("/d"), &machine(0)).unwrap_err().to_string();
            assert!(err.contains(expected), "{text:?}: {err}");
        }
    }

    /// A config file's error says which file, then why, with the cause kept
    /// as the source rather than flattened into the message.
    #[test]
    fn a_config_files_errors_name_the_file_and_keep_their_cause() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.toml");
        let err = Config::from_file(&missing, dir.path()).unwrap_err();
        assert!(matches!(&err, ConfigError::Read { source, .. } if source.kind() == std::io::ErrorKind::NotFound));
        assert_eq!(err.to_string(), format!("cannot read the config file {}", missing.display()));

        let broken = dir.path().join("broken.toml");
        std::fs::write(&broken, "[[shapes]]\nname = \"s\"\ncpu = 0\nmemory_mb = 1\n").unwrap();
        let err = Config::from_file(&broken, dir.path()).unwrap_err();
        assert_eq!(err.to_string(), format!("invalid config file {}", broken.display()));
        let cause = std::error::Error::source(&err).unwrap();
        assert_eq!(cause.to_string(), "shapes[0].cpu must be more than 0");

        std::fs::write(&broken, "workspace_name = [").unwrap();
        let err = Config::from_file(&broken, dir.path()).unwrap_err();
        assert!(matches!(&err, ConfigError::InFile { source, .. } if matches!(**source, ConfigError::Toml(_))));
    }
}
