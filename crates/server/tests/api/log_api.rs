//! The log endpoint beyond Lepton's plain stream: line ranges, long-poll
//! follow, search, download, and who may read them — against real replica
//! processes and the real log store.

use crate::common;

use axum::http::{header, Method, StatusCode};
use common::{sh_job, small_cluster, TestApp, PATIENCE};
use serde_json::{json, Value};

/// A completed job whose log has `lines` lines `line 1` … plus four special
/// ones at the end (the last from standard error: lines of the two streams
/// are stored in the order they are read, so it waits before writing it).
async fn finished_log(app: &TestApp, token: &str, name: &str, lines: u32, private: bool) -> String {
    let script = format!(
        "seq 1 {lines} | sed 's/^/line /'; printf '\\033[31mred\\033[0m\\n'; echo '<script>alert(1)</script>'; echo 'Needle in CAPS'; sleep 0.5; echo 'to stderr' >&2"
    );
    let mut job = sh_job(name, &script);
    if private {
        job["metadata"]["visibility"] = json!("private");
    }
    let id = app.create_job(token, &job).await;
    app.wait_until("the job to complete", || {
        let (app, token, id) = (app, token.to_string(), id.clone());
        async move {
            let res = app.call(Method::GET, &format!("/api/v2/jobs/{id}"), &token, None).await;
            res.json()["status"]["state"] == "Completed"
        }
    })
    .await;
    id
}

fn texts(range: &Value) -> Vec<String> {
    range["lines"].as_array().unwrap().iter().map(|l| l["text"].as_str().unwrap().to_string()).collect()
}

