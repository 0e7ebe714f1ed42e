//! The event stream: `GET /stream` (the changes a user may see, as they
//! happen, as Server-Sent Events) and `GET /jobs/{id}/events` followed. See
//! docs/api.md, "Live changes".
//!
//! A stream reads the store's change feed ([`jobdeck_store::changes`]) and
//! turns each change it follows into a snapshot read for its user through
//! the same functions as the equivalent `GET` (so what it sends is what that
//! `GET` would answer, hidden jobs included: never sent). Its body is made
//! only as fast as the client reads it: a client that stops reading holds a
//! cursor, not a queue, and when it reads again past the feed's window it
//! gets a `resync`. [`topics`] reads what a stream asks for; [`subscriber`]
//! is one stream's loop.

mod subscriber;
pub mod topics;

use std::convert::Infallible;

use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::stream::{self, Stream};
use jobdeck_store::JobRow;

use crate::http::auth::CurrentUser;
use crate::http::error::{AppError, AppResult};
use crate::http::jobs::{query_pairs, visible_job};
use crate::{AppState, Route};
use subscriber::{FollowedEvents, FollowedLog, Subscriber, Watching};
use topics::{Resume, Topics};

pub fn routes() -> Vec<Route> {
    vec![("/stream", get(open_stream))]
}

/// `GET /stream?jobs=true&job=<id>&log=<job>/<replica>&log_from=<n>`.
async fn open_stream(
    State(state): State<AppState>,
    user: CurrentUser,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> AppResult<Response> {
    let pairs = query_pairs(raw.as_deref());
    let topics = Topics::parse(&pairs)?;
    // Each job and log is authorized as its `GET` is, and answers the same
    // 404 for a job that is missing and one the caller may not see.
    let mut jobs = Vec::with_capacity(topics.jobs.len());
    for id in &topics.jobs {
        jobs.push(visible_job(&state, &user, id).await?.id);
    }
    let log = match &topics.log {
        Some(log) => {
            let job = visible_job(&state, &user, &log.job).await?;
            Some(FollowedLog::open(&state, &job, &log.replica, log.from).await?)
        }
        None => None,
    };
    let resume = Resume::parse(last_event_id(&headers, &pairs).as_deref());
    let permit = state.user_limits.stream(&user)?;
    let watching = Watching { list: topics.list, jobs, events_of: None };
    Ok(answer(Subscriber::new(state, user, watching, log, resume, permit)))
}

/// Whether a `GET /jobs/{id}/events` asks to follow (`follow=true`, or an
/// `Accept` of `text/event-stream` as `EventSource` sends).
pub fn asks_for_a_stream(headers: &HeaderMap, raw: Option<&str>) -> AppResult<bool> {
    let mut follow = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.split(',').any(|part| part.trim().starts_with("text/event-stream")));
    for (key, value) in query_pairs(raw) {
        match (key.as_str(), value.as_str()) {
            ("follow", "true" | "1") => follow = true,
            ("follow", "false" | "0") => follow = false,
            ("follow", other) => {
                return Err(AppError::BadRequest(format!("follow must be true or false, not '{other}'")));
            }
            _ => {}
        }
    }
    Ok(follow)
}

/// `GET /jobs/{id}/events` followed: every event of `job` as one `event`
/// message, oldest first, then each new one or one seen again as it is
/// recorded (seed 004's `task events`). A client resuming with
/// `Last-Event-ID` gets the events recorded or seen again since the last one
/// it received.
pub async fn job_events(state: AppState, user: CurrentUser, job: JobRow, headers: &HeaderMap) -> AppResult<Response> {
    let permit = state.user_limits.stream(&user)?;
    let since = last_event_id(headers, &[]).and_then(|id| subscriber::events_resume_time(&id));
    let watching = Watching { list: false, jobs: vec![job.id.clone()], events_of: Some(FollowedEvents::new(since)) };
    Ok(answer(Subscriber::new(state, user, watching, None, Resume::Fresh, permit)))
}

/// The id to resume after: the `Last-Event-ID` header (what a browser's
/// `EventSource` sends when it reconnects) or the `last_event_id` parameter.
fn last_event_id(headers: &HeaderMap, pairs: &[(String, String)]) -> Option<String> {
    headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| pairs.iter().find(|(key, _)| key == "last_event_id").map(|(_, value)| value.clone()))
}

/// The SSE answer over a subscriber's messages.
fn answer(subscriber: Subscriber) -> Response {
    let messages = stream::unfold(subscriber, |mut subscriber| async move {
        let batch = subscriber.next_batch().await?;
        Some((stream::iter(batch.into_iter().map(Ok::<Event, Infallible>)), subscriber))
    });
    let body: std::pin::Pin<Box<dyn Stream<Item = Result<Event, Infallible>> + Send>> =
        Box::pin(futures_util::StreamExt::flatten(messages));
    let mut response = Sse::new(body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // A proxy in front (nginx) must pass each message on as it comes.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}
