//! Control-plane benchmarks (issue 4), against the real `jobdeck serve`:
//!
//! 1. job creation throughput: 100,000 jobs created through `POST /jobs` by
//!    four client threads, as ten users (a fifth private, a third in each of
//!    two node groups, the rest unrestricted), created stopped so the store
//!    fills without running anything;
//! 2. list latency with those 100,000 jobs stored: `GET /jobs` as the
//!    console asks for it (page size 50), the default list and filtered ones,
//!    one request at a time, p50 and p99;
//! 3. creation throughput while the scheduler is busy: 2,000 runnable jobs
//!    queued behind a full node group, then 2,000 more with a member quota
//!    in force (every admission pass then counts each user's holdings);
//! 4. log ingest: one replica printing 1,000,000 lines of 80 characters,
//!    from its start to its end, every line stored (checked).
//!
//! Run it with `bench/server-api.sh` (builds the release server and points
//! `JOBDECK_BIN` at it). `BENCH_JOBS` changes the number of stored jobs;
//! `BENCH_DATA_DIR` keeps the server's data directory there.
//! Client and server share the machine, so every figure is a lower bound for
//! the server alone.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use jobdeck_e2e::{JobState, Server};
use serde_json::{json, Value};

const USERS: usize = 10;
const CLIENT_THREADS: usize = 4;
const NAMES: [&str; 5] = ["train", "eval", "prep", "sweep", "finetune"];

const CONFIG: &str = r#"
[executor.local]
mode = "process"
retry_backoff_seconds = 0
grace_period_seconds = 2

[[node_groups]]
name = "local"
cpu = 8
memory_mb = 65536

[[node_groups]]
name = "gpu-a"
cpu = 8
memory_mb = 65536

[[node_groups]]
name = "gpu-b"
cpu = 8
memory_mb = 65536
"#;

struct Client {
    agent: ureq::Agent,
    base: String,
}

impl Client {
    fn new(server: &Server) -> Client {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(120)))
            .build()
            .into();
        Client { agent, base: server.api_url("") }
    }

    fn get(&self, path: &str, token: &str) -> (u16, String) {
        let mut res = self
            .agent
            .get(&format!("{}{path}", self.base))
            .header("Authorization", &format!("Bearer {token}"))
            .call()
            .expect("GET answers");
        (res.status().as_u16(), res.body_mut().read_to_string().unwrap_or_default())
    }

    fn post(&self, path: &str, token: &str, body: &Value) -> (u16, String) {
        let mut res = self
            .agent
            .post(&format!("{}{path}", self.base))
            .header("Authorization", &format!("Bearer {token}"))
            .send_json(body)
            .expect("POST answers");
        (res.status().as_u16(), res.body_mut().read_to_string().unwrap_or_default())
    }
}

/// The `k`-th job of the seed: its creator (a user index) and its body.
fn seed_job(k: usize) -> (usize, Value) {
    let name = format!("{}-{}", NAMES[k % NAMES.len()], k % 1000);
    let team = ["vision", "nlp", "speech", "infra"][k % 4];
    let mut job = json!({
        "metadata": {
            "name": name,
            "visibility": if k.is_multiple_of(5) { "private" } else { "public" },
            "labels": {"team": team}
        },
        "spec": {
            "resource_shape": "cpu.small",
            "container": {"image": "busybox", "command": ["/bin/sh", "-c", "true"]},
            "stopped": true
        }
    });
    match k % 3 {
        0 => job["spec"]["affinity"] = json!({"allowed_dedicated_node_groups": ["gpu-a"]}),
        1 => job["spec"]["affinity"] = json!({"allowed_dedicated_node_groups": ["gpu-b"]}),
        _ => {}
    }
    (k % USERS, job)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// Creates `count` jobs from `make(k)` with the client threads; returns the
/// wall time, every request's latency and the (creator, id) of every job.
fn create_many(
    server: &Server,
    tokens: &[String],
    count: usize,
    make: fn(usize) -> (usize, Value),
) -> (Duration, Vec<Duration>, Vec<(usize, String)>) {
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let threads: Vec<_> = (0..CLIENT_THREADS)
        .map(|_| {
            let client = Client::new(server);
            let next = next.clone();
            let tokens = tokens.to_vec();
            std::thread::spawn(move || {
                let (mut latencies, mut ids) = (Vec::new(), Vec::new());
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    if k >= count {
                        return (latencies, ids);
                    }
                    let (user, job) = make(k);
                    let at = Instant::now();
                    let (status, body) = client.post("/jobs", &tokens[user], &job);
                    latencies.push(at.elapsed());
                    assert_eq!(status, 200, "create {k}: {body}");
                    let created: Value = serde_json::from_str(&body).unwrap();
                    ids.push((user, created["metadata"]["id"].as_str().unwrap().to_string()));
                }
            })
        })
        .collect();
    let (mut latencies, mut ids) = (Vec::new(), Vec::new());
    for thread in threads {
        let (l, i) = thread.join().unwrap();
        latencies.extend(l);
        ids.extend(i);
    }
    let wall = started.elapsed();
    latencies.sort();
    (wall, latencies, ids)
}

