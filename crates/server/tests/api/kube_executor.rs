//! The kubernetes executor end to end through kube-rs, against a fake API
//! server on a loopback port (`kube_fake`): what it sends to create, stop
//! and delete a run, and how it reads pods, watches, logs and events back
//! into replicas, events, logs and outcomes in the real store.

use crate::common;
use crate::kube_fake;

use std::sync::Arc;
use std::time::Duration;

use jobdeck_api::JobSpec;
use jobdeck_core::config::{Config, MachineInfo};
use jobdeck_core::executor::{Executor, ExecutorHost, HostMessage, JobLaunch, Placement, RunOutcome, StopReason};
use jobdeck_core::spec::ResolvedSpec;
use jobdeck_executors::kubernetes::{KubernetesExecutor, KubernetesSettings};
use jobdeck_store::logs::LogStore;
use jobdeck_store::Store;
use jobdeck_store::{JobRow, JobRuntime, ReplicaRow};
use kube_fake::{FakeKube, Kind, NAMESPACE};
use serde_json::{json, Value};
use tokio::sync::mpsc;

const JOB_ID: &str = "train-ab12c";
const HF_TOKEN: &str = "hf_s3cr3t_value";
const REGISTRY_PASSWORD: &str = "nvapi-registry-password";

fn config_text(extra_settings: &str) -> String {
    format!(
        r#"
[executor]
kind = "kubernetes"

[executor.kubernetes]
namespace = "{NAMESPACE}"
{extra_settings}

[executor.kubernetes.node_groups.h100]
tolerations = [{{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }}]

[[node_groups]]
name = "h100"
cpu = 64
memory_mb = 1048576
gpus = 8
nodes = 2
node_names = ["gpu-node-1", "gpu-node-2"]
node_selector = {{ nodepool = "h100" }}

[[shapes]]
name = "gpu.1xh100"
cpu = 8
memory_mb = 65536
gpus = 1
accelerator_type = "H100"
"#
    )
}

struct Harness {
    fake: FakeKube,
    executor: KubernetesExecutor,
    store: Store,
    logs: LogStore,
    host: ExecutorHost,
    host_rx: mpsc::UnboundedReceiver<HostMessage>,
    config: Arc<Config>,
    _dir: tempfile::TempDir,
}

/// The machine the tests' configs are read for.
fn machine() -> MachineInfo {
    MachineInfo { hostname: "box".into(), cpus: 4.0, memory_mb: 16384, gpus: 0, gpu_product: None, gpu_memory_mb: None }
}

async fn harness(extra_settings: &str) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let machine = machine();
    let config = Arc::new(Config::from_toml(&config_text(extra_settings), dir.path(), &machine).unwrap());
    let store = Store::open(&dir.path().join("jobdeck.db")).unwrap();
    let logs = LogStore::new(dir.path());
    let (tx, host_rx) = mpsc::unbounded_channel();
    let host = ExecutorHost::new(store.clone(), logs.clone(), tx);
    let fake = FakeKube::start().await;
    let executor = executor_for(&fake, &config, host.clone());
    Harness { fake, executor, store, logs, host, host_rx, config, _dir: dir }
}

/// An executor whose kube-rs client talks to the fake, as a kubeconfig
/// with the fake's address as its cluster would make it.
fn executor_for(fake: &FakeKube, config: &Arc<Config>, host: ExecutorHost) -> KubernetesExecutor {
    let mut kube_config = kube::Config::new(fake.url().parse().unwrap());
    kube_config.default_namespace = "default".into();
    let settings = KubernetesSettings::from_table(&config.executor.kubernetes).unwrap();
    KubernetesExecutor::with_kube_config(kube_config, settings, config.clone(), host).unwrap()
}

fn spec(extra: Value) -> JobSpec {
    let mut value = json!({
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
        "completions": 10, "parallelism": 10, "backoff_limit": 20
    });
    kube_fake::merge_patch(&mut value, &extra);
    serde_json::from_value(value).unwrap()
}

impl Harness {
    /// Stores the job the way the API does, so the executor can read its
    /// metadata: the creator in its column, labels and annotations beside.
    async fn store_job(&self, spec: &JobSpec) {
        let metadata = json!({"labels": {"team": "vision"}, "annotations": {"example.com/ticket": "ML-42"}});
        self.store
            .insert_job(
                JobRow {
                    id: JOB_ID.into(),
                    name: "train".into(),
                    created_by: "alice".into(),
                    visibility: jobdeck_api::Visibility::Private,
                    created_at: 1,
                    metadata: serde_json::from_value(metadata.clone()).unwrap(),
                    spec: spec.clone(),
                    priority: 4000,
                    node_groups: vec!["h100".into()],
                    rerun_of: None,
                    runtime: JobRuntime { state: jobdeck_api::JobState::Starting, ..JobRuntime::default() },
                    logs: Default::default(),
                },
                Vec::new(),
            )
            .await
            .unwrap();
    }

    fn launch(&self, spec: &JobSpec, run: i64) -> JobLaunch {
        let resolved = ResolvedSpec::resolve(spec, &self.config).unwrap();
        let placement = Placement { node_group: "h100".into(), slots: Vec::new() };
        let mut launch = JobLaunch::new(JOB_ID, "train", run, spec, &resolved, placement);
        launch.resolved.log_collection = true;
        JobLaunch {
            env: vec![("HF_TOKEN".into(), HF_TOKEN.into()), ("EPOCHS".into(), "3".into())],
            master_port: 29400,
            ..launch
        }
    }

    async fn replicas(&self) -> Vec<ReplicaRow> {
        self.store.replicas_of(JOB_ID.to_string()).await.unwrap()
    }

    async fn replica(&self, index: i64, attempt: i64) -> Option<ReplicaRow> {
        self.replicas().await.into_iter().find(|r| r.completion_index == index && r.attempt == attempt)
    }

    /// Waits for the next run outcome the executor reports.
    async fn outcome(&mut self) -> (String, i64, RunOutcome) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let message = tokio::time::timeout_at(deadline, self.host_rx.recv())
                .await
                .expect("no outcome within 20 s")
                .expect("host channel closed");
            if let HostMessage::Outcome { job_id, run, outcome } = message {
                return (job_id, run, outcome);
            }
        }
    }

    /// Plays the Job controller creating the run's pods: the fixture pods
    /// (testdata/pods.json), with the uid of the Job that exists now.
    fn create_fixture_pods(&self, names: &[&str]) {
        let job_uid = self.fake.object(Kind::Job, JOB_ID).unwrap()["metadata"]["uid"].clone();
        for mut pod in fixture_pods() {
            let name = pod["metadata"]["name"].as_str().unwrap().to_string();
            if !names.is_empty() && !names.contains(&name.as_str()) {
                continue;
            }
            pod["metadata"]["ownerReferences"][0]["uid"] = job_uid.clone();
            self.fake.put(Kind::Pod, pod);
        }
    }
}

fn fixture_pods() -> Vec<Value> {
    let list: Value =
        serde_json::from_str(include_str!("../../../executors/src/kubernetes/testdata/pods.json")).unwrap();
    list["items"].as_array().unwrap().clone()
}

