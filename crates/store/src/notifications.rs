//! Notifications: each user's endpoints and rules, the job transitions
//! waiting to be matched against the rules, and the deliveries they make.
//!
//! A transition is written by [`record_transition`] in the transaction that
//! changes the job's state, so none is lost to a crash between the two, and
//! only while a rule could match it, so a workspace without rules writes
//! nothing more. [`Store::match_transitions`] turns transitions into
//! deliveries; the notifier (the server's `notify`) sends them. An
//! endpoint's address and secret are sealed as secrets' values are.

use jobdeck_api::{DeliveryState, JobState, NotifyOn, WebhookKind, WEBHOOK_DELIVERIES_KEPT};
use rusqlite::{params, OptionalExtension, Transaction};

use super::error::StoreResult;
use super::sealing::{open_value, row_of, seal_value};
use super::Store;

/// A new endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewWebhook {
    pub owner: String,
    pub name: String,
    pub kind: WebhookKind,
    pub url: String,
    /// Scheme, host and port: what lists show of `url`.
    pub destination: String,
    /// The signing secret; empty for a Slack endpoint.
    pub secret: String,
    pub created_at: i64,
}

/// An endpoint as lists show it: no address, no secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookRow {
    pub id: i64,
    pub owner: String,
    pub name: String,
    pub kind: WebhookKind,
    pub destination: String,
    pub enabled: bool,
    pub disabled_reason: Option<String>,
    pub created_at: i64,
}

/// What a delivery is sent to, opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookTarget {
    pub id: i64,
    pub owner: String,
    pub kind: WebhookKind,
    pub url: String,
    pub secret: String,
    pub enabled: bool,
}

/// A rule: which transitions of which jobs go to an endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationRow {
    pub id: i64,
    pub owner: String,
    /// One job; `None` for every job the owner has.
    pub job_id: Option<String>,
    pub on: Vec<NotifyOn>,
    pub webhook_id: i64,
    /// The conditions' settings (`gpu_idle`, `memory_near_limit`,
    /// `log_match`), each kept where `on` names its condition.
    pub gpu_idle_minutes: Option<u32>,
    pub memory_percent: Option<u32>,
    pub log_pattern: Option<String>,
    pub created_at: i64,
}

/// A condition met by a running job, for the rule that watches for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionMet {
    pub rule_id: i64,
    pub job_id: String,
    /// The job's run it was met in: a rule hears of a condition once a run.
    pub run: i64,
    pub event: NotifyOn,
    /// What was met, in words ("every GPU under 5 % for 60 minutes").
    pub message: String,
    /// The replica it was met on, and the log line (1-based) for a match.
    pub replica: Option<String>,
    pub line: Option<u64>,
    pub time: i64,
}

/// One delivery: what happened, to which job, and how sending it went.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeliveryRow {
    pub id: i64,
    pub webhook_id: i64,
    pub event: String,
    pub job_id: String,
    pub job_name: String,
    pub job_owner: String,
    pub from_state: String,
    pub to_state: String,
    pub reason: Option<String>,
    pub message: Option<String>,
    /// The replica and log line a condition was met on.
    pub replica: Option<String>,
    pub line: Option<u64>,
    /// When the transition happened, Unix ms.
    pub time: i64,
    pub state: DeliveryState,
    pub attempts: u32,
    pub last_status: Option<u32>,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub next_at: Option<i64>,
    pub delivered_at: Option<i64>,
}

/// How one attempt at a delivery went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempted {
    pub id: i64,
    /// Delivered, Pending (tried again at `next_at`), Failed or Skipped.
    pub state: DeliveryState,
    /// Whether this counted as an attempt (a skipped delivery was not sent).
    pub sent: bool,
    pub status: Option<u32>,
    pub error: Option<String>,
    pub next_at: Option<i64>,
    pub at: i64,
}

/// The associated data an endpoint's sealed values are sealed with.
fn sealed_row(owner: &str, id: i64, part: &str) -> String {
    row_of("webhooks", owner, &format!("{id}/{part}"))
}

fn kind_of(text: &str) -> WebhookKind {
    match text {
        "slack" => WebhookKind::Slack,
        "email" => WebhookKind::Email,
        _ => WebhookKind::Json,
    }
}

