//! Bearer-token authentication.
//!
//! A token is 32 random bytes shown once to the user; the database keeps only
//! its SHA-256, so a leaked database does not leak working tokens. Tokens are
//! random and long, which is why a fast hash is enough (no password stretching
//! is needed for 256 bits of entropy).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use sha2::{Digest, Sha256};

use crate::error::AppError;
use crate::store::StoreResult;
use crate::{now_millis, AppState, Store};

/// The workspace administrator `jobdeck serve` creates on first start. It may
/// also stop, start and delete public jobs of others (never see private ones).
pub const ADMIN_USER: &str = "admin";

/// The prefix of every token, so a token is recognisable in a secret scanner.
const TOKEN_PREFIX: &str = "jd_";

/// The signed-in user of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentUser {
    pub id: i64,
    pub name: String,
}

/// A new random token.
pub fn generate_token() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system has no random source");
    let mut token = String::with_capacity(TOKEN_PREFIX.len() + 64);
    token.push_str(TOKEN_PREFIX);
    for b in bytes {
        token.push_str(&format!("{b:02x}"));
    }
    token
}

/// The stored form of a token.
pub fn hash_token(token: &str) -> String {
    let digest = Sha256::digest(token.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Creates `user` if needed and a new token for it; returns the token, which
/// is not stored anywhere in clear.
pub async fn issue_token(store: &Store, user: &str) -> StoreResult<String> {
    let now = now_millis();
    let (row, _) = store.ensure_user(user, now).await?;
    let token = generate_token();
    store.insert_token(row.id, hash_token(&token), now).await?;
    Ok(token)
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

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        let token = bearer_token(parts).ok_or(AppError::Unauthorized)?;
        let user = state.store.user_by_token_hash(hash_token(token)).await?.ok_or(AppError::Unauthorized)?;
        Ok(CurrentUser { id: user.id, name: user.name })
    }
}

/// Refuses a request whose body comes without a length (chunked) unless
/// its sender has a valid token, before a byte of the body is read: such a
/// body is read by the server itself to bound it
/// (`error::refuse_oversized_bodies`), and an anonymous client must not be
/// able to make it hold megabytes. A body with a `Content-Length` is read
/// only by a handler, whose extractors ask who sent it first.
pub async fn refuse_anonymous_streams(
    axum::extract::State(state): axum::extract::State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let headers = request.headers();
    let streamed = !headers.contains_key(axum::http::header::CONTENT_LENGTH)
        && headers.contains_key(axum::http::header::TRANSFER_ENCODING);
    if !streamed {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    if let Err(refused) = CurrentUser::from_request_parts(&mut parts, &state).await {
        return refused.into_response();
    }
    next.run(axum::extract::Request::from_parts(parts, body)).await
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
