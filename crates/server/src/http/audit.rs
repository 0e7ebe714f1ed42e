//! The audit log's writing and reading (docs/teams.md, "Audit log").
//!
//! Every request that may change something (each route and method but
//! `GET`) is recorded by the authorization layer once it is answered,
//! refused ones included: who (the signed-in user, or nobody), the action
//! this table names, its target (the path's parameters, or what the
//! handler notes: a new job's id), how it ended (the refusal's status and
//! message) and the peer's address. Sign-ins through the identity provider
//! are recorded by its callback with the reason a refused one failed.
//! Entries older than `[audit] retention` are deleted every hour.
//!
//! Entries are written by one task in batches (one transaction for all
//! that arrived meanwhile), not in the request's path: a write per request
//! halved the rate of job creation (docs/measurements.md). Reading the log
//! first waits for what is queued, so a reader sees every answered request;
//! stopping the server writes what is queued; a crash can lose what was
//! answered in the last moment.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;
use jobdeck_api::{ApiError, AuditEntry, AuditList, AuditOutcome, AUDIT_PAGE_DEFAULT, AUDIT_PAGE_MAX};
use jobdeck_store::{AuditFilter, AuditRecord, Store};
use serde::Deserialize;
use tokio::sync::{mpsc, oneshot};

use crate::http::auth::CurrentUser;
use crate::http::error::{ApiQuery, AppError, AppResult};
use crate::{now_millis, AppState, Route};

/// The action each changing route records; a route that changes something
/// and is missing here fails `every_changing_route_is_audited`.
pub const ACTIONS: &[(&str, &str, &str)] = &[
    ("POST", "/jobs", "job.create"),
    ("PATCH", "/jobs/{id}", "job.update"),
    ("DELETE", "/jobs/{id}", "job.delete"),
    ("POST", "/jobs/{id}/rerun", "job.rerun"),
    ("POST", "/usersecrets", "secret.set"),
    ("DELETE", "/usersecrets/{name}", "secret.delete"),
    ("POST", "/imagepullsecrets", "pull_secret.set"),
    ("DELETE", "/imagepullsecrets/{name}", "pull_secret.delete"),
    ("POST", "/sessions", "session.start"),
    ("DELETE", "/sessions", "session.end_all"),
    ("DELETE", "/sessions/current", "session.end"),
    ("POST", "/tokens", "token.create"),
    ("DELETE", "/tokens/{id}", "token.revoke"),
    ("PATCH", "/users/{name}", "user.role"),
    ("DELETE", "/users/{name}", "user.remove"),
    ("PUT", "/users/{name}/email", "user.email"),
    ("POST", "/invitations", "invitation.create"),
    ("DELETE", "/invitations/{id}", "invitation.withdraw"),
    ("POST", "/invitations/check", "invitation.check"),
    ("POST", "/invitations/redeem", "invitation.redeem"),
    ("POST", "/jobs/convert", "job.convert"),
    ("POST", "/templates/public/{id}/render", "template.render"),
    ("POST", "/templates/private", "template.create"),
    ("DELETE", "/templates/private/{id}", "template.delete"),
    ("POST", "/templates/private/{id}/render", "template.render"),
    ("POST", "/webhooks", "webhook.create"),
    ("DELETE", "/webhooks/{id}", "webhook.delete"),
    ("POST", "/webhooks/{id}/enable", "webhook.enable"),
    ("POST", "/notifications", "notification.create"),
    ("DELETE", "/notifications/{id}", "notification.delete"),
    ("PUT", "/quotas/{scope}/{name}", "quota.set"),
    ("DELETE", "/quotas/{scope}/{name}", "quota.delete"),
    ("PUT", "/workspace/log-retention", "log_retention.set"),
    ("DELETE", "/workspace/log-retention", "log_retention.withdraw"),
];

/// The action `method` on `path` records, if it changes anything.
pub fn action(method: &Method, path: &str) -> Option<&'static str> {
    ACTIONS.iter().find(|(m, p, _)| *m == method.as_str() && *p == path).map(|(_, _, a)| *a)
}

/// What a handler adds to its answer's entry: a more precise action
/// (`job.stop` for a `PATCH` that stopped), the target when the path does
/// not name it (a new job's id), a detail (the role given).
#[derive(Debug, Clone, Default)]
pub struct AuditNote {
    pub action: Option<&'static str>,
    /// Who, when the request carried no token (a redeemed invitation's
    /// new user).
    pub actor: Option<String>,
    pub target: Option<String>,
    pub detail: Option<String>,
}

/// `answer` with a note naming its target and, if any, a detail.
pub fn noted(answer: impl IntoResponse, target: impl Into<String>, detail: Option<String>) -> Response {
    AuditNote { target: Some(target.into()), detail, ..AuditNote::default() }.on(answer.into_response())
}

