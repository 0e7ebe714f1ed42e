//! The walking skeleton end to end: a job created through the API shows up in
//! the deployments list of the real console, reached through the sign-in link
//! the server printed.

use jobdeck_e2e::{screenshot_path, Browser, Server};
use serde_json::json;

#[test]
fn a_job_created_through_the_api_appears_in_the_deployments_list() {
    let server = Server::start();
    let (status, created) = server.call(
        "POST",
        "/jobs",
        &server.admin_token,
        Some(&json!({
            "metadata": {"name": "hello-e2e"},
            "spec": {"container": {"image": "busybox", "command": ["/bin/sh", "-c", "echo hi"]}}
        })),
    );
    assert_eq!(status, 200, "{created}");
    let id = created["metadata"]["id"].as_str().unwrap().to_string();

    let browser = Browser::start();
    browser.goto(&server.sign_in_link);
    browser.wait_for_text("hello-e2e");
    // The token left the address bar once it was stored.
    let url = browser.current_url();
    assert!(!url.contains("token="), "{url}");
    assert!(url.ends_with("/jobs"), "{url}");
    let link = browser.find(&format!("a[href='/jobs/{id}']"));
    assert_eq!(browser.text(&link), "hello-e2e");
    assert!(browser.page_text().contains("admin"), "the top bar names the signed-in user");
    // These servers run jobs as processes: every page says so.
    browser.wait_for_text("Jobs run as processes of the server's own user");
    let notice = browser.text(&browser.find(".standing-notice[role=status]"));
    assert!(notice.contains("other users' secrets"), "{notice}");
    browser.screenshot(&screenshot_path("skeleton-deployments"));
    // The browser keeps a session made from the link's token, not the
    // token itself, which expires within a day.
    let kept = browser.execute("return localStorage.getItem('jobdeck.token');", vec![]);
    let session = kept.as_str().expect("the browser keeps a token").to_string();
    assert!(session.starts_with("jd_") && session != server.admin_token, "{session}");
    assert_eq!(server.call("GET", "/jobs", &session, None).0, 200);

    // Following the link routes inside the app to the job page.
    browser.execute("window.__same_document = true;", vec![]);
    browser.click(&link);
    browser.wait_for_text("busybox");
    assert_eq!(
        browser.execute("return window.__same_document === true;", vec![]),
        serde_json::Value::Bool(true),
        "the click did not reload the page"
    );

    // A deep link opened cold lands on that page.
    browser.goto(&format!("{}/jobs/{id}", server.base_url));
    browser.wait_for_text("busybox");

    // Signing out revokes the session on the server: a copy of it no
    // longer signs in. The link's own token is left alone.
    browser.click(&browser.find(".top-bar .who button"));
    browser.wait_until("the sign-in page", || browser.current_url().contains("/login").then_some(()));
    let (status, body) = server.call("GET", "/jobs", &session, None);
    assert_eq!(status, 401, "the session outlived sign-out: {body}");
    assert_eq!(server.call("GET", "/jobs", &server.admin_token, None).0, 200);
}

#[test]
fn a_deep_link_opened_signed_out_returns_there_after_sign_in() {
    let server = Server::start();
    let browser = Browser::start();
    browser.goto(&format!("{}/jobs?page=1", server.base_url));
    browser.wait_until("the sign-in page", || browser.current_url().contains("/login?next=").then_some(()));
    let input = browser.find("#token");
    browser.type_text(&input, &server.admin_token);
    browser.click(&browser.find("form button[type=submit]"));
    browser.wait_until("the list after sign-in", || browser.current_url().ends_with("/jobs?page=1").then_some(()));
    browser.wait_for_text("No jobs yet.");
}

#[test]
fn a_wrong_token_is_refused_with_a_clear_message() {
    let server = Server::start();
    let browser = Browser::start();
    browser.goto(&format!("{}/login", server.base_url));
    let input = browser.find("#token");
    browser.type_text(&input, "jd_wrong");
    browser.click(&browser.find("form button[type=submit]"));
    browser.wait_for_text("This token is not valid");
}

