//! `GET /jobs`: paging at its extremes and the filters, exactly as
//! docs/api.md describes them.

use crate::common;

use axum::http::StatusCode;
use common::TestApp;
use serde_json::json;

/// A job that never runs (created stopped), so listings stay still.
fn stopped_job(name: &str) -> serde_json::Value {
    json!({
        "metadata": {"name": name},
        "spec": {"container": {"image": "busybox", "command": ["true"]}, "stopped": true}
    })
}

#[tokio::test]
async fn any_page_number_is_answered_without_overflowing() {
    let app = TestApp::new().await;
    app.create_job(&app.admin_token, &stopped_job("one")).await;
    // (query, status, jobs on the page)
    let cases = [
        ("page=1&page_size=500", StatusCode::OK, Some(1)),
        ("page=2", StatusCode::OK, Some(0)),
        ("page=9223372036854775807", StatusCode::OK, Some(0)),
        ("page=9223372036854775807&page_size=500", StatusCode::OK, Some(0)),
        ("page=9223372036854775808", StatusCode::BAD_REQUEST, None),
        ("page=-9223372036854775808", StatusCode::BAD_REQUEST, None),
        ("page_size=9223372036854775807", StatusCode::BAD_REQUEST, None),
    ];
    for (query, status, count) in cases {
        let res = app.get(&format!("/api/v2/jobs?{query}")).await;
        assert_eq!(res.status, status, "{query}: {}", res.text());
        let body = res.json();
        match count {
            Some(count) => {
                assert_eq!(body["jobs"].as_array().unwrap().len(), count, "{query}: {body}");
                assert_eq!(body["total"], 1, "{query}: {body}");
            }
            None => assert!(body["message"].as_str().unwrap().starts_with("page"), "{query}: {body}"),
        }
    }
}

/// A server with the node groups `gpu` and `gpu-a` besides `local`.
async fn app_with_groups() -> TestApp {
    TestApp::with_config(|config| {
        for name in ["gpu", "gpu-a"] {
            config.node_groups.push(jobdeck_core::config::NodeGroupConfig {
                name: name.into(),
                cpu: 8.0,
                memory_mb: 32768,
                gpus: 0,
                gpu_product: None,
                nodes: Some(1),
                node_names: None,
                node_selector: Default::default(),
                privileged_roles: Vec::new(),
            });
        }
    })
    .await
}

fn job_in(name: &str, groups: &[&str], visibility: &str) -> serde_json::Value {
    let mut job = stopped_job(name);
    job["metadata"]["visibility"] = json!(visibility);
    if !groups.is_empty() {
        job["spec"]["affinity"] = json!({"allowed_dedicated_node_groups": groups});
    }
    job
}

