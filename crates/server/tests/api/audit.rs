//! The audit log through the API: each change is recorded once answered,
//! with who, what, its target and how it ended (refusals with their
//! reason); a secret's value never reaches it; admins read it filtered
//! and page by page; nobody else reads it.

use crate::common;

use axum::http::{Method, StatusCode};
use common::{sh_job, small_cluster, TestApp};
use jobdeck_api::{AuditList, AuditOutcome, Role};
use serde_json::json;

fn typed<T: serde::de::DeserializeOwned>(res: &common::TestResponse) -> T {
    serde_json::from_slice(&res.body).unwrap_or_else(|e| panic!("{e}: {}", res.text()))
}

async fn audit(app: &TestApp, query: &str) -> AuditList {
    let answer = app.get(&format!("/api/v2/audit?{query}")).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
    typed(&answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_change_and_refusal_is_recorded_with_who_what_and_why() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let bob = app.token_with_role("bob", Role::Member).await;
    let (wait, _release) = app.gate("audited");
    let job = app.create_job(&bob, &sh_job("audited", &wait)).await;
    app.wait_state_as(&bob, &job, "Running").await;
    let stop = json!({"spec": {"stopped": true}});
    let stopped = app.call(Method::PATCH, &format!("/api/v2/jobs/{job}"), &bob, Some(&stop)).await;
    assert_eq!(stopped.status, StatusCode::OK, "{}", stopped.text());
    let secret = json!([{"name": "HF_TOKEN", "value": "hf-very-secret-value"}]);
    assert_eq!(app.call(Method::POST, "/api/v2/usersecrets", &bob, Some(&secret)).await.status, StatusCode::OK);
    let quota = json!({"running_gpus": 100});
    let refused = app.call(Method::PUT, "/api/v2/quotas/role/member", &bob, Some(&quota)).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let forged = app.call(Method::DELETE, &format!("/api/v2/jobs/{job}"), "jd_forged", None).await;
    assert_eq!(forged.status, StatusCode::UNAUTHORIZED);
    let role = app.call(Method::PATCH, "/api/v2/users/bob", &app.admin_token, Some(&json!({"role": "viewer"}))).await;
    assert_eq!(role.status, StatusCode::OK, "{}", role.text());
    // Reads are not recorded.
    app.get("/api/v2/jobs").await;

    let all = audit(&app, "").await;
    let seen: Vec<(&str, &str, &str, AuditOutcome)> =
        all.items.iter().map(|e| (e.actor.as_str(), e.action.as_str(), e.target.as_str(), e.outcome)).collect();
    let expected = [
        ("admin", "user.role", "bob", AuditOutcome::Ok),
        ("", "job.delete", job.as_str(), AuditOutcome::Refused),
        ("bob", "quota.set", "role/member", AuditOutcome::Refused),
        ("bob", "secret.set", "HF_TOKEN", AuditOutcome::Ok),
        ("bob", "job.stop", job.as_str(), AuditOutcome::Ok),
        ("bob", "job.create", job.as_str(), AuditOutcome::Ok),
    ];
    assert_eq!(&seen[..expected.len()], expected, "newest first: {seen:?}");
    assert_eq!(all.items[0].detail, "role viewer");
    assert!(
        all.items[2].detail.starts_with("403 Forbidden: bob is a member here;"),
        "a refusal says why: {}",
        all.items[2].detail
    );
    assert!(all.items[1].detail.starts_with("401 Unauthorized"), "{}", all.items[1].detail);
    let text = app.get("/api/v2/audit").await.text();
    assert!(!text.contains("hf-very-secret-value"), "a secret's value never reaches the log");
    assert!(!text.contains("jd_forged"), "nor a token");

    let bobs = audit(&app, "actor=bob&action=job.").await;
    assert_eq!(bobs.items.iter().map(|e| e.action.as_str()).collect::<Vec<_>>(), ["job.stop", "job.create"]);
    let refusals = audit(&app, "outcome=refused").await;
    assert!(refusals.items.iter().all(|e| e.outcome == AuditOutcome::Refused) && refusals.items.len() >= 2);
    let first = audit(&app, "limit=2").await;
    assert_eq!(first.items.len(), 2);
    let next = first.next.expect("more than two entries");
    let second = audit(&app, &format!("limit=2&before={next}")).await;
    assert_eq!(second.items[0].action, "quota.set", "the page after the first two");
    let bad = app.get("/api/v2/audit?limit=0&outcome=maybe").await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.text());

    let ann = app.token_with_role("ann", Role::Member).await;
    assert_eq!(app.call(Method::GET, "/api/v2/audit", &ann, None).await.status, StatusCode::FORBIDDEN);

    // A request naming many things keeps a bounded entry.
    let many: Vec<_> = (0..200).map(|i| json!({"name": format!("SECRET_NUMBER_{i:04}"), "value": "v"})).collect();
    let stored = app.call(Method::POST, "/api/v2/usersecrets", &ann, Some(&json!(many))).await;
    assert_eq!(stored.status, StatusCode::OK, "{}", stored.text());
    let anns = audit(&app, "actor=ann&action=secret.set").await;
    assert_eq!(anns.items[0].target.chars().count(), 500, "{:?}", anns.items[0].target);
}

