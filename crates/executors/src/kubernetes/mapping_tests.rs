//! Table-driven tests of the job → Kubernetes objects mapping. Each case
//! starts from a small job, changes it, renders it and checks values in the
//! rendered objects by JSON pointer, so a case reads like the YAML it expects.

use std::collections::BTreeMap;

use jobdeck_api::LeptonJob;
use serde_json::{json, Value};

use super::*;
use crate::kubernetes::settings::{NodeGroupPlacement, TolerationSetting, VolumeSource};
use crate::kubernetes::spec_values::SpecValues;
use jobdeck_core::config::{Config, MachineInfo};
use jobdeck_core::spec::ResolvedSpec;

const PASSWORD: &str = "hunter2-registry-password";
const SECRET_VALUE: &str = "s3cr3t-token-value";

fn base_job() -> Value {
    json!({
        "metadata": {"id": "train-ab12c", "name": "train", "created_by": "alice"},
        "spec": {
            "resource_shape": "cpu.small",
            "container": {"image": "busybox", "command": ["/bin/sh", "-c", "echo hi"]}
        }
    })
}

/// The cluster of these tests, as `jobdeck.toml` declares it.
const CONFIG: &str = r#"
[[node_groups]]
name = "h100"
cpu = 64
memory_mb = 1048576
gpus = 8
node_names = ["gpu-node-1", "gpu-node-2"]
nodes = 2
node_selector = { nodepool = "h100" }

[[node_groups]]
name = "cpu"
cpu = 32
memory_mb = 131072
privileged_roles = ["admin"]

[[shapes]]
name = "cpu.small"
cpu = 1
memory_mb = 4096

[[shapes]]
name = "cpu.half"
cpu = 0.5
memory_mb = 2048

[[shapes]]
name = "gpu.1xh100"
cpu = 8
memory_mb = 65536
gpus = 1
accelerator_type = "H100"
"#;

fn config() -> Config {
    let machine = MachineInfo {
        hostname: "box".into(),
        cpus: 4.0,
        memory_mb: 16384,
        gpus: 0,
        gpu_product: None,
        gpu_memory_mb: None,
    };
    Config::from_toml(CONFIG, std::path::Path::new("/tmp/unused"), &machine).unwrap()
}

fn settings() -> KubernetesSettings {
    let mut s = KubernetesSettings::default();
    s.node_groups.insert(
        "h100".into(),
        NodeGroupPlacement {
            tolerations: vec![TolerationSetting {
                key: Some("nvidia.com/gpu".into()),
                operator: Some("Exists".into()),
                value: None,
                effect: Some("NoSchedule".into()),
            }],
        },
    );
    s.volumes.insert("shared".into(), VolumeSource::PersistentVolumeClaim { claim_name: "team-data".into() });
    s
}

