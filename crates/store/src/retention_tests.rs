//! Log retention on a real SQLite file: the previous release's jobs get
//! their own archive time for their logs and a grace mark; the query for
//! due jobs follows the minimum and maximum; a removal is recorded once,
//! with its metrics, measured bytes, kept analysis and event.

use jobdeck_api::{EventType, FailureAnalysis, JobState, LogRemovalPolicy};

use super::tests::{database_of_schema, job_row};
use super::*;

const DAY: i64 = 86_400_000;

/// Migration 18 and `update_job_runtime` write the same time.
#[tokio::test]
async fn the_previous_releases_finished_jobs_get_their_archive_time_and_the_store_a_grace_mark() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jobdeck.db");
    {
        let conn = database_of_schema(&path, 17);
        conn.execute_batch(
            "INSERT INTO jobs (id, name, created_by, visibility, created_at, state, metadata, spec, completed_at)
                 VALUES ('lep-aaaaa', 'lep', 'alice', 'private', 1, 'Completed', '{}',
                     '{\"ttl_seconds_after_finished\":600}', 1000),
                 ('plain-aaaaa', 'plain', 'alice', 'private', 1, 'Failed', '{}', '{}', 2000),
                 ('stopped-aaaaa', 'stopped', 'bob', 'public', 1, 'Stopped', '{}',
                     '{\"ttl_seconds_after_finished\":86400}', 3000),
                 ('running-aaaaa', 'running', 'bob', 'public', 1, 'Running', '{}', '{}', NULL);",
        )
        .unwrap();
    }
    let before = now_millis();
    let store = Store::open(&path).unwrap();
    let expire = |id: &str| {
        let store = store.clone();
        let id = id.to_string();
        async move { store.job(id).await.unwrap().unwrap().logs }
    };
    assert_eq!(expire("lep-aaaaa").await.expire_at, Some(1000 + 600_000));
    assert_eq!(expire("plain-aaaaa").await.expire_at, Some(2000 + 3 * DAY));
    assert_eq!(expire("stopped-aaaaa").await.expire_at, Some(3000 + DAY));
    assert_eq!(expire("running-aaaaa").await, KeptLogs::default());
    assert_eq!(expire("lep-aaaaa").await.due_at, None, "timed at the server's start, by its rule");
    assert_eq!(store.use_log_retention(0, None).await.unwrap(), 3);
    assert_eq!(expire("lep-aaaaa").await.due_at, Some(1000 + 600_000));
    let upgraded = store.logs_removal_upgraded_at().await.unwrap().expect("a store with jobs is marked");
    assert!((before / 1000 * 1000..=now_millis()).contains(&upgraded), "{before} {upgraded}");

    // The scheduler's finish writes the same, from the job's spec.
    let mut row = store.job("running-aaaaa".into()).await.unwrap().unwrap();
    row.runtime.state = JobState::Completed;
    row.runtime.completed_at = Some(5000);
    store.update_job_runtime(row.id.clone(), row.runtime.clone(), None, vec![]).await.unwrap();
    assert_eq!(expire("running-aaaaa").await.expire_at, Some(5000 + 3 * DAY));
    assert_eq!(expire("running-aaaaa").await.due_at, Some(5000 + 3 * DAY));
    store.use_log_retention(7 * DAY, Some(90 * DAY)).await.unwrap();
    assert_eq!(expire("running-aaaaa").await.due_at, Some(5000 + 7 * DAY), "the minimum holds it");

    let fresh = Store::open(&dir.path().join("fresh.db")).unwrap();
    assert_eq!(fresh.logs_removal_upgraded_at().await.unwrap(), None, "a new store has nothing to hold back");
}

async fn finished(store: &Store, id: &str, ttl_seconds: Option<i64>, completed_at: i64) {
    let mut row = job_row(id, "alice", "private", 1, "Queueing");
    row.spec.ttl_seconds_after_finished = ttl_seconds;
    store.insert_job(row.clone(), vec![]).await.unwrap();
    row.runtime.state = JobState::Failed;
    row.runtime.completed_at = Some(completed_at);
    store.update_job_runtime(id.into(), row.runtime, None, vec![]).await.unwrap();
}

fn event(id: &str) -> EventRow {
    EventRow {
        job_id: id.into(),
        kind: EventType::Normal,
        reason: "LogsRemoved".into(),
        message: "its logs went".into(),
        regarding_kind: "Job".into(),
        regarding_name: id.into(),
        time: 9,
    }
}

