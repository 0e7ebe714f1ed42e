//! Quotas and usage (Jobdeck extensions; Lepton's workspaces have none).
//!
//! A quota bounds what one user may hold: GPUs and replicas of running
//! jobs, jobs waiting in the queue, and bytes of logs kept. It is set for a
//! role (every user of that role) or for one user, in `jobdeck.toml`
//! (`[quotas.roles.member]`, `[quotas.users.alice]`) or by an admin in the
//! console (`PUT /quotas/{scope}/{name}`), which replaces the config's
//! setting for that role or user. A user's limit for each of the four is
//! their own quota's when it sets one, else their role's; neither: no
//! limit. docs/teams.md ("Quotas") says what a job over a quota does.

use serde::{Deserialize, Serialize};

use crate::decode::Decode;

/// The largest number a limit may be: what JSON carries exactly.
pub const QUOTA_MAX: i64 = 9_007_199_254_740_991;

/// The four limits of one quota; an absent one sets no limit here (the
/// role's applies to a user, or none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct QuotaLimits {
    /// GPUs the user's admitted jobs may hold at once (every replica slot's
    /// GPUs, from admission until the run's resources are released).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_gpus: Option<i64>,
    /// Replica slots the user's admitted jobs may hold at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_replicas: Option<i64>,
    /// Jobs of the user that may wait in the queue at once; one more is
    /// refused (429) when it is created or started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_jobs: Option<i64>,
    /// Bytes of the user's jobs' logs kept on disk; past it, their queued
    /// jobs wait until some are deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_bytes: Option<i64>,
}

impl QuotaLimits {
    /// The limits by wire name, in the order pages show them.
    pub fn fields(&self) -> [(&'static str, Option<i64>); 4] {
        [
            ("running_gpus", self.running_gpus),
            ("running_replicas", self.running_replicas),
            ("queued_jobs", self.queued_jobs),
            ("log_bytes", self.log_bytes),
        ]
    }

    /// Whether no limit is set.
    pub fn is_empty(&self) -> bool {
        self.fields().iter().all(|(_, v)| v.is_none())
    }

    /// Each limit's own where this one sets none: a user's quota over
    /// their role's.
    pub fn or(self, fallback: QuotaLimits) -> QuotaLimits {
        QuotaLimits {
            running_gpus: self.running_gpus.or(fallback.running_gpus),
            running_replicas: self.running_replicas.or(fallback.running_replicas),
            queued_jobs: self.queued_jobs.or(fallback.queued_jobs),
            log_bytes: self.log_bytes.or(fallback.log_bytes),
        }
    }

    /// The rules of a quota, one message per broken rule by field.
    pub fn problems(&self) -> crate::FieldErrors {
        let mut problems = crate::FieldErrors::new();
        for (field, value) in self.fields() {
            if let Some(value) = value {
                if !(0..=QUOTA_MAX).contains(&value) {
                    problems
                        .entry(field.into())
                        .or_default()
                        .push(format!("from 0 to {QUOTA_MAX}, or left out for no limit"));
                }
            }
        }
        problems
    }
}

/// Whom a quota is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum QuotaScope {
    /// Every user of a role (`viewer`, `member`, `admin`).
    #[default]
    Role,
    /// One user by name.
    User,
}

impl QuotaScope {
    /// The name on the wire and in paths (`/quotas/role/member`).
    pub fn as_str(self) -> &'static str {
        match self {
            QuotaScope::Role => "role",
            QuotaScope::User => "user",
        }
    }

    pub fn parse(name: &str) -> Option<QuotaScope> {
        [QuotaScope::Role, QuotaScope::User].into_iter().find(|s| s.as_str() == name)
    }
}

/// Where a quota is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum QuotaSource {
    /// `jobdeck.toml`'s `[quotas]`.
    #[default]
    Config,
    /// An admin set it (`PUT /quotas/{scope}/{name}`); it replaces the
    /// config's setting for the same role or user until it is deleted.
    Console,
}

/// One role's or user's quota as `GET /quotas` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Quota {
    pub scope: QuotaScope,
    /// The role's or the user's name.
    pub name: String,
    pub limits: QuotaLimits,
    pub source: QuotaSource,
    /// Who set it in the console, and when (Unix ms); absent for the config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<i64>,
}

/// `GET /quotas`: every quota in force, roles first.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct QuotaList {
    pub items: Vec<Quota>,
}

/// What one user holds now, against the limits that apply to them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UserUsage {
    pub user: String,
    pub role: crate::Role,
    pub running_gpus: i64,
    pub running_replicas: i64,
    pub queued_jobs: i64,
    pub log_bytes: i64,
    /// The limits in force for the user: each their own quota's, else their
    /// role's; absent: none.
    pub limits: QuotaLimits,
}

/// `GET /usage`: every user's usage now, by name.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UsageNow {
    pub items: Vec<UserUsage>,
}

/// `GET /usage/logs`: what the jobs' logs take, and the jobs whose logs
/// take the most, largest first (admins only).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LogUsage {
    /// What every job's logs take, as last measured.
    pub used_bytes: i64,
    /// `[logs] disk_budget`; absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_budget_bytes: Option<i64>,
    pub items: Vec<JobLogUsage>,
}

/// One job's logs in [`LogUsage`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobLogUsage {
    /// Absent for another user's private job, which an admin may not see
    /// either: its owner and size are still counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    pub created_by: String,
    pub state: crate::JobState,
    pub log_bytes: i64,
    /// When its logs go, once it has finished (as `status.log_retention`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_retention: Option<crate::LogRetention>,
}

