//! API tokens and console sessions (Jobdeck extensions, but for the list
//! `GET /tokens` answers, which has Lepton's shape).
//!
//! Every credential the server accepts is a row of one table, whatever made
//! it: a token an admin created for a person or a machine (`api`), the
//! first-start sign-in link's token (`sign-in-link`), and the session the
//! console makes from either when someone signs in (`session`). A session
//! remembers the credential it came from, so revoking a token also ends
//! every console session made with it. docs/security.md describes the whole
//! life of a token.

use serde::{Deserialize, Serialize};

use crate::decode::Decode;

/// What made a token, and so how long it lives by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum TokenKind {
    /// Made by `jobdeck token create` for a person, a script or the `lep`
    /// CLI. Tokens from before expiry existed are of this kind and never
    /// expire.
    #[default]
    Api,
    /// The token of the sign-in link `jobdeck serve` prints on its first
    /// start; short-lived, since the link is written to a terminal.
    #[serde(rename = "sign-in-link")]
    SignInLink,
    /// A console sign-in, made from another token by `POST /sessions`.
    Session,
    /// What a sign-in through the identity provider hands the console: it
    /// only starts a session (`POST /sessions`), once, within minutes, so
    /// the address it travels in is worth nothing after.
    #[serde(rename = "single-sign-on")]
    SingleSignOn,
}

impl TokenKind {
    /// The name on the wire and in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenKind::Api => "api",
            TokenKind::SignInLink => "sign-in-link",
            TokenKind::Session => "session",
            TokenKind::SingleSignOn => "single-sign-on",
        }
    }

    pub const ALL: [TokenKind; 4] =
        [TokenKind::Api, TokenKind::SignInLink, TokenKind::Session, TokenKind::SingleSignOn];

    pub fn parse(name: &str) -> Option<TokenKind> {
        TokenKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

/// One token as `GET /tokens` (a list of these, Lepton's shape) and
/// `jobdeck token list` show it: never its secret, which is shown once when
/// it is made and stored only as a hash.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TokenInfo {
    /// The number `jobdeck token revoke` and `DELETE /tokens/{id}` take.
    pub id: i64,
    /// The user the token signs in as.
    pub user: String,
    pub kind: TokenKind,
    /// What its maker called it (may be empty).
    #[serde(default)]
    pub name: String,
    /// Unix milliseconds.
    pub created_at: i64,
    /// Unix milliseconds; `None`: it never expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    /// Unix milliseconds, to within a minute; `None`: never used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used_at: Option<i64>,
    /// Unix milliseconds; `None`: not revoked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<i64>,
    /// The token this one was made from (a session's sign-in credential).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_id: Option<i64>,
    /// Lepton's field: the secret's first and last characters around
    /// `...`, by which a client finds its own token in the list (`lep`
    /// reads `expires_at` this way). Tokens made before Jobdeck kept it
    /// have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub masked_value: Option<String>,
    /// Whether this is the token of the request that asked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub current: bool,
}

impl TokenInfo {
    /// Whether the token still signs in at `now` (Unix milliseconds).
    pub fn is_live(&self, now: i64) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|at| at > now)
    }
}

/// The longest lifetime a personal token made with `POST /tokens` may
/// have; longer-lived credentials for machines come from
/// `jobdeck token create`, run by whoever holds the server.
pub const PERSONAL_TOKEN_MAX_DAYS: u32 = 366;
/// A personal token's lifetime when the request does not say.
pub const PERSONAL_TOKEN_DEFAULT_DAYS: u32 = 90;
/// The longest token name accepted.
pub const TOKEN_NAME_MAX_LEN: usize = 100;

/// `POST /tokens`: a new personal API token for the caller.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct TokenCreate {
    /// What it is for (`laptop`, `ci`), shown in the list.
    #[serde(default)]
    pub name: String,
    /// Days until it expires: 1 to [`PERSONAL_TOKEN_MAX_DAYS`]; absent,
    /// [`PERSONAL_TOKEN_DEFAULT_DAYS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in_days: Option<u32>,
}

impl TokenCreate {
    /// The lifetime asked for, in days.
    pub fn days(&self) -> u32 {
        self.expires_in_days.unwrap_or(PERSONAL_TOKEN_DEFAULT_DAYS)
    }

