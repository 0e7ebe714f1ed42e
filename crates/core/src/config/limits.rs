//! `[limits]`: what one connection, one request and one user may hold.

use std::time::Duration;

use serde::Deserialize;

use super::auth::duration;

/// `[limits]` (docs/config.md, docs/security.md "Requests").
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// How long an ordinary request may take to be answered, its body's
    /// arrival included. A log stream or download, once its answer has
    /// started, is not bound by it; a waiting log range waits at most 30 s.
    #[serde(deserialize_with = "duration")]
    pub request_timeout: Duration,
    /// How long a connection may take to send a request's headers, and may
    /// sit idle between requests, before it is closed.
    #[serde(deserialize_with = "duration")]
    pub idle_timeout: Duration,
    /// Open connections at most, all clients together; more wait in the
    /// kernel's queue until one closes.
    pub connections: usize,
    /// Requests one user may have in flight at once (log streams count
    /// until they end); more are answered 429.
    pub requests_per_user: usize,
    /// Log follows one user may hold open at once (streams that follow a
    /// running attempt, and ranges that wait for new lines); more are
    /// answered 429.
    pub log_followers_per_user: usize,
    /// Event streams (`GET /stream`, a job's events followed) one user may
    /// hold open at once; more are answered 429. A console tab holds one.
    pub streams_per_user: usize,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(60),
            connections: 1024,
            requests_per_user: 64,
            log_followers_per_user: 16,
            streams_per_user: 16,
        }
    }
}

impl LimitsConfig {
    /// The rule `[limits]` must follow, if broken.
    pub fn broken_rule(&self) -> Option<String> {
        if self.request_timeout < Duration::from_secs(35) {
            // A waiting log range may wait 30 s (log_api::MAX_WAIT_SECONDS).
            return Some("limits.request_timeout must be at least 35s (a log range may wait 30s)".into());
        }
        if self.idle_timeout.is_zero() {
            return Some("limits.idle_timeout must be longer than 0".into());
        }
        for (key, value) in [
            ("connections", self.connections),
            ("requests_per_user", self.requests_per_user),
            ("log_followers_per_user", self.log_followers_per_user),
            ("streams_per_user", self.streams_per_user),
        ] {
            if value == 0 {
                return Some(format!("limits.{key} must be at least 1"));
            }
        }
        None
    }
}
