//! NVIDIA's TAO SDK (its Lepton platform, seed 002) drives Jobdeck unchanged:
//! `nvidia-tao-sdk[lepton]` and `leptonai` from PyPI at the versions pinned
//! in `tests/tao-requirements.txt`, installed into `tests/.tao-venv` by
//! `scripts/setup.sh --tao` (which `scripts/test.sh` runs), configured only
//! as a user of a self-hosted Lepton would: `LEPTON_WORKSPACE_ID`,
//! `LEPTON_AUTH_TOKEN`, `LEPTON_WORKSPACE_URL` and the SDK's one constant
//! `LEPTON_API_BASE_URL`.
//!
//! `tests/tao_sdk/drive.py` runs each scenario with the SDK and fails on any
//! answer outside 2xx it received; this test checks what the SDK returned and
//! what the server really did, through the API.
//!
//! No request leaves the machine: the SDK prefixes multi-node commands with
//! a `wget` from the internet, which goes through `http(s)_proxy` set to a
//! closed loopback port and fails at once (the job still completes).
//!
//! `JOBDECK_TAO_VENV` points at another virtual environment with the SDK.

use std::path::{Path, PathBuf};
use std::process::Command;

use jobdeck_e2e::{workspace_root, Server};
use serde_json::Value;

/// One node group `local` of one node with four (pretend) GPUs of type
/// `test-gpu`, and a one-GPU shape of that type, so the SDK's
/// `gpu_count=1` resolves to a shape as it does on Lepton. In process mode
/// a GPU is an index in `CUDA_VISIBLE_DEVICES`.
const CONFIG: &str = r#"
[executor.local]
mode = "process"
retry_backoff_seconds = 0
grace_period_seconds = 2

[[node_groups]]
name = "local"
cpu = 8
memory_mb = 16384
gpus = 4
gpu_product = "test-gpu"
node_names = ["tao-node"]

[[shapes]]
name = "cpu.small"
cpu = 1
memory_mb = 1024

[[shapes]]
name = "gpu.1xtest"
cpu = 1
memory_mb = 2048
gpus = 1
accelerator_type = "test-gpu"
accelerator_memory_mb = 16384
"#;

/// The NGC key the SDK provisions its image pull secret from; it must never
/// come back from the API.
const NGC_KEY: &str = "ngc-key-that-must-stay-write-only";

