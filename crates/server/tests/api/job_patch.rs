//! `PATCH /jobs/{id}` beyond stop and start: the secrets a running job's
//! variables reference are replaced, and its next attempt reads the new
//! values (seed 004: a task's secrets can be updated while it runs).

use axum::http::{Method, StatusCode};
use serde_json::json;

use crate::common::{sh_job, small_cluster, TestApp};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_replaced_while_a_job_runs_reaches_its_next_attempt() {
    let app = TestApp::with_config(|config: &mut jobdeck_core::Config| {
        small_cluster(2.0)(config);
        config.executor.local.retry_backoff_seconds = 0;
    })
    .await;
    let token = app.admin_token.clone();
    let secrets = json!([{"name": "OLD_TOKEN", "value": "old-value"}, {"name": "NEW_TOKEN", "value": "new-value"}]);
    assert_eq!(app.post_json("/api/v2/usersecrets", &token, &secrets).await.status, StatusCode::OK);
    // The first attempt prints the value, then fails once the gate opens;
    // the second prints it and succeeds.
    let (wait, release) = app.gate("first-attempt");
    let marker = app.data_dir().join("first-attempt-ran");
    let script = format!(
        "echo token=$TOKEN; [ -e '{marker}' ] && exit 0; touch '{marker}'; {wait}; exit 1",
        marker = marker.display()
    );
    let mut job = sh_job("rotated", &script);
    job["spec"]["backoff_limit"] = json!(1);
    job["spec"]["envs"] = json!([
        {"name": "PLAIN", "value": "kept"},
        {"name": "TOKEN", "value_from": {"secret_name_ref": "OLD_TOKEN"}}
    ]);
    let id = app.create_job(&token, &job).await;
    // The replica exists once the job runs; its log is read only then.
    app.wait_state(&id, "Running").await;
    let first = format!("{id}-0-0");
    app.wait_until("the first attempt's value", || async { app.log(&id, &first).await.contains("token=old-value") })
        .await;

    // What may not change is refused, naming the field, and nothing is
    // stored: a plain value, a variable added, a secret nobody has.
    let patch = |envs: serde_json::Value| json!({"spec": {"envs": envs}});
    let uri = format!("/api/v2/jobs/{id}");
    let refusals = [
        (
            patch(
                json!([{"name": "PLAIN", "value": "changed"}, {"name": "TOKEN", "value_from": {"secret_name_ref": "NEW_TOKEN"}}]),
            ),
            "spec.envs[0].value",
        ),
        (patch(json!([{"name": "TOKEN", "value_from": {"secret_name_ref": "NEW_TOKEN"}}])), "spec.envs"),
        (
            patch(
                json!([{"name": "PLAIN", "value": "kept"}, {"name": "TOKEN", "value_from": {"secret_name_ref": "NOBODYS"}}]),
            ),
            "spec.envs[1].value_from.secret_name_ref",
        ),
        (json!({"spec": {"envs": [], "completions": 3}}), "spec.completions"),
    ];
    for (body, path) in refusals {
        let res = app.call(Method::PATCH, &uri, &token, Some(&body)).await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {}", res.text());
        assert!(res.json()["fields"][path].is_array(), "{body}: {}", res.text());
    }
    assert_eq!(app.job(&id).await["spec"]["envs"][1]["value_from"]["secret_name_ref"], "OLD_TOKEN");

    // The reference is replaced, as a client that read the job would send
    // it: the old secret's owner still beside the new name.
    let mut envs = app.job(&id).await["spec"]["envs"].clone();
    envs[1]["value_from"]["secret_name_ref"] = json!("NEW_TOKEN");
    let res = app.call(Method::PATCH, &uri, &token, Some(&patch(envs))).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    assert_eq!(res.json()["spec"]["envs"][1]["value_from"]["secret_name_ref"], "NEW_TOKEN");
    assert_eq!(res.json()["status"]["state"], "Running");

    std::fs::write(&release, b"").unwrap();
    app.wait_state(&id, "Completed").await;
    let second = app.log(&id, &format!("{id}-0-1")).await;
    assert!(second.contains("token=new-value"), "{second}");
    let events = app.events(&id).await;
    let said = events.iter().find(|e| e["reason"] == "SecretsReplaced").expect("an event says what changed");
    assert_eq!(
        said["message"],
        "secret references replaced by admin: TOKEN (OLD_TOKEN → NEW_TOKEN); its next attempts use them"
    );
    let audit = app.get("/api/v2/audit?action=job.secrets").await;
    assert!(audit.text().contains(&id), "{}", audit.text());
}

/// An admin may change a teammate's public job, but may point its variables
/// only at secrets the admin may use too: the job's log, which the admin
/// reads, could print any secret of the teammate's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_cannot_point_a_teammates_job_at_the_teammates_private_secret() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let alice = app.token_for("alice").await;
    let secrets = json!([
        {"name": "USED", "value": "in-use"},
        {"name": "PRIVATE", "value": "alice-only"},
        {"name": "SHARED", "value": "for-everyone", "visibility": "public"}
    ]);
    assert_eq!(app.post_json("/api/v2/usersecrets", &alice, &secrets).await.status, StatusCode::OK);
    let mut job = sh_job("alices", "echo $TOKEN");
    job["spec"]["envs"] = json!([{"name": "TOKEN", "value_from": {"secret_name_ref": "USED"}}]);
    job["metadata"]["visibility"] = json!("public");
    let id = app.create_job(&alice, &job).await;
    let uri = format!("/api/v2/jobs/{id}");
    let to = |secret: &str| json!({"spec": {"envs": [{"name": "TOKEN", "value_from": {"secret_name_ref": secret}}]}});

    let res = app.call(Method::PATCH, &uri, &app.admin_token, Some(&to("PRIVATE"))).await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", res.text());
    assert!(res.json()["fields"]["spec.envs[0].value_from.secret_name_ref"][0]
        .as_str()
        .unwrap()
        .contains("a secret you may use as well as alice"));
    let res = app.call(Method::PATCH, &uri, &app.admin_token, Some(&to("SHARED"))).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    // The creator may use their own.
    let res = app.call(Method::PATCH, &uri, &alice, Some(&to("PRIVATE"))).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    assert_eq!(res.json()["spec"]["envs"][0]["value_from"]["secret_owner"], "alice");
}
