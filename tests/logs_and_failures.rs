//! The log viewer and the failure view end to end: real jobs on the local
//! executor, the real built console, Chromium.

use jobdeck_e2e::{screenshot_path, Browser, JobState, Server};
use serde_json::json;

/// Creates a job whose command is `script` (run by `/bin/sh -c`) and waits
/// until it reaches `state`; returns the job id.
fn run_script(server: &Server, name: &str, script: &str, state: JobState) -> String {
    let id = server.create_job(
        &server.admin_token,
        &json!({
            "metadata": {"name": name},
            "spec": {"container": {"image": "busybox", "command": ["/bin/sh", "-c", script]}, "backoff_limit": 0}
        }),
    );
    server.wait_for_state(&server.admin_token, &id, state);
    id
}

/// The line numbers of the rows that carry `class`, in order.
fn rows_with(browser: &Browser, class: &str) -> Vec<u64> {
    let script = format!(
        "return [...document.querySelectorAll('.log-rows .log-line.{class} .ln')].map(a => Number(a.textContent));"
    );
    let numbers = browser.execute(&script, vec![]);
    numbers.as_array().unwrap().iter().map(|n| n.as_u64().unwrap()).collect()
}

/// Waits until a row for line `number` shows text containing `text`.
fn wait_for_line(browser: &Browser, number: u64, text: &str) {
    let script = "const a = document.querySelector(`.log-rows .log-line .ln[data-ln=\"${arguments[0]}\"]`); \
                  return a ? a.parentElement.querySelector('.lt').textContent : null;";
    browser.wait_until(&format!("line {number} to show {text:?}"), || {
        let shown = browser.execute(script, vec![json!(number)]);
        shown.as_str().filter(|s| s.contains(text)).map(|_| ())
    });
}

#[test]
fn a_permalink_opens_the_same_lines_highlighted_and_clicks_make_new_ones() {
    let server = Server::start();
    let id = run_script(
        &server,
        "many-lines",
        "i=1; while [ $i -le 3000 ]; do echo \"line $i\"; i=$((i+1)); done",
        JobState::Completed,
    );
    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);

    // A link that names no replica opens the lines in the one the tab
    // picks, and the address then names it with the lines kept.
    browser.goto(&format!("{}/jobs/{id}/logs#L700-L702", server.base_url));
    wait_for_line(&browser, 700, "line 700");
    assert_eq!(rows_with(&browser, "selected"), (700..=702).collect::<Vec<_>>());
    let named = format!("/jobs/{id}/logs?replica={id}-0-0#L700-L702");
    browser.wait_until("the address to name the replica and keep the lines", || {
        browser.current_url().ends_with(&named).then_some(())
    });

    let link = format!("/jobs/{id}/logs?replica={id}-0-0#L1200-L1205");
    browser.goto(&format!("{}{link}", server.base_url));
    wait_for_line(&browser, 1200, "line 1200");
    assert_eq!(rows_with(&browser, "selected"), (1200..=1205).collect::<Vec<_>>());
    // The viewer draws only what is on screen, not 3,000 rows.
    let rows = browser.execute("return document.querySelectorAll('.log-rows .log-line').length;", vec![]);
    assert!(rows.as_u64().unwrap() < 80, "{rows} rows drawn");

    // A click on a line number selects it; a shift-click makes a range; the
    // address follows, so it can be sent on.
    let click_line = |number: u64, shift: bool| {
        browser.execute(
            "document.querySelector(`.log-rows .ln[data-ln=\"${arguments[0]}\"]`)
                .dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true, shiftKey: arguments[1]}));",
            vec![json!(number), json!(shift)],
        );
    };
    click_line(1210, false);
    browser.wait_until("the address to name line 1210", || browser.current_url().ends_with("#L1210").then_some(()));
    click_line(1214, true);
    browser.wait_until("the address to name lines 1210-1214", || {
        browser.current_url().ends_with("#L1210-L1214").then_some(())
    });
    assert_eq!(rows_with(&browser, "selected"), (1210..=1214).collect::<Vec<_>>());
    assert!(browser.current_url().contains(&format!("/jobs/{id}/logs?replica={id}-0-0#")));

    // A teammate opening that address in a fresh browser sees the same lines.
    let shared = browser.current_url();
    let teammate = Browser::start();
    teammate.sign_in(&server, &server.admin_token);
    teammate.goto(&shared);
    wait_for_line(&teammate, 1214, "line 1214");
    assert_eq!(rows_with(&teammate, "selected"), (1210..=1214).collect::<Vec<_>>());
}

