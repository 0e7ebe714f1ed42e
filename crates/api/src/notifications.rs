//! Notifications (Jobdeck extensions): telling people when a job starts,
//! ends or is preempted, without a tab kept open.
//!
//! A user registers endpoints (`POST /webhooks`: a JSON receiver of their
//! own, whose deliveries are signed, or a Slack incoming webhook) and then
//! says which of their jobs' transitions go to which endpoint (`POST
//! /notifications`: every job of theirs, or one job they may see). An
//! endpoint's address is write-only, as a secret's value is: the server
//! answers only its scheme, host and port. docs/api.md, "Notifications",
//! says what a delivery carries and how it is signed.

use serde::{Deserialize, Serialize};

use crate::decode::Decode;
use crate::{EndReason, JobState};

/// The most endpoints one user may register.
pub const WEBHOOKS_PER_USER_MAX: usize = 20;
/// The most notification rules one user may keep.
pub const NOTIFICATIONS_PER_USER_MAX: usize = 100;
/// The longest endpoint name.
pub const WEBHOOK_NAME_MAX_LEN: usize = 64;
/// The longest endpoint address.
pub const WEBHOOK_URL_MAX_LEN: usize = 2048;
/// How many deliveries an endpoint's history keeps, newest first.
pub const WEBHOOK_DELIVERIES_KEPT: usize = 100;
/// The header a JSON delivery's signature is in: `sha256=<hex>`, the
/// HMAC-SHA256, under the endpoint's secret, of `<timestamp>.<body>`.
pub const SIGNATURE_HEADER: &str = "X-Jobdeck-Signature";
/// The header with the Unix seconds the signature covers.
pub const TIMESTAMP_HEADER: &str = "X-Jobdeck-Timestamp";
/// The header naming the delivery, the same on each retry of it.
pub const DELIVERY_HEADER: &str = "X-Jobdeck-Delivery";

/// What an endpoint receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum WebhookKind {
    /// Jobdeck's own JSON, signed with the endpoint's secret.
    #[default]
    Json,
    /// A Slack incoming webhook's message (`{"text": …}`).
    Slack,
    /// Mail to the owner's own address (their sign-in's, or the one an
    /// admin set), through the server's SMTP server; it has no URL.
    Email,
}

/// What a person can ask to hear about: a transition of a job, or a
/// condition of a running one (met once per rule and run of the job).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum NotifyOn {
    /// The job started running (after queueing, or again after a retry).
    Started,
    Completed,
    Failed,
    /// A person or a deadline stopped it.
    Stopped,
    /// The executor took its resources away (a preempted pod or Slurm job).
    Preempted,
    /// Every GPU of the running job stayed under
    /// [`crate::metrics::GPU_IDLE_PERCENT`] for the rule's
    /// `gpu_idle_minutes`. Only where the executor samples use (the local
    /// executor).
    #[serde(rename = "gpu_idle")]
    GpuIdle,
    /// A replica's memory reached the rule's `memory_percent` of its limit.
    /// Only where the executor samples use (the local executor).
    #[serde(rename = "memory_near_limit")]
    MemoryNearLimit,
    /// A line of the running job's log matched the rule's `log_pattern`.
    #[serde(rename = "log_match")]
    LogMatch,
}

impl NotifyOn {
    pub const ALL: [NotifyOn; 8] = [
        NotifyOn::Started,
        NotifyOn::Completed,
        NotifyOn::Failed,
        NotifyOn::Stopped,
        NotifyOn::Preempted,
        NotifyOn::GpuIdle,
        NotifyOn::MemoryNearLimit,
        NotifyOn::LogMatch,
    ];

    /// The conditions of a running job, which the server watches for
    /// rather than reading them off a state change.
    pub const CONDITIONS: [NotifyOn; 3] = [NotifyOn::GpuIdle, NotifyOn::MemoryNearLimit, NotifyOn::LogMatch];

