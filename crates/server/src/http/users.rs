//! `/users`: the workspace's people as admins see them, and their roles
//! (Jobdeck extensions). The authorization table lets only admins in.

use axum::extract::{Path, State};
use axum::routing::get;
use axum::Json;
use jobdeck_api::{RoleChange, UserInfo, UserList};
use jobdeck_store::{RoleChanged, UserSummary};

use crate::http::auth::CurrentUser;
use crate::http::error::{ApiJson, AppError, AppResult};
use crate::{now_millis, AppState, Route};

pub fn routes() -> Vec<Route> {
    vec![("/users", get(list_users)), ("/users/{name}", axum::routing::patch(change_role))]
}

fn view(user: UserSummary) -> UserInfo {
    UserInfo {
        name: user.name,
        role: user.role,
        created_at: user.created_at,
        live_tokens: user.live_tokens,
        last_seen_at: user.last_seen_at,
    }
}

/// `GET /users`: every user by name, with their role and tokens.
async fn list_users(State(state): State<AppState>, _admin: CurrentUser) -> AppResult<Json<UserList>> {
    let users = state.store.list_users(now_millis()).await?.into_iter().map(view).collect();
    Ok(Json(UserList { users }))
}

/// `PATCH /users/{name}`: gives a user another role, from their next
/// request on. The workspace's last admin keeps the role: without one,
/// only a shell on the server could make another.
async fn change_role(
    State(state): State<AppState>,
    _admin: CurrentUser,
    Path(name): Path<String>,
    ApiJson(change): ApiJson<RoleChange>,
) -> AppResult<Json<UserInfo>> {
    match state.store.set_user_role(&name, change.role).await? {
        RoleChanged::NoSuchUser => Err(AppError::NotFound(format!("there is no user '{name}'"))),
        RoleChanged::LastAdmin => {
            Err(AppError::Conflict(format!("{name} is the workspace's only admin; make someone else an admin first")))
        }
        RoleChanged::Changed(_) => {
            let users = state.store.list_users(now_millis()).await?;
            let changed = users.into_iter().find(|u| u.name == name);
            changed.map(|u| Json(view(u))).ok_or_else(|| AppError::NotFound(format!("there is no user '{name}'")))
        }
    }
}
