//! Console sessions and tokens: `/sessions` and `/tokens`.
//!
//! The console never keeps the token it was given: signing in trades it for
//! a session (`POST /sessions`), which signing out revokes. So the
//! first-start link's short-lived token and a pasted API token both leave a
//! session in the browser that ends on its own, and that ends at once when
//! the token it came from is revoked.
//!
//! `GET /tokens` answers Lepton's list, `[{masked_value, expires_at, …}]`,
//! of the caller's tokens, which is how `lep` learns when its token
//! expires; Jobdeck adds its own fields to each. Anyone may make personal
//! tokens for themselves (`POST /tokens`) and revoke their own; an admin
//! also lists and revokes everyone's.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::routing::{delete, get, post};
use axum::Json;
use jobdeck_api::{CreatedToken, NewSession, Role, TokenCreate, TokenInfo, TokenKind};
use serde::Deserialize;

use crate::http::audit;
use crate::http::auth::{self, CurrentUser, TokenRequest};
use crate::http::error::{ApiJson, ApiQuery, AppError, AppResult};
use crate::{now_millis, AppState, Route};
use axum::response::Response;

pub fn routes() -> Vec<Route> {
    vec![
        ("/sessions", post(create_session).delete(end_every_session)),
        ("/sessions/current", delete(end_session)),
        ("/tokens", get(list_tokens).post(create_token)),
        ("/tokens/{id}", delete(revoke_token)),
    ]
}

/// The lifetime of a session made at `now` from the caller's token: the
/// configured one, cut short by the token's own expiry, except that a
/// sign-in link's token exists to be traded for a session and so does not
/// shorten it.
fn session_lifetime(state: &AppState, user: &CurrentUser, now: i64) -> Duration {
    let configured = state.config.auth.session_lifetime;
    match (user.token_kind, user.token_expires_at) {
        (TokenKind::SignInLink | TokenKind::SingleSignOn, _) | (_, None) => configured,
        (_, Some(at)) => configured.min(Duration::from_millis((at - now).max(0) as u64)),
    }
}

/// `POST /sessions`: a new console session for the caller, made from the
/// token the request carries. The session remembers the token it came from
/// (or, for a session made from a session, that one's origin), so revoking
/// that token ends it.
async fn create_session(State(state): State<AppState>, user: CurrentUser) -> AppResult<Json<NewSession>> {
    let now = now_millis();
    // The identity provider's hand-over token is used up here, once: a
    // second trade (a replayed address) finds it revoked. The session it
    // starts has no origin to end with.
    let origin_id = if user.token_kind == TokenKind::SingleSignOn {
        if state.store.revoke_token(user.token_id, now).await? == 0 {
            return Err(AppError::TokenEnded("this sign-in was already used; sign in again".into()));
        }
        None
    } else {
        Some(user.token_origin_id.unwrap_or(user.token_id))
    };
    let request = TokenRequest {
        kind: TokenKind::Session,
        name: "console".into(),
        lifetime: Some(session_lifetime(&state, &user, now)),
        origin_id,
    };
    let issued = auth::issue_token(&state.store, &user.name, request).await?;
    Ok(Json(NewSession { token: issued.secret, id: issued.id, expires_at: issued.expires_at.unwrap_or(i64::MAX) }))
}

/// `DELETE /sessions/current`: signing out. Only a session ends this way;
/// an API token is revoked by its id, so that signing out of a script's
/// token by mistake cannot happen.
async fn end_session(State(state): State<AppState>, user: CurrentUser) -> AppResult<Json<serde_json::Value>> {
    if user.token_kind != TokenKind::Session {
        return Err(AppError::BadRequest(format!(
            "this request's token is not a console session: revoke it with DELETE /tokens/{}",
            user.token_id
        )));
    }
    state.store.revoke_token(user.token_id, now_millis()).await?;
    Ok(Json(serde_json::json!({ "id": user.token_id })))
}

/// `DELETE /sessions`: signing out everywhere. Every console session of
/// the caller ends, the request's own too when it is one; API tokens stay
/// (each is revoked by its id).
async fn end_every_session(State(state): State<AppState>, user: CurrentUser) -> AppResult<Json<serde_json::Value>> {
    let revoked = state.store.revoke_sessions_of(user.id, now_millis()).await?;
    Ok(Json(serde_json::json!({ "revoked": revoked })))
}

/// `GET /tokens`'s query: whose tokens (an admin's question).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TokensQuery {
    /// One user's tokens.
    user: Option<String>,
    /// Everyone's.
    #[serde(default)]
    all: bool,
}

/// `GET /tokens`: tokens that still sign in, oldest first, never their
/// secrets: the caller's own, or (for an admin) `?user=NAME`'s or, with
/// `?all=true`, everyone's.
async fn list_tokens(
    State(state): State<AppState>,
    user: CurrentUser,
    ApiQuery(query): ApiQuery<TokensQuery>,
) -> AppResult<Json<Vec<TokenInfo>>> {
    let whose = match (query.all, query.user) {
        (false, None) => Some(user.name.clone()),
        (false, Some(name)) if name == user.name => Some(name),
        (all, name) if user.role == Role::Admin => (!all).then_some(name).flatten(),
        _ => return Err(AppError::Forbidden("only an admin lists another user's tokens".into())),
    };
    let now = now_millis();
    let tokens: Vec<TokenInfo> = state
        .store
        .list_tokens(whose)
        .await?
        .into_iter()
        .filter(|token| token.is_live(now))
        .map(|token| TokenInfo { current: token.id == user.token_id, ..token })
        .collect();
    Ok(Json(tokens))
}

/// `POST /tokens`: a personal API token for the caller, with a name and a
/// lifetime of at most [`jobdeck_api::tokens::PERSONAL_TOKEN_MAX_DAYS`]. It
/// signs in with the caller's role, whatever that becomes later.
async fn create_token(
    State(state): State<AppState>,
    user: CurrentUser,
    ApiJson(body): ApiJson<TokenCreate>,
) -> AppResult<Response> {
    let problems = body.problems();
    if !problems.is_empty() {
        return Err(AppError::Validation(problems));
    }
    let request = TokenRequest {
        kind: TokenKind::Api,
        name: body.name.clone(),
        lifetime: Some(Duration::from_secs(u64::from(body.days()) * 86_400)),
        origin_id: None,
    };
    let issued = auth::issue_token(&state.store, &user.name, request).await?;
    let info = state.store.token(issued.id).await?.ok_or_else(|| AppError::internal("a new token was not stored"))?;
    let target = format!("{} ({})", info.id, info.name);
    Ok(audit::noted(Json(CreatedToken { token: issued.secret, info }), target, None))
}

/// `DELETE /tokens/{id}`: revokes a token and every session made from it:
/// one of the caller's own, or anyone's for an admin. Another user's token
/// is answered to anyone else as one that does not exist.
async fn revoke_token(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> AppResult<Json<serde_json::Value>> {
    let not_found = || AppError::NotFound(format!("you have no token {id}"));
    let number: i64 = id.parse().map_err(|_| not_found())?;
    let token = state
        .store
        .token(number)
        .await?
        .filter(|t| t.user == user.name || user.role == Role::Admin)
        .ok_or_else(not_found)?;
    let revoked = state.store.revoke_token(token.id, now_millis()).await?;
    Ok(Json(serde_json::json!({ "id": token.id, "user": token.user, "revoked": revoked })))
}
