//! Benchmark: the log viewer on a 1,000,000-line log, in Chromium.
//!
//! `cargo bench -p jobdeck-e2e --bench log_viewer` (after `trunk build
//! --release` and `cargo build -p jobdeck-server`, as for the end-to-end
//! tests). A real job on the local executor writes the log, so the figures
//! include the server's log store; the numbers are printed and written to
//! `target/bench/log_viewer.json`. docs/measurements.md has the results.
//!
//! What it measures, each in the page with `performance.now()`:
//! * ingest: how long the local executor takes to store the 1,000,000 lines
//!   (from the job's start to `Completed`), as lines per second;
//! * first screen: from a click on the Logs tab of the job page to the first
//!   rows with text (goal ≤ 300 ms), and from a cold page load of the log's
//!   address (wasm download and start included);
//! * DOM nodes inside the viewer (goal ≤ 1,000);
//! * search: from a click on Find to the match shown, for a line in the
//!   middle of the log (goal ≤ 1 s);
//! * scrolling: the scroll position moved from the first line to the last
//!   over 600 animation frames; the longest frame, the 99th percentile and
//!   the frames over 50 ms ("long frames"), then the same with rows drawn
//!   from fetched text at 40 stops along the way.

use std::time::{Duration, Instant};

use jobdeck_e2e::{Browser, JobState, Server};
use serde_json::{json, Value};

/// Lines in the log; `BENCH_LOG_LINES` overrides it for a quick run.
fn lines() -> u64 {
    std::env::var("BENCH_LOG_LINES").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000)
}

