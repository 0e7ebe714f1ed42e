//! People and their access in the console, end to end in Chromium against
//! the real server: an admin invites a teammate from the people page and
//! the link signs them in once, and removes them again; a user makes and
//! revokes personal tokens on their account page (a revoked one stops
//! working at once) and signs out everywhere; an admin sets a quota that
//! holds a member's job in the queue, where its page says why, and the
//! audit log shows who did it; near the disk budget an admin is warned on
//! every page and sets the minimum log retention on the storage page; a
//! member sets up notifications and a failing job of theirs is posted.

use std::time::Duration;

use jobdeck_e2e::{Browser, Server};
use serde_json::{json, Value};

/// The value of the input `css` (what the console set as a property).
fn input_value(browser: &Browser, css: &str) -> String {
    browser.find(css);
    let value = browser.execute("return document.querySelector(arguments[0]).value;", vec![json!(css)]);
    value.as_str().unwrap_or_default().to_string()
}

/// The names in the people page's table, read in one script (rows are
/// redrawn as the list changes, so elements found before may be gone).
fn listed_people(browser: &Browser) -> Vec<String> {
    let names = browser.execute(
        "return [...document.querySelectorAll('table.people th[scope=row]')].map(c => c.textContent);",
        vec![],
    );
    names.as_array().into_iter().flatten().filter_map(|n| n.as_str().map(String::from)).collect()
}

/// Who the server says `token` is, and with what role.
fn who(server: &Server, token: &str) -> (u16, Value) {
    let (status, me) = server.call("GET", "/workspace", token, None);
    (status, json!([me["current_user"], me["current_user_role"]]))
}

#[test]
fn an_admin_invites_a_teammate_in_the_console_and_the_link_signs_them_in_once() {
    let server = Server::start();
    let admin = Browser::start();
    admin.sign_in(&server, &server.admin_token);
    // The People link is offered to admins only.
    admin.click(&admin.find("nav a[href='/people']"));
    admin.wait_for_text("Invite a teammate");
    admin.find("table.people th[scope=row]");
    admin.click(&admin.find("form.invite select option[value=viewer]"));
    admin.type_text(&admin.find("form.invite input"), "vera@example.com");
    admin.click(&admin.find("form.invite button[type=submit]"));
    let link = input_value(&admin, ".new-invitation input");
    assert!(link.starts_with(&format!("{}/invite#code=jdi_", server.base_url)), "{link}");
    admin.wait_for_text("vera@example.com");
    admin.screenshot(&jobdeck_e2e::screenshot_path("people-invitation-made"));

    let vera = Browser::start();
    vera.goto(&link);
    vera.wait_for_text("admin invited you to this workspace as a viewer");
    vera.type_text(&vera.find("input#name"), "../vera");
    vera.click(&vera.find("button[type=submit]"));
    vera.wait_for_text("only letters, digits");
    vera.clear(&vera.find("input#name"));
    vera.type_text(&vera.find("input#name"), "vera");
    vera.click(&vera.find("button[type=submit]"));
    vera.wait_for_text("Welcome, vera. You are signed in as a viewer.");
    let token = input_value(&vera, ".new-token input");
    assert!(vera.text(&vera.find(".new-token pre")).contains(&format!("-t {token} --workspace-url")));
    vera.screenshot(&jobdeck_e2e::screenshot_path("invitation-joined"));
    assert_eq!(who(&server, &token), (200, json!(["vera", "viewer"])));
    vera.click(&vera.find("a.button.primary[href='/jobs']"));
    vera.wait_for_text("Deployments");
    let hidden = vera.execute(
        "return getComputedStyle(document.querySelector(\"a[href='/people']\")).display === 'none' \
         && getComputedStyle(document.querySelector(\"a[href='/jobs/new']\")).display === 'none';",
        vec![],
    );
    assert_eq!(hidden, json!(true), "a viewer is offered neither People nor New job");

    let again = Browser::start();
    again.goto(&link);
    again.wait_for_text("already used, has expired or was withdrawn");
    admin.goto(&format!("{}/people", server.base_url));
    admin.wait_for_text("used by vera");
    // The audit page says who made the invitation and who used it.
    admin.goto(&format!("{}/audit", server.base_url));
    admin.wait_until("the invitation's entries", || {
        let rows = admin.audit_rows();
        let has = |start: &str| rows.iter().any(|r| r.starts_with(start));
        (has("admin|invitation.create|") && has("vera|invitation.redeem|")).then_some(())
    });
    admin.goto(&format!("{}/people", server.base_url));
    admin.wait_for_text("used by vera");

    // Offboarding: the admin removes vera, after reading what it touches.
    admin.click(&admin.find("button.remove-user"));
    admin.wait_for_text("Remove vera?");
    admin.wait_for_text("Revokes every token and console session of theirs at once.");
    admin.screenshot(&jobdeck_e2e::screenshot_path("people-remove-user"));
    admin.click(&admin.find("button.confirm-removal"));
    admin.wait_until("vera's row gone", || (!listed_people(&admin).contains(&"vera".to_string())).then_some(()));
    assert_eq!(who(&server, &token).0, 401, "her token stops at once");
}