#[test]
fn links_out_of_every_page_and_tab_go_where_they_point() {
    let server = Server::start();
    let id = run_script(&server, "leaving", "echo one; echo two; exit 3", JobState::Failed);
    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    let top_bar_link = |href: &str| format!("header nav a[href='{href}']");
    let listed = format!("tbody a[href='/jobs/{id}']");
    // Each page opened cold loads its own module. A link changes the address
    // before the old page is taken down; the old page must not act on the
    // new address meanwhile (the logs tab once put its own address back).
    let starts = [
        format!("/jobs/{id}"),
        format!("/jobs/{id}/replicas"),
        format!("/jobs/{id}/events"),
        format!("/jobs/{id}/logs"),
        format!("/jobs/{id}/failure"),
        "/jobs/new".to_string(),
    ];
    for start in &starts {
        browser.goto(&format!("{}{start}", server.base_url));
        browser.wait_until(&format!("{start} to show"), || browser.try_find("h1").map(|_| ()));
        if start.ends_with("/logs") {
            // The tab picks a replica into the address.
            browser.wait_until("the replica in the address", || {
                browser.current_url().contains(&format!("replica={id}-0-0")).then_some(())
            });
            wait_for_line(&browser, 2, "two");
        }
        browser.click(&browser.find(&top_bar_link("/jobs")));
        browser.wait_until(&format!("the deployments list after {start}"), || browser.try_find(&listed).map(|_| ()));
        assert_eq!(browser.current_url(), format!("{}/jobs", server.base_url), "leaving {start}");
    }
    // Within the job page: from the logs tab to another tab, and on to the
    // form.
    browser.click(&browser.find(&listed));
    browser.click(&browser.find("nav.tabs a[href$='/logs']"));
    wait_for_line(&browser, 2, "two");
    browser.click(&browser.find("nav.tabs a[href$='/events']"));
    browser.wait_until("the events tab", || browser.current_url().ends_with("/events").then_some(()));
    browser.wait_for_text("Events");
    browser.click(&browser.find(&top_bar_link("/jobs/new")));
    browser.wait_until("the form", || browser.try_find("#job-name").map(|_| ()));
    assert_eq!(browser.current_url(), format!("{}/jobs/new", server.base_url));
}

#[test]
fn follow_mode_shows_new_lines_as_they_are_written() {
    let server = Server::start();
    // It ticks until the test is over (the harness ends it with the server),
    // so the log is still growing however long the browser takes to start.
    let id = run_script(
        &server,
        "ticker",
        "i=1; while true; do echo \"tick $i\"; i=$((i+1)); sleep 0.25; done",
        JobState::Running,
    );
    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    browser.goto(&format!("{}/jobs/{id}/logs", server.base_url));
    browser.wait_until("the running replica in the address", || {
        browser.current_url().contains(&format!("replica={id}-0-0")).then_some(())
    });
    wait_for_line(&browser, 2, "tick 2");
    let following = browser.execute("return document.querySelector('#log-follow').checked;", vec![]);
    assert_eq!(following, json!(true), "a running log is followed");
    // Later lines arrive without a reload and the view stays at the end.
    wait_for_line(&browser, 20, "tick 20");
    let at_end = browser.execute(
        "const s = document.querySelector('.log-scroller'); return s.scrollTop + s.clientHeight >= s.scrollHeight - 2;",
        vec![],
    );
    assert_eq!(at_end, json!(true));
    assert!(browser.page_text().contains("Following"));
}