/// The sign-in page shows Jobdeck's own sentence for a problem code it
/// knows, and nothing for any other text: a link cannot put someone's
/// words on the page.
#[test]
fn the_sign_in_page_says_only_its_own_words_about_a_problem() {
    let server = Server::start();
    let browser = Browser::start();
    browser.goto(&format!("{}/login?problem=expired", server.base_url));
    browser.wait_for_text("This sign-in expired or was already used. Start again.");
    let planted = "Your account is locked. Call +1 555 0100 now";
    browser.goto(&format!(
        "{}/login?problem=Your%20account%20is%20locked.%20Call%20%2B1%20555%200100%20now",
        server.base_url
    ));
    browser.find("#token");
    let text = browser.page_text();
    assert!(!text.contains("555") && !text.contains("locked"), "{planted:?} appeared: {text}");
    assert!(!text.contains("expired"), "no stale sentence either: {text}");
}

/// A page opened cold downloads the modules it needs beyond the core in one
/// pack, and a move to another page the modules that page adds in another
/// (scripts/pack-console.mjs): modules compress better together than one by
/// one. No module comes on its own on these two steps.
#[test]
fn a_page_and_the_next_download_their_modules_in_packs() {
    let server = Server::start();
    let id = echo_job(&server, "packed");
    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    browser.goto(&format!("{}/jobs", server.base_url));
    browser.click(&browser.find(&format!("a[href='/jobs/{id}']")));
    browser.wait_until("the job page", || browser.try_find(".job-head").map(|_| ()));
    browser.wait_for_text("busybox");
    let (packs, alone) = downloads(&browser);
    assert_eq!(packs.len(), 2, "one pack for the list, one for the job page: {packs:?}");
    assert!(alone.is_empty(), "modules downloaded on their own: {alone:?}");

    // A link to a job's logs opened cold: the job page and its logs tab in
    // one pack.
    browser.goto(&format!("{}/jobs/{id}/logs", server.base_url));
    browser.wait_until("the log viewer", || browser.try_find(".log-viewer").map(|_| ()));
    let (packs, alone) = downloads(&browser);
    assert_eq!(packs.len(), 1, "the job page and the logs tab together: {packs:?}");
    assert!(packs[0].contains("and"), "{packs:?}");
    assert!(alone.is_empty(), "modules downloaded on their own: {alone:?}");
}

/// A pack that does not come (here: missing, as behind a proxy that refuses
/// the files) costs nothing but its savings: the modules come one by one.
#[test]
fn pages_load_their_modules_one_by_one_when_packs_do_not_come() {
    let console = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(jobdeck_e2e::console_dir()).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        // Files only: a build under way keeps its staging folder in there.
        if entry.file_type().unwrap().is_file() && !(name.starts_with("pack") && name.contains(".bin")) {
            std::fs::copy(entry.path(), console.path().join(&name)).unwrap();
        }
    }
    let server = Server::start_with_console(console.path());
    echo_job(&server, "unpacked");
    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    browser.goto(&format!("{}/jobs", server.base_url));
    browser.wait_for_text("unpacked");
    let (packs, alone) = downloads(&browser);
    assert_eq!(packs.len(), 1, "the list's pack was asked for: {packs:?}");
    assert!(alone.len() > 1, "then its modules one by one: {alone:?}");
}

/// A browser that holds the core module gets each pack compressed against
/// it (RFC 9842): what a pack cost on the wire is the build's dcb body
/// (`FILE.dcb`, crates/precompress), smaller than the pack's brotli.
#[test]
fn packs_come_compressed_against_the_core_module() {
    let server = Server::start();
    echo_job(&server, "dictionary");
    let browser = Browser::start();
    // Signing in opens the sign-in page cold, then the list in the same
    // document: two packs, each after the core.
    browser.sign_in(&server, &server.admin_token);
    browser.wait_for_text("dictionary");
    let sizes = browser.execute(
        "return performance.getEntriesByType('resource')
           .map(e => [new URL(e.name).pathname, e.encodedBodySize])
           .filter(([path]) => path.startsWith('/pack'));",
        vec![],
    );
    let sizes = sizes.as_array().unwrap();
    assert_eq!(sizes.len(), 2, "the sign-in page's pack and the list's: {sizes:?}");
    for entry in sizes {
        let path = entry[0].as_str().unwrap();
        let on_the_wire = entry[1].as_u64().unwrap();
        let file_size = |suffix: &str| {
            let file = jobdeck_e2e::console_dir().join(format!("{}{suffix}", path.trim_start_matches('/')));
            std::fs::metadata(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display())).len()
        };
        assert_eq!(on_the_wire, file_size(".dcb"), "{path} came as its dcb body");
        assert!(on_the_wire < file_size(".br"), "{path}: the dcb body is smaller than brotli alone");
    }
}

