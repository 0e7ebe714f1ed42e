//! Bearer-token authentication.
//!
//! A token is 32 random bytes shown once to the user; the database keeps only
//! its SHA-256, so a leaked database does not leak working tokens. Tokens are
//! random and long, which is why a fast hash is enough (no password stretching
//! is needed for 256 bits of entropy). Every token has a kind, may expire and
//! may be revoked (`jobdeck_api::tokens` says which kinds there are);
//! `sessions.rs` makes the console's sessions and serves `/tokens`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use jobdeck_api::{Role, TokenKind};
use sha2::{Digest, Sha256};

use crate::http::error::AppError;
use crate::{now_millis, AppState, Store};
use jobdeck_store::{NewToken, StoreResult, TokenOwner};

/// The name of the first administrator, whom `jobdeck serve` creates on its
/// first start. Being an admin is the user's role (a column), never its
/// name: a user later given this name elsewhere is not an admin by it.
pub const FIRST_ADMIN: &str = "admin";

/// The prefix of every token, so a token is recognisable in a secret scanner.
const TOKEN_PREFIX: &str = "jd_";

/// How long a token from `jobdeck token create` lives unless `--expires`
/// says otherwise.
pub const DEFAULT_API_TOKEN_LIFETIME: Duration = Duration::from_secs(90 * 24 * 3600);

/// How often a token's `last_used_at` is written at most: once a minute, so
/// a busy client does not make every request a database write.
const LAST_USED_RESOLUTION_MS: i64 = 60_000;

/// The signed-in user of a request, and the token it signed in with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentUser {
    pub id: i64,
    pub name: String,
    pub role: Role,
    pub token_id: i64,
    pub token_kind: TokenKind,
    /// When the token expires (Unix ms), if it does.
    pub token_expires_at: Option<i64>,
    /// The token the signing-in token was made from, if any.
    pub token_origin_id: Option<i64>,
}

/// A new random token.
pub fn generate_token() -> String {
    generate_secret(TOKEN_PREFIX)
}

/// `prefix` and 256 random bits in hex.
pub fn generate_secret(prefix: &str) -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system has no random source");
    let mut secret = String::with_capacity(prefix.len() + 64);
    secret.push_str(prefix);
    for b in bytes {
        secret.push_str(&format!("{b:02x}"));
    }
    secret
}

/// The characters of a token Lepton's `GET /tokens` shows around `...`:
/// the prefix and the first four random characters, and the last four.
/// The 56 characters between keep 224 bits a listing never reveals.
pub fn mask_token(token: &str) -> String {
    let head = token.get(..TOKEN_PREFIX.len() + 4).unwrap_or("");
    let tail = token.get(token.len().saturating_sub(4)..).unwrap_or("");
    format!("{head}...{tail}")
}

