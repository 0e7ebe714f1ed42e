//! Event stream benchmark (issue 36), against the real `jobdeck serve` on
//! loopback: how long a change takes to reach the clients of `GET /stream`
//! while many are connected.
//!
//! * 100 clients follow the list (`jobs=true`) and 100 follow a job each
//!   (`job=<id>`, jobs that stay idle), as 200 console tabs would;
//! * 20 clients follow a running log each (`log=<job>/<replica>`), on
//!   replicas that print a line every 100 ms;
//! * a probe creates `STREAM_CHANGES` jobs (default 50), one every 200 ms.
//!
//! Reported: from the probe sending `POST /jobs` to each list client reading
//! the new job's `job` message (p50, p95, max over every client and job);
//! from the same `POST` to the job's row in the deployments list of one
//! headless Chromium, on the console's event stream (a `MutationObserver`
//! notes when each row first is in the DOM); and from a log line's own time
//! (stamped by the writer) to a follower reading it. Client threads, the
//! browser and the server share the machine's 2 cores, so the figures are
//! upper bounds for the server alone. Run with `bench/live-stream.sh`
//! (Chromium from `scripts/setup.sh --browser`, the console built).

use std::io::BufRead;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jobdeck_e2e::{Browser, JobState, Server};
use serde_json::{json, Value};

const CONFIG: &str = r#"
# The bench measures the server, not the per-user bounds.
[limits]
requests_per_user = 1000
log_followers_per_user = 100
streams_per_user = 1000

[executor.local]
mode = "process"
retry_backoff_seconds = 0
grace_period_seconds = 1

[[node_groups]]
name = "local"
cpu = 64
memory_mb = 262144
node_names = ["stream-node"]

[[shapes]]
name = "cpu.small"
cpu = 1
memory_mb = 1024
"#;

const LIST_CLIENTS: usize = 100;
const JOB_CLIENTS: usize = 100;
const FOLLOWERS: usize = 20;

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

