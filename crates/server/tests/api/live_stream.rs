//! The event stream (`GET /stream`, a job's events followed) against the
//! real server: what reaches whom, resuming after a cut, a reader too slow
//! or too late, a token that ends, and the bound per user. Every wait here
//! is for a message the server sends (with a deadline), never a sleep.

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

use crate::common::{sh_job, small_cluster, TestApp};

/// How long a test waits for a message before it fails.
const PATIENCE: Duration = Duration::from_secs(60);

/// One message of a stream.
#[derive(Debug, Clone)]
struct Message {
    name: String,
    data: Value,
    id: Option<String>,
}

/// A stream read message by message.
struct Stream {
    body: Body,
    buffer: String,
    /// The id of the last message read, as a client keeps it.
    last_id: Option<String>,
}

impl Stream {
    /// Opens `path` as `token`'s user, resuming after `last_id` if given;
    /// the status and, when it is 200, the stream.
    async fn open(app: &TestApp, path: &str, token: &str, last_id: Option<&str>) -> (StatusCode, Option<Stream>) {
        let mut request = Request::builder().uri(path).header(header::AUTHORIZATION, format!("Bearer {token}"));
        if let Some(id) = last_id {
            request = request.header("last-event-id", id);
        }
        let response = app.router.clone().oneshot(request.body(Body::empty()).unwrap()).await.unwrap();
        let status = response.status();
        if status != StatusCode::OK {
            let text = response.into_body().collect().await.unwrap().to_bytes();
            eprintln!("{path}: {status} {}", String::from_utf8_lossy(&text));
            return (status, None);
        }
        assert_eq!(response.headers()[header::CONTENT_TYPE], "text/event-stream");
        let stream = Stream { body: response.into_body(), buffer: String::new(), last_id: last_id.map(String::from) };
        (status, Some(stream))
    }

    /// The next message (comments and id-only beats are kept as ids only),
    /// or `None` when the stream ended.
    async fn next(&mut self) -> Option<Message> {
        // One deadline for the message, however many keep-alives come first.
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let (mut name, mut data, mut id) = (None, String::new(), None);
                for line in block.lines() {
                    if let Some(value) = line.strip_prefix("event:") {
                        name = Some(value.trim().to_string());
                    } else if let Some(value) = line.strip_prefix("data:") {
                        data.push_str(value.trim_start());
                    } else if let Some(value) = line.strip_prefix("id:") {
                        id = Some(value.trim().to_string());
                    }
                }
                if id.is_some() {
                    self.last_id = id.clone();
                }
                if let Some(name) = name {
                    let data = serde_json::from_str(&data).unwrap_or_else(|e| panic!("{name}: {e}: {data}"));
                    return Some(Message { name, data, id });
                }
            }
            let frame = tokio::time::timeout_at(deadline, self.body.frame())
                .await
                .unwrap_or_else(|_| panic!("no message within {PATIENCE:?}; holding {:?}", self.buffer))?;
            let frame = frame.expect("the stream broke");
            if let Ok(data) = frame.into_data() {
                self.buffer.push_str(std::str::from_utf8(&data).unwrap());
            }
        }
    }

    /// Reads until a message satisfies `wanted`, returning it and every
    /// message before it.
    async fn until(&mut self, what: &str, wanted: impl Fn(&Message) -> bool) -> (Message, Vec<Message>) {
        let mut before = Vec::new();
        loop {
            let message = self.next().await.unwrap_or_else(|| panic!("the stream ended before {what}: {before:?}"));
            if wanted(&message) {
                return (message, before);
            }
            before.push(message);
        }
    }
}

fn is_job(message: &Message, id: &str) -> bool {
    message.name == "job" && message.data["metadata"]["id"] == id
}

fn state_of(message: &Message) -> &str {
    message.data["status"]["state"].as_str().unwrap_or("")
}

fn mentions(message: &Message, id: &str) -> bool {
    message.data.to_string().contains(id)
}

