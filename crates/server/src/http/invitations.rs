//! `/invitations`: how an admin lets a teammate in from the console, with
//! no shell on the server (Jobdeck extensions).
//!
//! An admin makes one (`POST /invitations`, a role, a note, days open) and
//! sends its link; the code is shown this once and stored as its hash. The
//! link opens the console's invitation page, which asks what it is
//! (`POST /invitations/check`, no token needed) and then either sends the
//! teammate through the identity provider (`/auth/oidc/start?invitation=`,
//! where the invitation binds to the identity that comes back:
//! `single_sign_on.rs`) or, where there is none, makes a local account
//! with a name they pick and a personal token (`POST /invitations/redeem`).
//! The code travels in request bodies, never in an address the server
//! logs, and works once.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::routing::{delete, get, post};
use axum::Json;
use jobdeck_api::invitations::{user_name_problems, INVITATION_PAGE};
use jobdeck_api::tokens::PERSONAL_TOKEN_DEFAULT_DAYS;
use jobdeck_api::{
    CreatedInvitation, CreatedToken, InvitationCreate, InvitationList, InvitationPreview, InvitationRedeem,
    RedeemedInvitation, TokenKind,
};
use jobdeck_store::{Claimant, NewInvitation, Redemption};

use crate::http::audit::{self, AuditNote};
use crate::http::auth::{self, CurrentUser, TokenRequest};
use crate::http::error::{ApiJson, AppError, AppResult};
use crate::{now_millis, AppState, Route};
use axum::response::{IntoResponse, Response};

pub fn routes() -> Vec<Route> {
    vec![
        ("/invitations", get(list).post(create)),
        ("/invitations/{id}", delete(withdraw)),
        ("/invitations/check", post(check)),
        ("/invitations/redeem", post(redeem)),
    ]
}

/// What an invitation code starts with, so that one pasted where a token
/// belongs is told apart.
const CODE_PREFIX: &str = "jdi_";

/// The answer for a code that lets nobody in, whatever the reason: unknown,
/// used, expired or withdrawn look the same, so codes cannot be probed.
fn unusable() -> AppError {
    AppError::NotFound(
        "this invitation was already used, has expired or was withdrawn; ask an admin for a new one".into(),
    )
}

/// The link an invitation is sent as: the console's invitation page with
/// the code in the fragment, on the public address when there is one.
fn link(state: &AppState, code: &str) -> String {
    let base = state.config.auth.public_url.as_deref().unwrap_or("").trim_end_matches('/');
    format!("{base}{INVITATION_PAGE}#code={code}")
}

/// `POST /invitations`: a new invitation; the code and link are in this
/// answer only.
async fn create(
    State(state): State<AppState>,
    admin: CurrentUser,
    ApiJson(body): ApiJson<InvitationCreate>,
) -> AppResult<Response> {
    let problems = body.problems();
    if !problems.is_empty() {
        return Err(AppError::Validation(problems));
    }
    let code = auth::generate_secret(CODE_PREFIX);
    let now = now_millis();
    let new = NewInvitation {
        code_hash: auth::hash_token(&code),
        role: body.role,
        note: body.note.clone(),
        created_by: admin.id,
        created_at: now,
        expires_at: now + i64::from(body.days()) * 86_400_000,
    };
    let id = state.store.create_invitation(new).await?;
    let info =
        state.store.invitation(id, now).await?.ok_or_else(|| AppError::internal("a new invitation was not stored"))?;
    tracing::info!(id, by = admin.name, role = body.role.as_str(), "invitation made");
    let detail = format!("as a {}, open {} days", body.role.as_str(), body.days());
    Ok(audit::noted(Json(CreatedInvitation { link: link(&state, &code), code, info }), id.to_string(), Some(detail)))
}

/// `GET /invitations`: every invitation, newest first, never a code.
async fn list(State(state): State<AppState>, _admin: CurrentUser) -> AppResult<Json<InvitationList>> {
    Ok(Json(InvitationList { invitations: state.store.list_invitations(now_millis()).await? }))
}

/// `DELETE /invitations/{id}`: takes back an open invitation.
async fn withdraw(
    State(state): State<AppState>,
    admin: CurrentUser,
    Path(id): Path<String>,
) -> AppResult<Json<jobdeck_api::InvitationInfo>> {
    let not_found = || AppError::NotFound(format!("there is no invitation {id}"));
    let number: i64 = id.parse().map_err(|_| not_found())?;
    let now = now_millis();
    let existing = state.store.invitation(number, now).await?.ok_or_else(not_found)?;
    if !state.store.withdraw_invitation(number, now).await? {
        return Err(AppError::Conflict(format!(
            "invitation {number} is {} and cannot be withdrawn",
            serde_json::to_value(existing.state).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
        )));
    }
    tracing::info!(id = number, by = admin.name, "invitation withdrawn");
    state.store.invitation(number, now).await?.map(Json).ok_or_else(not_found)
}

/// `POST /invitations/check` (no token): what an open invitation offers,
/// for the page the link opens.
async fn check(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<InvitationRedeem>,
) -> AppResult<Json<InvitationPreview>> {
    let open = state.store.open_invitation(&auth::hash_token(&body.code), now_millis()).await?.ok_or_else(unusable)?;
    let single_sign_on = state.single_sign_on.as_ref().map(|sso| sso.method());
    Ok(Json(InvitationPreview {
        role: open.role,
        invited_by: open.created_by,
        expires_at: open.expires_at,
        single_sign_on,
    }))
}

/// `POST /invitations/redeem` (no token): a local account named as the
/// teammate asks, with the invitation's role, and a personal token for it,
/// shown this once. A workspace that signs in through an identity provider
/// has no local accounts: its invitations are accepted there.
async fn redeem(State(state): State<AppState>, ApiJson(body): ApiJson<InvitationRedeem>) -> AppResult<Response> {
    if let Some(sso) = state.single_sign_on.as_ref() {
        return Err(AppError::BadRequest(format!(
            "this workspace signs in with {}: accept the invitation by signing in there",
            sso.method().name
        )));
    }
    let problems = user_name_problems(&body.name);
    if !problems.is_empty() {
        return Err(AppError::Validation([("name".to_string(), problems)].into_iter().collect()));
    }
    let now = now_millis();
    let claimant = Claimant::Local { name: body.name.clone() };
    let user = match state.store.redeem_invitation(&auth::hash_token(&body.code), claimant, now).await? {
        Redemption::Admitted(user) => user,
        Redemption::Unusable => return Err(unusable()),
        Redemption::NameTaken => {
            let taken = vec![format!("'{}' is taken; pick another name", body.name)];
            return Err(AppError::Validation([("name".to_string(), taken)].into_iter().collect()));
        }
    };
    let request = TokenRequest {
        kind: TokenKind::Api,
        name: "invitation".into(),
        lifetime: Some(Duration::from_secs(u64::from(PERSONAL_TOKEN_DEFAULT_DAYS) * 86_400)),
        origin_id: None,
    };
    let issued = auth::issue_token(&state.store, &user.name, request).await?;
    let info = state.store.token(issued.id).await?.ok_or_else(|| AppError::internal("a new token was not stored"))?;
    tracing::info!(user = user.name, role = user.role.as_str(), "joined with an invitation");
    let note = AuditNote {
        actor: Some(user.name.clone()),
        target: Some(user.name.clone()),
        detail: Some(format!("joined as a {}", user.role.as_str())),
        ..AuditNote::default()
    };
    Ok(note.on(Json(RedeemedInvitation {
        user: user.name,
        role: user.role,
        token: CreatedToken { token: issued.secret, info },
    })
    .into_response()))
}