fn report_creates(what: &str, count: usize, wall: Duration, latencies: &[Duration]) {
    println!(
        "{what}: {count} jobs in {:.1} s = {:.0} creates/s (latency p50 {}, p99 {})",
        wall.as_secs_f64(),
        count as f64 / wall.as_secs_f64(),
        ms(percentile(latencies, 0.50)),
        ms(percentile(latencies, 0.99)),
    );
}

fn main() {
    let stored: usize = std::env::var("BENCH_JOBS").ok().and_then(|v| v.parse().ok()).unwrap_or(100_000);
    let temp = tempfile::tempdir().unwrap();
    let config = temp.path().join("jobdeck.toml");
    std::fs::write(&config, CONFIG).unwrap();
    // `BENCH_DATA_DIR` keeps the data directory (and its database) for a
    // look at the queries afterwards.
    let data =
        std::env::var_os("BENCH_DATA_DIR").map(std::path::PathBuf::from).unwrap_or_else(|| temp.path().join("data"));
    let server = Server::start_api_in(&data, &["--config", config.to_str().unwrap()]);
    let tokens: Vec<String> = (0..USERS).map(|u| server.token_for(&format!("user{u}"))).collect();

    // 1. Creation throughput while the store fills up, in tenths.
    println!("== creating {stored} stopped jobs with {CLIENT_THREADS} client threads");
    let (wall, latencies, _) = create_many(&server, &tokens, stored, seed_job);
    report_creates("all", stored, wall, &latencies);

    // 2. List latency with `stored` jobs.
    let client = Client::new(&server);
    let lists: [(&str, &str); 8] = [
        ("default list (page 1 of 50)", ""),
        ("page 100", "?page=100"),
        ("filtered: status + creator", "?status=Stopped&created_by=user3"),
        ("filtered: node group + creator", "?node_groups=gpu-a&created_by=user3"),
        ("filtered: name search, rare", "?q=sweep-12"),
        ("filtered: name search, common", "?q=eval"),
        ("filtered: name search, 2 letters", "?q=ev"),
        ("filtered: label (lep -l)", "?query=team%3Dnlp"),
    ];
    println!("== GET /jobs with {stored} jobs stored, as user7, one request at a time");
    for (what, query) in lists {
        let mut latencies = Vec::new();
        let (status, body) = client.get(&format!("/jobs{query}"), &tokens[7]);
        assert_eq!(status, 200, "{body}");
        let page: Value = serde_json::from_str(&body).unwrap();
        let total = page["total"].as_i64().unwrap();
        for _ in 0..300 {
            let at = Instant::now();
            let (status, _) = client.get(&format!("/jobs{query}"), &tokens[7]);
            latencies.push(at.elapsed());
            assert_eq!(status, 200);
        }
        latencies.sort();
        println!(
            "{what:34} total {total:6}: p50 {}, p99 {}, max {}",
            ms(percentile(&latencies, 0.50)),
            ms(percentile(&latencies, 0.99)),
            ms(*latencies.last().unwrap())
        );
    }

    // 3. Creation throughput with the scheduler busy: a job holds every CPU
    // of group `local`, and 2,000 runnable jobs queue behind it. (Its
    // replicas end by themselves after ten minutes should the bench die.)
    let hold = "exec sleep 600";
    let holder = json!({
        "metadata": {"name": "holder"},
        "spec": {
            "resource_shape": "cpu.small", "completions": 8, "parallelism": 8,
            "affinity": {"allowed_dedicated_node_groups": ["local"]},
            "container": {"image": "busybox", "command": ["/bin/sh", "-c", hold]}
        }
    });
    let holder = server.create_job(&tokens[0], &holder);
    server.wait_for_state(&tokens[0], &holder, JobState::Running);
    fn queued_job(k: usize) -> (usize, Value) {
        let (user, mut job) = seed_job(k);
        job["spec"]["stopped"] = json!(false);
        job["spec"]["affinity"] = json!({"allowed_dedicated_node_groups": ["local"]});
        (user, job)
    }
    println!("== creating 2000 runnable jobs queued behind a full node group");
    let (wall, latencies, mut queued) = create_many(&server, &tokens, 2000, queued_job);
    report_creates("queued", 2000, wall, &latencies);

    // 3b. The same with quotas in force (none binding), so every admission
    // pass also counts what each user holds and keeps in logs.
    let limits = json!({"running_gpus": 1000, "queued_jobs": 1_000_000, "log_bytes": 1_000_000_000_000i64});
    let (status, body) = server.call("PUT", "/quotas/role/member", &server.admin_token, Some(&limits));
    assert_eq!(status, 200, "{body}");
    println!("== creating 2000 more runnable jobs queued, with a member quota in force");
    let (wall, latencies, more) = create_many(&server, &tokens, 2000, queued_job);
    report_creates("queued, quotas", 2000, wall, &latencies);
    queued.extend(more);

    // 4. Log ingest: 1,000,000 lines of 80 characters from one replica.
    let lines = 1_000_000;
    let script = format!(
        "awk 'BEGIN {{ for (i = 1; i <= {lines}; i++) printf \"%08d the quick brown fox jumps over the lazy dog, line of the ingest bench\\n\", i }}'"
    );
    let printer = json!({
        "metadata": {"name": "printer"},
        "spec": {
            "resource_shape": "cpu.small",
            "affinity": {"allowed_dedicated_node_groups": ["gpu-b"]},
            "container": {"image": "busybox", "command": ["/bin/sh", "-c", script]}
        }
    });
    let printer = server.create_job(&tokens[0], &printer);
    server.wait_for_state_within(&tokens[0], &printer, JobState::Completed, Duration::from_secs(600));
    let (_, replicas) = client.get(&format!("/jobs/{printer}/replicas"), &tokens[0]);
    let replicas: Value = serde_json::from_str(&replicas).unwrap();
    let status = &replicas[0]["status"];
    let took =
        Duration::from_millis((status["end_time"].as_i64().unwrap() - status["start_time"].as_i64().unwrap()) as u64);
    let (_, tail) = client.get(&format!("/jobs/{printer}/replicas/{printer}-0-0/log?tail=1"), &tokens[0]);
    let tail: Value = serde_json::from_str(&tail).unwrap();
    assert_eq!(tail["total_lines"], lines, "not every line was stored: {tail}");
    println!(
        "== log ingest: {lines} lines ({} MB) in {:.2} s = {:.0} lines/s, {:.1} MB/s",
        lines * 80 / 1_000_000,
        took.as_secs_f64(),
        lines as f64 / took.as_secs_f64(),
        (lines * 80) as f64 / 1e6 / took.as_secs_f64()
    );

    // 5. Lepton's log query (GET /logs) over that 1,000,000-line log: the
    // newest lines as `get_job_logs(tail)` reads them, the TAO SDK's default
    // 5,000, a text search that must read every line, and paging backwards
    // through the whole log 10,000 lines at a time as `lep log get` does.
    let timed = |path: &str, runs: usize| -> Vec<Duration> {
        let mut took: Vec<Duration> = (0..runs)
            .map(|_| {
                let start = Instant::now();
                let (status, body) = client.get(path, &tokens[0]);
                assert_eq!(status, 200, "{path}: {body}");
                start.elapsed()
            })
            .collect();
        took.sort();
        took
    };
    for (what, path, runs) in [
        ("newest 50 lines", format!("/logs?job={printer}&limit=50"), 200),
        ("newest 5,000 lines (the TAO SDK's default)", format!("/logs?job={printer}&limit=5000"), 20),
        ("text search over every line (one match)", format!("/logs?job={printer}&q=00777777%20the&limit=50"), 10),
    ] {
        let took = timed(&path, runs);
        println!(
            "== GET /logs, {what}: p50 {} p99 {} ({runs} runs)",
            ms(percentile(&took, 0.5)),
            ms(percentile(&took, 0.99))
        );
    }
    let start = Instant::now();
    let (mut end, mut seen, mut pages) = (i64::MAX, 0usize, 0);
    loop {
        let range = if end == i64::MAX { String::new() } else { format!("&start=1&end={end}") };
        let (status, body) = client.get(&format!("/logs?job={printer}&limit=10000{range}"), &tokens[0]);
        assert_eq!(status, 200, "{body}");
        let page: Value = serde_json::from_str(&body).unwrap();
        let values = page["data"]["result"][0]["values"].as_array().cloned().unwrap_or_default();
        let Some(oldest) = values.last() else { break };
        end = oldest[0].as_str().unwrap().parse().unwrap();
        seen += values.len();
        pages += 1;
    }
    assert_eq!(seen, lines, "paging backwards returned every line once");
    let took = start.elapsed();
    println!(
        "== GET /logs, paging backwards through {lines} lines, 10,000 a page: {pages} pages in {:.2} s = {:.0} lines/s",
        took.as_secs_f64(),
        lines as f64 / took.as_secs_f64()
    );

    // Leave nothing running: stop the queued jobs, then the holder, whose
    // replicas outlive the server otherwise.
    let stop = json!({"spec": {"stopped": true}});
    for (user, id) in queued {
        let (status, body) = server.call("PATCH", &format!("/jobs/{id}"), &tokens[user], Some(&stop));
        assert_eq!(status, 200, "{body}");
    }
    let (status, body) = server.call("PATCH", &format!("/jobs/{holder}"), &tokens[0], Some(&stop));
    assert_eq!(status, 200, "{body}");
    server.wait_for_state(&tokens[0], &holder, JobState::Stopped);
}
