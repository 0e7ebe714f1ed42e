//! Benchmark: what the browser downloads to show each page of the console
//! the first time, with nothing cached.
//!
//! `bench/console-size.sh` (or `cargo bench -p jobdeck-e2e --bench
//! console_size` after building the console and the server). For each route
//! a fresh Chromium profile opens the page and waits until it shows; then the
//! page's own resource timings give the bytes of every console file it
//! loaded (`encodedBodySize`: the body as sent, brotli here), API answers
//! left out. The console is split into a core and one module per page
//! (scripts/split-console.sh), so each route loads a different set.
//!
//! It also measures, per page, the time from navigation to content (cold,
//! on loopback: the page's own clock at the moment an observer sees the
//! content), and what moving inside the console from one page to another
//! downloads on top of the first page, and what the create-job form's first
//! use downloads on top of that (its rules, fetched then). It exits non-zero
//! when a first load is over 150 KB, or a move or that first use over 40 KB
//! (issue 17's budgets).

use jobdeck_e2e::{Browser, Server};
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

fn main() {
    let server = Server::start();
    let (_, job) = server.call(
        "POST",
        "/jobs",
        &server.admin_token,
        Some(&json!({"metadata": {"name": "sized"}, "spec": {"container": {"image": "busybox", "command": ["echo", "hi"]}}})),
    );
    let id = job["metadata"]["id"].as_str().unwrap().to_string();
    wait_for_precompression(&server);
    server.wait_for_state(&server.admin_token, &id, "Completed");
    let routes: [(&str, String, &str); 6] = [
        ("sign-in", "/login".into(), "form button[type=submit]"),
        ("deployments list", "/jobs".into(), "tbody tr"),
        ("create-job form", "/jobs/new".into(), ".job-form button[type=submit]"),
        ("job overview", format!("/jobs/{id}"), "nav.tabs"),
        ("job logs", format!("/jobs/{id}/logs?replica={id}-0-0"), ".log-rows .log-line"),
        ("job metrics", format!("/jobs/{id}/metrics"), "section.replica-metrics, p.empty"),
    ];
    let mut rows = Vec::new();
    for (name, path, ready) in routes {
        // Pages behind the sign-in get a new profile with the token copied
        // over, so nothing of the sign-in visit is cached.
        let browser = if name == "sign-in" { Browser::start() } else { signed_in_browser(&server) };
        rows.push(measure(&browser, &server, name, &path, ready));
    }
    // Moves inside the console: open the first page, click a link to the
    // second, and count what the second adds.
    let moves: [(&str, String, &str, String, &str); 4] = [
        ("list -> form", "/jobs".into(), "tbody tr", "a[href='/jobs/new']".into(), ".job-form button[type=submit]"),
        ("list -> job", "/jobs".into(), "tbody tr", format!("a[href='/jobs/{id}']"), "nav.tabs"),
        (
            "job -> logs",
            format!("/jobs/{id}"),
            "nav.tabs",
            format!("nav.tabs a[href^='/jobs/{id}/logs']"),
            ".log-rows .log-line",
        ),
        (
            "job -> metrics",
            format!("/jobs/{id}"),
            "nav.tabs",
            format!("nav.tabs a[href='/jobs/{id}/metrics']"),
            "section.replica-metrics, p.empty",
        ),
    ];
    let mut move_rows = Vec::new();
    for (name, from, from_ready, link, ready) in moves {
        let browser = signed_in_browser(&server);
        browser.goto(&format!("{}{from}", server.base_url));
        browser.find(from_ready);
        std::thread::sleep(std::time::Duration::from_millis(500));
        let before = browser.execute(MEASURE, vec![]).as_array().map_or(0, |f| f.len() - 1);
        browser.execute(WATCH_CONTENT, vec![json!(ready)]);
        let started = browser.execute("return performance.now();", vec![]).as_f64().unwrap_or(0.0);
        let target = browser.find(&link);
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
