//! When a finished job's logs go: `status.log_retention` of `GET /jobs/{id}`
//! and `log_retention` of `GET /workspace` (docs/api.md, "Log retention").
//!
//! A finished job's logs, metrics, run directory and containers are removed
//! at its archive time (`ttl_seconds_after_finished`), but never before the
//! workspace's minimum log retention nor after its maximum, and not during
//! the grace period after an upgrade. Its record, events and failure
//! analysis stay.

use serde::{Deserialize, Serialize};

use crate::Decode;

/// Which rule set the time a finished job's logs go (or went).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum LogRemovalPolicy {
    /// The job's own archive time (`ttl_seconds_after_finished`).
    #[serde(rename = "archive_time")]
    #[default]
    ArchiveTime,
    /// The workspace's minimum log retention, later than the archive time
    /// (`lep` asks for 600 s on every job it creates).
    #[serde(rename = "minimum_retention")]
    MinimumRetention,
    /// The workspace's maximum log retention, earlier than the archive time.
    #[serde(rename = "maximum_retention")]
    MaximumRetention,
    /// The grace period after an upgrade to a release that removes logs:
    /// nothing is removed before it ends.
    #[serde(rename = "upgrade_grace")]
    UpgradeGrace,
    /// The workspace's disk budget for logs: near it, the logs of the jobs
    /// that finished longest ago go first, before their retention ends.
    #[serde(rename = "disk_budget")]
    DiskBudget,
}

impl LogRemovalPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ArchiveTime => "archive_time",
            Self::MinimumRetention => "minimum_retention",
            Self::MaximumRetention => "maximum_retention",
            Self::UpgradeGrace => "upgrade_grace",
            Self::DiskBudget => "disk_budget",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [Self::ArchiveTime, Self::MinimumRetention, Self::MaximumRetention, Self::UpgradeGrace, Self::DiskBudget]
            .into_iter()
            .find(|p| p.as_str() == text)
    }

    /// The rule in words, for messages and events: "the workspace's minimum
    /// log retention".
    pub fn in_words(self) -> &'static str {
        match self {
            Self::ArchiveTime => "its archive time",
            Self::MinimumRetention => "the workspace's minimum log retention",
            Self::MaximumRetention => "the workspace's maximum log retention",
            Self::UpgradeGrace => "the grace period after the server's upgrade",
            Self::DiskBudget => "the workspace's disk budget for logs",
        }
    }
}

/// `status.log_retention`: when a finished job's logs, metrics and run
/// directory go, or went, and which rule says so. Absent while the job has
/// not finished.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct LogRetention {
    pub policy: LogRemovalPolicy,
    /// Unix seconds: when they will be removed, while they are kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove_at: Option<i64>,
    /// Unix seconds: when they were removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed_at: Option<i64>,
}

/// `log_retention` of `GET /workspace`: the workspace's rules.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct WorkspaceLogRetention {
    /// A finished job's logs are kept at least this long, whatever its
    /// archive time.
    pub minimum_seconds: i64,
    /// … and at most this long; absent: as long as its archive time says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum_seconds: Option<i64>,
    /// Unix seconds: nothing is removed before this, the end of the grace
    /// period after an upgrade; absent once it has passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_until: Option<i64>,
    /// The bytes finished and running jobs' logs take now (as last
    /// measured).
    #[serde(default)]
    pub used_bytes: i64,
    /// The space the logs may take (`[logs] disk_budget`); absent: no
    /// budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_budget_bytes: Option<i64>,
    /// A sentence for admins once the logs take most of the budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// Where the minimum is set: the config (`[logs] minimum_retention`),
    /// or an admin in the console over it (`PUT /workspace/log-retention`).
    #[serde(default)]
    pub minimum_source: crate::QuotaSource,
}

/// `PUT /workspace/log-retention`'s body: the minimum log retention an
/// admin sets in the console, in force over the config's `[logs]
/// minimum_retention` until `DELETE /workspace/log-retention`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct LogRetentionSetting {
    pub minimum_seconds: i64,
}

impl LogRetentionSetting {
    /// What is wrong with it in a workspace whose maximum log retention is
    /// `maximum_seconds` (`None`: none): the minimum must be from 0 to the
    /// maximum, and never past the longest archive time a job may have.
    pub fn problems(&self, maximum_seconds: Option<i64>) -> crate::FieldErrors {
        let mut problems = crate::FieldErrors::new();
        let most = maximum_seconds.unwrap_or(crate::validate::DURATION_MAX_SECONDS);
        if !(0..=most).contains(&self.minimum_seconds) {
            let bound = match maximum_seconds {
                Some(_) => "the workspace's maximum log retention",
                None => "ten years",
            };
            problems.entry("minimum_seconds".into()).or_default().push(format!("from 0 to {most} seconds ({bound})"));
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_reads_back_its_own_name_and_no_other() {
        for policy in [
            LogRemovalPolicy::ArchiveTime,
            LogRemovalPolicy::MinimumRetention,
            LogRemovalPolicy::MaximumRetention,
            LogRemovalPolicy::UpgradeGrace,
            LogRemovalPolicy::DiskBudget,
        ] {
            assert_eq!(LogRemovalPolicy::parse(policy.as_str()), Some(policy));
            let json = serde_json::to_string(&policy).unwrap();
            assert_eq!(json, format!("\"{}\"", policy.as_str()));
        }
        assert_eq!(LogRemovalPolicy::parse("MinimumRetention"), None);
    }

    #[test]
    fn a_minimum_is_held_to_the_maximum_and_never_below_zero() {
        let set = |minimum_seconds| LogRetentionSetting { minimum_seconds };
        assert!(set(0).problems(Some(86_400)).is_empty());
        assert!(set(86_400).problems(Some(86_400)).is_empty());
        assert!(set(crate::validate::DURATION_MAX_SECONDS).problems(None).is_empty());
        for (setting, maximum) in [(set(-1), Some(86_400)), (set(86_401), Some(86_400)), (set(i64::MAX), None)] {
            let problems = setting.problems(maximum);
            assert_eq!(problems.keys().collect::<Vec<_>>(), ["minimum_seconds"], "{setting:?}");
        }
    }
}