#[test]
fn personal_tokens_are_made_and_revoked_on_the_account_page_and_sign_out_everywhere_ends_every_session() {
    let server = Server::start();
    let mona =
        String::from_utf8(server.token_command(&["create", "--user", "mona"]).stdout).unwrap().trim().to_string();
    let browser = Browser::start();
    browser.sign_in(&server, &mona);
    browser.click(&browser.find("a.user[href='/account']"));
    browser.wait_for_text("Signed in as mona, a member of this workspace.");
    browser.wait_for_text("This browser's session ends at");
    browser.type_text(&browser.find("form.make-token input"), "laptop");
    browser.click(&browser.find("form.make-token button[type=submit]"));
    let laptop = input_value(&browser, ".new-token input");
    assert_eq!(who(&server, &laptop), (200, json!(["mona", "member"])));
    browser.wait_for_text("laptop");
    browser.screenshot(&jobdeck_e2e::screenshot_path("account-token-made"));

    // Found and clicked in one script: the table is redrawn when the list
    // reloads, so an element found before may be gone.
    browser.wait_until("the laptop token's Revoke clicked", || {
        let clicked = browser.execute(
            "const row = [...document.querySelectorAll('table.tokens tbody tr')].find(r => r.textContent.includes('laptop')); \
             if (!row) return false; row.querySelector('button').click(); return true;",
            vec![],
        );
        (clicked == json!(true)).then_some(())
    });
    browser
        .wait_until("the revoked token gone from the list", || (!browser.page_text().contains("laptop")).then_some(()));
    assert_eq!(who(&server, &laptop).0, 401, "a revoked token stops working at once");

    // Another browser of mona's, then sign out everywhere from this one.
    let (_, other) = server.call("POST", "/sessions", &mona, Some(&json!({})));
    let other = other["token"].as_str().unwrap().to_string();
    assert_eq!(who(&server, &other).0, 200);
    browser.click(&browser.find("button.sign-out-everywhere"));
    browser.wait_until("the sign-in page", || browser.current_url().contains("/login").then_some(()));
    assert_eq!(who(&server, &other).0, 401, "every console session ended");
    assert_eq!(who(&server, &mona).0, 200, "API tokens stay");
}