#[tokio::test]
async fn due_jobs_are_past_their_archive_time_and_the_minimum_or_past_the_maximum_and_go_once() {
    let (_dir, store) = super::tests::temp_store();
    assert_eq!(store.use_log_retention(7 * DAY, Some(90 * DAY)).await.unwrap(), 0, "no job to time yet");
    let now = 1_000 * DAY;
    finished(&store, "lep-aaaaa", Some(600), now - 8 * DAY).await; // due: past 7 days and its 10 minutes
    finished(&store, "recent-aaaaa", Some(600), now - 6 * DAY).await; // the minimum holds it
    finished(&store, "month-aaaaa", Some(30 * 86_400), now - 8 * DAY).await; // its own archive time holds it
    finished(&store, "decade-aaaaa", Some(3650 * 86_400), now - 92 * DAY).await; // due: past the maximum
    store.insert_job(job_row("queued-aaaaa", "alice", "private", 1, "Queueing"), vec![]).await.unwrap();
    let due = || {
        let store = store.clone();
        async move {
            let rows = store.jobs_with_logs_due(now, 100).await.unwrap();
            rows.into_iter().map(|r| r.id).collect::<Vec<_>>()
        }
    };
    let due_at = |id: &str| {
        let store = store.clone();
        let id = id.to_string();
        async move { store.job(id).await.unwrap().unwrap().logs.due_at }
    };
    assert_eq!(due().await, ["decade-aaaaa", "lep-aaaaa"], "the longest due first");
    assert_eq!(due_at("lep-aaaaa").await, Some(now - DAY), "the minimum");
    assert_eq!(due_at("month-aaaaa").await, Some(now + 22 * DAY), "its own archive time");
    assert_eq!(due_at("decade-aaaaa").await, Some(now - 2 * DAY), "the maximum");
    assert_eq!(due_at("queued-aaaaa").await, None);
    assert_eq!(store.next_logs_due().await.unwrap(), Some(now - 2 * DAY));
    assert_eq!(store.jobs_with_logs_due(now, 1).await.unwrap().len(), 1, "the limit");

    // A changed rule times every finished job again: no maximum lets the
    // decade's own time hold.
    assert_eq!(store.use_log_retention(7 * DAY, None).await.unwrap(), 4);
    assert_eq!(store.use_log_retention(7 * DAY, None).await.unwrap(), 0, "the same rule: nothing to do");
    assert_eq!(due().await, ["lep-aaaaa"]);
    assert_eq!(due_at("decade-aaaaa").await, Some(now - 92 * DAY + 3650 * DAY));
    store.use_log_retention(7 * DAY, Some(90 * DAY)).await.unwrap();

    // The removal: metrics and measured bytes go, the analysis and the event
    // stay, the job is not due again.
    let sample = MetricSample {
        job_id: "lep-aaaaa".into(),
        completion_index: 0,
        attempt: 0,
        series: "memory".into(),
        t: 1,
        value: 5.0,
    };
    store.append_metrics(vec![sample]).await.unwrap();
    store.set_log_bytes_many(vec![("lep-aaaaa".into(), 4096), ("decade-aaaaa".into(), 10)], now).await.unwrap();
    let longest: Vec<String> =
        store.jobs_with_logs_longest_finished(10).await.unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(longest, ["decade-aaaaa", "lep-aaaaa"], "the budget's order; jobs with nothing on disk left out");
    assert_eq!(store.log_bytes_total().await.unwrap(), 4106);
    let analysis = FailureAnalysis { err_class: "ERR_PROGRAM".into(), ..FailureAnalysis::default() };
    let removed = LogsRemoved {
        job_id: "lep-aaaaa".into(),
        at: now,
        policy: LogRemovalPolicy::MinimumRetention,
        analysis: Some(analysis.clone()),
        event: event("lep-aaaaa"),
    };
    assert_eq!(store.record_logs_removed(removed.clone()).await.unwrap(), Some(4096), "the bytes it freed");
    assert_eq!(store.record_logs_removed(removed).await.unwrap(), None, "once");
    store.set_log_bytes_many(vec![("lep-aaaaa".into(), 8192)], now).await.unwrap();
    assert_eq!(store.job("lep-aaaaa".into()).await.unwrap().unwrap().logs.removed_at, Some(now));
    assert_eq!(store.log_bytes_total().await.unwrap(), 10, "a measure taken before the removal is stale");
    let row = store.job("lep-aaaaa".into()).await.unwrap().unwrap();
    assert_eq!((row.logs.removed_at, row.logs.removed_by), (Some(now), Some(LogRemovalPolicy::MinimumRetention)));
    assert!(store.job_metrics("lep-aaaaa".into()).await.unwrap().is_empty());
    assert_eq!(store.log_bytes_by_user().await.unwrap().get("alice"), Some(&10));
    assert_eq!(store.kept_failure_analysis("lep-aaaaa".into()).await.unwrap(), Some(analysis));
    let events = store.events_of("lep-aaaaa".into()).await.unwrap();
    assert_eq!(events.iter().filter(|e| e.reason == "LogsRemoved").count(), 1);
    assert_eq!(due().await, ["decade-aaaaa"]);

    // A job started again meanwhile has no finish: nothing is recorded, and
    // a finish after that has logs of its own again.
    let mut again = store.job("decade-aaaaa".into()).await.unwrap().unwrap();
    again.runtime.state = JobState::Queueing;
    again.runtime.completed_at = None;
    store.update_job_runtime(again.id.clone(), again.runtime.clone(), None, vec![]).await.unwrap();
    let removed = LogsRemoved {
        job_id: "decade-aaaaa".into(),
        at: now,
        policy: LogRemovalPolicy::MaximumRetention,
        analysis: None,
        event: event("decade-aaaaa"),
    };
    assert_eq!(store.record_logs_removed(removed).await.unwrap(), None);
    assert_eq!(store.job("decade-aaaaa".into()).await.unwrap().unwrap().logs, KeptLogs::default());
}
