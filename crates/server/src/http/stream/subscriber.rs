//! One stream's loop: it waits for the change feed, a followed log's new
//! lines, its token's expiry or the next keep-alive, and answers each with
//! the messages its user may see.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use axum::response::sse::Event;
use jobdeck_api::{
    parse_replica_id, StreamEnd, StreamEvents, StreamJobRef, StreamLog, StreamMessage, StreamReplicas, Visibility,
};
use jobdeck_store::changes::{Change, ChangeFeed, Since};
use jobdeck_store::{JobRow, StoredEvent};
use serde::Serialize;
use tokio::sync::watch;

use super::topics::{message_id, Resume};
use crate::http::auth::CurrentUser;
use crate::http::error::{AppError, AppResult};
use crate::http::jobs::{add_gpu_now, add_queue_standing, job_view};
use crate::http::logs::{within_bytes, MAX_RANGE_LINES};
use crate::http::replicas::{collects_logs, event_view, events_of, logs_still_kept, replicas_of, Attempts};
use crate::http::request_limits::Permit;
use crate::AppState;

/// How often a followed log's index is looked at for new lines: its writer
/// is often another process (a replica's supervisor), so it is polled, as a
/// waiting log range does.
const LOG_POLL: Duration = Duration::from_millis(100);
/// How long a stream stays silent before it sends a comment, so proxies and
/// the client see it alive and a gone client is noticed.
const BEAT: Duration = Duration::from_secs(15);

/// What a stream follows, authorized.
pub struct Watching {
    /// Every job the user may see.
    pub list: bool,
    /// Jobs followed whole, by id.
    pub jobs: Vec<String>,
    /// `GET /jobs/{id}/events` followed: the (one) job's events one by one
    /// instead of whole snapshots.
    pub events_of: Option<FollowedEvents>,
}

/// A job's events sent one by one: what was sent of each, so an event is
/// sent again only when seen again.
pub struct FollowedEvents {
    /// Only events last seen at or after this time (Unix ms) are sent first.
    since: Option<i64>,
    sent: HashMap<(String, String, String, String), i64>,
    newest: i64,
}

impl FollowedEvents {
    pub fn new(since: Option<i64>) -> Self {
        Self { since, sent: HashMap::new(), newest: since.unwrap_or(0) }
    }
}

/// The time a followed job's events resume from: the id of its last message,
/// `t<Unix ms>` (the newest event time it carried).
pub fn events_resume_time(id: &str) -> Option<i64> {
    id.trim().strip_prefix('t')?.parse().ok()
}

/// A log followed by a stream.
pub struct FollowedLog {
    job: String,
    replica: String,
    index: i64,
    attempt: i64,
    /// The next line to send.
    next: u64,
    /// Whether the attempt may have ended since it was last looked at.
    check_end: bool,
    /// The end was sent: nothing more will come.
    done: bool,
}

impl FollowedLog {
    /// The log of `replica` of `job` (which the caller may see), from line
    /// `from`; 404 as the log endpoint answers for a replica that is not
    /// the job's, and for a job that collects no logs; 410 as it answers
    /// once the job's logs were removed.
    pub async fn open(state: &AppState, job: &JobRow, replica: &str, from: u64) -> AppResult<FollowedLog> {
        let (index, attempt) = parse_replica_id(&job.id, replica)
            .ok_or_else(|| AppError::NotFound(format!("replica '{replica}' of job '{}' not found", job.id)))?;
        logs_still_kept(job)?;
        if !collects_logs(state, job) {
            return Err(AppError::NotFoundCode(
                "log_collection_disabled",
                format!("job '{}' does not collect logs (spec.log.enable_collection is false)", job.id),
            ));
        }
        Ok(FollowedLog {
            job: job.id.clone(),
            replica: replica.to_string(),
            index,
            attempt,
            next: from,
            check_end: true,
            done: false,
        })
    }
}

