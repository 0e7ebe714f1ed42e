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