#[test]
fn search_finds_a_line_past_the_first_million_characters() {
    let server = Server::start();
    // About 1.2 million characters before the line to find, and more after
    // it, so the end of the log the viewer opens on does not show it.
    let script = "awk 'BEGIN { for (i = 1; i <= 22000; i++) printf \"filler line %06d ........................................\\n\", i; \
                  print \"the needle-in-the-haystack line\"; \
                  for (i = 1; i <= 30000; i++) printf \"after the needle %06d .....................................\\n\", i }'";
    let id = run_script(&server, "haystack", script, JobState::Completed);
    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    browser.goto(&format!("{}/jobs/{id}/logs?replica={id}-0-0", server.base_url));
    wait_for_line(&browser, 52001, "after the needle 030000");

    browser.type_text(&browser.find("#log-search-text"), "needle-in-the");
    browser.click(&browser.find("#log-search-go"));
    browser.wait_for_text("1 of 1 · line 22,001");
    wait_for_line(&browser, 22001, "the needle-in-the-haystack line");
    assert_eq!(rows_with(&browser, "current-match"), vec![22001]);

    // A regular expression, ignoring case, over the whole log.
    browser.clear(&browser.find("#log-search-text"));
    browser.type_text(&browser.find("#log-search-text"), "^FILLER LINE 0000[12]0 ");
    browser.click(&browser.find("#log-search-regex"));
    browser.click(&browser.find("#log-search-case"));
    browser.click(&browser.find("#log-search-go"));
    browser.wait_for_text("of 2 · line");
    browser.click(&browser.find("#log-search-next"));
    browser.wait_for_text("2 of 2 · line 20");
}

#[test]
fn a_line_with_markup_shows_as_text_and_colours_render() {
    let server = Server::start();
    let id = run_script(
        &server,
        "markup",
        "printf '<script>window.pwned = 1</script>\\n\\033[31m<b>red</b>\\033[0m plain\\n<img src=x onerror=\"window.pwned = 2\">\\n'",
        JobState::Completed,
    );
    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    browser.goto(&format!("{}/jobs/{id}/logs?replica={id}-0-0", server.base_url));
    wait_for_line(&browser, 1, "<script>window.pwned = 1</script>");
    wait_for_line(&browser, 3, "<img src=x onerror=\"window.pwned = 2\">");
    let probe = browser.execute(
        "const rows = document.querySelector('.log-rows'); \
         return [typeof window.pwned, rows.querySelectorAll('script, img, b').length, \
                 rows.querySelector('.ansi-fg1').textContent];",
        vec![],
    );
    assert_eq!(probe, json!(["undefined", 0, "<b>red</b>"]));
    let messages = browser.console_messages();
    assert!(!messages.iter().any(|m| m.contains("Content Security Policy")), "{messages:?}");
}

#[test]
fn the_failure_view_says_why_and_links_the_first_error_to_its_line() {
    let server = Server::start();
    let script = "i=1; while [ $i -le 400 ]; do echo \"step $i loss 0.5\"; i=$((i+1)); done; \
                  printf 'Traceback (most recent call last):\\n  File \"train.py\", line 9, in <module>\\n    main()\\nValueError: the batch has no labels\\n'; exit 1";
    let id = run_script(&server, "broken", script, JobState::Failed);
    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    browser.goto(&format!("{}/jobs/{id}/failure", server.base_url));
    browser.wait_for_text("What to do:");
    let text = browser.page_text();
    for expected in
        ["ERR_PROGRAM", "The program failed", "Replica 0 (attempt 1) failed first", "Python traceback on line 404"]
    {
        assert!(text.contains(expected), "{expected:?} in:\n{text}");
    }
    let error_line = browser.find(".log-excerpt .error-line");
    assert!(browser.text(&error_line).contains("ValueError: the batch has no labels"));
    browser.screenshot(&screenshot_path("failure-view"));

    // The error line's number opens the log viewer on that line.
    browser.click(&browser.find(".log-excerpt .error-line a.ln"));
    browser.wait_until("the log viewer at line 404", || browser.current_url().ends_with("#L404").then_some(()));
    wait_for_line(&browser, 404, "ValueError: the batch has no labels");
    assert_eq!(rows_with(&browser, "selected"), vec![404]);
    // The logs tab offers the same jump for the failed attempt.
    let jump = browser.find("a.first-error");
    assert!(browser.text(&jump).contains("Python traceback on line 404"));
    browser.screenshot(&screenshot_path("log-viewer"));
    browser.emulate_color_scheme("dark");
    browser.screenshot(&screenshot_path("log-viewer-dark"));
}

