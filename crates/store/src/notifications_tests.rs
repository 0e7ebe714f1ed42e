//! The notification tables on a real SQLite file: an upgrade from the
//! previous release, transitions kept only while a rule could match, and
//! matching by owner, job, event and visibility.

use jobdeck_api::{DeliveryState, JobState, NotifyOn, WebhookKind};

use super::tests::{database_of_schema, job_row};
use super::*;

pub(crate) fn webhook(owner: &str) -> NewWebhook {
    NewWebhook {
        owner: owner.into(),
        name: format!("{owner}'s hook"),
        kind: WebhookKind::Json,
        url: format!("http://127.0.0.1:9/{owner}"),
        destination: "http://127.0.0.1:9".into(),
        secret: "s3cret".into(),
        created_at: 1,
    }
}

pub(crate) fn rule(owner: &str, job: Option<&str>, on: &[NotifyOn], webhook_id: i64) -> NotificationRow {
    NotificationRow {
        id: 0,
        owner: owner.into(),
        job_id: job.map(String::from),
        on: on.to_vec(),
        webhook_id,
        gpu_idle_minutes: None,
        memory_percent: None,
        log_pattern: None,
        created_at: 1,
    }
}

pub(crate) async fn move_to(store: &Store, id: &str, state: JobState, reason: Option<&str>) {
    let mut row = store.job(id.into()).await.unwrap().unwrap();
    row.runtime.state = state;
    row.runtime.reason = reason.map(String::from);
    assert!(store.update_job_runtime(id.into(), row.runtime, None, Vec::new()).await.unwrap());
}

async fn pending_events(store: &Store, webhook: i64, owner: &str) -> Vec<(String, String)> {
    let rows = store.deliveries_of(owner.into(), webhook).await.unwrap().unwrap();
    rows.into_iter().rev().map(|d| (d.job_id, d.event)).collect()
}

/// Notifications come at schema 16: a database of the previous release
/// (schema 15) keeps its jobs, and its jobs' transitions are matched from
/// the first rule on.
#[tokio::test]
async fn a_database_of_the_previous_release_gets_notifications() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobdeck.db");
    {
        let conn = database_of_schema(&path, 15);
        conn.execute_batch(
            "INSERT INTO jobs (id, name, created_by, visibility, created_at, state, metadata, spec, run)
                 VALUES ('train-aaaaa', 'train', 'alice', 'private', 1, 'Running', '{}', '{}', 1);",
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    let job = store.job("train-aaaaa".into()).await.unwrap().expect("the job survives");
    assert_eq!(job.runtime.state, JobState::Running);
    let hook = store.add_webhook(webhook("alice"), 20).await.unwrap().unwrap();
    store.add_notification(rule("alice", None, &[NotifyOn::Completed], hook), 100).await.unwrap().unwrap();
    move_to(&store, "train-aaaaa", JobState::Completed, None).await;
    assert_eq!(store.match_transitions(10, 5).await.unwrap(), 1);
    assert_eq!(pending_events(&store, hook, "alice").await, [("train-aaaaa".into(), "completed".into())]);
}

#[tokio::test]
async fn transitions_are_kept_only_while_a_rule_could_match_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("jobdeck.db")).unwrap();
    store.insert_job(job_row("a-aaaaa", "alice", "public", 1, "Queueing"), Vec::new()).await.unwrap();
    move_to(&store, "a-aaaaa", JobState::Running, None).await;
    assert!(!store.transitions_waiting().await.unwrap(), "no rule, nothing kept");

    let hook = store.add_webhook(webhook("bob"), 20).await.unwrap().unwrap();
    // Bob's rule for every job of his does not cover Alice's.
    store.add_notification(rule("bob", None, &[NotifyOn::Failed], hook), 100).await.unwrap().unwrap();
    move_to(&store, "a-aaaaa", JobState::Failed, Some("Error")).await;
    assert!(!store.transitions_waiting().await.unwrap());
    // A rule for her public job does; moving to the state it has is no
    // transition.
    store.add_notification(rule("bob", Some("a-aaaaa"), &[NotifyOn::Failed], hook), 100).await.unwrap().unwrap();
    move_to(&store, "a-aaaaa", JobState::Failed, Some("Error")).await;
    assert!(!store.transitions_waiting().await.unwrap());
    move_to(&store, "a-aaaaa", JobState::Queueing, None).await;
    move_to(&store, "a-aaaaa", JobState::Failed, Some("Preempted")).await;
    assert_eq!(store.match_transitions(10, 5).await.unwrap(), 1, "Queueing is kept by no rule's state");
    assert_eq!(pending_events(&store, hook, "bob").await, [("a-aaaaa".into(), "failed".into())]);
    assert!(!store.transitions_waiting().await.unwrap(), "matched transitions are dropped");
}

