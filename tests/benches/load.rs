//! Load benchmark (issue 20), against the real `jobdeck serve`: 200 clients
//! use the console's pages at once while 20 follow running logs, for
//! `LOAD_SECONDS` (default 60) on loopback.
//!
//! * 100 clients on the deployments list: `GET /jobs?page_size=50` (the
//!   list's call), again a second after each answer as the console's live
//!   list does (`LOAD_THINK_MS` changes the pause; 0 saturates the server);
//! * 100 clients on a job page: `GET /jobs/{id}`, `/replicas` and `/events`,
//!   every second;
//! * 20 log followers: the log viewer's long poll `GET …/log?from=<next>&wait=25`
//!   on replicas that print a line every 100 ms.
//!
//! 2,000 jobs are stored first (as 10 users, a fifth private). Every request
//! is timed; the report gives p50, p99 and the slowest, per kind of call, and
//! every error (anything but 200, or a failed connection). Client and server
//! share the machine's 2 cores, so the figures are upper bounds for the
//! server alone. Run with `bench/load.sh`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jobdeck_e2e::{JobState, Server};
use serde_json::{json, Value};

const CONFIG: &str = r#"
# The bench measures the server, not the per-user bounds: 20 followers
# share one user's token (docs/security.md, "Requests").
[limits]
requests_per_user = 1000
log_followers_per_user = 100

[executor.local]
mode = "process"
retry_backoff_seconds = 0
grace_period_seconds = 1

[[node_groups]]
name = "local"
cpu = 64
memory_mb = 262144
node_names = ["load-node"]

[[shapes]]
name = "cpu.small"
cpu = 1
memory_mb = 1024
"#;

