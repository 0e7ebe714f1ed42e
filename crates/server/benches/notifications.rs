//! Notifications (issue 38): what a job's state write costs the scheduler
//! with notification rules and without, and how soon a transition reaches a
//! webhook receiver on loopback. The writes are the scheduler's own
//! (`Store::update_job_runtime`) on jobs the scheduler does not run; the
//! notifier is the server's, started with the app. Run with
//! `bench/notifications.sh`.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use jobdeck_api::{JobState, NotifyOn, Visibility, WebhookKind};
use jobdeck_core::config::Destination;
use jobdeck_store::{JobRow, JobRuntime, NewWebhook, NotificationRow, Store};

const WRITES: usize = 4_000;
const DELIVERIES: usize = 1_000;

/// Receipt times (Unix ms) against the transition times the bodies carry.
#[derive(Clone, Default)]
struct Receiver {
    got: Arc<Mutex<Vec<(i64, i64)>>>,
    /// How long each answer takes.
    delay: Duration,
}

async fn receive(State(receiver): State<Receiver>, body: Bytes) -> &'static str {
    let at = jobdeck_server::now_millis();
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    receiver.got.lock().unwrap().push((body["time"].as_i64().unwrap(), at));
    tokio::time::sleep(receiver.delay).await;
    "ok"
}

async fn start_receiver(delay: Duration) -> (Receiver, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let receiver = Receiver { delay, ..Receiver::default() };
    let router = axum::Router::new().fallback(receive).with_state(receiver.clone());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (receiver, url)
}

async fn add_job(store: &Store, id: &str, owner: &str) {
    let row = JobRow {
        id: id.into(),
        name: id.into(),
        created_by: owner.into(),
        visibility: Visibility::Public,
        created_at: 1,
        runtime: JobRuntime { state: JobState::Queueing, ..JobRuntime::default() },
        ..JobRow::default()
    };
    store.insert_job(row, Vec::new()).await.unwrap();
}

async fn add_rule(store: &Store, owner: &str, job: Option<&str>, url: &str) {
    let webhook = NewWebhook {
        owner: owner.into(),
        name: "bench".into(),
        kind: WebhookKind::Json,
        url: url.into(),
        destination: "http://127.0.0.1".into(),
        secret: "secret".into(),
        created_at: 1,
    };
    let webhook_id = store.add_webhook(webhook, usize::MAX).await.unwrap().unwrap();
    let rule = NotificationRow {
        id: 0,
        owner: owner.into(),
        job_id: job.map(String::from),
        on: vec![NotifyOn::Started],
        webhook_id,
        gpu_idle_minutes: None,
        memory_percent: None,
        log_pattern: None,
        created_at: 1,
    };
    store.add_notification(rule, usize::MAX).await.unwrap().unwrap();
}

/// `count` state writes of job `id`, each a start or a return to the
/// queue: the time of each.
async fn flip(store: &Store, id: &str, count: usize) -> Vec<Duration> {
    let mut took = Vec::with_capacity(count);
    let mut runtime = store.job(id.into()).await.unwrap().unwrap().runtime;
    for round in 0..count {
        runtime.state = if round % 2 == 0 { JobState::Running } else { JobState::Queueing };
        let at = Instant::now();
        store.update_job_runtime(id.into(), runtime.clone(), None, Vec::new()).await.unwrap();
        took.push(at.elapsed());
    }
    took
}

fn line(what: &str, took: Vec<Duration>) {
    println!(
        "{what:<58} p50 {:>7.1} µs  p99 {:>7.1} µs",
        common::percentile(took.clone(), 0.5).as_secs_f64() * 1e6,
        common::percentile(took, 0.99).as_secs_f64() * 1e6
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let bench = common::Bench::start_with(|config| {
        config.notifications.allow = vec![Destination::parse("127.0.0.1").unwrap()];
    })
    .await;
    let store = bench.store.clone();
    add_job(&store, "plain-aaaaa", "alice").await;
    for user in 0..1_000 {
        add_job(&store, &format!("job{user}-aaaaa"), &format!("user{user}")).await;
    }
    // Warms the store's caches, so the two lines below differ by the rules
    // alone.
    flip(&store, "plain-aaaaa", WRITES).await;
    line("state write, no rule in the workspace", flip(&store, "plain-aaaaa", WRITES).await);

    // A thousand other users' rules, each for all their jobs or for one
    // job of theirs: none names Alice's job.
    let (_, unused_url) = start_receiver(Duration::ZERO).await;
    for user in 0..1_000 {
        let job = format!("job{user}-aaaaa");
        add_rule(&store, &format!("user{user}"), if user % 2 == 0 { None } else { Some(&job) }, &unused_url).await;
    }
    line("state write, 1,000 rules, none for this job", flip(&store, "plain-aaaaa", WRITES).await);

    // A rule naming the job: every start is a transition, matched and
    // delivered by the notifier while the writes go on.
    let (fast, fast_url) = start_receiver(Duration::ZERO).await;
    add_job(&store, "watched-aaaaa", "bob").await;
    add_rule(&store, "bob", Some("watched-aaaaa"), &fast_url).await;
    let at = Instant::now();
    line(
        "state write, a rule for this job (delivering meanwhile)",
        flip(&store, "watched-aaaaa", 2 * DELIVERIES).await,
    );
    while fast.got.lock().unwrap().len() < DELIVERIES {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let elapsed = at.elapsed();
    let mut latency: Vec<Duration> =
        fast.got.lock().unwrap().iter().map(|(sent, got)| Duration::from_millis((got - sent).max(0) as u64)).collect();
    latency.sort();
    println!(
        "{DELIVERIES} starts delivered to a loopback receiver in {:.2} s ({:.0}/s); transition to receipt p50 {} ms, p99 {} ms",
        elapsed.as_secs_f64(),
        DELIVERIES as f64 / elapsed.as_secs_f64(),
        common::percentile(latency.clone(), 0.5).as_millis(),
        common::percentile(latency, 0.99).as_millis()
    );

    // A receiver that takes 2 s to answer holds every send slot: the
    // writes do not wait for it.
    let (slow, slow_url) = start_receiver(Duration::from_secs(2)).await;
    add_job(&store, "slow-aaaaa", "carol").await;
    add_rule(&store, "carol", Some("slow-aaaaa"), &slow_url).await;
    flip(&store, "slow-aaaaa", 40).await;
    while slow.got.lock().unwrap().len() < jobdeck_server::notify::IN_FLIGHT {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    line("state write, every send slot held by a 2 s receiver", flip(&store, "slow-aaaaa", WRITES).await);
    std::process::exit(0);
}
