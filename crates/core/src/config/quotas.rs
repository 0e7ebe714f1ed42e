//! `[quotas]`: what each role and named user may hold (docs/config.md,
//! docs/teams.md "Quotas").
//!
//! ```toml
//! [quotas.roles.member]
//! running_gpus = 8
//! log_bytes = "50GB"
//!
//! [quotas.users.alice]
//! running_gpus = 16
//! ```

use std::collections::BTreeMap;

use jobdeck_api::{QuotaLimits, Role};
use serde::{Deserialize, Deserializer};

/// `[quotas]` as the server uses it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuotasConfig {
    pub roles: BTreeMap<Role, QuotaLimits>,
    pub users: BTreeMap<String, QuotaLimits>,
}

/// `[quotas]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct QuotasSection {
    roles: BTreeMap<Role, LimitsSection>,
    users: BTreeMap<String, LimitsSection>,
}

/// One `[quotas.roles.NAME]` or `[quotas.users.NAME]` table.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct LimitsSection {
    running_gpus: Option<i64>,
    running_replicas: Option<i64>,
    queued_jobs: Option<i64>,
    #[serde(deserialize_with = "byte_count")]
    log_bytes: Option<i64>,
}

impl From<LimitsSection> for QuotaLimits {
    fn from(s: LimitsSection) -> Self {
        QuotaLimits {
            running_gpus: s.running_gpus,
            running_replicas: s.running_replicas,
            queued_jobs: s.queued_jobs,
            log_bytes: s.log_bytes,
        }
    }
}

impl From<QuotasSection> for QuotasConfig {
    fn from(s: QuotasSection) -> Self {
        QuotasConfig {
            roles: s.roles.into_iter().map(|(k, v)| (k, v.into())).collect(),
            users: s.users.into_iter().map(|(k, v)| (k, v.into())).collect(),
        }
    }
}

impl QuotasConfig {
    /// The rule `[quotas]` must follow, if broken, naming its key.
    pub fn broken_rule(&self) -> Option<String> {
        let roles = self.roles.iter().map(|(role, limits)| (format!("roles.{}", role.as_str()), limits));
        let users = self.users.iter().map(|(name, limits)| (format!("users.{name}"), limits));
        for (key, limits) in roles.chain(users) {
            if let Some((field, messages)) = limits.problems().into_iter().next() {
                return Some(format!("quotas.{key}.{field} must be {}", messages.join("; ")));
            }
        }
        None
    }
}

/// Reads a byte count written as a number of bytes or with a unit: `B`,
/// `KB`, `MB`, `GB`, `TB` (powers of 1000) or `KiB`, `MiB`, `GiB`, `TiB`
/// (powers of 1024).
pub fn parse_bytes(text: &str) -> Option<i64> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale: f64 = match unit.trim() {
        "" | "B" => 1.0,
        "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "TiB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let bytes = (number * scale).round();
    (bytes.is_finite() && bytes <= jobdeck_api::quotas::QUOTA_MAX as f64).then_some(bytes as i64)
}

fn byte_count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Written {
        Number(i64),
        Text(String),
    }
    match Written::deserialize(d)? {
        Written::Number(n) => Ok(Some(n)),
        Written::Text(text) => parse_bytes(&text).map(Some).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "'{text}' is not a byte count: write a number of bytes or one with a unit, like \"50GB\" or \"2TiB\""
            ))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_read_with_and_without_units() {
        assert_eq!(parse_bytes("1024"), Some(1024));
        assert_eq!(parse_bytes("50GB"), Some(50_000_000_000));
        assert_eq!(parse_bytes("1.5 MB"), Some(1_500_000));
        assert_eq!(parse_bytes("2GiB"), Some(2 * 1024 * 1024 * 1024));
        assert_eq!(parse_bytes("5 parsecs"), None);
        assert_eq!(parse_bytes("GB"), None);
    }
}