/// A job whose logs the retention removed, as its owner finds it: the logs
/// tab says when and by which rule, the events tab says so too, and the
/// failure view still explains the failure from the excerpt kept. The
/// server keeps finished jobs' logs no time at all here (an admin's
/// `[logs]`), so the removal follows the finish at once.
#[test]
fn a_job_whose_logs_went_says_when_and_why_and_keeps_its_failure_view() {
    let config = "[logs]\nminimum_retention = \"0s\"\nupgrade_grace = \"0s\"\n";
    let server = Server::start_on("127.0.0.1:0", config, &[], true);
    let script =
        "echo 'epoch 1 loss 0.7'; printf 'Traceback (most recent call last):\\nValueError: no labels\\n'; exit 1";
    let id = server.create_job(
        &server.admin_token,
        &json!({
            "metadata": {"name": "short-lived"},
            "spec": {
                "container": {"image": "busybox", "command": ["/bin/sh", "-c", script]},
                "backoff_limit": 0,
                "ttl_seconds_after_finished": 0
            }
        }),
    );
    // An archive time of 0: archived and its logs removed as it fails.
    jobdeck_e2e::wait_for("the job's logs to be removed", std::time::Duration::from_secs(60), || {
        let job = server.job(&server.admin_token, &id);
        job.status.and_then(|s| s.log_retention).and_then(|r| r.removed_at)
    });
    assert_eq!(server.job(&server.admin_token, &id).status.and_then(|s| s.state), Some(JobState::Archived));

    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    browser.goto(&format!("{}/jobs/{id}/logs", server.base_url));
    browser.wait_for_text("were removed at");
    let text = browser.page_text();
    assert!(text.contains("by its archive time; its events and failure analysis stay"), "{text}");
    browser.screenshot(&screenshot_path("logs-removed"));

    browser.goto(&format!("{}/jobs/{id}/events", server.base_url));
    browser.wait_for_text("LogsRemoved");
    assert!(browser.page_text().contains("its logs, metrics and run directory were removed"));

    browser.goto(&format!("{}/jobs/{id}/failure", server.base_url));
    browser.wait_for_text("What to do:");
    let error_line = browser.find(".log-excerpt .error-line");
    assert!(browser.text(&error_line).contains("ValueError: no labels"), "the excerpt kept");
}

/// A server with the console whose node group holds 8 one-CPU replicas
/// at once, whatever this machine's CPUs: every rank runs at the same time.
fn server_for_ranks() -> Server {
    let config = "[[node_groups]]\nname = \"local\"\ncpu = 8\nmemory_mb = 16384\n\n\
                  [[shapes]]\nname = \"cpu.small\"\ncpu = 1\nmemory_mb = 1024\n";
    Server::start_on("127.0.0.1:0", config, &[], true)
}

/// The "All ranks" tab's rows as `(tag, time, text)`: the tag is the
/// replica's short label and the line number (`2-0:7`).
fn rank_rows(browser: &Browser) -> Vec<(String, String, String)> {
    let rows = browser.execute(
        "return [...document.querySelectorAll('.ranks .log-line')].map(r => \
           [r.querySelector('.ln').textContent, r.querySelector('.ts').textContent, r.querySelector('.lt').textContent]);",
        vec![],
    );
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| (r[0].as_str().unwrap().into(), r[1].as_str().unwrap().into(), r[2].as_str().unwrap().into()))
        .collect()
}