/// Jobdeck's `creator` and `node_group` name users and groups exactly;
/// Lepton's `created_by` and `node_groups` match as `lep job list -u/-ng`
/// documents: the beginning of the user's name and a part of a group's
/// name, ignoring case. A job without a group restriction may run in every
/// group of the server, so it is listed under each of them (and under no
/// name that matches no group).
#[tokio::test]
async fn creator_and_node_group_filters_match_exactly_or_as_lepton_patterns() {
    let app = app_with_groups().await;
    let (al, alice, bob) = (app.token_for("al").await, app.token_for("alice").await, app.token_for("bob").await);
    app.create_job(&alice, &job_in("j1", &["gpu-a"], "public")).await;
    app.create_job(&al, &job_in("j2", &["gpu"], "public")).await;
    app.create_job(&bob, &job_in("j3", &["gpu", "gpu-a"], "public")).await;
    app.create_job(&alice, &job_in("j4", &[], "public")).await;
    app.create_job(&bob, &job_in("j5", &["gpu"], "private")).await;

    // (viewer, query, job names listed)
    let cases: &[(&str, &str, &[&str])] = &[
        (&al, "creator=al", &["j2"]),
        (&al, "creator=alice", &["j1", "j4"]),
        (&al, "creator=al,alice", &["j1", "j2", "j4"]),
        (&al, "creator=al&creator=bob", &["j2", "j3"]),
        (&al, "creator=ali", &[]),
        (&al, "creator=ALICE", &[]),
        (&al, "creator=%25", &[]),
        (&al, "node_group=gpu", &["j2", "j3", "j4"]),
        (&al, "node_group=gpu-a", &["j1", "j3", "j4"]),
        (&al, "node_group=gp", &[]),
        (&al, "node_group=GPU", &[]),
        (&al, "node_group=%25", &[]),
        (&al, "node_group=gpu&node_group=gpu-a", &["j1", "j2", "j3", "j4"]),
        (&al, "node_group=local", &["j4"]),
        (&al, "node_group=gpu&creator=bob", &["j3"]),
        (&bob, "node_group=gpu&creator=bob", &["j3", "j5"]),
        (&alice, "creator=alice&node_group=gpu-a&job_query_mode=alive_only&page=1&page_size=500", &["j1", "j4"]),
        // Lepton's patterns.
        (&al, "created_by=al", &["j1", "j2", "j4"]),
        (&al, "created_by=ALI", &["j1", "j4"]),
        (&al, "created_by=li", &[]),
        (&al, "created_by=%25", &[]),
        (&al, "created_by=_lice", &[]),
        (&al, "created_by=al&created_by=bo", &["j1", "j2", "j3", "j4"]),
        (&al, "node_groups=gpu-", &["j1", "j3", "j4"]),
        (&al, "node_groups=PU", &["j1", "j2", "j3", "j4"]),
        (&al, "node_groups=oca", &["j4"]),
        (&al, "node_groups=nope", &[]),
        (&al, "node_groups=%25", &[]),
        (&bob, "node_groups=gpu&created_by=B", &["j3", "j5"]),
    ];
    for (token, query, expected) in cases {
        let res = app.request(axum::http::Method::GET, &format!("/api/v2/jobs?{query}"), Some(token), None).await;
        assert_eq!(res.status, StatusCode::OK, "{query}: {}", res.text());
        let body = res.json();
        let mut names: Vec<&str> =
            body["jobs"].as_array().unwrap().iter().map(|j| j["metadata"]["name"].as_str().unwrap()).collect();
        names.sort();
        assert_eq!(names, *expected, "{query}");
        assert_eq!(body["total"], expected.len(), "{query}");
    }
}

/// A name or label listing past `TOTAL_COUNT_CAP` matches says its total is
/// a lower bound (`total_capped`); one counted from the counts table is
/// exact and says nothing of the kind. The console shows "more than".
#[tokio::test]
async fn a_total_past_the_cap_says_it_is_a_lower_bound() {
    let app = TestApp::new().await;
    let cap = jobdeck_store::TOTAL_COUNT_CAP;
    for k in 0..=cap {
        let mut row = common::finished_row(&format!("many-{k:05}"), 100_000 + k);
        row.metadata.labels = Some([("team".to_string(), "nlp".to_string())].into());
        app.store.insert_job(row, Vec::new()).await.unwrap();
    }
    for query in ["q=many", "query=team%3Dnlp", "q=ma&query=team"] {
        let body = app.get(&format!("/api/v2/jobs?{query}&job_query_mode=alive_and_archive")).await.json();
        assert_eq!((body["total"].as_i64(), body["total_capped"].as_bool()), (Some(cap), Some(true)), "{query}");
        assert_eq!(body["jobs"][0]["metadata"]["id"], format!("many-{cap:05}"), "newest first: {query}");
    }
    let body = app.get("/api/v2/jobs?job_query_mode=alive_and_archive").await.json();
    assert_eq!(body["total"].as_i64(), Some(cap + 1));
    assert!(body.get("total_capped").is_none(), "{}", body["total"]);
    // The last page by its number is read from the end of the list.
    let last = app.get(&format!("/api/v2/jobs?job_query_mode=alive_and_archive&page={}", cap / 50 + 1)).await.json();
    let ids: Vec<&str> =
        last["jobs"].as_array().unwrap().iter().map(|j| j["metadata"]["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["many-00000"]);
}