#[test]
fn an_admin_hands_a_removed_members_running_job_to_a_teammate() {
    let server = Server::start();
    let token = |user: &str| {
        let out = server.token_command(&["create", "--user", user]);
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let (mona, ann) = (token("mona"), token("ann"));
    let job = json!({"metadata": {"name": "long"}, "spec": {"container": {"command": ["sh", "-c", "sleep 600"]}}});
    let id = server.create_job(&mona, &job);
    server.wait_for_state(&mona, &id, jobdeck_e2e::JobState::Running);

    let admin = Browser::start();
    admin.sign_in(&server, &server.admin_token);
    admin.goto(&format!("{}/people", server.base_url));
    admin.find("table.people th[scope=row]");
    admin.execute(
        "[...document.querySelectorAll('table.people tbody tr')].find(r => r.querySelector('th').textContent === 'mona').querySelector('button.remove-user').click();",
        vec![],
    );
    admin.wait_for_text("Their running jobs: long (Running).");
    admin.click(&admin.find("select.heir option[value=ann]"));
    admin.screenshot(&jobdeck_e2e::screenshot_path("people-hand-over"));
    admin.click(&admin.find("button.confirm-removal"));
    admin.wait_until("mona's row gone", || (!listed_people(&admin).contains(&"mona".to_string())).then_some(()));
    let (status, now) = server.call("GET", &format!("/jobs/{id}"), &ann, None);
    assert_eq!(status, 200, "{now}");
    assert_eq!(
        (now["metadata"]["created_by"].as_str(), now["status"]["state"].as_str()),
        (Some("ann"), Some("Running"))
    );
    assert_eq!(who(&server, &mona).0, 401);
    let (stopped, _) = server.call("PATCH", &format!("/jobs/{id}"), &ann, Some(&json!({"spec": {"stopped": true}})));
    assert_eq!(stopped, 200, "the job is ann's to stop now");
}

/// The cells of the row of `user` in the people page's usage table, read in
/// one script.
fn usage_of(browser: &Browser, user: &str) -> Vec<String> {
    let cells = browser.execute(
        "const row = [...document.querySelectorAll('table.usage tbody tr')].find(r => r.querySelector('th').textContent === arguments[0]); \
         return row ? [...row.querySelectorAll('td')].map(c => c.textContent) : [];",
        vec![json!(user)],
    );
    cells.as_array().into_iter().flatten().filter_map(|c| c.as_str().map(String::from)).collect()
}

#[test]
fn a_quota_an_admin_sets_holds_a_members_job_in_the_queue_with_the_reason_on_its_page() {
    let server = Server::start();
    let out = server.token_command(&["create", "--user", "mona"]);
    let mona = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let long = json!({"metadata": {"name": "long"}, "spec": {"container": {"command": ["sh", "-c", "sleep 600"]}}});
    let first = server.create_job(&mona, &long);
    server.wait_for_state(&mona, &first, jobdeck_e2e::JobState::Running);

    let admin = Browser::start();
    admin.sign_in(&server, &server.admin_token);
    admin.goto(&format!("{}/people", server.base_url));
    admin.wait_for_text("Quotas and usage");
    admin.wait_until("mona's usage", || {
        (usage_of(&admin, "mona").get(2).map(String::as_str) == Some("1")).then_some(())
    });
    admin.click(&admin.find("form.quota-form select option[value='user:mona']"));
    let replicas = admin.find("form.quota-form label:nth-of-type(3) input");
    admin.type_text(&replicas, "1");
    admin.click(&admin.find("form.quota-form button[type=submit]"));
    admin.wait_for_text("Saved the quota of user mona.");
    admin.wait_until("mona's limit shown", || {
        (usage_of(&admin, "mona").get(2).map(String::as_str) == Some("1 of 1")).then_some(())
    });
    admin.screenshot(&jobdeck_e2e::screenshot_path("people-quotas"));

    let second = server
        .create_job(&mona, &json!({"metadata": {"name": "second"}, "spec": {"container": {"command": ["true"]}}}));
    let member = Browser::start();
    member.sign_in(&server, &mona);
    member.goto(&format!("{}/jobs/{second}", server.base_url));
    member.wait_for_text("over quota: mona runs 1 of 1 replicas (quota of user mona); this job needs 1");
    member.screenshot(&jobdeck_e2e::screenshot_path("job-held-by-quota"));

    // Removing the console's quota lets the job start at once.
    admin.click(&admin.find("button[aria-label='Remove the quota of user mona']"));
    server.wait_for_state(&mona, &second, jobdeck_e2e::JobState::Completed);

    // A viewer's attempt to stop mona's job is refused and recorded; a
    // token mona makes and revokes is recorded twice.
    let out = server.token_command(&["create", "--user", "vic", "--role", "viewer"]);
    let vic = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let (refused, _) = server.call("PATCH", &format!("/jobs/{first}"), &vic, Some(&json!({"spec": {"stopped": true}})));
    assert!(refused == 403 || refused == 404, "{refused}");
    let (made, token) = server.call("POST", "/tokens", &mona, Some(&json!({"name": "laptop"})));
    assert_eq!(made, 200, "{token}");
    let token_id = token["info"]["id"].as_i64().expect("a token's id").to_string();
    let (revoked, _) = server.call("DELETE", &format!("/tokens/{token_id}"), &mona, None);
    assert!(revoked == 200 || revoked == 204, "{revoked}");

    // The audit log, linked from the people page, shows who did each of
    // those, from where; its filters narrow it to the quotas, and to what
    // was refused.
    admin.click(&admin.find("a[href='/audit']"));
    admin.wait_for_text("quota.delete");
    let rows = |browser: &Browser| browser.audit_rows();
    let all = rows(&admin);
    let stop_refused = format!("vic|job.update|{first}|refused|");
    let token_made = format!("mona|token.create|{token_id}");
    let token_revoked = format!("mona|token.revoke|{token_id}");
    for wanted in [
        "mona|job.create|",
        "admin|quota.set|user/mona|ok|",
        "admin|quota.delete|user/mona|ok|",
        &stop_refused,
        &token_made,
        &token_revoked,
    ] {
        assert!(all.iter().any(|r| r.starts_with(wanted) && r.ends_with("|127.0.0.1")), "{wanted}: {all:#?}");
    }
    admin.click(&admin.find("form.filters select option[value='quota.']"));
    admin.click(&admin.find("form.filters button[type=submit]"));
    admin.wait_until("only the quotas", || {
        let shown = rows(&admin);
        (shown.len() == 2 && shown.iter().all(|r| r.contains("|quota."))).then_some(())
    });
    admin.screenshot(&jobdeck_e2e::screenshot_path("audit-log"));
    admin.click(&admin.find("form.filters select option[value='']"));
    admin.click(&admin.find("form.filters select option[value=refused]"));
    admin.click(&admin.find("form.filters button[type=submit]"));
    admin.wait_until("only the refusals", || {
        let shown = rows(&admin);
        (!shown.is_empty() && shown.iter().all(|r| r.contains("|refused|"))).then_some(shown)
    });
    assert!(rows(&admin).iter().any(|r| r.starts_with(&stop_refused)), "{:#?}", rows(&admin));
}

/// Near the workspace's disk budget for logs, every page tells an admin, and
/// says what makes room; a member's pages do not. The budget is set, on a
/// second start of the same data directory, so that the job's logs of the
/// first take 85 % of it: past 90 % the server would remove them. The notice
/// leads to the storage page, where the admin sees the job whose logs take
/// the most and changes the minimum log retention; a member may not.
#[test]
fn an_admin_is_warned_near_the_disk_budget_and_sets_the_retention_on_the_storage_page_and_a_member_is_neither() {
    let temp = tempfile::tempdir().unwrap();
    let data_dir = temp.path().join("data");
    let (id, used) = {
        let server = Server::start_api_in(&data_dir, &[]);
        let job = json!({
            "metadata": {"name": "noisy"},
            "spec": {"container": {"image": "busybox", "command": ["/bin/sh", "-c", "head -c 1500000 /dev/urandom | base64"]}}
        });
        let id = server.create_job(&server.admin_token, &job);
        server.wait_for_state(&server.admin_token, &id, jobdeck_api::JobState::Completed);
        // The logs' use is measured after the job ends, on the server's own
        // round: wait for it.
        let used = jobdeck_e2e::wait_for("the job's logs to be measured", Duration::from_secs(60), || {
            let (_, workspace) = server.call("GET", "/workspace", &server.admin_token, None);
            workspace["log_retention"]["used_bytes"].as_i64().filter(|used| *used > 0)
        });
        assert!(used > 1 << 20, "the job's logs measured: {used} bytes");
        (id, used)
    };
    let config = temp.path().join("budget.toml");
    let budget = used * 100 / 85;
    std::fs::write(&config, format!("{}\n[logs]\ndisk_budget = {budget}\n", jobdeck_e2e::TEST_EXECUTOR)).unwrap();
    let server = Server::start_in(&data_dir, &["--config", config.to_str().unwrap()]);

    // A second start prints no sign-in link: the admin makes a token.
    let admin_token = server.token_for("admin");
    let admin = Browser::start();
    admin.sign_in(&server, &admin_token);
    admin.wait_for_text("disk budget (85 %)");
    let notice = admin.text(&admin.find(".standing-notice.note[role=status]"));
    assert!(notice.contains("a shorter minimum log retention makes room"), "{notice}");
    admin.click(&admin.find("nav a[href='/people']"));
    admin.wait_for_text("Invite a teammate");
    assert!(admin.page_text().contains("disk budget (85 %)"), "on the people page too");
    admin.screenshot(&jobdeck_e2e::screenshot_path("people-disk-budget-notice"));

    // The notice leads to the storage page: the job, its size, and when its
    // logs go (a week after it ended, by the config's minimum, later than
    // its archive time of three days).
    admin.click(&admin.find(".standing-notice.note a[href='/storage']"));
    admin.wait_for_text("jobs whose logs take the most");
    let row = || admin.text(&admin.find("table.log-usage tbody tr"));
    let first = row();
    assert!(first.contains(&id) && first.contains("MB"), "{first}");
    assert!(first.contains("by the workspace's minimum log retention"), "{first}");
    assert!(admin.page_text().contains("at least 7 days (the config file's)"), "{}", admin.page_text());

    // Text that is no duration is refused naming the field; nothing changes.
    let field = admin.find("form.minimum-retention input");
    let save = admin.find("form.minimum-retention button[type=submit]");
    admin.clear(&field);
    admin.type_text(&field, "a week");
    admin.click(&save);
    admin.wait_for_text("Minimum log retention: must be a duration");
    let minimum = || server.call("GET", "/workspace", &admin_token, None).1["log_retention"]["minimum_seconds"].clone();
    assert_eq!(minimum(), json!(7 * 86_400));

    // One day: the job's own archive time (three days) now says when.
    admin.clear(&field);
    admin.type_text(&field, "1d");
    admin.click(&save);
    admin.wait_for_text("Saved. Finished jobs' logs are kept at least 1 day.");
    admin.wait_until("the row to name the archive time", || row().contains("by its archive time").then_some(()));
    assert!(admin.page_text().contains("at least 1 day (set in the console)"), "{}", admin.page_text());
    assert_eq!(minimum(), json!(86_400));
    admin.screenshot(&jobdeck_e2e::screenshot_path("storage-page"));

    // Withdrawn: the config's week again.
    admin.click(&admin.find("form.minimum-retention button[type=button]"));
    admin.wait_for_text("The config file's minimum is in force again.");
    admin.wait_until("the row to name the minimum", || row().contains("minimum log retention").then_some(()));
    assert_eq!(minimum(), json!(7 * 86_400));
    // An admin's account page leads there too.
    admin.click(&admin.find("a.user"));
    admin.wait_for_text("Personal API tokens");
    admin.click(&admin.find("p.needs-admin a[href='/storage']"));
    admin.wait_for_text("jobs whose logs take the most");

    // The top bar sets both notices from one answer: once the isolation
    // notice of these process-mode servers shows, the budget's would have.
    let member = Browser::start();
    member.sign_in(&server, &server.token_for("mia"));
    member.wait_for_text("Jobs run as processes of the server's own user");
    assert!(member.try_find(".standing-notice.note").is_none(), "{}", member.page_text());
    let (_, workspace) = server.call("GET", "/workspace", &server.token_for("mia"), None);
    assert!(workspace["log_retention"].get("warning").is_none(), "{workspace}");
    member.goto(&format!("{}/storage", server.base_url));
    member.wait_for_text("needs the admin role");
    assert!(member.try_find("table.log-usage").is_none(), "{}", member.page_text());
}

/// A webhook receiver on loopback: it answers 200 to every request and
/// keeps each body.
struct Receiver {
    url: String,
    bodies: std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
}

impl Receiver {
    fn start() -> Receiver {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = bodies.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(stream);
                let mut length = 0;
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                        break;
                    }
                    if let Some((name, value)) = header.split_once(':') {
                        if name.eq_ignore_ascii_case("content-length") {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                }
                let mut body = vec![0; length];
                if reader.read_exact(&mut body).is_ok() {
                    kept.lock().unwrap().push(serde_json::from_slice(&body).unwrap_or(Value::Null));
                }
                let mut stream = reader.into_inner();
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            }
        });
        Receiver { url, bodies }
    }

    fn events(&self) -> Vec<String> {
        let bodies = self.bodies.lock().unwrap();
        bodies.iter().filter_map(|b| b["event"].as_str().map(String::from)).collect()
    }
}

