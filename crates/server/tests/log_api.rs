//! The log endpoint beyond Lepton's plain stream: line ranges, long-poll
//! follow, search, download, and who may read them — against real replica
//! processes and the real log store.

mod common;

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
