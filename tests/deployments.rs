//! The deployments list and the job page end to end: the real server, the
//! real built console, Chromium.

use jobdeck_e2e::{screenshot_path, Browser, Server};
use serde_json::{json, Value};

/// Creates a job through the API as the token's user and returns its id.
fn create_job(server: &Server, token: &str, name: &str, extra_metadata: Value) -> String {
    let mut metadata = json!({ "name": name });
    if let (Some(m), Some(extra)) = (metadata.as_object_mut(), extra_metadata.as_object()) {
        m.extend(extra.clone());
    }
    let (status, created) = server.call(
        "POST",
        "/jobs",
        token,
        Some(&json!({
            "metadata": metadata,
            "spec": {"container": {"image": "busybox", "command": ["/bin/sh", "-c", "sleep 600"]}}
        })),
    );
    assert_eq!(status, 200, "{created}");
    created["metadata"]["id"].as_str().unwrap().to_string()
}

#[test]
fn a_filtered_list_link_survives_sign_in() {
    let server = Server::start();
    let train = create_job(&server, &server.admin_token, "train-a", json!({}));
    create_job(&server, &server.admin_token, "eval-b", json!({}));
    let bob = server.token_for("bob");
    create_job(&server, &bob, "train-bob", json!({"visibility": "public"}));

    let browser = Browser::start();
    let link = "/jobs?q=train&creator=admin";
    browser.goto(&format!("{}{link}", server.base_url));
    browser.wait_until("the sign-in page", || browser.current_url().contains("/login?next=").then_some(()));
    browser.type_text(&browser.find("#token"), &server.admin_token);
    browser.click(&browser.find("form button[type=submit]"));
    browser.wait_until("the same filtered list after sign-in", || browser.current_url().ends_with(link).then_some(()));
    browser.find(&format!("tbody a[href='/jobs/{train}']"));
    browser.wait_for_text("Showing 1–1 of 1 jobs");
    let text = browser.page_text();
    assert!(!text.contains("eval-b") && !text.contains("train-bob"), "only the filtered job shows:\n{text}");
    // The controls show the filters the link carries.
    let name_box = browser.execute("return document.querySelector('#filter-text').value;", vec![]);
    assert_eq!(name_box, json!("train"));
    let owner = browser.execute("return document.querySelector('#filter-owner').value;", vec![]);
    assert_eq!(owner, json!("mine"));

    // Changing a filter changes the address, so the new view is a link too.
    browser.execute(
        "const s = document.querySelector('#filter-owner'); s.value = ''; s.dispatchEvent(new Event('change'));",
        vec![],
    );
    browser.wait_until("the address without the owner filter", || {
        browser.current_url().ends_with("/jobs?q=train").then_some(())
    });
    browser.wait_for_text("train-bob");
}

#[test]
fn another_users_private_job_is_not_found_by_url() {
    let server = Server::start();
    let alice = server.token_for("alice");
    let bob = server.token_for("bob");
    let secret = create_job(&server, &alice, "secret-plan", json!({"visibility": "private"}));

    let browser = Browser::start();
    browser.sign_in(&server, &bob);
    browser.goto(&format!("{}/jobs/{secret}/replicas", server.base_url));
    browser.wait_for_text("Job not found");
    let hidden = browser.page_text();
    assert!(!hidden.contains("secret-plan") || hidden.contains(&secret), "only the id from the address shows");

    let missing = format!("{}-nope", secret);
    browser.goto(&format!("{}/jobs/{missing}/replicas", server.base_url));
    browser.wait_for_text("Job not found");
    let absent = browser.page_text();
    assert_eq!(
        hidden.replace(&secret, "<id>"),
        absent.replace(&missing, "<id>"),
        "a hidden job and a missing one read the same"
    );

    // The owner sees it.
    browser.sign_in(&server, &alice);
    browser.goto(&format!("{}/jobs/{secret}", server.base_url));
    browser.wait_for_text("secret-plan");
    browser.wait_for_text("private (creator only)");
}

#[test]
fn screenshots_of_the_list_and_the_job_page_in_both_themes_and_sizes() {
    let server = Server::start();
    let ids: Vec<String> = ["train-llama", "eval-suite", "preprocess"]
        .iter()
        .map(|name| create_job(&server, &server.admin_token, name, json!({"labels": {"team": "ml"}})))
        .collect();
    for (width, height, size) in [(1280, 900, "1280"), (390, 844, "390")] {
        let browser = Browser::start();
        browser.emulate_viewport(width, height);
        browser.sign_in(&server, &server.admin_token);
        for scheme in ["light", "dark"] {
            browser.emulate_color_scheme(scheme);
            browser.goto(&format!("{}/jobs", server.base_url));
            browser.wait_for_text("train-llama");
            browser.screenshot(&screenshot_path(&format!("list-{size}-{scheme}")));
            browser.goto(&format!("{}/jobs/{}", server.base_url, ids[0]));
            browser.wait_for_text("Specification");
            browser.screenshot(&screenshot_path(&format!("job-{size}-{scheme}")));
        }
        let blocked: Vec<String> = browser
            .console_messages()
            .into_iter()
            .filter(|m| m.contains("Content Security Policy") || m.contains("Refused"))
            .collect();
        assert!(blocked.is_empty(), "the page broke its CSP: {blocked:?}");
    }
}
