//! Log retention (issue 37): what the scheduler's look for finished jobs
//! whose logs are due costs (`Store::jobs_with_logs_due`, once a minute and
//! when a job falls due), and how fast it removes them (logs, run
//! directories, metrics, the failure analysis kept, the event). `JOBS`
//! finished jobs (default 20,000) are stored with their own archive time of
//! 30 days; the look is timed when none has passed the minimum retention
//! and when all have but their archive time holds them (both an empty range
//! of the index on the due time), with the question when the next falls
//! due (the scheduler's timer), the disk budget's sum of what the logs
//! take, and
//! the removal of `REMOVED` jobs (default 2,000) with a 1,000-line log each.
//! Run with `bench/log-retention.sh`.

mod common;

use std::time::{Duration, Instant};

use jobdeck_api::{JobSpec, JobState, Visibility};
use jobdeck_store::logs::{LogWriter, Stream};
use jobdeck_store::{JobRow, JobRuntime};

const DAY_MS: i64 = 86_400_000;
const LOOKS: usize = 200;

fn count(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn finished_job(id: &str, completed_at: i64, ttl_seconds: i64) -> JobRow {
    JobRow {
        id: id.into(),
        name: "train".into(),
        created_by: "admin".into(),
        visibility: Visibility::Public,
        created_at: completed_at - 3_600_000,
        spec: JobSpec { ttl_seconds_after_finished: Some(ttl_seconds), ..JobSpec::default() },
        priority: 4000,
        runtime: JobRuntime { state: JobState::Completed, completed_at: Some(completed_at), ..JobRuntime::default() },
        ..JobRow::default()
    }
}

fn percentiles(mut took: Vec<Duration>) -> (f64, f64) {
    took.sort();
    let at = |q: f64| took[((took.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e3;
    (at(0.5), at(0.99))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let jobs = count("JOBS", 20_000);
    let removed = count("REMOVED", 2_000);
    let bench = common::Bench::start().await;
    let finished = jobdeck_server::now_millis() - DAY_MS;
    let at = Instant::now();
    for n in 0..jobs {
        let row = finished_job(&format!("train-{n:07}"), finished - n as i64, 30 * 86_400);
        bench.store.insert_job(row, Vec::new()).await.unwrap();
    }
    println!("{jobs} finished jobs stored in {:.1} s", at.elapsed().as_secs_f64());

    for (case, now) in [
        ("none past the minimum (the usual look)", finished + DAY_MS),
        ("all past the minimum, held by their own 30 days", finished + 8 * DAY_MS),
    ] {
        let mut took = Vec::with_capacity(LOOKS);
        for _ in 0..LOOKS {
            let at = Instant::now();
            let due = bench.store.jobs_with_logs_due(now, 16).await.unwrap();
            took.push(at.elapsed());
            assert!(due.is_empty());
        }
        let (p50, p99) = percentiles(took);
        println!("a look over {jobs} finished jobs, {case:<50} p50 {p50:>8.3} ms  p99 {p99:>8.3} ms");
    }
    let mut took = Vec::with_capacity(LOOKS);
    for _ in 0..LOOKS {
        let at = Instant::now();
        assert!(bench.store.next_logs_due().await.unwrap().is_some());
        took.push(at.elapsed());
    }
    let (p50, p99) = percentiles(took);
    println!(
        "when the next job's logs fall due, over {jobs} finished jobs{:<27} p50 {p50:>8.3} ms  p99 {p99:>8.3} ms",
        ""
    );

    // The disk budget's sum of what every job's logs take, every one
    // measured.
    let sizes = (0..jobs).map(|n| (format!("train-{n:07}"), 100_000 + n as i64)).collect();
    bench.store.set_log_bytes_many(sizes, jobdeck_server::now_millis()).await.unwrap();
    let mut took = Vec::with_capacity(LOOKS);
    for _ in 0..LOOKS {
        let at = Instant::now();
        assert!(bench.store.log_bytes_total().await.unwrap() > 0);
        took.push(at.elapsed());
    }
    let (p50, p99) = percentiles(took);
    println!("what the logs take (the disk budget's sum), over {jobs} measured jobs{:<13} p50 {p50:>8.3} ms  p99 {p99:>8.3} ms", "");

    // The removal: jobs past their archive time of 600 s, each with a log,
    // removed at a time of the benchmark's own a week and a day after they
    // finished (the scheduler's own looks, at the clock's time, leave them).
    let logs = jobdeck_store::logs::LogStore::new(bench.dir.path());
    let ended = finished;
    let line = b"step 1200/5000 | loss 0.4312 | lr 3.0e-04 | grad_norm 0.91 | tokens/s 182344";
    let mut bytes = 0u64;
    for n in 0..removed {
        let id = format!("old-{n:07}");
        bench.store.insert_job(finished_job(&id, ended - n as i64, 600), Vec::new()).await.unwrap();
        let (log, idx) = logs.paths(&id, 0, 0);
        let mut writer = LogWriter::create(&log, &idx).unwrap();
        for _ in 0..1_000 {
            writer.append(Stream::Stdout, ended, line).unwrap();
        }
        writer.flush().unwrap();
        bytes += std::fs::metadata(&log).unwrap().len() + std::fs::metadata(&idx).unwrap().len();
    }
    let at = Instant::now();
    let gone = bench.scheduler.remove_due_logs(finished + 8 * DAY_MS).await.unwrap();
    let took = at.elapsed().as_secs_f64();
    assert_eq!(gone, removed);
    println!(
        "removed the logs of {gone} jobs ({:.1} MB, 1,000 lines each) in {took:.2} s: {:.0} jobs/s",
        bytes as f64 / 1e6,
        gone as f64 / took
    );
    assert!(!logs.job_dir("old-0000000").exists());
}
