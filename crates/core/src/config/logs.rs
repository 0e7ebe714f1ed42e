//! `[logs]`: how long a finished job's logs, metrics and run directory are
//! kept (docs/config.md; the rule itself is the `retention` module's).

use std::time::Duration;

use serde::{Deserialize, Deserializer};

use super::auth::{duration, parse_duration};
use super::quotas::byte_count;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogsConfig {
    /// A finished job's logs are kept at least this long, whatever its
    /// archive time: `lep` asks for 600 s on every job it creates, and
    /// people must not lose a job's logs ten minutes after it ends.
    #[serde(deserialize_with = "duration")]
    pub minimum_retention: Duration,
    /// … and at most this long; `None` ("forever"): as long as the job's
    /// archive time says (up to its ten-year limit).
    #[serde(deserialize_with = "duration_or_forever")]
    pub maximum_retention: Option<Duration>,
    /// After an upgrade from a release that never removed logs, nothing is
    /// removed for this long, so that an admin can lengthen the retention
    /// before the first removal.
    #[serde(deserialize_with = "duration")]
    pub upgrade_grace: Duration,
    /// The bytes all jobs' logs may take; near it the logs of the jobs that
    /// finished longest ago go first (the `retention` module's `LogBudget`).
    /// `None`: no budget.
    #[serde(deserialize_with = "byte_count")]
    pub disk_budget: Option<i64>,
    /// The bytes of log one job keeps, shared among the replicas it runs at
    /// once: past its share a replica's log ends with a line saying so and
    /// keeps no more. `None`: no cap.
    #[serde(deserialize_with = "byte_count")]
    pub job_log_cap: Option<i64>,
}

impl Default for LogsConfig {
    fn default() -> Self {
        Self {
            minimum_retention: Duration::from_secs(7 * 86_400),
            maximum_retention: Some(Duration::from_secs(90 * 86_400)),
            upgrade_grace: Duration::from_secs(7 * 86_400),
            disk_budget: None,
            job_log_cap: None,
        }
    }
}

impl LogsConfig {
    /// The rule `[logs]` must follow, if broken.
    pub fn broken_rule(&self) -> Option<String> {
        let ten_years = Duration::from_secs(jobdeck_api::validate::DURATION_MAX_SECONDS as u64);
        if self.minimum_retention > ten_years {
            return Some("logs.minimum_retention must be at most 3650d".into());
        }
        if self.upgrade_grace > ten_years {
            return Some("logs.upgrade_grace must be at most 3650d".into());
        }
        if self.disk_budget.is_some_and(|bytes| bytes < 1 << 20) {
            return Some("logs.disk_budget must be at least 1MiB".into());
        }
        if self.job_log_cap.is_some_and(|bytes| bytes < 1 << 20) {
            return Some("logs.job_log_cap must be at least 1MiB".into());
        }
        match self.maximum_retention {
            Some(maximum) if maximum < self.minimum_retention => {
                Some("logs.maximum_retention must be at least logs.minimum_retention".into())
            }
            Some(maximum) if maximum > ten_years => {
                Some("logs.maximum_retention must be at most 3650d, or \"forever\"".into())
            }
            _ => None,
        }
    }

    /// Each replica attempt's share of the job's log cap when `parallelism`
    /// replicas run at once (at least 64 KiB, so that every replica keeps
    /// its first lines).
    pub fn log_cap_per_replica(&self, parallelism: i64) -> Option<u64> {
        let cap = u64::try_from(self.job_log_cap?).ok()?;
        Some((cap / parallelism.max(1).unsigned_abs()).max(64 << 10))
    }
}

/// A duration, or `"forever"` for none.
fn duration_or_forever<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Duration>, D::Error> {
    let text = String::deserialize(deserializer)?;
    if text == "forever" {
        return Ok(None);
    }
    parse_duration(&text).map(Some).map_err(|problem| serde::de::Error::custom(format!("{problem}, or \"forever\"")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_reads_durations_forever_and_zero() {
        let logs: LogsConfig = toml::from_str(
            "minimum_retention = \"0s\"\nmaximum_retention = \"forever\"\nupgrade_grace = \"1d\"\n\
             disk_budget = \"2GiB\"\njob_log_cap = 1048576",
        )
        .unwrap();
        assert_eq!((logs.disk_budget, logs.job_log_cap), (Some(2 << 30), Some(1 << 20)));
        assert_eq!(logs.minimum_retention, Duration::ZERO);
        assert_eq!(logs.maximum_retention, None);
        assert_eq!(logs.upgrade_grace, Duration::from_secs(86_400));
        assert_eq!(logs.broken_rule(), None);
        let defaults: LogsConfig = toml::from_str("").unwrap();
        assert_eq!(defaults, LogsConfig::default());
        assert_eq!(defaults.maximum_retention, Some(Duration::from_secs(90 * 86_400)));
        assert_eq!(defaults.log_cap_per_replica(4), None);
        let capped = LogsConfig { job_log_cap: Some(8 << 20), ..LogsConfig::default() };
        assert_eq!(capped.log_cap_per_replica(4), Some(2 << 20), "a replica's share");
        assert_eq!(capped.log_cap_per_replica(1_000), Some(64 << 10), "never under 64 KiB");
    }
}
