//! `GET /jobs`: paging at its extremes and the filters, exactly as
//! docs/api.md describes them.

mod common;

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
            config.node_groups.push(jobdeck_server::config::NodeGroupConfig {
                name: name.into(),
                cpu: 8.0,
                memory_mb: 32768,
                gpus: 0,
                gpu_product: None,
                nodes: Some(1),
                node_names: None,
                node_selector: Default::default(),
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

/// `created_by` names users exactly and `node_groups` names groups exactly;
/// a job without a group restriction may run in every group of the server,
/// so it is listed under each of them (and under no name that is not a
/// group). `lep job list -u alice -ng gpu` sends exactly these parameters.
#[tokio::test]
async fn creator_and_node_group_filters_match_exactly() {
    let app = app_with_groups().await;
    let (al, alice, bob) = (app.token_for("al").await, app.token_for("alice").await, app.token_for("bob").await);
    app.create_job(&alice, &job_in("j1", &["gpu-a"], "public")).await;
    app.create_job(&al, &job_in("j2", &["gpu"], "public")).await;
    app.create_job(&bob, &job_in("j3", &["gpu", "gpu-a"], "public")).await;
    app.create_job(&alice, &job_in("j4", &[], "public")).await;
    app.create_job(&bob, &job_in("j5", &["gpu"], "private")).await;

    // (viewer, query, job names listed)
    let cases: &[(&str, &str, &[&str])] = &[
        (&al, "created_by=al", &["j2"]),
        (&al, "created_by=alice", &["j1", "j4"]),
        (&al, "created_by=al,alice", &["j1", "j2", "j4"]),
        (&al, "created_by=al&created_by=bob", &["j2", "j3"]),
        (&al, "created_by=ali", &[]),
        (&al, "created_by=ALICE", &[]),
        (&al, "created_by=%25", &[]),
        (&al, "node_groups=gpu", &["j2", "j3", "j4"]),
        (&al, "node_groups=gpu-a", &["j1", "j3", "j4"]),
        (&al, "node_groups=gp", &[]),
        (&al, "node_groups=GPU", &[]),
        (&al, "node_groups=%25", &[]),
        (&al, "node_groups=gpu&node_groups=gpu-a", &["j1", "j2", "j3", "j4"]),
        (&al, "node_groups=local", &["j4"]),
        (&al, "node_groups=gpu&created_by=bob", &["j3"]),
        (&bob, "node_groups=gpu&created_by=bob", &["j3", "j5"]),
        (&alice, "created_by=alice&node_groups=gpu-a&job_query_mode=alive_only&page=1&page_size=500", &["j1", "j4"]),
    ];
    for (token, query, expected) in cases {
        let res = app.request(axum::http::Method::GET, &format!("/api/v2/jobs?{query}"), Some(token), None).await;
        assert_eq!(res.status, StatusCode::OK, "{query}: {}", res.text());
        let body = res.json();
        let mut names: Vec<&str> = body["jobs"].as_array().unwrap().iter().map(|j| j["metadata"]["name"].as_str().unwrap()).collect();
        names.sort();
        assert_eq!(names, *expected, "{query}");
        assert_eq!(body["total"], expected.len(), "{query}");
    }
}