/// Polls a condition (an expression that may `.await`) until it holds,
/// for at most 20 s.
macro_rules! eventually {
    ($what:expr, $condition:expr) => {{
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            if $condition {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {}", $what);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }};
}

/// The watches one executor holds open: Jobs, pods, and the events of each.
const WATCHES_PER_EXECUTOR: usize = 4;

/// After `h.executor` was replaced by a new one: waits until the new one's
/// watches are open and the old one's closed (its controller ended), as
/// the fake server counts them. `opened` is the fake's count of watches
/// opened before the replacement.
async fn wait_for_takeover(fake: &FakeKube, opened: usize) {
    eventually!(
        "the old executor's watches closed and the new one's open",
        fake.watches_opened() >= opened + WATCHES_PER_EXECUTOR && fake.open_watches() == WATCHES_PER_EXECUTOR
    );
}

/// Now, as Kubernetes writes event times.
fn now_rfc3339() -> String {
    k8s_openapi::jiff::Timestamp::now().to_string()
}

const JOBS: &str = "/apis/batch/v1/namespaces/ml/jobs";
const SECRETS: &str = "/api/v1/namespaces/ml/secrets";
const SERVICES: &str = "/api/v1/namespaces/ml/services";
const NETWORK_POLICIES: &str = "/apis/networking.k8s.io/v1/namespaces/ml/networkpolicies";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_creates_the_job_suspended_then_its_owned_objects_then_resumes_it() {
    let h = harness("").await;
    let spec = spec(json!({"workers": 2}));
    h.store_job(&spec).await;
    h.executor.start(h.launch(&spec, 0)).await.unwrap();

    let writes = h.fake.writes();
    let summary: Vec<(String, String)> = writes.iter().map(|r| (r.method.clone(), r.path.clone())).collect();
    let job_path = format!("{JOBS}/{JOB_ID}");
    assert_eq!(
        summary,
        [
            ("POST".to_string(), JOBS.to_string()),
            ("POST".to_string(), SECRETS.to_string()),
            ("POST".to_string(), SECRETS.to_string()),
            ("POST".to_string(), SERVICES.to_string()),
            ("POST".to_string(), NETWORK_POLICIES.to_string()),
            ("PATCH".to_string(), job_path.clone()),
        ]
    );

    // The Job: created suspended, Indexed, with the job's metadata.
    let job = &writes[0].body;
    assert_eq!(job["metadata"]["name"], json!(JOB_ID));
    assert_eq!(job["metadata"]["namespace"], json!(NAMESPACE));
    assert_eq!(job["metadata"]["labels"]["team"], json!("vision"));
    assert_eq!(job["metadata"]["labels"]["jobdeck.dev/run"], json!("0"));
    assert_eq!(job["metadata"]["annotations"]["jobdeck.dev/created-by"], json!("alice"));
    assert_eq!(job["metadata"]["annotations"]["example.com/ticket"], json!("ML-42"));
    assert_eq!(job["spec"]["suspend"], json!(true));
    assert_eq!(job["spec"]["completionMode"], json!("Indexed"));
    assert_eq!(job["spec"]["completions"], json!(2));
    assert_eq!(job["spec"]["parallelism"], json!(2));
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["nodeSelector"], json!({"nodepool": "h100"}));
    assert_eq!(pod["subdomain"], json!(JOB_ID));
    assert_eq!(pod["containers"][0]["image"], json!("registry.example.com/team/train:v1"));
    assert_eq!(pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], json!("1"));

    // The Secrets, the Service and the NetworkPolicy belong to the Job the
    // fake created.
    let job_uid = h.fake.object(Kind::Job, JOB_ID).unwrap()["metadata"]["uid"].clone();
    for write in &writes[1..5] {
        let owner = &write.body["metadata"]["ownerReferences"][0];
        assert_eq!(owner["kind"], json!("Job"), "{}", write.body);
        assert_eq!(owner["name"], json!(JOB_ID));
        assert_eq!(owner["uid"], job_uid);
        assert_eq!(owner["controller"], json!(true));
    }
    let env_secret = &writes[1].body;
    assert_eq!(env_secret["metadata"]["name"], json!(format!("{JOB_ID}-env")));
    assert_eq!(env_secret["stringData"], json!({"HF_TOKEN": HF_TOKEN}), "only secret references go into the Secret");
    let registry = &writes[2].body;
    assert_eq!(registry["type"], json!("kubernetes.io/dockerconfigjson"));
    let docker_config: Value =
        serde_json::from_str(registry["stringData"][".dockerconfigjson"].as_str().unwrap()).unwrap();
    assert_eq!(docker_config["auths"]["registry.example.com"]["password"], json!(REGISTRY_PASSWORD));
    assert_eq!(writes[3].body["spec"]["clusterIP"], json!("None"));
    // The pods hear only each other and reach nothing of the metadata range.
    let policy = &writes[4].body["spec"];
    assert_eq!(policy["podSelector"]["matchLabels"]["jobdeck.dev/job-id"], json!(JOB_ID));
    assert_eq!(policy["ingress"][0]["from"][0]["podSelector"]["matchLabels"]["jobdeck.dev/job-id"], json!(JOB_ID));
    assert_eq!(policy["egress"][0]["to"][0]["ipBlock"], json!({"cidr": "0.0.0.0/0", "except": ["169.254.0.0/16"]}));

    // Then resumed with a merge patch.
    assert_eq!(writes[5].content_type.as_deref(), Some("application/merge-patch+json"));
    assert_eq!(writes[5].body, json!({"spec": {"suspend": false}}));
    assert_eq!(h.fake.object(Kind::Job, JOB_ID).unwrap()["spec"]["suspend"], json!(false));

    // The password and the secret value go nowhere but their Secrets.
    for write in writes.iter().filter(|w| w.path != SECRETS) {
        let text = write.body.to_string();
        assert!(!text.contains(REGISTRY_PASSWORD) && !text.contains(HF_TOKEN), "{text}");
    }
    let events = h.store.events_of(JOB_ID.to_string()).await.unwrap();
    assert!(events.iter().any(|e| e.reason == "KubernetesJobCreated" && e.message.contains("ml/train-ab12c")));
    assert!(events.iter().all(|e| !e.message.contains(REGISTRY_PASSWORD)));

    // Starting the same run again does nothing.
    h.executor.start(h.launch(&spec, 0)).await.unwrap();
    assert_eq!(h.fake.writes().len(), writes.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_become_replicas_with_readiness_issues_logs_and_events() {
    let h = harness("").await;
    let spec = spec(json!({}));
    h.store_job(&spec).await;
    h.fake.set_log(
        "train-ab12c-2-b5t8w",
        "2026-01-10T10:00:05.000000001Z loading data\n2026-01-10T10:00:06.5Z epoch 1 \x1b[32mloss 0.52\x1b[0m\n2026-01-10T10:00:07Z <b>not html</b>\n",
    );
    h.fake.set_log("train-ab12c-4-z8x1c", "2026-01-10T10:02:29Z allocating 80 GiB\n");
    h.executor.start(h.launch(&spec, 0)).await.unwrap();
    h.create_fixture_pods(&[]);

    eventually!("all ten pods as replicas", h.replicas().await.len() == 10);
    struct Row {
        index: i64,
        attempt: i64,
        phase: &'static str,
        readiness: Option<(&'static str, &'static str)>,
        reason: Option<&'static str>,
        exit_code: Option<i64>,
        node: Option<&'static str>,
    }
    let rows = [
        Row {
            index: 0,
            attempt: 0,
            phase: "pending",
            readiness: Some(("NoCapacity", "Insufficient nvidia.com/gpu")),
            reason: None,
            exit_code: None,
            node: None,
        },
        Row {
            index: 1,
            attempt: 0,
            phase: "pending",
            readiness: Some(("Failed", "cannot pull the image (ImagePullBackOff)")),
            reason: None,
            exit_code: None,
            node: Some("gpu-node-1"),
        },
        Row {
            index: 2,
            attempt: 0,
            phase: "running",
            readiness: None,
            reason: None,
            exit_code: None,
            node: Some("gpu-node-2"),
        },
        Row {
            index: 3,
            attempt: 0,
            phase: "succeeded",
            readiness: None,
            reason: Some("Completed"),
            exit_code: Some(0),
            node: Some("gpu-node-2"),
        },
        Row {
            index: 4,
            attempt: 0,
            phase: "failed",
            readiness: None,
            reason: Some("OOMKilled"),
            exit_code: Some(137),
            node: Some("gpu-node-3"),
        },
        Row {
            index: 5,
            attempt: 0,
            phase: "failed",
            readiness: None,
            reason: Some("Evicted"),
            exit_code: Some(137),
            node: Some("gpu-node-3"),
        },
        Row {
            index: 6,
            attempt: 0,
            phase: "failed",
            readiness: None,
            reason: Some("Error"),
            exit_code: Some(1),
            node: Some("gpu-node-1"),
        },
        Row {
            index: 6,
            attempt: 1,
            phase: "pending",
            readiness: Some(("ConfigError", "CreateContainerConfigError")),
            reason: None,
            exit_code: None,
            node: Some("gpu-node-1"),
        },
        Row {
            index: 7,
            attempt: 0,
            phase: "pending",
            readiness: Some(("InProgress", "ContainerCreating")),
            reason: None,
            exit_code: None,
            node: Some("gpu-node-2"),
        },
        Row {
            index: 8,
            attempt: 0,
            phase: "failed",
            readiness: None,
            reason: Some("Preempted"),
            exit_code: Some(143),
            node: Some("gpu-node-2"),
        },
    ];
    for row in rows {
        let r = h
            .replica(row.index, row.attempt)
            .await
            .unwrap_or_else(|| panic!("no replica {}-{}", row.index, row.attempt));
        let at = format!("replica {}-{}", row.index, row.attempt);
        assert_eq!(r.run, 0, "{at}");
        assert_eq!(r.phase.as_str(), row.phase, "{at}");
        match row.readiness {
            Some((reason, message)) => {
                assert_eq!(r.readiness_reason.as_deref(), Some(reason), "{at}");
                assert!(r.readiness_message.as_deref().unwrap().contains(message), "{at}: {:?}", r.readiness_message);
            }
            None => assert_eq!(r.readiness_reason, None, "{at}"),
        }
        assert_eq!(r.reason.as_ref().map(jobdeck_api::EndReason::as_str), row.reason, "{at}");
        assert_eq!(r.exit_code, row.exit_code, "{at}");
        assert_eq!(r.node.as_deref(), row.node, "{at}");
        if row.node.is_some() {
            assert_eq!(r.node_group.as_deref(), Some("h100"), "{at}");
        }
        let state: Value = serde_json::from_str(r.executor_state.as_deref().unwrap()).unwrap();
        assert!(state["pod"].as_str().unwrap().starts_with(&format!("{JOB_ID}-{}-", row.index)), "{at}");
    }

    // The running pod's log is copied line by line with the kubelet's times;
    // colours and markup stay as they are.
    eventually!("the running replica's log", {
        h.logs.open(JOB_ID, 2, 0).unwrap().is_some_and(|mut r| r.line_count().unwrap() == 3)
    });
    let mut reader = h.logs.open(JOB_ID, 2, 0).unwrap().unwrap();
    let lines = reader.lines(1, 3).unwrap();
    assert_eq!(lines[0].text, "loading data");
    assert_eq!(lines[1].text, "epoch 1 \x1b[32mloss 0.52\x1b[0m");
    assert_eq!(lines[2].text, "<b>not html</b>");
    assert_eq!(lines[1].time, 1_768_039_206_500);
    // A pod that already ended still has its log copied.
    eventually!("the OOM-killed replica's log", {
        h.logs.open(JOB_ID, 4, 0).unwrap().is_some_and(|mut r| r.line_count().unwrap() == 1)
    });
    let log_requests: Vec<_> =
        h.fake.requests().into_iter().filter(|r| r.path.ends_with("/train-ab12c-2-b5t8w/log")).collect();
    let query = &log_requests[0].query;
    assert_eq!(
        (
            query.get("container").map(String::as_str),
            query.get("follow").map(String::as_str),
            query.get("timestamps").map(String::as_str)
        ),
        (Some("job"), Some("true"), Some("true"))
    );
    assert_eq!(query.get("sinceTime"), None, "a first copy reads the log from its start");
    // Pods that have not started have no log to ask for.
    for waiting in ["train-ab12c-0-x7k2p", "train-ab12c-1-m9q4z", "train-ab12c-7-h6j3k"] {
        assert!(h.fake.log_requests(waiting).is_empty(), "{waiting}");
    }

    // The copy follows the running container: a line it writes later is
    // copied (and shown) while the stream stays open.
    h.fake.append_log("train-ab12c-2-b5t8w", "2026-01-10T10:03:00.000000002Z epoch 2 loss 0.31\n");
    eventually!("the followed line", {
        h.logs.open(JOB_ID, 2, 0).unwrap().is_some_and(|mut r| r.line_count().unwrap() == 4)
    });
    assert_eq!(h.fake.log_requests("train-ab12c-2-b5t8w").len(), 1, "one stream, kept open");
    let logs_copied = |r: &ReplicaRow| {
        serde_json::from_str::<Value>(r.executor_state.as_deref().unwrap()).unwrap()["logs_copied"] == json!(true)
    };
    assert!(!logs_copied(&h.replica(2, 0).await.unwrap()), "the copy of a running container is not complete");

    // Watches carry changes: the running pod finishes.
    h.fake.patch(
        Kind::Pod,
        "train-ab12c-2-b5t8w",
        json!({"status": {"phase": "Succeeded", "containerStatuses": [{
            "name": "job", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                "startedAt": "2026-01-10T10:00:05Z", "finishedAt": "2026-01-10T10:09:00Z"}}}]}}),
    );
    eventually!("the finished replica", h.replica(2, 0).await.unwrap().phase == jobdeck_api::ReplicaPhase::Succeeded);
    assert_eq!(h.replica(2, 0).await.unwrap().end_time, Some(1_768_039_740_000));
    // The container ended, so did its followed log: once copied, the
    // replica records it so a restart does not copy again.
    eventually!("the copy recorded in the replica", logs_copied(&h.replica(2, 0).await.unwrap()));
    assert_eq!(h.logs.open(JOB_ID, 2, 0).unwrap().unwrap().line_count().unwrap(), 4);

    // While the kubelet pulls a pending pod's image (a `Pulling` event, no
    // `Pulled` yet), its replica says so in Lepton's words.
    let pull_event = |reason: &str, n: u32| {
        json!({"metadata": {"name": format!("train-ab12c-7-h6j3k.{reason}")},
               "involvedObject": {"kind": "Pod", "name": "train-ab12c-7-h6j3k", "namespace": "ml", "uid": "aaaaaaaa-0000-4000-8000-0000000000a8"},
               "reason": reason, "type": "Normal", "count": n,
               "message": format!("{reason} image \"nvcr.io/nvidia/pytorch:25.08-py3\""),
               "lastTimestamp": now_rfc3339()})
    };
    h.fake.put(Kind::Event, pull_event("Pulling", 1));
    eventually!("the pulling replica", {
        let r = h.replica(7, 0).await.unwrap();
        r.readiness_reason.as_deref() == Some("InProgress") && r.readiness_message.as_deref() == Some("Pulling image")
    });
    h.fake.put(Kind::Event, pull_event("Pulled", 1));
    eventually!("the pulled replica back to its pod's word", {
        let r = h.replica(7, 0).await.unwrap();
        r.readiness_message.as_deref().is_some_and(|m| m.contains("ContainerCreating"))
    });

    // Kubernetes events of the Job and its pods become the job's events,
    // pointing at replicas; events of other objects do not.
    h.fake.put(
        Kind::Event,
        json!({"metadata": {"name": "train-ab12c-1-m9q4z.1"},
               "involvedObject": {"kind": "Pod", "name": "train-ab12c-1-m9q4z", "namespace": "ml", "uid": "aaaaaaaa-0000-4000-8000-0000000000a1"},
               "reason": "Failed", "type": "Warning", "count": 3,
               "message": "Failed to pull image \"registry.example.com/team/train:v1\": 401 Unauthorized",
               "firstTimestamp": now_rfc3339(), "lastTimestamp": now_rfc3339()}),
    );
    h.fake.put(
        Kind::Event,
        json!({"metadata": {"name": "train-ab12c.1"},
               "involvedObject": {"kind": "Job", "name": "train-ab12c", "namespace": "ml"},
               "reason": "SuccessfulCreate", "type": "Normal", "count": 1,
               "message": "Created pod: train-ab12c-0-x7k2p",
               "lastTimestamp": now_rfc3339()}),
    );
    h.fake.put(
        Kind::Event,
        json!({"metadata": {"name": "other.1"},
               "involvedObject": {"kind": "Pod", "name": "someone-else-0-abcde", "namespace": "ml"},
               "reason": "Killing", "type": "Normal", "count": 1, "message": "not ours",
               "lastTimestamp": now_rfc3339()}),
    );
    // The controller records a repeated event once per repetition, and the
    // store folds them: the pull's event is whole once all three are in.
    eventually!("the Kubernetes events, the pull's with its 3 repetitions", {
        let events = h.store.events_of(JOB_ID.to_string()).await.unwrap();
        events.iter().any(|e| e.reason == "Failed" && e.count == 3)
            && events.iter().any(|e| e.reason == "SuccessfulCreate")
    });
    let events = h.store.events_of(JOB_ID.to_string()).await.unwrap();
    let pull = events.iter().find(|e| e.reason == "Failed").unwrap();
    assert_eq!(
        (pull.kind.as_str(), pull.regarding_kind.as_str(), pull.regarding_name.as_str()),
        ("Warning", "Replica", "train-ab12c-1-0")
    );
    assert_eq!(pull.count, 3, "a repeated Kubernetes event keeps its count");
    assert!(pull.message.contains("401 Unauthorized"));
    let created = events.iter().find(|e| e.reason == "SuccessfulCreate").unwrap();
    assert_eq!((created.regarding_kind.as_str(), created.regarding_name.as_str()), ("Job", JOB_ID));
    assert!(events.iter().all(|e| e.message != "not ours"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_suspends_the_job_and_ends_its_replicas_as_stopped() {
    let mut h = harness("").await;
    let spec = spec(json!({}));
    h.store_job(&spec).await;
    h.executor.start(h.launch(&spec, 0)).await.unwrap();
    h.create_fixture_pods(&["train-ab12c-2-b5t8w", "train-ab12c-3-q2w6e", "train-ab12c-7-h6j3k"]);
    eventually!("three replicas", h.replicas().await.len() == 3);

    h.executor.stop(JOB_ID, 0, StopReason::Preempted).await.unwrap();
    let last = h.fake.writes().last().cloned().unwrap();
    assert_eq!((last.method.as_str(), last.path.as_str()), ("PATCH", format!("{JOBS}/{JOB_ID}").as_str()));
    assert_eq!(last.body, json!({"spec": {"suspend": true}}));

    // The Job controller deletes the active pods and reports the Job
    // suspended.
    h.fake.patch(Kind::Pod, "train-ab12c-2-b5t8w", json!({"metadata": {"deletionTimestamp": "2026-01-10T10:05:00Z"}}));
    h.fake.delete(Kind::Pod, "train-ab12c-2-b5t8w");
    h.fake.delete(Kind::Pod, "train-ab12c-7-h6j3k");
    h.fake.patch(
        Kind::Job,
        JOB_ID,
        json!({"status": {"active": 0, "conditions": [{"type": "Suspended", "status": "True", "reason": "JobSuspended"}]}}),
    );
    let (job_id, run, outcome) = h.outcome().await;
    assert_eq!((job_id.as_str(), run, outcome), (JOB_ID, 0, RunOutcome::Stopped));
    let running = h.replica(2, 0).await.unwrap();
    assert_eq!(
        (running.phase.as_str(), running.reason.as_ref().map(jobdeck_api::EndReason::as_str)),
        ("failed", Some("Preempted"))
    );
    assert!(running.end_time.is_some());
    let pending = h.replica(7, 0).await.unwrap();
    assert_eq!(
        (pending.phase.as_str(), pending.reason.as_ref().map(jobdeck_api::EndReason::as_str)),
        ("failed", Some("Preempted"))
    );
    assert_eq!(pending.readiness_reason, None);
    let done = h.replica(3, 0).await.unwrap();
    assert_eq!(
        (done.phase.as_str(), done.reason.as_ref().map(jobdeck_api::EndReason::as_str)),
        ("succeeded", Some("Completed")),
        "finished replicas keep their end"
    );

    // Stopping a run the executor does not drive reports it stopped at once.
    h.executor.stop("unknown-job", 3, StopReason::Stopped).await.unwrap();
    let (job_id, run, outcome) = h.outcome().await;
    assert_eq!((job_id.as_str(), run, outcome), ("unknown-job", 3, RunOutcome::Stopped));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_job_is_explained_by_its_first_failed_replica() {
    let mut h = harness("").await;
    let spec = spec(json!({}));
    h.store_job(&spec).await;
    h.executor.start(h.launch(&spec, 0)).await.unwrap();
    h.create_fixture_pods(&["train-ab12c-4-z8x1c", "train-ab12c-6-y3u5i"]);
    eventually!("two replicas", h.replicas().await.len() == 2);
    h.fake.patch(
        Kind::Job,
        JOB_ID,
        json!({"status": {"failed": 2, "conditions": [{"type": "Failed", "status": "True",
            "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"}]}}),
    );
    let (_, _, outcome) = h.outcome().await;
    let RunOutcome::Failed { reason, message, program_error } = outcome else {
        panic!("expected a failure, got {outcome:?}");
    };
    assert_eq!(reason, jobdeck_api::EndReason::BackoffLimitExceeded);
    // Exit code 1 at 10:01:00 came before the OOM kill at 10:02:30.
    assert!(program_error);
    assert!(message.contains("first failure: replica 6 (Error, exit code 1)"), "{message}");
    let events = h.store.events_of(JOB_ID.to_string()).await.unwrap();
    let failure = events.iter().find(|e| e.reason == "BackoffLimitExceeded").unwrap();
    assert_eq!(failure.kind, jobdeck_api::EventType::Warning);
    assert!(failure.message.contains("ERR_PROGRAM"), "{}", failure.message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_program_error_rule_and_the_deadline_end_a_run_with_their_reasons() {
    for (condition_reason, expected_reason, program_error) in
        [("PodFailurePolicy", "ProgramError", true), ("DeadlineExceeded", "DeadlineExceeded", false)]
    {
        let mut h = harness("").await;
        let spec = spec(json!({"disable_retry_on_program_error": true, "active_deadline_seconds": 600}));
        h.store_job(&spec).await;
        h.executor.start(h.launch(&spec, 0)).await.unwrap();
        let rules = &h.fake.writes()[0].body["spec"]["podFailurePolicy"]["rules"];
        assert_eq!(rules[1]["action"], json!("FailJob"));
        assert_eq!(h.fake.writes()[0].body["spec"]["activeDeadlineSeconds"], json!(600));
        h.create_fixture_pods(&["train-ab12c-6-y3u5i"]);
        eventually!("the replica", h.replicas().await.len() == 1);
        h.fake.patch(
            Kind::Job,
            JOB_ID,
            json!({"status": {"conditions": [{"type": "Failed", "status": "True", "reason": condition_reason, "message": "x"}]}}),
        );
        let (_, _, outcome) = h.outcome().await;
        match outcome {
            RunOutcome::Failed { reason, program_error: p, .. } => {
                assert_eq!((reason.as_str(), p), (expected_reason, program_error), "{condition_reason}");
            }
            other => panic!("{condition_reason}: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_that_can_never_pull_its_image_fails_the_run() {
    let mut h = harness("stuck_pod_timeout_seconds = 1").await;
    let spec = spec(json!({}));
    h.store_job(&spec).await;
    h.executor.start(h.launch(&spec, 0)).await.unwrap();
    h.create_fixture_pods(&["train-ab12c-1-m9q4z", "train-ab12c-2-b5t8w"]);
    eventually!("two replicas", h.replicas().await.len() == 2);
    eventually!("the suspension", {
        h.fake.writes().iter().any(|w| w.method == "PATCH" && w.body == json!({"spec": {"suspend": true}}))
    });
    // The Job controller removes the pods of the suspended Job.
    h.fake.delete(Kind::Pod, "train-ab12c-1-m9q4z");
    h.fake.delete(Kind::Pod, "train-ab12c-2-b5t8w");
    h.fake.patch(
        Kind::Job,
        JOB_ID,
        json!({"status": {"active": 0, "conditions": [{"type": "Suspended", "status": "True"}]}}),
    );
    let (_, _, outcome) = h.outcome().await;
    let RunOutcome::Failed { reason, message, program_error } = outcome else {
        panic!("expected a failure, got {outcome:?}");
    };
    assert_eq!((reason.as_str(), program_error), ("ImagePullFailed", false));
    assert!(message.contains("401 Unauthorized"), "{message}");
    let events = h.store.events_of(JOB_ID.to_string()).await.unwrap();
    assert!(events.iter().any(|e| e.reason == "ImagePullFailed" && e.message.contains("ERR_IMAGE_PULL")));
    let stuck = h.replica(1, 0).await.unwrap();
    assert_eq!(
        (stuck.phase.as_str(), stuck.reason.as_ref().map(jobdeck_api::EndReason::as_str)),
        ("failed", Some("ImagePullFailed"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_run_replaces_the_job_of_the_last_and_forget_deletes_it() {
    let mut h = harness("").await;
    let spec = spec(json!({}));
    h.store_job(&spec).await;
    h.executor.start(h.launch(&spec, 0)).await.unwrap();
    h.executor.stop(JOB_ID, 0, StopReason::Stopped).await.unwrap();
    h.fake.patch(Kind::Job, JOB_ID, json!({"status": {"conditions": [{"type": "Suspended", "status": "True"}]}}));
    assert_eq!(h.outcome().await.2, RunOutcome::Stopped);
    let old_uid = h.fake.object(Kind::Job, JOB_ID).unwrap()["metadata"]["uid"].clone();
    let before = h.fake.writes().len();

    let mut next = h.launch(&spec, 1);
    next.first_attempt = 1;
    h.executor.start(next).await.unwrap();
    let writes: Vec<(String, String)> =
        h.fake.writes()[before..].iter().map(|w| (w.method.clone(), w.path.clone())).collect();
    let job_path = format!("{JOBS}/{JOB_ID}");
    assert_eq!(writes[0], ("POST".to_string(), JOBS.to_string()), "the name is taken: 409");
    assert_eq!(writes[1], ("DELETE".to_string(), job_path.clone()));
    assert_eq!(writes[2], ("POST".to_string(), JOBS.to_string()));
    assert_eq!(writes.last().unwrap(), &("PATCH".to_string(), job_path.clone()));
    let job = h.fake.object(Kind::Job, JOB_ID).unwrap();
    assert_ne!(job["metadata"]["uid"], old_uid);
    assert_eq!(job["metadata"]["labels"]["jobdeck.dev/run"], json!("1"));

    // The new run's pods get attempt numbers from first_attempt on.
    let mut pod = fixture_pods()[2].clone();
    pod["metadata"]["labels"]["jobdeck.dev/run"] = json!("1");
    pod["metadata"]["uid"] = json!("bbbbbbbb-0000-4000-8000-000000000001");
    h.fake.put(Kind::Pod, pod);
    eventually!("the new run's replica", h.replica(2, 1).await.is_some_and(|r| r.run == 1));

    h.executor.forget(JOB_ID).await.unwrap();
    let last = h.fake.writes().last().cloned().unwrap();
    assert_eq!((last.method.as_str(), last.path.as_str()), ("DELETE", job_path.as_str()));
    assert_eq!(last.body["propagationPolicy"], json!("Background"));
    assert!(h.fake.object(Kind::Job, JOB_ID).is_none());
    // Forgetting a job that is gone already is fine.
    h.executor.forget(JOB_ID).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_picks_up_its_runs_where_they_are() {
    let mut h = harness("").await;
    let spec = spec(json!({}));
    h.store_job(&spec).await;
    h.executor.start(h.launch(&spec, 0)).await.unwrap();
    h.create_fixture_pods(&["train-ab12c-6-y3u5i", "train-ab12c-6-p0o9l", "train-ab12c-2-b5t8w"]);
    eventually!("three replicas", h.replicas().await.len() == 3);

    // The server goes away: its executor stops; the cluster carries on.
    let writes_before = h.fake.writes().len();
    let opened = h.fake.watches_opened();
    drop(std::mem::replace(&mut h.executor, executor_for(&h.fake, &h.config, h.host.clone())));
    // The old controller is gone before the cluster moves on.
    wait_for_takeover(&h.fake, opened).await;
    h.fake.patch(
        Kind::Pod,
        "train-ab12c-6-p0o9l",
        json!({"status": {"phase": "Running", "containerStatuses": [{
            "name": "job", "image": "i", "imageID": "", "ready": true, "restartCount": 0,
            "state": {"running": {"startedAt": "2026-01-10T10:01:10Z"}}}]}}),
    );
    h.fake.put(
        Kind::Event,
        json!({"metadata": {"name": "train-ab12c-6-p0o9l.2"},
               "involvedObject": {"kind": "Pod", "name": "train-ab12c-6-p0o9l", "namespace": "ml", "uid": "aaaaaaaa-0000-4000-8000-0000000000a7"},
               "reason": "Started", "type": "Normal", "count": 1, "message": "Started container job",
               "lastTimestamp": now_rfc3339()}),
    );
    // The new executor's watchers have seen the cluster before the run is
    // handed back to it, as after a real restart.
    let version = h.fake.version();
    eventually!(
        "the new executor's watches past the cluster's changes",
        [Kind::Job, Kind::Pod, Kind::Event].into_iter().all(|kind| h.fake.watched_past(kind, version))
    );
    h.executor.recover(vec![h.launch(&spec, 0)]).await.unwrap();
    eventually!("the event that happened while the server was away", {
        let events = h.store.events_of(JOB_ID.to_string()).await.unwrap();
        events.iter().any(|e| e.reason == "Started" && e.regarding_name == "train-ab12c-6-1")
    });
    eventually!(
        "the retry seen running after the restart",
        h.replica(6, 1).await.unwrap().phase == jobdeck_api::ReplicaPhase::Running
    );
    let new_writes: Vec<_> = h.fake.writes()[writes_before..].to_vec();
    assert!(new_writes.iter().all(|w| w.method != "POST"), "nothing is created again: {new_writes:?}");
    assert_eq!(h.replicas().await.len(), 3, "attempt numbers are kept, not handed out again");

    h.fake.patch(
        Kind::Job,
        JOB_ID,
        json!({"status": {"succeeded": 10, "conditions": [{"type": "Complete", "status": "True"}]}}),
    );
    let (_, run, outcome) = h.outcome().await;
    assert_eq!((run, outcome), (0, RunOutcome::Succeeded));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovering_a_run_whose_job_was_never_created_creates_it() {
    let h = harness("").await;
    let spec = spec(json!({}));
    h.store_job(&spec).await;
    h.executor.recover(vec![h.launch(&spec, 0)]).await.unwrap();
    assert!(h.fake.object(Kind::Job, JOB_ID).is_some());
    assert_eq!(h.fake.object(Kind::Job, JOB_ID).unwrap()["spec"]["suspend"], json!(false));
}

/// What RBAC calls a request: (API group, resource, verb).
fn rbac_request(r: &kube_fake::Recorded) -> (String, String, String) {
    // /apis/<group>/<version>/… or the core group's /api/v1/….
    let group = r.path.strip_prefix("/apis/").and_then(|rest| rest.split('/').next()).unwrap_or("");
    let parts: Vec<&str> = r.path.split('/').filter(|p| !p.is_empty()).collect();
    // /api/v1/namespaces/ml/<resource>[/<name>[/<subresource>]] or
    // /apis/batch/v1/namespaces/ml/<resource>[/<name>]
    let at = parts.iter().position(|p| *p == "namespaces").unwrap() + 2;
    let mut resource = parts[at].to_string();
    let named = parts.len() > at + 1;
    if let Some(sub) = parts.get(at + 2) {
        resource = format!("{resource}/{sub}");
    }
    let verb = match (r.method.as_str(), named) {
        ("GET", true) => "get",
        ("GET", false) if r.query.get("watch").map(String::as_str) == Some("true") => "watch",
        ("GET", false) => "list",
        ("POST", _) => "create",
        ("PATCH", _) => "patch",
        ("DELETE", _) => "delete",
        (other, _) => panic!("unexpected method {other}"),
    };
    (group.to_string(), resource, verb.to_string())
}

/// The Role of deploy/kubernetes/rbac.yaml as (group, resource, verb).
fn role_rules() -> std::collections::BTreeSet<(String, String, String)> {
    let documents: Vec<Value> =
        serde_saphyr::from_multiple(include_str!("../../../../deploy/kubernetes/rbac.yaml")).unwrap();
    let role = documents.iter().find(|d| d["kind"] == json!("Role")).unwrap();
    let mut allowed = std::collections::BTreeSet::new();
    for rule in role["rules"].as_array().unwrap() {
        for group in rule["apiGroups"].as_array().unwrap() {
            for resource in rule["resources"].as_array().unwrap() {
                for verb in rule["verbs"].as_array().unwrap() {
                    allowed.insert((
                        group.as_str().unwrap().to_string(),
                        resource.as_str().unwrap().to_string(),
                        verb.as_str().unwrap().to_string(),
                    ));
                }
            }
        }
    }
    allowed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_role_allows_exactly_what_the_executor_does() {
    let mut h = harness("metrics_interval_seconds = 1").await;
    let spec = spec(json!({"workers": 2}));
    h.store_job(&spec).await;
    // Objects a deleted Job of the same name left behind, owned by it.
    let stale_owner = json!([{"apiVersion": "batch/v1", "kind": "Job", "name": JOB_ID, "uid": "deleted-job-uid", "controller": true}]);
    h.fake.put(
        Kind::Secret,
        json!({"metadata": {"name": "train-ab12c-env", "ownerReferences": stale_owner}, "type": "Opaque"}),
    );
    h.fake.put(
        Kind::Service,
        json!({"metadata": {"name": JOB_ID, "ownerReferences": stale_owner}, "spec": {"clusterIP": "None"}}),
    );
    h.fake.put(
        Kind::NetworkPolicy,
        json!({"metadata": {"name": "train-ab12c-network", "ownerReferences": stale_owner}, "spec": {}}),
    );
    h.fake.set_log("train-ab12c-3-q2w6e", "2026-01-10T10:04:59Z done\n");

    // A whole life: start, pods, logs, events, stop, a new run, a restart, deletion.
    h.executor.start(h.launch(&spec, 0)).await.unwrap();
    let secret = h.fake.object(Kind::Secret, "train-ab12c-env").unwrap();
    assert_ne!(
        secret["metadata"]["ownerReferences"][0]["uid"],
        json!("deleted-job-uid"),
        "the stale Secret was replaced"
    );
    h.create_fixture_pods(&["train-ab12c-3-q2w6e", "train-ab12c-2-b5t8w"]);
    eventually!("the log copy", h.logs.open(JOB_ID, 3, 0).unwrap().is_some());
    eventually!(
        "a read of the running pod's metrics",
        h.fake.requests().iter().any(|r| r.path.contains("metrics.k8s.io"))
    );
    h.executor.stop(JOB_ID, 0, StopReason::Stopped).await.unwrap();
    h.fake.patch(Kind::Job, JOB_ID, json!({"status": {"conditions": [{"type": "Suspended", "status": "True"}]}}));
    assert_eq!(h.outcome().await.2, RunOutcome::Stopped);
    h.executor.start(h.launch(&spec, 1)).await.unwrap();
    h.executor.recover(vec![h.launch(&spec, 1)]).await.unwrap();
    h.executor.forget(JOB_ID).await.unwrap();

    let allowed = role_rules();
    let used: std::collections::BTreeSet<_> = h.fake.requests().iter().map(rbac_request).collect();
    let forbidden: Vec<_> = used.difference(&allowed).collect();
    assert!(forbidden.is_empty(), "the executor sends requests the Role does not allow: {forbidden:?}");
    let unused: Vec<_> = allowed.difference(&used).collect();
    assert!(unused.is_empty(), "the Role allows more than the executor uses: {unused:?}");
}

/// A kubeconfig file naming the fake as its cluster, as `kubectl` writes one.
fn write_kubeconfig(dir: &std::path::Path, server: &str) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {server}\n\
             contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: jobdeck\n    namespace: {NAMESPACE}\n\
             - name: elsewhere\n  context:\n    cluster: fake\n    user: jobdeck\n    namespace: other\n\
             current-context: elsewhere\nusers:\n- name: jobdeck\n  user:\n    token: not-a-real-token\n"
        ),
    )
    .unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubeconfig_file_and_context_point_the_executor_at_a_cluster() {
    let h = harness("").await;
    let kubeconfig = write_kubeconfig(h._dir.path(), &h.fake.url());
    let machine = machine();
    // No namespace in the settings: the context's is used.
    let text = config_text("").replace(
        &format!("namespace = \"{NAMESPACE}\""),
        &format!("kubeconfig = \"{}\"\ncontext = \"fake\"", kubeconfig.display()),
    );
    let config = Config::from_toml(&text, h._dir.path(), &machine).unwrap();
    let executor = KubernetesExecutor::connect(Arc::new(config), h.host.clone()).await.unwrap();
    assert_eq!(executor.namespace(), NAMESPACE);
    let spec = spec(json!({}));
    h.store_job(&spec).await;
    executor.start(h.launch(&spec, 0)).await.unwrap();
    assert!(h.fake.object(Kind::Job, JOB_ID).is_some());
    let create = h.fake.writes().into_iter().find(|w| w.method == "POST").unwrap();
    assert_eq!(create.path, JOBS);

    // A kubeconfig that is not there is an error that says so.
    let missing =
        config_text("").replace(&format!("namespace = \"{NAMESPACE}\""), "kubeconfig = \"/nonexistent/kubeconfig\"");
    let config = Config::from_toml(&missing, h._dir.path(), &machine).unwrap();
    let error = KubernetesExecutor::connect(Arc::new(config), h.host.clone()).await.err().unwrap();
    assert_eq!(error.to_string(), "cannot read the kubeconfig /nonexistent/kubeconfig");
    // The cause is kept, for the chain the server prints.
    assert!(matches!(error, jobdeck_executors::kubernetes::ConnectError::ReadKubeconfig { .. }), "{error:?}");
    assert!(std::error::Error::source(&error).is_some());
    // So is a setting the executor does not know.
    let typo = config_text("namespce = \"x\"");
    let config = Config::from_toml(&typo, h._dir.path(), &machine).unwrap();
    let error = KubernetesExecutor::connect(Arc::new(config), h.host.clone()).await.err().unwrap();
    let chain = format!("{:#}", anyhow::Error::from(error));
    assert!(chain.starts_with("executor.kubernetes: ") && chain.contains("namespce"), "{chain}");
}

/// The texts and times of an attempt's stored log.
fn stored_lines(logs: &LogStore, index: i64, attempt: i64) -> Vec<(i64, String)> {
    match logs.open(JOB_ID, index, attempt).unwrap() {
        Some(mut reader) => reader.lines(1, u64::MAX).unwrap().into_iter().map(|l| (l.time, l.text)).collect(),
        None => Vec::new(),
    }
}

fn texts(lines: &[(i64, String)]) -> Vec<&str> {
    lines.iter().map(|(_, t)| t.as_str()).collect()
}

/// Unix ms of 2026-01-10T10:00:00Z plus `ms`.
fn at(ms: i64) -> i64 {
    1_768_039_200_000 + ms
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_log_copy_resumes_with_every_line_of_its_last_second_once() {
    let h = harness("").await;
    h.store_job(&spec(json!({}))).await;
    // A container that has ended, so the followed stream ends too.
    let mut pod = fixture_pods()[3].clone();
    pod["metadata"]["name"] = json!("train-ab12c-3-resume");
    h.fake.put(Kind::Pod, pod);
    // Three lines in one millisecond of 10:00:02 (two the same), one more
    // in that second, and one in the next.
    h.fake.set_log(
        "train-ab12c-3-resume",
        "2026-01-10T10:00:01Z one\n\
         2026-01-10T10:00:02.100000000Z tick\n\
         2026-01-10T10:00:02.100000500Z tick\n\
         2026-01-10T10:00:02.100000900Z tock\n\
         2026-01-10T10:00:02.700000000Z three\n\
         2026-01-10T10:00:03Z four\n",
    );
    // An earlier copy stored the first two lines before it was cut.
    let (log, idx) = h.logs.paths(JOB_ID, 3, 0);
    let mut writer = jobdeck_store::logs::LogWriter::create(&log, &idx).unwrap();
    for (time, text) in [(at(1000), "one"), (at(2100), "tick")] {
        writer.append(jobdeck_store::logs::Stream::Stdout, time, text.as_bytes()).unwrap();
    }
    drop(writer);

    let pods = pods_api(&h.fake);
    let stored = jobdeck_executors::kubernetes::pod_logs::copy_pod_log(
        &pods,
        "train-ab12c-3-resume",
        &h.logs,
        JOB_ID,
        3,
        0,
        None,
    )
    .await
    .unwrap();
    assert_eq!(stored, 4);
    let lines = stored_lines(&h.logs, 3, 0);
    assert_eq!(texts(&lines), ["one", "tick", "tick", "tock", "three", "four"]);
    assert_eq!(lines[2].0, at(2100), "the kubelet's time, to the millisecond");
    // It asked from the second of the last stored line: the API server
    // passes sinceTime on at whole seconds.
    let request = h.fake.log_requests("train-ab12c-3-resume").pop().unwrap();
    assert_eq!(request.query.get("sinceTime").map(String::as_str), Some("2026-01-10T10:00:02Z"));
    assert_eq!(request.query.get("timestamps").map(String::as_str), Some("true"));

    // A copy of a log that is complete stores nothing more.
    let again = jobdeck_executors::kubernetes::pod_logs::copy_pod_log(
        &pods,
        "train-ab12c-3-resume",
        &h.logs,
        JOB_ID,
        3,
        0,
        None,
    )
    .await
    .unwrap();
    assert_eq!(again, 0);
    assert_eq!(stored_lines(&h.logs, 3, 0), lines);
}

/// A pod-log client of the fake, as the executor's.
fn pods_api(fake: &FakeKube) -> kube::Api<k8s_openapi::api::core::v1::Pod> {
    let mut kube_config = kube::Config::new(fake.url().parse().unwrap());
    kube_config.default_namespace = NAMESPACE.into();
    kube::Api::default_namespaced(kube::Client::try_from(kube_config).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_copies_the_rest_of_a_running_pods_log_once() {
    let h = harness("").await;
    let spec = spec(json!({}));
    h.store_job(&spec).await;
    const POD: &str = "train-ab12c-2-b5t8w";
    h.fake.set_log(
        POD,
        "2026-01-10T10:00:05.000000001Z loading data\n\
         2026-01-10T10:00:06.250000000Z step 1\n\
         2026-01-10T10:00:06.250000400Z step 1\n",
    );
    let mut h = h;
    h.executor.start(h.launch(&spec, 0)).await.unwrap();
    h.create_fixture_pods(&[POD]);
    eventually!("the followed lines", stored_lines(&h.logs, 2, 0).len() == 3);

    // The server stops: its copy ends with it, mid-stream (its controller
    // aborts the copy as it closes its watches).
    let opened = h.fake.watches_opened();
    drop(std::mem::replace(&mut h.executor, executor_for(&h.fake, &h.config, h.host.clone())));
    wait_for_takeover(&h.fake, opened).await;
    // Meanwhile the container writes on, in the same millisecond as the
    // last stored line (with the same text, as a progress line would) and
    // after it.
    h.fake.append_log(
        POD,
        "2026-01-10T10:00:06.250000700Z step 1\n\
         2026-01-10T10:00:06.900000000Z step 2\n\
         2026-01-10T10:00:07Z saving\n",
    );
    assert_eq!(stored_lines(&h.logs, 2, 0).len(), 3, "nothing copies while the server is down");

    h.executor.recover(vec![h.launch(&spec, 0)]).await.unwrap();
    eventually!("the rest of the log", stored_lines(&h.logs, 2, 0).len() >= 6);
    // The container ends; so does the followed stream.
    h.fake.patch(
        Kind::Pod,
        POD,
        json!({"status": {"phase": "Succeeded", "containerStatuses": [{
            "name": "job", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                "startedAt": "2026-01-10T10:00:05Z", "finishedAt": "2026-01-10T10:00:08Z"}}}]}}),
    );
    eventually!("the copy recorded in the replica", {
        let r = h.replica(2, 0).await.unwrap();
        serde_json::from_str::<Value>(r.executor_state.as_deref().unwrap()).unwrap()["logs_copied"] == json!(true)
    });
    let lines = stored_lines(&h.logs, 2, 0);
    assert_eq!(texts(&lines), ["loading data", "step 1", "step 1", "step 1", "step 2", "saving"]);
    assert_eq!(lines[3].0, at(6250));

    let requests = h.fake.log_requests(POD);
    assert!(requests.len() >= 2, "{requests:?}");
    assert_eq!(requests[0].query.get("sinceTime"), None);
    let resumed = &requests[1].query;
    assert_eq!(resumed.get("sinceTime").map(String::as_str), Some("2026-01-10T10:00:06Z"));
    assert_eq!(
        (resumed.get("follow").map(String::as_str), resumed.get("timestamps").map(String::as_str)),
        (Some("true"), Some("true"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_stream_cut_mid_line_is_copied_on_without_a_partial_line() {
    let h = harness("").await;
    let spec = spec(json!({}));
    h.store_job(&spec).await;
    const POD: &str = "train-ab12c-2-b5t8w";
    h.fake.set_log(POD, "2026-01-10T10:00:05Z loading data\n");
    h.executor.start(h.launch(&spec, 0)).await.unwrap();
    h.create_fixture_pods(&[POD]);
    eventually!("the first line", stored_lines(&h.logs, 2, 0).len() == 1);

    // A long line takes the fake more than half a second to send, in
    // pieces; the connection drops while it does.
    let long = "x".repeat(2000);
    let sent = h.fake.log_bytes_sent(POD);
    h.fake.append_log(POD, &format!("2026-01-10T10:00:05.5Z {long}\n2026-01-10T10:00:06Z after\n"));
    eventually!("the long line's first pieces on their way", h.fake.log_bytes_sent(POD) > sent + 14);
    h.fake.break_log_streams();

    // The executor copies on after a pause, from the second it stopped in.
    eventually!("the copy started again", h.fake.log_requests(POD).len() >= 2);
    eventually!("the rest of the log", stored_lines(&h.logs, 2, 0).len() >= 3);
    let lines = stored_lines(&h.logs, 2, 0);
    assert_eq!(texts(&lines), ["loading data", long.as_str(), "after"]);
    assert_eq!(h.fake.log_requests(POD)[1].query.get("sinceTime").map(String::as_str), Some("2026-01-10T10:00:05Z"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn specs_the_cluster_cannot_run_are_refused_on_their_fields() {
    let h = harness("").await;
    assert_eq!(h.executor.check_spec(&spec(json!({}))), Default::default());
    let cases = [
        (json!({"mounts": [{"from": "nfs-home", "mount_path": "/home"}]}), "spec.mounts[0].from"),
        (json!({"container": {"image": null}}), "spec.container.image"),
        (json!({"image_pull_secrets": ["Bad_Name"]}), "spec.image_pull_secrets[0]"),
    ];
    for (extra, path) in cases {
        let errors = h.executor.check_spec(&spec(extra.clone()));
        assert!(errors.contains_key(path), "{extra}: {errors:?}");
        assert!(errors.keys().all(|k| k.starts_with("spec.")), "{errors:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_failure_analysis_reads_tracebacks_and_cuda_oom_from_pod_logs() {
    let mut h = harness("").await;
    let spec = spec(json!({}));
    h.store_job(&spec).await;
    // Kubernetes merges standard output and error: the traceback arrives
    // between the program's progress lines and those of the other ranks
    // of the pod, all stored as standard output.
    h.fake.set_log(
        "train-ab12c-6-y3u5i",
        "2026-01-10T10:00:04.100000000Z loading data\n\
         2026-01-10T10:00:30.000000000Z epoch 1 loss 0.91\n\
         2026-01-10T10:00:59.000000001Z Traceback (most recent call last):\n\
         2026-01-10T10:00:59.000000002Z   File \"/app/train.py\", line 42, in <module>\n\
         2026-01-10T10:00:59.000000003Z     main()\n\
         2026-01-10T10:00:59.000000004Z [rank1] epoch 1 step 120 loss 0.88\n\
         2026-01-10T10:00:59.000000005Z   File \"/app/train.py\", line 30, in main\n\
         2026-01-10T10:00:59.000000006Z     configure(lr)\n\
         2026-01-10T10:00:59.000000007Z ValueError: learning rate must be positive, got -1\n",
    );
    // A second replica runs out of GPU memory, later.
    let mut cuda = fixture_pods().into_iter().find(|p| p["metadata"]["name"] == json!("train-ab12c-6-y3u5i")).unwrap();
    cuda["metadata"]["name"] = json!("train-ab12c-9-c4d8a");
    cuda["metadata"]["uid"] = json!("aaaaaaaa-0000-4000-8000-0000000000a9");
    cuda["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] = json!("9");
    cuda["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] = json!("9");
    cuda["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = json!("2026-01-10T10:03:00Z");
    h.fake.set_log(
        "train-ab12c-9-c4d8a",
        "2026-01-10T10:02:58Z epoch 1 step 1 loss 2.31\n\
         2026-01-10T10:02:59.5Z Traceback (most recent call last):\n\
         2026-01-10T10:02:59.5Z   File \"/app/train.py\", line 77, in forward\n\
         2026-01-10T10:02:59.5Z     out = self.attn(q, k, v)\n\
         2026-01-10T10:02:59.5Z torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 3.12 GiB is free.\n",
    );
    h.executor.start(h.launch(&spec, 0)).await.unwrap();
    h.create_fixture_pods(&["train-ab12c-6-y3u5i"]);
    let job_uid = h.fake.object(Kind::Job, JOB_ID).unwrap()["metadata"]["uid"].clone();
    cuda["metadata"]["ownerReferences"][0]["uid"] = job_uid;
    h.fake.put(Kind::Pod, cuda);
    let copied = |r: &ReplicaRow| {
        serde_json::from_str::<Value>(r.executor_state.as_deref().unwrap()).unwrap()["logs_copied"] == json!(true)
    };
    eventually!("both logs copied", {
        let replicas = h.replicas().await;
        replicas.len() == 2 && replicas.iter().all(copied)
    });
    let lines = stored_lines(&h.logs, 6, 0);
    assert_eq!(lines.len(), 9);
    let mut reader = h.logs.open(JOB_ID, 6, 0).unwrap().unwrap();
    assert!(
        reader.lines(1, 9).unwrap().iter().all(|l| l.stream == jobdeck_store::logs::Stream::Stdout),
        "the pod log API does not say which stream a line came from"
    );

    h.fake.patch(
        Kind::Job,
        JOB_ID,
        json!({"status": {"failed": 2, "conditions": [{"type": "Failed", "status": "True",
            "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"}]}}),
    );
    let (_, _, outcome) = h.outcome().await;
    assert!(matches!(outcome, RunOutcome::Failed { .. }), "{outcome:?}");

    let facts = jobdeck_core::failure::analysis::JobFacts {
        job_id: JOB_ID.into(),
        state: jobdeck_api::JobState::Failed,
        reason: Some("BackoffLimitExceeded".into()),
        shape_name: "gpu.1xh100".into(),
        memory_mb: 65536,
        gpus: 1,
        accelerator_memory_mb: Some(81920),
        log_collection: true,
        ..Default::default()
    };
    let replicas = h.replicas().await;
    let events = h.store.events_of(JOB_ID.to_string()).await.unwrap();
    let analysis = jobdeck_core::failure::analysis::analyse(&facts, &replicas, &events, &h.logs);

    // The first failure explains the job: a plain traceback, the program's.
    assert_eq!(analysis.err_class, "ERR_PROGRAM", "{analysis:#?}");
    assert!(analysis.program_error);
    assert!(analysis.summary.contains("ValueError: learning rate must be positive"), "{}", analysis.summary);
    let classes: Vec<(i64, Option<&str>)> =
        analysis.failed_replicas.iter().map(|f| (f.completion_index, f.err_class.as_deref())).collect();
    assert_eq!(classes, [(6, Some("ERR_PROGRAM")), (9, Some("ERR_CUDA_OOM"))]);

    // Each excerpt points at its error line; the other rank's line inside
    // the traceback does not cut it short.
    let traceback = &analysis.log_streams[0];
    assert_eq!((traceback.replica_id.as_str(), traceback.pattern.as_str()), ("train-ab12c-6-0", "Python traceback"));
    assert_eq!(traceback.error_line, 9);
    assert_eq!(traceback.lines.first().map(|l| l.line), Some(1), "three lines of context before the header");
    assert!(traceback.lines.iter().any(|l| l.text == "[rank1] epoch 1 step 120 loss 0.88"));
    let oom = &analysis.log_streams[1];
    assert_eq!((oom.replica_id.as_str(), oom.pattern.as_str()), ("train-ab12c-9-0", "CUDA out of memory"));
    assert_eq!(oom.error_line, 5);
    assert!(oom.lines.last().unwrap().text.starts_with("torch.OutOfMemoryError: CUDA out of memory"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_watched_by_kind_and_one_that_comes_before_its_pod_is_kept() {
    let h = harness("").await;
    let spec = spec(json!({}));
    h.store_job(&spec).await;
    h.executor.start(h.launch(&spec, 0)).await.unwrap();
    // The scheduler's event about a pod reaches Jobdeck before the pod
    // does (the watches of events and of pods are separate streams).
    h.fake.put(
        Kind::Event,
        json!({"metadata": {"name": "train-ab12c-3-q2w6e.1"},
               "involvedObject": {"kind": "Pod", "name": "train-ab12c-3-q2w6e", "namespace": "ml", "uid": "aaaaaaaa-0000-4000-8000-0000000000a3"},
               "reason": "Scheduled", "type": "Normal", "count": 1,
               "message": "Successfully assigned ml/train-ab12c-3-q2w6e to gpu-node-2",
               "lastTimestamp": now_rfc3339()}),
    );
    // Events about other kinds of objects are not sent to Jobdeck at all.
    h.fake.put(
        Kind::Event,
        json!({"metadata": {"name": "gpu-node-2.1"},
               "involvedObject": {"kind": "Node", "name": "gpu-node-2", "uid": "node-uid"},
               "reason": "NodeNotReady", "type": "Warning", "count": 1, "message": "node is not ready",
               "lastTimestamp": now_rfc3339()}),
    );
    // Both are on their way to the controller before the pod is created.
    let version = h.fake.version();
    eventually!("the event watches past both events", h.fake.watched_past(Kind::Event, version));
    h.create_fixture_pods(&["train-ab12c-3-q2w6e"]);
    eventually!("the early event, recorded once its pod came", {
        let events = h.store.events_of(JOB_ID.to_string()).await.unwrap();
        events.iter().any(|e| e.reason == "Scheduled" && e.regarding_name == "train-ab12c-3-0")
    });
    let events = h.store.events_of(JOB_ID.to_string()).await.unwrap();
    assert_eq!(events.iter().filter(|e| e.reason == "Scheduled").count(), 1);
    assert!(events.iter().all(|e| e.reason != "NodeNotReady"));

    // Every list and watch of events names the kind it wants.
    let selectors: std::collections::BTreeSet<Option<String>> = h
        .fake
        .requests()
        .into_iter()
        .filter(|r| r.path == "/api/v1/namespaces/ml/events")
        .map(|r| r.query.get("fieldSelector").cloned())
        .collect();
    assert_eq!(
        selectors,
        [Some("involvedObject.kind=Job".to_string()), Some("involvedObject.kind=Pod".to_string())].into()
    );
}

/// Where the cluster serves `metrics.k8s.io`, a running pod's CPU and
/// memory become its attempt's samples.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_pods_are_sampled_from_the_metrics_api() {
    let h = harness("metrics_interval_seconds = 1").await;
    let spec = spec(json!({}));
    h.store_job(&spec).await;
    h.fake.set_pod_usage("train-ab12c-2-b5t8w", "1500m", "512Mi");
    h.executor.start(h.launch(&spec, 0)).await.unwrap();
    h.create_fixture_pods(&["train-ab12c-2-b5t8w"]);
    eventually!("samples of the running pod", h.store.job_metrics(JOB_ID.to_string()).await.unwrap().len() >= 2);
    let samples = h.store.job_metrics(JOB_ID.to_string()).await.unwrap();
    let value =
        |series: &str| samples.iter().find(|(i, a, s, _)| (*i, *a, s.as_str()) == (2, 0, series)).map(|(.., p)| p.mean);
    assert_eq!(value("cpu"), Some(1.5));
    assert_eq!(value("memory"), Some(512.0 * 1024.0 * 1024.0));
    let asked = h.fake.requests().into_iter().find(|r| r.path.contains("metrics.k8s.io")).unwrap();
    assert_eq!(asked.path, "/apis/metrics.k8s.io/v1beta1/namespaces/ml/pods");
    assert_eq!(asked.query.get("labelSelector").map(String::as_str), Some("app.kubernetes.io/managed-by=jobdeck"));
}

/// A job may name as an image pull secret only one stored in Jobdeck for its
/// user or a Secret of the namespace the config allows: never any other
/// Secret of the namespace, such as the registry Secret Jobdeck made for
/// another user's job (`<id>-registry`), which the kubelet would pull with.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_names_only_the_pull_secrets_its_user_may_use() {
    let h = harness("").await;
    let kubeconfig = write_kubeconfig(h._dir.path(), &h.fake.url());
    let text = config_text("image_pull_secrets = [\"cluster-pull\"]").replace(
        &format!("namespace = \"{NAMESPACE}\""),
        &format!("kubeconfig = \"{}\"\ncontext = \"fake\"", kubeconfig.display()),
    );
    let machine = machine();
    let parsed = Config::from_toml(&text, h._dir.path(), &machine).unwrap();
    let app = common::TestApp::with_config(|config| {
        config.executor = parsed.executor.clone();
        config.node_groups = parsed.node_groups.clone();
        config.shapes = parsed.shapes.clone();
    })
    .await;
    let job = |pull: &str| {
        json!({"metadata": {"name": "pull"}, "spec": {
            "resource_shape": "gpu.1xh100",
            "container": {"image": "registry.example.com/team/train:v1", "command": ["python", "train.py"]},
            "image_pull_secrets": [pull]}})
    };
    for stolen in ["other-ab12c-registry", "default-token-x"] {
        let res = app.post_json("/api/v2/jobs", &app.admin_token, &job(stolen)).await;
        assert_eq!(res.status.as_u16(), 422, "{stolen}: {}", res.text());
        assert!(res.text().contains("spec.image_pull_secrets[0]"), "{}", res.text());
    }
    let res = app.post_json("/api/v2/jobs", &app.admin_token, &job("cluster-pull")).await;
    assert_eq!(res.status.as_u16(), 200, "the allowed Secret: {}", res.text());
}

/// A rerun of failed indexes on Kubernetes (issue 38): an Indexed Job runs
/// its indexes from 0, so the Job has as many as the rerun runs, its pods
/// map their index to the job's through the list in
/// `JOBDECK_COMPLETION_INDEXES` before the command runs, and the executor
/// reads each pod as the job's index its position names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_of_chosen_indexes_is_a_job_of_as_many_whose_pods_read_their_index() {
    let h = harness("").await;
    let spec = spec(json!({"completion_indexes": [4, 6, 9]}));
    h.store_job(&spec).await;
    h.executor.start(h.launch(&spec, 0)).await.unwrap();
    let job = &h.fake.writes()[0].body;
    assert_eq!((&job["spec"]["completions"], &job["spec"]["parallelism"]), (&json!(3), &json!(3)));
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    let command: Vec<&str> = container["command"].as_array().unwrap().iter().map(|w| w.as_str().unwrap()).collect();
    assert_eq!((command[0], command[1], command[3]), ("/bin/sh", "-c", "jobdeck-index"));
    assert_eq!(&command[4..], ["python", "train.py"], "the job's command follows, word for word");
    let env = container["env"].as_array().unwrap();
    let value = |name: &str| env.iter().find(|e| e["name"] == name).map(|e| e["value"].clone());
    assert_eq!(value("JOBDECK_COMPLETION_INDEXES"), Some(json!("4,6,9")));
    assert_eq!(value("JOB_COMPLETIONS"), Some(json!("10")), "the job's completions, not the Job's");

    // The Job's pods of its indexes 1 and 2 are the job's indexes 6 and 9.
    h.create_fixture_pods(&["train-ab12c-1-m9q4z", "train-ab12c-2-b5t8w"]);
    eventually!("two replicas", h.replicas().await.len() == 2);
    let indexes: Vec<i64> = h.replicas().await.iter().map(|r| r.completion_index).collect();
    assert_eq!(indexes, [6, 9]);
}
