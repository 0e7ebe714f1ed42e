//! The job lifecycle with real processes: the in-process API over a real
//! SQLite file, the real scheduler, and replicas run by the real `jobdeck
//! supervise` binary. Every wait polls with generous time limits; nothing
//! asserts on timing.

use crate::common;

use axum::http::{Method, StatusCode};
use common::{sh_job, small_cluster, TestApp, PATIENCE};
use serde_json::{json, Value};

fn state(job: &Value) -> &str {
    job["status"]["state"].as_str().unwrap_or("")
}

fn replica_ids(replicas: &[Value]) -> Vec<String> {
    replicas.iter().map(|r| r["id"].as_str().unwrap().to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_completions_with_parallelism_two_print_their_indexes() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let mut job = sh_job("indexed", "echo index=$JOB_COMPLETION_INDEX of $JOB_COMPLETIONS; sleep 0.5");
    job["spec"]["completions"] = json!(3);
    job["spec"]["parallelism"] = json!(2);
    let id = app.create_job(&app.admin_token, &job).await;
    let done = app.wait_state(&id, "Completed").await;
    assert_eq!(done["status"]["succeeded"], 3);
    assert_eq!(done["status"]["reason"], "Completed");

    let replicas = app.replicas(&id).await;
    assert_eq!(replica_ids(&replicas), [format!("{id}-0-0"), format!("{id}-1-0"), format!("{id}-2-0")]);
    for (index, replica) in replicas.iter().enumerate() {
        assert_eq!(replica["status"]["phase"], "succeeded");
        assert_eq!(replica["status"]["exit_code"], 0);
        assert_eq!(replica["status"]["node"]["name"], "node-a");
        let log = app.log(&id, replica["id"].as_str().unwrap()).await;
        assert_eq!(log, format!("index={index} of 3\n"));
    }
    // Never more than two at once: at every start, fewer than two others ran.
    let spans: Vec<(i64, i64)> = replicas
        .iter()
        .map(|r| (r["status"]["start_time"].as_i64().unwrap(), r["status"]["end_time"].as_i64().unwrap()))
        .collect();
    for (start, _) in &spans {
        let overlapping = spans.iter().filter(|(s, e)| s <= start && start < e).count();
        assert!(overlapping <= 2, "more than two replicas ran at once: {spans:?}");
    }
    let reasons: Vec<String> =
        app.events(&id).await.iter().map(|e| e["reason"].as_str().unwrap().to_string()).collect();
    for expected in ["Created", "Scheduled", "Started", "Running", "Succeeded", "Completed"] {
        assert!(reasons.iter().any(|r| r == expected), "no {expected} event in {reasons:?}");
    }
    assert_eq!(reasons[0], "Completed", "events are newest first: {reasons:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_command_is_retried_up_to_the_backoff_limit_then_fails() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let mut job = sh_job("failing", "echo trying; exit 3");
    job["spec"]["backoff_limit"] = json!(1);
    let id = app.create_job(&app.admin_token, &job).await;
    let failed = app.wait_state(&id, "Failed").await;
    assert_eq!(failed["status"]["reason"], "BackoffLimitExceeded");
    assert_eq!(failed["status"]["failed"], 2);
    let replicas = app.replicas(&id).await;
    assert_eq!(replica_ids(&replicas), [format!("{id}-0-0"), format!("{id}-0-1")]);
    for replica in &replicas {
        assert_eq!(replica["status"]["phase"], "failed");
        assert_eq!(replica["status"]["exit_code"], 3);
        assert_eq!(replica["status"]["reason"], "Error");
        assert_eq!(app.log(&id, replica["id"].as_str().unwrap()).await, "trying\n");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_active_deadline_fails_the_job_and_kills_its_process() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let mut job = sh_job("deadline", "echo pid=$$; exec sleep 60");
    job["spec"]["active_deadline_seconds"] = json!(2);
    let id = app.create_job(&app.admin_token, &job).await;
    app.wait_state(&id, "Running").await;
    let replica = format!("{id}-0-0");
    let mut pid = 0;
    app.wait_until("the replica to print its pid", || {
        let app = &app;
        let id = id.clone();
        let replica = replica.clone();
        async move { app.log(&id, &replica).await.starts_with("pid=") }
    })
    .await;
    let log = app.log(&id, &replica).await;
    pid = log.trim().trim_start_matches("pid=").parse::<i32>().unwrap_or(pid);
    assert!(pid > 0, "{log}");
    let failed = app.wait_state(&id, "Failed").await;
    assert_eq!(failed["status"]["reason"], "DeadlineExceeded");
    let replicas = app.replicas(&id).await;
    assert_eq!(replicas[0]["status"]["reason"], "DeadlineExceeded");
    assert_eq!(replicas[0]["status"]["signal"], 15);
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    assert!(!String::from_utf8_lossy(&cmdline).contains("sleep"), "the sleep process {pid} still runs");
}

/// A job that runs until the test creates `release` in the data directory.
fn held_job(app: &TestApp, name: &str) -> (Value, std::path::PathBuf) {
    let (wait, release) = app.gate(name);
    (sh_job(name, &format!("echo started; {wait}; echo released")), release)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_node_group_queues_the_next_job_with_its_readiness_issue() {
    let app = TestApp::with_config(small_cluster(1.0)).await;
    let (first, release) = held_job(&app, "first");
    let first = app.create_job(&app.admin_token, &first).await;
    app.wait_state(&first, "Running").await;

    let second = app.create_job(&app.admin_token, &sh_job("second", "echo second")).await;
    let queued = app.wait_job(&second, "queued for capacity", |j| j["status"]["reason"] == "NoCapacity").await;
    assert_eq!(state(&queued), "Queueing");
    assert_eq!(queued["status"]["message"], "waiting for capacity: needs 1 CPU, 0 free in group local");
    let pending = app.replicas(&second).await;
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0]["id"], format!("{second}-0-0"));
    assert_eq!(pending[0]["status"]["phase"], "pending");
    assert_eq!(pending[0]["status"]["readiness_issue"]["reason"], "NoCapacity");
    assert_eq!(
        pending[0]["status"]["readiness_issue"]["message"],
        "waiting for capacity: needs 1 CPU, 0 free in group local"
    );
    let groups = app.get("/api/v2/dedicated-node-groups").await.json();
    assert_eq!(groups[0]["status"]["in_use"]["cpu"], 1.0);
    assert_eq!(groups[0]["status"]["queued_jobs"], 1);

    std::fs::write(&release, b"").unwrap();
    app.wait_state(&first, "Completed").await;
    app.wait_state(&second, "Completed").await;
    assert_eq!(app.log(&second, &format!("{second}-0-0")).await, "second\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_may_preempt_evicts_a_lower_priority_job_which_queues_again() {
    let app = TestApp::with_config(small_cluster(1.0)).await;
    let mut low = sh_job("low", "echo low; exec sleep 600");
    low["spec"]["queue_config"] = json!({"priority_class": "low-1000", "can_be_preempted": true});
    let low = app.create_job(&app.admin_token, &low).await;
    app.wait_state(&low, "Running").await;

    let (mut high, release) = held_job(&app, "high");
    high["spec"]["queue_config"] = json!({"priority_class": "high-9000", "can_preempt": true});
    let high = app.create_job(&app.admin_token, &high).await;
    app.wait_state(&high, "Running").await;
    app.wait_job(&low, "queued again", |j| state(j) == "Queueing" && j["status"]["reason"] == "NoCapacity").await;
    let low_replicas = app.replicas(&low).await;
    assert_eq!(low_replicas[0]["status"]["reason"], "Preempted");
    assert_eq!(low_replicas[0]["status"]["phase"], "failed");
    let reasons: Vec<String> =
        app.events(&low).await.iter().map(|e| e["reason"].as_str().unwrap().to_string()).collect();
    assert!(reasons.contains(&"Preempted".to_string()), "{reasons:?}");

    std::fs::write(&release, b"").unwrap();
    app.wait_state(&high, "Completed").await;
    app.wait_state(&low, "Running").await;
    let again = app.replicas(&low).await;
    assert_eq!(replica_ids(&again), [format!("{low}-0-0"), format!("{low}-0-1")]);
    let stopped = app
        .call(
            Method::PATCH,
            &format!("/api/v2/jobs/{low}"),
            &app.admin_token,
            Some(&json!({"spec": {"stopped": true}})),
        )
        .await;
    assert_eq!(stopped.status, StatusCode::OK, "{}", stopped.text());
    app.wait_state(&low, "Stopped").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_and_start_run_the_job_again_with_a_new_attempt() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let id = app.create_job(&app.admin_token, &sh_job("stopper", "echo run; exec sleep 600")).await;
    app.wait_state(&id, "Running").await;
    let patch = |stopped: bool| json!({"spec": {"stopped": stopped}});
    let res = app.call(Method::PATCH, &format!("/api/v2/jobs/{id}"), &app.admin_token, Some(&patch(true))).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    let body = res.json();
    assert_eq!(body["spec"]["stopped"], true);
    assert!(matches!(state(&body), "Stopping" | "Stopped"), "{body}");
    let stopped = app.wait_state(&id, "Stopped").await;
    assert_eq!(stopped["status"]["active"], 0);
    let replicas = app.replicas(&id).await;
    assert_eq!(replicas[0]["status"]["reason"], "Stopped");
    assert_eq!(replicas[0]["status"]["signal"], 15);

    // Stopping again changes nothing; starting queues a new run.
    let again = app.call(Method::PATCH, &format!("/api/v2/jobs/{id}"), &app.admin_token, Some(&patch(true))).await;
    assert_eq!(again.status, StatusCode::OK);
    let started = app.call(Method::PATCH, &format!("/api/v2/jobs/{id}"), &app.admin_token, Some(&patch(false))).await;
    assert_eq!(started.status, StatusCode::OK, "{}", started.text());
    assert_eq!(started.json()["spec"]["stopped"], false);
    app.wait_state(&id, "Running").await;
    app.wait_until("the second attempt to run", || {
        let app = &app;
        let id = id.clone();
        async move {
            let replicas = app.replicas(&id).await;
            replicas.len() == 2 && replicas[1]["status"]["phase"] == "running"
        }
    })
    .await;
    assert_eq!(app.replicas(&id).await[1]["id"], format!("{id}-0-1"));

    // Deleting stops it first, then the job is gone.
    let deleted = app.call(Method::DELETE, &format!("/api/v2/jobs/{id}"), &app.admin_token, None).await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text());
    assert_eq!(deleted.json()["status"]["state"], "Deleting");
    app.wait_until("the job to disappear", || {
        let app = &app;
        let id = id.clone();
        async move { app.get(&format!("/api/v2/jobs/{id}")).await.status == StatusCode::NOT_FOUND }
    })
    .await;
    assert!(!app.data_dir().join("logs").join(&id).exists(), "the logs of a deleted job are removed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_an_ended_job_changes_nothing_and_starting_it_is_refused() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let id = app.create_job(&app.admin_token, &sh_job("quick", "true")).await;
    let before = app.wait_state(&id, "Completed").await;
    // As on Lepton: `lep job stop-all` stops every job its filter lists,
    // finished ones included, and must not abort on one.
    let res = app
        .call(Method::PATCH, &format!("/api/v2/jobs/{id}"), &app.admin_token, Some(&json!({"spec": {"stopped": true}})))
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    let after = app.get(&format!("/api/v2/jobs/{id}")).await.json();
    assert_eq!(after["status"], before["status"], "the job is as it was");
    assert_eq!(after["spec"].get("stopped"), before["spec"].get("stopped"));
    let start = app
        .call(
            Method::PATCH,
            &format!("/api/v2/jobs/{id}"),
            &app.admin_token,
            Some(&json!({"spec": {"stopped": false}})),
        )
        .await;
    assert_eq!(start.status, StatusCode::CONFLICT);
    assert!(start.json()["message"].as_str().unwrap().contains("has ended (Completed)"), "{}", start.text());
    let bad = app
        .call(
            Method::PATCH,
            &format!("/api/v2/jobs/{id}"),
            &app.admin_token,
            Some(&json!({"spec": {"completions": 2}})),
        )
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(bad.json()["fields"]["spec.completions"][0], "cannot be changed after creation");
    // A finished job is deleted at once.
    let deleted = app.call(Method::DELETE, &format!("/api/v2/jobs/{id}"), &app.admin_token, None).await;
    assert_eq!(deleted.status, StatusCode::OK);
    assert_eq!(deleted.json()["status"]["state"], "Completed");
    assert_eq!(app.get(&format!("/api/v2/jobs/{id}")).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_too_long_in_the_queue_fails_with_its_own_reason() {
    let app = TestApp::with_config(small_cluster(1.0)).await;
    let (blocker, release) = held_job(&app, "blocker");
    let blocker = app.create_job(&app.admin_token, &blocker).await;
    app.wait_state(&blocker, "Running").await;
    let mut waiting = sh_job("impatient", "true");
    waiting["spec"]["max_queued_duration_seconds"] = json!(1);
    let waiting = app.create_job(&app.admin_token, &waiting).await;
    let failed = app.wait_state(&waiting, "Failed").await;
    assert_eq!(failed["status"]["reason"], "MaxQueuedDurationExceeded");
    std::fs::write(&release, b"").unwrap();
    app.wait_state(&blocker, "Completed").await;
}

/// A workspace's default queue limit is written into each new job that
/// names none, and ends it with the queue limit's own reason; a job that
/// names one keeps it. Without the setting a job has no limit (Lepton
/// clients rely on that).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_default_queue_limit_is_written_into_new_jobs_that_name_none() {
    let plain = TestApp::with_config(small_cluster(1.0)).await;
    let job = plain.create_job(&plain.admin_token, &sh_job("unlimited", "true")).await;
    let stored = plain.job(&job).await;
    assert_eq!(stored["spec"].get("max_queued_duration_seconds"), None, "{stored}");

    let app = TestApp::with_config(|config: &mut jobdeck_core::Config| {
        small_cluster(1.0)(config);
        config.default_max_queued_duration_seconds = Some(1);
    })
    .await;
    let (blocker, release) = held_job(&app, "blocker");
    let blocker = app.create_job(&app.admin_token, &blocker).await;
    app.wait_state(&blocker, "Running").await;
    let mut patient = sh_job("patient", "true");
    patient["spec"]["max_queued_duration_seconds"] = json!(3600);
    let patient = app.create_job(&app.admin_token, &patient).await;
    let waiting = app.create_job(&app.admin_token, &sh_job("defaulted", "true")).await;
    let failed = app.wait_state(&waiting, "Failed").await;
    assert_eq!(failed["spec"]["max_queued_duration_seconds"], 1);
    assert_eq!(failed["status"]["reason"], "MaxQueuedDurationExceeded");
    let kept = app.job(&patient).await;
    assert_eq!(kept["spec"]["max_queued_duration_seconds"], 3600);
    assert_eq!(kept["status"]["state"], "Queueing");
    std::fs::write(&release, b"").unwrap();
    app.wait_state(&blocker, "Completed").await;
    app.wait_state(&patient, "Completed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_error_stops_retries_when_asked_and_job_retries_restart_the_run() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let mut strict = sh_job("strict", "exit 1");
    strict["spec"]["backoff_limit"] = json!(3);
    strict["spec"]["disable_retry_on_program_error"] = json!(true);
    let strict = app.create_job(&app.admin_token, &strict).await;

    let mut retried = sh_job("retried", "exit 2");
    retried["spec"]["backoff_limit"] = json!(0);
    retried["spec"]["max_job_failure_retry"] = json!(1);
    let retried = app.create_job(&app.admin_token, &retried).await;

    let failed = app.wait_state(&strict, "Failed").await;
    assert_eq!(failed["status"]["reason"], "ProgramError");
    assert_eq!(app.replicas(&strict).await.len(), 1);

    let failed = app.wait_state(&retried, "Failed").await;
    assert_eq!(failed["status"]["reason"], "BackoffLimitExceeded");
    let replicas = app.replicas(&retried).await;
    assert_eq!(replica_ids(&replicas), [format!("{retried}-0-0"), format!("{retried}-0-1")]);
    // Without `attempts=all`, as Lepton lists a job's pods: the newest
    // attempt of each index, which `lep job log` follows.
    let current = app.get(&format!("/api/v2/jobs/{retried}/replicas?job_query_mode=alive_and_archive")).await;
    assert_eq!(replica_ids(current.json().as_array().unwrap()), [format!("{retried}-0-1")]);
    let bad = app.get(&format!("/api/v2/jobs/{retried}/replicas?attempts=every")).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(bad.text().contains("attempts must be current or all"), "{}", bad.text());
    let reasons: Vec<String> =
        app.events(&retried).await.iter().map(|e| e["reason"].as_str().unwrap().to_string()).collect();
    assert!(reasons.contains(&"PendingRetry".to_string()), "{reasons:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_get_the_platform_environment_and_resolved_secrets() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let res = app
        .post_json("/api/v2/usersecrets", &app.admin_token, &json!([{"name": "API_KEY", "value": "s3cret-value"}]))
        .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    assert!(!res.text().contains("s3cret-value"));
    let listed = app.get("/api/v2/usersecrets").await;
    assert_eq!(listed.json()[0]["name"], "API_KEY");
    assert!(!listed.text().contains("s3cret-value"));

    let mut job = sh_job(
        "envs",
        "echo $LEPTON_JOB_NAME $JOB_COMPLETION_INDEX/$JOB_COMPLETIONS $LEPTON_JOB_WORKER_INDEX/$LEPTON_JOB_TOTAL_WORKERS $WORLD_SIZE $NODE_RANK $MASTER_ADDR key=$KEY plain=$PLAIN cuda=[$CUDA_VISIBLE_DEVICES]",
    );
    job["spec"]["workers"] = json!(2);
    job["spec"]["envs"] = json!([
        {"name": "KEY", "value_from": {"secret_name_ref": "API_KEY"}},
        {"name": "PLAIN", "value": "hello"}
    ]);
    let id = app.create_job(&app.admin_token, &job).await;
    let stored = app.job(&id).await;
    assert!(!stored.to_string().contains("s3cret-value"), "the spec keeps the reference only");
    app.wait_state(&id, "Completed").await;
    for index in 0..2 {
        let log = app.log(&id, &format!("{id}-{index}-0")).await;
        assert_eq!(log, format!("envs {index}/2 {index}/2 2 {index} 127.0.0.1 key=s3cret-value plain=hello cuda=[]\n"));
    }
    let del = app.call(Method::DELETE, "/api/v2/usersecrets/API_KEY", &app.admin_token, None).await;
    assert_eq!(del.status, StatusCode::OK);
    let again = app.call(Method::DELETE, "/api/v2/usersecrets/API_KEY", &app.admin_token, None).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    // A reference to a secret that does not exist is refused on its field.
    let res = app.post_json("/api/v2/jobs", &app.admin_token, &job).await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", res.text());
    assert!(res.json()["fields"]["spec.envs[0].value_from.secret_name_ref"].is_array());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn following_a_log_streams_until_the_replica_ends() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let id = app
        .create_job(
            &app.admin_token,
            &sh_job("talker", "for i in 1 2 3 4 5; do echo line $i; sleep 0.2; done; echo '<b>done</b>' >&2"),
        )
        .await;
    app.wait_state(&id, "Running").await;
    let res = app.get(&format!("/api/v2/jobs/{id}/replicas/{id}-0-0/log?follow=true&timestamps=true")).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.headers["content-type"], "text/plain; charset=utf-8");
    assert_eq!(res.headers["x-content-type-options"], "nosniff");
    let text = res.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "{text}");
    for (i, line) in lines.iter().take(5).enumerate() {
        let (time, rest) = line.split_once(' ').unwrap();
        assert!(time.ends_with('Z') && time.contains('T'), "{line}");
        assert_eq!(rest, format!("line {}", i + 1));
    }
    assert!(lines[5].ends_with(" <b>done</b>"), "{text}");
    assert_eq!(state(&app.job(&id).await), "Completed");

    let missing = app.get(&format!("/api/v2/jobs/{id}/replicas/{id}-0-7/log")).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    let foreign = app.get(&format!("/api/v2/jobs/{id}/replicas/other-0-0/log")).await;
    assert_eq!(foreign.status, StatusCode::NOT_FOUND);
}

/// `lep job log` sends a plain GET and prints "End of log" when the body
/// ends, so a plain request on a running attempt streams it to its end, as
/// Lepton's endpoint does; `follow=false` answers what is there now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_log_request_follows_a_running_replica_as_lepton_does() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let id = app
        .create_job(&app.admin_token, &sh_job("plain", &format!("echo first; {}; echo second", app.gate("plain").0)))
        .await;
    let release = app.gate("plain").1;
    let path = format!("/api/v2/jobs/{id}/replicas/{id}-0-0/log");
    app.wait_until("the first line", || {
        let (app, path) = (&app, path.clone());
        async move { app.get(&format!("{path}?follow=false")).await.text() == "first\n" }
    })
    .await;
    // What is there now, although the replica still runs: the gate stays
    // shut, so a request that followed would never answer.
    let now = tokio::time::timeout(PATIENCE, app.get(&format!("{path}?follow=false"))).await;
    assert_eq!(now.expect("follow=false answers without waiting for the end").text(), "first\n");
    // The plain request waits for the rest: it is sent first, and the gate
    // opens only once it waits.
    let (res, ()) = tokio::join!(app.get(&path), async {
        tokio::task::yield_now().await;
        std::fs::write(&release, "").unwrap();
    });
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.text(), "first\nsecond\n");
    app.wait_state(&id, "Completed").await;
    // Once the attempt ended, a plain request answers with the whole log.
    assert_eq!(app.get(&path).await.text(), "first\nsecond\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_without_log_collection_keep_no_log() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let mut job = sh_job("quiet", "echo not kept");
    job["spec"]["log"] = json!({"enable_collection": false});
    let id = app.create_job(&app.admin_token, &job).await;
    app.wait_state(&id, "Completed").await;
    let res = app.get(&format!("/api/v2/jobs/{id}/replicas/{id}-0-0/log")).await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    assert_eq!(res.json()["code"], "log_collection_disabled");
    assert!(!app.data_dir().join("logs").join(&id).exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_limits_are_enforced_or_the_job_is_told_they_are_not() {
    let app = TestApp::with_config(|config| {
        small_cluster(2.0)(config);
        config.shapes[0].memory_mb = 64;
    })
    .await;
    // awk doubles a string until memory runs out.
    let id = app
        .create_job(&app.admin_token, &sh_job("hungry", "awk 'BEGIN { s = \"x\"; while (length(s) < 2^28) s = s s }'"))
        .await;
    let events = {
        app.wait_job(&id, "finished", |j| matches!(state(j), "Failed" | "Completed")).await;
        app.events(&id).await
    };
    let executor_note = events.iter().find(|e| e["reason"] == "Executor").expect("an executor event");
    let note = executor_note["message"].as_str().unwrap();
    if note.contains("is limited to its shape's") {
        let replicas = app.replicas(&id).await;
        assert_eq!(replicas[0]["status"]["reason"], "OOMKilled", "{replicas:#?}");
        assert_eq!(state(&app.job(&id).await), "Failed");
    } else {
        assert!(note.contains("memory is not limited"), "{note}");
    }
}

/// A job stored before the contract bounded its numbers (deadline, queue
/// limit and archive time of i64::MAX seconds) neither overflows nor stops
/// the scheduler: it runs to completion, and so does the next job.
#[tokio::test]
async fn a_stored_job_with_unbounded_numbers_does_not_stop_the_scheduler() {
    let mut spec = sh_job("old", "echo old")["spec"].clone();
    spec["active_deadline_seconds"] = json!(i64::MAX);
    spec["max_queued_duration_seconds"] = json!(i64::MAX);
    spec["ttl_seconds_after_finished"] = json!(i64::MAX);
    let old = common::stored_queued_job("old", spec, 0);
    let app = TestApp::with_stored_jobs(small_cluster(2.0), vec![old]).await;
    app.wait_state("old-aaaaa", "Completed").await;
    let next = app.create_job(&app.admin_token, &sh_job("next", "echo next")).await;
    app.wait_state(&next, "Completed").await;
}

/// A queued job whose stored spec no longer reads (a damaged disk, or a
/// field this release does not know) is failed on its own when the server
/// starts, saying why; the server starts, and the job stored beside it runs.
#[tokio::test]
async fn a_stored_job_whose_spec_cannot_be_read_fails_alone_at_start() {
    let queued = |id: &str| common::stored_queued_job(id, sh_job(id, "echo ran")["spec"].clone(), 0);
    let app = TestApp::with_stored_jobs_changed_by(
        small_cluster(2.0),
        vec![queued("broken"), queued("fine")],
        r#"UPDATE jobs SET spec = '{"no_such_field": 1}' WHERE id = 'broken-aaaaa'"#,
    )
    .await;
    app.wait_state("fine-aaaaa", "Completed").await;
    let db = rusqlite::Connection::open(app.store.path()).unwrap();
    let (state, message): (String, String) = db
        .query_row("SELECT state, message FROM jobs WHERE id = 'broken-aaaaa'", [], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    assert_eq!(state, "Failed");
    assert!(message.starts_with("the stored job cannot be read: the spec cannot be read"), "{message}");
    assert!(message.contains("no_such_field"), "{message}");
}

/// Preempts `low_owner`'s low-priority job with `high_owner`'s
/// high-priority one (visibility as given) and returns both ids with every
/// event message of each, read as its own creator.
async fn preemption_between(
    app: &TestApp,
    low_owner: &str,
    low_visibility: &str,
    high_owner: &str,
    high_visibility: &str,
) -> (String, String, Vec<String>, Vec<String>) {
    let low_token = app.token_for(low_owner).await;
    let high_token = app.token_for(high_owner).await;
    let mut low = sh_job("low", "echo low; exec sleep 600");
    low["metadata"]["visibility"] = json!(low_visibility);
    low["spec"]["queue_config"] = json!({"priority_class": "low-1000", "can_be_preempted": true});
    let low = app.create_job(&low_token, &low).await;
    app.wait_state_as(&low_token, &low, "Running").await;
    let mut high = sh_job("high", "echo high");
    high["metadata"]["visibility"] = json!(high_visibility);
    high["spec"]["queue_config"] = json!({"priority_class": "high-9000", "can_preempt": true});
    let high = app.create_job(&high_token, &high).await;
    app.wait_state_as(&high_token, &high, "Completed").await;
    let messages = |id: String, token: String| async move {
        let res = app.call(Method::GET, &format!("/api/v2/jobs/{id}/events"), &token, None).await;
        assert_eq!(res.status, StatusCode::OK, "{}", res.text());
        let events = res.json().as_array().unwrap().clone();
        let status = app.call(Method::GET, &format!("/api/v2/jobs/{id}"), &token, None).await.json();
        let mut texts: Vec<String> = events.iter().map(|e| e["message"].as_str().unwrap().to_string()).collect();
        texts.push(status["status"]["message"].as_str().unwrap_or_default().to_string());
        texts
    };
    let low_messages = messages(low.clone(), low_token.clone()).await;
    let high_messages = messages(high.clone(), high_token).await;
    let stop = app
        .call(Method::PATCH, &format!("/api/v2/jobs/{low}"), &low_token, Some(&json!({"spec": {"stopped": true}})))
        .await;
    assert_eq!(stop.status, StatusCode::OK, "{}", stop.text());
    app.wait_state_as(&low_token, &low, "Stopped").await;
    (low, high, low_messages, high_messages)
}

/// A preemption writes an event on both jobs; neither may carry the id of a
/// job its readers cannot see (issue 4, visibility).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preemption_events_name_only_jobs_their_readers_may_see() {
    let app = TestApp::with_config(small_cluster(1.0)).await;
    // (low owner, low visibility, high owner, high visibility, each names the other)
    let cases = [
        ("alice", "private", "bob", "private", false),
        ("alice", "public", "bob", "private", false),
        ("alice", "private", "alice", "private", true),
        ("alice", "private", "bob", "public", true),
    ];
    for (low_owner, low_visibility, high_owner, high_visibility, named) in cases {
        let case = format!("{low_owner}/{low_visibility} preempted by {high_owner}/{high_visibility}");
        let (low, high, low_messages, high_messages) =
            preemption_between(&app, low_owner, low_visibility, high_owner, high_visibility).await;
        let preempted = low_messages
            .iter()
            .find(|m| m.starts_with("preempted by"))
            .unwrap_or_else(|| panic!("{case}: {low_messages:?}"));
        let waiting = high_messages
            .iter()
            .find(|m| m.starts_with("waiting for 1 preempted job(s) to stop"))
            .unwrap_or_else(|| panic!("{case}: {high_messages:?}"));
        if named {
            assert_eq!(
                preempted,
                &format!("preempted by job {high} (priority 9000) which needs its resources in node group local"),
                "{case}"
            );
        } else {
            assert_eq!(
                preempted, "preempted by a higher-priority job which needs its resources in node group local",
                "{case}"
            );
            assert!(low_messages.iter().all(|m| !m.contains(&high)), "{case}: {low_messages:?}");
        }
        // The victim is named to the preemptor's readers only when they may
        // see it: public, or both private jobs of one creator.
        let victim_named = low_visibility == "public" || (high_visibility == "private" && low_owner == high_owner);
        if victim_named {
            assert_eq!(waiting, &format!("waiting for 1 preempted job(s) to stop: {low}"), "{case}");
        } else {
            assert_eq!(waiting, "waiting for 1 preempted job(s) to stop: 1 other job", "{case}");
            assert!(high_messages.iter().all(|m| !m.contains(&low)), "{case}: {high_messages:?}");
        }
    }
}

/// `lep job create --node-id` checks the ids it is given against
/// `GET /dedicated-node-groups/{id}/nodes`, and `lep node list` sums it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_group_lists_its_nodes_with_what_runs_on_them() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let alice = app.token_for("alice").await;
    let bob = app.token_for("bob").await;
    let path = "/api/v2/dedicated-node-groups/local/nodes";
    let idle = app.call(Method::GET, path, &bob, None).await;
    assert_eq!(idle.status, StatusCode::OK, "{}", idle.text());
    let nodes = idle.json();
    assert_eq!(nodes.as_array().unwrap().len(), 1, "{nodes}");
    let node = &nodes[0];
    assert_eq!((node["metadata"]["id"].as_str(), node["metadata"]["name"].as_str()), (Some("node-a"), Some("node-a")));
    assert_eq!(node["spec"]["dedicated_node_group"], "local");
    assert_eq!(node["spec"]["unschedulable"], false);
    assert_eq!(node["spec"]["resource"]["cpu"], json!({"allocated": 0.0, "total": 2.0}));
    assert_eq!(node["spec"]["resource"]["memory"], json!({"allocated": 0, "total": 16384}));
    assert!(node["spec"]["resource"].get("gpu").is_none(), "a CPU node has no gpu entry: {node}");
    assert_eq!(node["status"], json!({"status": ["Ready"], "workloads": []}));

    let mut job = sh_job("secret-work", "sleep 30");
    job["metadata"]["visibility"] = json!("private");
    let id = app.create_job(&alice, &job).await;
    app.wait_until("alice's job to run", || {
        let (app, alice, id) = (&app, alice.clone(), id.clone());
        async move {
            let res = app.call(Method::GET, &format!("/api/v2/jobs/{id}"), &alice, None).await;
            res.json()["status"]["state"] == "Running"
        }
    })
    .await;
    let own = app.call(Method::GET, path, &alice, None).await.json();
    assert_eq!(own[0]["spec"]["resource"]["cpu"]["allocated"], 1.0);
    assert_eq!(own[0]["spec"]["resource"]["memory"]["allocated"], 1024);
    let workload = &own[0]["status"]["workloads"][0];
    assert_eq!(workload["type"], "job");
    assert_eq!(workload["id"], id.as_str());
    assert_eq!(workload["name"], "secret-work");
    assert_eq!(workload["replica_id"], format!("{id}-0-0"));
    // Bob sees the capacity it takes, not the private job.
    let others = app.call(Method::GET, path, &bob, None).await.json();
    assert_eq!(others[0]["spec"]["resource"]["cpu"]["allocated"], 1.0);
    assert_eq!(others[0]["status"]["workloads"], json!([]));
    let busy = app.call(Method::GET, &format!("{path}?idle=true"), &bob, None).await.json();
    assert_eq!(busy, json!([]), "a node with work on it is not idle");

    let missing = app.call(Method::GET, "/api/v2/dedicated-node-groups/nope/nodes", &bob, None).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    let res =
        app.call(Method::PATCH, &format!("/api/v2/jobs/{id}"), &alice, Some(&json!({"spec": {"stopped": true}}))).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
}

/// GPUs are handed out as `CUDA_VISIBLE_DEVICES`: two replicas of a
/// one-GPU shape running at once on a two-GPU node get different GPUs, and a
/// third job waits for one with a readiness issue that says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gpus_are_handed_out_one_replica_at_a_time() {
    let app = TestApp::with_config(|config| {
        small_cluster(4.0)(config);
        config.node_groups[0].gpus = 2;
        config.shapes.push(jobdeck_core::config::ShapeConfig {
            name: "gpu.1".into(),
            cpu: 1.0,
            memory_mb: 1024,
            gpus: 1,
            accelerator_type: Some("test-gpu".into()),
            accelerator_memory_mb: None,
            compute_capability: None,
            ephemeral_storage_gb: None,
            description: None,
        });
    })
    .await;
    let (wait, release) = app.gate("pair");
    let mut pair =
        sh_job("pair", &format!("echo gpu=[$CUDA_VISIBLE_DEVICES] type=$LEPTON_RESOURCE_ACCELERATOR_TYPE; {wait}"));
    pair["spec"]["resource_shape"] = json!("gpu.1");
    pair["spec"]["completions"] = json!(2);
    pair["spec"]["parallelism"] = json!(2);
    let pair = app.create_job(&app.admin_token, &pair).await;
    app.wait_state(&pair, "Running").await;
    let mut third = sh_job("third", "echo gpu=[$CUDA_VISIBLE_DEVICES]");
    third["spec"]["resource_shape"] = json!("gpu.1");
    let third = app.create_job(&app.admin_token, &third).await;
    let waiting = app.job(&third).await;
    assert_eq!(waiting["status"]["state"], "Queueing", "{waiting}");
    std::fs::write(&release, "").unwrap();
    app.wait_state(&pair, "Completed").await;
    let mut seen: Vec<String> = Vec::new();
    for index in 0..2 {
        let log = app.log(&pair, &format!("{pair}-{index}-0")).await;
        assert!(log.ends_with(" type=test-gpu\n"), "{log}");
        seen.push(log.split_whitespace().next().unwrap().to_string());
    }
    seen.sort();
    assert_eq!(seen, ["gpu=[0]", "gpu=[1]"], "each replica has a GPU of its own");
    app.wait_state(&third, "Completed").await;
    let log = app.log(&third, &format!("{third}-0-0")).await;
    assert!(log == "gpu=[0]\n" || log == "gpu=[1]\n", "{log}");
}

/// Failed replicas wait out Kubernetes' back-off before their next attempt:
/// the base doubled per failure of that replica, capped. The waiting attempt
/// is listed as pending, with when it starts. (The times compared are the
/// server's own stamps.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_wait_out_a_doubling_back_off_shown_on_the_waiting_attempt() {
    let app = TestApp::with_config(|config| {
        small_cluster(2.0)(config);
        config.executor.local.retry_backoff_seconds = 1;
        config.executor.local.retry_backoff_max_seconds = 3;
    })
    .await;
    let mut job = sh_job("backing-off", "exit 3");
    job["spec"]["backoff_limit"] = json!(3);
    let id = app.create_job(&app.admin_token, &job).await;
    app.wait_until("a retry waiting out its back-off", || {
        let app = &app;
        let id = id.clone();
        async move {
            app.replicas(&id).await.iter().any(|r| {
                r["status"]["phase"] == "pending"
                    && r["status"]["readiness_issue"]["reason"] == "BackOff"
                    && r["status"]["retry_at"].is_i64()
            })
        }
    })
    .await;
    app.wait_state(&id, "Failed").await;
    let replicas = app.replicas(&id).await;
    assert_eq!(replicas.len(), 4, "{replicas:?}");
    // Waits after the 1st, 2nd and 3rd failure: 1 s, 2 s, then 4 s capped
    // at 3 s.
    for (previous, (next, wait_ms)) in replicas.iter().zip(replicas[1..].iter().zip([1_000, 2_000, 3_000])) {
        let ended = previous["status"]["end_time"].as_i64().unwrap();
        let started = next["status"]["start_time"].as_i64().unwrap();
        assert!(
            started - ended >= wait_ms,
            "{} started {} ms after {} ended",
            next["id"],
            started - ended,
            previous["id"]
        );
        assert!(next["status"].get("retry_at").is_none(), "an attempt that ran shows no retry time: {next}");
    }
}

/// While its only replica waits out a back-off, a running job says that no
/// replica runs and one waits, instead of still counting the failed one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_job_whose_replica_waits_to_restart_says_so() {
    let app = TestApp::with_config(|config| {
        small_cluster(2.0)(config);
        config.executor.local.retry_backoff_seconds = 300;
    })
    .await;
    let (wait, release) = app.gate("restarting");
    let id = app.create_job(&app.admin_token, &sh_job("restarting", &format!("{wait}; exit 3"))).await;
    let running = app.wait_state(&id, "Running").await;
    assert_eq!(running["status"]["message"], "1 replica(s) running");
    std::fs::write(&release, b"").unwrap();
    let waiting = app
        .wait_job(&id, "the message to count the waiting replica", |j| {
            j["status"]["message"] == "0 replica(s) running, 1 waiting to start"
        })
        .await;
    assert_eq!(waiting["status"]["state"], "Running");
    let replicas = app.replicas(&id).await;
    assert_eq!(replicas[1]["status"]["readiness_issue"]["reason"], "BackOff", "{replicas:?}");
}

/// Stopping a job whose replica waits out its back-off ends that attempt
/// before it ever starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_during_a_back_off_ends_the_waiting_attempt() {
    let app = TestApp::with_config(|config| {
        small_cluster(2.0)(config);
        config.executor.local.retry_backoff_seconds = 300;
    })
    .await;
    let id = app.create_job(&app.admin_token, &sh_job("stopped-in-back-off", "exit 3")).await;
    app.wait_until("the retry to wait", || {
        let app = &app;
        let id = id.clone();
        async move { app.replicas(&id).await.get(1).is_some_and(|r| r["status"]["readiness_issue"]["reason"] == "BackOff") }
    })
    .await;
    let waiting = app.replicas(&id).await[1].clone();
    let retry_at = waiting["status"]["retry_at"].as_i64().unwrap();
    let failed_at = app.replicas(&id).await[0]["status"]["end_time"].as_i64().unwrap();
    assert!((300_000..301_000).contains(&(retry_at - failed_at)), "{waiting}");
    let message = waiting["status"]["readiness_issue"]["message"].as_str().unwrap();
    assert!(message.starts_with("retrying in 300 s"), "{message}");

    let stop = json!({"spec": {"stopped": true}});
    let res = app.call(Method::PATCH, &format!("/api/v2/jobs/{id}"), &app.admin_token, Some(&stop)).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    app.wait_state(&id, "Stopped").await;
    let ended = &app.replicas(&id).await[1]["status"];
    assert_eq!((ended["phase"].as_str(), ended["reason"].as_str()), (Some("failed"), Some("Stopped")), "{ended}");
    assert!(ended.get("start_time").is_none(), "it never started: {ended}");
}