/// A message before it is written: its name and JSON.
struct Outgoing {
    name: StreamMessage,
    data: String,
}

fn outgoing(name: StreamMessage, value: &impl Serialize) -> Outgoing {
    Outgoing { name, data: serde_json::to_string(value).unwrap_or_else(|_| "{}".into()) }
}

/// One stream.
pub struct Subscriber {
    state: AppState,
    user: CurrentUser,
    watching: Watching,
    log: Option<FollowedLog>,
    /// Where to start, until the first batch is made.
    resume: Option<Resume>,
    feed: ChangeFeed,
    signal: watch::Receiver<u64>,
    /// The number of the last change handled.
    cursor: u64,
    /// The cursor the client was last told (a message's id).
    told: u64,
    next_beat: Instant,
    ended: bool,
    _permit: Permit,
}

impl Subscriber {
    pub fn new(
        state: AppState,
        user: CurrentUser,
        watching: Watching,
        log: Option<FollowedLog>,
        resume: Resume,
        permit: Permit,
    ) -> Self {
        let feed = state.store.changes().clone();
        let signal = feed.watch();
        Self {
            state,
            user,
            watching,
            log,
            resume: Some(resume),
            feed,
            signal,
            cursor: 0,
            told: 0,
            next_beat: Instant::now() + BEAT,
            ended: false,
            _permit: permit,
        }
    }

    /// The next messages to send, or `None` when the stream is over.
    pub async fn next_batch(&mut self) -> Option<Vec<Event>> {
        if self.ended {
            return None;
        }
        let batch = match self.next_messages().await {
            Ok(batch) => batch,
            Err(error) => {
                // The client reconnects with its last id and gets what it
                // missed; the cause is the server's to read.
                tracing::error!(error = %jobdeck_core::error_chain(&error), "an event stream ended on an error");
                return None;
            }
        };
        self.next_beat = Instant::now() + BEAT;
        Some(batch)
    }

    async fn next_messages(&mut self) -> AppResult<Vec<Event>> {
        if let Some(resume) = self.resume.take() {
            let messages = self.opening(resume).await?;
            return Ok(self.written(messages));
        }
        loop {
            let log_due = self.log.as_ref().is_some_and(|log| !log.done);
            let expiry = self.user.token_expires_at.map(instant_of);
            tokio::select! {
                changed = self.signal.changed() => {
                    if changed.is_err() {
                        self.ended = true;
                        return Ok(Vec::new());
                    }
                    let messages = self.changes().await?;
                    if !messages.is_empty() {
                        return Ok(self.written(messages));
                    }
                }
                _ = tokio::time::sleep(LOG_POLL), if log_due => {
                    let messages = self.log_lines().await?;
                    if !messages.is_empty() {
                        return Ok(self.written(messages));
                    }
                }
                _ = tokio::time::sleep_until(expiry.unwrap_or_else(Instant::now).into()), if expiry.is_some() => {
                    let end = self.end("this token expired");
                    return Ok(self.written(vec![end]));
                }
                _ = tokio::time::sleep_until(self.next_beat.into()) => {
                    return Ok(vec![self.beat()]);
                }
            }
        }
    }

    /// The first messages: `open` and what is followed now, `resumed` and
    /// what changed during the cut, or `resync` and what is followed now.
    async fn opening(&mut self, resume: Resume) -> AppResult<Vec<Outgoing>> {
        if self.watching.events_of.is_some() {
            self.cursor = self.feed.newest();
            return self.snapshots().await;
        }
        let newest = self.feed.newest();
        let missed = match resume {
            Resume::Fresh => {
                self.cursor = newest;
                let mut messages = vec![outgoing(StreamMessage::Open, &serde_json::json!({}))];
                messages.extend(self.snapshots().await?);
                messages.extend(self.log_lines().await?);
                return Ok(messages);
            }
            Resume::After { origin, number } if origin == self.feed.origin() => match self.feed.since(number) {
                Since::Changes(changes) => {
                    self.cursor = number;
                    let mut messages = vec![outgoing(StreamMessage::Resumed, &serde_json::json!({}))];
                    messages.extend(self.handle(changes).await?);
                    messages.extend(self.log_lines().await?);
                    return Ok(messages);
                }
                Since::Missed => true,
            },
            Resume::After { .. } | Resume::Unknown => true,
        };
        debug_assert!(missed);
        self.cursor = newest;
        let mut messages = self.resync().await?;
        messages.extend(self.log_lines().await?);
        Ok(messages)
    }

