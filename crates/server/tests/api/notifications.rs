//! Notifications end to end: real jobs' transitions delivered by the
//! notifier to a receiver this test runs on loopback, which checks the
//! signature with its own HMAC and answers what each test scripts; the
//! allow-list, redirects, retries, disabling, and who sees what.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use hmac::{Hmac, Mac};
use jobdeck_core::config::Destination;
use serde_json::{json, Value};
use sha2::Sha256;

use crate::common::{sh_job, small_cluster, TestApp};

/// One request the receiver got.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Received {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

#[derive(Clone, Default)]
pub(crate) struct Receiver {
    got: Arc<Mutex<Vec<Received>>>,
    /// Statuses to answer, in order; 200 once they run out.
    answers: Arc<Mutex<VecDeque<u16>>>,
    pub base: String,
}

async fn receive(State(receiver): State<Receiver>, uri: Uri, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    receiver.got.lock().unwrap().push(Received { path: uri.path().to_string(), headers, body: body.to_vec() });
    if uri.path() == "/redirect" {
        let to = format!("{}/landed", receiver.base);
        return (StatusCode::FOUND, [(axum::http::header::LOCATION, to)]).into_response();
    }
    let status = receiver.answers.lock().unwrap().pop_front().unwrap_or(200);
    StatusCode::from_u16(status).unwrap().into_response()
}

impl Receiver {
    pub async fn start() -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let receiver = Receiver { base, ..Receiver::default() };
        let router = axum::Router::new().fallback(receive).with_state(receiver.clone());
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        receiver
    }

    fn answer(&self, statuses: &[u16]) {
        self.answers.lock().unwrap().extend(statuses);
    }

    pub fn got(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }
}

/// A cluster whose notifications may go to this machine's loopback, with
/// three attempts a second apart.
pub(crate) fn notifying(allow: &'static [&'static str]) -> impl FnOnce(&mut jobdeck_core::Config) {
    move |config: &mut jobdeck_core::Config| {
        small_cluster(4.0)(config);
        config.notifications.allow = allow.iter().map(|a| Destination::parse(a).unwrap()).collect();
        config.notifications.attempts = 3;
        config.notifications.retry_after = Duration::from_secs(1);
        config.auth.public_url = Some("https://jobs.example.com".into());
    }
}

pub(crate) async fn add_webhook(app: &TestApp, token: &str, url: &str, kind: &str) -> (i64, Option<String>) {
    let res = app.post_json("/api/v2/webhooks", token, &json!({"name": "my hook", "url": url, "kind": kind})).await;
    assert_eq!(res.status, StatusCode::CREATED, "{}", res.text());
    let created = res.json();
    (created["webhook"]["id"].as_i64().unwrap(), created["secret"].as_str().map(String::from))
}

pub(crate) async fn add_rule(app: &TestApp, token: &str, body: Value) -> Value {
    let res = app.post_json("/api/v2/notifications", token, &body).await;
    assert_eq!(res.status, StatusCode::CREATED, "{}", res.text());
    res.json()
}

pub(crate) async fn deliveries(app: &TestApp, token: &str, webhook: i64) -> Vec<Value> {
    let res = app.call(Method::GET, &format!("/api/v2/webhooks/{webhook}/deliveries"), token, None).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    res.json().as_array().unwrap().clone()
}

fn failing_job(name: &str) -> Value {
    let mut job = sh_job(name, "echo broken; exit 3");
    job["spec"]["backoff_limit"] = json!(0);
    job
}