    pub fn as_str(self) -> &'static str {
        match self {
            NotifyOn::Started => "started",
            NotifyOn::Completed => "completed",
            NotifyOn::Failed => "failed",
            NotifyOn::Stopped => "stopped",
            NotifyOn::Preempted => "preempted",
            NotifyOn::GpuIdle => "gpu_idle",
            NotifyOn::MemoryNearLimit => "memory_near_limit",
            NotifyOn::LogMatch => "log_match",
        }
    }

    pub fn is_condition(self) -> bool {
        NotifyOn::CONDITIONS.contains(&self)
    }

    pub fn parse(text: &str) -> Option<NotifyOn> {
        NotifyOn::ALL.into_iter().find(|on| on.as_str() == text)
    }

    /// What a job entering `to` from `from` for `reason` (its stored
    /// reason, an `EndReason`'s text where it ended) is, most specific
    /// first: a run preempted and then failed is both.
    pub fn of_transition(from: JobState, to: JobState, reason: Option<&str>) -> Vec<NotifyOn> {
        let preempted = reason == Some(EndReason::Preempted.as_str());
        match to {
            JobState::Running if from != JobState::Running => vec![NotifyOn::Started],
            JobState::Completed => vec![NotifyOn::Completed],
            JobState::Failed if preempted => vec![NotifyOn::Preempted, NotifyOn::Failed],
            JobState::Failed => vec![NotifyOn::Failed],
            JobState::PendingRetry if preempted => vec![NotifyOn::Preempted],
            JobState::Stopped => vec![NotifyOn::Stopped],
            _ => Vec::new(),
        }
    }
}

/// `POST /webhooks`: a new endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct WebhookCreate {
    /// A name of the user's choice, shown in lists.
    pub name: String,
    /// Where deliveries are posted: `https://…` (`http://` too, where the
    /// admin's allow-list admits the host). Never answered back. Empty for
    /// an email endpoint.
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub kind: WebhookKind,
}

impl WebhookCreate {
    /// The rules of the body alone, one message per broken rule by field;
    /// whether the server may send to the address is the server's check.
    pub fn problems(&self) -> crate::FieldErrors {
        let mut problems = crate::FieldErrors::new();
        let mut add = |field: &str, message: String| problems.entry(field.into()).or_default().push(message);
        let name_len = self.name.chars().count();
        if name_len == 0 || name_len > WEBHOOK_NAME_MAX_LEN {
            add("name", format!("1 to {WEBHOOK_NAME_MAX_LEN} characters"));
        }
        if self.name.chars().any(char::is_control) {
            add("name", "no control characters (line breaks, tabs)".into());
        }
        if self.url.len() > WEBHOOK_URL_MAX_LEN {
            add("url", format!("at most {WEBHOOK_URL_MAX_LEN} characters"));
        }
        if self.kind == WebhookKind::Email && !self.url.is_empty() {
            add("url", "an email endpoint has no URL: mail goes to your own address".into());
        }
        problems
    }
}

/// One endpoint as `GET /webhooks` lists it: never its address or secret.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WebhookInfo {
    /// The number the other routes take.
    pub id: i64,
    pub name: String,
    pub kind: WebhookKind,
    /// The address's scheme, host and port (`https://hooks.slack.com`);
    /// for email, `mailto:` and the address it was made for.
    pub destination: String,
    /// False once the server gave up on it (see `disabled_reason`) until
    /// its owner enables it again.
    pub enabled: bool,
    /// Why and when it was disabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled_reason: Option<String>,
    /// Unix milliseconds, as every time here.
    pub created_at: i64,
}

/// `POST /webhooks`'s answer: the endpoint and, for a JSON one, the secret
/// its deliveries are signed with, shown this once.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CreatedWebhook {
    pub webhook: WebhookInfo,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// Where one delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum DeliveryState {
    /// Not sent yet, or to be tried again at `next_attempt_at`.
    #[default]
    Pending,
    /// The endpoint answered 2xx.
    Delivered,
    /// Every attempt failed.
    Failed,
    /// Not sent: the endpoint was disabled, or its owner may no longer see
    /// the job.
    Skipped,
}

impl DeliveryState {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryState::Pending => "pending",
            DeliveryState::Delivered => "delivered",
            DeliveryState::Failed => "failed",
            DeliveryState::Skipped => "skipped",
        }
    }

    pub fn parse(text: &str) -> Option<DeliveryState> {
        [DeliveryState::Pending, DeliveryState::Delivered, DeliveryState::Failed, DeliveryState::Skipped]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// One delivery in `GET /webhooks/{id}/deliveries`, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WebhookDelivery {
    /// The `X-Jobdeck-Delivery` header's value.
    pub id: i64,
    /// What happened (`failed`, `completed`, …).
    pub event: String,
    pub job_id: String,
    /// The replica a condition was met on (`log_match`,
    /// `memory_near_limit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<String>,
    /// The matching line of that replica's log (`log_match`), 1-based.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    pub state: DeliveryState,
    pub attempts: u32,
    /// The endpoint's last answer, when it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_status: Option<u32>,
    /// Why the last attempt failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    pub created_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<i64>,
}

