//! Removing a user (offboarding) through the API: what it touches is said
//! first, then their running job stops, their tokens stop signing in, their
//! secrets go, and their name stays taken.

use crate::common;

use axum::http::{Method, StatusCode};
use common::{sh_job, small_cluster, TestApp};
use jobdeck_api::{RemovedUser, Role, UserRemoval};
use serde_json::json;

fn typed<T: serde::de::DeserializeOwned>(res: &common::TestResponse) -> T {
    serde_json::from_slice(&res.body).unwrap_or_else(|e| panic!("{e}: {}", res.text()))
}

#[tokio::test]
async fn removing_a_user_says_what_it_touches_then_stops_revokes_and_deletes() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let bob = app.token_with_role("bob", Role::Member).await;
    let ann = app.token_with_role("ann", Role::Member).await;
    let secrets = json!([{"name": "HF", "value": "hf-token", "visibility": "public"}, {"name": "MINE", "value": "x"}]);
    assert_eq!(app.call(Method::POST, "/api/v2/usersecrets", &bob, Some(&secrets)).await.status, StatusCode::OK);
    let (waiting, _gate) = app.gate("bob");
    let running = app.create_job(&bob, &sh_job("bobs", &waiting)).await;
    app.wait_state_as(&bob, &running, "Running").await;
    let mut reads = sh_job("anns", "echo $HF");
    reads["spec"]["stopped"] = json!(true);
    reads["spec"]["envs"] = json!([{"name": "HF", "value_from": {"secret_name_ref": "HF"}}]);
    let anns = app.create_job(&ann, &reads).await;

    let preview = app.get("/api/v2/users/bob/removal").await;
    assert_eq!(preview.status, StatusCode::OK, "{}", preview.text());
    let preview: UserRemoval = typed(&preview);
    assert_eq!(preview.active_jobs.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(), [running.as_str()]);
    assert_eq!(preview.secrets, ["HF", "MINE"]);
    assert_eq!(preview.secret_uses.len(), 1, "{:?}", preview.secret_uses);
    assert_eq!((preview.secret_uses[0].secret.as_str(), preview.secret_uses[0].job.id.as_str()), ("HF", anns.as_str()));

    let yourself = app.call(Method::DELETE, "/api/v2/users/admin", &app.admin_token, None).await;
    assert_eq!(yourself.status, StatusCode::CONFLICT, "{}", yourself.text());
    let refused = app.call(Method::DELETE, "/api/v2/users/bob", &ann, None).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "a member removes nobody");

    let removed = app.call(Method::DELETE, "/api/v2/users/bob", &app.admin_token, None).await;
    assert_eq!(removed.status, StatusCode::OK, "{}", removed.text());
    let removed: RemovedUser = typed(&removed);
    assert_eq!(removed.stopped_jobs, vec![running.clone()]);
    assert_eq!(removed.deleted_secrets, 2);
    assert!(removed.revoked_tokens >= 1, "{removed:?}");
    assert_eq!(removed.secret_uses.len(), 1);
    assert_eq!(app.call(Method::GET, "/api/v2/jobs", &bob, None).await.status, StatusCode::UNAUTHORIZED, "at once");
    app.wait_state(&running, "Stopped").await;
    let users = app.get("/api/v2/users").await.text();
    assert!(!users.contains("\"bob\""), "{users}");
    let secrets = app.call(Method::GET, "/api/v2/usersecrets", &ann, None).await.text();
    assert!(!secrets.contains("HF"), "his public secret is gone: {secrets}");
    assert_eq!(app.get("/api/v2/users/bob/removal").await.status, StatusCode::NOT_FOUND);
    assert_eq!(
        app.call(Method::DELETE, "/api/v2/users/bob", &app.admin_token, None).await.status,
        StatusCode::NOT_FOUND
    );
    let role = app.call(Method::PATCH, "/api/v2/users/bob", &app.admin_token, Some(&json!({"role": "admin"}))).await;
    assert_eq!(role.status, StatusCode::NOT_FOUND, "a removed user gets no role: {}", role.text());

    // The name stays his: an invitation cannot hand it to someone else.
    let made = app.post_json("/api/v2/invitations", &app.admin_token, &json!({"role": "member"})).await.json();
    let body = serde_json::to_vec(&json!({"code": made["code"], "name": "bob"})).unwrap();
    let taken = app.request(Method::POST, "/api/v2/invitations/redeem", None, Some(("application/json", body))).await;
    assert_eq!(taken.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", taken.text());
}

/// The admin may hand a removed user's running job to a teammate instead:
/// it goes on, now the teammate's (who may stop it), with an event saying
/// so. Handing to nobody, to a viewer, to the user removed, or naming `to`
/// when stopping is refused on the field `to`, and nothing is removed.
#[tokio::test]
async fn a_removed_users_running_job_may_be_handed_to_a_teammate() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let bob = app.token_with_role("bob", Role::Member).await;
    let ann = app.token_with_role("ann", Role::Member).await;
    app.token_with_role("vera", Role::Viewer).await;
    let (waiting, gate) = app.gate("handed");
    let job = app.create_job(&bob, &sh_job("handed", &format!("{waiting}; echo done"))).await;
    app.wait_state_as(&bob, &job, "Running").await;

    for (query, why) in [
        ("jobs=hand-over", "whom to hand"),
        ("jobs=hand-over&to=vera", "is a viewer"),
        ("jobs=hand-over&to=bob", "someone other"),
        ("jobs=hand-over&to=nobody", "no user 'nobody'"),
        ("jobs=stop&to=ann", "only with jobs=hand-over"),
    ] {
        let res = app.call(Method::DELETE, &format!("/api/v2/users/bob?{query}"), &app.admin_token, None).await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{query}: {}", res.text());
        assert!(res.json()["fields"]["to"].to_string().contains(why), "{query}: {}", res.text());
    }
    let bogus = app.call(Method::DELETE, "/api/v2/users/bob?jobs=keep", &app.admin_token, None).await;
    assert_eq!(bogus.status, StatusCode::BAD_REQUEST, "{}", bogus.text());
    assert_eq!(app.call(Method::GET, "/api/v2/jobs", &bob, None).await.status, StatusCode::OK, "bob is still here");

    let res = app.call(Method::DELETE, "/api/v2/users/bob?jobs=hand-over&to=ann", &app.admin_token, None).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    let removed: RemovedUser = typed(&res);
    assert_eq!((removed.handed_over_jobs, removed.handed_to.as_deref()), (vec![job.clone()], Some("ann")));
    assert!(removed.stopped_jobs.is_empty());
    let now = app.job_as(&ann, &job).await;
    assert_eq!(
        (now["metadata"]["created_by"].as_str(), now["status"]["state"].as_str()),
        (Some("ann"), Some("Running"))
    );
    let events = app.events(&job).await;
    assert!(events.iter().any(|e| e["reason"] == "HandedOver"), "{events:?}");
    std::fs::write(&gate, "").unwrap();
    app.wait_state_as(&ann, &job, "Completed").await;
    assert_eq!(app.log(&job, &format!("{job}-0-0")).await, "done\n", "it went on");
}
