//! `[audit]`: how long the audit log keeps its entries (docs/teams.md,
//! "Audit log").

use std::time::Duration;

use serde::Deserialize;

use super::auth::duration;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuditConfig {
    /// Entries older than this are deleted (checked every hour).
    #[serde(deserialize_with = "duration")]
    pub retention: Duration,
    /// Entries of people not signed in (refused requests without a valid
    /// token, invitation checks, failed sign-ins) written one by one per
    /// minute; past it they are counted in one entry a minute. Without a
    /// bound, a flood of anonymous requests would grow the log until its
    /// retention.
    pub anonymous_per_minute: u32,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self { retention: Duration::from_secs(365 * 86_400), anonymous_per_minute: 30 }
    }
}

impl AuditConfig {
    /// The rule `[audit]` must follow, if broken.
    pub fn broken_rule(&self) -> Option<String> {
        (self.retention < Duration::from_secs(86_400)).then(|| "audit.retention must be at least 1d".to_string())
    }
}
