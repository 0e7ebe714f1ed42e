//! Benchmark: what the browser downloads to show each page of the console
//! the first time, with nothing cached.
//!
//! `bench/console-size.sh` (or `cargo bench -p jobdeck-e2e --bench
//! console_size` after building the console and the server). For every
//! route of the console (the sign-in, the list, the form, a page that does
//! not exist, the account, people, audit, storage, notifications, queue and
//! invitation pages, and each tab of
//! the job page, read from `src/routes.rs`) a
//! fresh Chromium profile opens the page and waits until it shows; then the
//! page's own resource timings give the bytes of every console file it
//! loaded (`encodedBodySize`: the body as sent, brotli here), API answers
//! left out. The console is split into a core and one module per page
//! (scripts/split-console.sh), so each route loads a different set.
//!
//! It also measures, per page, the time from navigation to content (cold,
//! on loopback: the page's own clock at the moment an observer sees the
//! content), and what moving inside the console from one page to another
//! downloads on top of the first page (the list to the form and to a job,
//! the job's overview to each other tab), and what the create-job form's first
//! use downloads on top of that (its rules, fetched then). It exits non-zero
//! when a first load is over 150 KB, or a move or that first use over 40 KB
//! (issue 17's budgets).

use jobdeck_e2e::{Browser, JobState, Server};
use serde_json::{json, Value};

/// A first load's budget and a move's, in bytes as sent (KB = 1,000 bytes).
const FIRST_LOAD_BUDGET: u64 = 150_000;
const MOVE_BUDGET: u64 = 40_000;

/// Notes the page's clock when its content first shows: at once if it
/// already does, else when a mutation observer sees it appear.
const WATCH_CONTENT: &str = "
    const selector = arguments[0];
    window.__contentAt = undefined;
    const seen = () => {
        if (window.__contentAt === undefined && document.querySelector(selector)) {
            window.__contentAt = performance.now();
        }
    };
    seen();
    if (window.__contentAt === undefined) {
        new MutationObserver(seen).observe(document, {childList: true, subtree: true, attributes: true});
    }";

/// Sums, per kind, the console files the page loaded.
const MEASURE: &str = "
    const files = performance.getEntriesByType('resource')
        .filter(e => !new URL(e.name).pathname.startsWith('/api/'))
        .map(e => ({ path: new URL(e.name).pathname, bytes: e.encodedBodySize }));
    const nav = performance.getEntriesByType('navigation')[0];
    files.push({ path: 'index.html', bytes: nav.encodedBodySize });
    return files;";

/// The job page's tabs, read from the console's own list
/// (`src/routes.rs`, `JOB_TABS`), so a new tab is measured the day it is
/// added.
fn job_tabs() -> Vec<String> {
    let routes = std::fs::read_to_string(jobdeck_e2e::workspace_root().join("src/routes.rs")).unwrap();
    let list = routes.split("pub const JOB_TABS").nth(1).and_then(|rest| rest.split("];").next()).unwrap();
    let tabs: Vec<String> =
        list.split("(\"").skip(1).filter_map(|entry| entry.split('"').next()).map(String::from).collect();
    assert!(tabs.len() >= 6 && tabs[0] == "overview", "the tabs were read: {tabs:?}");
    tabs
}

/// What shows when a tab's content is drawn.
fn tab_ready(tab: &str) -> &'static str {
    match tab {
        "overview" => "div.overview > *",
        "replicas" => "table.replicas tbody tr",
        "events" => "table.events tbody tr",
        "logs" => ".log-rows .log-line",
        "metrics" => "section.replica-metrics, p.empty",
        "failure" => ".failure-verdict",
        "ranks" => ".ranks .log-line",
        other => panic!("the job page's tab '{other}' has no content to wait for here: add it"),
    }
}

/// A tab's address for `id`; the logs tab shows the first replica's log.
fn tab_path(id: &str, tab: &str) -> String {
    match tab {
        "overview" => format!("/jobs/{id}"),
        "logs" => format!("/jobs/{id}/logs?replica={id}-0-0"),
        _ => format!("/jobs/{id}/{tab}"),
    }
}