/// An invitation redeemed without a token is recorded as the person it
/// let in.
#[tokio::test]
async fn a_redeemed_invitation_is_recorded_as_the_newcomer() {
    let app = TestApp::new().await;
    let made = app.post_json("/api/v2/invitations", &app.admin_token, &json!({"role": "viewer"})).await.json();
    let body = serde_json::to_vec(&json!({"code": made["code"], "name": "vera"})).unwrap();
    let redeemed =
        app.request(Method::POST, "/api/v2/invitations/redeem", None, Some(("application/json", body))).await;
    assert_eq!(redeemed.status, StatusCode::OK, "{}", redeemed.text());
    let log = audit(&app, "action=invitation.").await;
    let seen: Vec<(&str, &str, &str)> =
        log.items.iter().map(|e| (e.actor.as_str(), e.action.as_str(), e.detail.as_str())).collect();
    assert_eq!(
        seen,
        [
            ("vera", "invitation.redeem", "joined as a viewer"),
            ("admin", "invitation.create", "as a viewer, open 7 days")
        ]
    );
    assert!(!app.get("/api/v2/audit").await.text().contains(made["code"].as_str().unwrap()), "never a code");
}

/// Anyone may send requests without a token; past `[audit]
/// anonymous_per_minute` they are counted in one entry a minute instead of
/// a row each, and the count still says how many came. A signed-in user's
/// refusals are recorded one by one however many.
#[tokio::test]
async fn a_flood_of_requests_without_a_token_is_counted_not_written_row_by_row() {
    let app = TestApp::with_config(|config| config.audit.anonymous_per_minute = 3).await;
    let flood = 40;
    for i in 0..flood {
        let forged = app.call(Method::DELETE, &format!("/api/v2/jobs/job-{i}"), "jd_forged", None).await;
        assert_eq!(forged.status, StatusCode::UNAUTHORIZED);
    }
    let vera = app.token_with_role("vera", Role::Viewer).await;
    for i in 0..10 {
        let refused = app.call(Method::DELETE, &format!("/api/v2/jobs/job-{i}"), &vera, None).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
    }

    let log = audit(&app, "limit=500").await;
    let one_by_one = log.items.iter().filter(|e| e.actor.is_empty() && e.action == "job.delete").count();
    let counted: usize = log
        .items
        .iter()
        .filter(|e| e.action == "audit.unrecorded")
        .map(|e| e.detail.split(' ').next().and_then(|n| n.parse::<usize>().ok()).expect(&e.detail))
        .sum();
    // The flood may straddle a minute's end: at most two minutes' worth.
    assert!(one_by_one <= 6, "{one_by_one} written one by one");
    assert_eq!(one_by_one + counted, flood, "every request is accounted for");
    let vera_refused = log.items.iter().filter(|e| e.actor == "vera" && e.action == "job.delete").count();
    assert_eq!(vera_refused, 10, "a signed-in user is recorded one by one");
    let text = app.get("/api/v2/audit").await.text();
    assert!(!text.contains("jd_forged"), "never a token");
}
