//! `[auth]`: how long the credentials the server makes itself live.

use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// `[auth]`. Durations are written as `24h`, `30d`, `90m`
/// (docs/config.md).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// How long the token of the sign-in link printed on first start
    /// signs in: the link sits in a terminal and perhaps a log, so it is
    /// short-lived; the console trades it for a session at once.
    #[serde(deserialize_with = "duration")]
    pub sign_in_link_lifetime: Duration,
    /// How long a console session lasts after sign-in. A session made
    /// from a token that expires sooner ends with that token.
    #[serde(deserialize_with = "duration")]
    pub session_lifetime: Duration,
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self {
            sign_in_link_lifetime: Duration::from_secs(24 * 3600),
            session_lifetime: Duration::from_secs(30 * 24 * 3600),
        }
    }
}

impl AuthConfig {
    /// The rule `[auth]` must follow, if broken.
    pub fn broken_rule(&self) -> Option<String> {
        for (key, value) in
            [("sign_in_link_lifetime", self.sign_in_link_lifetime), ("session_lifetime", self.session_lifetime)]
        {
            if value.is_zero() {
                return Some(format!("auth.{key} must be longer than 0"));
            }
        }
        None
    }
}

/// A duration as people write it (`24h`, `30d`, `1h 30m`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text.trim()).map_err(|e| format!("'{text}' is not a duration such as 24h or 30d ({e})"))
}

/// Reads a duration written as people write it, for serde.
pub(super) fn duration<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(deserializer)?;
    parse_duration(&text).map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(parse_duration("24h"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_duration("30d"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_duration("1h 30m"), Ok(Duration::from_secs(5_400)));
        assert!(parse_duration("soon").unwrap_err().contains("'soon' is not a duration"));
    }
}
