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

use jobdeck_api::{parse_bytes, QuotaLimits, Role};
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

pub(super) fn byte_count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
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
