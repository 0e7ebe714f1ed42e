//! Finished jobs' logs go when the retention says (docs/api.md, "Log
//! retention"): real jobs under the real supervisor, the scheduler handed a
//! time of the test's own (no test waits days). `lep` asks for a 600 s
//! archive time on every job: the minimum retention keeps the logs a week;
//! a job's longer archive time keeps them longer. The record, events and
//! failure analysis stay; the logs answer 410 saying when and why; the log
//! and run directories are gone. A store upgraded from a release that kept
//! logs forever removes nothing in its grace period. Near the disk budget,
//! the logs of the jobs that finished longest ago go first, and a running
//! job's never. A job past its log cap keeps the first part of its log, a
//! line saying so and an event, while another user's job keeps writing.

use crate::common;

use axum::http::StatusCode;
use common::{sh_job, small_cluster, TestApp};
use jobdeck_server::now_millis;
use serde_json::{json, Value};

const DAY_MS: i64 = 86_400_000;

/// When the job finished (Unix ms), from the store.
async fn finished_at(app: &TestApp, id: &str) -> i64 {
    app.store.job(id.into()).await.unwrap().unwrap().runtime.completed_at.expect("a finished job")
}

fn retention(job: &Value) -> &Value {
    &job["status"]["log_retention"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_jobs_logs_go_at_the_later_of_its_archive_time_and_the_minimum_and_its_analysis_stays() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let mut lep = sh_job(
        "lep-style",
        "echo 'epoch 1 loss 0.5'; echo 'Traceback (most recent call last):'; echo 'ValueError: bad lr'; exit 1",
    );
    lep["spec"]["ttl_seconds_after_finished"] = json!(600);
    lep["spec"]["backoff_limit"] = json!(0);
    lep["metadata"]["visibility"] = json!("private");
    let lep = app.create_job(&app.admin_token, &lep).await;
    let bob = app.token_for("bob").await;
    let mut month = sh_job("month", "echo done");
    month["spec"]["ttl_seconds_after_finished"] = json!(30 * 86_400);
    let month = app.create_job(&app.admin_token, &month).await;
    app.wait_state(&lep, "Failed").await;
    app.wait_state(&month, "Completed").await;
    let (lep_done, month_done) = (finished_at(&app, &lep).await, finished_at(&app, &month).await);
    let replica = format!("{lep}-0-0");
    let before = app.get(&format!("/api/v2/jobs/{lep}/failure-analysis")).await.json();
    assert_eq!(before["err_class"], "ERR_PROGRAM", "{before:#}");
    assert!(!before["log_streams"].as_array().unwrap().is_empty(), "an excerpt to keep: {before:#}");

    // Kept: the minimum retention holds the lep job's logs a week.
    let job = app.job(&lep).await;
    assert_eq!(
        retention(&job),
        &json!({"policy": "minimum_retention", "remove_at": (lep_done + 7 * DAY_MS).div_euclid(1000)})
    );
    assert_eq!(retention(&app.job(&month).await)["policy"], "archive_time");
    // The store's time (the SQL that finds due jobs) is the rule's.
    for id in [&lep, &month] {
        let due_at = app.store.job(id.clone()).await.unwrap().unwrap().logs.due_at.unwrap();
        assert_eq!(retention(&app.job(id).await)["remove_at"], json!(due_at.div_euclid(1000)), "{id}");
    }
    let log_dir = app.data_dir().join("logs").join(&lep);
    let run_dir = app.data_dir().join("runs").join(&lep);
    assert!(log_dir.is_dir() && run_dir.is_dir());
    assert_eq!(app.scheduler.remove_due_logs(lep_done + DAY_MS).await.unwrap(), 0, "a day later");
    assert_eq!(app.scheduler.remove_due_logs(lep_done + 7 * DAY_MS - 1).await.unwrap(), 0, "just before the week");
    assert!(app.log(&lep, &replica).await.contains("ValueError: bad lr"));

    // Gone after a week: the logs answer 410 saying when and why; the
    // record, the events and the analysis stay.
    let week = lep_done.max(month_done) + 7 * DAY_MS;
    assert_eq!(app.scheduler.remove_due_logs(week).await.unwrap(), 1, "the lep job alone");
    for uri in [
        format!("/api/v2/jobs/{lep}/replicas/{replica}/log?follow=false"),
        format!("/api/v2/jobs/{lep}/replicas/{replica}/log?from=1&to=2"),
        format!("/api/v2/logs?job={lep}"),
    ] {
        let res = app.get(&uri).await;
        assert_eq!(res.status, StatusCode::GONE, "{uri}: {}", res.text());
        let body = res.json();
        assert_eq!(body["code"], "logs_removed");
        let message = body["message"].as_str().unwrap();
        assert!(message.contains("the workspace's minimum log retention"), "{message}");
    }
    let job = app.job(&lep).await;
    assert_eq!(job["status"]["state"], "Failed", "the record stays");
    assert_eq!(retention(&job), &json!({"policy": "minimum_retention", "removed_at": week.div_euclid(1000)}));
    let events = app.events(&lep).await;
    let removed = events.iter().find(|e| e["reason"] == "LogsRemoved").expect("an event says so");
    let message = removed["message"].as_str().unwrap();
    assert!(message.contains("removed 7 days after it finished, by the workspace's minimum log retention (its own archive time was 10 minutes)"), "{message}");
    let after = app.get(&format!("/api/v2/jobs/{lep}/failure-analysis")).await.json();
    assert_eq!(after, before, "the analysis as it was with its logs");
    // Another user learns nothing of a private job whose logs went: not
    // that they went, nor the analysis kept (404 as for any hidden job).
    for uri in [
        format!("/api/v2/jobs/{lep}/failure-analysis"),
        format!("/api/v2/jobs/{lep}/replicas/{replica}/log?follow=false"),
        format!("/api/v2/logs?job={lep}"),
        format!("/api/v2/jobs/{lep}"),
    ] {
        let res = app.call(axum::http::Method::GET, &uri, &bob, None).await;
        assert_eq!(res.status, StatusCode::NOT_FOUND, "{uri}: {}", res.text());
    }
    assert!(!log_dir.exists(), "the log directory is gone");
    assert!(!run_dir.exists(), "the run directory is gone");
    assert!(app.data_dir().join("logs").join(&month).is_dir(), "the month's job keeps its logs");
    assert_eq!(app.scheduler.remove_due_logs(week).await.unwrap(), 0, "once");

    // The month's job goes at its own archive time.
    assert_eq!(app.scheduler.remove_due_logs(month_done + 30 * DAY_MS).await.unwrap(), 1);
    let job = app.job(&month).await;
    assert_eq!(retention(&job)["policy"], "archive_time");
    let res = app.get(&format!("/api/v2/jobs/{month}/replicas/{month}-0-0/log?follow=false")).await;
    assert_eq!(res.status, StatusCode::GONE);
    assert!(res.json()["message"].as_str().unwrap().contains("by its archive time"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_removed_in_the_grace_period_after_an_upgrade_and_admins_are_told() {
    let now = now_millis();
    let mut old = common::finished_row("old-aaaaa", now - 30 * DAY_MS);
    old.spec.ttl_seconds_after_finished = Some(600);
    // The store as the upgrade leaves one that held jobs: marked now.
    let mark = format!("INSERT INTO store_settings (name, value) VALUES ('logs_removal_upgrade', {now})");
    let app = TestApp::with_stored_jobs_changed_by(|_| {}, vec![old], &mark).await;
    let grace_end = now + 7 * DAY_MS;

    let workspace = app.get("/api/v2/workspace").await.json();
    assert_eq!(
        workspace["log_retention"],
        json!({
            "minimum_seconds": 7 * 86_400,
            "maximum_seconds": 90 * 86_400,
            "paused_until": grace_end.div_euclid(1000),
            "used_bytes": 0,
            "minimum_source": "config"
        })
    );
    let job = app.job("old-aaaaa").await;
    assert_eq!(retention(&job), &json!({"policy": "upgrade_grace", "remove_at": grace_end.div_euclid(1000)}));
    assert_eq!(app.scheduler.remove_due_logs(grace_end - 1).await.unwrap(), 0, "within the grace period");
    assert_eq!(app.scheduler.remove_due_logs(grace_end).await.unwrap(), 1, "once it ends");
    assert_eq!(retention(&app.job("old-aaaaa").await)["policy"], "upgrade_grace");
}

/// An admin lowers the minimum in the console: a `lep` job's logs, kept a
/// week by the config's minimum, now go a day after it finished; the rule
/// survives a restart, and withdrawing it brings the config's back. Only
/// admins may; a minimum past the maximum or below 0 is refused naming the
/// field, and nothing changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_lowers_the_minimum_in_the_console_and_a_lep_jobs_logs_go_sooner() {
    use axum::http::Method;
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let mut lep = sh_job("lep-style", "echo done");
    lep["spec"]["ttl_seconds_after_finished"] = json!(600);
    let lep = app.create_job(&app.admin_token, &lep).await;
    app.wait_state(&lep, "Completed").await;
    let done = finished_at(&app, &lep).await;
    let week = json!({"policy": "minimum_retention", "remove_at": (done + 7 * DAY_MS).div_euclid(1000)});
    assert_eq!(retention(&app.job(&lep).await), &week);

    let uri = "/api/v2/workspace/log-retention";
    let member = app.token_for("bob").await;
    let refused = app.call(Method::PUT, uri, &member, Some(&json!({"minimum_seconds": 0}))).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text());
    for bad in [json!({"minimum_seconds": -1}), json!({"minimum_seconds": 90 * 86_400 + 1})] {
        let res = app.call(Method::PUT, uri, &app.admin_token, Some(&bad)).await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {}", res.text());
        assert!(res.text().contains("minimum_seconds"), "{}", res.text());
    }
    assert_eq!(retention(&app.job(&lep).await), &week, "nothing changed");

    let set = app.call(Method::PUT, uri, &app.admin_token, Some(&json!({"minimum_seconds": 86_400}))).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.text());
    let rule = set.json();
    assert_eq!((&rule["minimum_seconds"], &rule["minimum_source"]), (&json!(86_400), &json!("console")));
    assert_eq!(app.get("/api/v2/workspace").await.json()["log_retention"], rule);
    let day = json!({"policy": "minimum_retention", "remove_at": (done + DAY_MS).div_euclid(1000)});
    assert_eq!(retention(&app.job(&lep).await), &day);
    let audit = app.get("/api/v2/audit?action=log_retention.").await.json();
    assert_eq!(audit["items"][0]["action"], "log_retention.set", "{audit:#}");
    assert_eq!(app.scheduler.remove_due_logs(done + DAY_MS - 1).await.unwrap(), 0);
    assert_eq!(app.scheduler.remove_due_logs(done + DAY_MS).await.unwrap(), 1, "a day after, not a week");
    assert_eq!(retention(&app.job(&lep).await)["policy"], "minimum_retention");

    let withdrawn = app.call(Method::DELETE, uri, &app.admin_token, None).await;
    assert_eq!(withdrawn.status, StatusCode::OK, "{}", withdrawn.text());
    let rule = withdrawn.json();
    assert_eq!((&rule["minimum_seconds"], &rule["minimum_source"]), (&json!(7 * 86_400), &json!("config")));
    let again = app.call(Method::DELETE, uri, &app.admin_token, None).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND, "{}", again.text());
}

