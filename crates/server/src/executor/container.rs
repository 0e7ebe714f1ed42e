//! Container mode of the local executor: the exact `docker run` / `podman
//! run` command line of a replica.
//!
//! The command is built here as data and unit-tested; the replica supervisor
//! runs it like any other command. Secret values never appear on the command
//! line (where `ps` would show them): every variable is passed as `-e NAME`
//! and its value reaches the engine through the engine process's own
//! environment.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use super::env::replica_env;
use super::JobLaunch;

/// Which engine's flags to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Docker,
    Podman,
}

impl Engine {
    /// The engine a configured binary is: anything whose file name contains
    /// `podman` is podman, everything else speaks docker's flags.
    pub fn from_binary(binary: &str) -> Engine {
        let name = Path::new(binary).file_name().and_then(|n| n.to_str()).unwrap_or(binary);
        if name.contains("podman") {
            Engine::Podman
        } else {
            Engine::Docker
        }
    }
}

/// What the supervisor runs for a container replica.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerPlan {
    /// `<engine> login …` and the password for its standard input, when the
    /// job has registry credentials for its image's registry: its own
    /// username and password, else a stored image pull secret it names.
    pub login: Option<(Vec<String>, String)>,
    /// The `<engine> run …` command.
    pub run: Vec<String>,
    /// The environment of the engine process (values of every `-e NAME`).
    pub env: Vec<(String, String)>,
    /// What stops the container when the grace period is over, since killing
    /// the engine client alone would leave the container running.
    pub kill: Vec<String>,
    /// Removes the container once it ended.
    pub cleanup: Vec<String>,
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

/// Resolves `path` inside the volume directory `root`, refusing anything
/// that climbs out of it.
pub fn volume_path(root: &Path, path: Option<&str>) -> Result<PathBuf, String> {
    let mut out = root.to_path_buf();
    for component in Path::new(path.unwrap_or("")).components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir | Component::Prefix(_) => {
                return Err(format!("path '{}' climbs out of its volume", path.unwrap_or("")))
            }
        }
    }
    Ok(out)
}

