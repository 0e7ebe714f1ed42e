//! The deployments list at scale (issue 37): `JOBS` jobs (default
//! 1,000,000) stored as a busy workspace would hold them (ten users, a fifth
//! of the jobs private, labels, node groups, most jobs finished), then the
//! server's start-up on that store and `GET /jobs` as the console and
//! `lep job list` ask it, as a member who sees about 820,000 of them: the
//! first page, a later one, the last one (through its cursor and through
//! its number), filters by state, creator and node group, name searches of
//! one, two and more characters, a label selector, and filters that match
//! most jobs (whose total is the slow part). Run with `bench/list-scale.sh`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use jobdeck_api::{JobSpec, JobState, Visibility};
use jobdeck_core::Config;
use jobdeck_server::http::auth;
use jobdeck_server::{app, AppState};
use jobdeck_store::{JobRow, JobRuntime, Store, StoredMetadata};
use tower::ServiceExt;

const ROUNDS: usize = 100;
const USERS: usize = 10;
const NAMES: [&str; 8] = ["finetune", "eval", "pretrain", "sweep", "distill", "tokenize", "export", "benchmark"];
const TEAMS: [&str; 4] = ["vision", "nlp", "speech", "infra"];

fn count(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The `k`-th job: finished, archived or stopped (none runs: the bench
/// measures the list, not the executor), one in a thousand stopped.
fn seed_job(k: usize, now: i64) -> JobRow {
    let name = format!("{}-{}", NAMES[k % NAMES.len()], k % 1000);
    let created_at = now - 86_400_000 * 90 + k as i64 * 7;
    let state = match (k % 1000, k % 50) {
        (1, _) => JobState::Stopped,
        (_, 2..=9) => JobState::Failed,
        (_, 15..=24) => JobState::Archived,
        _ => JobState::Completed,
    };
    let labels = BTreeMap::from([
        ("team".to_string(), TEAMS[k % TEAMS.len()].to_string()),
        ("sweep".to_string(), format!("s{}", k % 97)),
    ]);
    JobRow {
        id: format!("{name}-{k:07x}"),
        name,
        created_by: format!("user{}", k % USERS),
        visibility: if k.is_multiple_of(5) { Visibility::Private } else { Visibility::Public },
        created_at,
        metadata: StoredMetadata { labels: Some(labels), annotations: None },
        spec: JobSpec { stopped: Some(true), ..JobSpec::default() },
        priority: 4000,
        node_groups: match k % 3 {
            0 => vec!["gpu-a".into()],
            1 => vec!["gpu-b".into()],
            _ => vec![],
        },
        runtime: JobRuntime { state, completed_at: Some(created_at + 3_600_000), ..JobRuntime::default() },
        ..JobRow::default()
    }
}

async fn get(router: &axum::Router, uri: &str, token: &str) -> (StatusCode, serde_json::Value) {
    let request = Request::builder()
        .uri(uri)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null))
}

