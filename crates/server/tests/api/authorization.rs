//! Roles: the authorization table holds for every route the router serves,
//! in both the direct and the gateway form, for every role; and what each
//! role may do to jobs, tokens and users, end to end through the API.
//!
//! The walk asks the real router which methods each path serves (an
//! anonymous call of a method a route lacks gets the JSON 405, as
//! `openapi.rs` does), so a route added without a rule in
//! `http/access.rs` fails it (the layer answers 500 for it).

use crate::common;

use axum::http::{Method, StatusCode};
use common::TestApp;
use jobdeck_api::{CreatedToken, Role, TokenInfo, UserList};
use jobdeck_server::http::access::{self, Access};
use serde_json::{json, Value};

const METHODS: [Method; 5] = [Method::GET, Method::POST, Method::PUT, Method::PATCH, Method::DELETE];

fn typed<T: serde::de::DeserializeOwned>(res: &common::TestResponse) -> T {
    serde_json::from_slice(&res.body).unwrap_or_else(|e| panic!("{e}: {}", res.text()))
}

fn body_for(method: &Method) -> Option<(&'static str, Vec<u8>)> {
    matches!(*method, Method::POST | Method::PUT | Method::PATCH).then(|| ("application/json", b"{}".to_vec()))
}

async fn set_stopped(app: &TestApp, token: &str, id: &str, stopped: bool) -> common::TestResponse {
    let body = json!({"spec": {"stopped": stopped}});
    app.call(Method::PATCH, &format!("/api/v2/jobs/{id}"), token, Some(&body)).await
}

async fn set_role(app: &TestApp, name: &str, role: &str) -> common::TestResponse {
    app.call(Method::PATCH, &format!("/api/v2/users/{name}"), &app.admin_token, Some(&json!({ "role": role }))).await
}

#[tokio::test]
async fn every_route_answers_each_role_as_the_table_says_in_both_forms() {
    let app = TestApp::new().await;
    let workspace = app.get("/api/v2/workspace").await.json()["id"].as_str().unwrap().to_string();
    let tokens = [
        (Role::Viewer, app.token_with_role("vera", Role::Viewer).await),
        (Role::Member, app.token_with_role("mona", Role::Member).await),
        (Role::Admin, app.admin_token.clone()),
    ];
    let mut walked = 0;
    for path in jobdeck_server::api_paths() {
        let concrete = crate::openapi::concrete(path);
        for uri in [format!("/api/v2{concrete}"), format!("/api/v2/workspaces/{workspace}{concrete}")] {
            for method in METHODS {
                let anonymous = app.request(method.clone(), &uri, None, body_for(&method)).await;
                let rule = access::rule(&method, path);
                if anonymous.status == StatusCode::METHOD_NOT_ALLOWED {
                    assert_eq!(rule, None, "{method} {path} is not served but has a rule");
                    continue;
                }
                let Some(rule) = rule else { panic!("{method} {uri} is served without a rule in http/access.rs") };
                walked += 1;
                match rule {
                    Access::Anyone => assert_ne!(anonymous.status, StatusCode::UNAUTHORIZED, "{method} {uri}"),
                    Access::AtLeast(_) => {
                        assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED, "{method} {uri}: {}", anonymous.text())
                    }
                }
                for (role, token) in &tokens {
                    let res = app.request(method.clone(), &uri, Some(token), body_for(&method)).await;
                    let refused = matches!(rule, Access::AtLeast(needed) if *role < needed);
                    let said = format!("{method} {uri} as {role:?}: {} {}", res.status, res.text());
                    assert_ne!(res.status, StatusCode::INTERNAL_SERVER_ERROR, "{said}");
                    assert_ne!(res.status, StatusCode::UNAUTHORIZED, "{said}");
                    if refused {
                        assert_eq!(res.status, StatusCode::FORBIDDEN, "{said}");
                        let message = res.json()["message"].as_str().unwrap_or_default().to_string();
                        assert!(message.contains(&format!("is a {}", role.as_str())), "{said}");
                    } else {
                        assert_ne!(res.status, StatusCode::FORBIDDEN, "{said}");
                    }
                }
            }
        }
    }
    assert_eq!(walked, 2 * access::RULES.len(), "every rule is a route the router serves, in both forms");
}

