//! Who may see and change what (design §9, issue 4), as one matrix: for a
//! private and a public job, every job endpoint — the job, its replicas,
//! events, every form of its log, the failure analysis, PATCH and DELETE — is
//! called by its creator, another user, the workspace administrator, an
//! anonymous caller and a caller with a made-up token.
//!
//! A private job is seen and changed by its creator only; to anyone else it
//! answers exactly what a job that does not exist answers (404), so its
//! existence does not leak either. A public job is readable by every
//! signed-in user, and changed by its creator (and the administrator).
//! Anonymous callers get 401 on every route.

use crate::common;

use axum::http::{Method, StatusCode};
use common::{sh_job, small_cluster, TestApp};
use serde_json::{json, Value};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Viewer {
    Creator,
    Other,
    Admin,
    Anonymous,
    BadToken,
}

const VIEWERS: [Viewer; 5] = [Viewer::Creator, Viewer::Other, Viewer::Admin, Viewer::Anonymous, Viewer::BadToken];

/// A job endpoint: method, path (`{id}` and `{replica}` filled in per job),
/// body, what its creator gets for a failed job, and whether the answer
/// carries the job's log text.
struct Endpoint {
    method: Method,
    path: &'static str,
    body: Option<Value>,
    creator_gets: StatusCode,
    shows_log: bool,
}

fn endpoints() -> Vec<Endpoint> {
    let read = |path: &'static str, shows_log: bool| Endpoint {
        method: Method::GET,
        path,
        body: None,
        creator_gets: StatusCode::OK,
        shows_log,
    };
    let patch = |stopped: bool| Endpoint {
        method: Method::PATCH,
        path: "/jobs/{id}",
        body: Some(json!({"spec": {"stopped": stopped}})),
        // Past authorization, stopping a job that has ended changes nothing
        // (200, as on Lepton) and starting it is a conflict, not a 404.
        creator_gets: if stopped { StatusCode::OK } else { StatusCode::CONFLICT },
        shows_log: false,
    };
    vec![
        read("/jobs/{id}", false),
        read("/jobs/{id}?job_query_mode=alive_and_archive", false),
        read("/jobs/{id}/replicas", false),
        read("/jobs/{id}/events", false),
        read("/jobs/{id}/failure-analysis", true),
        read("/jobs/{id}/replicas/{replica}/log", true),
        read("/jobs/{id}/replicas/{replica}/log?timestamps=true", true),
        read("/jobs/{id}/replicas/{replica}/log?follow=true", true),
        read("/jobs/{id}/replicas/{replica}/log?download=true", true),
        read("/jobs/{id}/replicas/{replica}/log?from=1&to=10", true),
        read("/jobs/{id}/replicas/{replica}/log?tail=5", true),
        read("/jobs/{id}/replicas/{replica}/log?from=1&wait=1", true),
        read("/jobs/{id}/replicas/{replica}/log?search=marker", false),
        read("/jobs/{id}/replicas/{replica}/log?search=MARK.R&regex=true&ignore_case=true", false),
        patch(true),
        patch(false),
    ]
}

struct World {
    app: TestApp,
    alice: String,
    bob: String,
}

impl World {
    fn token(&self, viewer: Viewer) -> Option<String> {
        match viewer {
            Viewer::Creator => Some(self.alice.clone()),
            Viewer::Other => Some(self.bob.clone()),
            Viewer::Admin => Some(self.app.admin_token.clone()),
            Viewer::Anonymous => None,
            Viewer::BadToken => Some("jd_0000000000000000000000000000000000000000000000000000000000000000".into()),
        }
    }

    async fn call(&self, viewer: Viewer, method: Method, path: &str, body: Option<&Value>) -> common::TestResponse {
        let body = body.map(|b| ("application/json", serde_json::to_vec(b).unwrap()));
        self.app.request(method, &format!("/api/v2{path}"), self.token(viewer).as_deref(), body).await
    }
}

