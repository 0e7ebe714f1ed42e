//! `POST /jobs/convert` with files written as each tool's documentation
//! shows them (`tests/fixtures/convert/`): the job each becomes runs, every
//! field is accounted for with its line, a secret's value never comes back,
//! and what cannot be read is refused naming the line.

use crate::common;

use axum::http::{Method, StatusCode};
use common::{small_cluster, TestApp, TestResponse};
use jobdeck_api::Role;
use serde_json::{json, Value};

const NVCF: &str = include_str!("../../../../tests/fixtures/convert/task.json");
const DSTACK: &str = include_str!("../../../../tests/fixtures/convert/train.dstack.yml");
const KUBERNETES: &str = include_str!("../../../../tests/fixtures/convert/job.yaml");
const LEPTON: &str = include_str!("../../../../tests/fixtures/convert/lepton-spec.json");

async fn convert(app: &TestApp, token: &str, from: &str, text: &str) -> TestResponse {
    let uri = format!("/api/v2/jobs/convert?from={from}");
    app.request(Method::POST, &uri, Some(token), Some(("text/plain", text.as_bytes().to_vec()))).await
}

fn note<'a>(answer: &'a Value, field: &str) -> &'a Value {
    answer["notes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["field"] == field)
        .unwrap_or_else(|| panic!("no note on {field}: {answer}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_of_other_tools_become_jobs_that_run() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let viewer = app.token_with_role("vera", Role::Viewer).await;

    // A Kubernetes Job: its command and args, counts and the secret's name.
    let answer = convert(&app, &viewer, "kubernetes", KUBERNETES).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    let answer = answer.json();
    let job = &answer["job"];
    assert_eq!(
        job["spec"]["container"]["command"],
        json!(["sh", "-c", "echo index $JOB_COMPLETION_INDEX of the pi job"])
    );
    assert_eq!(job["spec"]["completions"], 2);
    // Its requests are requirements; the server picks the shape that meets
    // them when the job is created.
    assert_eq!(job["spec"]["resources"], json!({"cpu": {"min": 0.5}, "memory_in_mb": {"min": 512}}));
    assert!(note(&answer, "spec.template.spec.containers[0].resources")["message"]
        .as_str()
        .unwrap()
        .contains("the smallest shape that meets them is cpu.small"));
    assert_eq!(note(&answer, "spec.template.spec.containers[0].volumeMounts[0]")["line"], 34);
    assert!(note(&answer, "spec.template.spec.containers[0].volumeMounts[0]").get("became").is_none());
    assert_eq!(job["spec"]["envs"][1]["value_from"]["secret_name_ref"], "api_key", "a Jobdeck secret's name");
    let secret = json!([{"name": "api_key", "value": "k"}]);
    let stored = app.post_json("/api/v2/usersecrets", &app.admin_token, &secret).await;
    assert_eq!(stored.status, StatusCode::OK, "{}", stored.text());
    let id = app.create_job(&app.admin_token, job).await;
    app.wait_state(&id, "Completed").await;
    assert_eq!(app.job(&id).await["spec"]["resource_shape"], "cpu.small");
    assert!(app.log(&id, &format!("{id}-1-0")).await.contains("index 1 of the pi job"));

    // A spec as `lep job create -f` takes it.
    let answer = convert(&app, &viewer, "lepton", LEPTON).await.json();
    let mut job = answer["job"].clone();
    job["metadata"]["name"] = json!("from-a-file");
    let id = app.create_job(&app.admin_token, &job).await;
    app.wait_state(&id, "Completed").await;

    // An NVCF task: no shape here has an H100, so the form asks for one;
    // the secret is a reference, its value is not in the answer.
    let answer = convert(&app, &viewer, "nvcf", NVCF).await;
    assert!(!answer.text().contains("nvapi-fixture-secret"), "{}", answer.text());
    let answer = answer.json();
    assert_eq!(answer["job"]["spec"]["max_queued_duration_seconds"], 259_200);
    assert_eq!(answer["job"]["spec"]["termination_grace_period_seconds"], 3_600);
    assert_eq!(note(&answer, "gpuSpecification")["line"], 3);
    assert!(note(&answer, "gpuSpecification")["message"]
        .as_str()
        .unwrap()
        .contains("no shape of this workspace has 1 × H100"));
    // Its containerArgs go to the image's entrypoint, which only a container
    // runs: this server runs processes, so the job needs a command.
    assert_eq!(answer["job"]["spec"]["container"]["args"], json!(["--epochs", "10", "--batch-size", "32"]));
    let mut job = answer["job"].clone();
    job["spec"]["resource_shape"] = json!("cpu.small");
    let refused = app.post_json("/api/v2/jobs", &app.admin_token, &job).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());
    let message = refused.json()["fields"]["spec.container.command"][0].as_str().unwrap().to_string();
    assert!(message.contains("spec.container.args are its arguments"), "{message}");

    // A dstack task: what Jobdeck has no place for is said, line by line.
    let answer = convert(&app, &viewer, "dstack", DSTACK).await.json();
    assert_eq!(answer["job"]["spec"]["active_deadline_seconds"], 86_400);
    assert_eq!(note(&answer, "env[0]")["line"], 7);
    assert_eq!(note(&answer, "retry")["line"], 18);
    let lines: Vec<i64> = answer["notes"].as_array().unwrap().iter().filter_map(|n| n["line"].as_i64()).collect();
    assert!(lines.windows(2).all(|w| w[0] <= w[1]), "in the file's order: {lines:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_cannot_be_converted_is_refused_naming_the_field_and_line() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let token = app.admin_token.clone();
    let answer = convert(&app, &token, "helm", "x: 1").await;
    assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(answer.json()["fields"]["from"][0].as_str().unwrap().contains("dstack, nvcf, kubernetes, lepton"));
    let answer = convert(&app, &token, "dstack", "type: task\nname: [unclosed\ncommands: []\n").await;
    assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(answer.json()["fields"]["body"][0].as_str().unwrap().starts_with("line "), "{}", answer.text());
    let answer = convert(&app, &token, "dstack", "type: task\nname: 7\n").await;
    assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY, "a name must be text: {}", answer.text());
    assert!(answer.json()["fields"]["job.metadata.name"].is_array(), "{}", answer.text());
    let latin1 = app
        .request(
            Method::POST,
            "/api/v2/jobs/convert?from=dstack",
            Some(&token),
            Some(("text/plain", b"name: caf\xe9".to_vec())),
        )
        .await;
    assert_eq!(latin1.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(latin1.json()["fields"]["body"][0], "must be UTF-8 text");
    let answer = convert(&app, &token, "kubernetes", "apiVersion: v1\nkind: Pod\n").await;
    assert!(answer.json()["fields"]["kind"].is_array());
    let signed_out =
        app.request(Method::POST, "/api/v2/jobs/convert?from=lepton", None, Some(("text/plain", b"{}".to_vec()))).await;
    assert_eq!(signed_out.status, StatusCode::UNAUTHORIZED);
}