/// A viewer reads a public job and its logs but cannot stop, delete or
/// create one; a member changes only their own; an admin every public job
/// and no private one; and a role change holds from the next request.
#[tokio::test]
async fn each_role_does_to_jobs_what_it_may_and_nothing_more() {
    let app = TestApp::new().await;
    let viewer = app.token_with_role("vera", Role::Viewer).await;
    let member = app.token_for("mona").await;
    // Replicas wait at a gate the test never opens, so every job stays
    // running (and stoppable) until the test ends.
    let (waiting, _) = app.gate("never");
    let job = |name: &str, visibility: &str| {
        json!({"metadata": {"name": name, "visibility": visibility},
               "spec": {"resource_shape": "cpu.small", "container": {"command": ["sh", "-c", waiting]}}})
    };
    let admins = app.create_job(&app.admin_token, &job("admins", "public")).await;
    let mona_public = app.create_job(&member, &job("mona-public", "public")).await;
    let mona_private = app.create_job(&member, &job("mona-private", "private")).await;
    // The viewer reads what is public, and is told why it cannot change it.
    assert_eq!(app.request(Method::GET, &format!("/api/v2/jobs/{admins}"), Some(&viewer), None).await.status, 200);
    let private = app.request(Method::GET, &format!("/api/v2/jobs/{mona_private}"), Some(&viewer), None).await;
    assert_eq!(private.status, StatusCode::NOT_FOUND, "another user's private job stays hidden");
    let refused = set_stopped(&app, &viewer, &admins, true).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text());
    assert!(refused.text().contains("vera is a viewer here; PATCH /api/v2/jobs/{id} needs the member role"));
    let refused = app.request(Method::DELETE, &format!("/api/v2/jobs/{admins}"), Some(&viewer), None).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert_eq!(app.post_json("/api/v2/jobs", &viewer, &job("vera", "public")).await.status, StatusCode::FORBIDDEN);
    let me = app.request(Method::GET, "/api/v2/workspace", Some(&viewer), None).await.json();
    assert_eq!((me["current_user"].as_str(), me["current_user_role"].as_str()), (Some("vera"), Some("viewer")));

    // A member cannot stop the admin's job; the admin may stop the member's
    // public job and cannot even see the private one.
    let refused = set_stopped(&app, &member, &admins, true).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.text());
    assert!(refused.text().contains("only its creator, or an admin when it is public"), "{}", refused.text());
    assert_eq!(set_stopped(&app, &app.admin_token, &mona_public, true).await.status, StatusCode::OK);
    assert_eq!(set_stopped(&app, &app.admin_token, &mona_private, true).await.status, StatusCode::NOT_FOUND);

    // A member made a viewer is one from the next request on, with the same
    // token; made a member again, the token works again.
    let changed = set_role(&app, "mona", "viewer").await;
    assert_eq!(changed.status, StatusCode::OK, "{}", changed.text());
    assert_eq!(changed.json()["role"], "viewer");
    assert_eq!(set_stopped(&app, &member, &mona_private, true).await.status, StatusCode::FORBIDDEN);
    assert_eq!(set_role(&app, "mona", "member").await.status, StatusCode::OK);
    assert_eq!(set_stopped(&app, &member, &mona_private, true).await.status, StatusCode::OK);
    app.wait_state(&mona_public, "Stopped").await;
    let started = set_stopped(&app, &member, &mona_public, false).await;
    assert_eq!(started.status, StatusCode::OK, "{}", started.text());
}

