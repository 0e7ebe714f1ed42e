//! `GET /openapi.json` lists exactly the routes the router serves, each with
//! exactly the methods it answers.
//!
//! The router is built from `jobdeck_server::api_routes()` alone, so the
//! paths are compared with that list; the methods are found by asking the
//! real router: an anonymous call of a method a route has is refused by
//! authentication (401), one it lacks gets the JSON 405.

use crate::common;

use std::collections::BTreeSet;

use axum::http::{Method, StatusCode};
use common::TestApp;
use jobdeck_server::http::access;
use serde_json::Value;

const METHODS: [Method; 5] = [Method::GET, Method::POST, Method::PUT, Method::PATCH, Method::DELETE];

fn document() -> Value {
    jobdeck_server::http::openapi::base_document()
}

/// A concrete path for a templated one: every `{parameter}` filled in.
pub fn concrete(path: &str) -> String {
    path.replace("{id}", "no-such-job-aaaaa")
        .replace("{replica}", "no-such-job-aaaaa-0-0")
        .replace("{name}", "no-such-secret")
}

#[test]
fn the_document_is_openapi_3_with_a_path_for_every_route_and_no_other() {
    let doc = document();
    assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.")), "{}", doc["openapi"]);
    let documented: BTreeSet<&str> = doc["paths"].as_object().unwrap().keys().map(String::as_str).collect();
    let served: BTreeSet<&str> = jobdeck_server::api_paths().into_iter().collect();
    assert_eq!(documented, served, "openapi.json paths (left) differ from the router's (right)");
    assert_eq!(served.len(), jobdeck_server::api_paths().len(), "a path is routed twice");
}

#[tokio::test]
async fn every_documented_method_is_served_and_no_other() {
    let app = TestApp::new().await;
    let doc = document();
    for (path, item) in doc["paths"].as_object().unwrap() {
        let documented: BTreeSet<String> = item
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| METHODS.iter().any(|m| m.as_str().eq_ignore_ascii_case(k)))
            .map(|k| k.to_ascii_uppercase())
            .collect();
        let uri = format!("/api/v2{}", concrete(path));
        for method in METHODS {
            let body = matches!(method, Method::POST | Method::PUT | Method::PATCH)
                .then(|| ("application/json", b"{}".to_vec()));
            let res = app.request(method.clone(), &uri, None, body).await;
            let listed = documented.contains(method.as_str());
            // What anyone may call (the authorization table says which)
            // answers without a token; the rest asks for one.
            let public = access::rule(&method, path) == Some(access::Access::Anyone);
            let public_operation = item[method.as_str().to_ascii_lowercase()]["security"] == serde_json::json!([]);
            assert_eq!(public, listed && public_operation, "{method} {path}: the document's security differs");
            match (listed, public) {
                (true, true) => assert!(
                    ![StatusCode::UNAUTHORIZED, StatusCode::METHOD_NOT_ALLOWED].contains(&res.status),
                    "{method} {path}: {}",
                    res.text()
                ),
                (true, false) => assert_eq!(res.status, StatusCode::UNAUTHORIZED, "{method} {path}: {}", res.text()),
                (false, _) => assert_eq!(res.status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}: {}", res.text()),
            }
            if !listed {
                assert_eq!(res.json()["code"], "method_not_allowed", "{method} {path}");
            }
        }
    }
}

#[tokio::test]
async fn the_document_is_served_as_json() {
    let app = TestApp::new().await;
    let res = app.request(Method::GET, "/api/v2/openapi.json", None, None).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.headers["content-type"], "application/json");
    // The document as written, with this server's rules filled in.
    let config = jobdeck_core::Config::for_data_dir(app.data_dir());
    assert_eq!(res.json(), jobdeck_server::http::openapi::document(&config));
}