/// Four ranks on one timeline: their lines interleaved in time order, each
/// marked with its replica; narrowed to chosen replicas and to a text (both
/// in the address); the failure tab's link opens the first error among
/// every rank's lines of that time, and a click on a line's mark makes a
/// permalink that opens there again.
#[test]
fn every_rank_reads_as_one_log_in_time_order_with_permalinks() {
    let server = server_for_ranks();
    let script = "for k in 1 2 3 4 5 6 7 8 9 10; do \
                    if [ $JOB_COMPLETION_INDEX = 2 ] && [ $k = 7 ]; then echo 'NCCL WARN Timeout waiting for peer' >&2; sleep 1; exit 1; fi; \
                    echo \"rank $JOB_COMPLETION_INDEX step $k\"; sleep 0.03; done";
    let id = server.create_job(
        &server.admin_token,
        &json!({"metadata": {"name": "four-ranks"}, "spec": {"completions": 4, "parallelism": 4, "backoff_limit": 0, "resource_shape": "cpu.small",
            "container": {"image": "busybox", "command": ["/bin/sh", "-c", script]}}}),
    );
    server.wait_for_state(&server.admin_token, &id, JobState::Failed);
    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    browser.goto(&format!("{}/jobs/{id}/ranks", server.base_url));
    let rows = browser.wait_until("every rank's lines", || {
        let rows = rank_rows(&browser);
        (rows.len() == 37).then_some(rows)
    });
    let times: Vec<&String> = rows.iter().map(|r| &r.1).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "in time order: {times:?}");
    for (tag, _, text) in &rows {
        let (label, number) = tag.split_once(':').unwrap();
        let rank = label.strip_suffix("-0").unwrap();
        let expected =
            if text.starts_with("NCCL") { "2".to_string() } else { text.split(' ').nth(1).unwrap().to_string() };
        assert_eq!(rank, expected, "{tag} {text}");
        if !text.starts_with("NCCL") {
            assert_eq!(text.rsplit(' ').next().unwrap(), number, "a line's mark carries its number: {tag} {text}");
        }
    }
    let first_ranks: std::collections::BTreeSet<&str> = rows[..8].iter().map(|r| &r.0[..1]).collect();
    assert!(first_ranks.len() > 1, "the ranks interleave: {rows:?}");
    let colours = browser.execute(
        "return new Set([...document.querySelectorAll('.ranks .log-line .ln span')].map(a => a.className)).size;",
        vec![],
    );
    assert_eq!(colours, json!(4), "one colour per replica");
    browser.screenshot(&screenshot_path("all-ranks"));

    // Rank 1 and 3 left out, then a text: the address says so.
    for replica in [1, 3] {
        browser.click(&browser.find(&format!(".ranks input[data-replica='{id}-{replica}-0']")));
        browser.wait_until("the replica to leave", || {
            (!rank_rows(&browser).iter().any(|r| r.0.starts_with(&format!("{replica}-")))).then_some(())
        });
    }
    assert!(browser.current_url().contains(&format!("replicas={id}-0-0%2C{id}-2-0")), "{}", browser.current_url());
    assert_eq!(rank_rows(&browser).len(), 17);
    let filter = browser.find(".ranks .ranks-filter");
    browser.type_text(&filter, "step 1");
    browser.press_key(&filter, "\u{E007}");
    let texts = browser.wait_until("the text filter", || {
        let texts: Vec<String> = rank_rows(&browser).into_iter().map(|r| r.2).collect();
        (texts.len() == 3).then_some(texts)
    });
    assert!(texts.iter().all(|t| t.contains("step 1")), "{texts:?}");
    assert!(browser.current_url().contains("q=step%201"), "{}", browser.current_url());

    // From the failure tab to the first error among every rank's lines.
    browser.goto(&format!("{}/jobs/{id}/failure", server.base_url));
    browser.click(&browser.find("a[href*='/ranks#']"));
    let selected = || browser.try_find(".ranks .log-line.selected").map(|row| browser.text(&row));
    let shown = browser.wait_until("the first error selected", selected);
    assert!(shown.starts_with("2-0:7") && shown.contains("NCCL WARN"), "{shown}");
    assert!(browser.current_url().ends_with(&format!("/jobs/{id}/ranks#{id}-2-0:L7")), "{}", browser.current_url());
    assert!(rank_rows(&browser).iter().any(|r| r.0.starts_with("1-0:")), "every rank around it");

    // A click on another line's mark is a permalink to it.
    browser.click(&browser.find(".ranks .log-line .ln[href$='-3-0:L4']"));
    browser.wait_until("the address to name the line", || browser.current_url().ends_with("-3-0:L4").then_some(()));
    let link = browser.current_url();
    browser.goto(&format!("{}/jobs", server.base_url));
    browser.goto(&link);
    let shown = browser.wait_until("the permalink's line selected", selected);
    assert!(shown.starts_with("3-0:4") && shown.contains("rank 3 step 4"), "{shown}");
}