fn kind_text(kind: WebhookKind) -> &'static str {
    match kind {
        WebhookKind::Json => "json",
        WebhookKind::Slack => "slack",
        WebhookKind::Email => "email",
    }
}

fn events_text(on: &[NotifyOn]) -> String {
    on.iter().map(|on| on.as_str()).collect::<Vec<_>>().join(",")
}

fn events_of(text: &str) -> Vec<NotifyOn> {
    text.split(',').filter_map(NotifyOn::parse).collect()
}

const WEBHOOK_COLUMNS: &str = "id, owner, name, kind, destination, enabled, disabled_reason, created_at";

fn webhook_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<WebhookRow> {
    Ok(WebhookRow {
        id: r.get(0)?,
        owner: r.get(1)?,
        name: r.get(2)?,
        kind: kind_of(&r.get::<_, String>(3)?),
        destination: r.get(4)?,
        enabled: r.get(5)?,
        disabled_reason: r.get(6)?,
        created_at: r.get(7)?,
    })
}

const NOTIFICATION_COLUMNS: &str =
    "id, owner, job_id, events, webhook_id, created_at, gpu_idle_minutes, memory_percent, log_pattern";

fn notification_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<NotificationRow> {
    Ok(NotificationRow {
        id: r.get(0)?,
        owner: r.get(1)?,
        job_id: r.get(2)?,
        on: events_of(&r.get::<_, String>(3)?),
        webhook_id: r.get(4)?,
        created_at: r.get(5)?,
        gpu_idle_minutes: r.get(6)?,
        memory_percent: r.get(7)?,
        log_pattern: r.get(8)?,
    })
}

const DELIVERY_COLUMNS: &str = "id, webhook_id, event, job_id, job_name, job_owner, from_state, to_state, reason,
    message, time, state, attempts, last_status, last_error, created_at, next_at, delivered_at, replica, line";

fn delivery_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<DeliveryRow> {
    Ok(DeliveryRow {
        id: r.get(0)?,
        webhook_id: r.get(1)?,
        event: r.get(2)?,
        job_id: r.get(3)?,
        job_name: r.get(4)?,
        job_owner: r.get(5)?,
        from_state: r.get(6)?,
        to_state: r.get(7)?,
        reason: r.get(8)?,
        message: r.get(9)?,
        time: r.get(10)?,
        state: DeliveryState::parse(&r.get::<_, String>(11)?).unwrap_or_default(),
        attempts: r.get(12)?,
        last_status: r.get(13)?,
        last_error: r.get(14)?,
        created_at: r.get(15)?,
        next_at: r.get(16)?,
        delivered_at: r.get(17)?,
        replica: r.get(18)?,
        line: r.get(19)?,
    })
}

/// Inside the transaction that moves job `id` to `to`: keeps the
/// transition for the notifier when it is one a rule could name and some
/// rule (the job's own, or its owner's for every job) exists. Runs before
/// the job's row is written, so it reads the state the job leaves.
pub(super) fn record_transition(
    tx: &Transaction<'_>,
    id: &str,
    to: JobState,
    reason: Option<&str>,
    message: Option<&str>,
    now: i64,
) -> rusqlite::Result<()> {
    if !matches!(
        to,
        JobState::Running | JobState::Completed | JobState::Failed | JobState::Stopped | JobState::PendingRetry
    ) {
        return Ok(());
    }
    tx.prepare_cached(
        "INSERT INTO job_transitions (job_id, owner, name, from_state, to_state, reason, message, time)
         SELECT id, created_by, name, state, ?2, ?3, ?4, ?5 FROM jobs
         WHERE id = ?1 AND state != ?2
           AND (EXISTS (SELECT 1 FROM notifications WHERE job_id = jobs.id)
             OR EXISTS (SELECT 1 FROM notifications WHERE job_id IS NULL AND owner = jobs.created_by))",
    )?
    .execute(params![id, to.as_str(), reason, message, now])?;
    Ok(())
}

