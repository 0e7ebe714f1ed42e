//! Where a queued job stands (issue 38): `status.queue_position`, the real
//! scheduler's admission order over real queued jobs, and
//! `status.start_suggestions`, what would let it start, as a table of
//! scenarios whose suggested changes, made, start the job — as
//! `GET /jobs/{id}` answers them.

use crate::common;

use common::{sh_job, TestApp};
use jobdeck_api::{QuotaLimits, Role};
use serde_json::{json, Value};

/// Two node groups of one CPU each; every job takes one CPU.
fn two_groups(config: &mut jobdeck_core::Config) {
    common::small_cluster(1.0)(config);
    let mut b = config.node_groups[0].clone();
    b.name = "b".into();
    b.node_names = Some(vec!["node-b".into()]);
    config.node_groups.push(b);
}

/// A job of group `group` that runs until the test opens its gate (or
/// ends).
fn in_group(app: &TestApp, name: &str, group: &str) -> (Value, std::path::PathBuf) {
    let (wait, release) = app.gate(name);
    let mut job = sh_job(name, &wait);
    job["spec"]["affinity"] = json!({"allowed_dedicated_node_groups": [group]});
    (job, release)
}

async fn position(app: &TestApp, id: &str) -> Value {
    app.job(id).await["status"]["queue_position"].clone()
}

async fn position_as(app: &TestApp, token: &str, id: &str) -> Value {
    app.job_as(token, id).await["status"]["queue_position"].clone()
}

