//! The notifier: turns job transitions into deliveries and sends them, on
//! its own task, so a slow or dead endpoint never slows the scheduler
//! (docs/api.md, "Notifications").
//!
//! The scheduler's state writes leave each transition a rule could name in
//! the store (`job_transitions`, written in the same transaction), and the
//! change feed wakes this task; it matches them against the rules
//! ([`Store::match_transitions`]) and sends what is due, each send on a
//! task of its own, at most [`IN_FLIGHT`] at once. A delivery is taken by
//! moving its next attempt past the attempt's timeout first, so a crash
//! during a send retries it (deliveries are at least once; the
//! `X-Jobdeck-Delivery` header lets a receiver drop a repeat). A delivery
//! that fails every attempt disables its endpoint, with the reason on the
//! endpoint and in the audit log. The conditions of running jobs (idle
//! GPUs, memory near the limit, a log line matching) are found by
//! [`watch`], which leaves them as transitions too.

pub mod mail;
pub mod payload;
pub mod send;
pub mod watch;

use std::sync::Arc;
use std::time::Duration;

use jobdeck_api::{DeliveryState, WebhookKind};
use jobdeck_core::{metrics, Config};
use jobdeck_store::changes::{Change, Since};
use jobdeck_store::logs::LogStore;
use jobdeck_store::{Attempted, AuditRecord, DeliveryRow, Store};
use tokio::sync::{Notify, Semaphore};

use send::Outcome;

/// Transitions matched per store transaction.
const MATCH_BATCH: usize = 200;
/// Deliveries sent at once.
pub const IN_FLIGHT: usize = 8;

/// Starts the notifier's task and the condition watch's.
pub fn spawn(store: Store, logs: LogStore, samples: metrics::Now, config: Arc<Config>) {
    let conditions_met = Arc::new(Notify::new());
    watch::spawn(store.clone(), logs, samples, config.clone(), conditions_met.clone());
    tokio::spawn(async move {
        let notifier = Notifier {
            client: send::client(&config.notifications),
            slots: Arc::new(Semaphore::new(IN_FLIGHT)),
            sent: Arc::new(Notify::new()),
            conditions_met,
            store,
            config,
        };
        notifier.run().await;
    });
}

#[derive(Clone)]
struct Notifier {
    store: Store,
    config: Arc<Config>,
    client: reqwest::Client,
    slots: Arc<Semaphore>,
    /// Told when a send ends, so the loop sees its retry time (a send
    /// writes no change the feed carries).
    sent: Arc<Notify>,
    /// Told by the condition watch when it leaves a condition met.
    conditions_met: Arc<Notify>,
}