fn main() {
    let lines = lines();
    let server = Server::start();
    let script = format!(
        "awk 'BEGIN {{ for (i = 1; i <= {lines}; i++) printf \"%07d INFO step=%d loss=%.5f lr=0.0003 tokens/s=51234 \\033[32mok\\033[0m\\n\", i, i, 1 / i }}'"
    );
    let started = Instant::now();
    let id = server.create_job(
        &server.admin_token,
        &json!({
            "metadata": {"name": "million"},
            "spec": {"container": {"image": "busybox", "command": ["/bin/sh", "-c", script]}}
        }),
    );
    server.wait_for_state_within(&server.admin_token, &id, JobState::Completed, Duration::from_secs(600));
    let ingest_seconds = started.elapsed().as_secs_f64();
    eprintln!("{lines} lines stored in {ingest_seconds:.1} s");
    let replica = format!("{id}-0-0");
    let (_, total) =
        server.call("GET", &format!("/jobs/{id}/replicas/{replica}/log?from=1&to=0"), &server.admin_token, None);
    assert_eq!(total["total_lines"], json!(lines), "{total}");

    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);

    eprintln!("first screen after a click on the Logs tab");
    // Warm: the console is loaded; a click on the Logs tab.
    let mut warm = Vec::new();
    for _ in 0..5 {
        browser.goto(&format!("{}/jobs/{id}", server.base_url));
        browser.find("nav.tabs a[href$='/logs']");
        let ms = browser.execute_async(
            "const done = arguments[arguments.length - 1];
             const t0 = performance.now();
             document.querySelector(\"nav.tabs a[href$='/logs']\").click();
             const look = () => {
               const texts = [...document.querySelectorAll('.log-rows .log-line .lt')].map(e => e.textContent);
               if (texts.length > 10 && texts.every(t => t !== '…')) done(performance.now() - t0);
               else requestAnimationFrame(look);
             };
             look();",
        );
        warm.push(ms.as_f64().unwrap());
    }

    eprintln!("first screen on a cold load");
    // Cold: the log's address opened in a fresh tab load.
    let mut cold = Vec::new();
    for _ in 0..3 {
        browser.goto(&format!("{}/jobs/{id}/logs?replica={replica}", server.base_url));
        let ms = browser.execute_async(
            "const done = arguments[arguments.length - 1];
             const look = () => {
               const texts = [...document.querySelectorAll('.log-rows .log-line .lt')].map(e => e.textContent);
               if (texts.length > 10 && texts.every(t => t !== '…')) done(performance.now());
               else requestAnimationFrame(look);
             };
             look();",
        );
        cold.push(ms.as_f64().unwrap());
    }
    let dom_nodes = browser
        .execute("return document.querySelector('.log-viewer').querySelectorAll('*').length;", vec![])
        .as_u64()
        .unwrap();
    let rows =
        browser.execute("return document.querySelectorAll('.log-rows .log-line').length;", vec![]).as_u64().unwrap();

    eprintln!("search");
    // Search for one line in the middle of the log.
    let mut search = Vec::new();
    for line in [lines / 2, lines - 1, lines / 8 + 3] {
        let needle = format!("{line:07} INFO");
        let ms = browser.execute_async_with(
            "const [needle, done] = arguments;
             const input = document.querySelector('#log-search-text');
             input.value = needle; input.dispatchEvent(new Event('input', {bubbles: true}));
             const t0 = performance.now();
             document.querySelector('#log-search-go').click();
             const look = () => {
               const status = document.querySelector('.log-search-status').textContent;
               const row = document.querySelector('.log-rows .log-line.current-match .lt');
               if (status.includes(' of ') && row && row.textContent.startsWith(needle)) done(performance.now() - t0);
               else requestAnimationFrame(look);
             };
             look();",
            vec![json!(needle)],
        );
        search.push(ms.as_f64().unwrap());
    }

    eprintln!("scrolling");
    // Scroll from top to bottom: once straight through, and once stopping
    // at 40 places long enough for their lines to arrive.
    let sweep = browser.execute_async(
        "const done = arguments[arguments.length - 1];
         const s = document.querySelector('.log-scroller');
         s.scrollTop = 0;
         const frames = []; let last = performance.now(); let i = 0; const steps = 600;
         const step = (now) => {
           frames.push(now - last); last = now;
           if (i > steps) { done(frames.slice(2)); return; }
           s.scrollTop = (s.scrollHeight - s.clientHeight) * i / steps; i++;
           requestAnimationFrame(step);
         };
         requestAnimationFrame((now) => { last = now; requestAnimationFrame(step); });",
    );
    let stops = browser.execute_async(
        "const done = arguments[arguments.length - 1];
         const s = document.querySelector('.log-scroller');
         const frames = []; let last = performance.now(); let waits = [];
         let stop = 0; const stopsCount = 40; let settleFrom = 0;
         const loaded = () => [...document.querySelectorAll('.log-rows .log-line .lt')].every(e => e.textContent !== '…');
         const step = (now) => {
           frames.push(now - last); last = now;
           if (stop > stopsCount) { done({frames: frames.slice(2), waits}); return; }
           if (settleFrom === 0) {
             s.scrollTop = (s.scrollHeight - s.clientHeight) * stop / stopsCount;
             settleFrom = now;
           } else if (loaded()) {
             waits.push(now - settleFrom); settleFrom = 0; stop++;
           }
           requestAnimationFrame(step);
         };
         requestAnimationFrame((now) => { last = now; requestAnimationFrame(step); });",
    );
    let last_line = browser.execute(
        "return [...document.querySelectorAll('.log-rows .log-line .ln')].map(a => Number(a.textContent)).pop();",
        vec![],
    );

    let frames = |v: &Value| -> Vec<f64> { v.as_array().unwrap().iter().map(|f| f.as_f64().unwrap()).collect() };
    let sweep = frames(&sweep);
    let stop_frames = frames(&stops["frames"]);
    let waits = frames(&stops["waits"]);
    let report = json!({
        "lines": lines,
        "ingest_seconds": round(ingest_seconds),
        "ingest_lines_per_second": (lines as f64 / ingest_seconds).round(),
        "first_screen_after_tab_click_ms": summary(&warm),
        "first_screen_cold_load_ms": summary(&cold),
        "viewer_dom_nodes": dom_nodes,
        "rows_drawn": rows,
        "search_ms": summary(&search),
        "sweep_frames": frame_summary(&sweep),
        "stops_frames": frame_summary(&stop_frames),
        "stop_lines_arrive_ms": summary(&waits),
        "last_line_on_screen_after_scrolling": last_line,
    });
    let text = serde_json::to_string_pretty(&report).unwrap();
    println!("{text}");
    let out = jobdeck_e2e::workspace_root().join("target/bench/log_viewer.json");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    std::fs::write(&out, text).unwrap();
    println!("written to {}", out.display());
}

fn round(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

fn summary(samples: &[f64]) -> Value {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    json!({"median": round(percentile(&sorted, 0.5)), "max": round(*sorted.last().unwrap()), "samples": samples.iter().map(|s| round(*s)).collect::<Vec<_>>()})
}

fn frame_summary(frames: &[f64]) -> Value {
    let mut sorted = frames.to_vec();
    sorted.sort_by(f64::total_cmp);
    json!({
        "frames": frames.len(),
        "median_ms": round(percentile(&sorted, 0.5)),
        "p99_ms": round(percentile(&sorted, 0.99)),
        "max_ms": round(*sorted.last().unwrap()),
        "over_50_ms": frames.iter().filter(|f| **f > 50.0).count(),
    })
}
