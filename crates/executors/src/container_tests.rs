//! Tests of the container plan (`container.rs`).

use super::*;
use crate::env::tests::launch;
use jobdeck_api::{ContainerPort, Mount, MountOptions};
use jobdeck_core::config::UserNamespace;

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
    let blocked = vec!["169.254.0.0/16".to_string()];
    let settings = ContainerSettings {
        engine,
        pull_policy: PullPolicy::Missing,
        volumes: &volumes,
        pids_limit: 8192,
        blocked_networks: &blocked,
        network_pool: "10.89.0.0/16",
        user_namespace: UserNamespace::Host,
        staging_dir: Path::new("/data/mounts"),
    };
    plan(&settings, launch, "train-abcde-0-0", 0, gpus)
}

/// One line values only: docker has no channel for a line break.
fn one_line_launch() -> JobLaunch {
    one_line_launch_with_workers(1)
}

fn one_line_launch_with_workers(workers: i64) -> JobLaunch {
    let mut launch = sample_launch();
    launch.env.retain(|(name, _)| name != "PEM");
    launch.resolved.workers = workers;
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
    assert_eq!((login.registry.as_str(), login.username.as_str(), login.password.as_str()), ("nvcr.io", "bot", "pw"));
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
    let credential = |name: &str, server: &str| jobdeck_core::executor::PullCredential {
        name: name.into(),
        registry_server: server.into(),
        username: "$oauthtoken".into(),
        password: format!("{name}-key"),
    };
    let mut launch = sample_launch();
    launch.pull_credentials = vec![credential("elsewhere", "https://ghcr.io"), credential("ngc", "https://nvcr.io/")];
    let login = plan_with("podman", &launch, &[]).login.unwrap();
    assert_eq!((login.registry.as_str(), login.password.as_str()), ("nvcr.io", "ngc-key"));

    launch.pull_credentials = vec![credential("elsewhere", "https://ghcr.io")];
    assert_eq!(plan_with("podman", &launch, &[]).login, None);
    launch.spec.container.image = Some("busybox".into());
    launch.pull_credentials = vec![credential("hub", "https://index.docker.io/v1/")];
    assert_eq!(plan_with("podman", &launch, &[]).login.map(|l| l.registry), Some("docker.io".to_string()));
}

/// On podman a multi-worker job's workers share a pod of their own (its
/// ports are the pod's), never the host's network; docker, without pods,
/// keeps the host's.
#[test]
fn multi_worker_jobs_share_a_pod_and_empty_commands_use_the_entrypoint() {
    let mut launch = sample_launch();
    launch.resolved.workers = 2;
    launch.run = 3;
    launch.spec.container.command = None;
    let steps = plan_with("podman", &launch, &[]);
    let line = create_line(&steps, "env");
    assert!(line.contains("--pod jobdeck-train-abcde-run3"), "{line}");
    assert!(!line.contains("--network") && !line.contains("-p "), "the pod has them: {line}");
    let pod = steps.pod.clone().unwrap();
    assert_eq!(
        steps.create_pod(&pod),
        [
            "podman",
            "pod",
            "create",
            "--name",
            "jobdeck-train-abcde-run3",
            "--label",
            "jobdeck.job=train-abcde",
            "--share",
            "net,ipc",
            "--network",
            "jobdeck-train-abcde-run3",
            "-p",
            "8080/tcp",
            "-p",
            "19000:9000/udp"
        ]
    );
    assert_eq!(steps.remove_pod(&pod), ["podman", "pod", "rm", "jobdeck-train-abcde-run3"]);
    assert_eq!(pod.lock, Path::new("/data/pods/jobdeck-train-abcde-run3.lock"), "beside the volume binds");
    let docker = create_line(&plan_with("docker", &one_line_launch_with_workers(2), &[]), "env");
    assert!(docker.contains("--network host") && !docker.contains("--pod"), "{docker}");
    assert!(!line.contains("--entrypoint"), "{line}");
    assert!(!line.contains("--gpus"), "{line}");
    assert!(line.ends_with("nvcr.io/nvidia/pytorch:25.08-py3"), "{line}");
    assert!(steps.env_file.contains(&("WORLD_SIZE".to_string(), "2".to_string())));
}

/// On podman every run has a network of its own, isolated from every
/// other, and the container's namespace gets a route that refuses each
/// blocked network before the program starts; docker keeps its default
/// network (docs/security.md says so).
#[test]
fn every_run_on_podman_has_an_isolated_network_and_blocked_routes() {
    let mut launch = one_line_launch();
    launch.run = 2;
    let steps = plan_with("podman", &launch, &[]);
    let line = create_line(&steps, "env");
    assert!(line.contains("--network jobdeck-train-abcde-run2 -p 8080/tcp"), "{line}");
    let network = steps.network.clone().unwrap();
    assert_eq!(network.blocked, ["169.254.0.0/16", "10.89.0.0/16"], "other runs' networks are blocked too");
    assert_eq!(steps.run_lock(), Some(Path::new("/data/pods/jobdeck-train-abcde-run2.lock")));
    assert_eq!(
        steps.create_network(&network, "10.89.7.0/24"),
        [
            "podman",
            "network",
            "create",
            "--disable-dns",
            "--subnet",
            "10.89.7.0/24",
            "--opt",
            "isolate=true",
            "--label",
            "jobdeck.job=train-abcde",
            "jobdeck-train-abcde-run2"
        ]
    );
    assert_eq!(steps.remove_network(&network), ["podman", "network", "rm", "jobdeck-train-abcde-run2"]);
    assert_eq!(steps.init(), ["podman", "init", "jobdeck-train-abcde-0-0"]);
    assert_eq!(
        steps.block_route("/run/netns/netns-1", "169.254.0.0/16", false),
        [
            "/usr/bin/nsenter",
            "--net=/run/netns/netns-1",
            "/usr/sbin/ip",
            "route",
            "replace",
            "prohibit",
            "169.254.0.0/16"
        ]
    );
    assert_eq!(
        steps.block_route("/run/user/1000/netns/x", "10.0.0.0/8", true)[..3],
        ["podman", "unshare", "/usr/bin/nsenter"]
    );
    let docker = plan_with("docker", &launch, &[]);
    assert!(docker.network.is_none() && !create_line(&docker, "env").contains("--network"));
}

