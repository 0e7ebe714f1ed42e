//! `/users`: the workspace's people as admins see them, their roles, and
//! removing one (offboarding) (Jobdeck extensions). The authorization
//! table lets only admins in.

use axum::extract::{Path, State};
use axum::routing::get;
use axum::Json;
use jobdeck_api::{JobBrief, RemovedUser, RemovedUsersJobs, Role, SecretUse, UserRemoval};
use jobdeck_api::{RoleChange, UserInfo, UserList};
use jobdeck_core::scheduler::{Command, SchedulerError};
use jobdeck_store::{NamedJob, RemovalPreview};
use jobdeck_store::{RoleChanged, UserSummary};
use serde::Deserialize;

use crate::http::audit;
use crate::http::auth::CurrentUser;
use crate::http::error::{ApiJson, ApiQuery, AppError, AppResult};
use crate::{now_millis, AppState, Route};
use axum::response::Response;

pub fn routes() -> Vec<Route> {
    vec![
        ("/users", get(list_users)),
        ("/users/{name}", axum::routing::patch(change_role).delete(remove_user)),
        ("/users/{name}/removal", get(removal)),
        ("/users/{name}/email", axum::routing::put(set_email)),
    ]
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
) -> AppResult<Response> {
    match state.store.set_user_role(&name, change.role).await? {
        RoleChanged::NoSuchUser => Err(AppError::NotFound(format!("there is no user '{name}'"))),
        RoleChanged::LastAdmin => {
            Err(AppError::Conflict(format!("{name} is the workspace's only admin; make someone else an admin first")))
        }
        RoleChanged::Changed(_) => {
            let users = state.store.list_users(now_millis()).await?;
            let changed = users.into_iter().find(|u| u.name == name);
            let changed = changed.ok_or_else(|| AppError::NotFound(format!("there is no user '{name}'")))?;
            Ok(audit::noted(Json(view(changed)), name, Some(format!("role {}", change.role.as_str()))))
        }
    }
}

/// `PUT /users/{name}/email`: the address a user's email notifications go
/// to, for a user whose sign-in gave none (or gave the wrong one); empty
/// clears it. Only an admin sets it: a user who could would have the
/// server mail anyone.
async fn set_email(
    State(state): State<AppState>,
    _admin: CurrentUser,
    Path(name): Path<String>,
    ApiJson(change): ApiJson<jobdeck_api::EmailChange>,
) -> AppResult<Response> {
    let problems = change.problems();
    if !problems.is_empty() {
        return Err(AppError::Validation(problems));
    }
    let email = Some(change.email.clone()).filter(|e| !e.is_empty());
    if !state.store.set_user_email(&name, email).await? {
        return Err(AppError::NotFound(format!("there is no user '{name}'")));
    }
    Ok(audit::noted(Json(change.clone()), name, Some(format!("email '{}'", change.email))))
}

fn brief(job: NamedJob) -> JobBrief {
    JobBrief { id: job.id, name: job.name, created_by: job.created_by, state: job.state }
}

fn removal_view(name: &str, preview: RemovalPreview) -> UserRemoval {
    UserRemoval {
        name: name.to_string(),
        active_jobs: preview.active_jobs.into_iter().map(brief).collect(),
        secrets: preview.secrets,
        image_pull_secrets: preview.image_pull_secrets,
        secret_uses: preview
            .secret_uses
            .into_iter()
            .map(|u| SecretUse { secret: u.secret, job: brief(u.job) })
            .collect(),
    }
}

/// `GET /users/{name}/removal`: what removing the user would touch.
async fn removal(
    State(state): State<AppState>,
    _admin: CurrentUser,
    Path(name): Path<String>,
) -> AppResult<Json<UserRemoval>> {
    let preview = state
        .store
        .removal_preview(&name)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("there is no user '{name}'")))?;
    Ok(Json(removal_view(&name, preview)))
}

/// `DELETE /users/{name}`'s query: what becomes of their running jobs.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RemovalQuery {
    #[serde(default)]
    jobs: RemovedUsersJobs,
    /// Whom `jobs=hand-over` gives them to.
    to: Option<String>,
}

