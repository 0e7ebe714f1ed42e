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
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self { retention: Duration::from_secs(365 * 86_400) }
    }
}

impl AuditConfig {
    /// The rule `[audit]` must follow, if broken.
    pub fn broken_rule(&self) -> Option<String> {
        (self.retention < Duration::from_secs(86_400)).then(|| "audit.retention must be at least 1d".to_string())
    }
}
