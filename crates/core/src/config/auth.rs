//! `[auth]`: how long the credentials the server makes itself live, the
//! server's public address, and `[auth.oidc]`, sign-in through an OpenID
//! Connect provider (docs/teams.md).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use jobdeck_api::Role;
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
    /// The address people open the console at (`https://jobdeck.example.com`),
    /// with no path: the identity provider sends them back to it, so it is
    /// required with `[auth.oidc]`.
    pub public_url: Option<String>,
    /// Sign-in through an OpenID Connect provider.
    pub oidc: Option<OidcConfig>,
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self {
            sign_in_link_lifetime: Duration::from_secs(24 * 3600),
            session_lifetime: Duration::from_secs(30 * 24 * 3600),
            public_url: None,
            oidc: None,
        }
    }
}

/// `[auth.oidc]`: the provider (Keycloak, Dex, Okta, Google, Entra ID,
/// GitLab, …) and who of its users may sign in, with what role.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcConfig {
    /// The issuer, as the provider's discovery document names it; its
    /// `/.well-known/openid-configuration` says the rest.
    pub issuer: String,
    pub client_id: String,
    /// A file holding the client secret (keep it 0600); or
    pub client_secret_file: Option<PathBuf>,
    /// an environment variable holding it. Neither: a public client, which
    /// PKCE alone protects.
    pub client_secret_env: Option<String>,
    /// What the sign-in button says after "Sign in with".
    #[serde(default = "default_display_name")]
    pub display_name: String,
    /// The claim whose value becomes the user's name here (made unique with
    /// a suffix if another user has it); users are known by the provider's
    /// issuer and subject, never by this name.
    #[serde(default = "default_username_claim")]
    pub username_claim: String,
    /// When not empty, only users whose verified e-mail address is in one
    /// of these domains may sign in.
    #[serde(default)]
    pub allowed_domains: Vec<String>,
    /// The claim listing a user's groups (in the ID token or from the
    /// userinfo endpoint).
    #[serde(default = "default_groups_claim")]
    pub groups_claim: String,
    /// When not empty, only members of one of these groups may sign in.
    #[serde(default)]
    pub allowed_groups: Vec<String>,
    /// Group → role. When not empty, a user's role follows their groups at
    /// every sign-in (the strongest one they are given); otherwise admins
    /// set roles here.
    #[serde(default)]
    pub roles: BTreeMap<String, Role>,
    /// The role of a new user whom no group gives one.
    #[serde(default)]
    pub default_role: Role,
    /// The scopes asked for besides `openid`.
    #[serde(default = "default_scopes")]
    pub scopes: Vec<String>,
    /// Whether someone the provider vouches for needs an invitation to sign
    /// in the first time (they must also pass the allowed domains and
    /// groups). Otherwise anyone those admit comes in with the default role.
    #[serde(default)]
    pub invitation_required: bool,
}

fn default_display_name() -> String {
    "single sign-on".into()
}

fn default_username_claim() -> String {
    "preferred_username".into()
}

fn default_groups_claim() -> String {
    "groups".into()
}

fn default_scopes() -> Vec<String> {
    vec!["profile".into(), "email".into()]
}

/// Whether `url` may carry credentials: HTTPS, or plain HTTP to this machine
/// (a provider or a server tried on one machine).
fn secure_or_loopback(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else { return url.starts_with("https://") };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.split(':').next().unwrap_or(""),
    };
    name == "localhost" || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
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
        if let Some(url) = &self.public_url {
            let path = url.split_once("://").map_or("", |(_, rest)| rest.split_once('/').map_or("", |(_, p)| p));
            if !secure_or_loopback(url) || !path.is_empty() || url.contains(['?', '#']) {
                return Some(format!(
                    "auth.public_url must be an https:// address with no path (http:// only to this machine), not '{url}'"
                ));
            }
        }
        let oidc = self.oidc.as_ref()?;
        if self.public_url.is_none() {
            return Some("auth.public_url is needed with [auth.oidc]: the provider sends people back to it".into());
        }
        if !secure_or_loopback(&oidc.issuer) {
            return Some(format!(
                "auth.oidc.issuer must be an https:// address (http:// only to this machine), not '{}'",
                oidc.issuer
            ));
        }
        if oidc.client_id.trim().is_empty() {
            return Some("auth.oidc.client_id must not be empty".into());
        }
        if oidc.client_secret_file.is_some() && oidc.client_secret_env.is_some() {
            return Some("auth.oidc: give client_secret_file or client_secret_env, not both".into());
        }
        if oidc.username_claim.trim().is_empty() {
            return Some("auth.oidc.username_claim must name a claim".into());
        }
        None
    }
}

