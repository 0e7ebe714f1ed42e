//! Container mode of the local executor: what the replica supervisor runs
//! for one replica attempt, built here as data and unit-tested.
//!
//! A container replica is four engine commands, run by the supervisor
//! (`supervisor::run_container`): pull the image when needed (with the
//! registry credentials in an auth file inside the run directory, removed
//! after the pull), `create` the container, `start --attach` it (the
//! attached output is the replica's log), then `inspect` how it ended and
//! remove it. Keeping the steps apart lets the replica say what it waits for
//! ("Pulling image"), and tells an image that cannot be pulled, an engine
//! that cannot create or start a container, and a program that failed apart.
//!
//! No value of the job's reaches a host process as anything but data
//! (docs/security.md): never on a command line (where `ps` would show it)
//! and never in the engine process's environment (where the loader or the
//! engine would act on it). The environment goes to the engine in an env
//! file (0600, removed once the container exists). A value with a line
//! break, which an env file cannot hold, goes as a podman secret
//! (`--secret NAME,type=env,target=VAR`, created from a 0600 file and
//! removed with the container); docker has no such channel, so there the
//! contract refuses the value (`JobRequirements::multi_line_env_refused`).
//!
//! Every container runs with the least privilege a training job needs:
//! [`CAPABILITIES`] only, `no-new-privileges`, a pids limit, and the image
//! behind `--`, so no reference is ever read as an option.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

mod network;
pub use network::JobNetwork;

pub use super::engine::Engine;
use super::env::replica_env;
use jobdeck_core::config::PullPolicy;
use jobdeck_core::executor::JobLaunch;

/// Registry credentials for a pull. Never logged: it holds a password.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegistryLogin {
    /// The registry host, as in the image reference (`nvcr.io`,
    /// `127.0.0.1:5000`, `docker.io`).
    pub registry: String,
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for RegistryLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryLogin")
            .field("registry", &self.registry)
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

impl RegistryLogin {
    /// The auth file the engine reads: `{"auths": {<registry>: {"auth":
    /// base64(user:password)}}}`, the format of both podman's `--authfile`
    /// and docker's `config.json`. Docker Hub is keyed as docker expects it.
    pub fn auth_file(&self) -> String {
        use base64::Engine as _;
        let key = match self.registry.as_str() {
            "docker.io" => "https://index.docker.io/v1/",
            other => other,
        };
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", self.username, self.password));
        serde_json::json!({ "auths": { key: { "auth": auth } } }).to_string()
    }
}

/// The capabilities a container keeps; every other one is dropped. What a
/// training job's root needs, and no more:
/// * `CHOWN`, `DAC_OVERRIDE`, `FOWNER`, `FSETID`: installing packages and
///   writing its own files as root in the image (pip, apt, caches);
/// * `SETUID`, `SETGID`: images that switch to an unprivileged user at start
///   (gosu, su-exec, `useradd` then `su`);
/// * `KILL`: a launcher that signals workers running as another user;
/// * `NET_BIND_SERVICE`: a server on a port below 1024 inside the container.
///
/// Left out of the engines' defaults: `NET_RAW` (raw sockets: spoofing on
/// the shared network), `MKNOD` (device nodes), `SYS_CHROOT`, `SETPCAP`,
/// `SETFCAP` (granting capabilities to files) and `AUDIT_WRITE`.
pub const CAPABILITIES: &[&str] =
    &["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "SETUID", "SETGID", "KILL", "NET_BIND_SERVICE"];

/// A variable whose value reaches the container as a podman secret (a value
/// an env file cannot hold). Never logged: it holds the value.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvSecret {
    /// The engine's name for the secret (`<container>-env<n>`).
    pub name: String,
    /// The variable the container sees.
    pub variable: String,
    pub value: String,
}

impl std::fmt::Debug for EnvSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvSecret").field("name", &self.name).field("variable", &self.variable).finish_non_exhaustive()
    }
}