impl Store {
    /// Adds an endpoint unless its owner has `limit` already; its id.
    pub async fn add_webhook(&self, webhook: NewWebhook, limit: usize) -> StoreResult<Option<i64>> {
        let keys = self.keys();
        self.write(move |tx| {
            let count: i64 =
                tx.query_row("SELECT COUNT(*) FROM webhooks WHERE owner = ?1", [&webhook.owner], |r| r.get(0))?;
            if count as usize >= limit {
                return Ok(None);
            }
            let w = &webhook;
            tx.execute(
                "INSERT INTO webhooks (owner, name, kind, url, destination, secret, created_at)
                 VALUES (?1, ?2, ?3, '', ?4, '', ?5)",
                params![w.owner, w.name, kind_text(w.kind), w.destination, w.created_at],
            )?;
            let id = tx.last_insert_rowid();
            let url = seal_value(&keys, &w.url, &sealed_row(&w.owner, id, "url"))?;
            let secret = seal_value(&keys, &w.secret, &sealed_row(&w.owner, id, "secret"))?;
            tx.execute("UPDATE webhooks SET url = ?2, secret = ?3 WHERE id = ?1", params![id, url, secret])?;
            Ok(Some(id))
        })
        .await
    }

    /// `owner`'s endpoints, oldest first.
    pub async fn webhooks_of(&self, owner: String) -> StoreResult<Vec<WebhookRow>> {
        self.read(move |conn| {
            let sql = format!("SELECT {WEBHOOK_COLUMNS} FROM webhooks WHERE owner = ?1 ORDER BY id");
            let mut statement = conn.prepare(&sql)?;
            let rows = statement.query_map([owner], webhook_row)?;
            rows.collect()
        })
        .await
    }

    /// `owner`'s endpoint `id`, if they have it.
    pub async fn webhook(&self, owner: String, id: i64) -> StoreResult<Option<WebhookRow>> {
        self.read(move |conn| {
            let sql = format!("SELECT {WEBHOOK_COLUMNS} FROM webhooks WHERE owner = ?1 AND id = ?2");
            conn.query_row(&sql, params![owner, id], webhook_row).optional()
        })
        .await
    }

    /// Deletes `owner`'s endpoint, its rules and its deliveries; false when
    /// they have no such endpoint.
    pub async fn delete_webhook(&self, owner: String, id: i64) -> StoreResult<bool> {
        self.write(move |tx| {
            tx.execute(
                "DELETE FROM notification_conditions_met WHERE rule_id IN
                    (SELECT id FROM notifications WHERE webhook_id = ?1 AND owner = ?2)",
                params![id, owner],
            )?;
            tx.execute("DELETE FROM notifications WHERE webhook_id = ?1 AND owner = ?2", params![id, owner])?;
            tx.execute(
                "DELETE FROM webhook_deliveries WHERE webhook_id = ?1
                   AND EXISTS (SELECT 1 FROM webhooks WHERE id = ?1 AND owner = ?2)",
                params![id, owner],
            )?;
            Ok(tx.execute("DELETE FROM webhooks WHERE id = ?1 AND owner = ?2", params![id, owner])? == 1)
        })
        .await
    }

    /// Enables `owner`'s endpoint again; false when they have no such one.
    pub async fn enable_webhook(&self, owner: String, id: i64) -> StoreResult<bool> {
        self.write(move |tx| {
            Ok(tx.execute(
                "UPDATE webhooks SET enabled = 1, disabled_reason = NULL WHERE id = ?1 AND owner = ?2",
                params![id, owner],
            )? == 1)
        })
        .await
    }

    /// Disables an endpoint and skips what it still had to send.
    pub async fn disable_webhook(&self, id: i64, reason: String) -> StoreResult<()> {
        self.write(move |tx| {
            tx.execute("UPDATE webhooks SET enabled = 0, disabled_reason = ?2 WHERE id = ?1", params![id, reason])?;
            tx.execute(
                "UPDATE webhook_deliveries SET state = 'skipped', next_at = NULL,
                    last_error = COALESCE(last_error, 'the endpoint was disabled')
                 WHERE webhook_id = ?1 AND state = 'pending'",
                params![id],
            )?;
            Ok(())
        })
        .await
    }

    /// An endpoint's address and secret, opened, for sending.
    pub async fn webhook_target(&self, id: i64) -> StoreResult<Option<WebhookTarget>> {
        let keys = self.keys();
        self.read(move |conn| {
            conn.query_row("SELECT owner, kind, url, secret, enabled FROM webhooks WHERE id = ?1", params![id], |r| {
                let owner: String = r.get(0)?;
                Ok(WebhookTarget {
                    id,
                    kind: kind_of(&r.get::<_, String>(1)?),
                    url: open_value(&keys, r.get(2)?, &sealed_row(&owner, id, "url"), 2)?,
                    secret: open_value(&keys, r.get(3)?, &sealed_row(&owner, id, "secret"), 3)?,
                    enabled: r.get(4)?,
                    owner,
                })
            })
            .optional()
        })
        .await
    }