/// The console's minimum is kept in the store: a server started on it
/// times jobs by it, and says where it comes from.
#[tokio::test]
async fn the_consoles_minimum_holds_after_a_restart() {
    let now = now_millis();
    let mut old = common::finished_row("old-aaaaa", now - DAY_MS / 2);
    old.spec.ttl_seconds_after_finished = Some(600);
    let kept =
        format!("INSERT INTO store_settings (name, value) VALUES ('logs_console_minimum_retention_ms', {DAY_MS})");
    let app = TestApp::with_stored_jobs_changed_by(|_| {}, vec![old], &kept).await;
    let rule = &app.get("/api/v2/workspace").await.json()["log_retention"];
    assert_eq!((&rule["minimum_seconds"], &rule["minimum_source"]), (&json!(86_400), &json!("console")));
    let finished = now - DAY_MS / 2;
    let job = app.job("old-aaaaa").await;
    assert_eq!(
        retention(&job),
        &json!({"policy": "minimum_retention", "remove_at": (finished + DAY_MS).div_euclid(1000)})
    );
}

/// A script that prints `lines` lines of 100 characters, numbered.
fn printing(lines: usize) -> String {
    format!("i=1; while [ $i -le {lines} ]; do printf 'line %05d %088d\\n' $i 0; i=$((i+1)); done")
}