/// What the supervisor does for a container replica (part of its spec).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerSteps {
    /// The engine binary.
    pub engine: String,
    /// The container's name (`jobdeck-<replica id>`).
    pub name: String,
    /// The image reference with its tag.
    pub image: String,
    /// Pull before every attempt, not only when the engine lacks the image.
    pub always_pull: bool,
    /// Credentials for the image's registry, if the job has any.
    pub login: Option<RegistryLogin>,
    /// The options of `<engine> create`, before the image.
    pub create_options: Vec<String>,
    /// What follows the image: the command's arguments.
    pub args: Vec<String>,
    /// The container's environment, written to an env file.
    pub env_file: Vec<(String, String)>,
    /// Variables the env file cannot hold, as podman secrets created
    /// before the container and removed with it.
    #[serde(default)]
    pub secrets: Vec<EnvSecret>,
    /// The volumes to mount, bound by the supervisor before `create`.
    #[serde(default)]
    pub mounts: Vec<VolumeMount>,
    /// The pod to join (a multi-worker job on podman), created by the
    /// first of its workers and removed by the last.
    #[serde(default)]
    pub pod: Option<Pod>,
    /// The run's own network (podman), created by the first of its
    /// containers and removed by the last.
    #[serde(default)]
    pub network: Option<JobNetwork>,
    /// The directory of the data directory where those binds are made
    /// (`<data dir>/mounts`), never inside a run directory, which is removed
    /// recursively.
    #[serde(default)]
    pub staging_dir: PathBuf,
}

impl ContainerSteps {
    pub fn engine_kind(&self) -> Engine {
        Engine::from_binary(&self.engine)
    }

    /// The file a worker's supervisor locks while it creates or removes
    /// what the run's containers share (network, pod).
    pub fn run_lock(&self) -> Option<&Path> {
        self.pod.as_ref().map(|pod| pod.lock.as_path()).or(self.network.as_ref().map(|network| network.lock.as_path()))
    }

    fn command(&self, args: &[&str]) -> Vec<String> {
        std::iter::once(self.engine.clone()).chain(args.iter().map(|a| a.to_string())).collect()
    }

    /// Succeeds when the engine has the image.
    pub fn image_present(&self) -> Vec<String> {
        self.command(&["image", "inspect", &self.image])
    }

    /// The pull, with credentials from `auth` when there are any: podman's
    /// `--authfile <file>`; docker reads `config.json` in the directory its
    /// `DOCKER_CONFIG` variable names (set by the caller).
    pub fn pull(&self, auth: Option<&Path>) -> Vec<String> {
        let mut command = self.command(&["pull"]);
        if let (Some(file), Engine::Podman) = (auth, self.engine_kind()) {
            command.push("--authfile".into());
            command.push(file.to_string_lossy().into_owned());
        }
        command.push(self.image.clone());
        command
    }

    /// `<engine> create`: the options, each volume from its bound `sources`
    /// (one per mount, in order), then `--` so that nothing after it is read
    /// as an option, then the image and the command's arguments.
    pub fn create(&self, env_file: &Path, sources: &[PathBuf]) -> Vec<String> {
        let mut command = self.command(&["create"]);
        command.extend(self.create_options.iter().cloned());
        for (mount, source) in self.mounts.iter().zip(sources) {
            // Podman mounts a volume without set-user-id files or devices;
            // docker's `-v` has no such options (the bind the supervisor made
            // has them on both, docs/security.md).
            let access = if mount.read_only { "ro" } else { "rw" };
            let options = match self.engine_kind() {
                Engine::Podman => format!("{access},nosuid,nodev"),
                Engine::Docker => access.to_string(),
            };
            command.push("-v".into());
            command.push(format!("{}:{}:{options}", source.display(), mount.target));
        }
        command.push("--env-file".into());
        command.push(env_file.to_string_lossy().into_owned());
        command.push("--".into());
        command.push(self.image.clone());
        command.extend(self.args.iter().cloned());
        command
    }

    /// Succeeds when the pod exists.
    pub fn pod_exists(&self, pod: &Pod) -> Vec<String> {
        self.command(&["pod", "exists", &pod.name])
    }