fn percentile(mut values: Vec<Duration>, p: f64) -> f64 {
    values.sort();
    values[((values.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e3
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let jobs = count("JOBS", 1_000_000);
    let dir = tempfile::tempdir().unwrap();
    // `LIST_SCALE_DB` keeps the database (filled once, reused by later runs
    // with the same JOBS) for a look at the queries afterwards.
    let db = std::env::var_os("LIST_SCALE_DB").map(std::path::PathBuf::from).unwrap_or(dir.path().join("jobdeck.db"));
    let now = jobdeck_server::now_millis();
    if !db.exists() {
        let store = Store::open(&db).unwrap();
        let at = Instant::now();
        for first in (0..jobs).step_by(10_000) {
            let rows = (first..(first + 10_000).min(jobs)).map(|k| seed_job(k, now)).collect();
            store.insert_jobs(rows).await.unwrap();
        }
        let took = at.elapsed().as_secs_f64();
        println!("{jobs} jobs stored in {took:.0} s ({:.0}/s)", jobs as f64 / took);
    }
    let size = std::fs::metadata(&db).map(|m| m.len()).unwrap_or(0);
    println!("the database: {:.0} MB", size as f64 / 1e6);

    // Start-up: the store opened (and migrated), the scheduler's start (it
    // reads the unfinished jobs), the first answer.
    let at = Instant::now();
    let store = Store::open(&db).unwrap();
    let opened = at.elapsed();
    let token = auth::issue_token(&store, "user7", auth::TokenRequest::api()).await.unwrap().secret;
    let mut config = Config::for_data_dir(dir.path());
    config.executor.local.mode = jobdeck_core::config::LocalMode::Process;
    config.executor.local.metrics_interval_ms = 0;
    config.supervisor_bin = std::env::var_os("JOBDECK_BIN").map(Into::into);
    let start = Instant::now();
    let router = app(AppState::start(store.clone(), config).await.unwrap());
    let started = start.elapsed();
    let (status, _) = get(&router, "/api/v2/jobs", &token).await;
    assert_eq!(status, StatusCode::OK);
    println!(
        "start-up with {jobs} jobs: store opened {:.0} ms, server started {:.0} ms, first list answered {:.0} ms",
        opened.as_secs_f64() * 1e3,
        started.as_secs_f64() * 1e3,
        at.elapsed().as_secs_f64() * 1e3
    );

    let (_, first) = get(&router, "/api/v2/jobs", &token).await;
    let last_cursor = first["last"].as_str().map(|c| format!("?after={c}"));
    let total = first["total"].as_i64().unwrap_or(0);
    let last_page = (total + 49) / 50;
    let mut cases: Vec<(String, String)> = vec![
        ("first page".into(), String::new()),
        ("page 2".into(), "?page=2".into()),
        (format!("the last page by number ({last_page})"), format!("?page={last_page}")),
        ("state: Stopped (one in a thousand)".into(), "?status=Stopped".into()),
        ("state + creator".into(), "?status=Failed&creator=user3".into()),
        ("node group + creator".into(), "?node_group=gpu-a&creator=user3".into()),
        ("name, 1 character".into(), "?q=e".into()),
        ("name, 2 characters".into(), "?q=ev".into()),
        ("name, common (eval)".into(), "?q=eval".into()),
        ("name, rare (sweep-11-)".into(), "?q=sweep-11-".into()),
        ("name, none match (zq)".into(), "?q=zq".into()),
        ("label team=nlp".into(), "?query=team%3Dnlp".into()),
        ("label sweep=s12".into(), "?query=sweep%3Ds12".into()),
        ("label + state".into(), "?query=team%3Dnlp&status=Failed".into()),
        ("most jobs: Completed".into(), "?status=Completed".into()),
        ("most jobs: label team!=nobody".into(), "?query=team!%3Dnobody".into()),
    ];
    if let Some(after) = last_cursor {
        cases.insert(3, ("the last page by its cursor".into(), after));
    }
    println!("GET /jobs as user7 ({total} jobs visible), {ROUNDS} rounds each:");
    for (what, query) in cases {
        let uri = format!("/api/v2/jobs{query}");
        let mut took = Vec::with_capacity(ROUNDS);
        let mut listed = serde_json::Value::Null;
        for _ in 0..ROUNDS {
            let at = Instant::now();
            let (status, body) = get(&router, &uri, &token).await;
            took.push(at.elapsed());
            assert_eq!(status, StatusCode::OK, "{uri}: {body}");
            listed = body;
        }
        let shown = listed["jobs"].as_array().map_or(0, Vec::len);
        let total = listed["total"].as_i64().unwrap_or(-1);
        println!(
            "  {what:<36} total {total:>7} shown {shown:>2}  p50 {:>7.2} ms  p99 {:>7.2} ms",
            percentile(took.clone(), 0.5),
            percentile(took, 0.99)
        );
    }
}
