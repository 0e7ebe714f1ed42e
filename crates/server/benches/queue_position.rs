//! Where a queued job stands (issue 38): `GET /jobs/{id}` asks the
//! scheduler, through its mailbox, for a queued job's place, which it
//! counts over every queued job, and for what would let it start, which it
//! tries against what is free now (`status.start_suggestions`). Timed
//! through the real router with `QUEUED` jobs (default 1,000) of two
//! replicas each waiting in group `local`, whose two CPUs a holder takes,
//! while group `b` is held by another: each answer tries a smaller shape
//! (`cpu.half`), one replica at a time and group `b`, and finds none fits
//! (the most work), with a quota configured so that what every user holds
//! is counted too. The last queued job's `GET`, and a running job's (no
//! question to the scheduler) for comparison. Run with
//! `bench/queue-position.sh`.

mod common;

use std::time::{Duration, Instant};

const ROUNDS: usize = 300;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let queued: usize = std::env::var("QUEUED").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
    let bench = common::Bench::start_with(|config| {
        config.node_groups.truncate(1);
        config.node_groups[0].cpu = 2.0;
        let mut b = config.node_groups[0].clone();
        b.name = "b".into();
        b.node_names = Some(vec!["node-b".into()]);
        config.node_groups.push(b);
        config.shapes.retain(|s| s.name == "cpu.small");
        let mut half = config.shapes[0].clone();
        half.name = "cpu.half".into();
        half.cpu = 0.5;
        config.shapes.push(half);
        let limits = jobdeck_api::QuotaLimits { running_gpus: Some(8), ..Default::default() };
        config.quotas.roles.insert(jobdeck_api::Role::Member, limits);
    })
    .await;
    let job = |name: String, group: &str, command: &str| {
        serde_json::json!({"metadata": {"name": name}, "spec": {"resource_shape": "cpu.small",
            "completions": 2, "parallelism": 2, "affinity": {"allowed_dedicated_node_groups": [group]},
            "container": {"command": ["/bin/sh", "-c", command]}}})
    };
    // The holders end on their own two minutes later: `exit` below runs no
    // destructor, so nothing would stop them.
    let holder = bench.create_job(&job("holder".into(), "local", "exec sleep 120")).await;
    let holder_b = bench.create_job(&job("holder-b".into(), "b", "exec sleep 120")).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    for id in [&holder, &holder_b] {
        while bench.store.job(id.clone()).await.unwrap().unwrap().runtime.state != jobdeck_api::JobState::Running {
            assert!(Instant::now() < deadline, "a holder never ran");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let at = Instant::now();
    let mut last = String::new();
    let mut first = String::new();
    for k in 0..queued {
        last = bench.create_job(&job(format!("waiting-{k}"), "local", "true")).await;
        if k == 0 {
            first = last.clone();
        }
    }
    println!("{queued} jobs queued behind the holder in {:.1} s", at.elapsed().as_secs_f64());

    let (p50, p99, answer) = bench.timed_get(&format!("/api/v2/jobs/{last}"), ROUNDS).await;
    assert_eq!(answer["status"]["queue_position"], queued as u64, "{answer}");
    assert!(answer["status"].get("start_suggestions").is_none(), "nothing fits: {answer}");
    println!(
        "GET /jobs/{{id}} of the last queued job    p50 {:>8.3} ms  p99 {:>8.3} ms  (place {queued})",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );
    // The holders' names given a history (five completed runs each, as
    // the store keeps them): the estimate now replays the queue from the
    // moments they are likely to end, and still finds no start for the
    // last job (the ones admitted before it have neither deadline nor
    // history).
    let creator = bench.store.job(holder.clone()).await.unwrap().unwrap().created_by;
    for (name, k) in ["holder", "holder-b"].iter().flat_map(|n| (0..5).map(move |k| (*n, k))) {
        let row = jobdeck_store::JobRow {
            id: format!("{name}-done{k}"),
            name: name.to_string(),
            created_by: creator.clone(),
            created_at: 1 + k,
            runtime: jobdeck_store::JobRuntime {
                state: jobdeck_api::JobState::Completed,
                started_at: Some(1_000 * k),
                completed_at: Some(1_000 * k + 600_000 + 60_000 * k),
                ..Default::default()
            },
            ..Default::default()
        };
        bench.store.insert_job(row, Vec::new()).await.unwrap();
    }
    let (_, body) = bench.get(&format!("/api/v2/jobs/{first}")).await;
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["status"]["start_estimate"]["basis"], "history", "{answer}");
    let (p50, p99, answer) = bench.timed_get(&format!("/api/v2/jobs/{last}"), ROUNDS).await;
    assert!(answer["status"].get("start_estimate").is_none(), "{answer}");
    println!(
        "the same, the holders with a history       p50 {:>8.3} ms  p99 {:>8.3} ms  (the queue replayed)",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );
    let (p50, p99, answer) = bench.timed_get(&format!("/api/v2/jobs/{holder}"), ROUNDS).await;
    assert!(answer["status"].get("queue_position").is_none());
    println!(
        "GET /jobs/{{id}} of the running job        p50 {:>8.3} ms  p99 {:>8.3} ms",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );
    let (p50, p99, answer) = bench.timed_get("/api/v2/queue", ROUNDS).await;
    assert_eq!(answer["jobs"].as_array().map(Vec::len), Some(queued), "{answer}");
    println!(
        "GET /queue, the whole queue              p50 {:>8.3} ms  p99 {:>8.3} ms  ({queued} jobs, {} KB)",
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
        answer.to_string().len() / 1000
    );
    std::process::exit(0);
}