/// With `user_namespace = "auto"` a one-worker run's container, or a
/// multi-worker run's pod, gets a user namespace of its own on podman;
/// docker refuses the setting, naming it.
#[test]
fn own_user_namespaces_go_on_the_container_or_the_pod() {
    let volumes = volumes();
    let settings = ContainerSettings {
        engine: "podman",
        pull_policy: PullPolicy::Missing,
        volumes: &volumes,
        pids_limit: 1,
        blocked_networks: &[],
        network_pool: "10.89.0.0/16",
        user_namespace: UserNamespace::Auto,
        staging_dir: Path::new("/data/mounts"),
    };
    let one = plan(&settings, &one_line_launch(), "r-0-0", 0, &[]).unwrap();
    assert!(
        create_line(&one, "env").contains("--userns auto:size=65536"),
        "the size is named (see OWN_USER_NAMESPACE)"
    );
    let mut launch = one_line_launch();
    launch.resolved.workers = 2;
    let workers = plan(&settings, &launch, "r-0-0", 0, &[]).unwrap();
    assert!(!create_line(&workers, "env").contains("--userns"), "the pod has it");
    let pod = workers.pod.clone().unwrap();
    assert!(workers.create_pod(&pod).join(" ").contains("--userns auto:size=65536"));
    let docker = ContainerSettings { engine: "docker", ..settings };
    let refused = plan(&docker, &one_line_launch(), "r-0-0", 0, &[]).unwrap_err();
    assert!(refused.contains("executor.local.user_namespace"), "{refused}");
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
        blocked_networks: &[],
        network_pool: "10.89.0.0/16",
        user_namespace: UserNamespace::Host,
        staging_dir: Path::new("/data/mounts"),
    };
    let err = plan(&settings, &launch, "r-0-0", 0, &[]).unwrap_err();
    assert_eq!(err, "no volume named 'shared' in executor.local.volumes");
    launch.spec.mounts = None;
    assert!(plan(&settings, &launch, "r-0-0", 0, &[]).unwrap().always_pull);
    launch.spec.container.image = None;
    assert!(plan(&settings, &launch, "r-0-0", 0, &[]).unwrap_err().contains("image"));
}

/// `spec.container.args` follow the image: after the command's own
/// arguments, or alone for the image's entrypoint when there is no command
/// (as Kubernetes' `args` and NVCF's `containerArgs`); an argument that
/// looks like an option stays an argument, behind the image. The working
/// directory is one argument of `--workdir`.
#[test]
fn extension_arguments_follow_the_command_or_the_images_entrypoint() {
    let mut launch = sample_launch();
    launch.spec.container.command = None;
    launch.spec.container.args = Some(vec!["--epochs".into(), "10".into(), "--volume=/:/host".into()]);
    let steps = plan_with("podman", &launch, &[]);
    let line = create_line(&steps, "env");
    assert!(!line.contains("--entrypoint"), "{line}");
    assert!(line.ends_with("-- nvcr.io/nvidia/pytorch:25.08-py3 --epochs 10 --volume=/:/host"), "{line}");
    launch.spec.container.command = Some(vec!["python".into(), "train.py".into()]);
    launch.spec.container.working_dir = Some("/workspace/run 1".into());
    let steps = plan_with("podman", &launch, &[]);
    let options = steps.create_options.join("|");
    assert!(options.contains("--workdir|/workspace/run 1|"), "one argument, spaces and all: {options}");
    let line = create_line(&steps, "env");
    assert!(line.contains("--entrypoint python"), "{line}");
    assert!(line.ends_with("nvcr.io/nvidia/pytorch:25.08-py3 train.py --epochs 10 --volume=/:/host"), "{line}");
}

/// `spec.container.user` is one argument of `--user`, before the image, and
/// a user other than root gets no capabilities (podman would give it the
/// added ones); a privileged job (which the resolution allows only on node groups an admin
/// opened) gets `--privileged` instead of the dropped capabilities, and
/// every other job keeps them dropped.
#[test]
fn the_user_is_one_argument_without_capabilities_and_only_a_privileged_job_keeps_them_all() {
    let mut launch = sample_launch();
    launch.spec.container.user = Some("1000:1000".into());
    let steps = plan_with("podman", &launch, &[]);
    let options = steps.create_options.join("|");
    assert!(options.contains("|--user|1000:1000|"), "{options}");
    assert!(options.contains("--cap-drop|all") && !options.contains("--privileged"), "{options}");
    assert!(!options.contains("--cap-add"), "a user other than root gets no capability: {options}");
    launch.spec.container.user = Some("root:1000".into());
    let options = plan_with("podman", &launch, &[]).create_options.join("|");
    assert!(options.contains("--cap-add|DAC_OVERRIDE"), "root keeps what a training job's root needs: {options}");
    launch.spec.user_security_context =
        Some(jobdeck_api::UserSecurityContext { privileged: Some(true), no_specific_user: None });
    let options = plan_with("podman", &launch, &[]).create_options.join("|");
    assert!(options.contains("|--privileged|"), "{options}");
    assert!(!options.contains("--cap-drop") && !options.contains("no-new-privileges"), "{options}");
    assert!(options.contains("--pids-limit"), "a privileged job still has a pids limit: {options}");
}
