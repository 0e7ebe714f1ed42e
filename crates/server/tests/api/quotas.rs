//! Quotas through the API: a job over its creator's quota waits with the
//! reason in words and the jobs behind it go on; one that could never fit
//! is refused on its field; a full queue refuses one more job; an admin's
//! quota in the console replaces the config's and the queue is judged
//! again at once; usage now and per day, as JSON and CSV.

use crate::common;

use axum::http::{Method, StatusCode};
use common::{sh_job, small_cluster, TestApp};
use jobdeck_api::{QuotaLimits, QuotaList, QuotaSource, Role, UsageHistory, UsageNow};
use serde_json::json;

fn typed<T: serde::de::DeserializeOwned>(res: &common::TestResponse) -> T {
    serde_json::from_slice(&res.body).unwrap_or_else(|e| panic!("{e}: {}", res.text()))
}

/// A node of 8 CPUs and 4 GPUs, a one-GPU shape, and members limited to
/// `limits` by the config.
fn gpu_cluster(limits: QuotaLimits) -> impl FnOnce(&mut jobdeck_core::Config) {
    move |config: &mut jobdeck_core::Config| {
        small_cluster(8.0)(config);
        config.node_groups[0].gpus = 4;
        config.shapes.push(jobdeck_core::config::ShapeConfig {
            name: "gpu.1".into(),
            cpu: 1.0,
            memory_mb: 1024,
            gpus: 1,
            accelerator_type: None,
            accelerator_memory_mb: None,
            compute_capability: None,
            ephemeral_storage_gb: None,
            description: None,
        });
        config.quotas.roles.insert(Role::Member, limits);
    }
}

