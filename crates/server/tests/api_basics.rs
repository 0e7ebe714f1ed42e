//! The API's behaviour at its edges: authentication, bad input, unknown routes.

mod common;

use axum::http::{Method, StatusCode};
use common::TestApp;
use serde_json::json;

fn hello_job(name: &str) -> serde_json::Value {
    json!({
        "metadata": {"name": name},
        "spec": {
            "resource_shape": "cpu.small",
            "container": {"image": "busybox", "command": ["/bin/sh", "-c", "echo hi"]}
        }
    })
}

#[tokio::test]
async fn a_missing_or_wrong_token_gets_401_with_a_json_error() {
    let app = TestApp::new().await;
    for token in [None, Some("jd_not-a-real-token")] {
        let res = app.request(Method::GET, "/api/v2/jobs", token, None).await;
        assert_eq!(res.status, StatusCode::UNAUTHORIZED);
        assert_eq!(res.json()["code"], "unauthorized");
    }
}

#[tokio::test]
async fn a_created_job_is_listed_and_read_back_with_name_image_and_command() {
    let app = TestApp::new().await;
    let res = app.post_json("/api/v2/jobs", &app.admin_token, &hello_job("hello")).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    let created = res.json();
    let id = created["metadata"]["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("hello-"), "{id}");
    assert_eq!(created["metadata"]["created_by"], "admin");

    let got = app.get(&format!("/api/v2/jobs/{id}")).await;
    assert_eq!(got.status, StatusCode::OK);
    let got = got.json();
    assert_eq!(got["metadata"]["name"], "hello");
    assert_eq!(got["spec"]["container"]["image"], "busybox");
    assert_eq!(got["spec"]["container"]["command"], json!(["/bin/sh", "-c", "echo hi"]));

    let list = app.get("/api/v2/jobs").await.json();
    assert_eq!(list["total"], 1);
    assert_eq!(list["jobs"][0]["metadata"]["id"], id.as_str());
}

#[tokio::test]
async fn malformed_json_gets_400_and_nothing_is_stored() {
    let app = TestApp::new().await;
    let res = app
        .request(
            Method::POST,
            "/api/v2/jobs",
            Some(&app.admin_token),
            Some(("application/json", b"{\"metadata\": ".to_vec())),
        )
        .await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    let body = res.json();
    assert_eq!(body["code"], "bad_request");
    assert!(body["message"].as_str().unwrap().contains("not valid JSON"), "{body}");
    assert_eq!(app.get("/api/v2/jobs").await.json()["total"], 0);
}

#[tokio::test]
async fn a_wrong_content_type_gets_a_json_error_naming_the_header() {
    let app = TestApp::new().await;
    let res = app
        .request(
            Method::POST,
            "/api/v2/jobs",
            Some(&app.admin_token),
            Some(("text/plain", serde_json::to_vec(&hello_job("x")).unwrap())),
        )
        .await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    assert!(res.json()["message"].as_str().unwrap().contains("Content-Type"));
}

#[tokio::test]
async fn an_invalid_name_gets_422_on_its_field_and_nothing_is_stored() {
    let app = TestApp::new().await;
    let res = app.post_json("/api/v2/jobs", &app.admin_token, &hello_job("Bad_Name")).await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
    let body = res.json();
    assert_eq!(body["code"], "validation_failed");
    assert_eq!(body["fields"]["metadata.name"][0], "must start with a lowercase letter");
    assert_eq!(app.get("/api/v2/jobs").await.json()["total"], 0);
}

#[tokio::test]
async fn unknown_api_routes_and_methods_get_json_errors() {
    let app = TestApp::new().await;
    let res = app.get("/api/v2/no-such-thing").await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    assert_eq!(res.json()["message"], "no API route for /api/v2/no-such-thing");

    let res = app.request(Method::PUT, "/api/v2/jobs", Some(&app.admin_token), None).await;
    assert_eq!(res.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(res.json()["code"], "method_not_allowed");
}

#[tokio::test]
async fn a_job_id_that_does_not_exist_is_not_found() {
    let app = TestApp::new().await;
    let res = app.get("/api/v2/jobs/nope-12345").await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    assert_eq!(res.json()["code"], "not_found");
}

#[tokio::test]
async fn private_jobs_are_hidden_from_other_users_as_not_found() {
    let app = TestApp::new().await;
    let mut job = hello_job("secret");
    job["metadata"]["visibility"] = json!("private");
    let id = app.post_json("/api/v2/jobs", &app.admin_token, &job).await.json()["metadata"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let bob = app.token_for("bob").await;
    let res = app.request(Method::GET, &format!("/api/v2/jobs/{id}"), Some(&bob), None).await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    let list = app.request(Method::GET, "/api/v2/jobs", Some(&bob), None).await.json();
    assert_eq!(list["total"], 0);
}

#[tokio::test]
async fn workspace_names_the_signed_in_user() {
    let app = TestApp::new().await;
    let body = app.get("/api/v2/workspace").await.json();
    assert_eq!(body["current_user"], "admin");
    assert_eq!(body["executor"], "local");
}

/// `lep workspace login --workspace-url …/api/v2` reads the workspace's
/// display name from the URL itself.
#[tokio::test]
async fn the_api_base_names_the_workspace_as_lep_workspace_login_reads_it() {
    let app = TestApp::new().await;
    let res = app.get("/api/v2").await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    assert_eq!(res.json(), serde_json::json!({"id": "jobdeck", "display_name": "jobdeck"}));
    let anonymous = app.request(Method::GET, "/api/v2", None, None).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn shapes_list_the_configured_shapes_with_their_shared_memory_default() {
    let app = TestApp::new().await;
    let res = app.get("/api/v2/shapes").await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    let shapes = res.json();
    let small = shapes
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["metadata"]["id"] == "cpu.small")
        .expect("cpu.small is a default shape");
    assert_eq!(small["spec"]["cpu"], 1.0);
    assert_eq!(small["spec"]["memory_in_mb"], 4096);
    assert_eq!(small["spec"]["default_shared_memory_in_mb"], 2048);
    let anonymous = app.request(Method::GET, "/api/v2/shapes", None, None).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn node_groups_show_capacity_and_count_queued_jobs() {
    let app = TestApp::new().await;
    let groups = app.get("/api/v2/dedicated-node-groups").await.json();
    let local = &groups[0];
    assert_eq!(local["metadata"]["name"], "local");
    assert_eq!(local["status"]["quota_enabled"], true);
    assert!(local["spec"]["capacity"]["cpu"].as_f64().unwrap() >= 1.0);
    assert_eq!(local["spec"]["nodes"].as_array().unwrap().len(), 1);
    let one = app.get("/api/v2/dedicated-node-groups/local").await;
    assert_eq!(one.status, StatusCode::OK);
    assert_eq!(one.json()["metadata"]["id"], "local");
    let missing = app.get("/api/v2/dedicated-node-groups/nope").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_shape_or_node_group_this_server_lacks_is_a_422_on_its_field() {
    let app = TestApp::new().await;
    let mut job = hello_job("wrong");
    job["spec"]["resource_shape"] = json!("gpu.8xh100");
    job["spec"]["affinity"] = json!({"allowed_dedicated_node_groups": ["h100-pool"]});
    let res = app.post_json("/api/v2/jobs", &app.admin_token, &job).await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", res.text());
    let fields = &res.json()["fields"];
    assert!(
        fields["spec.resource_shape"][0]
            .as_str()
            .unwrap()
            .starts_with("no resource shape named 'gpu.8xh100'; this workspace has 'cpu.small'"),
        "{fields}"
    );
    assert_eq!(fields["spec.affinity.allowed_dedicated_node_groups[0]"][0], "no node group named 'h100-pool'");
}