/// The stored form of a token.
pub fn hash_token(token: &str) -> String {
    let digest = Sha256::digest(token.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a new token is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRequest {
    pub kind: TokenKind,
    pub name: String,
    /// `None`: it never expires.
    pub lifetime: Option<Duration>,
    pub origin_id: Option<i64>,
}

impl TokenRequest {
    /// An API token with the default lifetime.
    pub fn api() -> Self {
        Self { kind: TokenKind::Api, name: String::new(), lifetime: Some(DEFAULT_API_TOKEN_LIFETIME), origin_id: None }
    }
}

/// A token just made: the secret (shown once, stored nowhere in clear) and
/// its row.
#[derive(Debug, Clone)]
pub struct IssuedToken {
    pub secret: String,
    pub id: i64,
    pub expires_at: Option<i64>,
}

/// Creates `user` if needed (a member) and a new token for it.
pub async fn issue_token(store: &Store, user: &str, request: TokenRequest) -> StoreResult<IssuedToken> {
    let now = now_millis();
    let (row, _) = store.ensure_user(user, Role::Member, now).await?;
    let secret = generate_token();
    let expires_at = request.lifetime.map(|life| now.saturating_add(life.as_millis().min(i64::MAX as u128) as i64));
    let id = store
        .insert_token(NewToken {
            user_id: row.id,
            hash: hash_token(&secret),
            kind: request.kind,
            name: request.name,
            created_at: now,
            expires_at,
            origin_id: request.origin_id,
            masked: Some(mask_token(&secret)),
        })
        .await?;
    Ok(IssuedToken { secret, id, expires_at })
}

/// Why a stored token does not sign in at `now`, if it does not.
pub fn token_ended(owner: &TokenOwner, now: i64) -> Option<AppError> {
    if owner.revoked_at.is_some() {
        return Some(AppError::TokenEnded("this token was revoked".into()));
    }
    match owner.expires_at {
        Some(at) if at <= now => Some(AppError::TokenEnded(format!("this token expired at {}", format_time(at)))),
        _ => None,
    }
}

/// A Unix-millisecond time as RFC 3339 (UTC, to the second).
pub fn format_time(unix_ms: i64) -> String {
    let time = std::time::UNIX_EPOCH + Duration::from_millis(unix_ms.max(0) as u64);
    humantime::format_rfc3339_seconds(time).to_string()
}

/// When each token's `last_used_at` was last written, so it is written at
/// most once a minute per token.
#[derive(Clone, Default)]
pub struct LastUsed(Arc<Mutex<HashMap<i64, i64>>>);

impl LastUsed {
    /// Whether a use at `now` should be written.
    fn due(&self, token_id: i64, now: i64) -> bool {
        let mut written = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match written.get(&token_id) {
            Some(&at) if now - at < LAST_USED_RESOLUTION_MS => false,
            _ => {
                written.insert(token_id, now);
                true
            }
        }
    }
}

fn bearer_token(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get(axum::http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = token.trim();
    (!token.is_empty()).then_some(token)
}

impl FromRequestParts<AppState> for CurrentUser {
    type Rejection = AppError;

    /// Every request reads its token's row, so a revoked or expired token
    /// answers 401 on the very next request.
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        // `request_limits::bound_request` has read the token already.
        if let Some(user) = parts.extensions.get::<CurrentUser>() {
            return Ok(user.clone());
        }
        let token = bearer_token(parts).ok_or(AppError::Unauthorized)?;
        let owner = state.store.token_by_hash(hash_token(token)).await?.ok_or(AppError::Unauthorized)?;
        let now = now_millis();
        if let Some(ended) = token_ended(&owner, now) {
            return Err(ended);
        }
        if state.tokens_used.due(owner.token_id, now) {
            state.store.touch_token(owner.token_id, now).await?;
        }
        Ok(CurrentUser {
            id: owner.user.id,
            name: owner.user.name,
            role: owner.user.role,
            token_id: owner.token_id,
            token_kind: owner.kind,
            token_expires_at: owner.expires_at,
            token_origin_id: owner.origin_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_and_prefixed() {
        let a = generate_token();
        let b = generate_token();
        assert_ne!(a, b);
        assert!(a.starts_with("jd_"));
        assert_eq!(a.len(), 3 + 64);
        let masked = mask_token(&a);
        let (left, right) = masked.split_once("...").unwrap();
        assert!(a.starts_with(left) && a.ends_with(right) && left.len() == 7 && right.len() == 4, "{masked}");
    }

    fn owner(expires_at: Option<i64>, revoked_at: Option<i64>) -> TokenOwner {
        TokenOwner {
            token_id: 1,
            kind: TokenKind::Api,
            expires_at,
            revoked_at,
            origin_id: None,
            user: jobdeck_store::UserRow { id: 1, name: "alice".into(), role: Role::Member },
        }
    }

    #[test]
    fn a_token_signs_in_until_it_expires_or_is_revoked() {
        assert!(token_ended(&owner(None, None), i64::MAX).is_none(), "no expiry: signs in until revoked");
        assert!(token_ended(&owner(Some(1_000), None), 999).is_none());
        let expired = token_ended(&owner(Some(1_000), None), 1_000).expect("expired at its expiry");
        assert_eq!(expired.to_string(), "this token expired at 1970-01-01T00:00:01Z");
        let revoked = token_ended(&owner(Some(i64::MAX), Some(5)), 6).expect("revoked");
        assert_eq!(revoked.to_string(), "this token was revoked");
    }

    #[test]
    fn last_use_is_written_at_most_once_a_minute_per_token() {
        let used = LastUsed::default();
        assert!(used.due(1, 0));
        assert!(!used.due(1, 59_999));
        assert!(used.due(2, 59_999), "each token has its own clock");
        assert!(used.due(1, 60_000));
    }

    #[test]
    fn hashes_are_sha256_hex() {
        assert_eq!(hash_token("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn bearer_scheme_is_case_insensitive_and_required() {
        let parts = |value: &str| {
            let req = axum::http::Request::builder().header("authorization", value).body(()).unwrap();
            req.into_parts().0
        };
        assert_eq!(bearer_token(&parts("Bearer abc")), Some("abc"));
        assert_eq!(bearer_token(&parts("bearer abc")), Some("abc"));
        assert_eq!(bearer_token(&parts("Basic abc")), None);
        assert_eq!(bearer_token(&parts("Bearer ")), None);
    }
}