    /// Creates the pod: the workers share its network and IPC namespaces,
    /// on the run's network.
    pub fn create_pod(&self, pod: &Pod) -> Vec<String> {
        let mut command = self.command(&["pod", "create", "--name", &pod.name, "--label", &pod.label]);
        command.extend(["--share".to_string(), "net,ipc".to_string()]);
        if let Some(network) = &self.network {
            command.extend(["--network".to_string(), network.name.clone()]);
        }
        if pod.own_users {
            command.extend(["--userns".to_string(), OWN_USER_NAMESPACE.to_string()]);
        }
        for port in &pod.ports {
            command.extend(["-p".to_string(), port.clone()]);
        }
        command
    }

    /// Removes the pod once it holds no container of a worker: the engine
    /// refuses while one is left, so the last worker out removes it.
    pub fn remove_pod(&self, pod: &Pod) -> Vec<String> {
        self.command(&["pod", "rm", &pod.name])
    }

    /// Creates the secret `secret` from the file `value` (podman).
    pub fn create_secret(&self, secret: &EnvSecret, value: &Path) -> Vec<String> {
        let file = value.to_string_lossy();
        self.command(&["secret", "create", &secret.name, &file])
    }

    /// Removes the secret `secret` (podman).
    pub fn remove_secret(&self, secret: &EnvSecret) -> Vec<String> {
        self.command(&["secret", "rm", &secret.name])
    }

    /// Runs the created container with its output attached.
    pub fn start(&self) -> Vec<String> {
        self.command(&["start", "--attach", &self.name])
    }

    /// How the container ended, as the engine's `State` object in JSON.
    pub fn inspect(&self) -> Vec<String> {
        self.command(&["inspect", "--format", "{{json .State}}", &self.name])
    }

    /// Whether the container runs and its main process on the host, as
    /// `<status> <pid>` (`running 4242`, `exited 0`): the supervisor's check
    /// that the container ended when the engine's attach has not.
    pub fn status_and_pid(&self) -> Vec<String> {
        self.command(&["inspect", "--format", "{{.State.Status}} {{.State.Pid}}", &self.name])
    }

    pub fn kill(&self) -> Vec<String> {
        self.command(&["kill", &self.name])
    }

    /// Sends SIGTERM to the container's first process through the engine:
    /// a stop's first signal. Sent to the engine's attach instead, it is
    /// lost when the attach has not yet set up its signal proxy (the
    /// attach dies of it, and the container runs on until SIGKILL).
    pub fn terminate(&self) -> Vec<String> {
        self.command(&["kill", "--signal", "TERM", &self.name])
    }

    pub fn remove(&self) -> Vec<String> {
        self.command(&["rm", "-f", &self.name])
    }
}

/// The registry host of an image reference (`docker.io` when it names none).
pub fn registry_of(image: &str) -> String {
    match image.split_once('/') {
        Some((first, _)) if first.contains('.') || first.contains(':') || first == "localhost" => first.to_string(),
        _ => "docker.io".to_string(),
    }
}

/// The container name of a replica attempt.
pub fn container_name(replica_id: &str) -> String {
    format!("jobdeck-{replica_id}")
}

/// The label every container of a job carries, so the server finds them
/// again (`<engine> ps --filter label=…`).
pub fn job_label(job_id: &str) -> String {
    format!("jobdeck.job={job_id}")
}

/// The secrets of a job among the engine's secret names (`podman secret ls`
/// output, one a line): `jobdeck-<job>-<index>-<attempt>-env<n>` exactly,
/// so another job whose id starts with this one's is never matched.
pub fn secrets_of_job<'a>(listed: &'a str, job_id: &str) -> Vec<&'a str> {
    let prefix = format!("{}-", container_name(job_id));
    let number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    listed
        .lines()
        .map(str::trim)
        .filter(|name| {
            let Some(rest) = name.strip_prefix(&prefix) else { return false };
            let parts: Vec<&str> = rest.split('-').collect();
            matches!(parts.as_slice(), [index, attempt, env]
                if number(index) && number(attempt) && env.strip_prefix("env").is_some_and(number))
        })
        .collect()
}

