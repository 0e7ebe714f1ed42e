//! Resource use per replica (issue 16), measured for real: a replica that
//! burns a core and holds a known amount of memory, sampled by the local
//! executor in process mode, read through `GET /jobs/{id}/metrics` and
//! `GET /jobs/{id}/replicas/{replica}/metrics`. The replica works until the
//! test opens its gate; the test waits for the samples, not for a time.

use crate::common;

use axum::http::{Method, StatusCode};
use common::{sh_job, small_cluster, TestApp};
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_replicas_cpu_and_memory_are_sampled_and_served() {
    let app = TestApp::with_config(|config| {
        small_cluster(2.0)(config);
        config.executor.local.metrics_interval_ms = 200;
    })
    .await;
    let gate = app.data_dir().join("gate-release");
    // 60 MB held in a shell variable, and a loop that spins until the gate.
    let script = format!(
        "x=$(head -c 60000000 /dev/zero | tr '\\0' a); echo holding; while [ ! -e '{}' ]; do :; done; echo ${{#x}}",
        gate.display()
    );
    let id = app.create_job(&app.admin_token, &sh_job("busy", &script)).await;
    let replica = format!("{id}-0-0");

    app.wait_until("a core busy and 60 MB held in the samples", || {
        let app = &app;
        let id = id.clone();
        async move {
            let res = app.get(&format!("/api/v2/jobs/{id}/metrics")).await;
            assert_eq!(res.status, StatusCode::OK, "{}", res.text());
            let summary = res.json();
            let current = &summary["replicas"][0]["current"];
            current["cpu"].as_f64().is_some_and(|c| c >= 0.5) && current["memory"].as_f64().is_some_and(|m| m >= 55e6)
        }
    })
    .await;
    let summary: Value = app.get(&format!("/api/v2/jobs/{id}/metrics")).await.json();
    let replica_use = &summary["replicas"][0];
    assert_eq!(replica_use["replica_id"], replica);
    assert_eq!(replica_use["memory_limit_bytes"], 1024_i64 << 20, "the shape's memory is the limit");
    assert!(replica_use["peak"]["memory"].as_f64().unwrap() >= 55e6, "{replica_use}");
    assert!(replica_use.get("flags").is_none(), "well under its limit and no GPU: {replica_use}");

    let series = app.get(&format!("/api/v2/jobs/{id}/replicas/{replica}/metrics")).await.json();
    let names: Vec<&str> = series["series"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["cpu", "memory"]);
    assert_eq!(series["series"][0]["unit"], "cores");
    assert_eq!(series["series"][1]["unit"], "bytes");
    let points = series["series"][1]["points"].as_array().unwrap();
    assert!(points.len() >= 2, "{points:?}");
    let first_t = points[0][0].as_i64().unwrap();
    // The replica is still sampled: `to` keeps a sample taken meanwhile
    // out of the count.
    let last_t = points[points.len() - 1][0].as_i64().unwrap();
    let only_memory = app
        .get(&format!("/api/v2/jobs/{id}/replicas/{replica}/metrics?series=memory&from={}&to={last_t}", first_t + 1))
        .await
        .json();
    assert_eq!(only_memory["series"].as_array().unwrap().len(), 1);
    assert_eq!(only_memory["series"][0]["points"].as_array().unwrap().len(), points.len() - 1, "from is inclusive");

    // Bad parameters name themselves; other people's private jobs are not
    // there; unknown replicas neither.
    for (query, status) in [
        ("?from=yesterday", StatusCode::BAD_REQUEST),
        ("?from=10&to=5", StatusCode::BAD_REQUEST),
        ("?series=cpu;drop", StatusCode::BAD_REQUEST),
    ] {
        let res = app.get(&format!("/api/v2/jobs/{id}/replicas/{replica}/metrics{query}")).await;
        assert_eq!(res.status, status, "{query}: {}", res.text());
    }
    assert_eq!(app.get(&format!("/api/v2/jobs/{id}/replicas/{id}-7-0/metrics")).await.status, StatusCode::NOT_FOUND);

    std::fs::write(&gate, "").unwrap();
    app.wait_state(&id, "Completed").await;
    assert!(app.log(&id, &replica).await.contains("60000000"));
    assert!(!app.store.job_metrics(id.clone()).await.unwrap().is_empty(), "kept after the run");
    let deleted = app.call(Method::DELETE, &format!("/api/v2/jobs/{id}"), &app.admin_token, None).await;
    assert_eq!(deleted.status, StatusCode::OK);
    app.wait_until("the job to go", || {
        let app = &app;
        let id = id.clone();
        async move { app.get(&format!("/api/v2/jobs/{id}")).await.status == StatusCode::NOT_FOUND }
    })
    .await;
    assert!(app.store.job_metrics(id).await.unwrap().is_empty(), "deleted with the job");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_jobs_metrics_are_its_owners() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let alice = app.token_for("alice").await;
    let mut job = sh_job("private", "true");
    job["metadata"]["visibility"] = serde_json::json!("private");
    let id = app.create_job(&alice, &job).await;
    let bob = app.token_for("bob").await;
    for path in [format!("/api/v2/jobs/{id}/metrics"), format!("/api/v2/jobs/{id}/replicas/{id}-0-0/metrics")] {
        assert_eq!(app.call(Method::GET, &path, &bob, None).await.status, StatusCode::NOT_FOUND, "{path}");
        assert_ne!(app.call(Method::GET, &path, &alice, None).await.status, StatusCode::FORBIDDEN, "{path}");
    }
}

/// The failure analysis of an out-of-memory kill shows the memory curve
/// that led to it, against the limit (the kernel enforces the shape's
/// memory through the replica's cgroup, as the suite runs as root).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oom_kill_is_explained_with_the_memory_curve_up_to_it() {
    let app = TestApp::with_config(|config| {
        small_cluster(2.0)(config);
        config.shapes[0].memory_mb = 128;
        config.executor.local.metrics_interval_ms = 100;
    })
    .await;
    // Grows by 8 MB every 50 ms: the kill comes after a few samples.
    let script = "python3 -c 'import time\nx = []\nwhile True:\n    x.append(bytearray(8 << 20)); time.sleep(0.05)'";
    let mut job = sh_job("grows", script);
    job["spec"]["backoff_limit"] = serde_json::json!(0);
    let id = app.create_job(&app.admin_token, &job).await;
    app.wait_state(&id, "Failed").await;
    let analysis = app.get(&format!("/api/v2/jobs/{id}/failure-analysis")).await.json();
    assert_eq!(analysis["err_class"], "ERR_OOM", "{analysis}");
    let curve = &analysis["memory_curve"];
    assert_eq!(curve["replica_id"], format!("{id}-0-0"), "{analysis}");
    assert_eq!(curve["limit_bytes"], 128_i64 << 20);
    let points = curve["points"].as_array().unwrap();
    assert!(points.len() >= 3, "{points:?}");
    let peak = points.iter().map(|p| p[2].as_f64().unwrap()).fold(0.0, f64::max);
    assert!(peak > 64e6, "the curve climbs toward the 128 MiB limit: {peak}");
}
