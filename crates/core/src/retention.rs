//! When a finished job's logs, metrics, run directory and containers go:
//! the one rule, which the scheduler's removal, `GET /jobs/{id}` and the
//! store's query for due jobs (`Store::jobs_with_logs_due`) follow.
//!
//! A job's own archive time (`ttl_seconds_after_finished` after it
//! finished) sets it, clamped to the workspace's minimum and maximum log
//! retention, and never before the end of the grace period after an
//! upgrade.

use jobdeck_api::LogRemovalPolicy;

use crate::config::LogsConfig;

/// The workspace's rule, in Unix milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogRetentionRule {
    pub minimum_ms: i64,
    pub maximum_ms: Option<i64>,
    /// Nothing is removed before this (the grace period after an upgrade).
    pub paused_until: Option<i64>,
    /// Whether an admin set the minimum in the console, over the config's
    /// (`PUT /workspace/log-retention`).
    pub minimum_from_console: bool,
}

impl LogRetentionRule {
    /// The rule of `config`, with the grace period counted from
    /// `upgraded_at` (when the store was upgraded to a release that removes
    /// logs; `None` for a store that started on one) and the minimum an
    /// admin set in the console over the config's, if any.
    pub fn new(config: &LogsConfig, upgraded_at: Option<i64>, console_minimum_ms: Option<i64>) -> Self {
        let ms = |d: std::time::Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        Self {
            minimum_ms: ms(config.minimum_retention),
            maximum_ms: config.maximum_retention.map(ms),
            paused_until: upgraded_at.map(|at| at.saturating_add(ms(config.upgrade_grace))),
            minimum_from_console: false,
        }
        .with_console_minimum(config, console_minimum_ms)
    }

    /// This rule with the minimum an admin set in the console
    /// (`Some`), or the config's again (`None`).
    pub fn with_console_minimum(self, config: &LogsConfig, console_minimum_ms: Option<i64>) -> Self {
        let configured = i64::try_from(config.minimum_retention.as_millis()).unwrap_or(i64::MAX);
        Self {
            minimum_ms: console_minimum_ms.unwrap_or(configured),
            minimum_from_console: console_minimum_ms.is_some(),
            ..self
        }
    }

    /// When the logs of a job that finished at `completed_at` and whose
    /// own archive time for them is `expire_at` go, and which rule says so.
    pub fn removal(&self, completed_at: i64, expire_at: i64) -> (i64, LogRemovalPolicy) {
        let (mut at, mut policy) = (expire_at, LogRemovalPolicy::ArchiveTime);
        let earliest = completed_at.saturating_add(self.minimum_ms);
        if earliest > at {
            (at, policy) = (earliest, LogRemovalPolicy::MinimumRetention);
        }
        if let Some(latest) = self.maximum_ms.map(|m| completed_at.saturating_add(m)) {
            if latest < at {
                (at, policy) = (latest, LogRemovalPolicy::MaximumRetention);
            }
        }
        match self.paused_until {
            Some(until) if until > at => (until, LogRemovalPolicy::UpgradeGrace),
            _ => (at, policy),
        }
    }

    /// Whether removals are paused at `now`.
    pub fn paused_at(&self, now: i64) -> bool {
        self.paused_until.is_some_and(|until| until > now)
    }
}

/// The workspace's disk budget for logs: past [`LogBudget::REMOVE_ABOVE`]
/// of it, the logs of the jobs that finished longest ago go until the logs
/// take at most [`LogBudget::REMOVE_DOWN_TO`]; past
/// [`LogBudget::WARN_ABOVE`], admins are told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogBudget {
    pub bytes: i64,
}

impl LogBudget {
    /// Percent of the budget.
    pub const WARN_ABOVE: i64 = 80;
    pub const REMOVE_ABOVE: i64 = 90;
    pub const REMOVE_DOWN_TO: i64 = 80;

    fn share(&self, percent: i64) -> i64 {
        (i128::from(self.bytes) * i128::from(percent) / 100) as i64
    }

    /// Whether logs taking `used` bytes call for removals.
    pub fn over(&self, used: i64) -> bool {
        used > self.share(Self::REMOVE_ABOVE)
    }

