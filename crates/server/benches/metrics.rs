//! The metrics endpoints on a 7-day run (issue 16): one replica attempt
//! with a week of samples every 5 seconds in 7 series (CPU, memory and one
//! GPU's five), stored through the same bounded store the executor uses,
//! then `GET /jobs/{id}/replicas/{replica}/metrics` (every series, the whole
//! week) and `GET /jobs/{id}/metrics` timed through the real router, with
//! the real SQLite file. Run with `bench/metrics.sh`.

mod common;

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use jobdeck_store::MetricSample;

const WEEK_TICKS: i64 = 7 * 24 * 3600 / 5;
const BATCH: i64 = 2_000;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let bench = common::Bench::start().await;
    let store = &bench.store;

    let job = serde_json::json!({"metadata": {"name": "week"}, "spec": {"resource_shape": "cpu.small",
        "container": {"command": ["/bin/sh", "-c", "true"]}}});
    let id = bench.create_job(&job).await;
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
            let (status, body) = bench.get(&uri).await;
            times.push(sent.elapsed());
            assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
            bytes = body.len();
        }
        println!(
            "{what:<28} p50 {:>6.2} ms  p99 {:>6.2} ms  ({} KB)",
            common::percentile(times.clone(), 0.5).as_secs_f64() * 1000.0,
            common::percentile(times, 0.99).as_secs_f64() * 1000.0,
            bytes / 1000
        );
    }
}
