//! `jobdeck kube render --file job.json`: the real binary, run as a user
//! runs it, prints the objects a job would create on Kubernetes as YAML
//! (Secrets, Service, Job), with secret values redacted, and refuses a job
//! that cannot run with each problem's field.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{json, Value};

const REGISTRY_PASSWORD: &str = "nvapi-registry-password";
const REDACTED: &str = "<redacted: write-only>";

const CONFIG: &str = r#"
[executor]
kind = "kubernetes"

[executor.kubernetes]
namespace = "ml"

[executor.kubernetes.volumes]
shared = { persistent_volume_claim = { claim_name = "team-data" } }

[[node_groups]]
name = "h100"
cpu = 64
memory_mb = 1048576
gpus = 8
nodes = 2
node_selector = { nodepool = "h100" }

[[shapes]]
name = "gpu.1xh100"
cpu = 8
memory_mb = 65536
gpus = 1
accelerator_type = "H100"
"#;

/// A two-worker job with a secret variable, a literal one, registry
/// credentials and a volume.
fn job() -> Value {
    json!({
        "metadata": {"name": "train", "labels": {"team": "vision"}},
        "spec": {
            "resource_shape": "gpu.1xh100",
            "affinity": {"allowed_dedicated_node_groups": ["h100"]},
            "container": {
                "image": "registry.example.com/team/train", "image_tag": "v1",
                "command": ["python", "train.py"],
                "registry_username": "bot", "registry_password": REGISTRY_PASSWORD
            },
            "envs": [
                {"name": "HF_TOKEN", "value_from": {"secret_name_ref": "hf"}},
                {"name": "EPOCHS", "value": "3"}
            ],
            "mounts": [{"from": "shared", "path": "/datasets", "mount_path": "/data"}],
            "workers": 2
        }
    })
}

struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new() -> Files {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("jobdeck.toml"), CONFIG).unwrap();
        Files { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write_job(&self, text: &str) -> PathBuf {
        let path = self.path("job.json");
        std::fs::write(&path, text).unwrap();
        path
    }
}

/// Runs `jobdeck kube render` with `args`.
fn render(cwd: &Path, args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_jobdeck"))
        .arg("kube")
        .arg("render")
        .args(args)
        .current_dir(cwd)
        .env("JOBDECK_LOG", "warn")
        .output()
        .unwrap()
}

fn render_job(files: &Files, job: &Value, extra: &[&str]) -> Output {
    let file = files.write_job(&job.to_string());
    let config = files.path("jobdeck.toml");
    let mut args = vec!["--file", file.to_str().unwrap(), "--config", config.to_str().unwrap()];
    args.extend_from_slice(extra);
    render(files.dir.path(), &args)
}

