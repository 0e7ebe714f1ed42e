//! Conditions of running jobs, end to end: a real job's log line matching a
//! rule's pattern, a real replica's memory near its shape's limit (sampled
//! by the local executor), and idle GPUs (readings added to the server's
//! samples, as this machine has no GPU), each posted once to a receiver on
//! loopback with a link to the line or the metrics; and the rules' settings
//! refused by field when they are wrong.

use std::time::Duration;

use axum::http::{Method, StatusCode};
use jobdeck_store::MetricSample;
use serde_json::{json, Value};

use crate::common::{sh_job, TestApp};
use crate::notifications::{add_rule, add_webhook, deliveries, hmac_hex, notifying, Receiver};

/// Notifications to loopback, the conditions looked for every second and
/// resources sampled every 100 ms.
fn watching(config: &mut jobdeck_core::Config) {
    notifying(&["127.0.0.1"])(config);
    config.notifications.watch_interval = Duration::from_secs(1);
    config.executor.local.metrics_interval_ms = 100;
}

/// A script that waits for `gate` (a file) before going on.
fn wait_for(gate: &std::path::Path) -> String {
    format!("while [ ! -e '{}' ]; do sleep 0.05; done", gate.display())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_line_matching_a_pattern_is_posted_once_with_a_link_to_it() {
    let app = TestApp::with_config(watching).await;
    let receiver = Receiver::start().await;
    let alice = app.token_for("alice").await;
    let bob = app.token_for("bob").await;
    let (hook, secret) = add_webhook(&app, &alice, &format!("{}/alice", receiver.base), "json").await;
    let (bobs_hook, _) = add_webhook(&app, &bob, &format!("{}/bob", receiver.base), "json").await;

    let gate = app.data_dir().join("gate-nan");
    let script = format!(
        "echo 'step 1 loss: 0.52'; {}; echo 'step 2 loss: nan (skipped)'; echo 'step 3 loss: nan'; exit 0",
        wait_for(&gate)
    );
    let mut job = sh_job("diverges", &script);
    job["metadata"]["visibility"] = json!("public");
    let id = app.create_job(&alice, &job).await;
    let rule = add_rule(
        &app,
        &alice,
        json!({"job": id, "on": ["log_match", "completed"], "log_pattern": r"loss: (nan|inf)", "webhook": hook}),
    )
    .await;
    assert_eq!(rule["log_pattern"], r"loss: (nan|inf)");
    // Bob watches his own jobs for the same words: Alice's public job is
    // not one of them.
    add_rule(&app, &bob, json!({"on": ["log_match"], "log_pattern": "nan", "webhook": bobs_hook})).await;

    app.wait_state_as(&alice, &id, "Running").await;
    std::fs::write(&gate, "").unwrap();
    app.wait_state_as(&alice, &id, "Completed").await;
    app.wait_until("the match and the completion delivered", || async {
        let events: Vec<String> = receiver.got().iter().map(|r| r.json()["event"].as_str().unwrap().into()).collect();
        events.contains(&"log_match".into()) && events.contains(&"completed".into())
    })
    .await;

    let got = receiver.got();
    assert!(
        got.iter().all(|r| r.path == "/alice"),
        "nothing to Bob: {:?}",
        got.iter().map(|r| &r.path).collect::<Vec<_>>()
    );
    let matches: Vec<Value> = got.iter().map(|r| r.json()).filter(|b| b["event"] == "log_match").collect();
    assert_eq!(matches.len(), 1, "once a run, though two lines match: {matches:?}");
    let body = &matches[0];
    let replica = format!("{id}-0-0");
    assert_eq!(body["replica"], replica);
    assert_eq!(body["line"], 2, "the first matching line, not the one before it");
    assert_eq!(body["links"]["page"], format!("https://jobs.example.com/jobs/{id}/logs?replica={replica}#L2"));
    assert!(body["job"]["message"].as_str().unwrap().ends_with("step 2 loss: nan (skipped)"), "{body}");
    let request = got.iter().find(|r| r.json()["event"] == "log_match").unwrap();
    let timestamp = request.headers["x-jobdeck-timestamp"].to_str().unwrap();
    let signed = [timestamp.as_bytes(), b".", &request.body].concat();
    let signature = request.headers["x-jobdeck-signature"].to_str().unwrap();
    assert_eq!(signature, format!("sha256={}", hmac_hex(secret.as_deref().unwrap(), &signed)));

    let history = deliveries(&app, &alice, hook).await;
    let listed = history.iter().find(|d| d["event"] == "log_match").unwrap();
    assert_eq!((&listed["replica"], &listed["line"]), (&json!(replica), &json!(2)));
    assert!(deliveries(&app, &bob, bobs_hook).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_near_its_limit_and_idle_gpus_are_posted_once() {
    let app = TestApp::with_config(|config| {
        watching(config);
        config.shapes[0].memory_mb = 128;
    })
    .await;
    let receiver = Receiver::start().await;
    let alice = app.token_for("alice").await;
    let (hook, _) = add_webhook(&app, &alice, &receiver.base, "json").await;
    // Half of the shape's 128 MiB is the mark; the replica holds 80 MiB
    // (written, so resident), well under the limit the kernel enforces.
    add_rule(&app, &alice, json!({"on": ["memory_near_limit"], "memory_percent": 50, "webhook": hook})).await;
    let gate = app.data_dir().join("gate-memory");
    let script = format!(
        "python3 -c 'import os, time\nx = b\"a\" * (80 << 20)\nwhile not os.path.exists(\"{}\"): time.sleep(0.05)\nprint(len(x))'",
        gate.display()
    );
    let id = app.create_job(&alice, &sh_job("holds", &script)).await;
    let idle = add_rule(&app, &alice, json!({"job": id, "on": ["gpu_idle"], "webhook": hook})).await;
    assert_eq!(idle["gpu_idle_minutes"], 60, "the default wait, written down");
    let rule =
        add_rule(&app, &alice, json!({"job": id, "on": ["gpu_idle"], "gpu_idle_minutes": 1, "webhook": hook})).await;
    assert_eq!(rule["gpu_idle_minutes"], 1);

    app.wait_until("the memory delivery", || async {
        receiver.got().iter().any(|r| r.json()["event"] == "memory_near_limit")
    })
    .await;
    let body = receiver.got().iter().map(|r| r.json()).find(|b| b["event"] == "memory_near_limit").unwrap();
    assert_eq!(body["replica"], format!("{id}-0-0"));
    assert!(body["job"]["message"].as_str().unwrap().contains("of its 128 MiB memory limit"), "{body}");
    assert_eq!(body["links"]["page"], format!("https://jobs.example.com/jobs/{id}/metrics"));

    // The job's one GPU (as nvidia-smi would report it) has been under 5 %
    // for 61 seconds: the 1-minute rule hears of it, the 60-minute one not.
    let now = jobdeck_server::now_millis();
    let gpu = |t: i64, value: f64| MetricSample {
        job_id: id.clone(),
        completion_index: 0,
        attempt: 0,
        series: "gpu0.util".into(),
        t,
        value,
    };
    app.metrics_now.record(&[gpu(now - 61_000, 2.0)]);
    app.metrics_now.record(&[gpu(now, 1.0)]);
    app.wait_until("the idle delivery", || async { receiver.got().iter().any(|r| r.json()["event"] == "gpu_idle") })
        .await;
    std::fs::write(&gate, "").unwrap();
    app.wait_state_as(&alice, &id, "Completed").await;
    assert!(app.log(&id, &format!("{id}-0-0")).await.contains(&(80 << 20).to_string()), "the first attempt, whole");
    let events: Vec<String> = receiver.got().iter().map(|r| r.json()["event"].as_str().unwrap().into()).collect();
    assert_eq!(events.iter().filter(|e| *e == "gpu_idle").count(), 1, "{events:?}");
    assert_eq!(events.iter().filter(|e| *e == "memory_near_limit").count(), 1, "once a run: {events:?}");
    let idle_body = receiver.got().iter().map(|r| r.json()).find(|b| b["event"] == "gpu_idle").unwrap();
    assert!(idle_body["job"]["message"].as_str().unwrap().contains("for 1 minutes"), "{idle_body}");
}

#[tokio::test]
async fn a_conditions_settings_are_checked_by_field() {
    let app = TestApp::with_config(watching).await;
    let alice = app.token_for("alice").await;
    let (hook, _) = add_webhook(&app, &alice, "http://127.0.0.1:9/x", "json").await;
    let cases = [
        (json!({"on": ["log_match"], "log_pattern": "loss: (nan", "webhook": hook}), "log_pattern"),
        (json!({"on": ["log_match"], "log_pattern": r"\w{1000}{1000}", "webhook": hook}), "log_pattern"),
        (json!({"on": ["log_match"], "webhook": hook}), "log_pattern"),
        (json!({"on": ["failed"], "log_pattern": "nan", "webhook": hook}), "log_pattern"),
        (json!({"on": ["gpu_idle"], "gpu_idle_minutes": 0, "webhook": hook}), "gpu_idle_minutes"),
        (json!({"on": ["memory_near_limit"], "memory_percent": 120, "webhook": hook}), "memory_percent"),
    ];
    for (body, field) in cases {
        let res = app.post_json("/api/v2/notifications", &alice, &body).await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {}", res.text());
        assert!(res.json()["fields"][field].is_array(), "{body}: {}", res.text());
    }
    let unknown = app.post_json("/api/v2/notifications", &alice, &json!({"on": ["gpu_hot"], "webhook": hook})).await;
    assert_eq!(unknown.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", unknown.text());
    let listed = app.call(Method::GET, "/api/v2/notifications", &alice, None).await.json();
    assert_eq!(listed, json!([]), "nothing stored from a refused body");
}