/// A state change reaches a stream of the list and a stream of the job; the
/// job's stream opens with its job, replicas and events as the `GET`s
/// answer them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_changes_reach_the_list_and_the_job_as_they_happen() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let alice = app.token_for("alice").await;
    let (_, list) = Stream::open(&app, "/api/v2/stream?jobs=true", &alice, None).await;
    let mut list = list.unwrap();
    assert_eq!(list.next().await.unwrap().name, "open");

    let (gate, open) = app.gate("go");
    let id = app.create_job(&alice, &sh_job("live", &format!("echo started; {gate}; echo done"))).await;
    list.until("the job running", |m| is_job(m, &id) && state_of(m) == "Running").await;

    let (_, job) = Stream::open(&app, &format!("/api/v2/stream?job={id}"), &alice, None).await;
    let mut job = job.unwrap();
    let mut first = Vec::new();
    for _ in 0..4 {
        first.push(job.next().await.unwrap());
    }
    assert_eq!(first.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(), ["open", "job", "replicas", "events"]);
    assert_eq!(first[1].data, app.job_as(&alice, &id).await, "the job as GET /jobs/{{id}} answers it");
    assert_eq!(first[2].data["replicas"], json!(app.replicas(&id).await));
    assert_eq!(first[3].data["events"], json!(app.events(&id).await));
    assert!(first[3].id.is_some() && first[0].id.is_none(), "only a batch's last message carries the id");

    std::fs::write(&open, "").unwrap();
    let (_, before) = job.until("the job completed", |m| is_job(m, &id) && state_of(m) == "Completed").await;
    let succeeded = |m: &Message| m.name == "replicas" && m.data["replicas"][0]["status"]["phase"] == "succeeded";
    assert!(before.iter().any(succeeded), "the replica's end came before the job's: {before:?}");
    list.until("the job completed in the list", |m| is_job(m, &id) && state_of(m) == "Completed").await;

    let deleted = app.call(Method::DELETE, &format!("/api/v2/jobs/{id}"), &alice, None).await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text());
    job.until("the job deleted", |m| m.name == "job_deleted" && m.data["job"] == id.as_str()).await;
    list.until("the job deleted in the list", |m| m.name == "job_deleted" && m.data["job"] == id.as_str()).await;
}

/// Another user's private job is never sent, not as a change of the list,
/// not when it is deleted, and cannot be followed (the same 404 as its GET).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_jobs_changes_are_never_sent_to_another_user() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let (alice, bob) = (app.token_for("alice").await, app.token_for("bob").await);
    let (_, watcher) = Stream::open(&app, "/api/v2/stream?jobs=true", &bob, None).await;
    let mut watcher = watcher.unwrap();

    let mut private = sh_job("secret-plans", "echo hidden");
    private["metadata"]["visibility"] = json!("private");
    let private = app.create_job(&alice, &private).await;
    app.wait_state_as(&alice, &private, "Completed").await;
    let (status, _) = Stream::open(&app, &format!("/api/v2/stream?job={private}"), &bob, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "following it is refused as reading it is");
    let (status, _) = Stream::open(&app, &format!("/api/v2/jobs/{private}/events?follow=true"), &bob, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = Stream::open(&app, &format!("/api/v2/stream?log={private}/{private}-0-0"), &bob, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "nor its log");
    // A replica that is no attempt of the job (a path, another job's) is
    // never turned into a file to read: 404 before any file is opened.
    for replica in ["..%2F..%2Fjobdeck.db", "other-job-0-0", &format!("{private}-0-0%2F..%2F..")] {
        let (status, _) = Stream::open(&app, &format!("/api/v2/stream?log={private}/{replica}"), &alice, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{replica}");
    }
    assert_eq!(app.call(Method::DELETE, &format!("/api/v2/jobs/{private}"), &alice, None).await.status, StatusCode::OK);

    // The public job comes after every change of the private one; nothing
    // before it may name the private job.
    let mut public = sh_job("open-plans", "echo shown");
    public["metadata"]["visibility"] = json!("public");
    let public = app.create_job(&alice, &public).await;
    let (_, before) = watcher.until("the public job", |m| is_job(m, &public)).await;
    assert!(before.iter().all(|m| !mentions(m, &private)), "the private job was sent: {before:?}");
    let (_, before) =
        watcher.until("the public job completed", |m| is_job(m, &public) && state_of(m) == "Completed").await;
    assert!(before.iter().all(|m| !mentions(m, &private)), "the private job was sent: {before:?}");
}

/// A client that reconnects with the id of the last message it received
/// gets `resumed` and then exactly what changed while it was away: the job
/// it saw before the cut is not sent again, the one created during the cut
/// is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_resumes_after_a_cut_with_no_gap_and_no_repeat() {
    let app = TestApp::with_config(small_cluster(4.0)).await;
    let token = app.admin_token.clone();
    let (_, stream) = Stream::open(&app, "/api/v2/stream?jobs=true", &token, None).await;
    let mut stream = stream.unwrap();
    let (gate, _open) = app.gate("held");
    let held = app.create_job(&token, &sh_job("held", &gate)).await;
    stream.until("the held job running", |m| is_job(m, &held) && state_of(m) == "Running").await;
    let last_id = stream.last_id.clone().expect("a message carried an id");
    drop(stream);

    let during = app.create_job(&token, &sh_job("during-the-cut", "echo hi")).await;
    app.wait_state(&during, "Completed").await;

    let (_, resumed) = Stream::open(&app, "/api/v2/stream?jobs=true", &token, Some(&last_id)).await;
    let mut resumed = resumed.unwrap();
    assert_eq!(resumed.next().await.unwrap().name, "resumed");
    let (done, before) =
        resumed.until("the job of the cut completed", |m| is_job(m, &during) && state_of(m) == "Completed").await;
    assert!(done.id.is_some());
    for message in &before {
        assert!(is_job(message, &during), "only the job changed during the cut comes: {message:?}");
    }
}