fn main() {
    let server = Server::start();
    // A job that failed, so every tab has content: its failure analysis
    // too.
    let (_, job) = server.call(
        "POST",
        "/jobs",
        &server.admin_token,
        Some(&json!({"metadata": {"name": "sized"}, "spec": {
            "container": {"image": "busybox", "command": ["sh", "-c", "echo hi; echo 'Traceback (most recent call last):' >&2; exit 3"]},
            "backoff_limit": 0
        }})),
    );
    let id = job["metadata"]["id"].as_str().unwrap().to_string();
    wait_for_precompression(&server);
    server.wait_for_state(&server.admin_token, &id, JobState::Failed);
    let mut routes: Vec<(String, String, &str)> = vec![
        ("sign-in".into(), "/login".into(), "form button[type=submit]"),
        ("deployments list".into(), "/jobs".into(), "tbody tr"),
        ("create-job form".into(), "/jobs/new".into(), ".job-form button[type=submit]"),
        ("not found".into(), "/no/such/page".into(), "section.page.narrow"),
        ("account".into(), "/account".into(), "ul.sessions li"),
        ("people".into(), "/people".into(), "table.people tbody tr"),
        ("audit log".into(), "/audit".into(), "table.audit-log tbody tr"),
        ("storage".into(), "/storage".into(), "section.storage table.log-usage, section.storage p.empty"),
        ("notifications".into(), "/notifications".into(), "section.notifications p.empty"),
        ("queue".into(), "/queue".into(), "section.queue p.queue-summary:not(:empty)"),
        ("invitation".into(), "/invite".into(), "section.page .banner.error"),
    ];
    for tab in job_tabs() {
        routes.push((format!("job {tab}"), tab_path(&id, &tab), tab_ready(&tab)));
    }
    let mut rows = Vec::new();
    for (name, path, ready) in &routes {
        // Pages behind the sign-in get a new profile with the token copied
        // over, so nothing of the sign-in visit is cached.
        let browser = if name == "sign-in" { Browser::start() } else { signed_in_browser(&server) };
        rows.push(measure(&browser, &server, name, path, ready));
    }
    // Moves inside the console: open the first page, click a link to the
    // second, and count what the second adds.
    let mut moves: Vec<(String, String, &str, String, &str)> = vec![
        (
            "list -> form".into(),
            "/jobs".into(),
            "tbody tr",
            "a[href='/jobs/new']".into(),
            ".job-form button[type=submit]",
        ),
        ("list -> job".into(), "/jobs".into(), "tbody tr", format!("a[href='/jobs/{id}']"), tab_ready("overview")),
    ];
    for tab in job_tabs().into_iter().skip(1) {
        let link = format!("nav.tabs a[href^='/jobs/{id}/{tab}']");
        moves.push((format!("job -> {tab}"), format!("/jobs/{id}"), "nav.tabs", link, tab_ready(&tab)));
    }
    let mut move_rows = Vec::new();
    for (name, from, from_ready, link, ready) in &moves {
        let browser = signed_in_browser(&server);
        browser.goto(&format!("{}{from}", server.base_url));
        browser.find(from_ready);
        std::thread::sleep(std::time::Duration::from_millis(500));
        let before = browser.execute(MEASURE, vec![]).as_array().map_or(0, |f| f.len() - 1);
        browser.execute(WATCH_CONTENT, vec![json!(ready)]);
        let started = browser.execute("return performance.now();", vec![]).as_f64().unwrap_or(0.0);
        let target = browser.find(link);
        browser.click(&target);
        browser.find(ready);
        std::thread::sleep(std::time::Duration::from_millis(500));
        let shown = browser.execute("return window.__contentAt;", vec![]).as_f64().unwrap_or(f64::NAN);
        let files = browser.execute(MEASURE, vec![]);
        // The last entry is the page's own html; the new files come before it.
        let all = files.as_array().cloned().unwrap_or_default();
        let added: Vec<Value> = all[before..all.len() - 1].to_vec();
        let bytes: u64 = added.iter().map(|f| f["bytes"].as_u64().unwrap_or(0)).sum();
        move_rows.push(json!({"move": name, "bytes": bytes, "ms_to_content": shown - started, "files": added}));
    }
    // The form's first use after that move: the contract's rules are a
    // split point fetched when the form is first focused, typed into or
    // submitted, not with the page. What that adds is held to a move's
    // budget too, and "to content" is until the form counts its problems.
    {
        let browser = signed_in_browser(&server);
        browser.goto(&format!("{}/jobs", server.base_url));
        browser.find("tbody tr");
        browser.click(&browser.find("a[href='/jobs/new']"));
        browser.find(".job-form button[type=submit]");
        std::thread::sleep(std::time::Duration::from_millis(500));
        let before = browser.execute(MEASURE, vec![]).as_array().map_or(0, |f| f.len() - 1);
        let counted = ".job-form .status:not(:empty)";
        browser.execute(WATCH_CONTENT, vec![json!(counted)]);
        let started = browser.execute("return performance.now();", vec![]).as_f64().unwrap_or(0.0);
        browser.type_text(&browser.find("#job-name"), "a");
        browser.find(counted);
        std::thread::sleep(std::time::Duration::from_millis(500));
        let shown = browser.execute("return window.__contentAt;", vec![]).as_f64().unwrap_or(f64::NAN);
        let all = browser.execute(MEASURE, vec![]).as_array().cloned().unwrap_or_default();
        let added: Vec<Value> = all[before..all.len() - 1].to_vec();
        let bytes: u64 = added.iter().map(|f| f["bytes"].as_u64().unwrap_or(0)).sum();
        move_rows
            .push(json!({"move": "form, first use", "bytes": bytes, "ms_to_content": shown - started, "files": added}));
    }

    println!("{:<18} {:>10} {:>10} {:>10} {:>10} {:>12}", "page", "wasm", "js", "css+html", "total", "to content");
    let mut over = Vec::new();
    for row in &rows {
        println!(
            "{:<18} {:>10} {:>10} {:>10} {:>10} {:>9.0} ms",
            row["page"].as_str().unwrap(),
            row["wasm"],
            row["js"],
            row["css_html"],
            row["total"],
            row["ms_to_content"].as_f64().unwrap_or(f64::NAN)
        );
        if row["total"].as_u64().unwrap_or(0) > FIRST_LOAD_BUDGET {
            over.push(format!("{} ({} bytes)", row["page"].as_str().unwrap(), row["total"]));
        }
    }
    println!("\n{:<18} {:>10} {:>12}", "move", "added", "to content");
    for row in &move_rows {
        println!(
            "{:<18} {:>10} {:>9.0} ms",
            row["move"].as_str().unwrap(),
            row["bytes"],
            row["ms_to_content"].as_f64().unwrap_or(f64::NAN)
        );
        if row["bytes"].as_u64().unwrap_or(0) > MOVE_BUDGET {
            over.push(format!("{} (+{} bytes)", row["move"].as_str().unwrap(), row["bytes"]));
        }
    }
    let out = jobdeck_e2e::workspace_root().join("target/bench/console_size.json");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    std::fs::write(&out, serde_json::to_string_pretty(&rows).unwrap()).unwrap();
    let moves_out = out.with_file_name("console_moves.json");
    std::fs::write(&moves_out, serde_json::to_string_pretty(&move_rows).unwrap()).unwrap();
    println!("written to {} and {}", out.display(), moves_out.display());
    // The server stops with its handle; exit would skip that.
    drop(server);
    if !over.is_empty() {
        eprintln!(
            "over budget ({} KB a first load, {} KB a move): {}",
            FIRST_LOAD_BUDGET / 1000,
            MOVE_BUDGET / 1000,
            over.join(", ")
        );
        std::process::exit(1);
    }
}