/// A running job's ranks are followed: lines written after the tab opened
/// appear at its end.
#[test]
fn the_ranks_of_a_running_job_are_followed() {
    let server = server_for_ranks();
    let gates = tempfile::tempdir().unwrap();
    let gate = gates.path().join("go");
    let script = format!(
        "echo \"rank $JOB_COMPLETION_INDEX waiting\"; until [ -e '{}' ]; do sleep 0.05; done; echo \"rank $JOB_COMPLETION_INDEX went on\"",
        gate.display()
    );
    let id = server.create_job(
        &server.admin_token,
        &json!({"metadata": {"name": "two-ranks"}, "spec": {"completions": 2, "parallelism": 2, "resource_shape": "cpu.small",
            "container": {"image": "busybox", "command": ["/bin/sh", "-c", script]}}}),
    );
    server.wait_for_state(&server.admin_token, &id, JobState::Running);
    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    browser.goto(&format!("{}/jobs/{id}/ranks", server.base_url));
    browser.wait_until("both ranks waiting", || (rank_rows(&browser).len() == 2).then_some(()));
    let following = browser.execute("return document.querySelector('.ranks-follow').checked;", vec![]);
    assert_eq!(following, json!(true), "a running job is followed");
    std::fs::write(&gate, "").unwrap();
    let rows = browser.wait_until("both ranks going on", || {
        let rows = rank_rows(&browser);
        (rows.len() == 4).then_some(rows)
    });
    assert!(rows[2..].iter().all(|r| r.2.ends_with("went on")), "{rows:?}");
    // The new lines came by a request the server held until they were
    // written (a long poll), not by asking every second.
    let asked = browser.execute(
        "return performance.getEntriesByType('resource').map(e => e.name).filter(n => n.includes('/merged-log?'));",
        vec![],
    );
    let asked: Vec<String> = serde_json::from_value(asked).unwrap();
    let last = asked.last().expect("the follow's request");
    assert!(last.contains("&after=") && last.contains("&wait=25"), "{asked:?}");
}

/// A completed job named `name` whose 4 ranks each wrote 1,000 lines
/// (`rank R line I`), and a browser signed in as the admin on its "All
/// ranks" tab once the newest page (300 rows) shows.
fn four_ranks_of_a_thousand_lines(name: &str) -> (Server, Browser, String) {
    let server = server_for_ranks();
    let script =
        "awk -v r=$JOB_COMPLETION_INDEX 'BEGIN { for (i = 1; i <= 1000; i++) printf \"rank %d line %d\\n\", r, i }'";
    let id = server.create_job(
        &server.admin_token,
        &json!({"metadata": {"name": name}, "spec": {"completions": 4, "parallelism": 4, "resource_shape": "cpu.small",
            "container": {"image": "busybox", "command": ["/bin/sh", "-c", script]}}}),
    );
    server.wait_for_state(&server.admin_token, &id, JobState::Completed);
    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    browser.goto(&format!("{}/jobs/{id}/ranks", server.base_url));
    browser.wait_until("the newest page", || (rank_rows(&browser).len() == 300).then_some(()));
    (server, browser, id)
}

/// Scrolling back through 4 ranks of 1,000 lines each a page at a time
/// reaches the first line with every line once and in order, holding at
/// most 3,000; scrolling forward again comes back to the newest.
#[test]
fn the_ranks_scroll_page_by_page_to_either_end() {
    let (_server, browser, _id) = four_ranks_of_a_thousand_lines("long-ranks");
    // Scrolls to one end, page by page, until the tab says no line lies
    // past it (waiting on its own state, never on a quiet spell); answers
    // the most rows held on the way.
    let scroll_to = |end: &str| {
        browser.execute_async_with(
            "const [end, done] = arguments;
             const box = document.querySelector('.ranks .log-scroller');
             const more = end === 'top' ? 'moreBefore' : 'moreAfter';
             let most = 0;
             const step = () => {
               most = Math.max(most, box.querySelectorAll('.log-line').length);
               if (box.getAttribute('aria-busy') === 'true') { requestAnimationFrame(step); return; }
               if (box.dataset[more] === 'false') { done(most); return; }
               box.scrollTop = end === 'top' ? 0 : box.scrollHeight;
               requestAnimationFrame(step);
             };
             step();",
            vec![json!(end)],
        )
    };
    let most = scroll_to("top").as_u64().unwrap();
    assert!(most <= 3000, "at most 3,000 lines held: {most}");
    let rows = rank_rows(&browser);
    assert!(rows[0].2.ends_with(" line 1"), "the first line reached: {:?}", rows[0]);
    assert!(rows.len() == 3000, "the window is full: {}", rows.len());
    let mut seen = std::collections::BTreeSet::new();
    assert!(rows.iter().all(|r| seen.insert(r.0.clone())), "no line twice");
    assert!(rows.windows(2).all(|w| w[0].1 <= w[1].1), "in time order");
    scroll_to("bottom");
    let rows = rank_rows(&browser);
    assert!(rows.last().unwrap().2.ends_with(" line 1000"), "the newest again: {:?}", rows.last());
    let mut seen = std::collections::BTreeSet::new();
    assert!(rows.iter().all(|r| seen.insert(r.0.clone())), "no line twice");
}