/// The components of `path` inside a volume, refusing anything that climbs
/// out of it. The supervisor opens them one by one without following links
/// ([`super::local::volumes`]).
pub fn volume_components(path: Option<&str>) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for component in Path::new(path.unwrap_or("")).components() {
        match component {
            Component::Normal(part) => out.push(part.to_string_lossy().into_owned()),
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir | Component::Prefix(_) => {
                return Err(format!("path '{}' climbs out of its volume", path.unwrap_or("")))
            }
        }
    }
    Ok(out)
}

/// The pod a multi-worker job's containers share (podman): one network and
/// IPC namespace for the workers of one run, so `MASTER_ADDR=127.0.0.1` and
/// NCCL's shared-memory transport work, apart from the host's network and
/// from every other job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pod {
    /// `jobdeck-<job>-run<run>`.
    pub name: String,
    /// The job's label (`jobdeck.job=<id>`), by which a delete finds it.
    pub label: String,
    /// The job's published ports (`-p`), which belong to the pod.
    pub ports: Vec<String>,
    /// The file whose lock a worker's supervisor holds while it creates the
    /// pod and its container in it, or removes them: `pod create` is not
    /// atomic (the pod exists before its infra container does), so a
    /// worker that found the pod could otherwise join one not ready, or
    /// one the last worker out is removing.
    #[serde(default)]
    pub lock: PathBuf,
    /// The pod has a user namespace of its own (`--userns=auto`), which its
    /// workers share.
    #[serde(default)]
    pub own_users: bool,
}

/// The `--userns` value of a run with a user namespace of its own: every
/// id from 0 to 65,535 mapped, so any user a job names exists in it (the
/// size podman's own guess is capped at by default). Naming the size also
/// keeps podman 4.3 (Debian 12's) from walking the image's layers to guess
/// it: that walk takes the store's lock while holding the layers' lock, the
/// reverse of every other podman command's order, and a `podman network
/// create` or `pull` at the same moment then waits on it forever
/// (containers/storage fixed the order in 1.45, podman 4.4).
pub const OWN_USER_NAMESPACE: &str = "auto:size=65536";

/// The pod of a job's run.
pub fn pod_name(job_id: &str, run: i64) -> String {
    format!("{}-run{run}", container_name(job_id))
}

/// A volume a container mounts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VolumeMount {
    /// The volume's name in the job (`spec.mounts[].from`), for messages.
    pub volume: String,
    /// The configured volume's directory (the operator's, trusted as it is).
    pub root: PathBuf,
    /// The directory inside it, as components: no `..`, opened without
    /// following links.
    pub path: Vec<String>,
    /// Where the container sees it.
    pub target: String,
    pub read_only: bool,
}

impl VolumeMount {
    /// The directory as a path, for messages (and for engines given the
    /// path itself, which a bound source replaces).
    pub fn host_path(&self) -> PathBuf {
        self.path.iter().fold(self.root.clone(), |dir, part| dir.join(part))
    }
}

/// What the plan needs beyond the launch.
pub struct ContainerSettings<'a> {
    pub engine: &'a str,
    pub pull_policy: PullPolicy,
    pub volumes: &'a BTreeMap<String, PathBuf>,
    pub pids_limit: u32,
    /// Networks no job may reach (`executor.local.blocked_networks`).
    pub blocked_networks: &'a [String],
    /// Where runs' networks get their subnets (`executor.local.network_pool`).
    pub network_pool: &'a str,
    /// Whether each run gets a user namespace of its own.
    pub user_namespace: jobdeck_core::config::UserNamespace,
    /// Where the supervisor binds the volumes' directories for the engine.
    pub staging_dir: &'a Path,
}