/// A reader that stops reading while more changes are made than the server
/// keeps, one that comes back with an id from before a restart, and one
/// with an id the server never sent, each get `resync` (and the followed
/// job again), never a silent gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_too_slow_or_from_another_run_is_told_to_resync() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let token = app.admin_token.clone();
    let id = app.create_job(&token, &sh_job("watched", "echo hi")).await;
    app.wait_state(&id, "Completed").await;
    let path = format!("/api/v2/stream?job={id}");
    let (_, slow) = Stream::open(&app, &path, &token, None).await;
    let mut slow = slow.unwrap();
    slow.until("its events", |m| m.name == "events").await;
    // The reader reads nothing while the feed moves past its window: the
    // server holds the reader's cursor, not the changes it missed.
    let feed = app.store.changes();
    feed.publish((0..=jobdeck_store::changes::WINDOW).map(|_| jobdeck_store::changes::Change::Metrics("other".into())));
    let message = slow.next().await.unwrap();
    assert_eq!(message.name, "resync");
    assert!(is_job(&slow.next().await.unwrap(), &id), "the followed job comes again after a resync");

    for id in ["0123456789abcdef-1", "not-an-id"] {
        let (_, stream) = Stream::open(&app, &path, &token, Some(id)).await;
        assert_eq!(stream.unwrap().next().await.unwrap().name, "resync", "{id}");
    }
}

/// A stream whose token is revoked, or expires, gets `end` saying so and
/// closes; the same token cannot open another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_or_expired_tokens_stream_ends() {
    use jobdeck_server::http::auth::{issue_token, TokenRequest};
    let app = TestApp::new().await;
    let issued = issue_token(&app.store, "carol", TokenRequest::api()).await.unwrap();
    let (_, stream) = Stream::open(&app, "/api/v2/stream?jobs=true", &issued.secret, None).await;
    let mut stream = stream.unwrap();
    assert_eq!(stream.next().await.unwrap().name, "open");
    let revoked = app.call(Method::DELETE, &format!("/api/v2/tokens/{}", issued.id), &issued.secret, None).await;
    assert_eq!(revoked.status, StatusCode::OK, "{}", revoked.text());
    let (end, _) = stream.until("the end", |m| m.name == "end").await;
    assert_eq!(end.data["reason"], "this token was revoked");
    assert!(stream.next().await.is_none(), "the stream closes after its end");
    let (status, _) = Stream::open(&app, "/api/v2/stream?jobs=true", &issued.secret, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let brief = TokenRequest { lifetime: Some(Duration::from_secs(1)), ..TokenRequest::api() };
    let brief = issue_token(&app.store, "carol", brief).await.unwrap();
    let (_, stream) = Stream::open(&app, "/api/v2/stream?jobs=true", &brief.secret, None).await;
    let (end, _) = stream.unwrap().until("the end", |m| m.name == "end").await;
    assert_eq!(end.data["reason"], "this token expired");
}

