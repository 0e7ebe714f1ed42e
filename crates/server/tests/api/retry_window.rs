//! The retry window (`spec.retry_window_seconds`, dstack's
//! `retry.duration`): within it a failed run starts again, as often as it
//! fails unless `max_job_failure_retry` bounds it; after it, the failure
//! ends the job, saying that the window ended. The window counts from the
//! job's creation, so a job stored long ago stands for one whose window
//! has passed, without a test waiting for a clock.

use crate::common;

use common::{sh_job, small_cluster, TestApp};
use serde_json::{json, Value};

/// A job whose only replica fails at once, with no replica retries: each
/// failure is a failed run, which only the window restarts.
fn failing(name: &str, window_s: i64) -> Value {
    let mut spec = sh_job(name, "echo attempt; exit 3")["spec"].clone();
    spec["backoff_limit"] = json!(0);
    spec["retry_window_seconds"] = json!(window_s);
    spec
}

#[tokio::test]
async fn within_its_window_a_failed_job_starts_again_and_after_it_the_failure_ends_the_job() {
    let within = common::stored_queued_job("within", failing("within", 3600), 0);
    let after = common::stored_queued_job("after", failing("after", 3600), 7200);
    let mut bounded_spec = failing("bounded", 3600);
    bounded_spec["max_job_failure_retry"] = json!(1);
    let bounded = common::stored_queued_job("bounded", bounded_spec, 0);
    let app = TestApp::with_stored_jobs(small_cluster(4.0), vec![within, after, bounded]).await;

    // Inside the window: restarted with no count given (two restarts seen).
    app.wait_job("within-aaaaa", "a second job retry", |job| {
        job["status"]["message"].as_str().is_some_and(|m| m.contains("(job retry 2,"))
    })
    .await;
    let events = app.events("within-aaaaa").await;
    let retry = events.iter().find(|e| e["reason"] == "PendingRetry").unwrap();
    assert!(retry["message"].as_str().unwrap().contains("within its retry window"), "{retry}");
    let stop = json!({"spec": {"stopped": true}});
    app.call(axum::http::Method::PATCH, "/api/v2/jobs/within-aaaaa", &app.admin_token, Some(&stop)).await;

    // Past the window: the first failure ends the job and says why.
    let job = app.wait_state("after-aaaaa", "Failed").await;
    let message = job["status"]["message"].as_str().unwrap();
    assert!(message.contains("its retry window of 1 hour ended"), "{message}");

    // A count still bounds the retries inside the window.
    let job = app.wait_state("bounded-aaaaa", "Failed").await;
    let retries = app.events("bounded-aaaaa").await.iter().filter(|e| e["reason"] == "PendingRetry").count();
    assert_eq!(retries, 1, "{job}");
}

/// A job preempted after its window ends fails instead of waiting in the
/// queue again.
#[tokio::test]
async fn a_job_preempted_after_its_window_fails_instead_of_waiting_again() {
    let mut spec = sh_job("low", "echo started; sleep 600")["spec"].clone();
    spec["queue_config"] = json!({"priority_class": "low-1000", "can_be_preempted": true});
    spec["retry_window_seconds"] = json!(60);
    let low = common::stored_queued_job("low", spec, 3600);
    let app = TestApp::with_stored_jobs(small_cluster(1.0), vec![low]).await;
    app.wait_state("low-aaaaa", "Running").await;
    let mut high = sh_job("high", "echo high");
    high["spec"]["queue_config"] = json!({"priority_class": "high-9000", "can_preempt": true});
    let high = app.create_job(&app.admin_token, &high).await;
    let job = app.wait_state("low-aaaaa", "Failed").await;
    let message = job["status"]["message"].as_str().unwrap();
    assert!(
        message.contains("preempted by a job of higher priority after its retry window of 1 minute ended"),
        "{message}"
    );
    assert_eq!(job["status"]["reason"], "Preempted");
    app.wait_state(&high, "Completed").await;
}