/// `PUT /users/{name}/email`: the address a user's email endpoints mail,
/// set by an admin (for a user whose sign-in gave none); empty clears it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct EmailChange {
    pub email: String,
}

impl EmailChange {
    pub fn problems(&self) -> crate::FieldErrors {
        let mut problems = crate::FieldErrors::new();
        let email = self.email.as_str();
        let well_formed = email.len() <= 254
            && email.split_once('@').is_some_and(|(local, domain)| {
                !local.is_empty() && domain.contains('.') && !domain.starts_with('.') && !domain.contains('@')
            })
            && !email.chars().any(|c| c.is_whitespace() || c.is_control() || "<>,;\"".contains(c));
        if !email.is_empty() && !well_formed {
            problems.entry("email".into()).or_default().push("an address such as alice@example.com".into());
        }
        problems
    }
}

/// `POST /notifications`: which transitions of which jobs go where.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NotificationCreate {
    /// One job the caller may see (its id or name); absent, every job the
    /// caller owns, those made later included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// The transitions to hear about; at least one.
    pub on: Vec<NotifyOn>,
    /// The endpoint (one of the caller's, by id).
    pub webhook: i64,
    /// With `gpu_idle`: for how many minutes every GPU of the job must stay
    /// idle; 1 to 1440, 60 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_idle_minutes: Option<u32>,
    /// With `memory_near_limit`: the share of a replica's memory limit, in
    /// percent, that counts as near; 50 to 99, 90 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_percent: Option<u32>,
    /// With `log_match` (and then required): a regular expression (Rust's
    /// `regex` syntax: no look-around or back-references, so matching takes
    /// time linear in the line) matched against each line of the job's
    /// logs; at most [`LOG_PATTERN_MAX_LEN`] bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_pattern: Option<String>,
}

/// How long an idle GPU's wait may be, in minutes (a day).
pub const GPU_IDLE_MINUTES_MAX: u32 = 24 * 60;
/// The idle wait when a rule names none, in minutes.
pub const GPU_IDLE_MINUTES_DEFAULT: u32 = 60;
/// The share of the memory limit when a rule names none, in percent.
pub const MEMORY_PERCENT_DEFAULT: u32 = 90;
/// The longest log pattern.
pub const LOG_PATTERN_MAX_LEN: usize = 256;

impl NotificationCreate {
    /// The rules of the body alone; whether `log_pattern` is a regular
    /// expression is the server's check (the console has no regex engine).
    pub fn problems(&self) -> crate::FieldErrors {
        let mut problems = crate::FieldErrors::new();
        let mut add = |field: &str, message: String| problems.entry(field.into()).or_default().push(message);
        if self.on.is_empty() {
            add("on", format!("name at least one of {}", NotifyOn::ALL.map(NotifyOn::as_str).join(", ")));
        }
        let wants = |on: NotifyOn| self.on.contains(&on);
        if let Some(minutes) = self.gpu_idle_minutes {
            if !wants(NotifyOn::GpuIdle) {
                add("gpu_idle_minutes", "only with gpu_idle in on".into());
            } else if minutes == 0 || minutes > GPU_IDLE_MINUTES_MAX {
                add("gpu_idle_minutes", format!("1 to {GPU_IDLE_MINUTES_MAX} minutes"));
            }
        }
        if let Some(percent) = self.memory_percent {
            if !wants(NotifyOn::MemoryNearLimit) {
                add("memory_percent", "only with memory_near_limit in on".into());
            } else if !(50..=99).contains(&percent) {
                add("memory_percent", "50 to 99 percent".into());
            }
        }
        match &self.log_pattern {
            Some(_) if !wants(NotifyOn::LogMatch) => add("log_pattern", "only with log_match in on".into()),
            Some(pattern) if pattern.is_empty() || pattern.len() > LOG_PATTERN_MAX_LEN => {
                add("log_pattern", format!("1 to {LOG_PATTERN_MAX_LEN} bytes"))
            }
            None if wants(NotifyOn::LogMatch) => add("log_pattern", "log_match needs a pattern".into()),
            _ => {}
        }
        problems
    }
}

