//! Benchmark: the "All ranks" tab on 8 replicas of 1,000,000 lines each, in
//! Chromium (issue 36's goal: the first screen within 300 ms, and scrolling
//! that never loads everything).
//!
//! `bench/merged-view.sh` (the console built, the release server). A real
//! job of 8 replicas on the local executor writes the logs at once, so their
//! lines interleave in time as a distributed job's do. Measured in the page
//! with `performance.now()`:
//! * first screen: from a click on the tab to rows with text, warm (the
//!   console loaded) and on a cold load of the tab's address;
//! * a permalink: a cold load of `#<replica>:L<n>` for a line in the middle
//!   to that line shown selected;
//! * scrolling back: from scrolling to the top of the window to the older
//!   page drawn above it, 20 times in a row, and the rows and DOM nodes the
//!   tab then holds (it keeps at most 3,000 lines).
//!
//! `BENCH_MERGED_LINES` (default 1,000,000) sets each replica's lines.

use std::time::{Duration, Instant};

use jobdeck_e2e::{Browser, JobState, Server};
use serde_json::json;

const REPLICAS: u64 = 8;

fn lines() -> u64 {
    std::env::var("BENCH_MERGED_LINES").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000)
}

fn report(what: &str, mut samples: Vec<f64>) {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    println!("{what:<48} {:>3} samples  p50 {:>7.1} ms  max {:>7.1} ms", samples.len(), at(0.5), at(1.0));
}

fn main() {
    let lines = lines();
    // A node group that runs the 8 replicas at once, whatever this
    // machine's CPUs.
    let config = "[[node_groups]]\nname = \"local\"\ncpu = 8\nmemory_mb = 16384\n\n\
                  [[shapes]]\nname = \"cpu.small\"\ncpu = 1\nmemory_mb = 1024\n";
    let server = Server::start_on("127.0.0.1:0", config, &[], true);
    let script = format!(
        "awk -v r=$JOB_COMPLETION_INDEX 'BEGIN {{ for (i = 1; i <= {lines}; i++) printf \"rank %d step %07d loss=%.5f lr=0.0003\\n\", r, i, 1 / i }}'"
    );
    let started = Instant::now();
    let id = server.create_job(
        &server.admin_token,
        &json!({"metadata": {"name": "eight-ranks"}, "spec": {"completions": REPLICAS, "parallelism": REPLICAS, "resource_shape": "cpu.small",
            "container": {"image": "busybox", "command": ["/bin/sh", "-c", script]}}}),
    );
    server.wait_for_state_within(&server.admin_token, &id, JobState::Completed, Duration::from_secs(900));
    println!("== {REPLICAS} replicas of {lines} lines stored in {:.1} s", started.elapsed().as_secs_f64());

    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    let first_rows = "const look = () => {
           const rows = document.querySelectorAll('.ranks .log-line .lt');
           if (rows.length > 20) done(performance.now() - t0); else requestAnimationFrame(look);
         };
         look();";
    let mut warm = Vec::new();
    for _ in 0..5 {
        browser.goto(&format!("{}/jobs/{id}", server.base_url));
        browser.find("nav.tabs a[href$='/ranks']");
        let ms = browser.execute_async(&format!(
            "const done = arguments[arguments.length - 1];
             const t0 = performance.now();
             document.querySelector(\"nav.tabs a[href$='/ranks']\").click();
             {first_rows}"
        ));
        warm.push(ms.as_f64().unwrap());
    }
    report("first screen, a click on the tab", warm);
    let mut cold = Vec::new();
    for _ in 0..3 {
        browser.goto(&format!("{}/jobs/{id}/ranks", server.base_url));
        let ms =
            browser.execute_async(&format!("const done = arguments[arguments.length - 1]; const t0 = 0; {first_rows}"));
        cold.push(ms.as_f64().unwrap());
    }
    report("first screen, a cold load (download included)", cold);
    let mut permalink = Vec::new();
    for k in 0..3 {
        let line = lines / 2 + k * (lines / 10);
        browser.goto(&format!("{}/jobs", server.base_url));
        browser.goto(&format!("{}/jobs/{id}/ranks#{id}-5-0:L{line}", server.base_url));
        let ms = browser.execute_async_with(
            "const [tag, done] = arguments;
             const look = () => {
               const row = document.querySelector('.ranks .log-line.selected .ln');
               if (row && row.textContent === tag) done(performance.now()); else requestAnimationFrame(look);
             };
             look();",
            vec![json!(format!("5-0:{line}"))],
        );
        permalink.push(ms.as_f64().unwrap());
    }
    report("a permalink to a middle line, cold load", permalink);

    // Scroll to the top of the window 20 times: each time the page before
    // it is asked for and drawn above.
    let back = browser.execute_async(
        "const done = arguments[arguments.length - 1];
         const box = document.querySelector('.ranks .log-scroller');
         const times = []; let i = 0;
         const step = () => {
           if (i === 20) { done(times); return; }
           const first = box.querySelector('.log-line .ln').textContent;
           const t0 = performance.now();
           box.scrollTop = 0;
           const look = () => {
             const now = box.querySelector('.log-line .ln').textContent;
             if (now !== first) { times.push(performance.now() - t0); i++; requestAnimationFrame(step); }
             else if (performance.now() - t0 > 5000) done({stalled: i, top: box.scrollTop, height: box.scrollHeight,
               status: document.querySelector('.ranks .log-status').textContent, first});
             else requestAnimationFrame(look);
           };
           look();
         };
         step();",
    );
    let back: Vec<f64> = match back.as_array() {
        Some(times) => times.iter().map(|v| v.as_f64().unwrap()).collect(),
        None => panic!("scrolling back stalled: {back}"),
    };
    report("scrolling to the top, the older page drawn", back);
    let rows = browser.execute("return document.querySelectorAll('.ranks .log-line').length;", vec![]);
    let nodes = browser.execute("return document.querySelector('.ranks').querySelectorAll('*').length;", vec![]);
    println!("rows held after scrolling back 20 pages: {rows}; DOM nodes in the tab: {nodes}");
}