/// A script that prints `lines` numbered lines of 88 random characters,
/// which compress to about 60 % (a log of numbered zeros would take next to
/// nothing on disk).
fn printing_random(lines: usize) -> String {
    format!(
        "awk 'BEGIN {{ srand(); c = \"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/\"; \
         for (i = 1; i <= {lines}; i++) {{ s = \"\"; for (j = 0; j < 88; j++) s = s substr(c, int(rand() * 64) + 1, 1); \
         printf \"line %05d %s\\n\", i, s }} }}'"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn near_the_disk_budget_the_longest_finished_jobs_logs_go_first_and_a_running_jobs_never() {
    // 1 MiB of logs: each job below writes 4,000 lines of random text,
    // 464 KB stored with their times; a finished job's compressed to about
    // 283 KB, the running one's not yet (its block is being written). Three
    // finished and a running one take ~1.3 MB, past 90 % of the budget; two
    // must go to bring the logs under 80 %.
    let app = TestApp::with_config(|config| {
        small_cluster(4.0)(config);
        config.logs.disk_budget = Some(1 << 20);
    })
    .await;
    let mut finished = Vec::new();
    for name in ["first", "second", "third"] {
        let id = app.create_job(&app.admin_token, &sh_job(name, &printing_random(4_000))).await;
        app.wait_state(&id, "Completed").await;
        finished.push(id);
    }
    let (wait, release) = app.gate("running");
    let running =
        app.create_job(&app.admin_token, &sh_job("running", &format!("{}; {wait}", printing_random(4_000)))).await;
    let replica = format!("{running}-0-0");
    app.wait_until("the running job's 4,000 lines", || async {
        let res = app.get(&format!("/api/v2/jobs/{running}/replicas/{replica}/log?from=4000&to=4000")).await;
        res.status == StatusCode::OK
            && res.json()["lines"][0]["text"].as_str().is_some_and(|t| t.starts_with("line 04000"))
    })
    .await;
    // Every finished job is measured when its run ends.
    app.wait_until("the finished jobs' logs measured", || async {
        app.store.log_bytes_total().await.unwrap() > 800_000
    })
    .await;
    let workspace = app.get("/api/v2/workspace").await.json();
    let warning = workspace["log_retention"]["warning"].as_str().expect("admins are warned past 80 %");
    assert!(warning.contains("of their 1 MB disk budget"), "{warning}");

    assert_eq!(app.scheduler.hold_logs_to_budget().await.unwrap(), 2, "the two that finished first");
    for (id, gone) in [(&finished[0], true), (&finished[1], true), (&finished[2], false)] {
        let res = app.get(&format!("/api/v2/jobs/{id}/replicas/{id}-0-0/log?follow=false")).await;
        assert_eq!(res.status == StatusCode::GONE, gone, "{id}: {}", res.status);
        if gone {
            let job = app.job(id).await;
            assert_eq!(retention(&job)["policy"], "disk_budget");
            let events = app.events(id).await;
            let event = events.iter().find(|e| e["reason"] == "LogsRemoved").unwrap();
            let message = event["message"].as_str().unwrap();
            assert!(
                message.contains(
                    "before its retention of 7 days ended, by the workspace's disk budget for logs: logs took"
                ),
                "{message}"
            );
        }
    }
    assert!(app.log(&running, &replica).await.contains("line 04000"), "a running job's logs are never cut");
    let used = app.get("/api/v2/workspace").await.json()["log_retention"]["used_bytes"].as_i64().unwrap();
    assert!(used <= (1 << 20) * 8 / 10, "{used}");
    assert_eq!(app.scheduler.hold_logs_to_budget().await.unwrap(), 0, "under the budget now");
    std::fs::write(release, "").unwrap();
    app.wait_state(&running, "Completed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_past_its_log_cap_keeps_the_first_part_says_so_and_another_users_job_keeps_writing() {
    let app = TestApp::with_config(|config| {
        small_cluster(4.0)(config);
        config.logs.job_log_cap = Some(1 << 20);
    })
    .await;
    let bob = app.token_for("bob").await;
    // 12,000 lines of 100 characters: ~1.4 MB with their times, past the
    // 1 MiB cap.
    let (wait, release) = app.gate("chatty");
    let written = app.data_dir().join("chatty-written");
    let script = format!("{}; touch '{}'; {wait}", printing(12_000), written.display());
    let chatty = app.create_job(&app.admin_token, &sh_job("chatty", &script)).await;
    let quiet = app.create_job(&bob, &sh_job("quiet", &printing(3_000))).await;
    app.wait_state_as(&bob, &quiet, "Completed").await;
    let replica = format!("{chatty}-0-0");
    let marker = jobdeck_store::logs::cap_marker(1 << 20);
    app.wait_until("the chatty job's log to end with the cap's line", || async {
        if !written.exists() {
            return false;
        }
        let res = app.get(&format!("/api/v2/jobs/{chatty}/replicas/{replica}/log?follow=false")).await;
        res.status == StatusCode::OK && res.text().trim_end().ends_with(&marker)
    })
    .await;
    let log = app.log(&chatty, &replica).await;
    let kept = log.lines().filter(|l| l.starts_with("line ")).count();
    assert!((8_000..12_000).contains(&kept), "the first part kept: {kept} lines");
    assert!(log.contains("line 00001 ") && !log.contains("line 12000 "), "the first lines, not the last");
    let mut stored = jobdeck_store::logs::LogStore::new(app.data_dir()).open(&chatty, 0, 0).unwrap().unwrap();
    assert!(stored.byte_len().unwrap() < (1 << 20) + 4096, "the cap holds the stored lines");

    app.scheduler.measure_running_logs().await.unwrap();
    app.scheduler.measure_running_logs().await.unwrap();
    let events = app.events(&chatty).await;
    let told: Vec<&Value> = events.iter().filter(|e| e["reason"] == "LogCapReached").collect();
    assert_eq!(told.len(), 1, "said once: {events:#?}");
    assert_eq!(told[0]["type"], "Warning");
    assert!(told[0]["message"].as_str().unwrap().contains("reached the job's log cap of 1 MB"));

    // Bob's job, under the cap, kept every line.
    let res = app
        .call(
            axum::http::Method::GET,
            &format!("/api/v2/jobs/{quiet}/replicas/{quiet}-0-0/log?follow=false"),
            &bob,
            None,
        )
        .await;
    assert!(res.text().contains("line 03000 "), "another user's writes are not cut");
    std::fs::write(release, "").unwrap();
    app.wait_state(&chatty, "Completed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_running_jobs_alone_fill_the_budget_the_largest_is_cut_and_another_users_keeps_writing() {
    // 1 MiB of logs and no finished job to remove: the admin's job writes
    // 14,000 lines of random text (1.6 MB stored: a sealed block of about
    // 640 KB on disk and a tail of about 590 KB), past 90 % of the budget;
    // Bob's writes a line before and after.
    let app = TestApp::with_config(|config| {
        small_cluster(4.0)(config);
        config.logs.disk_budget = Some(1 << 20);
    })
    .await;
    let bob = app.token_for("bob").await;
    let (first_wait, first_go) = app.gate("first");
    let (then_wait, then_go) = app.gate("then");
    let script = format!(
        "{}; {first_wait}; echo 'read with the cut'; {then_wait}; echo 'after the cut'",
        printing_random(14_000)
    );
    let chatty = app.create_job(&app.admin_token, &sh_job("chatty", &script)).await;
    let quiet =
        app.create_job(&bob, &sh_job("quiet", &format!("echo 'bob before'; {then_wait}; echo 'bob after'"))).await;
    let (chatty_replica, quiet_replica) = (format!("{chatty}-0-0"), format!("{quiet}-0-0"));
    app.wait_until("the chatty job's 14,000 lines and Bob's first", || async {
        let res = app.get(&format!("/api/v2/jobs/{chatty}/replicas/{chatty_replica}/log?from=14000&to=14000")).await;
        res.status == StatusCode::OK
            && res.json()["lines"][0]["text"].as_str().is_some_and(|t| t.starts_with("line 14000"))
            && app.log(&quiet, &quiet_replica).await.contains("bob before")
    })
    .await;

    assert_eq!(app.scheduler.hold_logs_to_budget().await.unwrap(), 0, "no finished job to remove");
    let told = app.events(&chatty).await;
    let cut = told.iter().find(|e| e["reason"] == "LogsCut").unwrap_or_else(|| panic!("{told:#?}"));
    assert_eq!(cut["type"], "Warning");
    let message = cut["message"].as_str().unwrap();
    assert!(message.starts_with("its logs are cut: the logs of running jobs alone take"), "{message}");
    assert!(message.contains("of the workspace's 1 MB disk budget for logs"), "{message}");
    assert!(!app.events(&quiet).await.iter().any(|e| e["reason"] == "LogsCut"), "only the largest is cut");
    // The next look, still over the budget, cuts no more: the largest is
    // cut already, and Bob's, smaller, keeps writing.
    app.scheduler.hold_logs_to_budget().await.unwrap();
    assert_eq!(app.events(&chatty).await.iter().filter(|e| e["reason"] == "LogsCut").count(), 1);
    assert!(!app.events(&quiet).await.iter().any(|e| e["reason"] == "LogsCut"));

    std::fs::write(first_go, "").unwrap();
    app.wait_until("the cut line in the chatty job's log", || async {
        app.log(&chatty, &chatty_replica).await.contains("jobdeck: this log is cut here")
    })
    .await;
    std::fs::write(then_go, "").unwrap();
    app.wait_state(&chatty, "Completed").await;
    app.wait_state_as(&bob, &quiet, "Completed").await;

    let log = app.log(&chatty, &chatty_replica).await;
    let last = log.lines().last().unwrap();
    assert!(last.starts_with("jobdeck: this log is cut here: the logs of running jobs alone take"), "{last}");
    assert!(log.contains("line 14000") && !log.contains("after the cut"), "what was written stays, nothing after");
    let quiet_log = app
        .call(
            axum::http::Method::GET,
            &format!("/api/v2/jobs/{quiet}/replicas/{quiet_replica}/log?follow=false"),
            &bob,
            None,
        )
        .await
        .text();
    assert!(quiet_log.contains("bob before") && quiet_log.contains("bob after"), "{quiet_log}");
    assert!(!quiet_log.contains("this log is cut"), "{quiet_log}");
    assert!(
        !jobdeck_store::logs::LogStore::new(app.data_dir()).is_cut(&chatty),
        "the cut ends with the run: a run started again keeps its logs"
    );
}