    /// Whether removals may stop at `used` bytes.
    pub fn enough(&self, used: i64) -> bool {
        used <= self.share(Self::REMOVE_DOWN_TO)
    }

    /// What admins are told at `used` bytes, if anything.
    pub fn warning(&self, used: i64) -> Option<String> {
        (used > self.share(Self::WARN_ABOVE)).then(|| {
            format!(
                "Logs take {} of their {} disk budget ({} %); past {} % the logs of the jobs that finished longest \
                 ago are removed first, before their retention ends (a larger [logs] disk_budget or a shorter \
                 minimum log retention makes room)",
                jobdeck_api::format_bytes(used),
                jobdeck_api::format_bytes(self.bytes),
                i128::from(used) * 100 / i128::from(self.bytes.max(1)),
                Self::REMOVE_ABOVE
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400_000;

    #[test]
    fn the_archive_time_counts_within_the_minimum_and_maximum_and_after_the_grace() {
        let rule = LogRetentionRule {
            minimum_ms: 7 * DAY,
            maximum_ms: Some(90 * DAY),
            paused_until: None,
            minimum_from_console: false,
        };
        // (archive time after finishing, expected time after finishing, policy)
        let cases = [
            (600_000, 7 * DAY, LogRemovalPolicy::MinimumRetention),
            (7 * DAY, 7 * DAY, LogRemovalPolicy::ArchiveTime),
            (30 * DAY, 30 * DAY, LogRemovalPolicy::ArchiveTime),
            (3650 * DAY, 90 * DAY, LogRemovalPolicy::MaximumRetention),
        ];
        let finished = 1_000 * DAY;
        for (ttl, after, policy) in cases {
            assert_eq!(rule.removal(finished, finished + ttl), (finished + after, policy), "{ttl}");
        }
        let forever = LogRetentionRule { maximum_ms: None, ..rule };
        assert_eq!(
            forever.removal(finished, finished + 3650 * DAY),
            (finished + 3650 * DAY, LogRemovalPolicy::ArchiveTime)
        );
        let paused = LogRetentionRule { paused_until: Some(finished + 20 * DAY), ..rule };
        assert_eq!(paused.removal(finished, finished), (finished + 20 * DAY, LogRemovalPolicy::UpgradeGrace));
        assert_eq!(paused.removal(finished, finished + 30 * DAY).1, LogRemovalPolicy::ArchiveTime);
        assert!(paused.paused_at(finished + 20 * DAY - 1));
        assert!(!paused.paused_at(finished + 20 * DAY));
    }

    #[test]
    fn a_budget_warns_at_80_percent_removes_past_90_and_stops_at_80() {
        let budget = LogBudget { bytes: 1_000 };
        assert_eq!(budget.warning(800), None);
        let warning = budget.warning(801).unwrap();
        assert!(warning.starts_with("Logs take 801 B of their "), "{warning}");
        assert!(warning.contains("disk budget (80 %); past 90 %"), "{warning}");
        assert!(!budget.over(900) && budget.over(901));
        assert!(budget.enough(800) && !budget.enough(801));
        let huge = LogBudget { bytes: i64::MAX };
        assert!(!huge.over(i64::MAX / 10 * 9));
    }

    #[test]
    fn the_configured_durations_become_milliseconds_and_the_grace_counts_from_the_upgrade() {
        let rule = LogRetentionRule::new(&LogsConfig::default(), Some(5), None);
        assert_eq!(rule.minimum_ms, 7 * DAY);
        assert_eq!(rule.maximum_ms, Some(90 * DAY));
        assert_eq!(rule.paused_until, Some(5 + 7 * DAY));
        assert_eq!(LogRetentionRule::new(&LogsConfig::default(), None, None).paused_until, None);
        // An admin's minimum stands over the config's, and gives way to it
        // again when withdrawn; the rest of the rule stays.
        let set = LogRetentionRule::new(&LogsConfig::default(), Some(5), Some(DAY));
        assert_eq!((set.minimum_ms, set.minimum_from_console), (DAY, true));
        assert_eq!((set.maximum_ms, set.paused_until), (rule.maximum_ms, rule.paused_until));
        assert_eq!(set.with_console_minimum(&LogsConfig::default(), None), rule);
    }
}
