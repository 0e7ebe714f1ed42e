//! The API's behaviour at its edges: authentication, bad input, unknown routes.

use crate::common;

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

fn typed<T: serde::de::DeserializeOwned>(res: &common::TestResponse) -> T {
    serde_json::from_slice(&res.body).unwrap_or_else(|e| panic!("{e}: {}", res.text()))
}

/// A console session is made from a token, lists as the request's own,
/// ends on sign-out, and ends at once when the token it came from is
/// revoked: a stolen session cannot outlive its revoked origin.
#[tokio::test]
async fn sessions_end_on_sign_out_and_with_the_token_they_came_from() {
    use jobdeck_api::{NewSession, TokenInfo, TokenKind};
    let app = TestApp::new().await;
    let bob = app.token_for("bob").await;
    let made = app.call(Method::POST, "/api/v2/sessions", &bob, None).await;
    assert_eq!(made.status, StatusCode::OK, "{}", made.text());
    let session: NewSession = typed(&made);
    assert_ne!(session.token, bob);

    let listed: Vec<TokenInfo> = typed(&app.call(Method::GET, "/api/v2/tokens", &session.token, None).await);
    let kinds: Vec<(TokenKind, bool)> = listed.iter().map(|t| (t.kind, t.current)).collect();
    assert_eq!(kinds, vec![(TokenKind::Api, false), (TokenKind::Session, true)]);
    let listing = app.call(Method::GET, "/api/v2/tokens", &bob, None).await.text();
    assert!(
        !made.text().contains(&bob) && !listing.contains(&bob) && !listing.contains(&session.token),
        "no secret is listed: {listing}"
    );
    let api_id = listed[0].id;
    assert_eq!(listed[1].origin_id, Some(api_id));

    // Signing out with an API token is refused: only sessions end that way.
    let refused = app.call(Method::DELETE, "/api/v2/sessions/current", &bob, None).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.text());

    // Alice cannot revoke bob's token, and learns nothing about it.
    let alice = app.token_for("alice").await;
    let other = app.call(Method::DELETE, &format!("/api/v2/tokens/{api_id}"), &alice, None).await;
    assert_eq!(other.status, StatusCode::NOT_FOUND);
    assert_eq!(app.call(Method::GET, "/api/v2/jobs", &session.token, None).await.status, StatusCode::OK);

    // Revoking the API token ends the session made from it, on its next request.
    let revoked = app.call(Method::DELETE, &format!("/api/v2/tokens/{api_id}"), &bob, None).await;
    assert_eq!(revoked.status, StatusCode::OK, "{}", revoked.text());
    assert_eq!(revoked.json()["revoked"], 2);
    for token in [&bob, &session.token] {
        let res = app.call(Method::GET, "/api/v2/jobs", token, None).await;
        assert_eq!(res.status, StatusCode::UNAUTHORIZED);
        assert!(res.text().contains("this token was revoked"), "{}", res.text());
    }

    // Signing out revokes the session itself, and only it.
    let bob = app.token_for("bob").await;
    let session: NewSession = typed(&app.call(Method::POST, "/api/v2/sessions", &bob, None).await);
    let out = app.call(Method::DELETE, "/api/v2/sessions/current", &session.token, None).await;
    assert_eq!(out.status, StatusCode::OK, "{}", out.text());
    assert_eq!(app.call(Method::GET, "/api/v2/jobs", &session.token, None).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(app.call(Method::GET, "/api/v2/jobs", &bob, None).await.status, StatusCode::OK);
}

