//! A queued job's place in the queue (`status.queue_position`, issue 38):
//! `GET /jobs/{id}` asks the scheduler, through its mailbox, for the place
//! of a queued job, which it counts over every queued job. Timed through the
//! real router with `QUEUED` jobs (default 1,000) waiting behind one that
//! holds the only CPU of the node group: the last queued job's `GET`, and a
//! running job's (no question to the scheduler) for comparison. Run with
//! `bench/queue-position.sh`.

mod common;

use std::time::{Duration, Instant};

use axum::http::StatusCode;

const ROUNDS: usize = 300;

async fn timed(bench: &common::Bench, uri: &str) -> (Duration, Duration, serde_json::Value) {
    let mut took = Vec::with_capacity(ROUNDS);
    let mut last = serde_json::Value::Null;
    for _ in 0..ROUNDS {
        let at = Instant::now();
        let (status, body) = bench.get(uri).await;
        took.push(at.elapsed());
        assert_eq!(status, StatusCode::OK);
        last = serde_json::from_slice(&body).unwrap();
    }
    (common::percentile(took.clone(), 0.5), common::percentile(took, 0.99), last)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let queued: usize = std::env::var("QUEUED").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
    let bench = common::Bench::start_with(|config| {
        config.node_groups.truncate(1);
        config.node_groups[0].cpu = 1.0;
        config.shapes.retain(|s| s.name == "cpu.small");
    })
    .await;
    let job = |name: String, command: &str| {
        serde_json::json!({"metadata": {"name": name}, "spec": {"resource_shape": "cpu.small",
            "container": {"command": ["/bin/sh", "-c", command]}}})
    };
    // The holder ends on its own two minutes later: `exit` below runs no
    // destructor, so nothing would stop it.
    let holder = bench.create_job(&job("holder".into(), "exec sleep 120")).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while bench.store.job(holder.clone()).await.unwrap().unwrap().runtime.state != jobdeck_api::JobState::Running {
        assert!(Instant::now() < deadline, "the holder never ran");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let at = Instant::now();
    let mut last = String::new();
    for k in 0..queued {
        last = bench.create_job(&job(format!("waiting-{k}"), "true")).await;
    }
    println!("{queued} jobs queued behind the holder in {:.1} s", at.elapsed().as_secs_f64());

    let (p50, p99, answer) = timed(&bench, &format!("/api/v2/jobs/{last}")).await;
    assert_eq!(answer["status"]["queue_position"], queued as u64, "{answer}");
    println!(
        "GET /jobs/{{id}} of the last queued job    p50 {:>8.3} ms  p99 {:>8.3} ms  (place {queued})",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );
    let (p50, p99, answer) = timed(&bench, &format!("/api/v2/jobs/{holder}")).await;
    assert!(answer["status"].get("queue_position").is_none());
    println!(
        "GET /jobs/{{id}} of the running job        p50 {:>8.3} ms  p99 {:>8.3} ms",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );
    std::process::exit(0);
}