fn fill(path: &str, id: &str) -> String {
    path.replace("{replica}", &format!("{id}-0-0")).replace("{id}", id)
}

/// A failed job of alice's with one line of log, `marker-<visibility>`.
async fn failed_job(world: &World, visibility: &str) -> String {
    let mut job = sh_job(&format!("{visibility}-job"), &format!("echo marker-{visibility}; exit 1"));
    job["metadata"]["visibility"] = json!(visibility);
    job["spec"]["backoff_limit"] = json!(0);
    let id = world.app.create_job(&world.alice, &job).await;
    world.app.wait_state_as(&world.alice, &id, "Failed").await;
    id
}

/// What `viewer` gets from `endpoint` on a job with `visibility`.
fn expected(visibility: &str, viewer: Viewer, endpoint: &Endpoint) -> StatusCode {
    let write = endpoint.method != Method::GET;
    match (visibility, viewer) {
        (_, Viewer::Anonymous | Viewer::BadToken) => StatusCode::UNAUTHORIZED,
        (_, Viewer::Creator) => endpoint.creator_gets,
        ("private", Viewer::Other | Viewer::Admin) => StatusCode::NOT_FOUND,
        ("public", Viewer::Other) if write => StatusCode::FORBIDDEN,
        ("public", Viewer::Admin) if write => endpoint.creator_gets,
        ("public", _) => StatusCode::OK,
        _ => unreachable!(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_jobs_are_the_creators_public_jobs_everyones_and_anonymous_callers_nobodys() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let (alice, bob) = (app.token_for("alice").await, app.token_for("bob").await);
    let world = World { app, alice, bob };
    let private = failed_job(&world, "private").await;
    let public = failed_job(&world, "public").await;
    let missing = "private-job-zzzzz";

    for (visibility, id) in [("private", &private), ("public", &public)] {
        for endpoint in endpoints() {
            let path = fill(endpoint.path, id);
            for viewer in VIEWERS {
                let res = world.call(viewer, endpoint.method.clone(), &path, endpoint.body.as_ref()).await;
                let case = format!("{viewer:?} {} {path} ({visibility})", endpoint.method);
                assert_eq!(res.status, expected(visibility, viewer, &endpoint), "{case}: {}", res.text());
                let text = res.text();
                if res.status == StatusCode::OK && endpoint.shows_log {
                    assert!(text.contains(&format!("marker-{visibility}")), "{case}: the log is missing: {text}");
                }
                if res.status == StatusCode::NOT_FOUND {
                    // Exactly what a job that does not exist answers.
                    let gone = world
                        .call(viewer, endpoint.method.clone(), &fill(endpoint.path, missing), endpoint.body.as_ref())
                        .await;
                    assert_eq!(gone.status, StatusCode::NOT_FOUND, "{case}");
                    assert_eq!(text.replace(id.as_str(), missing), gone.text(), "{case}: hidden and missing differ");
                }
                if res.status.is_client_error() {
                    assert!(!text.contains("marker-"), "{case}: a refusal shows the log: {text}");
                }
            }
        }
    }

    // Listings: only what the viewer may see is listed and counted, whatever
    // the filter.
    for query in ["", "?created_by=alice", "?q=private-job", "?job_query_mode=alive_and_archive&page_size=500"] {
        for (viewer, sees_private) in [(Viewer::Creator, true), (Viewer::Other, false), (Viewer::Admin, false)] {
            let res = world.call(viewer, Method::GET, &format!("/jobs{query}"), None).await;
            assert_eq!(res.status, StatusCode::OK, "{viewer:?} {query}");
            let body = res.json();
            let ids: Vec<&str> =
                body["jobs"].as_array().unwrap().iter().map(|j| j["metadata"]["id"].as_str().unwrap()).collect();
            assert_eq!(ids.contains(&private.as_str()), sees_private, "{viewer:?} {query}: {ids:?}");
            let total = body["total"].as_i64().unwrap() as usize;
            assert_eq!(total, ids.len(), "{viewer:?} {query}: the total counts hidden jobs");
        }
        for viewer in [Viewer::Anonymous, Viewer::BadToken] {
            let res = world.call(viewer, Method::GET, &format!("/jobs{query}"), None).await;
            assert_eq!(res.status, StatusCode::UNAUTHORIZED, "{viewer:?} {query}");
        }
    }

    // DELETE last: refused to the others, done for the creator (and, for a
    // public job, the administrator).
    for (visibility, id, deleter) in [("private", &private, Viewer::Creator), ("public", &public, Viewer::Admin)] {
        for viewer in [Viewer::Anonymous, Viewer::BadToken, Viewer::Other, Viewer::Admin] {
            if viewer == deleter {
                continue;
            }
            let res = world.call(viewer, Method::DELETE, &format!("/jobs/{id}"), None).await;
            let refusal = match (visibility, viewer) {
                (_, Viewer::Anonymous | Viewer::BadToken) => StatusCode::UNAUTHORIZED,
                ("private", _) => StatusCode::NOT_FOUND,
                _ => StatusCode::FORBIDDEN,
            };
            assert_eq!(res.status, refusal, "{viewer:?} DELETE {visibility}: {}", res.text());
            let still = world.call(Viewer::Creator, Method::GET, &format!("/jobs/{id}"), None).await;
            assert_eq!(still.status, StatusCode::OK, "{viewer:?} deleted the {visibility} job");
        }
        let res = world.call(deleter, Method::DELETE, &format!("/jobs/{id}"), None).await;
        assert_eq!(res.status, StatusCode::OK, "{deleter:?} DELETE {visibility}: {}", res.text());
        let gone = world.call(Viewer::Creator, Method::GET, &format!("/jobs/{id}"), None).await;
        assert_eq!(gone.status, StatusCode::NOT_FOUND, "the {visibility} job was not deleted");
    }
}

/// Every route of the API, every method it serves, refuses anonymous
/// callers and made-up tokens with 401, for an existing private job too.
/// (What the authorization table lets anyone call, the OpenAPI document and
/// the ways to sign in, describes the API, not the workspace.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_callers_get_401_on_every_route() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let alice = app.token_for("alice").await;
    let world = World { app, alice, bob: String::new() };
    let id = failed_job(&world, "private").await;
    let doc = jobdeck_server::http::openapi::base_document();
    let mut calls = 0;
    for path in jobdeck_server::api_paths() {
        let methods = doc["paths"][path].as_object().unwrap_or_else(|| panic!("{path} is not documented"));
        for method in methods.keys().filter_map(|m| Method::from_bytes(m.to_ascii_uppercase().as_bytes()).ok()) {
            let concrete = fill(path, &id).replace("{name}", "a-secret");
            let body = json!({});
            let body = (method != Method::GET && method != Method::DELETE).then_some(&body);
            for viewer in [Viewer::Anonymous, Viewer::BadToken] {
                let res = world.call(viewer, method.clone(), &concrete, body).await;
                let public = jobdeck_server::http::access::rule(&method, path)
                    == Some(jobdeck_server::http::access::Access::Anyone);
                if public {
                    assert_ne!(res.status, StatusCode::UNAUTHORIZED, "{viewer:?} {method} {concrete}: {}", res.text());
                } else {
                    assert_eq!(res.status, StatusCode::UNAUTHORIZED, "{viewer:?} {method} {concrete}: {}", res.text());
                    assert_eq!(res.json()["code"], "unauthorized", "{viewer:?} {method} {concrete}");
                }
                calls += 1;
            }
        }
    }
    assert!(calls >= 30, "only {calls} calls: the route list is incomplete");
    // The job is untouched.
    world.app.wait_state_as(&world.alice, &id, "Failed").await;
}

/// Secrets are their owner's unless made public on purpose: another user
/// neither lists nor counts a private one, and a job of theirs cannot use it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_are_private_by_default_and_only_public_ones_are_shared() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let alice = app.token_for("alice").await;
    let bob = app.token_for("bob").await;
    let created = app
        .call(Method::POST, "/api/v2/usersecrets", &alice, Some(&json!([{"name": "MINE", "value": "alice-only"}])))
        .await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text());
    assert_eq!(created.json()[0]["visibility"], "private");
    let shared = app
        .call(
            Method::POST,
            "/api/v2/usersecrets",
            &alice,
            Some(&json!({"name": "SHARED", "value": "for-everyone", "visibility": "public"})),
        )
        .await;
    assert_eq!(shared.status, StatusCode::OK, "{}", shared.text());

    let names = |list: Value| -> Vec<String> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|s| format!("{}:{}", s["name"].as_str().unwrap(), s["visibility"].as_str().unwrap()))
            .collect()
    };
    let alices = app.call(Method::GET, "/api/v2/usersecrets", &alice, None).await.json();
    assert_eq!(names(alices), ["MINE:private", "SHARED:public"]);
    let bobs = app.call(Method::GET, "/api/v2/usersecrets", &bob, None).await.json();
    assert_eq!(names(bobs), ["SHARED:public"]);
    let workspace = app.call(Method::GET, "/api/v2/workspace", &bob, None).await.json();
    assert_eq!(workspace["workloads"]["num_secrets"], 1, "{workspace}");

    // Bob's job may use the public secret but not Alice's private one.
    let mut job = sh_job("uses-secret", "echo shared=$SHARED");
    job["spec"]["envs"] = json!([{"name": "SHARED", "value_from": {"secret_name_ref": "SHARED"}}]);
    let id = app.create_job(&bob, &job).await;
    app.wait_state_as(&bob, &id, "Completed").await;
    let log = app.call(Method::GET, &format!("/api/v2/jobs/{id}/replicas/{id}-0-0/log"), &bob, None).await;
    assert_eq!(log.text(), "shared=for-everyone\n");
    job["spec"]["envs"] = json!([{"name": "STOLEN", "value_from": {"secret_name_ref": "MINE"}}]);
    let refused = app.call(Method::POST, "/api/v2/jobs", &bob, Some(&job)).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.text());
    assert!(refused.json()["fields"]["spec.envs[0].value_from.secret_name_ref"].is_array(), "{}", refused.text());

    // A value no environment variable can hold is refused on its field, and
    // the secret already stored under that name is kept.
    let nul = app
        .call(Method::POST, "/api/v2/usersecrets", &alice, Some(&json!([{"name": "MINE", "value": "a\u{0}b"}])))
        .await;
    assert_eq!(nul.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", nul.text());
    assert!(nul.json()["fields"]["[0].value"][0].as_str().unwrap().contains("NUL"), "{}", nul.text());
    let mut own = sh_job("own-secret", "echo mine=$MINE");
    own["spec"]["envs"] = json!([{"name": "MINE", "value_from": {"secret_name_ref": "MINE"}}]);
    let own = app.create_job(&alice, &own).await;
    app.wait_state_as(&alice, &own, "Completed").await;
    let log = app.call(Method::GET, &format!("/api/v2/jobs/{own}/replicas/{own}-0-0/log"), &alice, None).await;
    assert_eq!(log.text(), "mine=alice-only\n");
}

/// `GET /workspace` counts only the jobs the caller may see.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workspace_counts_only_the_callers_visible_jobs() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let alice = app.token_for("alice").await;
    let bob = app.token_for("bob").await;
    let mut private = sh_job("hidden", "true");
    private["metadata"]["visibility"] = json!("private");
    app.create_job(&alice, &private).await;
    app.create_job(&alice, &sh_job("shown", "true")).await;
    let count = |token: String| {
        let app = &app;
        async move { app.call(Method::GET, "/api/v2/workspace", &token, None).await.json()["workloads"]["num_jobs"].clone() }
    };
    assert_eq!(count(alice.clone()).await, 2);
    assert_eq!(count(bob.clone()).await, 1);
}