fn gpu_job(name: &str, script: &str, replicas: i64) -> serde_json::Value {
    let mut job = sh_job(name, script);
    job["spec"]["resource_shape"] = json!("gpu.1");
    job["spec"]["completions"] = json!(replicas);
    job["spec"]["parallelism"] = json!(replicas);
    job
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_over_its_creators_gpu_quota_waits_with_the_reason_until_an_admin_raises_it() {
    let app = TestApp::with_config(gpu_cluster(QuotaLimits { running_gpus: Some(1), ..Default::default() })).await;
    let bob = app.token_with_role("bob", Role::Member).await;
    let (wait, release) = app.gate("first");
    let first = app.create_job(&bob, &gpu_job("first", &wait, 1)).await;
    app.wait_state_as(&bob, &first, "Running").await;
    let second = app.create_job(&bob, &gpu_job("second", "echo second", 1)).await;
    let waiting =
        app.wait_job_as(&bob, &second, "held by the quota", |j| j["status"]["reason"] == "QuotaExceeded").await;
    assert_eq!(
        waiting["status"]["message"], "over quota: bob uses 1 of 1 GPUs (quota of role member); this job needs 1",
        "{waiting}"
    );
    // A job of his that needs no GPU is not held back by the one waiting.
    let cpu = app.create_job(&bob, &sh_job("cpu", "echo cpu")).await;
    app.wait_state_as(&bob, &cpu, "Completed").await;
    // The admin's own jobs are not bound by the member role's quota.
    let admins = app.create_job(&app.admin_token, &gpu_job("admins", "echo a", 2)).await;
    app.wait_state(&admins, "Completed").await;

    // Could never fit: 3 GPUs at once against a quota of 1.
    let never = app.call(Method::POST, "/api/v2/jobs", &bob, Some(&gpu_job("never", "true", 3))).await;
    assert_eq!(never.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", never.text());
    let fields = &never.json()["fields"];
    let why = fields["spec.resource_shape"][0].as_str().unwrap_or_default();
    assert!(why.contains("needs 3 GPUs at once") && why.contains("quota of role member"), "{}", never.text());

    // Only admins set quotas; the admin raises bob's and the job starts.
    let limits = json!({"running_gpus": 2});
    let refused = app.call(Method::PUT, "/api/v2/quotas/user/bob", &bob, Some(&limits)).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let negative = json!({"running_gpus": -1});
    let bad = app.call(Method::PUT, "/api/v2/quotas/user/bob", &app.admin_token, Some(&negative)).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.text());
    assert!(bad.json()["fields"]["running_gpus"].is_array(), "{}", bad.text());
    let nobody = app.call(Method::PUT, "/api/v2/quotas/user/nobody", &app.admin_token, Some(&limits)).await;
    assert_eq!(nobody.status, StatusCode::NOT_FOUND, "a typo is not a quota: {}", nobody.text());
    let set = app.call(Method::PUT, "/api/v2/quotas/user/bob", &app.admin_token, Some(&limits)).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text());
    app.wait_state_as(&bob, &second, "Completed").await;

    let quotas: QuotaList = typed(&app.get("/api/v2/quotas").await);
    let listed: Vec<(String, QuotaSource, Option<i64>)> =
        quotas.items.iter().map(|q| (q.name.clone(), q.source, q.limits.running_gpus)).collect();
    assert_eq!(
        listed,
        [("member".to_string(), QuotaSource::Config, Some(1)), ("bob".to_string(), QuotaSource::Console, Some(2))]
    );
    assert_eq!(quotas.items[1].updated_by.as_deref(), Some("admin"));
    let usage: UsageNow = typed(&app.get("/api/v2/usage").await);
    let bobs = usage.items.iter().find(|u| u.user == "bob").expect("bob's usage");
    assert_eq!((bobs.running_gpus, bobs.running_replicas, bobs.limits.running_gpus), (1, 1, Some(2)));

    let deleted = app.call(Method::DELETE, "/api/v2/quotas/user/bob", &app.admin_token, None).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    let again = app.call(Method::DELETE, "/api/v2/quotas/user/bob", &app.admin_token, None).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    let config_one = app.call(Method::DELETE, "/api/v2/quotas/role/member", &app.admin_token, None).await;
    assert_eq!(config_one.status, StatusCode::NOT_FOUND, "the config's quota is changed in the config");
    std::fs::write(&release, "").unwrap();
    app.wait_state_as(&bob, &first, "Completed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_refuses_one_more_job_and_a_start_names_the_quota() {
    let app = TestApp::with_config(|config| {
        small_cluster(1.0)(config);
        config.quotas.roles.insert(Role::Member, QuotaLimits { queued_jobs: Some(1), ..Default::default() });
    })
    .await;
    let bob = app.token_with_role("bob", Role::Member).await;
    let (wait, release) = app.gate("holder");
    let holder = app.create_job(&bob, &sh_job("holder", &wait)).await;
    app.wait_state_as(&bob, &holder, "Running").await;
    let queued = app.create_job(&bob, &sh_job("queued", "true")).await;
    app.wait_job_as(&bob, &queued, "waiting for capacity", |j| j["status"]["state"] == "Queueing").await;
    let refused = app.call(Method::POST, "/api/v2/jobs", &bob, Some(&sh_job("third", "true"))).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS, "{}", refused.text());
    let body = refused.json();
    assert_eq!(body["code"], "quota_exceeded");
    assert!(
        body["message"].as_str().unwrap_or_default().starts_with("bob has 1 of 1 jobs allowed in the queue"),
        "{body}"
    );
    // A stopped job may be made, but not started while the queue is full.
    let mut stopped = sh_job("later", "true");
    stopped["spec"]["stopped"] = json!(true);
    let later = app.create_job(&bob, &stopped).await;
    let start_it = json!({"spec": {"stopped": false}});
    let later_uri = format!("/api/v2/jobs/{later}");
    let start = app.call(Method::PATCH, &later_uri, &bob, Some(&start_it)).await;
    assert_eq!(start.status, StatusCode::TOO_MANY_REQUESTS, "{}", start.text());
    assert_eq!(app.job_as(&bob, &later).await["status"]["state"], "Stopped", "the refused start changed nothing");
    std::fs::write(&release, "").unwrap();
    app.wait_state_as(&bob, &queued, "Completed").await;
    let start = app.call(Method::PATCH, &later_uri, &bob, Some(&start_it)).await;
    assert_eq!(start.status, StatusCode::OK, "room in the queue again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_is_counted_per_day_and_a_log_quota_holds_new_jobs() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let bob = app.token_with_role("bob", Role::Member).await;
    let job = app.create_job(&bob, &sh_job("chatty", "seq 1 2000")).await;
    app.wait_state_as(&bob, &job, "Completed").await;
    // What the logs take is measured when the run ends, off the scheduler.
    app.wait_until("bob's logs measured", || async {
        let usage: UsageNow = typed(&app.get("/api/v2/usage").await);
        usage.items.iter().any(|u| u.user == "bob" && u.log_bytes > 0)
    })
    .await;
    let history = app.get("/api/v2/usage/history").await;
    assert_eq!(history.status, StatusCode::OK, "{}", history.text());
    let history: UsageHistory = typed(&history);
    let bobs: Vec<_> = history.items.iter().filter(|d| d.subject == "bob").collect();
    assert_eq!(bobs.len(), 1, "{history:?}");
    assert!(bobs[0].cpu_hours > 0.0 && bobs[0].log_bytes > 0, "{history:?}");
    assert_eq!(bobs[0].day, history.to);
    let by_role: UsageHistory = typed(&app.get("/api/v2/usage/history?by=role").await);
    assert!(by_role.items.iter().any(|d| d.subject == "member"), "{by_role:?}");
    let csv = app.get("/api/v2/usage/history?format=csv").await;
    assert_eq!(csv.status, StatusCode::OK);
    let text = csv.text();
    assert!(text.starts_with("day,user,gpu_hours,cpu_hours,log_bytes\n"), "{text}");
    assert!(text.lines().any(|l| l.starts_with(&format!("{},bob,", history.to))), "{text}");
    let bad = app.get("/api/v2/usage/history?from=yesterday&by=team").await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.text());
    let fields = bad.json()["fields"].clone();
    assert!(fields["from"].is_array() && fields["by"].is_array(), "{fields}");
    let long = app.get("/api/v2/usage/history?from=2020-01-01&to=2026-01-01").await;
    assert_eq!(long.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", long.text());

    // With a log quota of one byte, his next job waits and says why.
    let one_byte = json!({"log_bytes": 1});
    let set = app.call(Method::PUT, "/api/v2/quotas/user/bob", &app.admin_token, Some(&one_byte)).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text());
    let next = app.create_job(&bob, &sh_job("next", "true")).await;
    let held = app.wait_job_as(&bob, &next, "held by the log quota", |j| j["status"]["reason"] == "QuotaExceeded");
    let message = held.await["status"]["message"].as_str().unwrap_or_default().to_string();
    assert!(message.starts_with("over quota: bob keeps ") && message.contains("of logs, 1 B allowed"), "{message}");
    // Deleting the finished job frees the space and the next one runs.
    let deleted = app.call(Method::DELETE, &format!("/api/v2/jobs/{job}"), &bob, None).await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text());
    app.wait_state_as(&bob, &next, "Completed").await;
}