/// Builds the steps of one replica attempt.
pub fn plan(
    settings: &ContainerSettings<'_>,
    launch: &JobLaunch,
    replica_id: &str,
    completion_index: i64,
    gpu_ids: &[u32],
) -> Result<ContainerSteps, String> {
    let engine = Engine::from_binary(settings.engine);
    let container = &launch.spec.container;
    // The tag (explicit, embedded or `latest`) is the contract's business.
    let image = container
        .image_reference()
        .filter(|i| !i.trim().is_empty())
        .ok_or("container mode needs spec.container.image")?;
    let name = container_name(replica_id);
    let env = replica_env(launch, completion_index, gpu_ids);

    let mut options: Vec<String> = Vec::new();
    let mut push = |args: &[&str]| options.extend(args.iter().map(|a| a.to_string()));
    push(&["--name", &name]);
    push(&["--label", &job_label(&launch.job_id)]);
    push(&["--label", &format!("jobdeck.replica={replica_id}")]);
    // A privileged container is the admin's explicit choice for its node
    // group (`privileged_roles`; resolving the job refuses it anywhere
    // else) and has every capability, so there is nothing to drop. A job
    // that runs as a user other than root gets no capability at all:
    // podman hands added capabilities to any user, so `DAC_OVERRIDE` would
    // let user 1000 read what only root may on a volume.
    let user = container.user.as_deref().and_then(|u| jobdeck_api::parse_container_user(u).ok());
    if launch.spec.privileged() {
        push(&["--privileged"]);
    } else {
        push(&["--cap-drop", "all"]);
        if user.is_none_or(|u| u.user.is_root()) {
            for capability in CAPABILITIES {
                push(&["--cap-add", capability]);
            }
        }
        push(&["--security-opt", "no-new-privileges"]);
    }
    push(&["--pids-limit", &settings.pids_limit.to_string()]);
    push(&["--cpus", &format_cpus(launch.resolved.shape.cpu)]);
    push(&["--memory", &format!("{}m", launch.resolved.shape.memory_mb)]);
    // Shared memory 0 is "none beyond the engine's own": no flag, as the
    // Kubernetes executor mounts no /dev/shm volume then.
    if launch.resolved.shared_memory_mb > 0 {
        push(&["--shm-size", &format!("{}m", launch.resolved.shared_memory_mb)]);
    }
    if !gpu_ids.is_empty() {
        match engine {
            Engine::Docker => {
                let devices = gpu_ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
                push(&["--gpus", &format!("\"device={devices}\"")]);
            }
            Engine::Podman => {
                for id in gpu_ids {
                    push(&["--device", &format!("nvidia.com/gpu={id}")]);
                }
            }
        }
    }
    let ports: Vec<String> = container
        .ports
        .iter()
        .flatten()
        .map(|port| {
            let protocol = port.protocol.as_deref().unwrap_or("TCP").to_ascii_lowercase();
            match port.host_port {
                Some(host) => format!("{host}:{}/{protocol}", port.container_port),
                None => format!("{}/{protocol}", port.container_port),
            }
        })
        .collect();
    // On podman every run has a network of its own (docs/security.md).
    let run_name = pod_name(&launch.job_id, launch.run);
    let lock = settings.staging_dir.with_file_name("pods").join(format!("{run_name}.lock"));
    let network = (engine == Engine::Podman).then(|| JobNetwork {
        name: run_name.clone(),
        label: job_label(&launch.job_id),
        blocked: settings.blocked_networks.iter().cloned().chain([settings.network_pool.to_string()]).collect(),
        pool: settings.network_pool.to_string(),
        lock: lock.clone(),
    });
    let own_users = settings.user_namespace == jobdeck_core::config::UserNamespace::Auto;
    if own_users && engine == Engine::Docker {
        return Err("executor.local.user_namespace = \"auto\" needs podman: docker maps users for the whole daemon \
                    (userns-remap)"
            .into());
    }
    let mut pod = None;
    match (launch.resolved.workers > 1, engine) {
        // Workers find each other on 127.0.0.1:MASTER_PORT: on podman they
        // share a pod of their own, on the run's network, which holds the
        // published ports.
        (true, Engine::Podman) => {
            let shared = Pod { name: run_name, label: job_label(&launch.job_id), ports, lock, own_users };
            push(&["--pod", &shared.name]);
            pod = Some(shared);
        }
        // Docker has no pods: its workers share the host's network
        // (docs/security.md says so), where published ports are meaningless.
        (true, Engine::Docker) => push(&["--network", "host"]),
        (false, _) => {
            if let Some(network) = &network {
                push(&["--network", &network.name]);
            }
            // The workers of a pod share the pod's namespace instead.
            if own_users {
                push(&["--userns", OWN_USER_NAMESPACE]);
            }
            for mapping in &ports {
                push(&["-p", mapping]);
            }
        }
    }
    let mut mounts = Vec::new();
    for mount in launch.spec.mounts.iter().flatten() {
        let root = jobdeck_api::volume_key(&mount.from, settings.volumes.keys())
            .and_then(|key| settings.volumes.get(key))
            .ok_or_else(|| format!("no volume named '{}' in executor.local.volumes", mount.from))?;
        mounts.push(VolumeMount {
            volume: mount.from.clone(),
            root: root.clone(),
            path: volume_components(mount.path.as_deref())?,
            target: mount.mount_path.clone(),
            read_only: mount.mount_options.as_ref().and_then(|o| o.read_only).unwrap_or(false),
        });
    }
    let (multi_line, single_line): (Vec<_>, Vec<_>) = env.into_iter().partition(|(_, v)| v.contains(['\n', '\r']));
    let mut secrets = Vec::new();
    for (variable, value) in multi_line {
        if engine == Engine::Docker {
            return Err(format!(
                "the variable {variable} holds a line break, which docker cannot pass to a container safely"
            ));
        }
        let secret = EnvSecret { name: format!("{name}-env{}", secrets.len()), variable, value };
        push(&["--secret", &format!("{},type=env,target={}", secret.name, secret.variable)]);
        secrets.push(secret);
    }
    // An absolute path (the contract's rule), so never read as an option.
    if let Some(dir) = container.working_dir.as_deref() {
        push(&["--workdir", dir]);
    }
    // A user in the run's own user namespace, when it has one: its root is
    // then no user of the host's (docs/security.md). The contract's rule
    // starts every value with a letter, `_` or a digit, so it is never an
    // option.
    if let Some(user) = container.user.as_deref() {
        push(&["--user", user]);
    }
    let command = container.command.as_deref().unwrap_or(&[]);
    if let Some((entrypoint, _)) = command.split_first() {
        push(&["--entrypoint", entrypoint]);
    }
    // After the image: the command's arguments, then the job's extension
    // arguments, which go to the image's own entrypoint when the command is
    // empty (`spec.container.args`).
    let args: Vec<String> = command.iter().skip(1).chain(container.args()).cloned().collect();

    let registry = registry_of(&image);
    let own = container
        .registry_username
        .as_deref()
        .filter(|u| !u.is_empty())
        .map(|user| (user.to_string(), container.registry_password.clone().unwrap_or_default()));
    let stored = || {
        launch
            .pull_credentials
            .iter()
            .find(|c| c.registry_host() == registry)
            .map(|c| (c.username.clone(), c.password.clone()))
    };
    let login = own.or_else(stored).map(|(username, password)| RegistryLogin { registry, username, password });
    Ok(ContainerSteps {
        engine: settings.engine.to_string(),
        name,
        image,
        always_pull: settings.pull_policy == PullPolicy::Always,
        login,
        create_options: options,
        args,
        env_file: single_line,
        secrets,
        mounts,
        pod,
        network,
        staging_dir: settings.staging_dir.to_path_buf(),
    })
}

fn format_cpus(cpu: f64) -> String {
    if cpu.fract() == 0.0 {
        format!("{}", cpu as i64)
    } else {
        format!("{cpu}")
    }
}

#[cfg(test)]
#[path = "container_tests.rs"]
mod tests;
