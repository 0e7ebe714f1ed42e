//! `GET /jobs/{id}/merged-log`: every rank of a job on one timeline, read
//! from the real log store of real replica processes.

use crate::common;

use axum::http::{header, Method, StatusCode};
use common::{sh_job, small_cluster, TestApp};
use serde_json::{json, Value};

/// A completed job of four replicas, each writing `steps` lines `rank <i>
/// step <k>` a few milliseconds apart, so their lines interleave in time.
async fn four_ranks(app: &TestApp, token: &str, name: &str, private: bool) -> String {
    let script =
        "for k in 1 2 3 4 5 6 7 8 9 10 11 12; do echo \"rank $JOB_COMPLETION_INDEX step $k\"; sleep 0.02; done";
    let mut job = sh_job(name, script);
    job["spec"]["completions"] = json!(4);
    job["spec"]["parallelism"] = json!(4);
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

fn lines(page: &Value) -> &Vec<Value> {
    page["lines"].as_array().unwrap()
}

/// A line's place, as `after` and `before` take it.
fn place(line: &Value) -> String {
    format!("{}:{}", line["time"].as_str().unwrap(), line["replica"].as_str().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_ranks_lines_come_in_time_order_with_their_replica_and_number() {
    let app = TestApp::with_config(small_cluster(4.0)).await;
    let id = four_ranks(&app, &app.admin_token, "ranks", false).await;
    let res = app.get(&format!("/api/v2/jobs/{id}/merged-log?from_start=true&limit=5000")).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    let all = res.json();
    let replicas: Vec<String> = (0..4).map(|i| format!("{id}-{i}-0")).collect();
    assert_eq!(all["replicas"], json!(replicas));
    assert_eq!(
        (all["more_before"].as_bool(), all["more_after"].as_bool(), all["running"].as_bool()),
        (Some(false), Some(false), Some(false))
    );
    assert_eq!(all.get("approximate_order"), None, "the local executor stamps lines as they are written");
    let every = lines(&all);
    assert_eq!(every.len(), 48);
    let times: Vec<i128> = every.iter().map(|l| l["time"].as_str().unwrap().parse().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "in time order");
    for line in every {
        // Each line is its replica's own, at its own number.
        let replica = line["replica"].as_str().unwrap();
        let index = replica.strip_prefix(&format!("{id}-")).unwrap().split('-').next().unwrap();
        let text = line["text"].as_str().unwrap();
        assert!(text.starts_with(&format!("rank {index} step ")), "{replica}: {text}");
        let step: u64 = text.rsplit(' ').next().unwrap().parse().unwrap();
        assert_eq!(line["line"].as_u64(), Some(step), "{text}");
    }
    let first_twelve: std::collections::BTreeSet<&str> =
        every[..12].iter().map(|l| l["replica"].as_str().unwrap()).collect();
    assert!(first_twelve.len() > 1, "the ranks interleave rather than follow one another");

    // Paging back from the newest by each page's first place gives it all.
    let mut back: Vec<Value> = Vec::new();
    let mut query = "limit=10".to_string();
    loop {
        let page = app.get(&format!("/api/v2/jobs/{id}/merged-log?{query}")).await.json();
        back.splice(0..0, lines(&page).iter().cloned());
        if page["more_before"] != true {
            break;
        }
        query = format!("limit=10&before={}", place(&lines(&page)[0]));
    }
    assert_eq!(&back, every);

    // A permalink's page holds its line; a chosen set and a text narrow it.
    let chosen = &every[30];
    let (replica, number) = (chosen["replica"].as_str().unwrap(), chosen["line"].as_u64().unwrap());
    let around = app.get(&format!("/api/v2/jobs/{id}/merged-log?around={replica}:{number}&limit=6")).await.json();
    assert_eq!(lines(&around)[3], *chosen);
    assert_eq!(&lines(&around)[..], &every[27..33]);
    let two =
        app.get(&format!("/api/v2/jobs/{id}/merged-log?replicas={id}-3-0,{id}-1-0&q=step%201&limit=100")).await.json();
    let texts: Vec<&str> = lines(&two).iter().map(|l| l["text"].as_str().unwrap()).collect();
    let mut sorted = texts.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            "rank 1 step 1",
            "rank 1 step 10",
            "rank 1 step 11",
            "rank 1 step 12",
            "rank 3 step 1",
            "rank 3 step 10",
            "rank 3 step 11",
            "rank 3 step 12"
        ]
    );

    // The download is the whole merged text, in the same order.
    let download = app.get(&format!("/api/v2/jobs/{id}/merged-log?download=true")).await;
    assert_eq!(download.status, StatusCode::OK);
    assert_eq!(
        download.headers[header::CONTENT_DISPOSITION],
        format!("attachment; filename=\"{id}-merged.log\"").as_str()
    );
    let text = download.text();
    let downloaded: Vec<&str> = text.lines().collect();
    assert_eq!(downloaded.len(), 48);
    for (line, wire) in downloaded.iter().zip(every) {
        let (_, rest) = line.split_once(' ').unwrap();
        assert_eq!(rest, format!("[{}] {}", wire["replica"].as_str().unwrap(), wire["text"].as_str().unwrap()));
    }

    // A search names the lines that match, in the same order and with the
    // same places as the pages; each opens the page around it.
    let found = app.get(&format!("/api/v2/jobs/{id}/merged-log?search=STEP%201%5Cb&regex=true&ignore_case=true")).await;
    assert_eq!(found.status, StatusCode::OK, "{}", found.text());
    let found = found.json();
    assert_eq!(found["replicas"], all["replicas"]);
    assert_eq!(found.get("truncated"), None);
    let expected: Vec<Value> = every
        .iter()
        .filter(|l| l["text"].as_str().unwrap().ends_with(" step 1"))
        .map(|l| json!({"replica": l["replica"], "line": l["line"], "time": l["time"]}))
        .collect();
    assert_eq!((found["matches"].as_array().unwrap(), expected.len()), (&expected, 4));
    let two = app.get(&format!("/api/v2/jobs/{id}/merged-log?search=step%201&replicas={id}-2-0&q=1&limit=2")).await;
    let two = two.json();
    let numbers: Vec<(&str, u64)> = two["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["replica"].as_str().unwrap(), m["line"].as_u64().unwrap()))
        .collect();
    assert_eq!(numbers, [(format!("{id}-2-0").as_str(), 1), (format!("{id}-2-0").as_str(), 10)]);
    assert_eq!(two["truncated"], true, "steps 11 and 12 match too");
    let res = app.get(&format!("/api/v2/jobs/{id}/merged-log?search=(&regex=true")).await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    assert!(res.json()["message"].as_str().unwrap().contains("search is not a valid regular expression"));

    // Bad input names its parameter; a line that is not there is a 404.
    let res = app.get(&format!("/api/v2/jobs/{id}/merged-log?replicas=someone-else-0-0")).await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    assert!(res.json()["message"].as_str().unwrap().contains("replicas: 'someone-else-0-0' is not a replica"));
    let res = app.get(&format!("/api/v2/jobs/{id}/merged-log?around={id}-0-0:99")).await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_jobs_merged_log_is_its_creators_only() {
    let app = TestApp::with_config(small_cluster(4.0)).await;
    let alice = app.token_for("alice").await;
    let bob = app.token_for("bob").await;
    let id = four_ranks(&app, &alice, "hidden-ranks", true).await;
    // Each path and what its answer holds for the job's creator.
    for (path, holds) in [
        (format!("/api/v2/jobs/{id}/merged-log"), "rank 2 step 7".to_string()),
        (format!("/api/v2/jobs/{id}/merged-log?download=true"), "rank 2 step 7".to_string()),
        (format!("/api/v2/jobs/{id}/merged-log?search=rank%202%20step%207"), format!("\"replica\":\"{id}-2-0\"")),
    ] {
        let own = app.call(Method::GET, &path, &alice, None).await;
        assert_eq!(own.status, StatusCode::OK, "{path}");
        assert!(own.text().contains(&holds), "{path}: {}", own.text());
        for token in [&bob, &app.admin_token] {
            let other = app.call(Method::GET, &path, token, None).await;
            assert_eq!(other.status, StatusCode::NOT_FOUND, "{path}");
            assert!(!other.text().contains("step"), "{path}: nothing of the log");
        }
        let anonymous = app.request(Method::GET, &path, None, None).await;
        assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    }
}

/// Following every rank: a page after the last place, asked with `wait`,
/// answers once a replica writes a line past it; once every replica has
/// ended it answers at once, saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_after_the_end_waits_for_the_next_line_of_any_rank() {
    let app = TestApp::with_config(small_cluster(4.0)).await;
    let script = format!(
        "echo \"rank $JOB_COMPLETION_INDEX first\"; {}; echo \"rank $JOB_COMPLETION_INDEX second\"; {}",
        app.gate("second").0,
        app.gate("end").0
    );
    let mut job = sh_job("follow", &script);
    job["spec"]["completions"] = json!(2);
    job["spec"]["parallelism"] = json!(2);
    let id = app.create_job(&app.admin_token, &job).await;
    let path = format!("/api/v2/jobs/{id}/merged-log");
    app.wait_until("both first lines", || {
        let (app, path) = (&app, path.clone());
        async move { lines(&app.get(&format!("{path}?from_start=true")).await.json()).len() == 2 }
    })
    .await;
    let firsts = app.get(&format!("{path}?from_start=true")).await.json();
    assert_eq!(firsts["running"], true);
    let last = place(lines(&firsts).last().unwrap());
    let now = app.get(&format!("{path}?after={last}")).await.json();
    assert_eq!((lines(&now).len(), now["running"].clone()), (0, json!(true)), "without wait: nothing yet");
    // The line waited for is written once the request is sent; an answer
    // holding it means the wait ended when it came.
    let waiting = format!("{path}?after={last}&wait=30");
    let (next, ()) = tokio::join!(app.get(&waiting), async {
        tokio::task::yield_now().await;
        std::fs::write(app.gate("second").1, "").unwrap();
    });
    let next = next.json();
    let texts: Vec<&str> = lines(&next).iter().map(|l| l["text"].as_str().unwrap()).collect();
    assert!(!texts.is_empty() && texts.iter().all(|t| t.ends_with(" second")), "{next}");
    std::fs::write(app.gate("end").1, "").unwrap();
    app.wait_state(&id, "Completed").await;
    let all = app.get(&format!("{path}?from_start=true")).await.json();
    let end = place(lines(&all).last().unwrap());
    // Past the end of a finished job: no wait (well within its 30 s).
    let finished =
        tokio::time::timeout(std::time::Duration::from_secs(20), app.get(&format!("{path}?after={end}&wait=30")))
            .await
            .expect("a finished job's page answers without waiting")
            .json();
    assert_eq!((lines(&finished).len(), finished["running"].clone()), (0, json!(false)));
    let refused = app.get(&format!("{path}?wait=5")).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert!(refused.text().contains("wait follows new lines: it needs after"), "{}", refused.text());
}