    /// What changed since the cursor, or a resync when some left the window.
    async fn changes(&mut self) -> AppResult<Vec<Outgoing>> {
        match self.feed.since(self.cursor) {
            Since::Changes(changes) => self.handle(changes).await,
            Since::Missed => {
                self.cursor = self.feed.newest();
                self.resync().await
            }
        }
    }

    async fn resync(&mut self) -> AppResult<Vec<Outgoing>> {
        let mut messages = vec![outgoing(StreamMessage::Resync, &serde_json::json!({}))];
        messages.extend(self.snapshots().await?);
        Ok(messages)
    }

    /// The followed jobs as they are now.
    async fn snapshots(&mut self) -> AppResult<Vec<Outgoing>> {
        let mut messages = Vec::new();
        for id in self.watching.jobs.clone() {
            match self.visible(&id).await? {
                Some(row) => {
                    if self.watching.events_of.is_some() {
                        messages.extend(self.new_events(&id).await?);
                        continue;
                    }
                    let replicas = replicas_of(&self.state, &row, Attempts::All).await?;
                    let events = events_of(&self.state, &id).await?;
                    let mut job = job_view(row);
                    add_gpu_now(&self.state, &mut job);
                    add_queue_standing(&self.state, &mut job).await?;
                    messages.push(outgoing(StreamMessage::Job, &job));
                    messages.push(outgoing(StreamMessage::Replicas, &StreamReplicas { job: id.clone(), replicas }));
                    messages.push(outgoing(StreamMessage::Events, &StreamEvents { job: id, events }));
                }
                None => messages.push(outgoing(StreamMessage::JobDeleted, &StreamJobRef { job: id })),
            }
        }
        Ok(messages)
    }

    /// The messages for `changes` (each job and kind once, in the order
    /// first changed), and the cursor moved past them.
    async fn handle(&mut self, changes: Vec<(u64, Change)>) -> AppResult<Vec<Outgoing>> {
        let Some((last, _)) = changes.last() else {
            return Ok(Vec::new());
        };
        self.cursor = *last;
        let mut unique: Vec<Change> = Vec::with_capacity(changes.len());
        for (_, change) in changes {
            if !unique.contains(&change) {
                unique.push(change);
            }
        }
        let mut messages = Vec::new();
        for change in unique {
            let followed = change.job_id().is_some_and(|id| self.watching.jobs.iter().any(|j| j == id));
            if let Some(log) = self.log.as_mut().filter(|log| change == Change::Replicas(log.job.clone())) {
                log.check_end = true;
            }
            match change {
                Change::TokensRevoked => {
                    if let Some(reason) = self.token_ended().await? {
                        messages.push(self.end(&reason));
                        return Ok(messages);
                    }
                }
                Change::JobDeleted { id, created_by, visibility } => {
                    let was_visible = visibility == Visibility::Public || created_by == self.user.name;
                    if followed || (self.watching.list && was_visible) {
                        messages.push(outgoing(StreamMessage::JobDeleted, &StreamJobRef { job: id }));
                    }
                }
                Change::Events(id) if followed && self.watching.events_of.is_some() => {
                    if self.visible(&id).await?.is_some() {
                        messages.extend(self.new_events(&id).await?);
                    }
                }
                _ if self.watching.events_of.is_some() => {}
                Change::Job(id) if followed || self.watching.list => match self.visible(&id).await? {
                    Some(row) => {
                        let mut job = job_view(row);
                        add_gpu_now(&self.state, &mut job);
                        // A followed job's message is its `GET`; the list's
                        // messages are the list's rows, which have no place.
                        if followed {
                            add_queue_standing(&self.state, &mut job).await?;
                        }
                        messages.push(outgoing(StreamMessage::Job, &job));
                    }
                    None if followed => messages.push(outgoing(StreamMessage::JobDeleted, &StreamJobRef { job: id })),
                    None => {}
                },
                Change::Replicas(id) if followed => {
                    if let Some(row) = self.visible(&id).await? {
                        let replicas = replicas_of(&self.state, &row, Attempts::All).await?;
                        messages.push(outgoing(StreamMessage::Replicas, &StreamReplicas { job: id, replicas }));
                    }
                }
                Change::Events(id) if followed => {
                    if self.visible(&id).await?.is_some() {
                        let events = events_of(&self.state, &id).await?;
                        messages.push(outgoing(StreamMessage::Events, &StreamEvents { job: id, events }));
                    }
                }
                Change::Metrics(id) if followed => {
                    if self.visible(&id).await?.is_some() {
                        messages.push(outgoing(StreamMessage::Metrics, &StreamJobRef { job: id }));
                    }
                }
                Change::Job(_) | Change::Replicas(_) | Change::Events(_) | Change::Metrics(_) => {}
            }
        }
        Ok(messages)
    }

