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

pub use super::engine::Engine;
use super::env::replica_env;
use super::JobLaunch;
use crate::config::PullPolicy;

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

    /// Creates the secret `secret` from the file `value` (podman).
    pub fn create_secret(&self, secret: &EnvSecret, value: &Path) -> Vec<String> {
        let file = value.to_string_lossy();
        self.command(&["secret", "create", &secret.name, &file])
    }

    /// Removes the secret `secret` (podman).
    pub fn remove_secret(&self, secret: &EnvSecret) -> Vec<String> {
        self.command(&["secret", "rm", &secret.name])
    }

    /// Runs the created container with its output attached; the engine
    /// passes SIGTERM on to the container.
    pub fn start(&self) -> Vec<String> {
        self.command(&["start", "--attach", &self.name])
    }

    /// How the container ended, as the engine's `State` object in JSON.
    pub fn inspect(&self) -> Vec<String> {
        self.command(&["inspect", "--format", "{{json .State}}", &self.name])
    }

    pub fn kill(&self) -> Vec<String> {
        self.command(&["kill", &self.name])
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
    push(&["--cap-drop", "all"]);
    for capability in CAPABILITIES {
        push(&["--cap-add", capability]);
    }
    push(&["--security-opt", "no-new-privileges"]);
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
    if launch.resolved.workers > 1 {
        // Workers find each other on 127.0.0.1:MASTER_PORT, so they share the
        // host's network; published ports would be meaningless there.
        push(&["--network", "host"]);
    } else {
        for port in container.ports.iter().flatten() {
            let protocol = port.protocol.as_deref().unwrap_or("TCP").to_ascii_lowercase();
            let mapping = match port.host_port {
                Some(host) => format!("{host}:{}/{protocol}", port.container_port),
                None => format!("{}/{protocol}", port.container_port),
            };
            push(&["-p", &mapping]);
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
    let command = container.command.as_deref().unwrap_or(&[]);
    if let Some((entrypoint, _)) = command.split_first() {
        push(&["--entrypoint", entrypoint]);
    }
    let args = command.split_first().map(|(_, args)| args.to_vec()).unwrap_or_default();

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
mod tests {
    use super::*;
    use crate::executor::env::tests::launch;
    use jobdeck_api::{ContainerPort, Mount, MountOptions};

    #[test]
    fn registries_are_read_from_the_image() {
        let cases = [
            ("busybox:latest", "docker.io"),
            ("team/img:1", "docker.io"),
            ("nvcr.io/nvidia/pytorch:1", "nvcr.io"),
            ("localhost:5000/x:1", "localhost:5000"),
        ];
        for (image, expected) in cases {
            assert_eq!(registry_of(image), expected, "{image}");
        }
    }

    #[test]
    fn a_jobs_secrets_are_found_by_their_exact_names() {
        let listed = "jobdeck-train-abcde-0-0-env0\njobdeck-train-abcde-12-3-env1\n\
                      jobdeck-train-abcde-1-ab123-0-0-env0\njobdeck-train-abcde-0-0-envx\nother\n";
        assert_eq!(
            secrets_of_job(listed, "train-abcde"),
            ["jobdeck-train-abcde-0-0-env0", "jobdeck-train-abcde-12-3-env1"]
        );
    }

    #[test]
    fn volume_paths_stay_inside_the_volume() {
        assert_eq!(volume_components(Some("/data/./a")).unwrap(), ["data", "a"]);
        assert_eq!(volume_components(None).unwrap(), Vec::<String>::new());
        assert!(volume_components(Some("../etc")).is_err());
        assert!(volume_components(Some("a/../../b")).is_err());
    }

    /// The command line as the supervisor gives it once the volumes are
    /// bound (here: at their own paths).
    fn create_line(steps: &ContainerSteps, env_file: &str) -> String {
        let sources: Vec<PathBuf> = steps.mounts.iter().map(VolumeMount::host_path).collect();
        steps.create(Path::new(env_file), &sources).join(" ")
    }

    fn sample_launch() -> JobLaunch {
        let mut launch = launch(1);
        launch.spec.container.image = Some("nvcr.io/nvidia/pytorch".into());
        launch.spec.container.image_tag = Some("25.08-py3".into());
        launch.spec.container.command = Some(vec!["/bin/bash".into(), "-c".into(), "python train.py".into()]);
        launch.spec.container.ports = Some(vec![
            ContainerPort { container_port: 8080, ..Default::default() },
            ContainerPort {
                container_port: 9000,
                protocol: Some("UDP".into()),
                host_port: Some(19000),
                ..Default::default()
            },
        ]);
        launch.spec.mounts = Some(vec![Mount {
            path: Some("/datasets".into()),
            from: "shared".into(),
            mount_path: "/data".into(),
            mount_options: Some(MountOptions { local_cache_size_mib: None, read_only: Some(true) }),
        }]);
        launch.env = vec![("HF_TOKEN".into(), "s3cret".into()), ("PEM".into(), "-----BEGIN\nkey\n-----END".into())];
        launch
    }

    fn volumes() -> BTreeMap<String, PathBuf> {
        BTreeMap::from([("shared".to_string(), PathBuf::from("/srv/shared"))])
    }

    fn plan_with(engine: &str, launch: &JobLaunch, gpus: &[u32]) -> ContainerSteps {
        try_plan(engine, launch, gpus).unwrap()
    }

    fn try_plan(engine: &str, launch: &JobLaunch, gpus: &[u32]) -> Result<ContainerSteps, String> {
        let volumes = volumes();
        let settings = ContainerSettings {
            engine,
            pull_policy: PullPolicy::Missing,
            volumes: &volumes,
            pids_limit: 8192,
            staging_dir: Path::new("/data/mounts"),
        };
        plan(&settings, launch, "train-abcde-0-0", 0, gpus)
    }

    /// One line values only: docker has no channel for a line break.
    fn one_line_launch() -> JobLaunch {
        let mut launch = sample_launch();
        launch.env.retain(|(name, _)| name != "PEM");
        launch
    }

    #[test]
    fn docker_create_has_every_part_of_the_spec_and_no_secret_values() {
        let steps = plan_with("docker", &one_line_launch(), &[0, 2]);
        let line = create_line(&steps, "/run/r/env");
        let expected_parts = [
            "docker create --name jobdeck-train-abcde-0-0",
            "--label jobdeck.job=train-abcde --label jobdeck.replica=train-abcde-0-0",
            "--cpus 4 --memory 8192m --shm-size 2048m",
            "--gpus \"device=0,2\"",
            "-p 8080/tcp -p 19000:9000/udp",
            "--entrypoint /bin/bash",
            "-v /srv/shared/datasets:/data:ro --env-file /run/r/env -- nvcr.io/nvidia/pytorch:25.08-py3 -c python train.py",
        ];
        for part in expected_parts {
            assert!(line.contains(part), "missing {part:?} in {line}");
        }
        assert!(!line.contains("s3cret"), "{line}");
        assert!(steps.env_file.contains(&("HF_TOKEN".to_string(), "s3cret".to_string())));
        assert!(steps.env_file.contains(&("CUDA_VISIBLE_DEVICES".to_string(), "0,2".to_string())));
        assert!(steps.secrets.is_empty());
        assert_eq!(steps.start(), ["docker", "start", "--attach", "jobdeck-train-abcde-0-0"]);
        assert_eq!(steps.kill(), ["docker", "kill", "jobdeck-train-abcde-0-0"]);
        assert_eq!(steps.remove(), ["docker", "rm", "-f", "jobdeck-train-abcde-0-0"]);
        assert_eq!(steps.inspect(), ["docker", "inspect", "--format", "{{json .State}}", "jobdeck-train-abcde-0-0"]);
        assert_eq!(steps.image_present(), ["docker", "image", "inspect", "nvcr.io/nvidia/pytorch:25.08-py3"]);
        assert_eq!(steps.login, None);
        // Docker reads credentials from DOCKER_CONFIG, not from a flag.
        assert_eq!(steps.pull(Some(Path::new("/run/r/auth"))), ["docker", "pull", "nvcr.io/nvidia/pytorch:25.08-py3"]);
    }

    /// Every container drops all capabilities but the listed ones, cannot
    /// gain privileges, has a pids limit and reads its image behind `--`,
    /// on either engine.
    #[test]
    fn containers_run_with_least_privilege() {
        for engine in ["docker", "podman"] {
            let steps = plan_with(engine, &one_line_launch(), &[]);
            let line = create_line(&steps, "env");
            let adds: Vec<String> = CAPABILITIES.iter().map(|c| format!("--cap-add {c}")).collect();
            let caps = format!("--cap-drop all {}", adds.join(" "));
            for part in [caps.as_str(), "--security-opt no-new-privileges", "--pids-limit 8192", " -- nvcr.io/"] {
                assert!(line.contains(part), "{engine}: missing {part:?} in {line}");
            }
            assert!(!CAPABILITIES.contains(&"NET_RAW") && !CAPABILITIES.contains(&"SYS_ADMIN"));
        }
    }

    /// A value with a line break never reaches the engine's own
    /// environment: podman gets it as a secret, docker refuses it.
    #[test]
    fn multi_line_values_go_as_podman_secrets_and_docker_refuses_them() {
        let steps = plan_with("/usr/bin/podman", &sample_launch(), &[]);
        assert_eq!(steps.secrets.len(), 1);
        let secret = &steps.secrets[0];
        assert_eq!((secret.name.as_str(), secret.variable.as_str()), ("jobdeck-train-abcde-0-0-env0", "PEM"));
        assert_eq!(secret.value, "-----BEGIN\nkey\n-----END");
        let line = create_line(&steps, "env");
        assert!(line.contains("--secret jobdeck-train-abcde-0-0-env0,type=env,target=PEM"), "{line}");
        assert!(!line.contains("BEGIN") && !format!("{secret:?}").contains("BEGIN"), "{line}");
        assert!(steps.env_file.iter().all(|(name, _)| name != "PEM"));
        assert_eq!(
            steps.create_secret(secret, Path::new("/run/r/value")),
            ["/usr/bin/podman", "secret", "create", "jobdeck-train-abcde-0-0-env0", "/run/r/value"]
        );
        assert_eq!(steps.remove_secret(secret), ["/usr/bin/podman", "secret", "rm", "jobdeck-train-abcde-0-0-env0"]);

        let refused = try_plan("docker", &sample_launch(), &[]).unwrap_err();
        assert_eq!(refused, "the variable PEM holds a line break, which docker cannot pass to a container safely");
    }

    #[test]
    fn podman_uses_cdi_devices_and_an_auth_file() {
        let mut launch = sample_launch();
        launch.spec.container.registry_username = Some("bot".into());
        launch.spec.container.registry_password = Some("pw".into());
        let steps = plan_with("/usr/bin/podman", &launch, &[1]);
        let line = create_line(&steps, "env");
        assert!(line.contains("--device nvidia.com/gpu=1"), "{line}");
        assert!(!line.contains("--gpus"), "{line}");
        let login = steps.login.clone().unwrap();
        assert_eq!(
            (login.registry.as_str(), login.username.as_str(), login.password.as_str()),
            ("nvcr.io", "bot", "pw")
        );
        assert!(line.contains("-v /srv/shared/datasets:/data:ro,nosuid,nodev"), "{line}");
        assert!(!format!("{steps:?}").contains("pw\""), "the password is not in Debug output");
        assert_eq!(
            steps.pull(Some(Path::new("/run/r/auth.json"))),
            ["/usr/bin/podman", "pull", "--authfile", "/run/r/auth.json", "nvcr.io/nvidia/pytorch:25.08-py3"]
        );
        let file: serde_json::Value = serde_json::from_str(&login.auth_file()).unwrap();
        assert_eq!(file["auths"]["nvcr.io"]["auth"], "Ym90OnB3"); // base64("bot:pw")
        let hub = RegistryLogin { registry: "docker.io".into(), username: "u".into(), password: "p".into() };
        assert!(hub.auth_file().contains("https://index.docker.io/v1/"));
    }

    /// A stored image pull secret the job names is used for its image's
    /// registry when the job has no credentials of its own; one for another
    /// registry is not.
    #[test]
    fn a_named_image_pull_secret_for_the_images_registry_is_used() {
        let credential = |name: &str, server: &str| crate::executor::PullCredential {
            name: name.into(),
            registry_server: server.into(),
            username: "$oauthtoken".into(),
            password: format!("{name}-key"),
        };
        let mut launch = sample_launch();
        launch.pull_credentials =
            vec![credential("elsewhere", "https://ghcr.io"), credential("ngc", "https://nvcr.io/")];
        let login = plan_with("podman", &launch, &[]).login.unwrap();
        assert_eq!((login.registry.as_str(), login.password.as_str()), ("nvcr.io", "ngc-key"));

        launch.pull_credentials = vec![credential("elsewhere", "https://ghcr.io")];
        assert_eq!(plan_with("podman", &launch, &[]).login, None);
        launch.spec.container.image = Some("busybox".into());
        launch.pull_credentials = vec![credential("hub", "https://index.docker.io/v1/")];
        assert_eq!(plan_with("podman", &launch, &[]).login.map(|l| l.registry), Some("docker.io".to_string()));
    }

    #[test]
    fn multi_worker_jobs_share_the_host_network_and_empty_commands_use_the_entrypoint() {
        let mut launch = sample_launch();
        launch.resolved.workers = 2;
        launch.spec.container.command = None;
        let steps = plan_with("podman", &launch, &[]);
        let line = create_line(&steps, "env");
        assert!(line.contains("--network host"), "{line}");
        assert!(!line.contains("-p "), "{line}");
        assert!(!line.contains("--entrypoint"), "{line}");
        assert!(!line.contains("--gpus"), "{line}");
        assert!(line.ends_with("nvcr.io/nvidia/pytorch:25.08-py3"), "{line}");
        assert!(steps.env_file.contains(&("WORLD_SIZE".to_string(), "2".to_string())));
    }

    #[test]
    fn images_run_with_the_contracts_tag_and_no_shared_memory_means_no_flag() {
        // (image, image_tag, shared memory MiB, expected image, expected --shm-size)
        let cases = [
            ("busybox", None, 64, "busybox:latest", Some("64m")),
            ("busybox", Some("1.36"), 64, "busybox:1.36", Some("64m")),
            ("busybox:1.35", None, 1, "busybox:1.35", Some("1m")),
            ("localhost:5000/team/img", None, 2048, "localhost:5000/team/img:latest", Some("2048m")),
            ("img@sha256:abc", None, 0, "img@sha256:abc", None),
        ];
        for (image, tag, shm, expected_image, expected_shm) in cases {
            let mut launch = sample_launch();
            launch.spec.container.image = Some(image.into());
            launch.spec.container.image_tag = tag.map(String::from);
            launch.resolved.shared_memory_mb = shm;
            let steps = plan_with("podman", &launch, &[]);
            assert_eq!(steps.image, expected_image, "{image} {tag:?}");
            let options = &steps.create_options;
            let flag = options.iter().position(|a| a == "--shm-size").map(|i| options[i + 1].as_str());
            assert_eq!(flag, expected_shm, "{image} with {shm} MiB");
        }
    }

    #[test]
    fn unknown_volumes_and_missing_images_are_errors() {
        let mut launch = sample_launch();
        let none = BTreeMap::new();
        let settings = ContainerSettings {
            engine: "podman",
            pull_policy: PullPolicy::Always,
            volumes: &none,
            pids_limit: 1,
            staging_dir: Path::new("/data/mounts"),
        };
        let err = plan(&settings, &launch, "r-0-0", 0, &[]).unwrap_err();
        assert_eq!(err, "no volume named 'shared' in executor.local.volumes");
        launch.spec.mounts = None;
        assert!(plan(&settings, &launch, "r-0-0", 0, &[]).unwrap().always_pull);
        launch.spec.container.image = None;
        assert!(plan(&settings, &launch, "r-0-0", 0, &[]).unwrap_err().contains("image"));
    }
}
