//! Rerunning a job's failed indexes (issue 38): `GET /jobs/{id}` of a
//! failed job reads which of its indexes succeeded in its last run, to
//! offer the others (`status.rerun_indexes`), and `POST
//! /jobs/{id}/rerun?only=failed` creates the rerun. Timed through the real
//! router on a failed job of `INDEXES` completion indexes (default 10,000)
//! of which every other one succeeded, stored as the scheduler leaves it
//! (one attempt per index, the last run's), against a completed job's GET
//! (nothing to read). Run with `bench/rerun.sh`.

mod common;

use std::time::Instant;

use axum::http::StatusCode;
use jobdeck_api::{JobSpec, JobState, ReplicaPhase, Visibility};
use jobdeck_store::{JobRow, JobRuntime, ReplicaRow};

const ROUNDS: usize = 300;
const RERUNS: usize = 20;

/// A job as the scheduler leaves it after its last run, with one attempt of
/// each index, every other one succeeded.
async fn store_ended_job(bench: &common::Bench, id: &str, indexes: i64, state: JobState) {
    let row = JobRow {
        id: id.into(),
        name: id.split('-').next().unwrap().into(),
        created_by: "admin".into(),
        visibility: Visibility::Public,
        created_at: jobdeck_server::now_millis(),
        spec: JobSpec {
            resource_shape: Some("cpu.small".into()),
            completions: Some(indexes),
            parallelism: Some(1),
            container: jobdeck_api::Container {
                command: Some(vec!["/bin/sh".into(), "-c".into(), "exit 0".into()]),
                ..Default::default()
            },
            // A day away: a rerun created in the timing waits for its start
            // time instead of starting thousands of processes.
            time_schedule: Some(jobdeck_api::TimeSchedule {
                start_at: Some(jobdeck_server::now_millis() / 1000 + 86_400),
            }),
            ..JobSpec::default()
        },
        priority: 4000,
        runtime: JobRuntime { state, run: 0, ..JobRuntime::default() },
        ..JobRow::default()
    };
    bench.store.insert_job(row, Vec::new()).await.unwrap();
    for index in 0..indexes {
        let phase =
            if index % 2 == 0 || state == JobState::Completed { ReplicaPhase::Succeeded } else { ReplicaPhase::Failed };
        let replica = ReplicaRow { job_id: id.into(), completion_index: index, phase, ..ReplicaRow::default() };
        bench.store.upsert_replica(replica).await.unwrap();
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let indexes: i64 = std::env::var("INDEXES").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let bench = common::Bench::start().await;
    let at = Instant::now();
    store_ended_job(&bench, "failed-aaaaa", indexes, JobState::Failed).await;
    store_ended_job(&bench, "completed-aaaaa", indexes, JobState::Completed).await;
    println!("two jobs of {indexes} indexes stored in {:.1} s", at.elapsed().as_secs_f64());

    let (p50, p99, answer) = bench.timed_get("/api/v2/jobs/failed-aaaaa", ROUNDS).await;
    assert_eq!(answer["status"]["rerun_indexes"].as_array().map(Vec::len), Some(indexes as usize / 2));
    println!(
        "GET /jobs/{{id}} of the failed job         p50 {:>8.3} ms  p99 {:>8.3} ms  ({} indexes to rerun)",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
        indexes / 2
    );
    let (p50, p99, answer) = bench.timed_get("/api/v2/jobs/completed-aaaaa", ROUNDS).await;
    assert!(answer["status"].get("rerun_indexes").is_none());
    println!(
        "GET /jobs/{{id}} of the completed job      p50 {:>8.3} ms  p99 {:>8.3} ms",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );

    let mut took = Vec::with_capacity(RERUNS);
    for _ in 0..RERUNS {
        let at = Instant::now();
        let (status, body) = bench.post("/api/v2/jobs/failed-aaaaa/rerun?only=failed").await;
        took.push(at.elapsed());
        assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
    }
    println!(
        "POST /jobs/{{id}}/rerun?only=failed         p50 {:>8.3} ms  max {:>8.3} ms  ({RERUNS} reruns of {} indexes)",
        common::percentile(took.clone(), 0.5).as_secs_f64() * 1e3,
        common::percentile(took, 1.0).as_secs_f64() * 1e3,
        indexes / 2
    );
    std::process::exit(0);
}
