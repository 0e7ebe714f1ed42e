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

use jobdeck_e2e::{Browser, Server};
use serde_json::{json, Value};

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
        let browser = Browser::start();
        if name != "sign-in" {
            browser.sign_in(&server, &server.admin_token);
            // A new profile for the page itself, with the token copied over,
            // so nothing of the sign-in visit is cached.
            let token = browser.execute("return localStorage.getItem('jobdeck.token');", vec![]);
            drop(browser);
            let fresh = Browser::start();
            fresh.goto(&format!("{}/login", server.base_url));
            fresh.execute("localStorage.setItem('jobdeck.token', arguments[0]);", vec![token]);
            rows.push(measure(&fresh, &server, name, &path, ready));
        } else {
            rows.push(measure(&browser, &server, name, &path, ready));
        }
    }
    println!("{:<18} {:>10} {:>10} {:>10} {:>10}", "page", "wasm", "js", "css+html", "total");
    for row in &rows {
        println!(
            "{:<18} {:>10} {:>10} {:>10} {:>10}",
            row["page"].as_str().unwrap(),
            row["wasm"],
            row["js"],
            row["css_html"],
            row["total"]
        );
    }
    let out = jobdeck_e2e::workspace_root().join("target/bench/console_size.json");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    std::fs::write(&out, serde_json::to_string_pretty(&rows).unwrap()).unwrap();
    println!("written to {}", out.display());
}

fn measure(browser: &Browser, server: &Server, name: &str, path: &str, ready: &str) -> Value {
    browser.goto(&format!("{}{path}", server.base_url));
    browser.find(ready);
    // Let late module loads finish.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let files = browser.execute(MEASURE, vec![]);
    let (mut wasm, mut js, mut rest) = (0u64, 0u64, 0u64);
    for file in files.as_array().unwrap() {
        let bytes = file["bytes"].as_u64().unwrap_or(0);
        let path = file["path"].as_str().unwrap_or_default();
        if path.ends_with(".wasm") {
            wasm += bytes;
        } else if path.ends_with(".js") {
            js += bytes;
        } else {
            rest += bytes;
        }
    }
    json!({"page": name, "path": path, "wasm": wasm, "js": js, "css_html": rest, "total": wasm + js + rest, "files": files})
}
