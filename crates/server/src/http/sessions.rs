//! Console sessions and the caller's own tokens: `/sessions` and `/tokens`
//! (Jobdeck extensions).
//!
//! The console never keeps the token it was given: signing in trades it for
//! a session (`POST /sessions`), which signing out revokes. So the
//! first-start link's short-lived token and a pasted API token both leave a
//! session in the browser that ends on its own, and that ends at once when
//! the token it came from is revoked.

use axum::extract::{Path, State};
use axum::routing::{delete, get, post};
use axum::Json;
use jobdeck_api::{NewSession, TokenInfo, TokenKind, TokenList};

use crate::http::auth::{self, CurrentUser, TokenRequest};
use crate::http::error::{AppError, AppResult};
use crate::{now_millis, AppState, Route};

pub fn routes() -> Vec<Route> {
    vec![
        ("/sessions", post(create_session)),
        ("/sessions/current", delete(end_session)),
        ("/tokens", get(list_tokens)),
        ("/tokens/{id}", delete(revoke_token)),
    ]
}

/// The lifetime of a session made at `now` from the caller's token: the
/// configured one, cut short by the token's own expiry, except that a
/// sign-in link's token exists to be traded for a session and so does not
/// shorten it.
fn session_lifetime(state: &AppState, user: &CurrentUser, now: i64) -> std::time::Duration {
    let configured = state.config.auth.session_lifetime;
    match (user.token_kind, user.token_expires_at) {
        (TokenKind::SignInLink, _) | (_, None) => configured,
        (_, Some(at)) => configured.min(std::time::Duration::from_millis((at - now).max(0) as u64)),
    }
}

/// `POST /sessions`: a new console session for the caller, made from the
/// token the request carries. The session remembers the token it came from
/// (or, for a session made from a session, that one's origin), so revoking
/// that token ends it.
async fn create_session(State(state): State<AppState>, user: CurrentUser) -> AppResult<Json<NewSession>> {
    let now = now_millis();
    let request = TokenRequest {
        kind: TokenKind::Session,
        name: "console".into(),
        lifetime: Some(session_lifetime(&state, &user, now)),
        origin_id: Some(user.token_origin_id.unwrap_or(user.token_id)),
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

/// `GET /tokens`: the caller's tokens that still sign in, oldest first,
/// never their secrets.
async fn list_tokens(State(state): State<AppState>, user: CurrentUser) -> AppResult<Json<TokenList>> {
    let now = now_millis();
    let tokens: Vec<TokenInfo> = state
        .store
        .list_tokens(Some(user.name.clone()))
        .await?
        .into_iter()
        .filter(|token| token.is_live(now))
        .map(|token| TokenInfo { current: token.id == user.token_id, ..token })
        .collect();
    Ok(Json(TokenList { tokens }))
}

/// `DELETE /tokens/{id}`: revokes one of the caller's own tokens and every
/// session made from it. Another user's token is answered as one that does
/// not exist.
async fn revoke_token(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> AppResult<Json<serde_json::Value>> {
    let not_found = || AppError::NotFound(format!("you have no token {id}"));
    let number: i64 = id.parse().map_err(|_| not_found())?;
    let token = state.store.token(number).await?.filter(|t| t.user == user.name).ok_or_else(not_found)?;
    let revoked = state.store.revoke_token(token.id, now_millis()).await?;
    Ok(Json(serde_json::json!({ "id": token.id, "revoked": revoked })))
}