    /// The job, if the user may see it now (the rule of every `GET`).
    async fn visible(&self, id: &str) -> AppResult<Option<JobRow>> {
        Ok(self.state.store.job_visible_to(id.to_string(), self.user.name.clone()).await?)
    }

    /// A followed job's events recorded, or seen again, since last sent:
    /// one `event` message each, oldest first.
    async fn new_events(&mut self, job: &str) -> AppResult<Vec<Outgoing>> {
        let mut stored: Vec<StoredEvent> = self.state.store.events_of(job.to_string()).await?;
        stored.reverse();
        let Some(followed) = self.watching.events_of.as_mut() else {
            return Ok(Vec::new());
        };
        let mut messages = Vec::new();
        for event in stored {
            if followed.since.is_some_and(|since| event.last_time < since) {
                continue;
            }
            let key = (
                event.kind.as_str().to_string(),
                event.reason.clone(),
                event.regarding_name.clone(),
                event.message.clone(),
            );
            if followed.sent.get(&key) == Some(&event.count) {
                continue;
            }
            followed.sent.insert(key, event.count);
            followed.newest = followed.newest.max(event.last_time);
            messages.push(outgoing(StreamMessage::Event, &event_view(event)));
        }
        // Once the first events are sent, every later one is new.
        followed.since = None;
        Ok(messages)
    }

