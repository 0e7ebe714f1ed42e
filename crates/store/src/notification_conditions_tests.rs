//! Conditions of running jobs on a real SQLite file: an upgrade from the
//! previous release's notification tables, a condition kept once per rule,
//! job and run, and delivered to the rule that watched for it alone.

use jobdeck_api::{DeliveryState, JobState, NotifyOn};

use super::notifications_tests::{move_to, rule, webhook};
use super::tests::{database_of_schema, job_row};
use super::*;

fn met(rule_id: i64, job: &str, run: i64, event: NotifyOn) -> ConditionMet {
    ConditionMet {
        rule_id,
        job_id: job.into(),
        run,
        event,
        message: "line 3 of replica j-0-0 matches the rule's pattern: loss: nan".into(),
        replica: Some(format!("{job}-0-0")),
        line: Some(3),
        time: 10,
    }
}

/// Conditions come at schema 17: the notification tables of the previous
/// release (schema 16) keep their endpoint, rule, delivery history and a
/// transition still waiting, which is matched after the upgrade.
#[tokio::test]
async fn the_previous_releases_notifications_survive_the_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobdeck.db");
    {
        let conn = database_of_schema(&path, 16);
        conn.execute_batch(
            "INSERT INTO jobs (id, name, created_by, visibility, created_at, state, metadata, spec, run)
                 VALUES ('train-aaaaa', 'train', 'alice', 'private', 1, 'Failed', '{}', '{}', 0);
             INSERT INTO webhooks (id, owner, name, kind, url, destination, secret, created_at)
                 VALUES (4, 'alice', 'ops', 'json', 'http://127.0.0.1:9/x', 'http://127.0.0.1:9', 's', 1);
             INSERT INTO notifications (id, owner, job_id, events, webhook_id, created_at)
                 VALUES (7, 'alice', NULL, 'failed,completed', 4, 1);
             INSERT INTO webhook_deliveries (webhook_id, event, job_id, job_name, job_owner, from_state, to_state,
                 time, state, attempts, created_at, delivered_at)
                 VALUES (4, 'completed', 'train-aaaaa', 'train', 'alice', 'Running', 'Completed', 2, 'delivered',
                 1, 2, 3);
             INSERT INTO job_transitions (job_id, owner, name, from_state, to_state, reason, message, time)
                 VALUES ('train-aaaaa', 'alice', 'train', 'Running', 'Failed', 'Error', 'exit 1', 5);",
        )
        .unwrap();
    }
    let store = Store::open(&path).unwrap();
    let rules = store.notifications_of("alice".into()).await.unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0].on, [NotifyOn::Failed, NotifyOn::Completed]);
    assert_eq!((rules[0].gpu_idle_minutes, rules[0].memory_percent, &rules[0].log_pattern), (None, None, &None));
    assert!(store.condition_rules().await.unwrap().is_empty(), "no condition in the old rule");
    assert_eq!(store.match_transitions(10, 6).await.unwrap(), 1, "the waiting transition is matched");
    let history = store.deliveries_of("alice".into(), 4).await.unwrap().unwrap();
    let kept: Vec<(&str, DeliveryState, Option<&str>)> =
        history.iter().map(|d| (d.event.as_str(), d.state, d.replica.as_deref())).collect();
    assert_eq!(kept, [("failed", DeliveryState::Pending, None), ("completed", DeliveryState::Delivered, None)]);
}

#[tokio::test]
async fn a_condition_is_delivered_once_a_run_to_the_rule_that_watched_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("jobdeck.db")).unwrap();
    store.insert_job(job_row("j-aaaaa", "alice", "public", 1, "Running"), Vec::new()).await.unwrap();
    let hook = store.add_webhook(webhook("alice"), 20).await.unwrap().unwrap();
    let other_hook = store.add_webhook(webhook("alice"), 20).await.unwrap().unwrap();
    let mut watching = rule("alice", Some("j-aaaaa"), &[NotifyOn::LogMatch, NotifyOn::Failed], hook);
    watching.log_pattern = Some("nan".into());
    let watching = store.add_notification(watching, 100).await.unwrap().unwrap();
    // Another rule naming the same condition with its own pattern: a match
    // of the first rule's pattern is not one of its own.
    let mut other = rule("alice", None, &[NotifyOn::LogMatch], other_hook);
    other.log_pattern = Some("Traceback".into());
    store.add_notification(other, 100).await.unwrap().unwrap();
    assert_eq!(store.condition_rules().await.unwrap().len(), 2);

    assert!(store.record_condition(met(watching, "j-aaaaa", 0, NotifyOn::LogMatch)).await.unwrap());
    assert!(!store.record_condition(met(watching, "j-aaaaa", 0, NotifyOn::LogMatch)).await.unwrap(), "once a run");
    store.match_transitions(10, 11).await.unwrap();
    let delivered = store.deliveries_of("alice".into(), hook).await.unwrap().unwrap();
    assert_eq!(delivered.len(), 1);
    let d = &delivered[0];
    assert_eq!((d.event.as_str(), d.replica.as_deref(), d.line), ("log_match", Some("j-aaaaa-0-0"), Some(3)));
    assert_eq!((d.from_state.as_str(), d.to_state.as_str()), ("Running", "Running"));
    assert!(d.message.as_deref().unwrap().contains("loss: nan"));
    assert!(store.deliveries_of("alice".into(), other_hook).await.unwrap().unwrap().is_empty(), "not its rule's");

    // The job's next run may meet it again; its state changes still go by
    // the rule's other event.
    assert!(store.record_condition(met(watching, "j-aaaaa", 1, NotifyOn::LogMatch)).await.unwrap());
    move_to(&store, "j-aaaaa", JobState::Failed, Some("Error")).await;
    store.match_transitions(10, 12).await.unwrap();
    let events: Vec<String> =
        store.deliveries_of("alice".into(), hook).await.unwrap().unwrap().into_iter().map(|d| d.event).collect();
    assert_eq!(events, ["failed", "log_match", "log_match"]);

    // A deleted rule hears of nothing more, and forgets what it heard.
    assert!(store.delete_notification("alice".into(), watching).await.unwrap());
    assert!(!store.record_condition(met(watching, "j-aaaaa", 2, NotifyOn::LogMatch)).await.unwrap());
    assert!(!store.transitions_waiting().await.unwrap());
}