    /// The rules of a new token's request, one message per broken rule by
    /// field, as the server answers them (422) and the console shows them.
    pub fn problems(&self) -> crate::FieldErrors {
        let mut problems = crate::FieldErrors::new();
        if self.name.chars().count() > TOKEN_NAME_MAX_LEN {
            problems.entry("name".into()).or_default().push(format!("at most {TOKEN_NAME_MAX_LEN} characters"));
        }
        if self.name.chars().any(char::is_control) {
            problems.entry("name".into()).or_default().push("no control characters (line breaks, tabs)".into());
        }
        if !(1..=PERSONAL_TOKEN_MAX_DAYS).contains(&self.days()) {
            problems
                .entry("expires_in_days".into())
                .or_default()
                .push(format!("from 1 to {PERSONAL_TOKEN_MAX_DAYS} days"));
        }
        problems
    }
}

/// `POST /tokens`'s answer: the token, shown this once, and its row.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CreatedToken {
    pub token: String,
    pub info: TokenInfo,
}

/// `GET /auth/methods` (no token needed): how people sign in here besides
/// a token, for the sign-in page.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SignInMethods {
    /// Present when the workspace signs in through an identity provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub single_sign_on: Option<SingleSignOnMethod>,
}

/// The identity provider a sign-in page offers.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SingleSignOnMethod {
    /// What the button says after "Sign in with" (`[auth.oidc] display_name`).
    pub name: String,
    /// Where the button goes, with `?next=` the page to land on after.
    pub start: String,
}

/// Whether `next`, where a sign-in lands, stays on this site: a path, never
/// `//host` or `/\host` (which browsers read as another origin), and no
/// control character (browsers drop tabs and line breaks from addresses,
/// so `/\t/host` would become `//host`). The console and the server's
/// sign-in through the identity provider both keep to it.
pub fn is_same_site_path(next: &str) -> bool {
    next.starts_with('/') && !next.starts_with("//") && !next.starts_with("/\\") && !next.chars().any(char::is_control)
}

/// The path that starts a sign-in through the identity provider.
pub const SINGLE_SIGN_ON_START: &str = "/auth/oidc/start";
/// The path the identity provider sends people back to.
pub const SINGLE_SIGN_ON_CALLBACK: &str = "/auth/oidc/callback";

/// `POST /sessions`: a new console session for the caller. The token is
/// shown this once.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NewSession {
    pub token: String,
    /// The session's own id in `GET /tokens`.
    pub id: i64,
    /// Unix milliseconds.
    pub expires_at: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_have_one_name_on_the_wire_in_both_decoders() {
        for kind in TokenKind::ALL {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
            assert_eq!(serde_json::from_str::<TokenKind>(&json).unwrap(), kind);
            let value: serde_json::Value = serde_json::from_str(&json).unwrap();
            assert_eq!(<TokenKind as Decode>::decode(&value, true).unwrap(), kind);
            assert_eq!(TokenKind::parse(kind.as_str()), Some(kind));
        }
    }

    #[test]
    fn a_sign_in_lands_only_on_this_site() {
        for fine in ["/jobs/abc/logs", "/jobs?state=Failed", "/", "/jobs/a#L12"] {
            assert!(is_same_site_path(fine), "{fine}");
        }
        for hostile in
            ["//evil.example", "/\\evil.example", "https://evil.example", "", "jobs", "/\t/evil.example", "/\n/x"]
        {
            assert!(!is_same_site_path(hostile), "{hostile:?}");
        }
    }

    #[test]
    fn a_new_tokens_name_and_lifetime_are_bounded() {
        assert!(TokenCreate::default().problems().is_empty());
        assert_eq!(TokenCreate::default().days(), PERSONAL_TOKEN_DEFAULT_DAYS);
        let bad = TokenCreate { name: format!("{}\n", "x".repeat(100)), expires_in_days: Some(0) };
        let problems = bad.problems();
        assert_eq!(problems["name"].len(), 2, "{problems:?}");
        assert_eq!(problems["expires_in_days"], vec!["from 1 to 366 days"]);
        let long = TokenCreate { expires_in_days: Some(PERSONAL_TOKEN_MAX_DAYS + 1), ..TokenCreate::default() };
        assert!(long.problems().contains_key("expires_in_days"));
    }

    #[test]
    fn a_token_is_live_until_revoked_or_expired() {
        let token = TokenInfo { expires_at: Some(100), ..TokenInfo::default() };
        assert!(token.is_live(99));
        assert!(!token.is_live(100));
        assert!(TokenInfo::default().is_live(i64::MAX), "no expiry: live until revoked");
        assert!(!TokenInfo { revoked_at: Some(1), ..TokenInfo::default() }.is_live(0));
    }
}