/// A duration as people write it (`24h`, `30d`, `1h 30m`, `PT4H`): the
/// contract's one reader of durations (`jobdeck_api::duration`), which the
/// form and the imports use too. Empty text and `off` are no duration here.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    match jobdeck_api::parse_duration(text) {
        Ok(Some(seconds)) => Ok(Duration::from_secs(seconds.unsigned_abs())),
        Ok(None) => Err(format!("'{text}' is not a duration: give one such as 24h or 30d")),
        Err(problem) => Err(format!("'{text}' is not a duration: {problem}")),
    }
}

/// Reads a duration written as people write it, for serde.
pub(super) fn duration<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(deserializer)?;
    parse_duration(&text).map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_oidc(public_url: Option<&str>, issuer: &str) -> AuthConfig {
        let oidc: OidcConfig = toml::from_str(&format!("issuer = '{issuer}'\nclient_id = 'jobdeck'")).unwrap();
        AuthConfig { public_url: public_url.map(String::from), oidc: Some(oidc), ..AuthConfig::default() }
    }

    #[test]
    fn single_sign_on_needs_a_public_url_and_secure_addresses() {
        assert_eq!(with_oidc(Some("https://jobs.example.com"), "https://id.example.com/realms/a").broken_rule(), None);
        assert_eq!(with_oidc(Some("http://127.0.0.1:8080"), "http://[::1]:9000").broken_rule(), None);
        assert_eq!(with_oidc(Some("http://localhost:8080"), "http://localhost:9000").broken_rule(), None);
        let cases = [
            (None, "https://id.example.com", "auth.public_url is needed"),
            (Some("http://jobs.example.com"), "https://id.example.com", "auth.public_url must be an https://"),
            (Some("https://jobs.example.com/console"), "https://id.example.com", "no path"),
            (Some("https://jobs.example.com"), "http://id.example.com", "auth.oidc.issuer must be an https://"),
            // A loopback name in the user part is not a loopback host.
            (Some("https://jobs.example.com"), "http://127.0.0.1@id.example.com", "auth.oidc.issuer"),
        ];
        for (public_url, issuer, expected) in cases {
            let rule = with_oidc(public_url, issuer).broken_rule().unwrap_or_default();
            assert!(rule.contains(expected), "{public_url:?} {issuer}: {rule}");
        }
        let defaults: OidcConfig = toml::from_str("issuer = 'https://x'\nclient_id = 'c'").unwrap();
        assert_eq!((defaults.username_claim.as_str(), defaults.default_role), ("preferred_username", Role::Member));
        let roles: OidcConfig =
            toml::from_str("issuer = 'https://x'\nclient_id = 'c'\n[roles]\nml-admins = 'admin'").unwrap();
        assert_eq!(roles.roles["ml-admins"], Role::Admin);
        assert!(toml::from_str::<OidcConfig>("issuer = 'https://x'\nclient_id = 'c'\nsecret = 'x'").is_err());
    }

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(parse_duration("24h"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_duration("30d"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_duration("1h 30m"), Ok(Duration::from_secs(5_400)));
        assert_eq!(parse_duration("PT4H30M"), Ok(Duration::from_secs(16_200)));
        assert!(parse_duration("soon").unwrap_err().contains("'soon' is not a duration"));
        assert!(parse_duration("").unwrap_err().contains("is not a duration"));
    }
}