/// One rule as `GET /notifications` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NotificationInfo {
    pub id: i64,
    /// The job's id; absent for every job the owner has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    pub on: Vec<NotifyOn>,
    pub webhook: i64,
    /// The conditions' settings, each where `on` names its condition (the
    /// default filled in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_idle_minutes: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_percent: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_pattern: Option<String>,
    pub created_at: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_transition_is_the_notifications_a_person_expects() {
        use JobState::*;
        let preempted = Some("Preempted");
        let table: &[(JobState, JobState, Option<&str>, &[NotifyOn])] = &[
            (Queueing, Starting, None, &[]),
            (Starting, Running, None, &[NotifyOn::Started]),
            (Running, Running, None, &[]),
            (Running, Completed, None, &[NotifyOn::Completed]),
            (Running, Failed, Some("Error"), &[NotifyOn::Failed]),
            (Running, Failed, preempted, &[NotifyOn::Preempted, NotifyOn::Failed]),
            (Running, PendingRetry, preempted, &[NotifyOn::Preempted]),
            (Running, PendingRetry, Some("Error"), &[]),
            (Stopping, Stopped, None, &[NotifyOn::Stopped]),
            (Queueing, Stopped, None, &[NotifyOn::Stopped]),
            (Completed, Archived, None, &[]),
        ];
        for (from, to, reason, expected) in table {
            assert_eq!(NotifyOn::of_transition(*from, *to, *reason), *expected, "{from:?} -> {to:?} ({reason:?})");
        }
        for on in NotifyOn::ALL {
            assert_eq!(NotifyOn::parse(on.as_str()), Some(on));
        }
    }

    #[test]
    fn a_conditions_setting_goes_with_its_condition() {
        let rule = |on: &[NotifyOn], minutes: Option<u32>, percent: Option<u32>, pattern: Option<&str>| {
            NotificationCreate {
                on: on.to_vec(),
                webhook: 1,
                gpu_idle_minutes: minutes,
                memory_percent: percent,
                log_pattern: pattern.map(String::from),
                ..NotificationCreate::default()
            }
            .problems()
        };
        use NotifyOn::*;
        assert!(rule(&[GpuIdle, Failed], Some(30), None, None).is_empty());
        assert!(rule(&[GpuIdle], None, None, None).is_empty(), "the default wait");
        assert!(rule(&[MemoryNearLimit], None, Some(95), None).is_empty());
        assert!(rule(&[LogMatch], None, None, Some("loss: nan")).is_empty());
        let cases: &[(&[NotifyOn], Option<u32>, Option<u32>, Option<&str>, &str)] = &[
            (&[Failed], Some(30), None, None, "gpu_idle_minutes"),
            (&[GpuIdle], Some(0), None, None, "gpu_idle_minutes"),
            (&[GpuIdle], Some(GPU_IDLE_MINUTES_MAX + 1), None, None, "gpu_idle_minutes"),
            (&[MemoryNearLimit], None, Some(100), None, "memory_percent"),
            (&[GpuIdle], None, Some(90), None, "memory_percent"),
            (&[LogMatch], None, None, None, "log_pattern"),
            (&[LogMatch], None, None, Some(""), "log_pattern"),
            (&[Failed], None, None, Some("nan"), "log_pattern"),
            (&[LogMatch], None, None, Some(&"a".repeat(LOG_PATTERN_MAX_LEN + 1)), "log_pattern"),
        ];
        for (on, minutes, percent, pattern, field) in cases {
            let problems = rule(on, *minutes, *percent, *pattern);
            assert_eq!(problems.keys().collect::<Vec<_>>(), [field], "{on:?} {minutes:?} {percent:?} {pattern:?}");
        }
        assert_eq!(serde_json::to_value(NotifyOn::MemoryNearLimit).unwrap(), "memory_near_limit");
        assert!(NotifyOn::of_transition(JobState::Running, JobState::Failed, None).iter().all(|on| !on.is_condition()));
    }

    #[test]
    fn an_email_address_is_one_address() {
        let problems = |email: &str| EmailChange { email: email.into() }.problems();
        for good in ["alice@example.com", "a.b+jobs@mail.example.org", ""] {
            assert!(problems(good).is_empty(), "{good}");
        }
        for bad in [
            "alice",
            "@example.com",
            "alice@localhost",
            "a@b@c.com",
            "a b@c.com",
            "a@c.com\r\nBcc: x@y.z",
            "<a@b.com>",
            "a@b.com,c@d.com",
        ] {
            assert!(problems(bad).contains_key("email"), "{bad:?}");
        }
    }
}