pub(crate) fn hmac_hex(secret: &str, data: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(data);
    mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_job_is_posted_signed_to_its_owners_endpoint() {
    let app = TestApp::with_config(notifying(&["127.0.0.1"])).await;
    let receiver = Receiver::start().await;
    let alice = app.token_for("alice").await;
    let bob = app.token_for("bob").await;
    let url = format!("{}/hook?token=kept-private", receiver.base);
    let (hook, secret) = add_webhook(&app, &alice, &url, "json").await;
    let secret = secret.expect("a JSON endpoint's secret, shown once");

    // The address is write-only: lists show where, never the path or query.
    let listed = app.call(Method::GET, "/api/v2/webhooks", &alice, None).await;
    assert!(!listed.text().contains("kept-private") && !listed.text().contains(&secret), "{}", listed.text());
    assert_eq!(listed.json()[0]["destination"], receiver.base);
    assert_eq!(listed.json()[0]["enabled"], true);
    add_rule(&app, &alice, json!({"on": ["failed", "completed"], "webhook": hook})).await;

    // Bob's job fails first: Alice's rule for her jobs does not name it.
    let bobs = app.create_job(&bob, &failing_job("bobs")).await;
    app.wait_state_as(&bob, &bobs, "Failed").await;
    let id = app.create_job(&alice, &failing_job("alices")).await;
    app.wait_state_as(&alice, &id, "Failed").await;
    app.wait_until("the delivery", || async { !receiver.got().is_empty() }).await;

    let got = receiver.got();
    let request = &got[0];
    assert_eq!(request.path, "/hook");
    let body = request.json();
    assert_eq!(body["event"], "failed");
    assert_eq!(body["job"]["id"], id.as_str());
    assert_eq!(body["job"]["owner"], "alice");
    assert_eq!(body["job"]["state"], "Failed");
    assert_eq!(body["links"]["page"], format!("https://jobs.example.com/jobs/{id}/failure"));
    let header = |name: &str| request.headers[name].to_str().unwrap().to_string();
    let timestamp = header("x-jobdeck-timestamp");
    let signed = [timestamp.as_bytes(), b".", &request.body].concat();
    assert_eq!(header("x-jobdeck-signature"), format!("sha256={}", hmac_hex(&secret, &signed)));
    assert_ne!(header("x-jobdeck-signature"), format!("sha256={}", hmac_hex("another", &signed)));
    assert_eq!(header("x-jobdeck-delivery"), body["delivery"].to_string());
    assert_eq!(header("content-type"), "application/json");

    app.wait_until("the delivery recorded", || async {
        deliveries(&app, &alice, hook).await.first().is_some_and(|d| d["state"] == "delivered")
    })
    .await;
    let history = deliveries(&app, &alice, hook).await;
    assert_eq!(history.len(), 1, "only Alice's job: {history:?}");
    assert_eq!((history[0]["attempts"].as_i64(), history[0]["last_status"].as_i64()), (Some(1), Some(200)));
    assert_eq!(receiver.got().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_endpoint_is_retried_then_disabled_with_a_notice() {
    let app = TestApp::with_config(notifying(&["127.0.0.1"])).await;
    let receiver = Receiver::start().await;
    let alice = app.token_for("alice").await;
    let (hook, _) = add_webhook(&app, &alice, &format!("{}/hook", receiver.base), "json").await;
    add_rule(&app, &alice, json!({"on": ["failed"], "webhook": hook})).await;

    // One 500, then a 200: delivered on the second attempt.
    receiver.answer(&[500]);
    let first = app.create_job(&alice, &failing_job("first")).await;
    app.wait_until("a delivery after a retry", || async {
        deliveries(&app, &alice, hook).await.first().is_some_and(|d| d["state"] == "delivered")
    })
    .await;
    let delivered = &deliveries(&app, &alice, hook).await[0];
    assert_eq!((delivered["attempts"].as_i64(), delivered["job_id"].as_str()), (Some(2), Some(first.as_str())));
    let sent = receiver.got();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].headers["x-jobdeck-delivery"], sent[1].headers["x-jobdeck-delivery"], "one delivery, retried");

    // Every attempt answered 500: the delivery fails and the endpoint is
    // disabled, which its owner reads on it and in the audit log.
    receiver.answer(&[500, 503, 500]);
    app.create_job(&alice, &failing_job("second")).await;
    app.wait_until("the endpoint disabled", || async {
        app.call(Method::GET, "/api/v2/webhooks", &alice, None).await.json()[0]["enabled"] == false
    })
    .await;
    let listed = app.call(Method::GET, "/api/v2/webhooks", &alice, None).await.json();
    let reason = listed[0]["disabled_reason"].as_str().unwrap();
    assert!(reason.contains("failed 3 times") && reason.contains("answered 500"), "{reason}");
    let failed = &deliveries(&app, &alice, hook).await[0];
    assert_eq!((failed["state"].as_str(), failed["attempts"].as_i64()), (Some("failed"), Some(3)));
    let audit = app.get("/api/v2/audit?action=webhook.disabled").await.json();
    assert_eq!(audit["items"][0]["actor"], "alice");
    assert_eq!(audit["items"][0]["target"], hook.to_string());

    // Nothing goes to a disabled endpoint; enabled, it gets the next one.
    let third = app.create_job(&alice, &failing_job("third")).await;
    app.wait_state_as(&alice, &third, "Failed").await;
    // Its transition was kept with the state; enabling before the notifier
    // matched it would make it a delivery after all.
    app.wait_until("the transition matched", || async { !app.store.transitions_waiting().await.unwrap() }).await;
    let res = app.call(Method::POST, &format!("/api/v2/webhooks/{hook}/enable"), &alice, None).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    let fourth = app.create_job(&alice, &failing_job("fourth")).await;
    app.wait_until("the delivery after enabling", || async {
        receiver.got().last().is_some_and(|r| r.json()["job"]["id"] == fourth.as_str())
    })
    .await;
    assert!(receiver.got().iter().all(|r| r.json()["job"]["id"] != third.as_str()), "nothing while disabled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn destinations_outside_the_allow_list_are_refused() {
    let app = TestApp::with_config(notifying(&["localhost", "10.9.0.0/16"])).await;
    let alice = app.token_for("alice").await;
    let cases = [
        ("http://169.254.169.254/latest/meta-data", "169.254.169.254 is not a destination"),
        ("http://127.0.0.1:9/hook", "127.0.0.1 is not a destination"),
        ("http://[::1]:9/hook", "is not a destination"),
        ("http://10.1.0.1/hook", "10.1.0.1 is not a destination"),
        ("https://hooks.slack.com/services/x", "hooks.slack.com is not a destination"),
        ("ftp://localhost/hook", "must start with https://"),
        ("http://user:pass@localhost/hook", "must not hold a user name or password"),
        ("not a url", "not a URL"),
    ];
    for (url, expected) in cases {
        let res = app.post_json("/api/v2/webhooks", &alice, &json!({"name": "x", "url": url})).await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{url}: {}", res.text());
        let message = res.json()["fields"]["url"][0].as_str().unwrap_or_default().to_string();
        assert!(message.contains(expected), "{url}: {}", res.text());
    }
    // A listed name must still resolve to an address the list admits:
    // localhost is this machine, which no range here covers, so nothing is
    // sent and the delivery says why.
    let receiver = Receiver::start().await;
    let port = receiver.base.rsplit(':').next().unwrap();
    let (hook, _) = add_webhook(&app, &alice, &format!("http://localhost:{port}/hook"), "json").await;
    add_rule(&app, &alice, json!({"on": ["failed"], "webhook": hook})).await;
    app.create_job(&alice, &failing_job("rebound")).await;
    app.wait_until("an attempt refused", || async {
        deliveries(&app, &alice, hook).await.first().is_some_and(|d| d["attempts"].as_i64() >= Some(1))
    })
    .await;
    let refused = &deliveries(&app, &alice, hook).await[0];
    assert!(
        refused["last_error"].as_str().unwrap().contains("resolves only to addresses the allow-list does not admit"),
        "{refused}"
    );
    assert!(receiver.got().is_empty(), "nothing reached this machine");

    let off = TestApp::with_config(small_cluster(1.0)).await;
    let token = off.token_for("alice").await;
    let res =
        off.post_json("/api/v2/webhooks", &token, &json!({"name": "x", "url": "https://hooks.slack.com/x"})).await;
    assert!(res.text().contains("webhooks are off on this server"), "{}", res.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_is_not_followed_and_slack_gets_its_text() {
    let app = TestApp::with_config(notifying(&["127.0.0.1"])).await;
    let receiver = Receiver::start().await;
    let alice = app.token_for("alice").await;
    let (redirected, _) = add_webhook(&app, &alice, &format!("{}/redirect", receiver.base), "json").await;
    let (slack, secret) = add_webhook(&app, &alice, &format!("{}/slack", receiver.base), "slack").await;
    assert_eq!(secret, None, "Slack does not check a signature");
    add_rule(&app, &alice, json!({"on": ["completed"], "webhook": redirected})).await;
    add_rule(&app, &alice, json!({"on": ["completed"], "webhook": slack})).await;
    let id = app.create_job(&alice, &sh_job("done-now", "echo ok")).await;
    app.wait_until("the first attempts", || async {
        let first = |d: Vec<Value>| d.first().is_some_and(|d| d["attempts"].as_i64() >= Some(1));
        first(deliveries(&app, &alice, redirected).await) && first(deliveries(&app, &alice, slack).await)
    })
    .await;
    let redirect = &deliveries(&app, &alice, redirected).await[0];
    assert_eq!(redirect["last_status"], 302);
    assert!(redirect["last_error"].as_str().unwrap().contains("redirects are not followed"), "{redirect}");
    let got = receiver.got();
    assert!(got.iter().all(|r| r.path != "/landed"), "the redirect's target was never asked");
    let to_slack = got.iter().find(|r| r.path == "/slack").unwrap();
    assert!(to_slack.headers.get("x-jobdeck-signature").is_none());
    let text = to_slack.json()["text"].as_str().unwrap().to_string();
    assert_eq!(to_slack.json().as_object().unwrap().len(), 1, "Slack's message is one text");
    assert!(
        text.starts_with(&format!("Job <https://jobs.example.com/jobs/{id}|done-now> completed: Completed")),
        "{text}"
    );
    assert!(!text.contains("redirect"), "each endpoint gets its own body: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_and_rules_are_their_owners_alone() {
    let app = TestApp::with_config(notifying(&["127.0.0.1"])).await;
    let receiver = Receiver::start().await;
    let alice = app.token_for("alice").await;
    let bob = app.token_for("bob").await;
    let viewer = app.token_with_role("vera", jobdeck_api::Role::Viewer).await;
    let (alices, _) = add_webhook(&app, &alice, &format!("{}/alice", receiver.base), "json").await;

    assert_eq!(app.call(Method::GET, "/api/v2/webhooks", &bob, None).await.json(), json!([]));
    for (method, path) in [
        (Method::DELETE, format!("/api/v2/webhooks/{alices}")),
        (Method::POST, format!("/api/v2/webhooks/{alices}/enable")),
        (Method::GET, format!("/api/v2/webhooks/{alices}/deliveries")),
    ] {
        let res = app.call(method.clone(), &path, &bob, None).await;
        assert_eq!(res.status, StatusCode::NOT_FOUND, "{method} {path}: {}", res.text());
    }
    let res = app.post_json("/api/v2/notifications", &bob, &json!({"on": ["failed"], "webhook": alices})).await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", res.text());
    assert!(res.json()["fields"]["webhook"].is_array(), "{}", res.text());
    let res = app.post_json("/api/v2/notifications", &bob, &json!({"on": [], "webhook": alices})).await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", res.text());

    // A rule for another's job needs the job in sight: a private one is
    // answered as missing; a public one notifies the viewer who asked.
    // It waits at a gate never opened, which ends with the test's data.
    let mut private = sh_job("private", &app.gate("never").0);
    private["metadata"]["visibility"] = json!("private");
    let hidden = app.create_job(&alice, &private).await;
    let (veras, _) = add_webhook(&app, &viewer, &format!("{}/vera", receiver.base), "json").await;
    let res = app
        .post_json("/api/v2/notifications", &viewer, &json!({"job": hidden, "on": ["stopped"], "webhook": veras}))
        .await;
    assert_eq!(res.status, StatusCode::NOT_FOUND, "{}", res.text());
    // Made stopped, so it starts only after the rule exists.
    let (gate_wait, gate) = app.gate("public");
    let mut public_job = sh_job("public", &format!("{gate_wait}; echo done"));
    public_job["spec"]["stopped"] = json!(true);
    let public = app.create_job(&alice, &public_job).await;
    let rule = add_rule(&app, &viewer, json!({"job": public, "on": ["started", "completed"], "webhook": veras})).await;
    assert_eq!(rule["job"], public.as_str());
    let start = json!({"spec": {"stopped": false}});
    let res = app.call(Method::PATCH, &format!("/api/v2/jobs/{public}"), &alice, Some(&start)).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    app.wait_until("started, to Vera", || async {
        receiver.got().iter().any(|r| r.path == "/vera" && r.json()["event"] == "started")
    })
    .await;
    std::fs::write(&gate, "").unwrap();
    app.wait_until("completed, to Vera", || async {
        receiver.got().iter().any(|r| r.path == "/vera" && r.json()["event"] == "completed")
    })
    .await;
    assert!(receiver.got().iter().all(|r| r.path == "/vera"), "Alice made no rule");

    let rules = app.call(Method::GET, "/api/v2/notifications", &viewer, None).await.json();
    assert_eq!(rules.as_array().unwrap().len(), 1);
    let res = app.call(Method::DELETE, &format!("/api/v2/notifications/{}", rule["id"]), &bob, None).await;
    assert_eq!(res.status, StatusCode::NOT_FOUND, "not Bob's rule");
    let res = app.call(Method::DELETE, &format!("/api/v2/notifications/{}", rule["id"]), &viewer, None).await;
    assert_eq!(res.status, StatusCode::NO_CONTENT, "{}", res.text());

    // A removed user's endpoints and rules go with them.
    add_rule(&app, &viewer, json!({"on": ["failed"], "webhook": veras})).await;
    let removed = app.call(Method::DELETE, "/api/v2/users/vera", &app.admin_token, None).await;
    assert_eq!(removed.status, StatusCode::OK, "{}", removed.text());
    assert!(app.store.webhooks_of("vera".into()).await.unwrap().is_empty());
    assert!(app.store.notifications_of("vera".into()).await.unwrap().is_empty());
    assert_eq!(app.store.webhooks_of("alice".into()).await.unwrap().len(), 1, "others' stay");
}