/// An expired token answers 401 saying so; a session never outlives the
/// token it came from, except the sign-in link's, which exists to be
/// traded for one.
#[tokio::test]
async fn expired_tokens_are_refused_and_sessions_end_with_their_token() {
    use jobdeck_api::{NewSession, TokenKind};
    use jobdeck_server::http::auth::{self, TokenRequest};
    use std::time::Duration;
    let app = TestApp::with_config(|config| config.auth.session_lifetime = Duration::from_secs(30 * 86_400)).await;
    let now = jobdeck_server::now_millis();
    let (user, _) = app.store.ensure_user("carol", jobdeck_api::Role::Member, now).await.unwrap();
    let expired = jobdeck_store::NewToken {
        user_id: user.id,
        hash: auth::hash_token("jd_expired"),
        kind: TokenKind::Api,
        name: String::new(),
        created_at: now - 10_000,
        expires_at: Some(now - 1),
        origin_id: None,
        masked: None,
    };
    app.store.insert_token(expired).await.unwrap();
    let res = app.call(Method::GET, "/api/v2/jobs", "jd_expired", None).await;
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);
    assert!(res.text().contains("this token expired at"), "{}", res.text());

    let hour = TokenRequest { lifetime: Some(Duration::from_secs(3600)), ..TokenRequest::api() };
    let short = auth::issue_token(&app.store, "carol", hour.clone()).await.unwrap();
    let session: NewSession = typed(&app.call(Method::POST, "/api/v2/sessions", &short.secret, None).await);
    assert!(session.expires_at <= short.expires_at.unwrap(), "a session ends with its token");

    let link = TokenRequest { kind: TokenKind::SignInLink, ..hour };
    let link = auth::issue_token(&app.store, "carol", link).await.unwrap();
    let session: NewSession = typed(&app.call(Method::POST, "/api/v2/sessions", &link.secret, None).await);
    assert!(session.expires_at >= now + 29 * 86_400_000, "the link's session lasts the configured 30 days");
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
    let warning = body["isolation_warning"].as_str().unwrap_or_default();
    assert!(warning.starts_with("Jobs run as processes of the server's own user"), "{body}");
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