/// Merges `patch` into `base` (objects key by key, everything else replaced).
fn merge(base: &mut Value, patch: &Value) {
    match (base, patch) {
        (Value::Object(b), Value::Object(p)) => {
            for (k, v) in p {
                merge(b.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (b, p) => *b = p.clone(),
    }
}

struct Case {
    name: &'static str,
    patch: Value,
    shape: &'static str,
    /// JSON pointer into `{job, env_secret, registry_secret, service}` → value.
    expect: Vec<(&'static str, Value)>,
}

/// Renders run 0 of `job` the way the executor does after the scheduler
/// placed it in its first allowed node group.
fn render_job(job: &LeptonJob, secrets: SecretValues<'_>) -> Result<KubeObjects, FieldErrors> {
    render_job_pulling_with(job, secrets, &[])
}

/// [`render_job`] for a job whose stored image pull secrets resolved to
/// `pull_credentials`.
fn render_job_pulling_with(
    job: &LeptonJob,
    secrets: SecretValues<'_>,
    pull_credentials: &[jobdeck_core::executor::PullCredential],
) -> Result<KubeObjects, FieldErrors> {
    let config = config();
    let resolved = ResolvedSpec::resolve(&job.spec, &config).unwrap_or_else(|e| panic!("{e:?}"));
    let values = SpecValues::from_resolved(&resolved, &job.spec);
    let shape = ShapeResources {
        cpu: resolved.shape.cpu,
        memory_mib: resolved.shape.memory_mb,
        gpus: resolved.shape.gpus,
        accelerator_type: resolved.shape.accelerator_type.clone(),
    };
    let group = job
        .spec
        .affinity
        .as_ref()
        .and_then(|a| a.allowed_dedicated_node_groups.as_ref())
        .and_then(|g| g.first())
        .and_then(|g| config.node_group(g))
        .map(|g| NodeGroupTarget { name: g.name.clone(), node_labels: g.node_selector.clone() });
    let shape = &shape;
    let empty = BTreeMap::new();
    render(
        &RenderInput {
            job_id: job.id(),
            job_name: job.metadata.name.as_deref().unwrap_or(""),
            run: 0,
            labels: job.metadata.labels.as_ref().unwrap_or(&empty),
            annotations: job.metadata.annotations.as_ref().unwrap_or(&empty),
            created_by: job.metadata.created_by.as_deref(),
            spec: &job.spec,
            values: &values,
            shape,
            node_group: group.as_ref(),
            namespace: "ml",
            secrets,
            pull_credentials,
        },
        &settings(),
    )
}

fn render_value(job: &LeptonJob, secrets: SecretValues<'_>) -> Result<Value, FieldErrors> {
    Ok(serde_json::to_value(&render_job(job, secrets)?).unwrap())
}

fn job_with(patch: &Value) -> LeptonJob {
    let mut value = base_job();
    merge(&mut value, patch);
    serde_json::from_value(value).unwrap()
}

fn job_on(shape: &str, patch: &Value) -> LeptonJob {
    let mut job = job_with(patch);
    job.spec.resource_shape = Some(shape.to_string());
    job
}

fn env_of(rendered: &Value) -> BTreeMap<String, Value> {
    rendered
        .pointer("/job/spec/template/spec/containers/0/env")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .map(|e| {
            let value = e.get("value").cloned().unwrap_or_else(|| e["valueFrom"].clone());
            (e["name"].as_str().unwrap().to_string(), value)
        })
        .collect()
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "minimal job: Indexed, defaults, Never restart, no service",
            patch: json!({}),
            shape: "cpu.small",
            expect: vec![
                ("/job/metadata/name", json!("train-ab12c")),
                ("/job/metadata/namespace", json!("ml")),
                ("/job/metadata/labels/app.kubernetes.io~1managed-by", json!("jobdeck")),
                ("/job/metadata/labels/jobdeck.dev~1job-id", json!("train-ab12c")),
                ("/job/metadata/labels/jobdeck.dev~1job-name", json!("train")),
                ("/job/metadata/labels/jobdeck.dev~1run", json!("0")),
                ("/job/spec/template/metadata/labels/jobdeck.dev~1run", json!("0")),
                ("/job/metadata/annotations/jobdeck.dev~1created-by", json!("alice")),
                ("/job/spec/completionMode", json!("Indexed")),
                ("/job/spec/completions", json!(1)),
                ("/job/spec/parallelism", json!(1)),
                ("/job/spec/backoffLimit", json!(3)),
                ("/job/spec/backoffLimitPerIndex", Value::Null),
                ("/job/spec/activeDeadlineSeconds", Value::Null),
                // The archive time: three days unless the job says.
                ("/job/spec/ttlSecondsAfterFinished", json!(259200)),
                ("/job/spec/suspend", json!(false)),
                ("/job/spec/podFailurePolicy/rules", json!([
                    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
                ])),
                ("/job/spec/template/metadata/labels/jobdeck.dev~1job-id", json!("train-ab12c")),
                ("/job/spec/template/spec/restartPolicy", json!("Never")),
                ("/job/spec/template/spec/automountServiceAccountToken", json!(false)),
                ("/job/spec/template/spec/enableServiceLinks", json!(false)),
                ("/job/spec/template/spec/priorityClassName", json!("jobdeck-mid-4000")),
                ("/job/spec/template/spec/preemptionPolicy", json!("Never")),
                ("/job/spec/template/spec/subdomain", Value::Null),
                ("/job/spec/template/spec/containers/0/name", json!("job")),
                ("/job/spec/template/spec/containers/0/image", json!("busybox:latest")),
                ("/job/spec/template/spec/containers/0/command", json!(["/bin/sh", "-c", "echo hi"])),
                ("/job/spec/template/spec/containers/0/resources/limits", json!({"cpu": "1", "memory": "4096Mi"})),
                ("/job/spec/template/spec/containers/0/resources/requests", json!({"cpu": "1", "memory": "4096Mi"})),
                ("/service", Value::Null),
                ("/env_secret", Value::Null),
                ("/registry_secret", Value::Null),
            ],
        },
        Case {
            name: "counts, deadline, ttl, per-index retries and the grace period",
            patch: json!({"spec": {"completions": 8, "parallelism": 2, "backoff_limit": 0,
                "active_deadline_seconds": 3600, "ttl_seconds_after_finished": 600, "max_failure_retry": 2,
                "termination_grace_period_seconds": 90}}),
            shape: "cpu.small",
            expect: vec![
                ("/job/spec/completions", json!(8)),
                ("/job/spec/parallelism", json!(2)),
                ("/job/spec/backoffLimit", json!(0)),
                ("/job/spec/backoffLimitPerIndex", json!(2)),
                ("/job/spec/activeDeadlineSeconds", json!(3600)),
                ("/job/spec/ttlSecondsAfterFinished", json!(600)),
                ("/job/spec/template/spec/terminationGracePeriodSeconds", json!(90)),
            ],
        },
        Case {
            name: "arguments without a command go to the image's entrypoint as the pod's args; the working directory",
            patch: json!({"spec": {"container": {"command": null, "args": ["--epochs", "10"], "working_dir": "/workspace"}}}),
            shape: "cpu.small",
            expect: vec![
                ("/job/spec/template/spec/containers/0/command", Value::Null),
                ("/job/spec/template/spec/containers/0/args", json!(["--epochs", "10"])),
                ("/job/spec/template/spec/containers/0/workingDir", json!("/workspace")),
            ],
        },
        Case {
            name: "the container's user and group as numeric ids; privileged only when asked",
            patch: json!({"spec": {"container": {"user": "1000:2000"}}}),
            shape: "cpu.small",
            expect: vec![(
                "/job/spec/template/spec/containers/0/securityContext",
                json!({"runAsUser": 1000, "runAsGroup": 2000}),
            )],
        },
        Case {
            name: "a privileged job's container is privileged",
            patch: json!({"spec": {"user_security_context": {"privileged": true}, "container": {"user": "0"},
                "affinity": {"allowed_dedicated_node_groups": ["cpu"]}}}),
            shape: "cpu.small",
            expect: vec![(
                "/job/spec/template/spec/containers/0/securityContext",
                json!({"runAsUser": 0, "privileged": true}),
            )],
        },
        Case {
            name: "no security context of its own for a job that asks for none",
            patch: json!({}),
            shape: "cpu.small",
            expect: vec![("/job/spec/template/spec/containers/0/securityContext", Value::Null)],
        },
        Case {
            name: "stopped job is created suspended",
            patch: json!({"spec": {"stopped": true}}),
            shape: "cpu.small",
            expect: vec![("/job/spec/suspend", json!(true))],
        },
        Case {
            name: "multi-worker: completions = parallelism = workers, headless service, subdomain",
            patch: json!({"spec": {"workers": 4, "completions": 1, "parallelism": 1}}),
            shape: "gpu.1xh100",
            expect: vec![
                ("/job/spec/completions", json!(4)),
                ("/job/spec/parallelism", json!(4)),
                ("/job/spec/template/spec/subdomain", json!("train-ab12c")),
                ("/service/metadata/name", json!("train-ab12c")),
                ("/service/metadata/namespace", json!("ml")),
                ("/service/spec/clusterIP", json!("None")),
                ("/service/spec/publishNotReadyAddresses", json!(true)),
                ("/service/spec/selector", json!({"jobdeck.dev/job-id": "train-ab12c"})),
                ("/service/spec/ports", json!([{"name": "rendezvous", "port": 29400, "protocol": "TCP"}])),
            ],
        },
        Case {
            name: "program errors fail the job without retry when asked",
            patch: json!({"spec": {"disable_retry_on_program_error": true}}),
            shape: "cpu.small",
            expect: vec![("/job/spec/podFailurePolicy/rules", json!([
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
                {"action": "FailJob", "onExitCodes": {"containerName": "job", "operator": "NotIn", "values": [0, 137, 143]}}
            ]))],
        },
        Case {
            name: "priority and preemption pick the matching PriorityClass",
            patch: json!({"spec": {"queue_config": {"priority_class": "high-9000", "can_preempt": true, "can_be_preempted": true}}}),
            shape: "cpu.small",
            expect: vec![
                ("/job/spec/template/spec/priorityClassName", json!("jobdeck-high-9000-preempting")),
                ("/job/spec/template/spec/preemptionPolicy", json!("PreemptLowerPriority")),
                ("/job/metadata/labels/jobdeck.dev~1priority", json!("high-9000")),
                ("/job/metadata/labels/jobdeck.dev~1preemptible", json!("true")),
            ],
        },
        Case {
            name: "GPU shape: cpu, memory and nvidia.com/gpu as requests = limits; default shm 16 GiB for 64 GiB",
            patch: json!({}),
            shape: "gpu.1xh100",
            expect: vec![
                ("/job/spec/template/spec/containers/0/resources/limits",
                    json!({"cpu": "8", "memory": "65536Mi", "nvidia.com/gpu": "1"})),
                ("/job/spec/template/spec/containers/0/resources/requests",
                    json!({"cpu": "8", "memory": "65536Mi", "nvidia.com/gpu": "1"})),
                ("/job/spec/template/spec/volumes/0",
                    json!({"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "16384Mi"}})),
                ("/job/spec/template/spec/containers/0/volumeMounts/0", json!({"name": "shm", "mountPath": "/dev/shm"})),
            ],
        },
        Case {
            name: "fractional CPU becomes millicores; explicit shared memory wins",
            patch: json!({"spec": {"shared_memory_size": 1024}}),
            shape: "cpu.half",
            expect: vec![
                ("/job/spec/template/spec/containers/0/resources/limits/cpu", json!("500m")),
                ("/job/spec/template/spec/volumes/0/emptyDir/sizeLimit", json!("1024Mi")),
            ],
        },
        Case {
            name: "shared memory defaults to half of a small shape's memory",
            patch: json!({}),
            shape: "cpu.small",
            expect: vec![("/job/spec/template/spec/volumes/0/emptyDir/sizeLimit", json!("2048Mi"))],
        },
        Case {
            name: "only a per-index retry limit: no overall backoffLimit",
            patch: json!({"spec": {"max_failure_retry": 1}}),
            shape: "cpu.small",
            expect: vec![
                ("/job/spec/backoffLimit", Value::Null),
                ("/job/spec/backoffLimitPerIndex", json!(1)),
            ],
        },
        Case {
            name: "one node group: node selector, tolerations and a node-group label",
            patch: json!({"spec": {"affinity": {"allowed_dedicated_node_groups": ["h100"]}}}),
            shape: "gpu.1xh100",
            expect: vec![
                ("/job/spec/template/spec/nodeSelector", json!({"nodepool": "h100"})),
                ("/job/spec/template/spec/affinity", Value::Null),
                ("/job/spec/template/spec/tolerations",
                    json!([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])),
                ("/job/spec/template/metadata/labels/jobdeck.dev~1node-group", json!("h100")),
            ],
        },
        Case {
            name: "one node group with nodes: selector plus hostname affinity",
            patch: json!({"spec": {"affinity": {"allowed_dedicated_node_groups": ["h100"],
                "allowed_nodes_in_node_group": ["gpu-node-1", "gpu-node-2"]}}}),
            shape: "gpu.1xh100",
            expect: vec![
                ("/job/spec/template/spec/nodeSelector", json!({"nodepool": "h100"})),
                ("/job/spec/template/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms",
                    json!([{"matchExpressions": [
                        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["gpu-node-1", "gpu-node-2"]}
                    ]}])),
            ],
        },
        Case {
            name: "image tag from image_tag",
            patch: json!({"spec": {"container": {"image": "nvcr.io/nvidia/pytorch", "image_tag": "24.01-py3"}}}),
            shape: "cpu.small",
            expect: vec![("/job/spec/template/spec/containers/0/image", json!("nvcr.io/nvidia/pytorch:24.01-py3"))],
        },
        Case {
            name: "a registry port is not a tag",
            patch: json!({"spec": {"container": {"image": "localhost:5000/team/img"}}}),
            shape: "cpu.small",
            expect: vec![("/job/spec/template/spec/containers/0/image", json!("localhost:5000/team/img:latest"))],
        },
        Case {
            name: "a digest is kept as it is",
            patch: json!({"spec": {"container": {"image": "repo/img@sha256:abc"}}}),
            shape: "cpu.small",
            expect: vec![("/job/spec/template/spec/containers/0/image", json!("repo/img@sha256:abc"))],
        },
        Case {
            name: "registry credentials become a dockerconfigjson Secret and an image pull secret",
            patch: json!({"spec": {
                "container": {"image": "registry.example.com/team/img:v1", "registry_username": "bob", "registry_password": PASSWORD},
                "image_pull_secrets": ["shared-pull"]}}),
            shape: "cpu.small",
            expect: vec![
                ("/registry_secret/metadata/name", json!("train-ab12c-registry")),
                ("/registry_secret/metadata/namespace", json!("ml")),
                ("/registry_secret/type", json!("kubernetes.io/dockerconfigjson")),
                ("/registry_secret/immutable", json!(true)),
                ("/job/spec/template/spec/imagePullSecrets", json!([{"name": "train-ab12c-registry"}, {"name": "shared-pull"}])),
            ],
        },
        Case {
            name: "literal and secret environment variables after the platform's",
            patch: json!({"spec": {"envs": [
                {"name": "EPOCHS", "value": "3"},
                {"name": "HF_TOKEN", "value_from": {"secret_name_ref": "hf-token"}}
            ]}}),
            shape: "cpu.small",
            expect: vec![
                ("/job/spec/template/spec/containers/0/env/6", json!({"name": "EPOCHS", "value": "3"})),
                ("/job/spec/template/spec/containers/0/env/7", json!({"name": "HF_TOKEN",
                    "valueFrom": {"secretKeyRef": {"name": "train-ab12c-env", "key": "HF_TOKEN", "optional": false}}})),
                ("/env_secret/metadata/name", json!("train-ab12c-env")),
                ("/env_secret/type", json!("Opaque")),
                ("/env_secret/stringData", json!({"HF_TOKEN": SECRET_VALUE})),
            ],
        },
        Case {
            name: "ports with protocols",
            patch: json!({"spec": {"container": {"ports": [
                {"container_port": 8080}, {"container_port": 9000, "protocol": "UDP", "name": "metrics"}
            ]}}}),
            shape: "cpu.small",
            expect: vec![("/job/spec/template/spec/containers/0/ports", json!([
                {"containerPort": 8080, "protocol": "TCP"},
                {"containerPort": 9000, "protocol": "UDP", "name": "metrics"}
            ]))],
        },
        Case {
            name: "mounts share one volume per source; path is a subPath",
            patch: json!({"spec": {"mounts": [
                {"from": "shared", "path": "/datasets/coco", "mount_path": "/data", "mount_options": {"read_only": true}},
                {"from": "shared", "path": "/", "mount_path": "/shared"}
            ]}}),
            shape: "cpu.small",
            expect: vec![
                ("/job/spec/template/spec/volumes/1", json!(
                    {"name": "storage-0", "persistentVolumeClaim": {"claimName": "team-data"}}
                )),
                ("/job/spec/template/spec/volumes/2", Value::Null),
                ("/job/spec/template/spec/containers/0/volumeMounts/1",
                    json!({"name": "storage-0", "mountPath": "/data", "subPath": "datasets/coco", "readOnly": true})),
                ("/job/spec/template/spec/containers/0/volumeMounts/2",
                    json!({"name": "storage-0", "mountPath": "/shared"})),
            ],
        },
        Case {
            name: "user labels and annotations reach the Job and its pods",
            patch: json!({"metadata": {"labels": {"team": "vision"}, "annotations": {"example.com/ticket": "ML-42"}}}),
            shape: "cpu.small",
            expect: vec![
                ("/job/metadata/labels/team", json!("vision")),
                ("/job/spec/template/metadata/labels/team", json!("vision")),
                ("/job/metadata/annotations/example.com~1ticket", json!("ML-42")),
                ("/job/spec/template/metadata/annotations/example.com~1ticket", json!("ML-42")),
            ],
        },
    ]
}

#[test]
fn rendered_objects_match_the_table() {
    let secrets = BTreeMap::from([("HF_TOKEN".to_string(), SECRET_VALUE.to_string())]);
    for case in cases() {
        let job = job_on(case.shape, &case.patch);
        let rendered =
            render_value(&job, SecretValues::Resolved(&secrets)).unwrap_or_else(|e| panic!("{}: {e:?}", case.name));
        for (pointer, expected) in &case.expect {
            let actual = rendered.pointer(pointer).cloned().unwrap_or(Value::Null);
            assert_eq!(&actual, expected, "case '{}', {pointer}", case.name);
        }
    }
}

#[test]
fn platform_environment_single_and_multi_worker() {
    let index_ref =
        json!({"fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}});
    let none = BTreeMap::new();

    let single =
        render_value(&job_on("cpu.small", &json!({"spec": {"completions": 5}})), SecretValues::Resolved(&none))
            .unwrap();
    let env = env_of(&single);
    assert_eq!(env["JOB_COMPLETIONS"], json!("5"));
    assert_eq!(env["LEPTON_JOB_NAME"], json!("train"));
    assert_eq!(env["LEPTON_RESOURCE_ACCELERATOR_TYPE"], json!(""));
    assert_eq!(env["LEPTON_JOB_WORKER_INDEX"], index_ref);
    assert_eq!(env["LEPTON_RESOURCE_ACCELERATOR_NUM"], json!("0"));
    assert_eq!(env["LEPTON_JOB_TOTAL_WORKERS"], json!("1"));
    for absent in ["MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "NODE_RANK", "JOB_COMPLETION_INDEX"] {
        assert!(!env.contains_key(absent), "{absent} must not be set for one worker");
    }

    let multi =
        render_value(&job_on("gpu.1xh100", &json!({"spec": {"workers": 3}})), SecretValues::Resolved(&none)).unwrap();
    let env = env_of(&multi);
    assert_eq!(env["JOB_COMPLETIONS"], json!("3"));
    assert_eq!(env["LEPTON_RESOURCE_ACCELERATOR_TYPE"], json!("H100"));
    assert_eq!(env["LEPTON_RESOURCE_ACCELERATOR_NUM"], json!("1"));
    assert_eq!(env["LEPTON_JOB_TOTAL_WORKERS"], json!("3"));
    assert_eq!(env["LEPTON_JOB_WORKER_PREFIX"], json!("train-ab12c"));
    assert_eq!(env["LEPTON_SUBDOMAIN"], json!("train-ab12c"));
    // `<job>-0` is the hostname Kubernetes gives index 0 of an Indexed Job;
    // the subdomain is the headless Service of the same name.
    assert_eq!(env["MASTER_ADDR"], json!("train-ab12c-0.train-ab12c"));
    assert_eq!(env["MASTER_PORT"], json!("29400"));
    assert_eq!(env["WORLD_SIZE"], json!("3"));
    assert_eq!(env["NODE_RANK"], index_ref);
    // Kubernetes injects JOB_COMPLETION_INDEX itself in Indexed mode.
    assert!(!env.contains_key("JOB_COMPLETION_INDEX"));
}

#[test]
fn registry_config_names_the_registry_and_encodes_the_credentials() {
    let job = job_with(&json!({"spec": {"container": {"image": "registry.example.com/team/img:v1",
        "registry_username": "bob", "registry_password": PASSWORD}}}));
    let none = BTreeMap::new();
    let rendered = render_value(&job, SecretValues::Resolved(&none)).unwrap();
    let config: Value = serde_json::from_str(
        rendered.pointer("/registry_secret/stringData/.dockerconfigjson").unwrap().as_str().unwrap(),
    )
    .unwrap();
    let entry = &config["auths"]["registry.example.com"];
    assert_eq!(entry["username"], json!("bob"));
    assert_eq!(entry["password"], json!(PASSWORD));
    use base64::Engine as _;
    let auth = base64::engine::general_purpose::STANDARD.decode(entry["auth"].as_str().unwrap()).unwrap();
    assert_eq!(String::from_utf8(auth).unwrap(), format!("bob:{PASSWORD}"));

    assert_eq!(registry_host("busybox"), DOCKER_HUB_AUTH_KEY);
    assert_eq!(registry_host("library/busybox"), DOCKER_HUB_AUTH_KEY);
    assert_eq!(registry_host("localhost/img"), "localhost");
    assert_eq!(registry_host("reg:5000/img"), "reg:5000");
}

#[test]
fn render_for_people_never_shows_secret_values_or_the_password() {
    let job = job_with(&json!({"spec": {
        "container": {"image": "registry.example.com/img", "registry_username": "bob", "registry_password": PASSWORD},
        "envs": [{"name": "HF_TOKEN", "value_from": {"secret_name_ref": "hf-token"}}]}}));
    let objects = render_job(&job, SecretValues::Redacted).unwrap();
    let yaml = objects.to_yaml().unwrap();
    assert!(!yaml.contains(PASSWORD), "{yaml}");
    assert!(yaml.contains("redacted"), "{yaml}");
    assert!(yaml.contains("kind: Secret"), "{yaml}");
    // A secret's value is not in the job spec at all, so redaction is the
    // only value the env Secret can have here.
    assert_eq!(objects.env_secret.unwrap().string_data.unwrap()["HF_TOKEN"], REDACTED);
}

#[test]
fn yaml_round_trips_into_kubernetes_types_in_creation_order() {
    let job = job_on(
        "gpu.1xh100",
        &json!({"spec": {"workers": 2, "envs": [{"name": "T", "value_from": {"secret_name_ref": "tok"}}]}}),
    );
    let objects = render_job(&job, SecretValues::Redacted).unwrap();
    let yaml = objects.to_yaml().unwrap();
    let documents: Vec<Value> = serde_saphyr::from_multiple(&yaml).unwrap();
    let kinds: Vec<&str> = documents.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["Secret", "Service", "NetworkPolicy", "Job"]);
    assert_eq!(documents[3]["apiVersion"], json!("batch/v1"));
    let parsed: k8s_openapi::api::batch::v1::Job = serde_json::from_value(documents[3].clone()).unwrap();
    assert_eq!(parsed, objects.job);
    let policy: k8s_openapi::api::networking::v1::NetworkPolicy = serde_json::from_value(documents[2].clone()).unwrap();
    assert_eq!(Some(policy), objects.network_policy);
}

#[test]
fn problems_name_the_job_field() {
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        (
            "unknown volume",
            json!({"spec": {"mounts": [{"from": "nope", "mount_path": "/data"}]}}),
            "cpu.small",
            "spec.mounts[0].from",
        ),
        (
            "escaping sub path",
            json!({"spec": {"mounts": [{"from": "shared", "path": "a/../../etc", "mount_path": "/data"}]}}),
            "cpu.small",
            "spec.mounts[0].path",
        ),
        ("no image", json!({"spec": {"container": {"image": ""}}}), "cpu.small", "spec.container.image"),
        ("a user by name", json!({"spec": {"container": {"user": "ubuntu"}}}), "cpu.small", "spec.container.user"),
        ("a group by name", json!({"spec": {"container": {"user": "1000:video"}}}), "cpu.small", "spec.container.user"),
        ("job id Kubernetes cannot name", json!({"metadata": {"id": "Train_1"}}), "cpu.small", "metadata.id"),
        (
            "user without password",
            json!({"spec": {"container": {"registry_username": "bob"}}}),
            "cpu.small",
            "spec.container.registry_password",
        ),
        (
            "password without user",
            json!({"spec": {"container": {"registry_password": "x"}}}),
            "cpu.small",
            "spec.container.registry_username",
        ),
        (
            "unknown secret",
            json!({"spec": {"envs": [{"name": "A", "value_from": {"secret_name_ref": "missing"}}]}}),
            "cpu.small",
            "spec.envs[0].value_from.secret_name_ref",
        ),
        (
            "variable name Kubernetes cannot key",
            json!({"spec": {"envs": [{"name": "A/B", "value_from": {"secret_name_ref": "hf-token"}}]}}),
            "cpu.small",
            "spec.envs[0].name",
        ),
        (
            "reserved label key",
            json!({"metadata": {"labels": {"jobdeck.dev/job-id": "other"}}}),
            "cpu.small",
            "metadata.labels[\"jobdeck.dev/job-id\"]",
        ),
        (
            "label value with a space",
            json!({"metadata": {"labels": {"team": "computer vision"}}}),
            "cpu.small",
            "metadata.labels[\"team\"]",
        ),
        (
            "bad annotation key",
            json!({"metadata": {"annotations": {"not a key": "x"}}}),
            "cpu.small",
            "metadata.annotations[\"not a key\"]",
        ),
        (
            "unknown priority",
            json!({"spec": {"queue_config": {"priority_class": "urgent"}}}),
            "cpu.small",
            "spec.queue_config.priority_class",
        ),
        (
            "port out of range",
            json!({"spec": {"container": {"ports": [{"container_port": 70000}]}}}),
            "cpu.small",
            "spec.container.ports[0].container_port",
        ),
        (
            "bad pull secret name",
            json!({"spec": {"image_pull_secrets": ["Not_Valid"]}}),
            "cpu.small",
            "spec.image_pull_secrets[0]",
        ),
    ];
    let resolved = BTreeMap::from([("A/B".to_string(), "v".to_string())]);
    for (name, patch, shape, path) in cases {
        let job = job_on(shape, &patch);
        let errors = render_value(&job, SecretValues::Resolved(&resolved))
            .expect_err(&format!("{name}: rendered although it should not"));
        assert!(errors.contains_key(path), "{name}: expected an error at {path}, got {errors:?}");
    }
}

#[test]
fn numbers_beyond_int32_are_refused_not_truncated() {
    // The contract's bounds keep every resolved number inside an int32, and
    // `ResolvedSpec` clamps what a job stored before them holds; the
    // conversion still refuses rather than truncates.
    let mut problems = Vec::new();
    let mut fail = |path: &str, message: String| problems.push((path.to_string(), message));
    assert_eq!(to_i32(100_000, "spec.completions", &mut fail), 100_000);
    assert_eq!(to_i32(3_000_000_000, "spec.completions", &mut fail), 0);
    assert_eq!(
        problems,
        [("spec.completions".to_string(), "3000000000 is larger than Kubernetes allows (2147483647)".to_string())]
    );
    let huge = job_on("cpu.small", &json!({"spec": {"completions": 3_000_000_000i64}}));
    let rendered = render_job(&huge, SecretValues::Resolved(&BTreeMap::new())).unwrap();
    assert_eq!(rendered.job.spec.unwrap().completions, Some(100_000));
}

#[test]
fn priority_classes_in_the_manifests_cover_every_rendered_name() {
    let manifest = include_str!("../../../../deploy/kubernetes/priority-classes.yaml");
    let documents: Vec<Value> = serde_saphyr::from_multiple(manifest).unwrap();
    let classes: BTreeMap<String, &Value> =
        documents.iter().map(|d| (d["metadata"]["name"].as_str().unwrap().to_string(), d)).collect();
    let settings = KubernetesSettings::default();
    for (rank, priority) in jobdeck_api::defaults::PRIORITY_CLASSES.iter().enumerate() {
        for can_preempt in [false, true] {
            let name = priority_class_name(&settings, priority, can_preempt);
            let class = classes.get(&name).unwrap_or_else(|| panic!("{name} is not in priority-classes.yaml"));
            assert_eq!(class["kind"], json!("PriorityClass"));
            assert_eq!(class["value"], json!((rank as i64 + 1) * 1000), "{name}");
            let policy = if can_preempt { "PreemptLowerPriority" } else { "Never" };
            assert_eq!(class["preemptionPolicy"], json!(policy), "{name}");
        }
    }
    assert_eq!(classes.len(), 18, "only Jobdeck's classes belong in the file");
}

/// A stored image pull secret the job names joins the job's own registry
/// Secret under its registry; a name Jobdeck does not store still names a
/// Secret of the namespace.
#[test]
fn stored_image_pull_secrets_join_the_jobs_registry_secret() {
    let job = job_with(&json!({"spec": {
        "container": {"image": "nvcr.io/nvidia/pytorch:25.08-py3"},
        "image_pull_secrets": ["tao-image-pull-secret", "cluster-pull"]}}));
    let ngc = jobdeck_core::executor::PullCredential {
        name: "tao-image-pull-secret".into(),
        registry_server: "https://nvcr.io".into(),
        username: "$oauthtoken".into(),
        password: "ngc-key".into(),
    };
    let values = BTreeMap::new();
    let objects = render_job_pulling_with(&job, SecretValues::Resolved(&values), std::slice::from_ref(&ngc)).unwrap();
    let rendered = serde_json::to_value(&objects).unwrap();
    assert_eq!(
        rendered.pointer("/job/spec/template/spec/imagePullSecrets").unwrap(),
        &json!([{"name": "train-ab12c-registry"}, {"name": "cluster-pull"}])
    );
    let config: Value = serde_json::from_str(
        rendered.pointer("/registry_secret/stringData/.dockerconfigjson").unwrap().as_str().unwrap(),
    )
    .unwrap();
    assert_eq!(config["auths"]["nvcr.io"]["username"], "$oauthtoken");
    assert_eq!(config["auths"]["nvcr.io"]["password"], "ngc-key");
    // Rendered for people, the password is not shown.
    let shown = render_job_pulling_with(&job, SecretValues::Redacted, &[ngc]).unwrap();
    assert!(!serde_json::to_string(&shown).unwrap().contains("ngc-key"));
}

/// A rerun of failed indexes: the Job runs as many indexes as the rerun,
/// and the shell before the command turns each pod's index into the job's,
/// run here by the real `/bin/sh` as a pod would run it, with words that a
/// second reading by a shell would change passed through as they are.
#[test]
fn chosen_indexes_become_a_job_of_as_many_whose_pods_map_their_index() {
    let none = BTreeMap::new();
    let job = job_with(&json!({"spec": {"completions": 8, "parallelism": 8, "completion_indexes": [2, 5, 7],
        "container": {"command": ["printf", "%s|"], "args": ["$HOME", "a b", "*"]}}}));
    let rendered = render_value(&job, SecretValues::Resolved(&none)).unwrap();
    assert_eq!(rendered.pointer("/job/spec/completions"), Some(&json!(3)));
    assert_eq!(rendered.pointer("/job/spec/parallelism"), Some(&json!(3)));
    let env = env_of(&rendered);
    assert_eq!((&env["JOBDECK_COMPLETION_INDEXES"], &env["JOB_COMPLETIONS"]), (&json!("2,5,7"), &json!("8")));
    let container = rendered.pointer("/job/spec/template/spec/containers/0").unwrap();
    let words = |key: &str| -> Vec<String> {
        container[key].as_array().unwrap().iter().map(|w| w.as_str().unwrap().to_string()).collect()
    };
    let (command, args) = (words("command"), words("args"));
    assert_eq!(&command[3..], ["jobdeck-index", "printf", "%s|"]);
    for (position, index) in [("0", "2"), ("1", "5"), ("2", "7")] {
        let out = std::process::Command::new(&command[0])
            .args(&command[1..])
            .args(&args)
            .env("JOB_COMPLETION_INDEX", position)
            .env("JOBDECK_COMPLETION_INDEXES", "2,5,7")
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "$HOME|a b|*|", "the words arrive as they were");
        let shown = std::process::Command::new(&command[0])
            .args([
                &command[1],
                &command[2],
                &command[3],
                "sh",
                "-c",
                "echo $JOB_COMPLETION_INDEX/$LEPTON_JOB_WORKER_INDEX",
            ])
            .env("JOB_COMPLETION_INDEX", position)
            .env("JOBDECK_COMPLETION_INDEXES", "2,5,7")
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&shown.stdout), format!("{index}/{index}\n"), "position {position}");
    }

    // Without a command the image's entrypoint is unknown to the mapping.
    let bare =
        job_with(&json!({"spec": {"completions": 8, "completion_indexes": [2], "container": {"command": null}}}));
    let errors = render_value(&bare, SecretValues::Resolved(&none)).unwrap_err();
    assert!(errors["spec.completion_indexes"][0].contains("needs spec.container.command"), "{errors:?}");
    // Every other job keeps its command as it is.
    let plain = render_value(&job_with(&json!({})), SecretValues::Resolved(&none)).unwrap();
    assert_eq!(plain.pointer("/job/spec/template/spec/containers/0/command/2"), Some(&json!("echo hi")));
}
