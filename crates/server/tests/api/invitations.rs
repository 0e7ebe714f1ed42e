//! Invitations through the API: an admin invites, the teammate joins once
//! with a local account and a personal token, and every way an invitation
//! stops letting people in (used, withdrawn, a workspace with an identity
//! provider) is said, with nothing made. The identity provider's side is in
//! `tests/sso.rs`, against a real provider.

use crate::common;

use axum::http::{Method, StatusCode};
use common::TestApp;
use jobdeck_api::{CreatedInvitation, InvitationList, InvitationState, RedeemedInvitation, Role};
use serde_json::{json, Value};

fn typed<T: serde::de::DeserializeOwned>(res: &common::TestResponse) -> T {
    serde_json::from_slice(&res.body).unwrap_or_else(|e| panic!("{e}: {}", res.text()))
}

async fn anonymous_post(app: &TestApp, path: &str, body: &Value) -> common::TestResponse {
    let bytes = serde_json::to_vec(body).unwrap();
    app.request(Method::POST, &format!("/api/v2{path}"), None, Some(("application/json", bytes))).await
}

async fn invite(app: &TestApp, body: Value) -> CreatedInvitation {
    let res = app.post_json("/api/v2/invitations", &app.admin_token, &body).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    typed(&res)
}

async fn invitations(app: &TestApp) -> InvitationList {
    typed(&app.get("/api/v2/invitations").await)
}

/// The whole local path: the link, what it offers, names refused with the
/// invitation still open, the account it makes (with the invitation's role
/// and a token that signs in), and a second use refused with nothing made.
#[tokio::test]
async fn an_admin_invites_and_the_teammate_joins_once_with_a_local_account() {
    let app = TestApp::new().await;
    let made = invite(&app, json!({"role": "viewer", "note": "vera@example.com"})).await;
    assert!(made.code.starts_with("jdi_") && made.code.len() == 68, "{}", made.code);
    assert_eq!(made.link, format!("/invite#code={}", made.code));
    assert_eq!((made.info.role, made.info.state), (Role::Viewer, InvitationState::Open));
    assert_eq!(made.info.created_by.as_deref(), Some("admin"));
    let days = (made.info.expires_at - made.info.created_at) / 86_400_000;
    assert_eq!(days, 7, "open a week unless asked");

    let check = anonymous_post(&app, "/invitations/check", &json!({"code": made.code})).await;
    assert_eq!(check.status, StatusCode::OK, "{}", check.text());
    let offered = check.json();
    assert_eq!((offered["role"].as_str(), offered["invited_by"].as_str()), (Some("viewer"), Some("admin")));
    assert!(offered.get("single_sign_on").is_none(), "{offered}");

    for (name, why) in [("../etc", "only letters"), ("", "1 to 64"), ("admin", "is taken")] {
        let res = anonymous_post(&app, "/invitations/redeem", &json!({"code": made.code, "name": name})).await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{name:?}: {}", res.text());
        let said = res.json()["fields"]["name"].to_string();
        assert!(said.contains(why), "{name:?}: {}", res.text());
    }
    let joined = anonymous_post(&app, "/invitations/redeem", &json!({"code": made.code, "name": "vera"})).await;
    assert_eq!(joined.status, StatusCode::OK, "the refusals left it open: {}", joined.text());
    let joined: RedeemedInvitation = typed(&joined);
    assert_eq!((joined.user.as_str(), joined.role), ("vera", Role::Viewer));
    let me = app.call(Method::GET, "/api/v2/workspace", &joined.token.token, None).await.json();
    assert_eq!((me["current_user"].as_str(), me["current_user_role"].as_str()), (Some("vera"), Some("viewer")));
    let expiry_days = (joined.token.info.expires_at.unwrap() - joined.token.info.created_at) / 86_400_000;
    assert_eq!(expiry_days, 90, "a personal token's default lifetime");

    let again = anonymous_post(&app, "/invitations/redeem", &json!({"code": made.code, "name": "eve"})).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND, "{}", again.text());
    assert!(again.text().contains("already used, has expired or was withdrawn"), "{}", again.text());
    let check = anonymous_post(&app, "/invitations/check", &json!({"code": made.code})).await;
    assert_eq!(check.status, StatusCode::NOT_FOUND);
    let users = app.get("/api/v2/users").await.text();
    assert!(!users.contains("\"eve\""), "a second use makes nobody: {users}");

    let listed = app.get("/api/v2/invitations").await;
    assert!(!listed.text().contains(&made.code[4..]), "a listing never shows a code");
    let listed: InvitationList = typed(&listed);
    let only = &listed.invitations[0];
    assert_eq!(
        (only.state, only.used_by.as_deref(), only.note.as_str()),
        (InvitationState::Used, Some("vera"), "vera@example.com")
    );
}