/// A GPU shape says its GPU's compute capability: configured, or read from
/// a GPU NVIDIA lists; a CPU shape has none.
#[tokio::test]
async fn gpu_shapes_say_their_compute_capability() {
    let app = TestApp::with_config(|config| {
        let gpu = |name: &str, kind: &str, configured: Option<&str>| jobdeck_core::config::ShapeConfig {
            name: name.into(),
            cpu: 4.0,
            memory_mb: 65_536,
            gpus: 1,
            accelerator_type: Some(kind.into()),
            accelerator_memory_mb: Some(81_559),
            compute_capability: configured.map(String::from),
            ephemeral_storage_gb: None,
            description: None,
        };
        config.shapes.push(gpu("gpu.1xh100", "NVIDIA-H100-80GB-HBM3", None));
        config.shapes.push(gpu("gpu.1xnew", "Some-New-GPU", Some("12.0")));
    })
    .await;
    let shapes = app.get("/api/v2/shapes").await.json();
    let capability = |id: &str| {
        let shape = shapes.as_array().unwrap().iter().find(|s| s["metadata"]["id"] == id).unwrap();
        shape["spec"].get("accelerator_compute_capability").cloned()
    };
    assert_eq!(capability("gpu.1xh100"), Some(serde_json::json!("9.0")));
    assert_eq!(capability("gpu.1xnew"), Some(serde_json::json!("12.0")));
    assert_eq!(capability("cpu.small"), None);
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

/// Log lines as `jobdeck serve` writes them (without colours).
#[derive(Clone, Default)]
struct CapturedLog(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for CapturedLog {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The log of this test binary, captured from the first call on. A
/// subscriber for the whole process, not one per test: tracing caches
/// whether a call site is enabled for whichever thread reaches it first,
/// and the other tests' threads would cache "disabled" for this one.
fn captured_log() -> &'static CapturedLog {
    static LOG: std::sync::OnceLock<CapturedLog> = std::sync::OnceLock::new();
    LOG.get_or_init(|| {
        let log = CapturedLog::default();
        let writer = log.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_env_filter(tracing_subscriber::EnvFilter::new("info"))
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("no other subscriber in this binary");
        log
    })
}

impl CapturedLog {
    fn lines(&self) -> Vec<String> {
        String::from_utf8_lossy(&self.0.lock().unwrap()).lines().map(str::to_string).collect()
    }
}

/// Every API request is one line of the log naming its method, the route
/// the router matched (never the address: it holds job names), its status
/// and latency; a 500 carries its cause on that same line, while the
/// caller learns nothing of it.
#[tokio::test]
async fn each_request_is_one_log_line_by_route_and_a_500_says_its_cause() {
    use jobdeck_store::{JobRow, JobRuntime};
    let log = captured_log();
    // A finished job whose stored metadata no longer reads: an internal
    // error, as a damaged database gives.
    let now = jobdeck_server::now_millis();
    let damaged = JobRow {
        id: "private-name-aaaaa".into(),
        name: "private-name".into(),
        created_by: "admin".into(),
        visibility: jobdeck_api::Visibility::Public,
        created_at: now,
        metadata: Default::default(),
        spec: serde_json::from_value(common::sh_job("private-name", "true")["spec"].clone()).unwrap(),
        priority: 4000,
        node_groups: Vec::new(),
        rerun_of: None,
        runtime: JobRuntime { state: jobdeck_api::JobState::Completed, queued_at: Some(now), ..JobRuntime::default() },
        logs: Default::default(),
    };
    let app = TestApp::with_stored_jobs_changed_by(
        |_| {},
        vec![damaged],
        "UPDATE jobs SET metadata = '{damaged' WHERE id = 'private-name-aaaaa'",
    )
    .await;

    let answer = app.get("/api/v2/jobs/private-name-aaaaa?pretty=private-query").await;
    assert_eq!(answer.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(!answer.text().contains("damaged") && !answer.text().contains("key"), "{}", answer.text());
    assert_eq!(app.get("/api/v2/shapes").await.status, StatusCode::OK);
    assert_eq!(app.request(Method::GET, "/api/v2/jobs", None, None).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(app.get("/api/v2/no/such/route/private-path").await.status, StatusCode::NOT_FOUND);

    let lines = log.lines();
    let requests: Vec<&String> = lines.iter().filter(|line| line.contains("request{")).collect();
    let line_of = |route: &str, status: u16| {
        requests
            .iter()
            .find(|line| line.contains(&format!("route={route}")) && line.contains(&format!("status={status}")))
            .unwrap_or_else(|| panic!("no line for {route} {status} in:\n{}", lines.join("\n")))
    };
    let failed = line_of("/api/v2/jobs/{id}", 500);
    assert!(failed.contains("ERROR") && failed.contains("method=GET"), "{failed}");
    assert!(
        failed.contains("cause=\"a database statement failed")
            && failed.contains("the metadata cannot be read: key must"),
        "the cause, quoted, on the same line: {failed}"
    );
    assert!(failed.contains("latency_ms="), "{failed}");
    line_of("/api/v2/shapes", 200);
    line_of("/api/v2/jobs", 401);
    line_of("(no route)", 404);
    for line in &requests {
        assert!(!line.contains("private"), "a request's line names no job, path or query of the address: {line}");
    }
    // The cause is said once, on the request's line.
    let said = lines.iter().filter(|line| line.contains("key must be a string")).count();
    assert_eq!(said, 1, "{}", lines.join("\n"));
}

/// Signing out everywhere ends every console session of the caller, the
/// request's own included, and nobody else's; API tokens keep working.
#[tokio::test]
async fn signing_out_everywhere_ends_every_session_of_the_caller_and_nothing_else() {
    use jobdeck_api::NewSession;
    let app = TestApp::new().await;
    let bob = app.token_for("bob").await;
    let alice = app.token_for("alice").await;
    let laptop: NewSession = typed(&app.call(Method::POST, "/api/v2/sessions", &bob, None).await);
    let phone: NewSession = typed(&app.call(Method::POST, "/api/v2/sessions", &bob, None).await);
    let hers: NewSession = typed(&app.call(Method::POST, "/api/v2/sessions", &alice, None).await);

    let out = app.call(Method::DELETE, "/api/v2/sessions", &laptop.token, None).await;
    assert_eq!(out.status, StatusCode::OK, "{}", out.text());
    assert_eq!(out.json()["revoked"], 2);
    for session in [&laptop.token, &phone.token] {
        let res = app.call(Method::GET, "/api/v2/jobs", session, None).await;
        assert_eq!(res.status, StatusCode::UNAUTHORIZED, "a session outlived signing out everywhere");
    }
    for still in [&bob, &hers.token, &alice] {
        assert_eq!(app.call(Method::GET, "/api/v2/jobs", still, None).await.status, StatusCode::OK);
    }
}
