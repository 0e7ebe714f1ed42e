//! Where a queued job stands (`status.queue_position`, issue 38): the real
//! scheduler's admission order over real queued jobs, as `GET /jobs/{id}`
//! answers it.

use crate::common;

use common::{sh_job, TestApp};
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

    // The first place is admitted when capacity frees; the others move up.
    std::fs::write(&release_held, b"").unwrap();
    app.wait_state(&urgent, "Running").await;
    app.wait_job(&second, "one place up", |j| j["status"]["queue_position"] == 3).await;
    assert_eq!(position(&app, &urgent).await, Value::Null);
    assert_eq!(position_as(&app, &bob, &hidden).await, 1);
    assert_eq!(position(&app, &first).await, 2);
    assert_eq!(position(&app, &other).await, 1, "group b's queue did not move");
}