impl AuditNote {
    /// Puts the note on `response`.
    pub fn on(self, mut response: Response) -> Response {
        response.extensions_mut().insert(self);
        response
    }
}

/// The address a request came from, as the accept loop recorded it; empty
/// for a request that came another way (the in-process tests).
pub struct Peer(pub String);

impl<S: Send + Sync> FromRequestParts<S> for Peer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Peer(peer_of(&parts.extensions)))
    }
}

/// The address of the peer that sent a request, from its extensions; empty
/// when the accept loop did not record one.
pub fn peer_of(extensions: &axum::http::Extensions) -> String {
    extensions.get::<ConnectInfo<SocketAddr>>().map(|ConnectInfo(addr)| addr.ip().to_string()).unwrap_or_default()
}

/// What the authorization layer knows of a request when it is answered.
pub struct Attempt {
    pub action: &'static str,
    pub actor: String,
    pub target: String,
    pub source: String,
}

/// The most characters an entry keeps of its target and of its detail: a
/// request may name thousands of secrets at once, and one entry must not
/// carry a body's worth of text.
const DETAIL_MAX: usize = 500;

/// What the writer task is handed.
enum Queued {
    Entry(AuditRecord),
    /// Answered once everything queued before it is written.
    Flush(oneshot::Sender<()>),
}

/// The audit log's writer: cheap to clone; entries go to one task.
#[derive(Clone)]
pub struct AuditLog {
    tx: mpsc::UnboundedSender<Queued>,
}

/// The most entries one transaction writes.
const BATCH: usize = 512;

impl AuditLog {
    /// Starts the writer task over `store`, writing at most
    /// `anonymous_per_minute` entries of people not signed in one by one
    /// each minute.
    pub fn start(store: Store, anonymous_per_minute: u32) -> AuditLog {
        let (tx, mut rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut anonymous = AnonymousLimit::new(anonymous_per_minute);
            let mut minutes = tokio::time::interval(std::time::Duration::from_secs(60));
            loop {
                let first = tokio::select! {
                    queued = rx.recv() => match queued {
                        Some(queued) => queued,
                        None => break,
                    },
                    _ = minutes.tick() => {
                        if let Some(summary) = anonymous.end_of_minute(now_millis()) {
                            write(&store, vec![summary]).await;
                        }
                        continue;
                    }
                };
                let (mut records, mut flushes) = (Vec::new(), Vec::new());
                let mut next = Some(first);
                while let Some(queued) = next.take() {
                    match queued {
                        Queued::Entry(record) => anonymous.admit(record, &mut records),
                        Queued::Flush(done) => flushes.push(done),
                    }
                    if records.len() < BATCH {
                        next = rx.try_recv().ok();
                    }
                }
                // A reader waits for what was counted too.
                if !flushes.is_empty() {
                    records.extend(anonymous.summary(now_millis()));
                }
                write(&store, records).await;
                for done in flushes {
                    let _ = done.send(());
                }
            }
        });
        AuditLog { tx }
    }

    /// Queues `record` for writing.
    pub fn append(&self, record: AuditRecord) {
        if self.tx.send(Queued::Entry(record)).is_err() {
            tracing::error!("the audit log's writer has stopped");
        }
    }

    /// Waits until everything queued so far is written.
    pub async fn flush(&self) {
        let (done, written) = oneshot::channel();
        if self.tx.send(Queued::Flush(done)).is_ok() {
            let _ = written.await;
        }
    }
}

/// Writes `records` in one transaction; a failure is logged, never the
/// request's.
async fn write(store: &Store, records: Vec<AuditRecord>) {
    if records.is_empty() {
        return;
    }
    if let Err(e) = store.record_audit(records).await {
        tracing::error!(error = %jobdeck_core::error_chain(&e), "cannot append to the audit log");
    }
}

/// The bound on entries of people not signed in: anyone can send requests
/// without a token, and each would otherwise be a row kept for the whole
/// retention. Within a minute the first `per_minute` are written as they
/// come; the rest are counted by address and written as one
/// `audit.unrecorded` entry when the minute ends (or a reader asks), so the
/// log grows by at most `per_minute + 1` such rows a minute and still says
/// how many came and from where. Signed-in users are always recorded one
/// by one: they are known, and an admin can remove them.
struct AnonymousLimit {
    per_minute: u32,
    /// The minute (Unix ms / 60,000) being counted.
    minute: i64,
    written: u32,
    skipped: std::collections::BTreeMap<String, u64>,
}

/// How many addresses an `audit.unrecorded` entry names.
const UNRECORDED_SOURCES: usize = 3;