/// One user holds at most `limits.streams_per_user` streams; past it a 429
/// names the bound, another user is not affected, and closing one makes
/// room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_holds_a_bounded_number_of_streams() {
    let app = TestApp::with_config(|config| config.limits.streams_per_user = 2).await;
    let alice = app.token_for("alice").await;
    let (_, first) = Stream::open(&app, "/api/v2/stream?jobs=true", &alice, None).await;
    let (_, _second) = Stream::open(&app, "/api/v2/stream?jobs=true", &alice, None).await;
    let refused = app.call(Method::GET, "/api/v2/stream?jobs=true", &alice, None).await;
    assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(refused.text().contains("limits.streams_per_user"), "{}", refused.text());
    let (status, _) = Stream::open(&app, "/api/v2/stream?jobs=true", &app.admin_token, None).await;
    assert_eq!(status, StatusCode::OK, "another user has a bound of their own");
    drop(first);
    let (status, _) = Stream::open(&app, "/api/v2/stream?jobs=true", &alice, None).await;
    assert_eq!(status, StatusCode::OK, "a closed stream makes room");
    let bad = app.call(Method::GET, "/api/v2/stream?log=nothing", &alice, None).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(bad.text().contains("log must be <job>/<replica>"), "{}", bad.text());
}

/// A followed log sends its lines from `log_from` as they are written, with
/// their numbers, and says when the attempt ended; in the gateway form too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_followed_log_sends_new_lines_and_its_end() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let token = app.admin_token.clone();
    let (gate, open) = app.gate("more");
    let id = app.create_job(&token, &sh_job("talking", &format!("echo one; echo two; {gate}; echo three"))).await;
    let replica = format!("{id}-0-0");
    app.wait_state(&id, "Running").await;
    app.wait_until("two lines", || {
        let (app, id, replica) = (&app, id.clone(), replica.clone());
        async move { app.log(&id, &replica).await.lines().count() >= 2 }
    })
    .await;
    let path = format!("/api/v2/workspaces/jobdeck/stream?log={id}/{replica}&log_from=2");
    let (_, stream) = Stream::open(&app, &path, &token, None).await;
    let mut stream = stream.unwrap();
    let (first, _) = stream.until("lines", |m| m.name == "log").await;
    let texts: Vec<&str> =
        first.data["lines"].as_array().unwrap().iter().map(|l| l["text"].as_str().unwrap()).collect();
    assert_eq!(texts, ["two"], "{first:?}");
    assert_eq!(first.data["lines"][0]["line"], 2);
    std::fs::write(&open, "").unwrap();
    let mut seen = Vec::new();
    loop {
        let (message, _) = stream.until("more lines", |m| m.name == "log").await;
        seen.extend(message.data["lines"].as_array().unwrap().iter().map(|l| l["text"].as_str().unwrap().to_string()));
        if message.data["ended"] == true {
            break;
        }
    }
    assert_eq!(seen.iter().filter(|t| t.as_str() == "three").count(), 1, "{seen:?}");
    assert!(stream.next().await.is_none(), "a stream that follows only a log ends with it");
}

/// `GET /jobs/{id}/events` followed sends each event once, oldest first,
/// then the new ones; resuming with the last id sends only what came after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jobs_events_can_be_followed_one_by_one() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let token = app.admin_token.clone();
    let (gate, open) = app.gate("end");
    let id = app.create_job(&token, &sh_job("eventful", &gate)).await;
    app.wait_state(&id, "Running").await;
    let before: Vec<Value> = app.events(&id).await;
    let (_, stream) = Stream::open(&app, &format!("/api/v2/jobs/{id}/events?follow=true"), &token, None).await;
    let mut stream = stream.unwrap();
    let mut first = Vec::new();
    for _ in 0..before.len() {
        first.push(stream.next().await.unwrap());
    }
    assert!(first.iter().all(|m| m.name == "event"));
    let reasons: Vec<&Value> = first.iter().map(|m| &m.data["reason"]).collect();
    let mut oldest_first: Vec<&Value> = before.iter().map(|e| &e["reason"]).collect();
    oldest_first.reverse();
    assert_eq!(reasons, oldest_first, "every event, oldest first");
    let last_id = stream.last_id.clone().unwrap();
    drop(stream);

    std::fs::write(&open, "").unwrap();
    app.wait_state(&id, "Completed").await;
    // Asked as a browser's EventSource asks: by `Accept`, with the id.
    let request = Request::builder()
        .uri(format!("/api/v2/jobs/{id}/events"))
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::ACCEPT, "text/event-stream")
        .header("last-event-id", &last_id)
        .body(Body::empty())
        .unwrap();
    let response = app.router.clone().oneshot(request).await.unwrap();
    let mut resumed = Stream { body: response.into_body(), buffer: String::new(), last_id: None };
    let (completed, before) =
        resumed.until("the completion", |m| m.name == "event" && m.data["reason"] == "Completed").await;
    assert!(completed.id.is_some());
    for message in before {
        assert_ne!(message.data["reason"], "Created", "events from before the cut are not sent again");
    }
}