/// Builds the commands of one replica attempt.
pub fn plan(
    engine_binary: &str,
    launch: &JobLaunch,
    replica_id: &str,
    completion_index: i64,
    gpu_ids: &[u32],
    volumes: &BTreeMap<String, PathBuf>,
) -> Result<ContainerPlan, String> {
    let engine = Engine::from_binary(engine_binary);
    let container = &launch.spec.container;
    // The tag (explicit, embedded or `latest`) is the contract's business.
    let image = container
        .image_reference()
        .filter(|i| !i.trim().is_empty())
        .ok_or("container mode needs spec.container.image")?;
    let name = container_name(replica_id);
    let env = replica_env(launch, completion_index, gpu_ids);

    let mut run: Vec<String> = vec![engine_binary.into(), "run".into(), "--rm".into()];
    let mut push = |args: &[&str]| run.extend(args.iter().map(|a| a.to_string()));
    push(&["--name", &name]);
    push(&["--label", &format!("jobdeck.job={}", launch.job_id)]);
    push(&["--label", &format!("jobdeck.replica={replica_id}")]);
    push(&["--cpus", &format_cpus(launch.shape.cpu)]);
    push(&["--memory", &format!("{}m", launch.shape.memory_mb)]);
    // Shared memory 0 is "none beyond the engine's own": no flag, as the
    // Kubernetes executor mounts no /dev/shm volume then.
    if launch.shared_memory_mb > 0 {
        push(&["--shm-size", &format!("{}m", launch.shared_memory_mb)]);
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
    if launch.workers > 1 {
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
    for mount in launch.spec.mounts.iter().flatten() {
        let root = jobdeck_api::volume_key(&mount.from, volumes.keys())
            .and_then(|key| volumes.get(key))
            .ok_or_else(|| format!("no volume named '{}' in executor.local.volumes", mount.from))?;
        let host = volume_path(root, mount.path.as_deref())?;
        let read_only = mount.mount_options.as_ref().and_then(|o| o.read_only).unwrap_or(false);
        let suffix = if read_only { ":ro" } else { "" };
        push(&["-v", &format!("{}:{}{suffix}", host.display(), mount.mount_path)]);
    }
    for (key, _) in &env {
        push(&["-e", key]);
    }
    let command = container.command.as_deref().unwrap_or(&[]);
    if let Some((entrypoint, _)) = command.split_first() {
        push(&["--entrypoint", entrypoint]);
    }
    push(&[&image]);
    if let Some((_, args)) = command.split_first() {
        run.extend(args.iter().cloned());
    }

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
    let login = own.or_else(stored).map(|(user, password)| {
        let command = vec![
            engine_binary.to_string(),
            "login".into(),
            "--username".into(),
            user,
            "--password-stdin".into(),
            registry.clone(),
        ];
        (command, password)
    });
    Ok(ContainerPlan {
        login,
        run,
        env,
        kill: vec![engine_binary.into(), "kill".into(), name.clone()],
        cleanup: vec![engine_binary.into(), "rm".into(), "-f".into(), name],
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
    fn volume_paths_stay_inside_the_volume() {
        let root = Path::new("/srv/vol");
        assert_eq!(volume_path(root, Some("/data/a")).unwrap(), Path::new("/srv/vol/data/a"));
        assert_eq!(volume_path(root, None).unwrap(), Path::new("/srv/vol"));
        assert!(volume_path(root, Some("../etc")).is_err());
        assert!(volume_path(root, Some("a/../../b")).is_err());
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
        launch.env = vec![("HF_TOKEN".into(), "s3cret".into())];
        launch
    }

    fn volumes() -> BTreeMap<String, PathBuf> {
        BTreeMap::from([("shared".to_string(), PathBuf::from("/srv/shared"))])
    }

    #[test]
    fn docker_run_has_every_part_of_the_spec_and_no_secret_values() {
        let plan = plan("docker", &sample_launch(), "train-abcde-0-0", 0, &[0, 2], &volumes()).unwrap();
        let line = plan.run.join(" ");
        let expected_parts = [
            "docker run --rm --name jobdeck-train-abcde-0-0",
            "--label jobdeck.job=train-abcde",
            "--cpus 4 --memory 8192m --shm-size 2048m",
            "--gpus \"device=0,2\"",
            "-p 8080/tcp -p 19000:9000/udp",
            "-v /srv/shared/datasets:/data:ro",
            "-e HF_TOKEN -e JOB_COMPLETION_INDEX -e JOB_COMPLETIONS",
            "--entrypoint /bin/bash nvcr.io/nvidia/pytorch:25.08-py3 -c python train.py",
        ];
        for part in expected_parts {
            assert!(line.contains(part), "missing {part:?} in {line}");
        }
        assert!(!line.contains("s3cret"), "{line}");
        assert!(plan.env.contains(&("HF_TOKEN".to_string(), "s3cret".to_string())));
        assert!(plan.env.contains(&("CUDA_VISIBLE_DEVICES".to_string(), "0,2".to_string())));
        assert_eq!(plan.kill, ["docker", "kill", "jobdeck-train-abcde-0-0"]);
        assert_eq!(plan.cleanup, ["docker", "rm", "-f", "jobdeck-train-abcde-0-0"]);
        assert_eq!(plan.login, None);
        assert!(plan.run.last().unwrap() == "python train.py");
    }

    #[test]
    fn podman_uses_cdi_devices_and_logs_in_with_stdin() {
        let mut launch = sample_launch();
        launch.spec.container.registry_username = Some("bot".into());
        launch.spec.container.registry_password = Some("pw".into());
        let plan = plan("/usr/bin/podman", &launch, "r-0-0", 0, &[1], &volumes()).unwrap();
        let line = plan.run.join(" ");
        assert!(line.contains("--device nvidia.com/gpu=1"), "{line}");
        assert!(!line.contains("--gpus"), "{line}");
        let (login, password) = plan.login.unwrap();
        assert_eq!(login, ["/usr/bin/podman", "login", "--username", "bot", "--password-stdin", "nvcr.io"]);
        assert_eq!(password, "pw");
        assert!(!line.contains("pw"));
    }

    /// A stored image pull secret the job names logs in to its registry when
    /// the job has no credentials of its own; one for another registry does
    /// not.
    #[test]
    fn a_named_image_pull_secret_for_the_images_registry_is_used_to_log_in() {
        let credential = |name: &str, server: &str| crate::executor::PullCredential {
            name: name.into(),
            registry_server: server.into(),
            username: "$oauthtoken".into(),
            password: format!("{name}-key"),
        };
        let mut launch = sample_launch();
        launch.pull_credentials =
            vec![credential("elsewhere", "https://ghcr.io"), credential("ngc", "https://nvcr.io/")];
        let plan = plan("podman", &launch, "r-0-0", 0, &[], &volumes()).unwrap();
        let (login, password) = plan.login.unwrap();
        assert_eq!(login, ["podman", "login", "--username", "$oauthtoken", "--password-stdin", "nvcr.io"]);
        assert_eq!(password, "ngc-key");
        assert!(!plan.run.join(" ").contains("ngc-key"));

        launch.pull_credentials = vec![credential("elsewhere", "https://ghcr.io")];
        assert_eq!(plan_login(&launch), None);
        launch.spec.container.image = Some("busybox".into());
        launch.pull_credentials = vec![credential("hub", "https://index.docker.io/v1/")];
        assert_eq!(plan_login(&launch).map(|(c, _)| c[5].clone()), Some("docker.io".to_string()));
    }

    fn plan_login(launch: &JobLaunch) -> Option<(Vec<String>, String)> {
        plan("podman", launch, "r-0-0", 0, &[], &volumes()).unwrap().login
    }

    #[test]
    fn multi_worker_jobs_share_the_host_network_and_empty_commands_use_the_entrypoint() {
        let mut launch = sample_launch();
        launch.workers = 2;
        launch.spec.container.command = None;
        let plan = plan("docker", &launch, "r-1-0", 1, &[], &volumes()).unwrap();
        let line = plan.run.join(" ");
        assert!(line.contains("--network host"), "{line}");
        assert!(!line.contains("-p "), "{line}");
        assert!(!line.contains("--entrypoint"), "{line}");
        assert!(!line.contains("--gpus"), "{line}");
        assert!(line.ends_with("nvcr.io/nvidia/pytorch:25.08-py3"), "{line}");
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
            launch.shared_memory_mb = shm;
            let plan = plan("docker", &launch, "r-0-0", 0, &[], &volumes()).unwrap();
            assert!(plan.run.iter().any(|a| a == expected_image), "{image} {tag:?}: {:?}", plan.run);
            let flag = plan.run.iter().position(|a| a == "--shm-size").map(|i| plan.run[i + 1].as_str());
            assert_eq!(flag, expected_shm, "{image} with {shm} MiB");
        }
    }

    #[test]
    fn unknown_volumes_and_missing_images_are_errors() {
        let mut launch = sample_launch();
        let err = plan("docker", &launch, "r-0-0", 0, &[], &BTreeMap::new()).unwrap_err();
        assert_eq!(err, "no volume named 'shared' in executor.local.volumes");
        launch.spec.container.image = None;
        assert!(plan("docker", &launch, "r-0-0", 0, &[], &volumes()).unwrap_err().contains("image"));
    }
}