/// Whose usage one row of the history sums.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum UsageGrouping {
    /// One row per user and day.
    #[default]
    User,
    /// One row per role and day, by each user's role today.
    Role,
}

impl UsageGrouping {
    pub fn as_str(self) -> &'static str {
        match self {
            UsageGrouping::User => "user",
            UsageGrouping::Role => "role",
        }
    }

    pub fn parse(name: &str) -> Option<UsageGrouping> {
        [UsageGrouping::User, UsageGrouping::Role].into_iter().find(|g| g.as_str() == name)
    }
}

/// One user's or role's use of one day (UTC).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UsageDay {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    /// The user's or role's name.
    pub subject: String,
    /// GPUs held times hours held, from admission to release.
    pub gpu_hours: f64,
    /// CPUs held times hours held.
    pub cpu_hours: f64,
    /// Bytes of logs kept at the end of the day (or now, for today), as
    /// last measured.
    pub log_bytes: i64,
}

/// `GET /usage/history`: use per day from `from` to `to` (inclusive, UTC),
/// days without any use left out. `?format=csv` answers the same rows as
/// CSV (`day,user,gpu_hours,cpu_hours,log_bytes`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UsageHistory {
    pub by: UsageGrouping,
    pub from: String,
    pub to: String,
    pub items: Vec<UsageDay>,
}

/// The longest history one request may ask for, in days.
pub const USAGE_HISTORY_MAX_DAYS: i64 = 366;
/// The history's length when the request does not say, in days.
pub const USAGE_HISTORY_DEFAULT_DAYS: i64 = 30;

/// How many jobs `GET /usage/logs` lists when the request does not say,
/// and at most.
pub const LOG_USAGE_DEFAULT_JOBS: i64 = 20;
pub const LOG_USAGE_MAX_JOBS: i64 = 100;

/// The units byte counts are written in, with their size in bytes.
const BYTE_UNITS: [(&str, i64); 9] = [
    ("B", 1),
    ("KB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("TB", 1_000_000_000_000),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("TiB", 1 << 40),
];

/// A byte count as people read it (`1.5 GB`), in powers of 1000 as disks
/// are sold. Whole-number arithmetic only: the console would otherwise
/// carry the float printer (docs/measurements.md).
pub fn format_bytes(bytes: i64) -> String {
    let Some((unit, scale)) =
        BYTE_UNITS[..5].iter().rev().find(|(_, scale)| bytes >= *scale).copied().filter(|(_, s)| *s > 1)
    else {
        return format!("{bytes} B");
    };
    let tenths = bytes.saturating_mul(10).saturating_add(scale / 2) / scale;
    match tenths % 10 {
        0 => format!("{} {unit}", tenths / 10),
        fraction => format!("{}.{fraction} {unit}", tenths / 10),
    }
}

/// Reads a byte count written as a number of bytes or with a unit: `B`,
/// `KB`, `MB`, `GB`, `TB` (powers of 1000) or `KiB`, `MiB`, `GiB`, `TiB`
/// (powers of 1024), with at most 3 decimals (`1.5GB`), as the config file
/// and the console's quota form take it.
pub fn parse_bytes(text: &str) -> Option<i64> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale = match unit.trim() {
        "" => 1,
        unit => BYTE_UNITS.iter().find(|(name, _)| *name == unit)?.1,
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if (whole.is_empty() && fraction.is_empty()) || fraction.len() > 3 || fraction.contains('.') {
        return None;
    }
    let digits = |d: &str| if d.is_empty() { Some(0) } else { d.parse::<i64>().ok() };
    let (whole, fraction_value) = (digits(whole)?, digits(fraction)?);
    // At most 999 times 2^40: no overflow.
    let denominator = 10i64.pow(fraction.len() as u32);
    let bytes = whole.checked_mul(scale)?.checked_add((fraction_value * scale + denominator / 2) / denominator)?;
    (bytes <= QUOTA_MAX).then_some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_users_limit_is_their_own_else_their_roles() {
        let user = QuotaLimits { running_gpus: Some(16), ..Default::default() };
        let role = QuotaLimits { running_gpus: Some(8), queued_jobs: Some(3), ..Default::default() };
        let both = user.or(role);
        assert_eq!(both.running_gpus, Some(16));
        assert_eq!(both.queued_jobs, Some(3));
        assert_eq!(both.log_bytes, None);
    }

    #[test]
    fn negative_limits_are_refused_by_field() {
        let problems = QuotaLimits { running_gpus: Some(-1), log_bytes: Some(0), ..Default::default() }.problems();
        assert_eq!(problems.keys().collect::<Vec<_>>(), ["running_gpus"]);
    }

    #[test]
    fn byte_counts_read_with_and_without_units() {
        assert_eq!(parse_bytes("1024"), Some(1024));
        assert_eq!(parse_bytes("50GB"), Some(50_000_000_000));
        assert_eq!(parse_bytes("1.5 MB"), Some(1_500_000));
        assert_eq!(parse_bytes("2GiB"), Some(2 * 1024 * 1024 * 1024));
        assert_eq!(parse_bytes("5 parsecs"), None);
        assert_eq!(parse_bytes("GB"), None);
        assert_eq!(parse_bytes("1.2.3GB"), None);
        assert_eq!(parse_bytes("99999999999TB"), None, "past what JSON carries");
    }

    #[test]
    fn bytes_read_as_people_write_them() {
        assert_eq!(format_bytes(999), "999 B");
        assert_eq!(format_bytes(1_500_000), "1.5 MB");
        assert_eq!(format_bytes(50_000_000_000), "50 GB");
        assert_eq!(format_bytes(1_000), "1 KB");
        assert_eq!(format_bytes(1_049_000), "1 MB");
    }
}