const USERS: usize = 10;
const STORED_JOBS: usize = 2_000;
const LIST_CLIENTS: usize = 100;
const JOB_PAGE_CLIENTS: usize = 100;
const FOLLOWERS: usize = 20;
/// The console's live views ask again this long after an answer
/// (`LOAD_THINK_MS` changes it: 0 makes every client ask again at once, the
/// most the server can be asked).
fn poll_interval() -> Duration {
    Duration::from_millis(std::env::var("LOAD_THINK_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(1000))
}

type Samples = Arc<Mutex<BTreeMap<&'static str, Vec<Duration>>>>;
type Errors = Arc<Mutex<Vec<String>>>;

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into()
}

/// Sends one GET; records its time under `kind`, or an error.
fn timed_get(
    agent: &ureq::Agent,
    url: &str,
    token: &str,
    kind: &'static str,
    samples: &Samples,
    errors: &Errors,
) -> Option<Value> {
    let start = Instant::now();
    let answer = agent.get(url).header("Authorization", &format!("Bearer {token}")).call();
    let took = start.elapsed();
    match answer {
        Ok(mut res) if res.status().as_u16() == 200 => {
            let body = res.body_mut().read_to_string().unwrap_or_default();
            samples.lock().unwrap().entry(kind).or_default().push(took);
            Some(serde_json::from_str(&body).unwrap_or(Value::Null))
        }
        Ok(res) => {
            errors.lock().unwrap().push(format!("{kind}: HTTP {}", res.status()));
            None
        }
        Err(e) => {
            errors.lock().unwrap().push(format!("{kind}: {e}"));
            None
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn main() {
    let seconds: u64 = std::env::var("LOAD_SECONDS").ok().and_then(|v| v.parse().ok()).unwrap_or(60);
    let temp = tempfile::tempdir().unwrap();
    let config = temp.path().join("jobdeck.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let server = Server::start_api_in(&temp.path().join("data"), &["--config", config.to_str().unwrap()]);
    let tokens: Vec<String> = (0..USERS).map(|u| server.token_for(&format!("user{u}"))).collect();

    println!("== storing {STORED_JOBS} jobs");
    let mut ids = Vec::new();
    for k in 0..STORED_JOBS {
        let job = json!({
            "metadata": {"name": format!("load-{k}"), "visibility": if k % 5 == 0 { "private" } else { "public" }},
            "spec": {"resource_shape": "cpu.small", "container": {"image": "busybox", "command": ["/bin/sh", "-c", "true"]}, "stopped": true}
        });
        let user = k % USERS;
        let (status, body) = server.call("POST", "/jobs", &tokens[user], Some(&job));
        assert_eq!(status, 200, "{body}");
        if k % 5 != 0 {
            ids.push(body["metadata"]["id"].as_str().unwrap().to_string());
        }
    }
    println!("== starting {FOLLOWERS} jobs that print a line every 100 ms");
    let mut printers = Vec::new();
    for k in 0..FOLLOWERS {
        let job = json!({
            "metadata": {"name": format!("printer-{k}")},
            "spec": {"resource_shape": "cpu.small", "container": {"image": "busybox", "command": ["/bin/sh", "-c", "i=0; while true; do i=$((i+1)); echo \"line $i\"; sleep 0.1; done"]}}
        });
        let id = server.create_job(&tokens[0], &job);
        printers.push(id);
    }
    for id in &printers {
        server.wait_for_state(&tokens[0], id, JobState::Running);
    }

    let samples: Samples = Arc::new(Mutex::new(BTreeMap::new()));
    let errors: Errors = Arc::new(Mutex::new(Vec::new()));
    let until = Instant::now() + Duration::from_secs(seconds);
    let base = server.api_url("");
    println!(
        "== {LIST_CLIENTS} list clients, {JOB_PAGE_CLIENTS} job page clients (asking again {} ms after each answer), {FOLLOWERS} log followers for {seconds} s",
        poll_interval().as_millis()
    );
    let mut threads = Vec::new();
    for c in 0..LIST_CLIENTS {
        let (base, token, samples, errors) = (base.clone(), tokens[c % USERS].clone(), samples.clone(), errors.clone());
        threads.push(std::thread::spawn(move || {
            let agent = agent();
            // Spread the clients over the first second, as users arrive.
            std::thread::sleep(poll_interval() * c as u32 / LIST_CLIENTS as u32);
            while Instant::now() < until {
                timed_get(
                    &agent,
                    &format!("{base}/jobs?page=1&page_size=50"),
                    &token,
                    "list: GET /jobs",
                    &samples,
                    &errors,
                );
                std::thread::sleep(poll_interval());
            }
        }));
    }
    for c in 0..JOB_PAGE_CLIENTS {
        let (base, token, samples, errors) = (base.clone(), tokens[c % USERS].clone(), samples.clone(), errors.clone());
        let id = ids[(c * 7919) % ids.len()].clone();
        threads.push(std::thread::spawn(move || {
            let agent = agent();
            std::thread::sleep(poll_interval() * c as u32 / JOB_PAGE_CLIENTS as u32);
            while Instant::now() < until {
                timed_get(&agent, &format!("{base}/jobs/{id}"), &token, "job page: GET /jobs/{id}", &samples, &errors);
                timed_get(
                    &agent,
                    &format!("{base}/jobs/{id}/replicas"),
                    &token,
                    "job page: GET /jobs/{id}/replicas",
                    &samples,
                    &errors,
                );
                timed_get(
                    &agent,
                    &format!("{base}/jobs/{id}/events"),
                    &token,
                    "job page: GET /jobs/{id}/events",
                    &samples,
                    &errors,
                );
                std::thread::sleep(poll_interval());
            }
        }));
    }
    let lines_followed = Arc::new(Mutex::new(0u64));
    for id in printers.clone() {
        let (base, token, samples, errors, lines_followed) =
            (base.clone(), tokens[0].clone(), samples.clone(), errors.clone(), lines_followed.clone());
        threads.push(std::thread::spawn(move || {
            let agent = agent();
            let mut next = 1u64;
            while Instant::now() < until {
                let url = format!("{base}/jobs/{id}/replicas/{id}-0-0/log?from={next}&wait=25");
                let Some(range) = timed_get(&agent, &url, &token, "log follower: long poll", &samples, &errors) else {
                    std::thread::sleep(poll_interval());
                    continue;
                };
                let got = range["lines"].as_array().map_or(0, |l| l.len()) as u64;
                next += got;
                *lines_followed.lock().unwrap() += got;
            }
        }));
    }
    for thread in threads {
        thread.join().unwrap();
    }

    let samples = samples.lock().unwrap();
    let mut all: Vec<Duration> = Vec::new();
    for (kind, times) in samples.iter() {
        let mut times = times.clone();
        times.sort();
        if !kind.starts_with("log follower") {
            all.extend(times.iter().copied());
        }
        println!(
            "{kind:40} {:>7} requests  p50 {:>8.2} ms  p99 {:>8.2} ms  max {:>8.2} ms",
            times.len(),
            percentile(&times, 0.5).as_secs_f64() * 1e3,
            percentile(&times, 0.99).as_secs_f64() * 1e3,
            times.last().unwrap().as_secs_f64() * 1e3
        );
    }
    all.sort();
    println!(
        "{:40} {:>7} requests  p50 {:>8.2} ms  p99 {:>8.2} ms  ({:.0} requests/s)",
        "page calls together",
        all.len(),
        percentile(&all, 0.5).as_secs_f64() * 1e3,
        percentile(&all, 0.99).as_secs_f64() * 1e3,
        all.len() as f64 / seconds as f64
    );
    println!("log lines followed: {}", lines_followed.lock().unwrap());
    let errors = errors.lock().unwrap();
    println!("errors: {}", errors.len());
    for e in errors.iter().take(20) {
        println!("  {e}");
    }

    // Leave nothing running.
    for id in &printers {
        let (status, body) =
            server.call("PATCH", &format!("/jobs/{id}"), &tokens[0], Some(&json!({"spec": {"stopped": true}})));
        assert_eq!(status, 200, "{body}");
    }
}
