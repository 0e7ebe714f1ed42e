//! Every rule of the job contract, enforced by the server: a representative
//! invalid payload per rule gets 422 with the rule's field path and message
//! and nothing is stored; a valid rich payload (what the real `lep` CLI
//! sends) is stored and read back equal.

use crate::common;

use axum::http::StatusCode;
use common::TestApp;
use jobdeck_core::config::NodeGroupConfig;
use jobdeck_store::{ImagePullSecretRow, SecretRow};
use serde_json::{json, Value};

/// `lep job create --name rich-train … --num-workers 2 --secret HF_TOKEN=hf-token
/// --node-group gpu-a --node-id node-1 …`, byte for byte (see
/// `crates/api/fixtures/lep/README.md`).
const RICH: &str = include_str!("../../../api/fixtures/lep/rich.json");

/// A server with the `gpu-a` group of two nodes and the two secrets and the
/// image pull secret the rich payload references.
async fn app() -> TestApp {
    let app = TestApp::with_config(|config| {
        config.node_groups.push(NodeGroupConfig {
            name: "gpu-a".into(),
            cpu: 8.0,
            memory_mb: 32768,
            gpus: 0,
            gpu_product: None,
            nodes: Some(2),
            node_names: Some(vec!["node-1".into(), "node-2".into()]),
            node_selector: Default::default(),
            privileged_roles: Vec::new(),
        });
    })
    .await;
    let secret = |name: &str| SecretRow {
        owner: "admin".into(),
        name: name.into(),
        value: "s3cret".into(),
        visibility: jobdeck_api::Visibility::Private,
        tags: vec![],
        created_at: 0,
        updated_at: 0,
    };
    app.store.put_secrets(vec![secret("hf-token"), secret("WANDB_API_KEY")]).await.unwrap();
    app.store
        .put_image_pull_secret(ImagePullSecretRow {
            owner: "admin".into(),
            name: "my-registry".into(),
            registry_server: "nvcr.io".into(),
            username: "$oauthtoken".into(),
            password: "key".into(),
            email: String::new(),
            visibility: jobdeck_api::Visibility::Private,
            created_at: 0,
            updated_at: 0,
        })
        .await
        .unwrap();
    app
}

fn rich() -> Value {
    serde_json::from_str(RICH).unwrap()
}

/// Sets `value` at a `/`-separated JSON pointer, creating objects on the way.
fn set(job: &mut Value, pointer: &str, value: Value) {
    let mut at = job;
    let parts: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
    for part in &parts[..parts.len() - 1] {
        at = match at {
            Value::Array(items) => &mut items[part.parse::<usize>().unwrap()],
            other => other.as_object_mut().unwrap().entry(part.to_string()).or_insert_with(|| json!({})),
        };
    }
    let last = parts[parts.len() - 1];
    match at {
        Value::Array(items) => items[last.parse::<usize>().unwrap()] = value,
        other => {
            other.as_object_mut().unwrap().insert(last.to_string(), value);
        }
    }
}

async fn stored_jobs(app: &TestApp) -> i64 {
    app.get("/api/v2/jobs").await.json()["total"].as_i64().unwrap()
}