    /// Adds a rule unless its owner has `limit` already; its id.
    pub async fn add_notification(&self, row: NotificationRow, limit: usize) -> StoreResult<Option<i64>> {
        self.write(move |tx| {
            let count: i64 =
                tx.query_row("SELECT COUNT(*) FROM notifications WHERE owner = ?1", [&row.owner], |r| r.get(0))?;
            if count as usize >= limit {
                return Ok(None);
            }
            tx.execute(
                "INSERT INTO notifications (owner, job_id, events, webhook_id, created_at, gpu_idle_minutes,
                    memory_percent, log_pattern) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    row.owner,
                    row.job_id,
                    events_text(&row.on),
                    row.webhook_id,
                    row.created_at,
                    row.gpu_idle_minutes,
                    row.memory_percent,
                    row.log_pattern
                ],
            )?;
            Ok(Some(tx.last_insert_rowid()))
        })
        .await
    }

    /// `owner`'s rules, oldest first.
    pub async fn notifications_of(&self, owner: String) -> StoreResult<Vec<NotificationRow>> {
        self.read(move |conn| {
            let sql = format!("SELECT {NOTIFICATION_COLUMNS} FROM notifications WHERE owner = ?1 ORDER BY id");
            let mut statement = conn.prepare(&sql)?;
            let rows = statement.query_map([owner], notification_row)?;
            rows.collect()
        })
        .await
    }

    /// Deletes `owner`'s rule; false when they have no such rule.
    pub async fn delete_notification(&self, owner: String, id: i64) -> StoreResult<bool> {
        self.write(move |tx| {
            let deleted = tx.execute("DELETE FROM notifications WHERE id = ?1 AND owner = ?2", params![id, owner])?;
            if deleted == 1 {
                tx.execute("DELETE FROM notification_conditions_met WHERE rule_id = ?1", params![id])?;
            }
            Ok(deleted == 1)
        })
        .await
    }

    /// Every rule that watches for a condition of running jobs, oldest
    /// first: what the server's condition watch reads each round.
    pub async fn condition_rules(&self) -> StoreResult<Vec<NotificationRow>> {
        self.read(|conn| {
            let sql = format!(
                "SELECT {NOTIFICATION_COLUMNS} FROM notifications
                 WHERE events LIKE '%gpu_idle%' OR events LIKE '%memory_near_limit%' OR events LIKE '%log_match%'
                 ORDER BY id"
            );
            let mut statement = conn.prepare_cached(&sql)?;
            let rows = statement.query_map([], notification_row)?;
            rows.collect()
        })
        .await
    }

    /// Keeps a condition met, unless its rule heard of it in this run of
    /// the job already: then a transition for the notifier, to that rule
    /// alone. True when it was new.
    pub async fn record_condition(&self, met: ConditionMet) -> StoreResult<bool> {
        self.write(move |tx| {
            let m = &met;
            let new = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO notification_conditions_met (rule_id, job_id, run, event, time)
                     SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM notifications WHERE id = ?1)",
                )?
                .execute(params![m.rule_id, m.job_id, m.run, m.event.as_str(), m.time])?
                == 1;
            if new {
                tx.prepare_cached(
                    "INSERT INTO job_transitions (job_id, owner, name, from_state, to_state, reason, message, time,
                        event, rule_id, replica, line)
                     SELECT id, created_by, name, state, state, NULL, ?2, ?3, ?4, ?5, ?6, ?7 FROM jobs WHERE id = ?1",
                )?
                .execute(params![
                    m.job_id,
                    m.message,
                    m.time,
                    m.event.as_str(),
                    m.rule_id,
                    m.replica,
                    m.line
                ])?;
            }
            Ok(new)
        })
        .await
    }

    /// Matches up to `limit` waiting transitions, oldest first, against the
    /// rules, making a pending delivery for each rule that names one (to an
    /// enabled endpoint, for a job the rule's owner may still see), and
    /// drops them. Returns how many transitions it read: fewer than
    /// `limit` means none is left.
    pub async fn match_transitions(&self, limit: usize, now: i64) -> StoreResult<usize> {
        self.write(move |tx| {
            let transitions: Vec<Transition> = tx
                .prepare_cached(
                    "SELECT id, job_id, owner, name, from_state, to_state, reason, message, time, event, rule_id,
                        replica, line
                     FROM job_transitions ORDER BY id LIMIT ?1",
                )?
                .query_map([limit as i64], |r| {
                    Ok(Transition {
                        id: r.get(0)?,
                        job_id: r.get(1)?,
                        job_owner: r.get(2)?,
                        name: r.get(3)?,
                        from: r.get(4)?,
                        to: r.get(5)?,
                        reason: r.get(6)?,
                        message: r.get(7)?,
                        time: r.get(8)?,
                        condition: r.get::<_, Option<String>>(9)?.as_deref().and_then(NotifyOn::parse),
                        rule_id: r.get(10)?,
                        replica: r.get(11)?,
                        line: r.get(12)?,
                    })
                })?
                .collect::<rusqlite::Result<_>>()?;
            let Some(newest) = transitions.last().map(|t| t.id) else { return Ok(0) };
            for t in &transitions {
                let Transition { job_id, job_owner, name, from, to, reason, message, time, .. } = t;
                // A condition goes to the rule that watched for it; a
                // state change to every rule that names it.
                let events = match t.condition {
                    Some(condition) => vec![condition],
                    None => NotifyOn::of_transition(column_state(from), column_state(to), reason.as_deref()),
                };
                // Two statements, not one with an OR on the rule: each
                // searches its index (`notifications_by_job` and
                // `_by_owner`, or the rule's id), where one would scan
                // every rule of the workspace per transition.
                let row = |r: &rusqlite::Row<'_>| Ok((r.get(0)?, r.get(1)?, r.get(2)?));
                let rules: Vec<(String, String, i64)> = match t.rule_id {
                    Some(rule) => tx
                        .prepare_cached(
                            "SELECT n.owner, n.events, n.webhook_id FROM notifications n
                               JOIN webhooks w ON w.id = n.webhook_id AND w.enabled = 1
                             WHERE n.id = ?1",
                        )?
                        .query_map(params![rule], row)?
                        .collect::<rusqlite::Result<_>>()?,
                    None => tx
                        .prepare_cached(
                            "SELECT n.owner, n.events, n.webhook_id FROM notifications n
                               JOIN webhooks w ON w.id = n.webhook_id AND w.enabled = 1
                             WHERE n.job_id = ?1 OR (n.job_id IS NULL AND n.owner = ?2)
                             ORDER BY n.id",
                        )?
                        .query_map(params![job_id, job_owner], row)?
                        .collect::<rusqlite::Result<_>>()?,
                };
                let mut endpoints_sent = Vec::new();
                for (rule_owner, rule_events, webhook_id) in rules {
                    let wanted = events_of(&rule_events);
                    let Some(event) = events.iter().find(|e| wanted.contains(e)) else { continue };
                    // Two rules naming the same endpoint send one delivery.
                    if endpoints_sent.contains(&webhook_id) {
                        continue;
                    }
                    if rule_owner != *job_owner && !sees_job(tx, job_id, &rule_owner)? {
                        continue;
                    }
                    endpoints_sent.push(webhook_id);
                    tx.prepare_cached(
                        "INSERT INTO webhook_deliveries (webhook_id, event, job_id, job_name, job_owner, from_state,
                            to_state, reason, message, time, state, created_at, next_at, replica, line)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'pending', ?11, ?11, ?12, ?13)",
                    )?
                    .execute(params![
                        webhook_id,
                        event.as_str(),
                        job_id,
                        name,
                        job_owner,
                        from,
                        to,
                        reason,
                        message,
                        time,
                        now,
                        t.replica,
                        t.line
                    ])?;
                    // The history keeps the newest deliveries; one still
                    // pending is never dropped.
                    tx.prepare_cached(
                        "DELETE FROM webhook_deliveries WHERE webhook_id = ?1 AND state != 'pending' AND id <= (
                            SELECT id FROM webhook_deliveries WHERE webhook_id = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)",
                    )?
                    .execute(params![webhook_id, WEBHOOK_DELIVERIES_KEPT as i64])?;
                }
            }
            tx.execute("DELETE FROM job_transitions WHERE id <= ?1", [newest])?;
            Ok(transitions.len())
        })
        .await
    }

    /// Takes up to `limit` pending deliveries due by `now`, oldest first:
    /// their next attempt moves to `lease_until`, so no other round takes
    /// them while they are sent, and a crash retries them then.
    pub async fn take_due_deliveries(&self, now: i64, limit: usize, lease_until: i64) -> StoreResult<Vec<DeliveryRow>> {
        self.write(move |tx| {
            let sql = format!(
                "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries
                 WHERE state = 'pending' AND next_at <= ?1 ORDER BY next_at, id LIMIT ?2"
            );
            let due: Vec<DeliveryRow> = tx
                .prepare_cached(&sql)?
                .query_map(params![now, limit as i64], delivery_row)?
                .collect::<Result<_, _>>()?;
            for delivery in &due {
                tx.prepare_cached("UPDATE webhook_deliveries SET next_at = ?2 WHERE id = ?1")?
                    .execute(params![delivery.id, lease_until])?;
            }
            Ok(due)
        })
        .await
    }

    /// When the next pending delivery is due, if any is pending.
    pub async fn next_delivery_at(&self) -> StoreResult<Option<i64>> {
        self.read(|conn| {
            conn.query_row("SELECT MIN(next_at) FROM webhook_deliveries WHERE state = 'pending'", [], |r| r.get(0))
        })
        .await
    }

    /// Whether any transition waits to be matched.
    pub async fn transitions_waiting(&self) -> StoreResult<bool> {
        self.read(|conn| conn.query_row("SELECT EXISTS (SELECT 1 FROM job_transitions)", [], |r| r.get(0))).await
    }

    /// Records how an attempt went.
    pub async fn record_attempt(&self, attempt: Attempted) -> StoreResult<()> {
        self.write(move |tx| {
            let a = &attempt;
            let delivered_at = (a.state == DeliveryState::Delivered).then_some(a.at);
            tx.execute(
                "UPDATE webhook_deliveries SET state = ?2, attempts = attempts + ?3, last_status = ?4,
                    last_error = ?5, next_at = ?6, delivered_at = ?7 WHERE id = ?1",
                params![a.id, a.state.as_str(), a.sent as i64, a.status, a.error, a.next_at, delivered_at],
            )?;
            Ok(())
        })
        .await
    }

    /// `owner`'s endpoint's deliveries, newest first; `None` when they
    /// have no such endpoint.
    pub async fn deliveries_of(&self, owner: String, webhook: i64) -> StoreResult<Option<Vec<DeliveryRow>>> {
        self.read(move |conn| {
            let mine: bool = conn.query_row(
                "SELECT EXISTS (SELECT 1 FROM webhooks WHERE id = ?1 AND owner = ?2)",
                params![webhook, owner],
                |r| r.get(0),
            )?;
            if !mine {
                return Ok(None);
            }
            let sql = format!(
                "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = ?1 ORDER BY id DESC LIMIT ?2"
            );
            let mut statement = conn.prepare(&sql)?;
            let rows = statement.query_map(params![webhook, WEBHOOK_DELIVERIES_KEPT as i64], delivery_row)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map(Some)
        })
        .await
    }

    /// Whether `viewer` may still see job `id` (for a delivery about to go).
    pub async fn sees_job(&self, id: String, viewer: String) -> StoreResult<bool> {
        self.read(move |conn| sees_job(conn, &id, &viewer)).await
    }
}

fn sees_job(conn: &rusqlite::Connection, id: &str, viewer: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM jobs WHERE id = ?1 AND (visibility = 'public' OR created_by = ?2))",
        params![id, viewer],
        |r| r.get(0),
    )
}

/// A transition waiting to be matched: a state change, or a condition met
/// (then `condition` and `rule_id` say which, for which rule).
struct Transition {
    id: i64,
    job_id: String,
    job_owner: String,
    name: String,
    from: String,
    to: String,
    reason: Option<String>,
    message: Option<String>,
    time: i64,
    condition: Option<NotifyOn>,
    rule_id: Option<i64>,
    replica: Option<String>,
    line: Option<u64>,
}

fn column_state(text: &str) -> JobState {
    JobState::parse(text).unwrap_or(JobState::Unknown)
}
