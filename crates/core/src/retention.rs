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
}

impl LogRetentionRule {
    /// The rule of `config`, with the grace period counted from
    /// `upgraded_at` (when the store was upgraded to a release that removes
    /// logs; `None` for a store that started on one).
    pub fn new(config: &LogsConfig, upgraded_at: Option<i64>) -> Self {
        let ms = |d: std::time::Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        Self {
            minimum_ms: ms(config.minimum_retention),
            maximum_ms: config.maximum_retention.map(ms),
            paused_until: upgraded_at.map(|at| at.saturating_add(ms(config.upgrade_grace))),
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

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400_000;

    #[test]
    fn the_archive_time_counts_within_the_minimum_and_maximum_and_after_the_grace() {
        let rule = LogRetentionRule { minimum_ms: 7 * DAY, maximum_ms: Some(90 * DAY), paused_until: None };
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
    fn the_configured_durations_become_milliseconds_and_the_grace_counts_from_the_upgrade() {
        let rule = LogRetentionRule::new(&LogsConfig::default(), Some(5));
        assert_eq!(rule.minimum_ms, 7 * DAY);
        assert_eq!(rule.maximum_ms, Some(90 * DAY));
        assert_eq!(rule.paused_until, Some(5 + 7 * DAY));
        assert_eq!(LogRetentionRule::new(&LogsConfig::default(), None).paused_until, None);
    }
}