/// Two teammates using one invitation at the same moment: one gets in.
#[tokio::test]
async fn one_invitation_used_twice_at_once_lets_one_person_in() {
    let app = TestApp::new().await;
    let made = invite(&app, json!({"role": "member"})).await;
    let (ann, bob) = (json!({"code": made.code, "name": "ann"}), json!({"code": made.code, "name": "bob"}));
    let first = anonymous_post(&app, "/invitations/redeem", &ann);
    let second = anonymous_post(&app, "/invitations/redeem", &bob);
    let (first, second) = tokio::join!(first, second);
    let mut statuses = [first.status, second.status];
    statuses.sort();
    assert_eq!(statuses, [StatusCode::OK, StatusCode::NOT_FOUND], "{} / {}", first.text(), second.text());
}

/// An invitation's bounds, withdrawing one (once, and then it lets nobody
/// in), and the answers for what is not there.
#[tokio::test]
async fn invitations_are_bounded_and_withdrawn_invitations_let_nobody_in() {
    let app = TestApp::new().await;
    let bad =
        app.post_json("/api/v2/invitations", &app.admin_token, &json!({"role": "owner", "expires_in_days": 31})).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "an unknown role: {}", bad.text());
    assert!(bad.json()["fields"]["role"].to_string().contains("not 'owner'"), "{}", bad.text());
    let bad = app
        .post_json(
            "/api/v2/invitations",
            &app.admin_token,
            &json!({"role": "member", "expires_in_days": 31, "note": "a\nb"}),
        )
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.text());
    let fields = bad.json()["fields"].clone();
    assert!(fields.get("expires_in_days").is_some() && fields.get("note").is_some(), "{fields}");
    assert!(invitations(&app).await.invitations.is_empty(), "nothing stored");

    let made = invite(&app, json!({"role": "admin", "expires_in_days": 1})).await;
    let path = format!("/api/v2/invitations/{}", made.info.id);
    let withdrawn = app.call(Method::DELETE, &path, &app.admin_token, None).await;
    assert_eq!(withdrawn.status, StatusCode::OK, "{}", withdrawn.text());
    assert_eq!(withdrawn.json()["state"], "withdrawn");
    let twice = app.call(Method::DELETE, &path, &app.admin_token, None).await;
    assert_eq!(twice.status, StatusCode::CONFLICT, "{}", twice.text());
    assert!(twice.text().contains("is withdrawn"), "{}", twice.text());
    let used = anonymous_post(&app, "/invitations/redeem", &json!({"code": made.code, "name": "mallory"})).await;
    assert_eq!(used.status, StatusCode::NOT_FOUND, "{}", used.text());
    for missing in ["/api/v2/invitations/999", "/api/v2/invitations/x"] {
        assert_eq!(app.call(Method::DELETE, missing, &app.admin_token, None).await.status, StatusCode::NOT_FOUND);
    }
    let made_up = anonymous_post(&app, "/invitations/check", &json!({"code": "jdi_00"})).await;
    assert_eq!(made_up.status, StatusCode::NOT_FOUND);
    let member = app.token_with_role("mona", Role::Member).await;
    let refused = app.post_json("/api/v2/invitations", &member, &json!({"role": "admin"})).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "a member cannot invite: {}", refused.text());
}

/// With an identity provider, an invitation is accepted there: no local
/// account is made, and a start with an invitation that lets nobody in is
/// sent back before the provider is asked. (The provider here is a closed
/// loopback port; `tests/sso.rs` has the real one.)
#[tokio::test]
async fn with_an_identity_provider_invitations_go_through_it() {
    let app = TestApp::with_config(|config| {
        config.auth.public_url = Some("http://127.0.0.1:8080".into());
        config.auth.oidc = Some(toml::from_str("issuer = 'http://127.0.0.1:1'\nclient_id = 'jobdeck'").unwrap());
    })
    .await;
    let made = invite(&app, json!({"role": "member"})).await;
    assert_eq!(made.link, format!("http://127.0.0.1:8080/invite#code={}", made.code), "on the public address");
    let offered = anonymous_post(&app, "/invitations/check", &json!({"code": made.code})).await.json();
    assert_eq!(offered["single_sign_on"]["start"], "/api/v2/auth/oidc/start", "{offered}");
    let local = anonymous_post(&app, "/invitations/redeem", &json!({"code": made.code, "name": "bob"})).await;
    assert_eq!(local.status, StatusCode::BAD_REQUEST, "{}", local.text());
    assert_eq!(invitations(&app).await.invitations[0].state, InvitationState::Open, "still open");

    let start = |code: &str| format!("/api/v2/auth/oidc/start?next=/jobs&invitation={code}");
    let bogus = app.request(Method::GET, &start("jdi_bogus"), None, None).await;
    assert_eq!(bogus.headers["location"], "http://127.0.0.1:8080/login?problem=invitation-unusable");
    let good = app.request(Method::GET, &start(&made.code), None, None).await;
    assert_eq!(
        good.headers["location"], "http://127.0.0.1:8080/login?problem=unreachable",
        "checked, then the provider"
    );
}