/// A member sets up a JSON endpoint and a rule on the notifications page,
/// reached from the account page; a job of theirs that fails and prints the
/// rule's pattern is posted to the receiver twice, and the endpoint's
/// history shows both deliveries.
#[test]
fn notifications_are_set_up_on_their_page_and_a_failing_job_is_posted() {
    let server = Server::start_on("127.0.0.1:0", "[notifications]\nallow = [\"127.0.0.1\"]\n", &[], true);
    let receiver = Receiver::start();
    let mona =
        String::from_utf8(server.token_command(&["create", "--user", "mona"]).stdout).unwrap().trim().to_string();
    let browser = Browser::start();
    browser.sign_in(&server, &mona);
    browser.goto(&format!("{}/account", server.base_url));
    browser.click(&browser.find("a[href='/notifications']"));
    browser.wait_for_text("No endpoints yet.");

    // A JSON endpoint: its secret is shown once, its address never again.
    browser.type_text(&browser.find("form.new-endpoint input[maxlength='64']"), "ci");
    browser.type_text(&browser.find("form.new-endpoint input[type=url]"), &receiver.url);
    browser.click(&browser.find("form.new-endpoint button[type=submit]"));
    let secret = input_value(&browser, ".new-secret input");
    assert_eq!(secret.len(), 48 + "whsec_".len(), "{secret}");
    browser.wait_until("the endpoint listed", || browser.page_text().contains("enabled").then_some(()));
    assert!(!browser.page_text().contains("/hook"), "the address is write-only");

    // A rule for failures and a log pattern: the pattern's field appears
    // with its condition, and a pattern the server cannot compile is named.
    browser.click(&browser.find("form.new-rule input[value=failed]"));
    browser.click(&browser.find("form.new-rule input[value=log_match]"));
    browser.type_text(&browser.find("input.log-pattern"), "loss: (nan");
    browser.click(&browser.find("form.new-rule button[type=submit]"));
    browser.wait_for_text("log_pattern: not a regular expression");
    browser.execute(
        "const p = document.querySelector('input.log-pattern'); p.value = ''; p.dispatchEvent(new Event('input'));",
        vec![],
    );
    browser.type_text(&browser.find("input.log-pattern"), "loss: (nan|inf)");
    browser.click(&browser.find("form.new-rule button[type=submit]"));
    browser.wait_for_text("all your jobs: failed, a log line matches, pattern loss: (nan|inf) → ci");
    browser.screenshot(&jobdeck_e2e::screenshot_path("notifications-page"));

    let job = json!({"metadata": {"name": "diverges"}, "spec": {"backoff_limit": 0,
        "container": {"command": ["sh", "-c", "echo 'step 9 loss: nan'; exit 1"]}}});
    let id = server.create_job(&mona, &job);
    server.wait_for_state(&mona, &id, jobdeck_e2e::JobState::Failed);
    let receiver_got = || {
        let events = receiver.events();
        (events.contains(&"failed".to_string()) && events.contains(&"log_match".to_string())).then_some(())
    };
    browser.wait_until("both deliveries at the receiver", receiver_got);
    let bodies = receiver.bodies.lock().unwrap().clone();
    let matched = bodies.iter().find(|b| b["event"] == "log_match").unwrap();
    assert_eq!(matched["job"]["id"], id.as_str());
    assert_eq!(matched["line"], 1, "{matched}");

    browser.click(&browser.find("button.history"));
    browser.wait_for_text("Deliveries to ci, newest first");
    browser.wait_until("the failure in the history", || {
        let text = browser.page_text();
        (text.contains(&format!("failed of {id}: delivered")) && text.contains(&format!("log_match of {id} line 1")))
            .then_some(())
    });
    browser.screenshot(&jobdeck_e2e::screenshot_path("notification-history"));

    // The job page's bell opens the rule form for that job.
    browser.goto(&format!("{}/jobs/{id}", server.base_url));
    browser.click(&browser.find("a.notify"));
    browser.wait_until("the rule's job filled", || (input_value(&browser, "input.rule-job") == id).then_some(()));
    browser.click(&browser.find("form.new-rule input[value=completed]"));
    browser.click(&browser.find("form.new-rule button[type=submit]"));
    browser.wait_for_text(&format!("{id}: completed → ci"));
}