fn documents(output: &Output) -> Vec<Value> {
    assert!(output.status.success(), "render failed: {}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout.clone()).unwrap();
    serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("not YAML: {e}\n{text}"))
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_multi_worker_job_renders_its_secrets_service_and_job_with_secrets_redacted() {
    let files = Files::new();
    let output = render_job(&files, &job(), &[]);
    let docs = documents(&output);
    let kinds: Vec<(&str, &str)> =
        docs.iter().map(|d| (d["kind"].as_str().unwrap(), d["metadata"]["name"].as_str().unwrap())).collect();
    assert_eq!(
        kinds,
        [
            ("Secret", "train-env"),
            ("Secret", "train-registry"),
            ("Service", "train"),
            ("NetworkPolicy", "train-network"),
            ("Job", "train")
        ]
    );
    for doc in &docs {
        assert_eq!(doc["metadata"]["namespace"], json!("ml"), "{doc}");
        assert_eq!(doc["metadata"]["labels"]["app.kubernetes.io/managed-by"], json!("jobdeck"), "{doc}");
    }

    // Secret values are never printed: not the registry password the file
    // holds, and not the secret the variable names (a render never reads it).
    let text = String::from_utf8(output.stdout.clone()).unwrap();
    assert!(!text.contains(REGISTRY_PASSWORD), "{text}");
    let env_secret = &docs[0];
    assert_eq!(env_secret["type"], json!("Opaque"));
    assert_eq!(env_secret["stringData"], json!({"HF_TOKEN": REDACTED}));
    let registry = &docs[1];
    assert_eq!(registry["type"], json!("kubernetes.io/dockerconfigjson"));
    let docker_config: Value =
        serde_json::from_str(registry["stringData"][".dockerconfigjson"].as_str().unwrap()).unwrap();
    assert_eq!(docker_config["auths"]["registry.example.com"]["username"], json!("bot"));
    assert_eq!(docker_config["auths"]["registry.example.com"]["password"], json!(REDACTED));

    // The headless Service that makes MASTER_ADDR resolve.
    let service = &docs[2];
    assert_eq!(service["spec"]["clusterIP"], json!("None"));
    assert_eq!(service["spec"]["publishNotReadyAddresses"], json!(true));

    // The Job: Indexed, one replica per worker, in the node group, with the
    // secret variable referenced and the literal one inline.
    let rendered = &docs[4];
    assert_eq!(rendered["apiVersion"], json!("batch/v1"));
    assert_eq!(rendered["metadata"]["labels"]["team"], json!("vision"));
    assert_eq!(rendered["spec"]["completionMode"], json!("Indexed"));
    assert_eq!(
        (rendered["spec"]["completions"].clone(), rendered["spec"]["parallelism"].clone()),
        (json!(2), json!(2))
    );
    let pod = &rendered["spec"]["template"]["spec"];
    assert_eq!(pod["subdomain"], json!("train"));
    assert_eq!(pod["nodeSelector"], json!({"nodepool": "h100"}));
    assert_eq!(pod["imagePullSecrets"], json!([{"name": "train-registry"}]));
    let container = &pod["containers"][0];
    assert_eq!(container["image"], json!("registry.example.com/team/train:v1"));
    assert_eq!(container["command"], json!(["python", "train.py"]));
    assert_eq!(container["resources"]["limits"]["nvidia.com/gpu"], json!("1"));
    let env: Vec<&Value> = container["env"].as_array().unwrap().iter().collect();
    let var = |name: &str| *env.iter().find(|e| e["name"] == json!(name)).unwrap_or_else(|| panic!("no {name}"));
    assert_eq!(
        var("HF_TOKEN")["valueFrom"]["secretKeyRef"],
        json!({"name": "train-env", "key": "HF_TOKEN", "optional": false})
    );
    assert_eq!(var("EPOCHS")["value"], json!("3"));
    assert_eq!(var("MASTER_ADDR")["value"], json!("train-0.train"));
    assert_eq!(var("WORLD_SIZE")["value"], json!("2"));
    let mount =
        container["volumeMounts"].as_array().unwrap().iter().find(|m| m["mountPath"] == json!("/data")).unwrap();
    assert_eq!(mount["subPath"], json!("datasets"));
    let volume = pod["volumes"].as_array().unwrap().iter().find(|v| v["name"] == mount["name"]).unwrap();
    assert_eq!(volume["persistentVolumeClaim"]["claimName"], json!("team-data"));

    // --namespace wins over the config's.
    let docs = documents(&render_job(&files, &job(), &["--namespace", "research"]));
    assert!(docs.iter().all(|d| d["metadata"]["namespace"] == json!("research")));
}

#[test]
fn a_single_worker_job_without_secrets_is_a_job_and_its_network_policy() {
    let files = Files::new();
    let mut job = job();
    let spec = job["spec"].as_object_mut().unwrap();
    spec.remove("workers");
    spec.remove("envs");
    spec["container"].as_object_mut().unwrap().remove("registry_username");
    spec["container"].as_object_mut().unwrap().remove("registry_password");
    spec.insert("completions".into(), json!(4));
    spec.insert("parallelism".into(), json!(2));
    let docs = documents(&render_job(&files, &job, &[]));
    assert_eq!(docs.len(), 2, "{docs:?}");
    assert_eq!(docs[0]["kind"], json!("NetworkPolicy"));
    let rendered = &docs[1];
    assert_eq!(rendered["kind"], json!("Job"));
    assert_eq!(
        (rendered["spec"]["completions"].clone(), rendered["spec"]["parallelism"].clone()),
        (json!(4), json!(2))
    );
    let pod = &rendered["spec"]["template"]["spec"];
    assert!(pod.get("subdomain").is_none() && pod.get("imagePullSecrets").is_none(), "{pod}");
}

#[test]
fn a_job_that_cannot_run_is_refused_with_its_fields() {
    let files = Files::new();
    // (what is wrong, the job, what stderr must say)
    let mut reserved = job();
    reserved["metadata"]["labels"] = json!({"jobdeck.dev/run": "7"});
    let mut unknown_volume = job();
    unknown_volume["spec"]["mounts"][0]["from"] = json!("nfs-home");
    let mut mistyped = job();
    mistyped["spec"]["completions"] = json!("two");
    let mut unknown_field = job();
    unknown_field["spec"]["complétions"] = json!(2);
    let mut no_image = job();
    no_image["spec"]["container"].as_object_mut().unwrap().remove("image");
    no_image["spec"]["container"].as_object_mut().unwrap().remove("image_tag");
    let cases: [(&str, Value, &str); 5] = [
        (
            "a reserved label",
            reserved,
            "  metadata.labels[\"jobdeck.dev/run\"]: the key's prefix 'jobdeck.dev/' is reserved for Jobdeck",
        ),
        (
            "a volume the executor lacks",
            unknown_volume,
            "  spec.mounts[0].from: no volume named 'nfs-home' is configured for the kubernetes executor",
        ),
        ("a mistyped field", mistyped, "  spec.completions: "),
        ("an unknown field", unknown_field, "  spec.complétions: "),
        ("no image", no_image, "  spec.container.image: "),
    ];
    for (what, job, expected) in cases {
        let output = render_job(&files, &job, &[]);
        assert_eq!(output.status.code(), Some(1), "{what}: {}", stderr(&output));
        assert!(output.stdout.is_empty(), "{what}: nothing is printed on stdout");
        let err = stderr(&output);
        assert!(err.contains("the job cannot run on Kubernetes:"), "{what}: {err}");
        assert!(err.contains(expected), "{what}: expected {expected:?} in {err}");
    }

    // A file that is not JSON says so; a node group the job may not use is
    // named with the option.
    let file = files.write_job("{\"metadata\": ");
    let output = render(files.dir.path(), &["--file", file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("the job file is not valid JSON"), "{}", stderr(&output));
    let output = render_job(&files, &job(), &["--node-group", "a100"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("--node-group: no node group named 'a100'"), "{}", stderr(&output));
}