/// The current match of the "All ranks" tab's search: its status, and the
/// row marked as the current match (its mark, time and text).
fn current_match(browser: &Browser) -> Option<(String, String, String, String)> {
    let found = browser.execute(
        "const status = document.querySelector('.ranks .log-search-status').textContent;
         const row = document.querySelector('.ranks .log-line.current-match.selected');
         return row && [status, row.querySelector('.ln').textContent, row.querySelector('.ts').textContent,
                        row.querySelector('.lt').textContent];",
        vec![],
    );
    let found = found.as_array()?;
    let text = |at: usize| found[at].as_str().unwrap().to_string();
    Some((text(0), text(1), text(2), text(3)))
}

/// A search over 4 ranks of 1,000 lines finds every rank's matches on the
/// server and steps through them in time order, each one shown selected
/// among the lines every rank wrote around it (a window opened around a
/// match outside the one shown), its permalink in the address; the last
/// wraps to the first, and ↑ goes back.
#[test]
fn a_search_steps_through_every_ranks_matches_in_time_order() {
    let (_server, browser, id) = four_ranks_of_a_thousand_lines("searched-ranks");
    let text = browser.find(".ranks .ranks-search-text");
    browser.type_text(&text, "line (5|999)$");
    browser.click(&browser.find(".ranks .ranks-search-regex"));
    browser.press_key(&text, "\u{E007}");
    let mut seen = Vec::new();
    let mut last_status = String::new();
    for step in 0..9 {
        if step > 0 {
            browser.click(&browser.find(".ranks .ranks-search-next"));
        }
        let (status, tag, time, line) = browser.wait_until("the next match shown", || {
            current_match(&browser).filter(|(status, tag, ..)| {
                *status != last_status && status.contains(&format!("· {tag}").replacen(':', ":L", 1))
            })
        });
        assert!(status.contains(" of 8 · "), "{status}");
        assert!(line.ends_with(" line 5") || line.ends_with(" line 999"), "{line}");
        assert!(
            browser.current_url().ends_with(&format!("#{id}-{}", tag.replacen(':', ":L", 1))),
            "the match's permalink: {}",
            browser.current_url()
        );
        let rows = rank_rows(&browser);
        let at = rows.iter().position(|r| r.0 == tag).unwrap();
        assert!(rows.len() > 100 && at > 0, "among the lines around it: {} rows, at {at}", rows.len());
        if step == 1 {
            browser.screenshot(&jobdeck_e2e::screenshot_path("ranks-search"));
        }
        last_status = status.clone();
        seen.push((status, tag, time));
    }
    // The ninth step wrapped to where the first was.
    assert_eq!(seen[8].1, seen[0].1);
    let mut order: Vec<&(String, String, String)> = seen[..8].iter().collect();
    order.sort_by_key(|(status, ..)| status.split(' ').next().unwrap().parse::<u32>().unwrap());
    let tags: std::collections::BTreeSet<&str> = order.iter().map(|m| m.1.as_str()).collect();
    assert_eq!(tags.len(), 8, "every match once: {order:?}");
    assert!(order.windows(2).all(|w| w[0].2 <= w[1].2), "in time order: {order:?}");
    browser.click(&browser.find(".ranks .ranks-search-prev"));
    let back = browser
        .wait_until("the match before", || current_match(&browser).filter(|(status, ..)| *status != last_status));
    assert_eq!(back.1, seen[7].1, "↑ goes back to the eighth");
}
