//! The metrics endpoints on a 7-day run (issue 16): one replica attempt
//! with a week of samples every 5 seconds in 7 series (CPU, memory and one
//! GPU's five), stored through the same bounded store the executor uses,
//! then `GET /jobs/{id}/replicas/{replica}/metrics` (every series, the whole
//! week) and `GET /jobs/{id}/metrics` timed through the real router, with
//! the real SQLite file. Run with `bench/metrics.sh`.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use http_body_util::BodyExt;
use jobdeck_core::Config;
use jobdeck_server::http::auth;
use jobdeck_server::{app, AppState};
use jobdeck_store::MetricSample;
use jobdeck_store::Store;
use tower::ServiceExt;

const WEEK_TICKS: i64 = 7 * 24 * 3600 / 5;
const BATCH: i64 = 2_000;

async fn get(router: &axum::Router, token: &str, uri: &str) -> (StatusCode, Vec<u8>) {
    let request = Request::builder()
        .method(Method::GET)
        .uri(uri)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    (status, response.into_body().collect().await.unwrap().to_bytes().to_vec())
}

fn percentile(mut values: Vec<Duration>, p: f64) -> Duration {
    values.sort();
    values[((values.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("jobdeck.db")).unwrap();
    let mut config = Config::for_data_dir(dir.path());
    config.executor.local.mode = jobdeck_core::config::LocalMode::Process;
    config.executor.local.metrics_interval_ms = 0;
    config.supervisor_bin = std::env::var_os("JOBDECK_BIN").map(Into::into);
    let token = auth::issue_token(&store, "admin", auth::TokenRequest::api()).await.unwrap().secret;
    let router = app(AppState::start(store.clone(), config).await.unwrap());

    let job = serde_json::json!({"metadata": {"name": "week"}, "spec": {"resource_shape": "cpu.small",
        "container": {"command": ["/bin/sh", "-c", "true"]}}});
    let request = Request::builder()
        .method(Method::POST)
        .uri("/api/v2/jobs")
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(job.to_string()))
        .unwrap();
    let created = router.clone().oneshot(request).await.unwrap().into_body().collect().await.unwrap().to_bytes();
    let created: serde_json::Value = serde_json::from_slice(&created).unwrap();
    let id = created["metadata"]["id"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    while store.replica(id.clone(), 0, 0).await.unwrap().is_none() {
        assert!(Instant::now() < deadline, "the job never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let series = ["cpu", "memory", "gpu0.util", "gpu0.memory", "gpu0.memory_total", "gpu0.power", "gpu0.temperature"];
    let start = 1_700_000_000_000_i64;
    let filled = Instant::now();
    let mut tick = 0;
    while tick < WEEK_TICKS {
        let end = (tick + BATCH).min(WEEK_TICKS);
        let samples: Vec<MetricSample> = (tick..end)
            .flat_map(|t| {
                let id = id.clone();
                series.iter().map(move |s| MetricSample {
                    job_id: id.clone(),
                    completion_index: 0,
                    attempt: 0,
                    series: s.to_string(),
                    t: start + t * 5_000,
                    value: (t % 100) as f64,
                })
            })
            .collect();
        store.append_metrics(samples).await.unwrap();
        tick = end;
    }
    let stored = store.job_metrics(id.clone()).await.unwrap().len();
    println!(
        "stored a week of 5 s samples ({} samples in {} series) as {stored} points in {:.1} s",
        WEEK_TICKS * series.len() as i64,
        series.len(),
        filled.elapsed().as_secs_f64()
    );

    for (what, uri) in [
        ("replica series, whole week", format!("/api/v2/jobs/{id}/replicas/{id}-0-0/metrics")),
        ("replica series, last day", {
            let from = start + (WEEK_TICKS - 17_280) * 5_000;
            format!("/api/v2/jobs/{id}/replicas/{id}-0-0/metrics?from={from}")
        }),
        ("job summary and flags", format!("/api/v2/jobs/{id}/metrics")),
    ] {
        let mut times = Vec::new();
        let mut bytes = 0;
        for _ in 0..200 {
            let sent = Instant::now();
            let (status, body) = get(&router, &token, &uri).await;
            times.push(sent.elapsed());
            assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
            bytes = body.len();
        }
        println!(
            "{what:<28} p50 {:>6.2} ms  p99 {:>6.2} ms  ({} KB)",
            percentile(times.clone(), 0.5).as_secs_f64() * 1000.0,
            percentile(times, 0.99).as_secs_f64() * 1000.0,
            bytes / 1000
        );
    }
}
