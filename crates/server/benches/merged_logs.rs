//! Every rank's log on one timeline (issue 36): a job of 8 replicas whose
//! logs hold 1,000,000 lines each, written through the log store's own
//! writer with interleaved times, then Lepton's `GET /logs` (which answers
//! a job's attempts merged by time, `http/lepton_logs.rs`) timed through the
//! real router: the newest screen, a screen in the middle of the run, the
//! oldest screen, one replica's newest screen, and a text found in 8 lines
//! of the 8,000,000; then the console's merged view
//! (`GET /jobs/{id}/merged-log`) at the same places, around a permalink, over
//! a chosen set, with a text, its search over every line, and its whole
//! download. Run with
//! `bench/merged-logs.sh`.

mod common;

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use jobdeck_store::logs::{LogStore, LogWriter, Stream};

const REPLICAS: i64 = 8;
const LINES: i64 = 1_000_000;
/// Lines of one screen of the merged view.
const SCREEN: usize = 200;
/// The run's first line's time (Unix ms); each replica writes a line every
/// 8 ms, replica r at r ms past the step, so the merged order interleaves.
const START: i64 = 1_790_000_000_000;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let bench = common::Bench::start().await;
    let (dir, store) = (&bench.dir, &bench.store);

    // The replicas run and end first, so their attempts exist and nothing
    // writes their logs after the bench does.
    let job = serde_json::json!({"metadata": {"name": "ranks"}, "spec": {"resource_shape": "cpu.small",
        "completions": REPLICAS, "parallelism": 2, "container": {"command": ["/bin/sh", "-c", "true"]}}});
    let id = bench.create_job(&job).await;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let job = store.job(id.clone()).await.unwrap().unwrap();
        if job.runtime.state == jobdeck_api::JobState::Completed {
            break;
        }
        assert!(Instant::now() < deadline, "the job never completed: {:?}", job.runtime.state);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let logs = LogStore::new(dir.path());
    let written = Instant::now();
    for r in 0..REPLICAS {
        let (log, idx) = logs.paths(&id, r, 0);
        let _ = std::fs::remove_file(&log);
        let _ = std::fs::remove_file(&idx);
        let mut writer = LogWriter::create(&log, &idx).unwrap();
        for k in 0..LINES {
            let text = if k == LINES / 2 {
                format!("rank {r}: NCCL WARN Timeout waiting for peer at step {k}")
            } else {
                format!(
                    "rank {r} step {k} loss {:.4} lr 3.0e-4 throughput {} samples/s",
                    2.0 / (1.0 + k as f64 / 1e5),
                    900 + k % 200
                )
            };
            writer.append(Stream::Stdout, START + k * 8 + r, text.as_bytes()).unwrap();
        }
        writer.flush().unwrap();
    }
    println!("wrote {REPLICAS} logs of {LINES} lines in {:.1} s", written.elapsed().as_secs_f64());

    let nanos = |ms: i64| ms * 1_000_000;
    let middle = START + LINES * 8 / 2;
    // The run's whole time range, as the console would ask with the job's
    // start and end (without one `GET /logs` reads from the job's creation
    // to now, and these lines are older).
    let range = format!("start={}&end={}", nanos(START - 1), nanos(START + LINES * 8 + 10));
    let cases = [
        ("newest screen, every replica", format!("/api/v2/logs?job={id}&limit={SCREEN}&{range}")),
        (
            "a screen in the middle",
            format!(
                "/api/v2/logs?job={id}&limit={SCREEN}&direction=forward&start={}&end={}",
                nanos(middle),
                nanos(START + LINES * 8 + 10)
            ),
        ),
        (
            "oldest screen, every replica",
            format!(
                "/api/v2/logs?job={id}&limit={SCREEN}&direction=forward&start={}&end={}",
                nanos(START - 1),
                nanos(START + LINES * 8 + 10)
            ),
        ),
        ("newest screen, one replica", format!("/api/v2/logs?replica={id}-3-0&limit={SCREEN}&{range}")),
    ];
    for (what, uri) in cases {
        let mut times = Vec::new();
        let mut lines = 0;
        for _ in 0..30 {
            let sent = Instant::now();
            let (status, body) = bench.get(&uri).await;
            times.push(sent.elapsed());
            assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
            let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
            lines = answer["data"]["result"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["values"].as_array().unwrap().len())
                .sum::<usize>();
        }
        println!(
            "{what:<32} p50 {:>7.2} ms  p99 {:>7.2} ms  ({lines} lines)",
            common::percentile(times.clone(), 0.5).as_secs_f64() * 1000.0,
            common::percentile(times, 0.99).as_secs_f64() * 1000.0,
        );
    }
    // The console's merged view (`GET /jobs/{id}/merged-log`): the same
    // screens by place, with each line's replica and number.
    let merged = |query: String| format!("/api/v2/jobs/{id}/merged-log?limit={SCREEN}{query}");
    let middle_place = format!("{}:{id}-3-0", nanos(middle + 3));
    let merged_cases = [
        ("merged: newest screen", merged(String::new())),
        ("merged: oldest screen", merged("&from_start=true".into())),
        ("merged: the screen after a place", merged(format!("&after={middle_place}"))),
        ("merged: the screen before a place", merged(format!("&before={middle_place}"))),
        ("merged: around a line (permalink)", merged(format!("&around={id}-5-0:{}", LINES / 2))),
        ("merged: 3 of 8 replicas, newest", merged(format!("&replicas={id}-0-0,{id}-3-0,{id}-7-0"))),
        ("merged: newest 8 with NCCL timeouts", merged("&q=NCCL%20WARN".into())),
    ];
    for (what, uri) in merged_cases {
        let mut times = Vec::new();
        let mut lines = 0;
        for _ in 0..30 {
            let sent = Instant::now();
            let (status, body) = bench.get(&uri).await;
            times.push(sent.elapsed());
            assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
            let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
            lines = answer["lines"].as_array().unwrap().len();
        }
        println!(
            "{what:<36} p50 {:>7.2} ms  p99 {:>7.2} ms  ({lines} lines)",
            common::percentile(times.clone(), 0.5).as_secs_f64() * 1000.0,
            common::percentile(times, 0.99).as_secs_f64() * 1000.0,
        );
    }
    // The merged view's search: the places of the matching lines of every
    // replica, in the merged order (the tab steps through them).
    let search = |query: &str| format!("/api/v2/jobs/{id}/merged-log?{query}");
    let search_cases = [
        ("search: 8 rare lines (NCCL timeouts)", search("search=NCCL%20WARN")),
        ("search: 8,000 lines (regex step \\d+999 )", search("search=step%20%5Cd%2B999%20&regex=true")),
        ("search: the first 10,000 of 8,000,000", search("search=loss")),
    ];
    for (what, uri) in search_cases {
        let mut times = Vec::new();
        let mut found = 0;
        for _ in 0..10 {
            let sent = Instant::now();
            let (status, body) = bench.get(&uri).await;
            times.push(sent.elapsed());
            assert_eq!(status, StatusCode::OK, "{}", String::from_utf8_lossy(&body));
            let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
            found = answer["matches"].as_array().unwrap().len();
        }
        println!(
            "{what:<36} p50 {:>7.2} ms  p99 {:>7.2} ms  ({found} matches)",
            common::percentile(times.clone(), 0.5).as_secs_f64() * 1000.0,
            common::percentile(times, 0.99).as_secs_f64() * 1000.0,
        );
    }
    let sent = Instant::now();
    let (status, body) = bench.get(&format!("/api/v2/jobs/{id}/merged-log?download=true")).await;
    assert_eq!(status, StatusCode::OK);
    let downloaded = body.iter().filter(|b| **b == b'\n').count();
    assert_eq!(downloaded as i64, REPLICAS * LINES, "every line once");
    println!(
        "{:<36} {:>7.1} s once  ({downloaded} lines, {:.0} MB)",
        "merged: the whole download",
        sent.elapsed().as_secs_f64(),
        body.len() as f64 / 1e6
    );

    let sent = Instant::now();
    let (status, body) = bench.get(&format!("/api/v2/logs?job={id}&q=NCCL%20WARN&{range}")).await;
    assert_eq!(status, StatusCode::OK);
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let found: usize =
        answer["data"]["result"].as_array().unwrap().iter().map(|s| s["values"].as_array().unwrap().len()).sum();
    println!(
        "{:<32} {:>7.0} ms once  ({found} lines of {})",
        "a text in 8 of the lines",
        sent.elapsed().as_secs_f64() * 1000.0,
        REPLICAS * LINES
    );
}