/// The virtual environment with the TAO SDK, checked: the test fails (never
/// passes silently) when it is missing or holds other versions than pinned.
fn tao_venv() -> PathBuf {
    let venv = std::env::var_os("JOBDECK_TAO_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("tests/.tao-venv"));
    let requirements = std::fs::read_to_string(workspace_root().join("tests/tao-requirements.txt"))
        .expect("tests/tao-requirements.txt pins the TAO SDK");
    let pinned = |package: &str| {
        requirements
            .lines()
            .find_map(|l| l.trim().strip_prefix(&format!("{package}==")).map(str::to_string))
            .unwrap_or_else(|| panic!("tests/tao-requirements.txt has no {package}==<version> line"))
    };
    let install = "create it with `scripts/setup.sh --tao` (scripts/test.sh does)";
    assert!(venv.join("bin/python").is_file(), "{} is missing; {install}", venv.display());
    for package in ["nvidia-tao-sdk", "leptonai"] {
        let out = Command::new(venv.join("bin/python"))
            .args(["-c", &format!("import importlib.metadata as m; print(m.version('{package}'))")])
            .output()
            .expect("the venv's python runs");
        let installed = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert_eq!(installed, pinned(package), "{} holds {package} {installed:?}; {install}", venv.display());
    }
    venv
}

/// A loopback port nothing listens on: the proxy every job's downloads go
/// through, so they fail at once instead of leaving the machine.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Runs `drive.py` scenarios as one user of one server.
struct Driver {
    venv: PathBuf,
    /// The program's working directory and home (the SDK keeps its job store
    /// in the working directory).
    dir: tempfile::TempDir,
    env: Vec<(&'static str, String)>,
}

impl Driver {
    fn new(server: &Server, token: &str) -> Driver {
        let dir = tempfile::tempdir().unwrap();
        let env = vec![
            ("LEPTON_WORKSPACE_ID", "jobdeck".to_string()),
            ("LEPTON_AUTH_TOKEN", token.to_string()),
            ("LEPTON_WORKSPACE_URL", server.api_url("")),
            ("JOBDECK_BASE_URL", server.base_url.clone()),
            ("JOBDECK_CLOSED_PROXY", format!("http://127.0.0.1:{}", closed_port())),
            ("NGC_KEY", NGC_KEY.to_string()),
        ];
        Driver { venv: tao_venv(), dir, env }
    }

    /// Runs one scenario; returns its steps by name. Fails the test, with the
    /// program's output, when it fails.
    fn run(&self, args: &[&str]) -> std::collections::BTreeMap<String, Value> {
        let mut command = Command::new(self.venv.join("bin/python"));
        command.arg(workspace_root().join("tests/tao_sdk/drive.py")).args(args);
        for (key, _) in std::env::vars() {
            if key.starts_with("LEPTON_") || key.ends_with("_proxy") || key.ends_with("_PROXY") {
                command.env_remove(key);
            }
        }
        let out = command
            .current_dir(self.dir.path())
            .env("HOME", self.dir.path())
            .env("PYTHONUNBUFFERED", "1")
            .envs(self.env.iter().map(|(k, v)| (*k, v.as_str())))
            .output()
            .expect("the TAO driver runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "drive.py {args:?} failed:\n{stdout}\n{stderr}");
        stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| Some((v["step"].as_str()?.to_string(), v["result"].clone())))
            .collect()
    }
}

fn api(server: &Server, token: &str, path: &str) -> Value {
    let (status, body) = server.call("GET", path, token, None);
    assert_eq!(status, 200, "GET {path}: {body}");
    body
}

/// The job the SDK created: its `backend_job_id` is the name it gave it.
fn job_named(server: &Server, token: &str, name: &str) -> Value {
    let list = api(server, token, &format!("/jobs?q={name}&job_query_mode=alive_and_archive"));
    let jobs: Vec<&Value> = list["jobs"].as_array().unwrap().iter().filter(|j| j["metadata"]["name"] == name).collect();
    assert_eq!(jobs.len(), 1, "{list}");
    jobs[0].clone()
}

#[test]
fn the_tao_sdk_creates_follows_analyses_and_cancels_jobs_unchanged() {
    let server = Server::start_api_with_config(CONFIG);
    let token = server.token_for("tao-user");
    let tao = Driver::new(&server, &token);

    // Discovery: the GPU shape, resolved per node group through the gateway
    // form of /shapes; no volumes in process mode.
    let found = tao.run(&["discover"]);
    let shapes = found["list_resource_shapes"].as_object().unwrap();
    assert_eq!(shapes.len(), 1, "only GPU shapes listable for deployments count: {shapes:?}");
    let shape = shapes.values().next().unwrap();
    assert_eq!((shape["cluster"].as_str(), shape["gpu_type"].as_str()), (Some("local"), Some("gpu.1xtest")));
    assert_eq!((shape["gpu_count"].as_f64(), shape["gpu_memory"].as_str()), (Some(1.0), Some("16.0GB")));
    assert_eq!(found["get_volumes"], serde_json::json!([]));

    // A one-node job to completion, its log's tail, its replica.
    let script = "for i in 1 2 3 4 5; do echo \"epoch $i loss 0.$((10 - i))\"; done; echo done";
    let done = tao.run(&["complete", script, "3"]);
    assert_eq!(done["status"], "Complete");
    assert_eq!(done["get_job_logs"], "epoch 4 loss 0.6\nepoch 5 loss 0.5\ndone");
    let replicas = done["get_job_replicas"].as_array().unwrap();
    assert_eq!(replicas.len(), 1, "{replicas:?}");
    let status = &replicas[0]["status"];
    assert_eq!(
        (status["node"]["name"].as_str(), status["node"]["node_group_id"].as_str()),
        (Some("tao-node"), Some("local"))
    );
    assert_eq!((status["cpu"].as_f64(), status["memory_in_mb"].as_i64()), (Some(1.0), Some(2048)));
    assert!(status.get("readiness_issue").is_none(), "{status}");
    // What the server holds: the SDK's 36-character name, private, with the
    // image pull secret it provisioned from NGC_KEY.
    let name = done["create_job"]["backend_job_id"].as_str().unwrap();
    assert_eq!(name.len(), 36, "{name}");
    let job = job_named(&server, &token, name);
    assert_eq!(job["metadata"]["visibility"], "private");
    assert_eq!(job["status"]["job_name"], job["metadata"]["id"], "Lepton's status.job_name is the id");
    assert_eq!(job["spec"]["image_pull_secrets"], serde_json::json!(["tao-image-pull-secret"]));
    let secrets = api(&server, &token, "/imagepullsecrets");
    assert_eq!(secrets.as_array().unwrap().len(), 1, "{secrets}");
    assert_eq!(secrets[0]["metadata"]["name"], "tao-image-pull-secret");
    assert_eq!(
        (secrets[0]["spec"]["registry_server"].as_str(), secrets[0]["spec"]["username"].as_str()),
        (Some("https://nvcr.io"), Some("$oauthtoken"))
    );
    assert_eq!(secrets[0]["metadata"]["visibility"], "private");
    assert!(!secrets.to_string().contains(NGC_KEY), "the password is write-only: {secrets}");
    let other = server.token_for("someone-else");
    assert_eq!(api(&server, &other, "/imagepullsecrets"), serde_json::json!([]), "another user does not see it");

    // Two nodes: completions = parallelism = 2 with the rendezvous variables
    // on each replica; the bootstrap's wget fails on the closed proxy.
    let multi = tao
        .run(&["multinode", "echo \"rank=$NODE_RANK world=$WORLD_SIZE master=$MASTER_ADDR gpus=$NUM_GPU_PER_NODE\""]);
    assert_eq!(multi["status"], "Complete");
    let log = multi["get_job_logs"].as_str().unwrap();
    for rank in 0..2 {
        assert!(log.contains(&format!("rank={rank} world=2 master=127.0.0.1 gpus=1")), "{log}");
    }
    assert_eq!(multi["get_job_replicas"].as_array().unwrap().len(), 2);

    // Failures: their class and suggestion, read through the job's id.
    let traceback = "echo 'Traceback (most recent call last):'; echo '  File \"train.py\", line 3, in <module>'; \
                     echo 'ValueError: bad learning rate' >&2; exit 1";
    let failed = tao.run(&["fail", traceback]);
    assert_eq!(failed["status"], "Error");
    let analysis = &failed["get_failure_analysis"];
    assert_eq!(analysis["err_class"], "ERR_PROGRAM", "{analysis}");
    assert!(analysis["suggestion"].as_str().is_some_and(|s| !s.is_empty()), "{analysis}");
    assert!(analysis["log_streams"][0]["lines"].to_string().contains("Traceback"), "{analysis}");
    let oom =
        tao.run(&["fail", "echo 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB' >&2; exit 1"]);
    assert_eq!(oom["get_failure_analysis"]["err_class"], "ERR_CUDA_OOM", "{}", oom["get_failure_analysis"]);
    assert!(oom["get_failure_analysis"]["suggestion"].as_str().unwrap().contains("GPU memory"));

    // Cancel a running job: the SDK deletes it by its status.job_name.
    let started = tao.dir.path().join("started");
    let cancel =
        tao.run(&["cancel", &format!("touch '{}'; exec sleep 600", started.display()), started.to_str().unwrap()]);
    assert_eq!(cancel["status"], "Running");
    assert_eq!(cancel["cancel_job"], true);
    let cancelled = cancel["create_job"]["backend_job_id"].as_str().unwrap();
    let list = api(&server, &token, &format!("/jobs?q={cancelled}&job_query_mode=alive_and_archive"));
    assert_eq!(list["total"], 0, "the cancelled job is gone: {list}");

    // The SDK's own delete goes by the job's name.
    let deleted = tao.run(&["delete-by-name", done["create_job"]["id"].as_str().unwrap()]);
    assert_eq!(deleted["delete"], true);
    let list = api(&server, &token, &format!("/jobs?q={name}&job_query_mode=alive_and_archive"));
    assert_eq!(list["total"], 0, "{list}");
}

/// Volumes and their storage permissions, as `get_volumes` and
/// `get_storage_permissions` read them, from a server whose executor mounts
/// configured volumes (container mode; no job runs here).
#[test]
fn the_tao_sdk_finds_the_configured_volumes_and_their_permissions() {
    let volume = tempfile::tempdir().unwrap();
    let config = format!(
        "[executor.local]\nmode = \"container\"\nengine = \"podman\"\nvolumes = {{ lustre = \"{}\" }}\n\n\
         [[node_groups]]\nname = \"local\"\ncpu = 8\nmemory_mb = 16384\nnode_names = [\"tao-node\"]\n",
        volume.path().display()
    );
    let server = Server::start_api_with_config(&config);
    let token = server.token_for("tao-user");
    let found = Driver::new(&server, &token).run(&["discover", "lustre"]);
    let volumes = found["get_volumes"].as_array().unwrap();
    assert_eq!(volumes.len(), 1, "{volumes:?}");
    assert_eq!(volumes[0]["name"], "lustre");
    assert!(volumes[0]["type"].as_str().unwrap().contains("NFS"), "{volumes:?}");
    assert_eq!(
        found["get_storage_permissions"],
        serde_json::json!([{"path_prefix": "/", "allowed_users": ["*"], "nodegroup_id": "local"}])
    );
    assert!(!Path::new(&server.data_dir).join("runs").exists(), "nothing ran");
}