impl AnonymousLimit {
    fn new(per_minute: u32) -> Self {
        Self { per_minute, minute: 0, written: 0, skipped: Default::default() }
    }

    /// Adds `record` to `records` unless it is past the minute's bound, in
    /// which case it is only counted.
    fn admit(&mut self, record: AuditRecord, records: &mut Vec<AuditRecord>) {
        if !record.actor.is_empty() {
            records.push(record);
            return;
        }
        let minute = record.time.div_euclid(60_000);
        if minute != self.minute {
            records.extend(self.summary(record.time));
            self.minute = minute;
            self.written = 0;
        }
        if self.written < self.per_minute {
            self.written += 1;
            records.push(record);
        } else {
            *self.skipped.entry(record.source).or_default() += 1;
        }
    }

    /// The summary of the minute that has ended by `now`, if it counted
    /// any.
    fn end_of_minute(&mut self, now: i64) -> Option<AuditRecord> {
        if now.div_euclid(60_000) == self.minute {
            return None;
        }
        self.written = 0;
        self.minute = now.div_euclid(60_000);
        self.summary(now)
    }

    /// One entry for the requests counted so far, which it forgets.
    fn summary(&mut self, now: i64) -> Option<AuditRecord> {
        if self.skipped.is_empty() {
            return None;
        }
        let total: u64 = self.skipped.values().sum();
        let mut sources: Vec<(String, u64)> = std::mem::take(&mut self.skipped).into_iter().collect();
        sources.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let named: Vec<String> = sources
            .iter()
            .take(UNRECORDED_SOURCES)
            .map(|(source, n)| format!("{n} from {}", if source.is_empty() { "an unknown address" } else { source }))
            .collect();
        let others = sources.len().saturating_sub(UNRECORDED_SOURCES);
        let others = if others > 0 { format!(" and {others} more addresses") } else { String::new() };
        Some(AuditRecord {
            time: now,
            actor: String::new(),
            action: "audit.unrecorded".to_string(),
            target: String::new(),
            outcome: AuditOutcome::Refused.as_str().to_string(),
            detail: format!(
                "{total} more requests of people not signed in, past {} a minute, were counted, not recorded one by one: {}{others}",
                self.per_minute,
                named.join(", ")
            ),
            source: sources[0].0.clone(),
        })
    }
}

/// Records `attempt` with how `response` ended it, and hands the response
/// on (a refusal's body is read for its message and put back).
pub async fn record_answer(log: &AuditLog, attempt: Attempt, response: Response) -> Response {
    let note = response.extensions().get::<AuditNote>().cloned().unwrap_or_default();
    let status = response.status();
    let (response, detail) = if status.is_client_error() || status.is_server_error() {
        let (parts, body) = response.into_parts();
        let bytes = axum::body::to_bytes(body, 64 * 1024).await.unwrap_or_default();
        let said = serde_json::from_slice::<ApiError>(&bytes).map(|e| e.message).unwrap_or_default();
        let reason = status.canonical_reason().unwrap_or("");
        let detail = format!("{} {reason}: {said}", status.as_u16());
        (Response::from_parts(parts, Body::from(bytes)), detail.chars().take(DETAIL_MAX).collect())
    } else {
        (response, note.detail.clone().unwrap_or_default())
    };
    let outcome = if status.is_success() || status.is_redirection() { AuditOutcome::Ok } else { AuditOutcome::Refused };
    let record = AuditRecord {
        time: now_millis(),
        actor: note.actor.unwrap_or(attempt.actor),
        action: note.action.unwrap_or(attempt.action).to_string(),
        target: note.target.unwrap_or(attempt.target).chars().take(DETAIL_MAX).collect(),
        outcome: outcome.as_str().to_string(),
        detail,
        source: attempt.source,
    };
    log.append(record);
    response
}

/// Deletes entries older than `retention`, now and every hour after.
pub fn spawn_pruning(store: Store, retention: std::time::Duration) {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(std::time::Duration::from_secs(3600));
        loop {
            every.tick().await;
            let before = now_millis().saturating_sub(retention.as_millis() as i64);
            match store.prune_audit(before).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(deleted = n, "audit entries past their retention deleted"),
                Err(e) => tracing::warn!(error = %jobdeck_core::error_chain(&e), "cannot prune the audit log"),
            }
        }
    });
}