#[tokio::test]
async fn the_rich_lep_payload_is_stored_and_read_back_equal() {
    let app = app().await;
    let mut sent = rich();
    set(&mut sent, "/metadata/labels", json!({"team": "vision", "example.com/tier": "gold"}));
    set(&mut sent, "/metadata/annotations", json!({"note": "any text: at all"}));
    let res = app.post_json("/api/v2/jobs", &app.admin_token, &sent).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    let id = res.json()["metadata"]["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("rich-train-"), "{id}");

    let got = app.get(&format!("/api/v2/jobs/{id}")).await;
    assert_eq!(got.status, StatusCode::OK);
    let got = got.json();
    // What was sent, with each secret reference pinned to the secret's
    // owner (Jobdeck's extension, docs/api.md "Secrets").
    let mut expected = sent["spec"].clone();
    for env in expected["envs"].as_array_mut().unwrap() {
        if env["value_from"]["secret_name_ref"].is_string() {
            env["value_from"]["secret_owner"] = json!("admin");
        }
    }
    assert_eq!(got["spec"], expected, "the spec came back changed");
    assert_eq!(got["metadata"]["name"], "rich-train");
    assert_eq!(got["metadata"]["visibility"], "private");
    assert_eq!(got["metadata"]["labels"], sent["metadata"]["labels"]);
    assert_eq!(got["metadata"]["annotations"], sent["metadata"]["annotations"]);
    assert_eq!(stored_jobs(&app).await, 1);
}

#[tokio::test]
async fn a_job_without_visibility_is_public() {
    let app = app().await;
    let mut job = rich();
    job["metadata"].as_object_mut().unwrap().remove("visibility");
    let res = app.post_json("/api/v2/jobs", &app.admin_token, &job).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    assert_eq!(res.json()["metadata"]["visibility"], "public");
}

/// A job given neither a name nor an id gets a readable name from the
/// server (and an id made from it); one whose name is empty text is
/// refused, as before.
#[tokio::test]
async fn a_job_without_a_name_gets_a_readable_one_and_an_empty_name_is_refused() {
    let app = app().await;
    let mut job = rich();
    let metadata = job["metadata"].as_object_mut().unwrap();
    metadata.remove("name");
    metadata.remove("id");
    let res = app.post_json("/api/v2/jobs", &app.admin_token, &job).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    let name = res.json()["metadata"]["name"].as_str().unwrap().to_string();
    let words: Vec<&str> = name.split('-').collect();
    assert!(words.len() == 2 && words.iter().all(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase())));
    assert!(res.json()["metadata"]["id"].as_str().unwrap().starts_with(&format!("{name}-")));

    job["metadata"]["name"] = json!("");
    let before = stored_jobs(&app).await;
    let res = app.post_json("/api/v2/jobs", &app.admin_token, &job).await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(res.json()["fields"]["metadata.name"][0], "must not be empty");
    assert_eq!(stored_jobs(&app).await, before);
}

/// The status is the server's: a valid one sent with a new job is ignored,
/// a state no job can be in is refused naming the field, and nothing is
/// stored.
#[tokio::test]
async fn a_new_job_status_is_ignored_and_an_unknown_state_refused() {
    let app = app().await;
    let mut job = rich();
    job["status"] = json!({"state": "Completed", "ready": 7});
    let res = app.post_json("/api/v2/jobs", &app.admin_token, &job).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    assert_ne!(res.json()["status"]["state"], "Completed");
    assert_eq!(res.json()["status"]["ready"], 0);

    job["status"] = json!({"state": "AAA"});
    let before = stored_jobs(&app).await;
    let res = app.post_json("/api/v2/jobs", &app.admin_token, &job).await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", res.text());
    assert!(res.json()["fields"]["status.state"][0].as_str().unwrap().contains("is not a job state"));
    assert_eq!(stored_jobs(&app).await, before);
}