fn numbers(range: &Value) -> Vec<u64> {
    range["lines"].as_array().unwrap().iter().map(|l| l["line"].as_u64().unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ranges_are_read_by_line_number_with_the_total() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let id = finished_log(&app, &app.admin_token, "ranges", 30_000, false).await;
    let log = |query: String| {
        let (app, id) = (&app, id.clone());
        async move { app.get(&format!("/api/v2/jobs/{id}/replicas/{id}-0-0/log?{query}")).await }
    };

    let res = log("from=12345&to=12347".into()).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    assert_eq!(res.headers[header::CONTENT_TYPE], "application/json");
    let range = res.json();
    assert_eq!(range["total_lines"], 30_004);
    assert_eq!(range["ended"], true);
    assert_eq!(texts(&range), ["line 12345", "line 12346", "line 12347"]);
    assert_eq!(numbers(&range), [12345, 12346, 12347]);
    assert!(range["lines"][0]["time"].as_i64().unwrap() > 1_600_000_000_000);

    // The special lines keep their bytes: colour codes, markup, the stream.
    let end = log("from=30001&to=35000".into()).await.json();
    assert_eq!(texts(&end), ["\u{1b}[31mred\u{1b}[0m", "<script>alert(1)</script>", "Needle in CAPS", "to stderr"]);
    assert_eq!(end["lines"][3]["stderr"], true);
    assert!(end["lines"][0].get("stderr").is_none(), "stdout lines leave the flag out");

    assert_eq!(numbers(&log("tail=2".into()).await.json()), [30_003, 30_004]);
    assert_eq!(numbers(&log("from=29999".into()).await.json()).len(), 6, "from alone reads to the end");
    assert_eq!(numbers(&log("from=5".into()).await.json()).len(), 1_000, "from alone reads 1000 lines");
    let past = log("from=40000".into()).await.json();
    assert_eq!((past["total_lines"].as_u64(), past["lines"].as_array().map(Vec::len)), (Some(30_004), Some(0)));
    let count_only = log("from=1&to=0".into()).await.json();
    assert_eq!(
        (count_only["total_lines"].as_u64(), count_only["lines"].as_array().map(Vec::len)),
        (Some(30_004), Some(0))
    );

    for (query, message) in [
        ("from=0", "from must be"),
        ("from=1&to=9000", "at most 5000 lines"),
        ("from=1&follow=true", "cannot be combined"),
    ] {
        let res = log(query.into()).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{query}");
        assert!(res.json()["message"].as_str().unwrap().contains(message), "{query}: {}", res.text());
    }

    // The plain stream is unchanged for Lepton clients.
    let plain = app.log(&id, &format!("{id}-0-0")).await;
    assert!(plain.starts_with("line 1\nline 2\n"));
    assert!(plain.ends_with("<script>alert(1)</script>\nNeedle in CAPS\nto stderr\n"));
}

/// 100 lines of 50,000 bytes are 5 MB: a range or a `/logs` query asking
/// for all of them gets the lines up to the one that reaches the 2 MiB
/// bound, and the next request from the line after those continues.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_are_bounded_in_bytes_and_continue_where_they_stopped() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let script = "i=0; while [ $i -lt 100 ]; do head -c 50000 /dev/zero | tr '\\0' x; echo; i=$((i+1)); done";
    let id = app.create_job(&app.admin_token, &sh_job("wide", script)).await;
    app.wait_until("the job to complete", || {
        let (app, id) = (&app, id.clone());
        async move { app.get(&format!("/api/v2/jobs/{id}")).await.json()["status"]["state"] == "Completed" }
    })
    .await;
    let log = |query: &str| {
        let (app, uri) = (&app, format!("/api/v2/jobs/{id}/replicas/{id}-0-0/log?{query}"));
        async move { app.get(&uri).await.json() }
    };
    // 2 MiB / 50,000 bytes: the 42nd line reaches the bound.
    let first = log("from=1&to=100").await;
    assert_eq!(first["total_lines"], 100);
    assert_eq!(numbers(&first), (1..=42).collect::<Vec<u64>>());
    assert_eq!(texts(&first)[41].len(), 50_000);
    assert_eq!(numbers(&log("from=43&to=100").await), (43..=84).collect::<Vec<u64>>());
    assert_eq!(numbers(&log("tail=100").await), (59..=100).collect::<Vec<u64>>(), "a tail keeps the last lines");

    let query = app.get(&format!("/api/v2/logs?job={id}&limit=100&direction=forward")).await;
    assert_eq!(query.status, StatusCode::OK, "{}", query.text());
    let values = query.json()["data"]["result"][0]["values"].as_array().unwrap().len();
    assert_eq!(values, 42, "Lepton's /logs is bounded the same way");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn searches_return_matching_line_numbers_over_the_whole_log() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let id = finished_log(&app, &app.admin_token, "search", 20_000, false).await;
    let search = |query: &str| {
        let (app, id, query) = (&app, id.clone(), query.to_string());
        async move { app.get(&format!("/api/v2/jobs/{id}/replicas/{id}-0-0/log?{query}")).await }
    };
    let found = search("search=line%2019999").await.json();
    assert_eq!(found["matches"], json!([19999]));
    assert_eq!(found["total_lines"], 20_004);
    assert!(found.get("truncated").is_none());

    assert_eq!(search("search=needle").await.json()["matches"], json!([]));
    assert_eq!(search("search=needle&ignore_case=true").await.json()["matches"], json!([20_003]));
    // A literal search does not read its text as a pattern.
    assert_eq!(search("search=line%201.000").await.json()["matches"], json!([]));
    assert_eq!(
        search("search=%5Eline%201.000%24&regex=true").await.json()["matches"],
        json!([10000, 11000, 12000, 13000, 14000, 15000, 16000, 17000, 18000, 19000])
    );
    assert_eq!(search("search=%3Cscript%3E").await.json()["matches"], json!([20_002]));

    let limited = search("search=line&limit=3").await.json();
    assert_eq!((limited["matches"].clone(), limited["truncated"].clone()), (json!([1, 2, 3]), json!(true)));

    let bad = search("search=(unclosed&regex=true").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(
        bad.json()["message"].as_str().unwrap().starts_with("search is not a valid regular expression"),
        "{}",
        bad.text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn downloads_are_the_whole_log_as_a_named_file() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let id = finished_log(&app, &app.admin_token, "download", 100, false).await;
    let res = app.get(&format!("/api/v2/jobs/{id}/replicas/{id}-0-0/log?download=true")).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.headers[header::CONTENT_DISPOSITION], format!("attachment; filename=\"{id}-0-0.log\"").as_str());
    assert_eq!(res.headers[header::CONTENT_TYPE], "text/plain; charset=utf-8");
    assert_eq!(res.headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
    assert_eq!(res.text(), app.log(&id, &format!("{id}-0-0")).await);
    let stamped =
        app.get(&format!("/api/v2/jobs/{id}/replicas/{id}-0-0/log?download=true&timestamps=true")).await.text();
    let first = stamped.lines().next().unwrap();
    assert!(first.ends_with("Z line 1") && first.starts_with("20"), "{first}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_range_returns_as_soon_as_new_lines_are_written() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let id = app
        .create_job(
            &app.admin_token,
            &sh_job(
                "slow",
                &format!("echo first; {}; echo second; {}; echo third", app.gate("second").0, app.gate("third").0),
            ),
        )
        .await;
    let path = format!("/api/v2/jobs/{id}/replicas/{id}-0-0/log");
    app.wait_until("the first line", || {
        let (app, path) = (&app, path.clone());
        async move { app.get(&format!("{path}?from=1")).await.json()["total_lines"] == 1 }
    })
    .await;
    // The request may wait up to 30 s (the longest allowed); the line it
    // waits for is written once it is sent, so an answer with the line means
    // the wait ended when the line came.
    let waiting = format!("{path}?from=2&wait=30");
    let (next, ()) = tokio::join!(app.get(&waiting), async {
        tokio::task::yield_now().await;
        std::fs::write(app.gate("second").1, "").unwrap();
    });
    let next = next.json();
    assert_eq!(texts(&next), ["second"], "{next}");
    assert_eq!(next["ended"], false);
    // Once the attempt ended, waiting past the end answers at once instead of
    // holding the request for its 30 s.
    std::fs::write(app.gate("third").1, "").unwrap();
    app.wait_state(&id, "Completed").await;
    let last = tokio::time::timeout(PATIENCE, app.get(&format!("{path}?from=4&wait=30"))).await;
    let last = last.expect("an ended attempt answers without waiting").json();
    assert_eq!((last["ended"].clone(), last["total_lines"].clone()), (json!(true), json!(3)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_logs_ranges_searches_downloads_and_analyses_are_the_creators_only() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let alice = app.token_for("alice").await;
    let bob = app.token_for("bob").await;
    let id = finished_log(&app, &alice, "hidden", 10, true).await;
    let paths = [
        format!("/api/v2/jobs/{id}/replicas/{id}-0-0/log?from=1&to=5"),
        format!("/api/v2/jobs/{id}/replicas/{id}-0-0/log?tail=5"),
        format!("/api/v2/jobs/{id}/replicas/{id}-0-0/log?search=line"),
        format!("/api/v2/jobs/{id}/replicas/{id}-0-0/log?download=true"),
        format!("/api/v2/jobs/{id}/failure-analysis"),
    ];
    for path in &paths {
        let own = app.call(Method::GET, path, &alice, None).await;
        assert_eq!(own.status, StatusCode::OK, "{path}: {}", own.text());
        let other = app.call(Method::GET, path, &bob, None).await;
        let admin = app.call(Method::GET, path, &app.admin_token, None).await;
        let missing = app.call(Method::GET, &path.replace(&id, "nope-12345"), &bob, None).await;
        for res in [&other, &admin, &missing] {
            assert_eq!(res.status, StatusCode::NOT_FOUND, "{path}");
            assert_eq!(res.json()["code"], "not_found");
        }
        // Hidden and missing read the same, apart from the id they name.
        assert_eq!(other.text().replace(&id, "X"), missing.text().replace("nope-12345", "X"), "{path}");
        let anonymous = app.request(Method::GET, path, None, None).await;
        assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    }
    // A replica that does not exist is a 404 as well, for every form.
    let res = app.call(Method::GET, &format!("/api/v2/jobs/{id}/replicas/{id}-0-7/log?from=1"), &alice, None).await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
}

/// Opens a log follow as `token` and returns its answer with the body
/// unread, so the follow stays open while the test holds it.
async fn open_follow(app: &TestApp, path: &str, token: &str) -> axum::response::Response {
    use tower::ServiceExt;
    let request = axum::http::Request::builder()
        .uri(format!("{path}?follow=true"))
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(axum::body::Body::empty())
        .unwrap();
    app.router.clone().oneshot(request).await.unwrap()
}

/// One user may hold `limits.log_followers_per_user` follows and
/// `limits.requests_per_user` requests at once; past either, a 429 names
/// the bound, other users are not affected, and closing a follow makes room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_holds_a_bounded_number_of_follows_and_requests() {
    let app = TestApp::with_config(|config| {
        small_cluster(2.0)(config);
        config.limits.log_followers_per_user = 2;
        config.limits.requests_per_user = 2;
    })
    .await;
    let (gate, open) = app.gate("end");
    let id = app.create_job(&app.admin_token, &sh_job("followed", &format!("echo up; {gate}"))).await;
    app.wait_state(&id, "Running").await;
    let path = format!("/api/v2/jobs/{id}/replicas/{id}-0-0/log");
    let alice = app.token_for("alice").await;

    let first = open_follow(&app, &path, &alice).await;
    let second = open_follow(&app, &path, &alice).await;
    assert_eq!((first.status(), second.status()), (StatusCode::OK, StatusCode::OK));
    // Two follows are two requests in flight: a third request is refused.
    let refused = app.call(Method::GET, "/api/v2/jobs", &alice, None).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS, "{}", refused.text());
    assert!(refused.text().contains("limits.requests_per_user"), "{}", refused.text());
    assert_eq!(app.get("/api/v2/jobs").await.status, StatusCode::OK, "the admin has bounds of its own");
    drop(first);
    assert_eq!(app.call(Method::GET, "/api/v2/jobs", &alice, None).await.status, StatusCode::OK);

    // With room for requests, the follower bound is what refuses.
    let app_followers = TestApp::with_config(|config| {
        small_cluster(2.0)(config);
        config.limits.log_followers_per_user = 1;
    })
    .await;
    let (gate, open_too) = app_followers.gate("end");
    let other =
        app_followers.create_job(&app_followers.admin_token, &sh_job("followed", &format!("echo up; {gate}"))).await;
    app_followers.wait_state(&other, "Running").await;
    let other_path = format!("/api/v2/jobs/{other}/replicas/{other}-0-0/log");
    let held = open_follow(&app_followers, &other_path, &app_followers.admin_token).await;
    assert_eq!(held.status(), StatusCode::OK);
    for query in ["follow=true", "from=99&wait=30"] {
        let res = app_followers.get(&format!("{other_path}?{query}")).await;
        assert_eq!(res.status, StatusCode::TOO_MANY_REQUESTS, "{query}: {}", res.text());
        assert!(res.text().contains("limits.log_followers_per_user"), "{}", res.text());
    }
    assert_eq!(
        app_followers.get(&format!("{other_path}?from=1")).await.status,
        StatusCode::OK,
        "a plain range is no follow"
    );
    drop(held);
    std::fs::write(open, "").unwrap();
    std::fs::write(open_too, "").unwrap();
    drop(second);
}

/// An answer that does not start within `limits.request_timeout` is a 503
/// naming the setting. (The configured minimum is 35 s, past the longest
/// wait of a log range; the test sets a shorter one directly.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_takes_too_long_is_answered_503() {
    let app = TestApp::with_config(|config| {
        small_cluster(2.0)(config);
        config.limits.request_timeout = std::time::Duration::from_millis(200);
    })
    .await;
    let (gate, open) = app.gate("end");
    let id = app.create_job(&app.admin_token, &sh_job("quiet", &format!("echo up; {gate}"))).await;
    app.wait_state(&id, "Running").await;
    // Waits for line 99, which never comes while the gate is shut.
    let res = app.get(&format!("/api/v2/jobs/{id}/replicas/{id}-0-0/log?from=99&wait=5")).await;
    assert_eq!(res.status, StatusCode::SERVICE_UNAVAILABLE, "{}", res.text());
    assert_eq!(res.json()["code"], "timeout");
    assert!(res.text().contains("limits.request_timeout"), "{}", res.text());
    std::fs::write(open, "").unwrap();
}

/// Rewrites job `id`'s first log in the plain format, the only one before
/// blocks (a `.log` of lines and an `.idx` of offsets): what a data
/// directory from the previous release holds.
fn rewrite_in_the_plain_format(app: &TestApp, id: &str) -> Vec<jobdeck_store::logs::LogLine> {
    use jobdeck_store::logs::{LogStore, LogWriter};
    let store = LogStore::new(app.data_dir());
    let lines = store.open(id, 0, 0).unwrap().unwrap().lines(1, u64::MAX).unwrap();
    let (log, idx) = store.paths(id, 0, 0);
    for extension in ["zst", "zflt", "zidx", "tail"] {
        std::fs::remove_file(log.with_extension(extension)).unwrap();
    }
    std::fs::File::create(&log).unwrap();
    let mut writer = LogWriter::create(&log, &idx).unwrap();
    for line in &lines {
        writer.append(line.stream, line.time, line.text.as_bytes()).unwrap();
    }
    drop(writer);
    assert!(matches!(store.open(id, 0, 0).unwrap().unwrap(), jobdeck_store::logs::LogReader::Plain(_)));
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_in_the_format_before_blocks_reads_through_every_route() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let id = finished_log(&app, &app.admin_token, "upgraded", 3_000, false).await;
    let replica = format!("{id}-0-0");
    let before = app.log(&id, &replica).await;
    let lines = rewrite_in_the_plain_format(&app, &id);
    assert_eq!(lines.len(), 3_004);

    let range = app.get(&format!("/api/v2/jobs/{id}/replicas/{replica}/log?from=2999&to=3001")).await.json();
    assert_eq!(range["total_lines"], 3_004);
    assert_eq!(texts(&range), ["line 2999", "line 3000", "\u{1b}[31mred\u{1b}[0m"]);
    assert_eq!(range["lines"][0]["time"], lines[2_998].time);
    let found = app.get(&format!("/api/v2/jobs/{id}/replicas/{replica}/log?search=NEEDLE&ignore_case=true")).await;
    assert_eq!(found.json()["matches"], json!([3_003]));
    assert_eq!(app.log(&id, &replica).await, before, "the whole log, as it read before");
    let download = app.get(&format!("/api/v2/jobs/{id}/replicas/{replica}/log?download=true")).await;
    assert_eq!(download.text(), before);
    let lepton = app.get(&format!("/api/v2/logs?job={id}")).await;
    assert_eq!(lepton.status, StatusCode::OK, "{}", lepton.text());
    let newest = &lepton.json()["data"]["result"][0]["values"][0];
    assert_eq!(newest[1], "to stderr", "Lepton's /logs, newest first: {newest}");
}