/// Admin routes refuse members; the workspace's only admin cannot be
/// demoted (nor demote themself); a role that is no role is a 422 naming
/// the field.
#[tokio::test]
async fn users_and_roles_are_for_admins_and_the_workspace_keeps_one() {
    let app = TestApp::new().await;
    let member = app.token_for("mona").await;
    for (method, uri) in [(Method::GET, "/api/v2/users"), (Method::PATCH, "/api/v2/users/mona")] {
        let body = (method == Method::PATCH).then(|| ("application/json", br#"{"role": "admin"}"#.to_vec()));
        let res = app.request(method.clone(), uri, Some(&member), body).await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "{method} {uri}: {}", res.text());
    }
    let users: UserList = typed(&app.get("/api/v2/users").await);
    let roles: Vec<(&str, Role, i64)> = users.users.iter().map(|u| (u.name.as_str(), u.role, u.live_tokens)).collect();
    assert_eq!(roles, vec![("admin", Role::Admin, 1), ("mona", Role::Member, 1)]);

    let last = app
        .request(
            Method::PATCH,
            "/api/v2/users/admin",
            Some(&app.admin_token),
            Some(("application/json", br#"{"role": "member"}"#.to_vec())),
        )
        .await;
    assert_eq!(last.status, StatusCode::CONFLICT, "{}", last.text());
    assert!(last.text().contains("only admin"), "{}", last.text());
    let bad = app
        .request(
            Method::PATCH,
            "/api/v2/users/mona",
            Some(&app.admin_token),
            Some(("application/json", br#"{"role": "owner"}"#.to_vec())),
        )
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.text());
    assert!(bad.json()["fields"]["role"].is_array(), "{}", bad.text());
    assert_eq!(
        app.request(
            Method::PATCH,
            "/api/v2/users/nobody",
            Some(&app.admin_token),
            Some(("application/json", br#"{"role": "viewer"}"#.to_vec()))
        )
        .await
        .status,
        StatusCode::NOT_FOUND
    );
    // With a second admin, the first may step down.
    assert_eq!(
        app.request(
            Method::PATCH,
            "/api/v2/users/mona",
            Some(&app.admin_token),
            Some(("application/json", br#"{"role": "admin"}"#.to_vec()))
        )
        .await
        .status,
        StatusCode::OK
    );
    assert_eq!(
        app.request(
            Method::PATCH,
            "/api/v2/users/admin",
            Some(&app.admin_token),
            Some(("application/json", br#"{"role": "member"}"#.to_vec()))
        )
        .await
        .status,
        StatusCode::OK
    );
    assert_eq!(app.get("/api/v2/users").await.status, StatusCode::FORBIDDEN, "a member now");
}

/// Anyone makes personal tokens for themself, shown once, listed in
/// Lepton's shape with a mask of their first and last characters (which is
/// how `lep` finds its own token's expiry); only an admin lists or revokes
/// another user's, and a revoked token stops at once.
#[tokio::test]
async fn personal_tokens_are_made_listed_and_revoked_through_the_api() {
    let app = TestApp::new().await;
    let viewer = app.token_with_role("vera", Role::Viewer).await;
    let body = |value: Value| Some(("application/json", serde_json::to_vec(&value).unwrap()));
    let made = app
        .request(Method::POST, "/api/v2/tokens", Some(&viewer), body(json!({"name": "laptop", "expires_in_days": 7})))
        .await;
    assert_eq!(made.status, StatusCode::OK, "{}", made.text());
    let made: CreatedToken = typed(&made);
    let now = jobdeck_server::now_millis();
    let expires = made.info.expires_at.expect("a personal token expires");
    assert!((expires - now - 7 * 86_400_000).abs() < 60_000, "7 days: {expires}");
    assert_eq!((made.info.name.as_str(), made.info.user.as_str()), ("laptop", "vera"));

    // Lepton's reading: a list; the item whose mask matches is this token.
    let listed = app.request(Method::GET, "/api/v2/tokens", Some(&made.token), None).await;
    let items = listed.json();
    let matching: Vec<&Value> = items
        .as_array()
        .expect("GET /tokens is a list, as leptonai reads it")
        .iter()
        .filter(|item| {
            let masked = item["masked_value"].as_str().unwrap_or_default();
            masked.split_once("...").is_some_and(|(l, r)| made.token.starts_with(l) && made.token.ends_with(r))
        })
        .collect();
    assert_eq!(matching.len(), 1, "{items}");
    assert_eq!((matching[0]["expires_at"].as_i64(), matching[0]["current"].as_bool()), (Some(expires), Some(true)));
    assert!(!listed.text().contains(&made.token), "the secret is never listed");

    // Bad requests name the field; nothing is made.
    let bad = app
        .request(Method::POST, "/api/v2/tokens", Some(&viewer), body(json!({"name": "a\nb", "expires_in_days": 9999})))
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.text());
    let fields = &bad.json()["fields"];
    assert!(fields["name"].is_array() && fields["expires_in_days"].is_array(), "{}", bad.text());
    let unknown = app.request(Method::POST, "/api/v2/tokens", Some(&viewer), body(json!({"role": "admin"}))).await;
    assert_eq!(unknown.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", unknown.text());
    let mine: Vec<TokenInfo> = typed(&app.request(Method::GET, "/api/v2/tokens", Some(&viewer), None).await);
    assert_eq!(mine.len(), 2, "the first token and the laptop's: {mine:?}");

    // Others' tokens: an admin's business only.
    for query in ["?user=admin", "?all=true"] {
        let res = app.request(Method::GET, &format!("/api/v2/tokens{query}"), Some(&viewer), None).await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "{query}: {}", res.text());
    }
    let admin_id = typed::<Vec<TokenInfo>>(&app.get("/api/v2/tokens").await)[0].id;
    let res = app.request(Method::DELETE, &format!("/api/v2/tokens/{admin_id}"), Some(&viewer), None).await;
    assert_eq!(res.status, StatusCode::NOT_FOUND, "another user's token is not theirs to know");
    let everyone: Vec<TokenInfo> = typed(&app.get("/api/v2/tokens?all=true").await);
    assert_eq!(everyone.iter().filter(|t| t.user == "vera").count(), 2);
    let veras: Vec<TokenInfo> = typed(&app.get("/api/v2/tokens?user=vera").await);
    assert_eq!(veras.len(), 2);

    // The admin revokes the laptop's token: it stops on its next request.
    let uri = format!("/api/v2/tokens/{}", made.info.id);
    let revoked = app.request(Method::DELETE, &uri, Some(&app.admin_token), None).await;
    assert_eq!(revoked.json()["user"], "vera");
    let res = app.request(Method::GET, "/api/v2/jobs", Some(&made.token), None).await;
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);
    assert_eq!(app.request(Method::GET, "/api/v2/jobs", Some(&viewer), None).await.status, StatusCode::OK);
}

/// docs/teams.md lists the authorization table as `http/access.rs` has it,
/// row for row, so the page people read is the rule the server applies.
#[test]
fn teams_md_lists_every_rule() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/teams.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let is_rule = |line: &&str| METHODS.iter().any(|m| line.starts_with(&format!("| `{m}` |")));
    let rows: Vec<&str> = doc.lines().filter(is_rule).collect();
    let expected: Vec<String> = access::RULES
        .iter()
        .map(|(method, path, access)| {
            let who = match access {
                Access::Anyone => "anyone",
                Access::AtLeast(role) => role.as_str(),
            };
            format!("| `{method}` | `{path}` | {who} |")
        })
        .collect();
    assert_eq!(rows, expected, "docs/teams.md's table differs from http/access.rs");
}

/// With single sign-on set up but the provider unreachable, a sign-in is
/// sent back to the sign-in page with a problem it explains (not a bare
/// 500); a next
/// that leaves the site is refused first; the callback without a started
/// sign-in says it expired. Nothing leaves the machine: the issuer is a
/// closed loopback port.
#[tokio::test]
async fn a_sign_in_through_an_unreachable_provider_comes_back_saying_so() {
    let app = TestApp::with_config(|config| {
        config.auth.public_url = Some("http://127.0.0.1:8080".into());
        config.auth.oidc = Some(toml::from_str("issuer = 'http://127.0.0.1:1'\nclient_id = 'jobdeck'").unwrap());
    })
    .await;
    let methods = app.request(Method::GET, "/api/v2/auth/methods", None, None).await.json();
    assert_eq!(methods["single_sign_on"]["start"], "/api/v2/auth/oidc/start", "{methods}");
    let start = app.request(Method::GET, "/api/v2/auth/oidc/start?next=/jobs", None, None).await;
    assert_eq!(start.status, StatusCode::SEE_OTHER, "{}", start.text());
    let location = start.headers["location"].to_str().unwrap();
    assert_eq!(location, "http://127.0.0.1:8080/login?problem=unreachable");
    let away = app.request(Method::GET, "/api/v2/auth/oidc/start?next=//evil.example", None, None).await;
    assert_eq!(away.status, StatusCode::BAD_REQUEST, "{}", away.text());
    let callback = app.request(Method::GET, "/api/v2/auth/oidc/callback?code=x&state=y", None, None).await;
    assert_eq!(callback.headers["location"], "http://127.0.0.1:8080/login?problem=expired");
}