/// `GET /usage/logs`: the jobs whose logs take the most, largest first,
/// against the budget; another user's private job is counted by its owner
/// and size, never named. Admins only; a limit out of range is refused
/// naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admins_see_which_jobs_logs_take_the_most_and_a_private_job_stays_unnamed() {
    let app = TestApp::with_config(|config| {
        small_cluster(4.0)(config);
        config.logs.disk_budget = Some(1_000_000_000);
    })
    .await;
    let bob = app.token_for("bob").await;
    let lines = |n: usize| format!("i=0; while [ $i -lt {n} ]; do echo \"line $i of a log\"; i=$((i+1)); done");
    let big = app.create_job(&app.admin_token, &sh_job("big", &lines(3000))).await;
    let mut private = sh_job("secret-run", &lines(1000));
    private["metadata"]["visibility"] = json!("private");
    let private = app.create_job(&bob, &private).await;
    let small = app.create_job(&bob, &sh_job("small", &lines(10))).await;
    for id in [&big, &private, &small] {
        app.wait_state_as(&bob, id, "Completed").await;
    }
    let usage = |query: &'static str, token: String| {
        let app = &app;
        async move { app.call(Method::GET, &format!("/api/v2/usage/logs{query}"), &token, None).await }
    };
    app.wait_until("the three jobs' logs measured", || async {
        usage("", app.admin_token.clone()).await.json()["items"].as_array().is_some_and(|items| items.len() == 3)
    })
    .await;
    let listed = usage("", app.admin_token.clone()).await.json();
    let items = listed["items"].as_array().unwrap();
    let ids: Vec<&serde_json::Value> = items.iter().map(|i| &i["job_id"]).collect();
    assert_eq!(ids, [&json!(big), &serde_json::Value::Null, &json!(small)], "{listed:#}");
    assert_eq!(items[1]["created_by"], "bob");
    assert!(!listed.to_string().contains(&private), "the private job's id is nowhere: {listed:#}");
    let sizes: Vec<i64> = items.iter().map(|i| i["log_bytes"].as_i64().unwrap()).collect();
    assert!(sizes[0] > sizes[1] && sizes[1] > sizes[2] && sizes[2] > 0, "{sizes:?}");
    assert_eq!(listed["used_bytes"].as_i64().unwrap(), sizes.iter().sum::<i64>());
    assert_eq!(listed["disk_budget_bytes"], 1_000_000_000);
    assert_eq!(items[0]["state"], "Completed");
    assert_eq!(items[0]["log_retention"]["policy"], "minimum_retention");

    assert_eq!(usage("?limit=1", app.admin_token.clone()).await.json()["items"].as_array().unwrap().len(), 1);
    let refused = usage("?limit=0", app.admin_token.clone()).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());
    assert!(refused.text().contains("limit"));
    assert_eq!(usage("", bob).await.status, StatusCode::FORBIDDEN);
}
