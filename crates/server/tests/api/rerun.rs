//! Rerunning only the failed indexes of a job (`POST
//! /jobs/{id}/rerun?only=failed`) with real processes: which indexes run,
//! with which `JOB_COMPLETION_INDEX`, the links both ways, and what is
//! refused.

use crate::common;

use axum::http::{Method, StatusCode};
use common::{sh_job, small_cluster, TestApp};
use serde_json::{json, Value};

fn replica_ids(replicas: &[Value]) -> Vec<String> {
    replicas.iter().map(|r| r["id"].as_str().unwrap().to_string()).collect()
}

/// A job of four indexes run all at once, of which 1 and 3 fail until
/// `heal` exists; they wait at `gate` until the test has seen 0 and 2
/// succeed, so which indexes failed does not depend on timing.
async fn half_failed_job(app: &TestApp, name: &str) -> (String, std::path::PathBuf) {
    let (waiting, gate) = app.gate(&format!("{name}-fail"));
    let heal = app.data_dir().join(format!("heal-{name}"));
    let script = format!(
        "case $JOB_COMPLETION_INDEX in 1|3) {waiting}; [ -e '{}' ] || {{ echo broken $JOB_COMPLETION_INDEX; exit 3; }};; esac; \
         echo index=$JOB_COMPLETION_INDEX of $JOB_COMPLETIONS",
        heal.display()
    );
    let mut job = sh_job(name, &script);
    job["spec"]["completions"] = json!(4);
    job["spec"]["parallelism"] = json!(4);
    job["spec"]["backoff_limit"] = json!(0);
    job["metadata"]["labels"] = json!({"team": "nlp"});
    let id = app.create_job(&app.admin_token, &job).await;
    app.wait_job(&id, "two indexes succeeded", |j| j["status"]["succeeded"] == 2).await;
    std::fs::write(&gate, "").unwrap();
    app.wait_state(&id, "Failed").await;
    (id, heal)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_runs_only_the_failed_indexes_each_keeping_its_index() {
    let app = TestApp::with_config(small_cluster(4.0)).await;
    let (id, heal) = half_failed_job(&app, "sharded").await;
    let original = app.job(&id).await;
    assert_eq!(original["status"]["rerun_indexes"], json!([1, 3]), "{}", original["status"]);
    assert!(original["status"].get("reruns").is_none());

    std::fs::write(&heal, "").unwrap();
    let res = app.post_json(&format!("/api/v2/jobs/{id}/rerun?only=failed"), &app.admin_token, &json!({})).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    let rerun = res.json();
    let rerun_id = rerun["metadata"]["id"].as_str().unwrap().to_string();
    assert_eq!(rerun["metadata"]["name"], "sharded-rerun");
    assert_eq!(rerun["metadata"]["labels"], json!({"team": "nlp"}));
    assert_eq!(rerun["spec"]["completion_indexes"], json!([1, 3]));
    assert_eq!(rerun["spec"]["completions"], 4);
    assert_eq!(rerun["status"]["rerun_of"], id);

    let done = app.wait_state(&rerun_id, "Completed").await;
    assert_eq!(done["status"]["succeeded"], 2);
    assert_eq!(done["status"]["message"], "all 2 completion(s) succeeded");
    let replicas = app.replicas(&rerun_id).await;
    assert_eq!(replica_ids(&replicas), [format!("{rerun_id}-1-0"), format!("{rerun_id}-3-0")]);
    for (index, replica) in [1, 3].iter().zip(&replicas) {
        let log = app.log(&rerun_id, replica["id"].as_str().unwrap()).await;
        assert_eq!(log, format!("index={index} of 4\n"));
    }

    // The original keeps its record, its succeeded indexes' logs, and
    // links to the rerun.
    let original = app.job(&id).await;
    assert_eq!(original["status"]["state"], "Failed");
    assert_eq!(original["status"]["reruns"], json!([rerun_id]));
    for index in [0, 2] {
        assert_eq!(app.log(&id, &format!("{id}-{index}-0")).await, format!("index={index} of 4\n"));
    }
    // Nothing failed in the rerun, so it offers no rerun of its own.
    assert!(app.job(&rerun_id).await["status"].get("rerun_indexes").is_none());
    app.wait_until("the rerun in the audit log", || async {
        app.get("/api/v2/audit?action=job.rerun").await.json()["items"][0]["target"] == rerun_id.as_str()
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_jobs_changers_rerun_it_and_only_what_failed() {
    let app = TestApp::with_config(small_cluster(4.0)).await;
    let (id, _) = half_failed_job(&app, "guarded").await;
    let rerun = |token: String, query: &'static str| {
        let app = &app;
        let id = id.clone();
        async move { app.call(Method::POST, &format!("/api/v2/jobs/{id}/rerun{query}"), &token, None).await }
    };
    let admin = app.admin_token.clone();
    for query in ["", "?only=all", "?only=FAILED"] {
        let res = rerun(admin.clone(), query).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{query}: {}", res.text());
        assert!(res.text().contains("only must be 'failed'"), "{}", res.text());
    }
    // A member may read the admin's public job but not start it again.
    let member = app.token_for("mallory").await;
    let res = rerun(member.clone(), "?only=failed").await;
    assert_eq!(res.status, StatusCode::FORBIDDEN, "{}", res.text());
    let viewer = app.token_with_role("vera", jobdeck_api::Role::Viewer).await;
    assert_eq!(rerun(viewer, "?only=failed").await.status, StatusCode::FORBIDDEN);
    // A private job of someone else's is not there at all.
    let private = app.create_job(&member, &json!({"metadata": {"name": "mine", "visibility": "private"}, "spec": {"resource_shape": "cpu.small", "container": {"image": "busybox", "command": ["/bin/sh", "-c", "exit 0"]}}})).await;
    let res = app.call(Method::POST, &format!("/api/v2/jobs/{private}/rerun?only=failed"), &admin, None).await;
    assert_eq!(res.status, StatusCode::NOT_FOUND, "{}", res.text());
    // A job that succeeded has nothing to rerun.
    app.wait_state_as(&member, &private, "Completed").await;
    let res = app.call(Method::POST, &format!("/api/v2/jobs/{private}/rerun?only=failed"), &member, None).await;
    assert_eq!(res.status, StatusCode::CONFLICT, "{}", res.text());
    assert!(res.text().contains("the job is Completed"), "{}", res.text());
    assert!(app.get("/api/v2/jobs?job_query_mode=alive_and_archive").await.json()["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|j| j["status"].get("rerun_of").is_none()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chosen_indexes_are_checked_when_a_job_is_created() {
    let app = TestApp::with_config(small_cluster(4.0)).await;
    let cases = [
        (json!({"completions": 4, "completion_indexes": [1, 4]}), "spec.completion_indexes[1]", "not 4"),
        (json!({"completions": 4, "completion_indexes": [2, 2]}), "spec.completion_indexes[1]", "already listed"),
        (json!({"completions": 4, "completion_indexes": []}), "spec.completion_indexes", "at least one"),
        (json!({"workers": 2, "completion_indexes": [1]}), "spec.completion_indexes", "run together"),
        (json!({"completions": 4, "completion_indexes": ["1"]}), "spec.completion_indexes", ""),
    ];
    for (extra, field, words) in cases {
        let mut job = sh_job("chosen", "exit 0");
        for (key, value) in extra.as_object().unwrap() {
            job["spec"][key] = value.clone();
        }
        let res = app.post_json("/api/v2/jobs", &app.admin_token, &job).await;
        assert!(res.status.is_client_error(), "{extra}: {}", res.text());
        assert!(res.text().contains(field) && res.text().contains(words), "{extra}: {}", res.text());
    }
    // Given by hand, the indexes run as a rerun's do, two at a time.
    let mut job = sh_job("chosen", "echo $JOB_COMPLETION_INDEX/$JOB_COMPLETIONS");
    job["spec"]["completions"] = json!(10);
    job["spec"]["parallelism"] = json!(5);
    job["spec"]["completion_indexes"] = json!([9, 0, 5]);
    let id = app.create_job(&app.admin_token, &job).await;
    app.wait_state(&id, "Completed").await;
    let replicas = app.replicas(&id).await;
    assert_eq!(replica_ids(&replicas), [format!("{id}-0-0"), format!("{id}-5-0"), format!("{id}-9-0")]);
    assert_eq!(app.log(&id, &format!("{id}-9-0")).await, "9/10\n");
}