/// The user a removed user's jobs are handed to: someone else who is here
/// and may run jobs.
async fn heir(state: &AppState, removed: &str, query: &RemovalQuery) -> AppResult<Option<String>> {
    let refuse = |why: String| AppError::Validation([("to".to_string(), vec![why])].into_iter().collect());
    match (query.jobs, query.to.as_deref()) {
        (RemovedUsersJobs::Stop, None) => Ok(None),
        (RemovedUsersJobs::Stop, Some(_)) => Err(refuse("only with jobs=hand-over".into())),
        (RemovedUsersJobs::HandOver, None) => Err(refuse("whom to hand the jobs to (jobs=hand-over&to=NAME)".into())),
        (RemovedUsersJobs::HandOver, Some(to)) if to == removed => {
            Err(refuse("someone other than the user removed".into()))
        }
        (RemovedUsersJobs::HandOver, Some(to)) => match state.store.user(to).await? {
            Some(user) if user.role >= Role::Member => Ok(Some(user.name)),
            Some(_) => Err(refuse(format!("{to} is a viewer and cannot run jobs"))),
            None => Err(refuse(format!("there is no user '{to}'"))),
        },
    }
}

/// `DELETE /users/{name}[?jobs=stop|hand-over&to=NAME]`: offboarding. In
/// one transaction every token and session of theirs is revoked, their
/// secrets and pull secrets are deleted and the user is marked removed
/// (the name stays theirs, and they sign in no more until an admin lets
/// them back: an invitation, or `jobdeck token create`); then their jobs
/// that still hold or wait for resources are stopped (through the
/// scheduler, as a stop by the admin) or handed over to `to`. An admin does
/// not remove themself, so the workspace keeps one.
async fn remove_user(
    State(state): State<AppState>,
    admin: CurrentUser,
    Path(name): Path<String>,
    ApiQuery(query): ApiQuery<RemovalQuery>,
) -> AppResult<Json<RemovedUser>> {
    if name == admin.name {
        return Err(AppError::Conflict("you cannot remove yourself; another admin can".into()));
    }
    let preview = state
        .store
        .removal_preview(&name)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("there is no user '{name}'")))?;
    let heir = heir(&state, &name, &query).await?;
    let said = removal_view(&name, preview);
    // Their credentials end first, so no job of theirs can start after the
    // list of their jobs below is read.
    let removed = state
        .store
        .remove_user(&name, now_millis())
        .await?
        .ok_or_else(|| AppError::NotFound(format!("there is no user '{name}'")))?;
    let (mut stopped_jobs, mut handed_over_jobs) = (Vec::new(), Vec::new());
    for job in state.store.active_jobs_of(&name).await? {
        // A job that ended, or began stopping or being deleted, since the
        // preview was read needs nothing more.
        let done = match &heir {
            Some(to) => state.scheduler.hand_over(&job.id, to, &admin.name).await.map(|_| &mut handed_over_jobs),
            None => state.scheduler.command(&job.id, Command::Stop, &admin.name).await.map(|_| &mut stopped_jobs),
        };
        match done {
            Ok(list) => list.push(job.id),
            Err(SchedulerError::Refused(_) | SchedulerError::NotFound(_)) => {}
            Err(other) => return Err(other.into()),
        }
    }
    tracing::info!(
        user = name,
        by = admin.name,
        stopped = stopped_jobs.len(),
        handed_over = handed_over_jobs.len(),
        "user removed"
    );
    Ok(Json(RemovedUser {
        name,
        stopped_jobs,
        handed_to: heir.filter(|_| !handed_over_jobs.is_empty()),
        handed_over_jobs,
        revoked_tokens: removed.revoked_tokens as i64,
        deleted_secrets: removed.deleted_secrets as i64,
        deleted_image_pull_secrets: removed.deleted_image_pull_secrets as i64,
        secret_uses: said.secret_uses,
    }))
}