/// A page whose modules cannot be downloaded (a lost connection) says so
/// where the page would be, and "Try again" brings it once they can. The
/// console keeps answering in between: the top bar still leads back to a
/// page it holds.
#[test]
fn a_page_that_could_not_be_downloaded_can_be_tried_again() {
    let server = Server::start();
    echo_job(&server, "offline");
    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    browser.wait_for_text("offline");
    // From here on no part of the console downloads.
    browser.block_urls(&["*.bin", "*.wasm"]);
    browser.click(&browser.find("nav a[href='/jobs/new']"));
    browser.wait_for_text("This part of the console could not be downloaded.");
    assert!(browser.try_find("#job-name").is_none(), "no form without its module");

    browser.click(&browser.find("nav a[href='/jobs']"));
    browser.wait_for_text("offline");
    let page = browser.text(&browser.find("main"));
    assert!(!page.contains("could not be downloaded"), "the list, its module already in, is whole: {page}");

    browser.click(&browser.find("nav a[href='/jobs/new']"));
    browser.wait_for_text("This part of the console could not be downloaded.");
    browser.block_urls(&[]);
    browser.click(&browser.find("[role=alert] button"));
    browser.wait_until("the form", || browser.try_find("#job-name").map(|_| ()));
    let page = browser.text(&browser.find("main"));
    assert!(!page.contains("could not be downloaded"), "the note is gone with the form: {page}");
}

/// A part of the console answered with an error (a proxy's 503 while the
/// server restarts) fails like a lost connection, and "Try again" downloads
/// it afresh once answers are good again, rather than reading the spent
/// error answer a second time.
#[test]
fn a_part_answered_with_an_error_can_be_tried_again() {
    let server = Server::start();
    echo_job(&server, "proxied");
    let browser = Browser::start();
    browser.sign_in(&server, &server.admin_token);
    browser.wait_for_text("proxied");
    // The page's own fetch answers what a proxy in front of the server
    // would: 503 for every module and pack.
    browser.execute(
        "window.__fetch = window.fetch;
         window.fetch = (url, init) => /\\.(wasm|bin)$/.test(new URL(url, location.href).pathname)
             ? Promise.resolve(new Response('busy', {status: 503}))
             : window.__fetch(url, init);",
        vec![],
    );
    browser.click(&browser.find("nav a[href='/jobs/new']"));
    browser.wait_for_text("This part of the console could not be downloaded.");
    browser.screenshot(&screenshot_path("skeleton-part-answered-503"));
    browser.execute("window.fetch = window.__fetch;", vec![]);
    browser.click(&browser.find("[role=alert] button"));
    browser.wait_until("the form", || browser.try_find("#job-name").map(|_| ()));
}

/// Creates a job that prints one line; returns its id.
fn echo_job(server: &Server, name: &str) -> String {
    let job = json!({
        "metadata": {"name": name},
        "spec": {"container": {"image": "busybox", "command": ["/bin/sh", "-c", "echo hi"]}}
    });
    server.create_job(&server.admin_token, &job)
}

/// The packs and the modules on their own (the core aside) this document
/// downloaded.
fn downloads(browser: &Browser) -> (Vec<String>, Vec<String>) {
    let loaded = browser.execute(
        "return performance.getEntriesByType('resource').map(e => new URL(e.name).pathname)
           .filter(p => p.endsWith('.wasm') || p.endsWith('.bin'));",
        vec![],
    );
    let loaded: Vec<String> = loaded.as_array().unwrap().iter().filter_map(|p| Some(p.as_str()?.to_string())).collect();
    let packs = loaded.iter().filter(|p| p.starts_with("/pack") && p.ends_with(".bin")).cloned().collect();
    let alone = loaded.into_iter().filter(|p| p.ends_with(".wasm") && !p.ends_with("_bg.wasm")).collect();
    (packs, alone)
}