    /// The followed log's lines past the last sent (at most a range's worth
    /// per message), or its end once the attempt ended and all were sent.
    async fn log_lines(&mut self) -> AppResult<Vec<Outgoing>> {
        let Some(log) = self.log.as_ref().filter(|log| !log.done) else {
            return Ok(Vec::new());
        };
        // Asked before the read: an attempt's supervisor writes out every
        // line before it reports the end, so a read after an end seen here
        // has the last of them (asked after, a line written between the two
        // would be lost).
        let ended_before = log.check_end && self.attempt_ended().await?;
        let Some(log) = self.log.as_ref() else { return Ok(Vec::new()) };
        let (logs, job, index, attempt, next) =
            (self.state.logs.clone(), log.job.clone(), log.index, log.attempt, log.next);
        let read = move || -> std::io::Result<(u64, Vec<jobdeck_api::LogLine>)> {
            let Some(mut reader) = logs.open(&job, index, attempt)? else {
                return Ok((0, Vec::new()));
            };
            let total = reader.line_count()?;
            if total < next {
                return Ok((total, Vec::new()));
            }
            let last = total.min(next.saturating_add(MAX_RANGE_LINES - 1));
            let mut lines: Vec<jobdeck_api::LogLine> = reader
                .lines(next, last)?
                .into_iter()
                .map(|l| jobdeck_api::LogLine {
                    line: l.number,
                    time: l.time,
                    stderr: l.stream == jobdeck_store::logs::Stream::Stderr,
                    text: l.text,
                })
                .collect();
            within_bytes(&mut lines, |l| l.text.len());
            Ok((total, lines))
        };
        let (total, lines) =
            tokio::task::spawn_blocking(read).await.map_err(AppError::internal)?.map_err(AppError::internal)?;
        let ended = ended_before && lines.is_empty();
        let log = self.log.as_mut().expect("checked above");
        // Asked again at the next read while lines keep coming after an end.
        log.check_end = ended_before && !lines.is_empty();
        if lines.is_empty() && !ended {
            return Ok(Vec::new());
        }
        if let Some(last) = lines.last() {
            log.next = last.line + 1;
        }
        log.done = ended;
        let message =
            StreamLog { job: log.job.clone(), replica: log.replica.clone(), total_lines: total, ended, lines };
        // A stream that follows only this log has nothing more to send.
        if ended && !self.watching.list && self.watching.jobs.is_empty() {
            self.ended = true;
        }
        Ok(vec![outgoing(StreamMessage::Log, &message)])
    }

    /// Whether the followed log's attempt has ended (or is gone).
    async fn attempt_ended(&self) -> AppResult<bool> {
        let Some(log) = self.log.as_ref() else { return Ok(true) };
        Ok(match self.state.store.replica(log.job.clone(), log.index, log.attempt).await? {
            Some(row) => row.is_finished(),
            None => self.state.store.job(log.job.clone()).await?.is_none(),
        })
    }

    /// Why the stream's token no longer signs in, if it does not.
    async fn token_ended(&self) -> AppResult<Option<String>> {
        let now = crate::now_millis();
        Ok(match self.state.store.token(self.user.token_id).await? {
            None => Some("this token was deleted".into()),
            Some(token) if token.revoked_at.is_some() => Some("this token was revoked".into()),
            Some(token) if token.expires_at.is_some_and(|at| at <= now) => Some("this token expired".into()),
            Some(_) => None,
        })
    }

    fn end(&mut self, reason: &str) -> Outgoing {
        self.ended = true;
        outgoing(StreamMessage::End, &StreamEnd { reason: reason.to_string() })
    }

    /// A keep-alive: the cursor when it moved past changes the client was
    /// not sent (an id alone, which a client keeps as its last id without
    /// an event), else a comment.
    fn beat(&mut self) -> Event {
        if self.watching.events_of.is_none() && self.told != self.cursor {
            self.told = self.cursor;
            return Event::default().id(message_id(self.feed.origin(), self.cursor));
        }
        Event::default().comment("")
    }

    /// The messages as SSE events; the last one carries the id to resume
    /// after, so a cut inside a batch resumes before the batch (its
    /// messages are snapshots: receiving them again is harmless).
    fn written(&mut self, messages: Vec<Outgoing>) -> Vec<Event> {
        let count = messages.len();
        let id = match self.watching.events_of.as_ref() {
            Some(followed) => format!("t{}", followed.newest),
            None => message_id(self.feed.origin(), self.cursor),
        };
        messages
            .into_iter()
            .enumerate()
            .map(|(i, message)| {
                let event = Event::default().event(message.name.as_str()).data(message.data);
                if i + 1 == count {
                    self.told = self.cursor;
                    event.id(id.clone())
                } else {
                    event
                }
            })
            .collect()
    }
}

/// The `Instant` of a Unix time in milliseconds (now when it is past).
fn instant_of(unix_ms: i64) -> Instant {
    let wait = unix_ms.saturating_sub(crate::now_millis()).max(0) as u64;
    Instant::now() + Duration::from_millis(wait)
}