/// Reads a stream's messages, calling `each(name, data)` until it returns false.
fn read_stream(url: &str, token: &str, mut each: impl FnMut(&str, &Value) -> bool) {
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let mut res = agent.get(url).header("Authorization", &format!("Bearer {token}")).call().expect("stream opens");
    assert_eq!(res.status().as_u16(), 200, "{url}");
    let reader = std::io::BufReader::new(res.body_mut().as_reader());
    let mut name = String::new();
    for line in reader.lines() {
        let Ok(line) = line else { return };
        if let Some(value) = line.strip_prefix("event:") {
            name = value.trim().to_string();
        } else if let Some(data) = line.strip_prefix("data:") {
            let value: Value = serde_json::from_str(data.trim_start()).unwrap_or(Value::Null);
            if !each(&name, &value) {
                return;
            }
        }
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn report(what: &str, mut samples: Vec<f64>) {
    samples.sort_by(f64::total_cmp);
    if samples.is_empty() {
        println!("{what:52} no samples");
        return;
    }
    println!(
        "{what:52} {:>6} samples  p50 {:>7.1} ms  p95 {:>7.1} ms  max {:>7.1} ms",
        samples.len(),
        percentile(&samples, 0.5),
        percentile(&samples, 0.95),
        samples.last().unwrap()
    );
}

fn main() {
    let changes: usize = std::env::var("STREAM_CHANGES").ok().and_then(|v| v.parse().ok()).unwrap_or(50);
    let temp = tempfile::tempdir().unwrap();
    let config = temp.path().join("jobdeck.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let server = Server::start_in(&temp.path().join("data"), &["--config", config.to_str().unwrap()]);
    let token = server.token_for("streamer");
    let base = server.api_url("");

    println!("== {JOB_CLIENTS} idle jobs to follow, {FOLLOWERS} jobs printing a line every 100 ms");
    let mut idle = Vec::new();
    for k in 0..JOB_CLIENTS {
        let job = json!({"metadata": {"name": format!("idle-{k}")}, "spec": {"resource_shape": "cpu.small",
            "container": {"command": ["/bin/sh", "-c", "true"]}, "stopped": true}});
        idle.push(server.create_job(&token, &job));
    }
    let mut printers = Vec::new();
    for k in 0..FOLLOWERS {
        let job = json!({"metadata": {"name": format!("printer-{k}")}, "spec": {"resource_shape": "cpu.small",
            "container": {"command": ["/bin/sh", "-c", "i=0; while true; do i=$((i+1)); echo \"line $i\"; sleep 0.1; done"]}}});
        printers.push(server.create_job(&token, &job));
    }
    for id in &printers {
        server.wait_for_state(&token, id, JobState::Running);
    }

    // Every list client records when it first read each probe job (the
    // message may come before the POST's answer: its time is compared with
    // the POST's afterwards).
    let received: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
    let sent: Mutex<Vec<(String, Instant)>> = Mutex::default();
    let log_latency: Arc<Mutex<Vec<f64>>> = Arc::default();
    let opened = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut threads = Vec::new();
    for _ in 0..LIST_CLIENTS {
        let (url, token, received, opened) =
            (format!("{base}/stream?jobs=true"), token.clone(), received.clone(), opened.clone());
        threads.push(std::thread::spawn(move || {
            let mut seen = std::collections::HashSet::new();
            read_stream(&url, &token, |name, data| {
                if name == "open" {
                    opened.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                let name_of = data["metadata"]["name"].as_str().unwrap_or("");
                if name == "job" && name_of.starts_with("probe-") {
                    let id = data["metadata"]["id"].as_str().unwrap_or("").to_string();
                    if seen.insert(id.clone()) {
                        received.lock().unwrap().push((id, Instant::now()));
                    }
                }
                seen.len() < changes
            });
        }));
    }
    let idle_clients_done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    for id in idle.iter().take(JOB_CLIENTS) {
        let (url, token, opened, done) =
            (format!("{base}/stream?job={id}"), token.clone(), opened.clone(), idle_clients_done.clone());
        threads.push(std::thread::spawn(move || {
            read_stream(&url, &token, |name, _| {
                if name == "open" {
                    opened.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                !done.load(std::sync::atomic::Ordering::Relaxed)
            });
        }));
    }
    for id in &printers {
        let url = format!("{base}/stream?log={id}/{id}-0-0&log_from=1");
        let (token, latency, opened, done) =
            (token.clone(), log_latency.clone(), opened.clone(), idle_clients_done.clone());
        threads.push(std::thread::spawn(move || {
            let mut caught_up = false;
            read_stream(&url, &token, |name, data| {
                if name == "open" {
                    opened.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    return true;
                }
                if name == "log" {
                    let read_at = now_ms();
                    for line in data["lines"].as_array().into_iter().flatten() {
                        // The first message holds the lines written before
                        // the stream opened; the latency is of the new ones.
                        if caught_up {
                            latency.lock().unwrap().push((read_at - line["time"].as_i64().unwrap_or(read_at)) as f64);
                        }
                    }
                    caught_up = true;
                }
                !done.load(std::sync::atomic::Ordering::Relaxed)
            });
        }));
    }
    let streams = LIST_CLIENTS + JOB_CLIENTS + FOLLOWERS;
    let deadline = Instant::now() + Duration::from_secs(60);
    while opened.load(std::sync::atomic::Ordering::SeqCst) < streams {
        assert!(
            Instant::now() < deadline,
            "only {} of {streams} streams opened",
            opened.load(std::sync::atomic::Ordering::SeqCst)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // One console tab on the deployments list, on its own event stream;
    // every row's first moment in the DOM is noted in the page.
    let browser = Browser::start();
    browser.sign_in(&server, &token);
    browser.wait_until("the console's stream", || {
        (browser.execute("return document.body.dataset.live || '';", vec![]) == "stream").then_some(())
    });
    browser.execute(
        "window.__seen = {}; \
         const note = () => { for (const a of document.querySelectorAll('tbody a[href^=\"/jobs/\"]')) { \
           const href = a.getAttribute('href'); if (!(href in window.__seen)) window.__seen[href] = Date.now(); } }; \
         note(); new MutationObserver(note).observe(document.body, {subtree: true, childList: true});",
        vec![],
    );
    println!(
        "== {} streams and one console tab open; the probe creates {changes} jobs, one every 200 ms",
        LIST_CLIENTS + JOB_CLIENTS + FOLLOWERS
    );
    let mut posted_wall = Vec::new();
    for k in 0..changes {
        let job = json!({"metadata": {"name": format!("probe-{k}")}, "spec": {"resource_shape": "cpu.small",
            "container": {"command": ["/bin/sh", "-c", "true"]}, "stopped": true}});
        let (at, wall) = (Instant::now(), now_ms());
        let (status, body) = server.call("POST", "/jobs", &token, Some(&job));
        assert_eq!(status, 200, "{body}");
        sent.lock().unwrap().push((body["metadata"]["id"].as_str().unwrap().to_string(), at));
        posted_wall.push((body["metadata"]["id"].as_str().unwrap().to_string(), wall));
        std::thread::sleep(Duration::from_millis(200));
    }
    // The list clients end once they have read every probe job; the others
    // end at their next message after this.
    for thread in threads.drain(..LIST_CLIENTS) {
        thread.join().unwrap();
    }
    idle_clients_done.store(true, std::sync::atomic::Ordering::Relaxed);
    let sent = sent.lock().unwrap();
    let list_latency: Vec<f64> = received
        .lock()
        .unwrap()
        .iter()
        .filter_map(|(id, at)| {
            let (_, posted) = sent.iter().find(|(probe, _)| probe == id)?;
            Some(at.saturating_duration_since(*posted).as_secs_f64() * 1e3)
        })
        .collect();
    report("a created job, POST to each list stream's message", list_latency);
    // The browser's clock and this one are the machine's: the row's time
    // less the POST's is the page's latency.
    let drawn = browser.wait_until("every probe job's row in the page", || {
        let seen = browser.execute("return window.__seen;", vec![]);
        let times: Vec<f64> = posted_wall
            .iter()
            .filter_map(|(id, posted)| Some((seen[format!("/jobs/{id}")].as_i64()? - posted) as f64))
            .collect();
        (times.len() == posted_wall.len()).then_some(times)
    });
    report("a created job, POST to its row in the console's DOM", drawn);
    report("a log line, written to its follower's message", log_latency.lock().unwrap().clone());

    for id in &printers {
        let (status, body) =
            server.call("PATCH", &format!("/jobs/{id}"), &token, Some(&json!({"spec": {"stopped": true}})));
        assert_eq!(status, 200, "{body}");
    }
    // The other clients' threads end with the server; they are not joined,
    // and `exit` runs no destructor, so the browser and the server are
    // stopped first.
    drop(browser);
    drop(server);
    std::process::exit(0);
}