impl Notifier {
    async fn run(self) {
        let feed = self.store.changes().clone();
        let mut newest = feed.watch();
        let mut cursor = feed.newest();
        // The first round also matches what a previous process left.
        let mut transitions_may_wait = true;
        loop {
            if let Err(e) = self.round(transitions_may_wait).await {
                tracing::warn!(error = %jobdeck_core::error_chain(&e), "notifications: cannot read or write the store");
            }
            let next = self.store.next_delivery_at().await.ok().flatten();
            // The next retry's time, and once a minute at the latest: a lost
            // wake-up costs a minute, never a notification.
            let wait = next.map_or(60_000, |at| (at - jobdeck_store::now_millis()).clamp(0, 60_000));
            let deadline = tokio::time::Instant::now() + Duration::from_millis(wait as u64);
            transitions_may_wait = loop {
                tokio::select! {
                    changed = newest.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        // Only a job's change can be a transition: replicas,
                        // events and metrics, far more frequent, cost no read.
                        let job_changed = match feed.since(cursor) {
                            Since::Changes(changes) => {
                                cursor = changes.last().map_or(cursor, |(number, _)| *number);
                                changes.iter().any(|(_, change)| matches!(change, Change::Job(_)))
                            }
                            Since::Missed => {
                                cursor = feed.newest();
                                true
                            }
                        };
                        if job_changed {
                            break true;
                        }
                    }
                    () = self.sent.notified() => break false,
                    () = self.conditions_met.notified() => break true,
                    () = tokio::time::sleep_until(deadline) => break true,
                }
            };
        }
    }

    /// Matches the waiting transitions (when some may wait), then starts
    /// the sends that are due.
    async fn round(&self, transitions_may_wait: bool) -> jobdeck_store::StoreResult<()> {
        let now = jobdeck_store::now_millis();
        if transitions_may_wait {
            while self.store.transitions_waiting().await? {
                if self.store.match_transitions(MATCH_BATCH, now).await? < MATCH_BATCH {
                    break;
                }
            }
        }
        let free = self.slots.available_permits();
        let due = self.store.next_delivery_at().await?.is_some_and(|at| at <= now);
        if free == 0 || !due {
            return Ok(());
        }
        // Taken for twice the attempt's timeout: long enough that no other
        // round takes it while it is sent, short enough to retry soon
        // after a crash.
        let lease = now + 2 * self.config.notifications.timeout.as_millis() as i64;
        for delivery in self.store.take_due_deliveries(now, free, lease).await? {
            let Ok(slot) = self.slots.clone().acquire_owned().await else { return Ok(()) };
            let notifier = self.clone();
            tokio::spawn(async move {
                if let Err(e) = notifier.deliver(delivery).await {
                    tracing::warn!(error = %jobdeck_core::error_chain(&e), "notifications: cannot record a delivery");
                }
                drop(slot);
                notifier.sent.notify_one();
            });
        }
        Ok(())
    }

    /// Mails `delivery` to `owner`'s address on record now.
    async fn mail(&self, owner: &str, delivery: &DeliveryRow) -> jobdeck_store::StoreResult<Outcome> {
        let settings = &self.config.notifications;
        let Some(email) = &settings.email else {
            return Ok(Outcome::Failed("this server sends no email now ([notifications.email] is not set)".into()));
        };
        let Some(to) = self.store.user_email(owner).await? else {
            return Ok(Outcome::Failed(format!("{owner} has no email address on record")));
        };
        let public_url = self.config.auth.public_url.as_deref();
        let workspace = &self.config.workspace_name;
        Ok(match mail::message(email, workspace, public_url, &to, delivery) {
            Ok(message) => mail::send(email, settings.timeout, message).await,
            Err(why) => Outcome::Failed(why),
        })
    }

    async fn deliver(&self, delivery: DeliveryRow) -> jobdeck_store::StoreResult<()> {
        let now = || jobdeck_store::now_millis();
        let settings = &self.config.notifications;
        let skip = |why: &str| Attempted {
            id: delivery.id,
            state: DeliveryState::Skipped,
            sent: false,
            status: None,
            error: Some(why.to_string()),
            next_at: None,
            at: now(),
        };
        let Some(target) = self.store.webhook_target(delivery.webhook_id).await? else {
            return Ok(());
        };
        if !target.enabled {
            return self.store.record_attempt(skip("the endpoint was disabled")).await;
        }
        // The rule's owner may have lost sight of the job (made private)
        // since the transition was matched.
        if target.owner != delivery.job_owner
            && !self.store.sees_job(delivery.job_id.clone(), target.owner.clone()).await?
        {
            return self.store.record_attempt(skip("its owner may no longer see the job")).await;
        }
        let outcome = match target.kind {
            WebhookKind::Email => self.mail(&target.owner, &delivery).await?,
            WebhookKind::Json | WebhookKind::Slack => {
                let public_url = self.config.auth.public_url.as_deref();
                send::attempt(&self.client, settings, public_url, &target, &delivery).await
            }
        };
        let attempts = delivery.attempts + 1;
        let (status, error) = match &outcome {
            Outcome::Delivered(status) => (Some(u32::from(*status)), None),
            Outcome::Refused(status) if (300..400).contains(status) => {
                (Some(u32::from(*status)), Some(format!("answered {status}: redirects are not followed")))
            }
            Outcome::Refused(status) => (Some(u32::from(*status)), Some(format!("answered {status}"))),
            Outcome::Failed(why) => (None, Some(why.clone())),
        };
        let gave_up = error.is_some() && attempts >= settings.attempts;
        let (state, next_at) = match (&outcome, gave_up) {
            (Outcome::Delivered(_), _) => (DeliveryState::Delivered, None),
            (_, true) => (DeliveryState::Failed, None),
            (_, false) => {
                let wait = settings.retry_after.as_millis() as i64 * (1i64 << (attempts - 1).min(20));
                (DeliveryState::Pending, Some(now() + wait))
            }
        };
        let last_error = error.clone();
        self.store
            .record_attempt(Attempted { id: delivery.id, state, sent: true, status, error, next_at, at: now() })
            .await?;
        if gave_up {
            let reason = format!(
                "disabled after delivery {} failed {attempts} times; the last attempt: {}",
                delivery.id,
                last_error.unwrap_or_default()
            );
            tracing::warn!(webhook = target.id, owner = %target.owner, "notifications: {reason}");
            self.store.disable_webhook(target.id, reason.clone()).await?;
            // The notice to the endpoint's owner: on the endpoint itself
            // (GET /webhooks) and in the audit log.
            let record = AuditRecord {
                time: now(),
                actor: target.owner.clone(),
                action: "webhook.disabled".into(),
                target: target.id.to_string(),
                outcome: "ok".into(),
                detail: reason,
                source: "notifier".into(),
            };
            self.store.record_audit(vec![record]).await?;
        }
        Ok(())
    }
}