/// (rule, pointer, value, field path, message)
const CASES: &[(&str, &str, &str, &str, &str)] = &[
    ("job name characters", "/metadata/id", r#""Rich_Train""#, "metadata.name", "must start with a lowercase letter"),
    ("job name length", "/metadata/name", r#""abcdefghijklmnopqrstuvwxyzabcdefghijk""#, "metadata.name", "must be at most 36 characters (it has 37)"),
    ("label key", "/metadata/labels", r#"{"bad key": "x"}"#, "metadata.labels[\"bad key\"]", "the key's name may contain only letters, digits, '-', '_' and '.', not ' '"),
    ("label value", "/metadata/labels", r#"{"team": "a/b"}"#, "metadata.labels[\"team\"]", "the value may contain only letters, digits, '-', '_' and '.', not '/'"),
    ("annotation key", "/metadata/annotations", r#"{"-x": "y"}"#, "metadata.annotations[\"-x\"]", "the key's name must start and end with a letter or digit"),
    ("Jobdeck's label prefix", "/metadata/labels", r#"{"jobdeck.dev/run": "7"}"#, "metadata.labels[\"jobdeck.dev/run\"]", "the key's prefix 'jobdeck.dev/' is reserved for Jobdeck"),
    ("Kubernetes' annotation prefix", "/metadata/annotations", r#"{"batch.kubernetes.io/job-completion-index": "3"}"#, "metadata.annotations[\"batch.kubernetes.io/job-completion-index\"]", "the key's prefix 'batch.kubernetes.io/' is reserved for Kubernetes"),
    ("completions ≥ 1", "/spec/completions", "0", "spec.completions", "must be between 1 and 100000"),
    ("completions ≤ 100000", "/spec/completions", "100001", "spec.completions", "must be between 1 and 100000"),
    ("workers ≥ 1", "/spec/workers", "0", "spec.workers", "must be between 1 and 100000"),
    ("workers ≤ 100000", "/spec/workers", "100001", "spec.workers", "must be between 1 and 100000"),
    ("parallelism ≥ 1", "/spec/parallelism", "0", "spec.parallelism", "must be between 1 and 100000"),
    ("parallelism ≤ completions", "/spec/parallelism", "3", "spec.parallelism", "must be less than or equal to completions (2)"),
    ("backoff ≥ 0", "/spec/backoff_limit", "-1", "spec.backoff_limit", "must be between 0 and 2147483647"),
    ("backoff ≤ i32::MAX", "/spec/backoff_limit", "2147483648", "spec.backoff_limit", "must be between 0 and 2147483647"),
    ("deadline ≥ 1", "/spec/active_deadline_seconds", "0", "spec.active_deadline_seconds", "must be between 1 and 315360000"),
    ("deadline ≤ 10 years", "/spec/active_deadline_seconds", "315360001", "spec.active_deadline_seconds", "must be between 1 and 315360000"),
    ("deadline of i64::MAX", "/spec/active_deadline_seconds", "9223372036854775807", "spec.active_deadline_seconds", "must be between 1 and 315360000"),
    ("queue limit ≥ 1", "/spec/max_queued_duration_seconds", "0", "spec.max_queued_duration_seconds", "must be between 1 and 315360000"),
    ("queue limit of i64::MAX", "/spec/max_queued_duration_seconds", "9223372036854775807", "spec.max_queued_duration_seconds", "must be between 1 and 315360000"),
    ("replica retry ≥ 0", "/spec/max_failure_retry", "-1", "spec.max_failure_retry", "must be between 0 and 2147483647"),
    ("replica retry ≤ i32::MAX", "/spec/max_failure_retry", "2147483648", "spec.max_failure_retry", "must be between 0 and 2147483647"),
    ("job retry ≤ i32::MAX", "/spec/max_job_failure_retry", "9223372036854775807", "spec.max_job_failure_retry", "must be between 0 and 2147483647"),
    ("archive time ≥ 0", "/spec/ttl_seconds_after_finished", "-1", "spec.ttl_seconds_after_finished", "must be between 0 and 315360000"),
    ("archive time ≤ 10 years", "/spec/ttl_seconds_after_finished", "9223372036854775807", "spec.ttl_seconds_after_finished", "must be between 0 and 315360000"),
    ("shared memory ≥ 0", "/spec/shared_memory_size", "-1", "spec.shared_memory_size", "must be between 0 and 1073741824"),
    ("shared memory ≤ 1 PiB", "/spec/shared_memory_size", "1073741825", "spec.shared_memory_size", "must be between 0 and 1073741824"),
    ("shared memory ≤ shape memory", "/spec/shared_memory_size", "4097", "spec.shared_memory_size", "must be at most the memory of shape 'cpu.small' (4096 MiB)"),
    ("priority class", "/spec/queue_config/priority_class", r#""urgent""#, "spec.queue_config.priority_class", "must be one of low-1000, low-2000, low-3000, mid-4000, mid-5000, mid-6000, high-7000, high-8000, high-9000 (priority 1 to 9)"),
    ("image", "/spec/container/image", r#""Bad Image""#, "spec.container.image", "must not contain spaces or control characters"),
    ("image tag twice", "/spec/container/image_tag", r#""latest""#, "spec.container.image_tag", "must be left out when the image already names a tag ('25.08-py3')"),
    ("registry username needs a password", "/spec/container/registry_username", r#""me""#, "spec.container.registry_password", "is required when a registry username is set"),
    ("registry password needs a username", "/spec/container/registry_password", r#""pw""#, "spec.container.registry_username", "is required when a registry password is set"),
    ("port ≥ 1", "/spec/container/ports/0/container_port", "0", "spec.container.ports[0].container_port", "must be between 1 and 65535"),
    ("port ≤ 65535", "/spec/container/ports/0/container_port", "65536", "spec.container.ports[0].container_port", "must be between 1 and 65535"),
    ("protocol", "/spec/container/ports/0/protocol", r#""HTTP""#, "spec.container.ports[0].protocol", "must be TCP, UDP or SCTP"),
    ("port twice", "/spec/container/ports/1", r#"{"container_port": 8080, "protocol": "tcp"}"#, "spec.container.ports[1].container_port", "8080/TCP is already listed at spec.container.ports[0]"),
    ("env name", "/spec/envs/0/name", r#""1A""#, "spec.envs[0].name", "must start with a letter or '_'"),
    ("env reserved", "/spec/envs/0/name", r#""JOB_COMPLETION_INDEX""#, "spec.envs[0].name", "'JOB_COMPLETION_INDEX' is reserved: Jobdeck sets it"),
    ("env prefix", "/spec/envs/0/name", r#""LEPTON_JOB_NAME""#, "spec.envs[0].name", "must not start with 'LEPTON_': that prefix is reserved for variables Jobdeck sets"),
    ("env twice", "/spec/envs/1/name", r#""A""#, "spec.envs[1].name", "'A' is already set by spec.envs[0]"),
    ("env value or secret", "/spec/envs/2/value", r#""literal""#, "spec.envs[2].value_from", "must be left out when a value is given: a variable has either a value or a secret reference, not both"),
    ("env secret exists", "/spec/envs/2/value_from/secret_name_ref", r#""nope""#, "spec.envs[2].value_from.secret_name_ref", "no secret named 'nope'"),
    ("mount absolute", "/spec/mounts/0/mount_path", r#""data""#, "spec.mounts[0].mount_path", "must be an absolute path (start with '/')"),
    ("mount normalized", "/spec/mounts/0/mount_path", r#""/data/../x""#, "spec.mounts[0].mount_path", "must not contain '..' segments"),
    ("mount reserved", "/spec/mounts/0/mount_path", r#""/etc""#, "spec.mounts[0].mount_path", "'/etc' is a system path and cannot be a mount path"),
    ("mount twice", "/spec/mounts/1/mount_path", r#""/data""#, "spec.mounts[1].mount_path", "'/data' is already used by spec.mounts[0]"),
    ("mount stays in its volume", "/spec/mounts/0/path", r#""../../etc""#, "spec.mounts[0].path", "must not contain '..' segments: a mount stays inside its volume"),
    ("shape exists", "/spec/resource_shape", r#""gpu.8xh100""#, "spec.resource_shape", "no resource shape named 'gpu.8xh100'; this workspace has 'cpu.small', 'cpu.medium' or 'cpu.large'"),
    ("node group exists", "/spec/affinity", r#"{"allowed_dedicated_node_groups": ["h100-pool"]}"#, "spec.affinity.allowed_dedicated_node_groups[0]", "no node group named 'h100-pool'"),
    ("node in group", "/spec/affinity/allowed_nodes_in_node_group/0", r#""node-9""#, "spec.affinity.allowed_nodes_in_node_group[0]", "node 'node-9' is not in the chosen node groups"),
    ("no privileged containers", "/spec/user_security_context/privileged", "true", "spec.user_security_context.privileged", "Jobdeck does not run privileged containers for you here: no node group allows them for your role"),
    ("a user is refused by process mode", "/spec/container/user", r#""1000""#, "spec.container.user", "is a user inside the container, and this server runs replicas as plain processes, as the server's own user"),
    ("a user that could be an option", "/spec/container/user", r#""--privileged""#, "spec.container.user", "a name starts with a letter or _, such as ubuntu"),
    ("no storage attachments", "/spec/storage_attachments", r#"[{"data_source_name": "b", "attachments": [{"mode": "awsProfile"}]}]"#, "spec.storage_attachments", "Jobdeck has no object-storage data sources; mount a volume with spec.mounts instead"),
    ("no reservations", "/spec/reservation_config/reservation_id", r#""res-1""#, "spec.reservation_config.reservation_id", "Jobdeck has no reservations; leave this out"),
    ("unknown field", "/spec/container/entrypoint", r#""sh""#, "spec.container.entrypoint", "is not a field Jobdeck knows; the fields here are image, ports, command, args, working_dir, user, image_tag, registry_username, registry_password"),
    ("wrong type", "/spec/completions", r#""two""#, "spec.completions", "must be a whole number, not string \"two\""),
    ("working directory refused by process mode", "/spec/container/working_dir", r#""/workspace""#, "spec.container.working_dir", "is a directory inside the container, and this server runs replicas as plain processes: change directory in the command instead"),
    ("command needed by process mode", "/spec/container/command", "[]", "spec.container.command", "a command is required on this server: it runs replicas as plain processes, and an empty command means the image's own entrypoint, which only a container runs"),
    ("beyond i64", "/spec/active_deadline_seconds", "99999999999999999999", "spec.active_deadline_seconds", "must be a whole number, not floating point `1e+20`"),
];

#[tokio::test]
async fn each_rule_answers_422_on_its_field_and_stores_nothing() {
    let app = app().await;
    for (rule, pointer, value, path, message) in CASES {
        let mut job = rich();
        set(&mut job, pointer, serde_json::from_str(value).unwrap());
        let res = app.post_json("/api/v2/jobs", &app.admin_token, &job).await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "rule {rule}: {}", res.text());
        let body = res.json();
        assert_eq!(body["code"], "validation_failed", "rule {rule}");
        assert_eq!(body["fields"][*path], json!([message]), "rule {rule}: {body}");
        let fields = body["fields"].as_object().unwrap();
        assert_eq!(fields.len(), 1, "rule {rule} broke more than its field: {body}");
    }
    assert_eq!(stored_jobs(&app).await, 0, "an invalid job was stored");
}

#[tokio::test]
async fn every_problem_comes_back_at_once() {
    let app = app().await;
    let mut job = rich();
    set(&mut job, "/metadata/id", json!("Bad"));
    set(&mut job, "/spec/envs/0/name", json!("LEPTON_X"));
    set(&mut job, "/spec/mounts/0/mount_path", json!("/proc/x"));
    set(&mut job, "/spec/container/ports/0/container_port", json!(0));
    let res = app.post_json("/api/v2/jobs", &app.admin_token, &job).await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
    let body = res.json();
    let paths: Vec<&String> = body["fields"].as_object().unwrap().keys().collect();
    assert_eq!(
        paths,
        ["metadata.name", "spec.container.ports[0].container_port", "spec.envs[0].name", "spec.mounts[0].mount_path"]
    );
    assert_eq!(body["message"], "the request has 4 invalid fields");
    assert_eq!(stored_jobs(&app).await, 0);
}

#[tokio::test]
async fn the_server_answers_what_the_console_computes() {
    // The console runs `validate_job` on the value it built; the server must
    // say the same about the JSON it received.
    let app = app().await;
    let mut job = rich();
    set(&mut job, "/spec/parallelism", json!(9));
    set(&mut job, "/spec/envs/1/name", json!("A"));
    let local = jobdeck_api::validate_job(&serde_json::from_value(job.clone()).unwrap());
    let res = app.post_json("/api/v2/jobs", &app.admin_token, &job).await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(res.json()["fields"], serde_json::to_value(&local).unwrap());
}

/// The console builds its `ValidationContext` from `GET /shapes`,
/// `GET /dedicated-node-groups`, `GET /usersecrets` and `GET /workspace`'s
/// `job_requirements`; with it, the contract says exactly what the server's
/// 422 says, executor and capacity rules included, so the form cannot send
/// a job the server refuses.
#[tokio::test]
async fn the_server_answers_what_the_console_computes_with_the_servers_data() {
    let app = app().await;
    let get = |path: &'static str| {
        let app = &app;
        async move { app.call(axum::http::Method::GET, path, &app.admin_token, None).await.json() }
    };
    let workspace: jobdeck_api::WorkspaceInfo = serde_json::from_value(get("/api/v2/workspace").await).unwrap();
    assert!(workspace.job_requirements.command_required, "process mode needs a command");
    let context = jobdeck_api::ValidationContext {
        secret_names: get("/api/v2/usersecrets")
            .await
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect(),
        requirements: workspace.job_requirements,
        ..common::console_context(&app).await
    };
    let cases: [(&str, Value); 2] = [("no command", json!([])), ("too many at once", json!(null))];
    for (case, command) in cases {
        let mut job = rich();
        if !command.is_null() {
            set(&mut job, "/spec/container/command", command);
        }
        if case == "too many at once" {
            set(&mut job, "/spec/completions", json!(64));
            set(&mut job, "/spec/parallelism", json!(64));
        }
        let local = jobdeck_api::validate_job_in(&serde_json::from_value(job.clone()).unwrap(), &context);
        assert!(!local.is_empty(), "{case}: the contract finds the problem");
        let res = app.post_json("/api/v2/jobs", &app.admin_token, &job).await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{case}: {}", res.text());
        assert_eq!(res.json()["fields"], serde_json::to_value(&local).unwrap(), "{case}");
    }
}

/// The largest value of every duration, at once, is accepted and runs like
/// any job: the scheduler's timers stay in range.
#[tokio::test]
async fn the_largest_durations_are_accepted_and_the_job_runs() {
    let app = TestApp::with_config(common::small_cluster(2.0)).await;
    let mut job = common::sh_job("far", "echo done");
    set(&mut job, "/spec/active_deadline_seconds", json!(315_360_000));
    set(&mut job, "/spec/max_queued_duration_seconds", json!(315_360_000));
    set(&mut job, "/spec/ttl_seconds_after_finished", json!(315_360_000));
    set(&mut job, "/spec/max_job_failure_retry", json!(2_147_483_647));
    let id = app.create_job(&app.admin_token, &job).await;
    app.wait_state(&id, "Completed").await;
}