#[tokio::test]
async fn a_rule_sends_only_what_it_names_to_an_enabled_endpoint_its_owner_sees() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("jobdeck.db")).unwrap();
    for (id, owner, visibility) in [("p-aaaaa", "alice", "private"), ("q-aaaaa", "alice", "public")] {
        store.insert_job(job_row(id, owner, visibility, 1, "Running"), Vec::new()).await.unwrap();
    }
    let alices = store.add_webhook(webhook("alice"), 20).await.unwrap().unwrap();
    let bobs = store.add_webhook(webhook("bob"), 20).await.unwrap().unwrap();
    store.add_notification(rule("alice", None, &[NotifyOn::Failed, NotifyOn::Stopped], alices), 100).await.unwrap();
    // Two rules to one endpoint send one delivery.
    store.add_notification(rule("alice", Some("q-aaaaa"), &[NotifyOn::Stopped], alices), 100).await.unwrap();
    store.add_notification(rule("bob", Some("q-aaaaa"), &[NotifyOn::Stopped], bobs), 100).await.unwrap();
    // Stored when the job was public; it is private now.
    store.add_notification(rule("bob", Some("p-aaaaa"), &[NotifyOn::Completed], bobs), 100).await.unwrap();

    move_to(&store, "q-aaaaa", JobState::Stopped, None).await;
    move_to(&store, "p-aaaaa", JobState::Completed, None).await;
    store.match_transitions(10, 5).await.unwrap();
    assert_eq!(pending_events(&store, alices, "alice").await, [("q-aaaaa".into(), "stopped".into())]);
    assert_eq!(
        pending_events(&store, bobs, "bob").await,
        [("q-aaaaa".into(), "stopped".into())],
        "not the private one"
    );
    assert_eq!(store.deliveries_of("bob".into(), alices).await.unwrap(), None, "not another's history");

    // A disabled endpoint skips what it had and gets nothing new.
    store.disable_webhook(alices, "dead".into()).await.unwrap();
    let skipped = store.deliveries_of("alice".into(), alices).await.unwrap().unwrap();
    assert_eq!(skipped[0].state, DeliveryState::Skipped);
    move_to(&store, "q-aaaaa", JobState::Failed, Some("Error")).await;
    store.match_transitions(10, 6).await.unwrap();
    assert_eq!(store.deliveries_of("alice".into(), alices).await.unwrap().unwrap().len(), 1);

    // The target opens the sealed address and secret; a store without
    // keys writes them as they are.
    let target = store.webhook_target(alices).await.unwrap().unwrap();
    assert_eq!(
        (target.url.as_str(), target.secret.as_str(), target.enabled),
        ("http://127.0.0.1:9/alice", "s3cret", false)
    );
    assert!(store.enable_webhook("alice".into(), alices).await.unwrap());
    assert!(!store.enable_webhook("bob".into(), alices).await.unwrap(), "only its owner's");
}

#[tokio::test]
async fn an_endpoints_history_keeps_its_newest_deliveries() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("jobdeck.db")).unwrap();
    store.insert_job(job_row("r-aaaaa", "alice", "private", 1, "Queueing"), Vec::new()).await.unwrap();
    let hook = store.add_webhook(webhook("alice"), 20).await.unwrap().unwrap();
    store.add_notification(rule("alice", None, &[NotifyOn::Started], hook), 100).await.unwrap();
    let kept = jobdeck_api::WEBHOOK_DELIVERIES_KEPT;
    for round in 0..kept + 5 {
        move_to(&store, "r-aaaaa", JobState::Running, None).await;
        move_to(&store, "r-aaaaa", JobState::Queueing, None).await;
        store.match_transitions(10, round as i64).await.unwrap();
        // Each one delivered, as the notifier would record it.
        for due in store.take_due_deliveries(i64::MAX, 10, i64::MAX).await.unwrap() {
            let attempt = Attempted {
                id: due.id,
                state: DeliveryState::Delivered,
                sent: true,
                status: Some(200),
                error: None,
                next_at: None,
                at: 1,
            };
            store.record_attempt(attempt).await.unwrap();
        }
    }
    let history = store.deliveries_of("alice".into(), hook).await.unwrap().unwrap();
    assert_eq!(history.len(), kept);
    assert!(history.windows(2).all(|w| w[0].id > w[1].id), "newest first");
    assert_eq!(history[0].attempts, 1);
}