pub fn routes() -> Vec<Route> {
    vec![("/audit", get(list))]
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AuditQuery {
    actor: Option<String>,
    action: Option<String>,
    target: Option<String>,
    outcome: Option<String>,
    since: Option<i64>,
    until: Option<i64>,
    before: Option<i64>,
    limit: Option<i64>,
}

/// `GET /audit`: entries newest first, filtered (admins only).
async fn list(
    State(state): State<AppState>,
    _admin: CurrentUser,
    ApiQuery(query): ApiQuery<AuditQuery>,
) -> AppResult<Json<AuditList>> {
    let limit = query.limit.unwrap_or(AUDIT_PAGE_DEFAULT);
    if !(1..=AUDIT_PAGE_MAX).contains(&limit) {
        let fields = [("limit".to_string(), vec![format!("from 1 to {AUDIT_PAGE_MAX}")])].into();
        return Err(AppError::Validation(fields));
    }
    let outcome = match query.outcome.as_deref() {
        None => None,
        Some(text) => Some(AuditOutcome::parse(text).ok_or_else(|| {
            AppError::Validation([("outcome".to_string(), vec!["ok or refused".to_string()])].into())
        })?),
    };
    let filter = AuditFilter {
        actor: query.actor,
        action: query.action,
        target: query.target,
        outcome: outcome.map(|o| o.as_str().to_string()),
        since: query.since,
        until: query.until,
        before: query.before,
        // One more than asked says whether a next page exists.
        limit: limit + 1,
    };
    state.audit.flush().await;
    let mut rows = state.store.audit(filter).await?;
    let next = (rows.len() as i64 > limit).then(|| {
        rows.truncate(limit as usize);
        rows.last().map(|r| r.id).unwrap_or_default()
    });
    let items = rows
        .into_iter()
        .map(|row| {
            let r = row.record;
            AuditEntry {
                id: row.id,
                time: r.time,
                actor: r.actor,
                action: r.action,
                target: r.target,
                outcome: AuditOutcome::parse(&r.outcome).unwrap_or(AuditOutcome::Refused),
                detail: r.detail,
                source: r.source,
            }
        })
        .collect();
    Ok(Json(AuditList { items, next }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::access::RULES;

    #[test]
    fn every_changing_route_is_audited() {
        for (method, path, _) in RULES {
            if *method != "GET" {
                let method = Method::from_bytes(method.as_bytes()).unwrap();
                assert!(action(&method, path).is_some(), "{method} {path} has no audit action");
            }
        }
        for (method, path, _) in ACTIONS {
            assert!(RULES.iter().any(|(m, p, _)| m == method && p == path), "{method} {path} is no route");
        }
    }

    fn entry(actor: &str, time: i64, source: &str) -> AuditRecord {
        AuditRecord {
            time,
            actor: actor.to_string(),
            action: "job.delete".to_string(),
            source: source.to_string(),
            ..AuditRecord::default()
        }
    }

    #[test]
    fn people_not_signed_in_are_counted_past_the_bound_and_signed_in_ones_never() {
        let mut limit = AnonymousLimit::new(2);
        let mut written = Vec::new();
        for i in 0..5 {
            limit.admit(entry("", 60_000 + i, "10.0.0.9"), &mut written);
            limit.admit(entry("bob", 60_000 + i, "10.0.0.8"), &mut written);
        }
        limit.admit(entry("", 60_010, "10.0.0.7"), &mut written);
        assert_eq!(written.iter().filter(|r| r.actor.is_empty()).count(), 2);
        assert_eq!(written.iter().filter(|r| r.actor == "bob").count(), 5);
        assert!(limit.end_of_minute(60_500).is_none(), "the minute has not ended");

        // The next minute's first entry brings the summary of the last.
        written.clear();
        limit.admit(entry("", 120_001, "10.0.0.7"), &mut written);
        assert_eq!(written.len(), 2);
        assert_eq!(written[0].action, "audit.unrecorded");
        assert_eq!(written[0].source, "10.0.0.9");
        assert_eq!(
            written[0].detail,
            "4 more requests of people not signed in, past 2 a minute, were counted, not recorded one by one: \
             3 from 10.0.0.9, 1 from 10.0.0.7"
        );
        assert_eq!(written[1].time, 120_001, "and the new minute starts counting afresh");
        assert!(limit.summary(120_002).is_none(), "a summary is written once");
    }

    #[test]
    fn a_minute_that_ends_quietly_is_summarised_and_many_addresses_are_bounded() {
        let mut limit = AnonymousLimit::new(0);
        let mut written = Vec::new();
        for i in 0..10 {
            limit.admit(entry("", 5, &format!("10.0.0.{i}")), &mut written);
        }
        assert!(written.is_empty());
        let summary = limit.end_of_minute(60_000).expect("the minute ended");
        assert!(summary.detail.ends_with("1 from 10.0.0.0, 1 from 10.0.0.1, 1 from 10.0.0.2 and 7 more addresses"));
        assert!(limit.end_of_minute(120_000).is_none());
    }
}