/// Creates a job and waits until the scheduler has judged it (queued for
/// capacity), so that the next one is submitted after it.
async fn queued(app: &TestApp, token: &str, job: &Value) -> String {
    let id = app.create_job(token, job).await;
    app.wait_job_as(token, &id, "queued for capacity", |j| j["status"]["reason"] == "NoCapacity").await;
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_job_knows_its_place_in_the_admission_order_of_its_node_groups() {
    let app = TestApp::with_config(two_groups).await;
    let token = &app.admin_token;
    // Both groups full, each with a job held running.
    let (held, release_held) = in_group(&app, "held", "local");
    let held = app.create_job(token, &held).await;
    app.wait_state(&held, "Running").await;
    assert_eq!(position(&app, &held).await, Value::Null, "a running job has no place in the queue");
    let held_b = app.create_job(token, &in_group(&app, "held-b", "b").0).await;
    app.wait_state(&held_b, "Running").await;

    // In group local: another user's private job first, then two of the
    // admin's, then one of high priority, which goes before all of them.
    let bob = app.token_for("bob").await;
    let mut hidden = in_group(&app, "hidden", "local").0;
    hidden["metadata"]["visibility"] = json!("private");
    let hidden = queued(&app, &bob, &hidden).await;
    let first = queued(&app, token, &in_group(&app, "first", "local").0).await;
    let second = queued(&app, token, &in_group(&app, "second", "local").0).await;
    let mut urgent = in_group(&app, "urgent", "local").0;
    urgent["spec"]["queue_config"] = json!({"priority_class": "high-9000"});
    let urgent = queued(&app, token, &urgent).await;
    // In group b, its own line.
    let other = queued(&app, token, &in_group(&app, "other", "b").0).await;

    assert_eq!(position(&app, &urgent).await, 1, "priority goes first");
    assert_eq!(position_as(&app, &bob, &hidden).await, 2);
    assert_eq!(position(&app, &first).await, 3, "a job the caller cannot see is counted");
    assert_eq!(position(&app, &second).await, 4);
    assert_eq!(position(&app, &other).await, 1, "another group's queue is its own");
    let listed = app.get("/api/v2/jobs").await.json();
    let rows = listed["jobs"].as_array().unwrap();
    assert!(rows.iter().all(|j| j["status"].get("queue_position").is_none()), "the list has no places: {listed}");

    // The queue as its own view: the same order and places, the job the
    // caller may not see in its place, counted, never named.
    let view = app.get("/api/v2/queue?node_group=local").await.json();
    let jobs = view["jobs"].as_array().unwrap();
    let ids: Vec<&Value> = jobs.iter().map(|j| &j["id"]).collect();
    assert_eq!(ids, [&json!(urgent), &Value::Null, &json!(first), &json!(second)], "{view}");
    let places: Vec<i64> = jobs.iter().map(|j| j["position"].as_i64().unwrap()).collect();
    assert_eq!(places, [1, 2, 3, 4]);
    assert_eq!(view["hidden"], 1);
    let unnamed = jobs[1].as_object().unwrap();
    for field in ["name", "created_by", "resource_shape", "message"] {
        assert!(!unnamed.contains_key(field), "{field} of a hidden job: {view}");
    }
    assert_eq!(
        (jobs[1]["priority_class"].as_str(), jobs[1]["node_groups"].clone()),
        (Some("mid-4000"), json!(["local"]))
    );
    assert_eq!(jobs[0]["priority_class"], "high-9000");
    assert_eq!(jobs[2]["message"], app.job(&first).await["status"]["message"]);
    // Bob sees his own job named; the whole queue holds group b's too.
    let bobs_view = app.call(axum::http::Method::GET, "/api/v2/queue", &bob, None).await.json();
    let ids: Vec<&Value> = bobs_view["jobs"].as_array().unwrap().iter().map(|j| &j["id"]).collect();
    assert_eq!(ids, [&json!(urgent), &json!(hidden), &json!(first), &json!(second), &json!(other)], "{bobs_view}");
    assert_eq!(bobs_view["hidden"], 0);
    assert_eq!(app.get("/api/v2/queue?node_group=nowhere").await.status, axum::http::StatusCode::NOT_FOUND);
    assert_eq!(app.get("/api/v2/queue?group=local").await.status, axum::http::StatusCode::BAD_REQUEST);

    // The first place is admitted when capacity frees; the others move up.
    std::fs::write(&release_held, b"").unwrap();
    app.wait_state(&urgent, "Running").await;
    app.wait_job(&second, "one place up", |j| j["status"]["queue_position"] == 3).await;
    assert_eq!(position(&app, &urgent).await, Value::Null);
    assert_eq!(position_as(&app, &bob, &hidden).await, 1);
    assert_eq!(position(&app, &first).await, 2);
    assert_eq!(position(&app, &other).await, 1, "group b's queue did not move");
}

/// Groups `local` and `b`, one node of 8 CPUs and 8 GPUs each, and shapes
/// of 8, 4 and 1 GPUs (1 CPU each) beside `cpu.small`.
fn gpu_groups(config: &mut jobdeck_core::Config) {
    two_groups(config);
    for group in &mut config.node_groups {
        group.cpu = 8.0;
        group.gpus = 8;
    }
    for gpus in [8, 4, 1] {
        let mut shape = config.shapes[0].clone();
        shape.name = format!("gpu.{gpus}");
        shape.gpus = gpus;
        config.shapes.push(shape);
    }
}

/// A job of `replicas` replicas at once of `shape` in group `group`, held
/// running by its gate until the test opens it.
fn gpu_job(app: &TestApp, name: &str, shape: &str, group: &str, replicas: i64) -> (Value, std::path::PathBuf) {
    let (mut job, release) = in_group(app, name, group);
    job["spec"]["resource_shape"] = json!(shape);
    job["spec"]["completions"] = json!(replicas);
    job["spec"]["parallelism"] = json!(replicas);
    (job, release)
}

/// `status.start_suggestions` as (kind, reason) pairs.
async fn suggestions(app: &TestApp, token: &str, id: &str) -> Vec<(String, String)> {
    let job = app.job_as(token, id).await;
    let listed = job["status"]["start_suggestions"].as_array().cloned().unwrap_or_default();
    listed
        .iter()
        .map(|s| (s["kind"].as_str().unwrap().to_string(), s["reason"].as_str().unwrap().to_string()))
        .collect()
}

/// The change of the suggestion of `kind`.
async fn change_of(app: &TestApp, token: &str, id: &str, kind: &str) -> Value {
    let job = app.job_as(token, id).await;
    let listed = job["status"]["start_suggestions"].as_array().cloned().unwrap_or_default();
    let found = listed.iter().find(|s| s["kind"] == kind).unwrap_or_else(|| panic!("no {kind} suggestion: {job}"));
    found["change"].clone()
}

/// JSON merge patch (RFC 7386), as the console applies a suggestion.
fn merge(target: &mut Value, patch: &Value) {
    match (target.as_object_mut(), patch.as_object()) {
        (Some(into), Some(fields)) => {
            for (key, value) in fields {
                if value.is_null() {
                    into.remove(key);
                } else {
                    merge(into.entry(key.clone()).or_insert(Value::Null), value);
                }
            }
        }
        _ => *target = patch.clone(),
    }
}

/// The job `job` with a suggestion's change made, under a new name.
fn changed(job: &Value, change: &Value, name: &str) -> Value {
    let mut job = job.clone();
    job["metadata"]["name"] = json!(name);
    merge(&mut job["spec"], change);
    job
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_job_is_told_what_would_let_it_start_and_each_change_made_starts_it() {
    let app = TestApp::with_config(gpu_groups).await;
    let token = &app.admin_token;
    // Group local half full (4 of 8 GPUs held), group b full.
    let (half, _release_half) = gpu_job(&app, "half", "gpu.4", "local", 1);
    let half = app.create_job(token, &half).await;
    app.wait_state(&half, "Running").await;
    let (full_b, release_b) = gpu_job(&app, "full-b", "gpu.8", "b", 1);
    let full_b = app.create_job(token, &full_b).await;
    app.wait_state(&full_b, "Running").await;

    // 8 GPUs in group local: 4 would fit now.
    let (big_job, _) = gpu_job(&app, "big", "gpu.8", "local", 1);
    let big = queued(&app, token, &big_job).await;
    assert_eq!(
        suggestions(&app, token, &big).await,
        [(
            "smaller_shape".into(),
            "fits now with 4 GPUs a replica instead of 8 (shape gpu.4) in node group local".into()
        )]
    );
    // 8 replicas of 1 GPU at once: 4 at a time would fit now; a smaller
    // shape there is none.
    let (wide_job, _) = gpu_job(&app, "wide", "gpu.1", "local", 8);
    let wide = queued(&app, token, &wide_job).await;
    assert_eq!(
        suggestions(&app, token, &wide).await,
        [(
            "fewer_at_once".into(),
            "fits now running 4 replicas at a time instead of 8 in node group local; all 8 completions still run"
                .into()
        )]
    );
    assert_eq!(change_of(&app, token, &wide, "fewer_at_once").await, json!({"parallelism": 4}));
    // A job of higher priority behind them goes first: both are told.
    let (mut urgent_job, _) = gpu_job(&app, "urgent", "gpu.8", "local", 1);
    urgent_job["spec"]["queue_config"] = json!({"priority_class": "high-9000"});
    let urgent = queued(&app, token, &urgent_job).await;
    assert_eq!(position(&app, &urgent).await, 1);
    let told = suggestions(&app, token, &big).await;
    assert!(
        told.contains(&(
            "priority_ahead".into(),
            "1 job of higher priority waits ahead for the same node groups".into()
        )),
        "{told:?}"
    );
    assert!(told.iter().any(|(kind, _)| kind == "smaller_shape"), "{told:?}");

    // Group b frees: the jobs that did not ask for it are told it has room.
    std::fs::write(&release_b, b"").unwrap();
    app.wait_state(&full_b, "Completed").await;
    let told = suggestions(&app, token, &big).await;
    assert!(
        told.contains(&("other_node_group".into(), "node group b has 8 GPUs free: the job fits there now".into())),
        "{told:?}"
    );
    let to_b = change_of(&app, token, &big, "other_node_group").await;
    assert_eq!(to_b, json!({"affinity": {"allowed_dedicated_node_groups": ["b"]}}));

    // Each change, made, starts the job: in group b, and with 4 GPUs in
    // group local.
    let moved = app.create_job(token, &changed(&big_job, &to_b, "big-in-b")).await;
    app.wait_state(&moved, "Running").await;
    let smaller = change_of(&app, token, &big, "smaller_shape").await;
    assert_eq!(smaller, json!({"resource_shape": "gpu.4"}));
    let shrunk = app.create_job(token, &changed(&big_job, &smaller, "big-smaller")).await;
    app.wait_state(&shrunk, "Running").await;
    // Now nothing is free anywhere: no change would start `wide` now.
    let told = suggestions(&app, token, &wide).await;
    assert!(told.iter().all(|(kind, _)| kind == "priority_ahead"), "{told:?}");
    assert_eq!(app.job(&half).await["status"].get("start_suggestions"), None, "a running job has none");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_held_by_its_creators_quota_is_told_so_and_offered_a_shape_within_it() {
    let app = TestApp::with_config(|config| {
        gpu_groups(config);
        config.quotas.roles.insert(Role::Member, QuotaLimits { running_gpus: Some(8), ..Default::default() });
    })
    .await;
    let bob = app.token_with_role("bob", Role::Member).await;
    let (held, _release) = gpu_job(&app, "held", "gpu.4", "local", 1);
    let held = app.create_job(&bob, &held).await;
    app.wait_state_as(&bob, &held, "Running").await;
    // 8 GPUs more would be 12 of bob's 8; group b has them free.
    let (over_job, _) = gpu_job(&app, "over", "gpu.8", "b", 1);
    let over = app.create_job(&bob, &over_job).await;
    app.wait_job_as(&bob, &over, "held by the quota", |j| j["status"]["reason"] == "QuotaExceeded").await;
    assert_eq!(
        suggestions(&app, &bob, &over).await,
        [
            (
                "smaller_shape".into(),
                "fits now with 4 GPUs a replica instead of 8 (shape gpu.4) in node group b".into()
            ),
            ("quota".into(), "over quota: bob uses 4 of 8 GPUs (quota of role member); this job needs 8".into()),
        ]
    );
    // The queue lists it held, without a place: it holds back nobody.
    let view = app.call(axum::http::Method::GET, "/api/v2/queue", &bob, None).await.json();
    let entry = &view["jobs"][0];
    assert_eq!((entry["id"].as_str(), entry["held_by_quota"].as_bool()), (Some(over.as_str()), Some(true)), "{view}");
    assert!(entry.get("position").is_none(), "{view}");
    assert_eq!((entry["gpus_per_replica"].as_i64(), entry["resource_shape"].as_str()), (Some(8), Some("gpu.8")));
    let within = change_of(&app, &bob, &over, "smaller_shape").await;
    let started = app.create_job(&bob, &changed(&over_job, &within, "within")).await;
    app.wait_state_as(&bob, &started, "Running").await;
}

/// When a job started (milliseconds), as the scheduler stored it.
async fn started_at(app: &TestApp, id: &str) -> i64 {
    let row = app.store.job(id.to_string()).await.unwrap().unwrap();
    row.runtime.started_at.expect("it started")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_estimate_comes_from_the_deadlines_ahead_and_the_job_starts_by_then() {
    let app = TestApp::with_config(common::small_cluster(1.0)).await;
    let token = &app.admin_token;
    // Without a deadline the holder gives no basis: no estimate.
    let (open_ended, release_open) = app.gate("open-ended");
    let open_ended = app.create_job(token, &sh_job("open-ended", &open_ended)).await;
    app.wait_state(&open_ended, "Running").await;
    let (never, _) = app.gate("never");
    let with_deadline = |name: &str, seconds: i64| {
        let mut job = sh_job(name, &never);
        job["spec"]["active_deadline_seconds"] = json!(seconds);
        job
    };
    let waiting = queued(&app, token, &with_deadline("waiting", 2)).await;
    assert_eq!(app.job(&waiting).await["status"].get("start_estimate"), None, "no basis, no number");

    // The open-ended job ends; `waiting` runs until its 2 s deadline, and
    // `last`, queued behind it, is estimated from it: 2 s and the 2 s a
    // stop may take (the config's grace period).
    std::fs::write(&release_open, b"").unwrap();
    app.wait_state(&waiting, "Running").await;
    let last = queued(&app, token, &sh_job("last", "echo last")).await;
    let estimate = app.job(&last).await["status"]["start_estimate"].clone();
    assert_eq!(estimate["basis"], "deadlines", "{estimate}");
    let reason = estimate["reason"].as_str().unwrap();
    assert!(reason.starts_with("at the latest"), "{reason}");
    let at_ms = estimate["at"].as_i64().unwrap() * 1000;
    let deadline_ends = started_at(&app, &waiting).await + 2_000;
    assert!((deadline_ends + 2_000..=deadline_ends + 3_000).contains(&at_ms), "{at_ms} vs deadline {deadline_ends}");

    // Checked against the real start: by then at the latest, and not
    // before the deadline freed the CPU.
    app.wait_state(&last, "Completed").await;
    let started = started_at(&app, &last).await;
    assert!(started <= at_ms, "started at {started}, estimated by {at_ms}");
    assert!(started >= deadline_ends, "started at {started}, before the deadline {deadline_ends}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_estimate_replays_the_queue_ahead_with_each_admitted_jobs_own_deadline() {
    let app = TestApp::with_config(common::small_cluster(1.0)).await;
    let token = &app.admin_token;
    let (never, _) = app.gate("never");
    let job_with_deadline = |name: &str, seconds: i64| {
        let mut job = sh_job(name, &never);
        job["spec"]["active_deadline_seconds"] = json!(seconds);
        job
    };
    let holder = app.create_job(token, &job_with_deadline("holder", 30)).await;
    app.wait_state(&holder, "Running").await;
    let first = queued(&app, token, &job_with_deadline("first", 20)).await;
    let second = queued(&app, token, &sh_job("second", "true")).await;
    let at = |job: Value| job["status"]["start_estimate"]["at"].as_i64().unwrap();
    let first_at = at(app.job(&first).await);
    let second_at = at(app.job(&second).await);
    // The holder's 30 s and a 2 s stop; then `first` holds the CPU for its
    // own 20 s and a 2 s stop.
    let holder_frees = (started_at(&app, &holder).await + 32_000 + 999) / 1000;
    assert_eq!(first_at, holder_frees);
    assert!((second_at - first_at - 22).abs() <= 1, "first {first_at}, second {second_at}");
    app.call(axum::http::Method::DELETE, &format!("/api/v2/jobs/{holder}"), token, None).await;
}

/// A running job without a deadline whose name its creator has run to
/// completion before is taken to run as long as those runs (their median):
/// the estimate rests on that history and says it is a guess.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_deadline_a_running_jobs_earlier_runs_are_the_basis() {
    let app = TestApp::with_config(common::small_cluster(1.0)).await;
    let token = &app.admin_token;
    let earlier = app.create_job(token, &sh_job("nightly", "sleep 0.3")).await;
    app.wait_state(&earlier, "Completed").await;
    let runtime = app.store.job(earlier).await.unwrap().unwrap().runtime;
    let median = runtime.completed_at.unwrap() - runtime.started_at.unwrap();
    // A failed run of the name, and another creator's, are not its history
    // (either would be the median of two).
    let mut failing = sh_job("nightly", "sleep 2; exit 1");
    failing["spec"]["backoff_limit"] = json!(0);
    let failed = app.create_job(token, &failing).await;
    app.wait_state(&failed, "Failed").await;
    let alice = app.token_for("alice").await;
    let alices = app.create_job(&alice, &sh_job("nightly", "sleep 2")).await;
    app.wait_state_as(&alice, &alices, "Completed").await;

    let (gated, release) = app.gate("nightly");
    let running = app.create_job(token, &sh_job("nightly", &gated)).await;
    app.wait_state(&running, "Running").await;
    let next = queued(&app, token, &sh_job("next", "echo next")).await;
    let estimate = app.job(&next).await["status"]["start_estimate"].clone();
    let asked = jobdeck_server::now_millis();
    assert_eq!(estimate["basis"], "history", "{estimate}");
    let reason = estimate["reason"].as_str().unwrap();
    assert!(reason.starts_with("likely") || reason.starts_with("any moment"), "{reason}");
    let expected = started_at(&app, &running).await + median;
    let at_ms = estimate["at"].as_i64().unwrap() * 1000;
    assert!(
        (expected..=expected.max(asked) + 1_000).contains(&at_ms),
        "{at_ms}: the running job's start {} and its earlier run's {median} ms",
        started_at(&app, &running).await
    );
    std::fs::write(&release, b"").unwrap();
    app.wait_state(&next, "Completed").await;
    assert!(started_at(&app, &next).await >= started_at(&app, &running).await);
}