/// Waits until the server sends every console file precompressed. It
/// compresses them in the background after it starts (seconds at brotli's
/// best quality) and compresses on the fly at a lower quality until then,
/// which is not what a visitor of a running server gets. A precompressed
/// answer has a known length; an on-the-fly one is streamed without one.
fn wait_for_precompression(server: &Server) {
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let files: Vec<String> = std::fs::read_dir(jobdeck_e2e::console_dir())
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".wasm") || name.ends_with(".js") || name.ends_with(".bin"))
        .collect();
    for file in files {
        let url = format!("{}/{file}", server.base_url);
        loop {
            let response = agent.get(&url).header("Accept-Encoding", "br").call().unwrap();
            let headers = response.headers();
            if headers.get("content-encoding").is_some_and(|v| v == "br") && headers.get("content-length").is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

/// A fresh Chromium profile holding the admin's token, with nothing cached.
fn signed_in_browser(server: &Server) -> Browser {
    let browser = Browser::start();
    browser.sign_in(server, &server.admin_token);
    let token = browser.execute("return localStorage.getItem('jobdeck.token');", vec![]);
    drop(browser);
    let fresh = Browser::start();
    fresh.goto(&format!("{}/login", server.base_url));
    fresh.execute("localStorage.setItem('jobdeck.token', arguments[0]);", vec![token]);
    fresh
}

fn measure(browser: &Browser, server: &Server, name: &str, path: &str, ready: &str) -> Value {
    browser.goto(&format!("{}{path}", server.base_url));
    browser.execute(WATCH_CONTENT, vec![json!(ready)]);
    browser.find(ready);
    // Let late module loads finish.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let ms_to_content = browser.execute("return window.__contentAt;", vec![]);
    let files = browser.execute(MEASURE, vec![]);
    let (mut wasm, mut js, mut rest) = (0u64, 0u64, 0u64);
    for file in files.as_array().unwrap() {
        let bytes = file["bytes"].as_u64().unwrap_or(0);
        let path = file["path"].as_str().unwrap_or_default();
        // A `.bin` is a pack of modules (scripts/pack-console.mjs).
        if path.ends_with(".wasm") || path.ends_with(".bin") {
            wasm += bytes;
        } else if path.ends_with(".js") {
            js += bytes;
        } else {
            rest += bytes;
        }
    }
    json!({
        "page": name, "path": path, "wasm": wasm, "js": js, "css_html": rest, "total": wasm + js + rest,
        "ms_to_content": ms_to_content, "files": files,
    })
}
