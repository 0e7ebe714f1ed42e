//! `/webhooks` and `/notifications` (Jobdeck extensions): each user's
//! endpoints and the rules that send their jobs' transitions there. Every
//! one is its owner's alone: another user's answers as missing. The
//! sending is the notifier's (`crate::notify`); docs/api.md,
//! "Notifications".

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::Json;
use jobdeck_api::{
    CreatedWebhook, NotificationCreate, NotificationInfo, NotifyOn, WebhookCreate, WebhookDelivery, WebhookInfo,
    WebhookKind, GPU_IDLE_MINUTES_DEFAULT, MEMORY_PERCENT_DEFAULT, NOTIFICATIONS_PER_USER_MAX, WEBHOOKS_PER_USER_MAX,
};
use jobdeck_store::{DeliveryRow, NewWebhook, NotificationRow, WebhookRow};

use crate::http::audit;
use crate::http::auth::CurrentUser;
use crate::http::error::{ApiJson, AppError, AppResult};
use crate::http::jobs::visible_job;
use crate::notify::send;
use crate::notify::watch::compile_log_pattern;
use crate::{now_millis, AppState, Route};

pub fn routes() -> Vec<Route> {
    vec![
        ("/webhooks", get(list_webhooks).post(create_webhook)),
        ("/webhooks/{id}", delete(delete_webhook)),
        ("/webhooks/{id}/enable", post(enable_webhook)),
        ("/webhooks/{id}/deliveries", get(list_deliveries)),
        ("/notifications", get(list_notifications).post(create_notification)),
        ("/notifications/{id}", delete(delete_notification)),
    ]
}

fn info_of(row: WebhookRow) -> WebhookInfo {
    WebhookInfo {
        id: row.id,
        name: row.name,
        kind: row.kind,
        destination: row.destination,
        enabled: row.enabled,
        disabled_reason: row.disabled_reason,
        created_at: row.created_at,
    }
}

fn delivery_of(row: DeliveryRow) -> WebhookDelivery {
    WebhookDelivery {
        id: row.id,
        event: row.event,
        job_id: row.job_id,
        replica: row.replica,
        line: row.line,
        state: row.state,
        attempts: row.attempts,
        last_status: row.last_status,
        last_error: row.last_error,
        created_at: row.created_at,
        next_attempt_at: row.next_at.filter(|_| row.state == jobdeck_api::DeliveryState::Pending),
        delivered_at: row.delivered_at,
    }
}

fn notification_of(row: NotificationRow) -> NotificationInfo {
    NotificationInfo {
        id: row.id,
        job: row.job_id,
        on: row.on,
        webhook: row.webhook_id,
        gpu_idle_minutes: row.gpu_idle_minutes,
        memory_percent: row.memory_percent,
        log_pattern: row.log_pattern,
        created_at: row.created_at,
    }
}

fn field_error(field: &str, message: String) -> AppError {
    AppError::Validation([(field.to_string(), vec![message])].into())
}

/// A path's endpoint or rule number; anything else is a missing one.
fn number(id: &str, what: &str) -> AppResult<i64> {
    id.parse().map_err(|_| AppError::NotFound(format!("you have no {what} '{id}'")))
}

async fn own_webhook(state: &AppState, user: &CurrentUser, id: &str) -> AppResult<WebhookRow> {
    let found = state.store.webhook(user.name.clone(), number(id, "webhook")?).await?;
    found.ok_or_else(|| AppError::NotFound(format!("you have no webhook '{id}'")))
}

/// A random signing secret, shown once.
fn new_secret() -> AppResult<String> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).map_err(|e| AppError::internal(std::io::Error::other(e.to_string())))?;
    Ok(format!("whsec_{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()))
}

/// The address an email endpoint of `user` mails: theirs on record, where
/// the server sends email at all.
async fn email_destination(state: &AppState, user: &CurrentUser) -> AppResult<String> {
    if state.config.notifications.email.is_none() {
        return Err(field_error("kind", "this server sends no email (its [notifications.email] is not set)".into()));
    }
    state.store.user_email(&user.name).await?.ok_or_else(|| {
        field_error(
            "kind",
            "you have no email address on record: sign in through your identity provider, or ask an admin to set \
             one (PUT /users/{name}/email)"
                .into(),
        )
    })
}

/// `GET /webhooks`: the caller's endpoints, oldest first.
async fn list_webhooks(State(state): State<AppState>, user: CurrentUser) -> AppResult<Json<Vec<WebhookInfo>>> {
    let rows = state.store.webhooks_of(user.name.clone()).await?;
    Ok(Json(rows.into_iter().map(info_of).collect()))
}

/// `POST /webhooks`: a new endpoint, where the admin's allow-list admits
/// its address; a JSON one's signing secret is in this answer only.
async fn create_webhook(
    State(state): State<AppState>,
    user: CurrentUser,
    ApiJson(body): ApiJson<WebhookCreate>,
) -> AppResult<Response> {
    let problems = body.problems();
    if !problems.is_empty() {
        return Err(AppError::Validation(problems));
    }
    let destination = match body.kind {
        WebhookKind::Email => format!("mailto:{}", email_destination(&state, &user).await?),
        WebhookKind::Json | WebhookKind::Slack => {
            send::check_url(&state.config.notifications, &body.url).map_err(|why| field_error("url", why))?
        }
    };
    let secret = match body.kind {
        WebhookKind::Json => new_secret()?,
        WebhookKind::Slack | WebhookKind::Email => String::new(),
    };
    let webhook = NewWebhook {
        owner: user.name.clone(),
        name: body.name.clone(),
        kind: body.kind,
        url: body.url,
        destination,
        secret: secret.clone(),
        created_at: now_millis(),
    };
    let Some(id) = state.store.add_webhook(webhook, WEBHOOKS_PER_USER_MAX).await? else {
        return Err(AppError::Conflict(format!(
            "you have {WEBHOOKS_PER_USER_MAX} webhooks, as many as one user may keep: delete one first"
        )));
    };
    let row = own_webhook(&state, &user, &id.to_string()).await?;
    let created = CreatedWebhook { webhook: info_of(row), secret: (!secret.is_empty()).then_some(secret) };
    Ok(audit::noted((StatusCode::CREATED, Json(created)), id.to_string(), Some(body.name)))
}

/// `DELETE /webhooks/{id}`: the endpoint, its rules and its history.
async fn delete_webhook(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> AppResult<Response> {
    let row = own_webhook(&state, &user, &id).await?;
    state.store.delete_webhook(user.name.clone(), row.id).await?;
    Ok(audit::noted(Json(info_of(row)), id, None))
}

/// `POST /webhooks/{id}/enable`: sends to a disabled endpoint again (from
/// the next transition: what it skipped stays skipped).
async fn enable_webhook(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> AppResult<Response> {
    let row = own_webhook(&state, &user, &id).await?;
    state.store.enable_webhook(user.name.clone(), row.id).await?;
    let row = own_webhook(&state, &user, &id).await?;
    Ok(audit::noted(Json(info_of(row)), id, None))
}

/// `GET /webhooks/{id}/deliveries`: the endpoint's newest deliveries.
async fn list_deliveries(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> AppResult<Json<Vec<WebhookDelivery>>> {
    let found = state.store.deliveries_of(user.name.clone(), number(&id, "webhook")?).await?;
    let rows = found.ok_or_else(|| AppError::NotFound(format!("you have no webhook '{id}'")))?;
    Ok(Json(rows.into_iter().map(delivery_of).collect()))
}

/// `GET /notifications`: the caller's rules, oldest first.
async fn list_notifications(
    State(state): State<AppState>,
    user: CurrentUser,
) -> AppResult<Json<Vec<NotificationInfo>>> {
    let rows = state.store.notifications_of(user.name.clone()).await?;
    Ok(Json(rows.into_iter().map(notification_of).collect()))
}

/// `POST /notifications`: a rule sending some transitions of one job the
/// caller may see, or of every job of theirs, to one of their endpoints.
async fn create_notification(
    State(state): State<AppState>,
    user: CurrentUser,
    ApiJson(body): ApiJson<NotificationCreate>,
) -> AppResult<Response> {
    let mut problems = body.problems();
    if let Some(Err(why)) = body.log_pattern.as_deref().filter(|_| problems.is_empty()).map(compile_log_pattern) {
        problems.entry("log_pattern".into()).or_default().push(why);
    }
    if !problems.is_empty() {
        return Err(AppError::Validation(problems));
    }
    let webhook = state.store.webhook(user.name.clone(), body.webhook).await?;
    if webhook.is_none() {
        return Err(field_error("webhook", format!("you have no webhook {}", body.webhook)));
    }
    let job_id = match &body.job {
        Some(job) => Some(visible_job(&state, &user, job).await?.id),
        None => None,
    };
    let mut on = body.on.clone();
    on.sort();
    on.dedup();
    // Each condition's setting is kept, its default filled in, where the
    // rule names the condition.
    let row = NotificationRow {
        id: 0,
        owner: user.name.clone(),
        job_id,
        gpu_idle_minutes: on
            .contains(&NotifyOn::GpuIdle)
            .then(|| body.gpu_idle_minutes.unwrap_or(GPU_IDLE_MINUTES_DEFAULT)),
        memory_percent: on
            .contains(&NotifyOn::MemoryNearLimit)
            .then(|| body.memory_percent.unwrap_or(MEMORY_PERCENT_DEFAULT)),
        log_pattern: body.log_pattern.clone(),
        on,
        webhook_id: body.webhook,
        created_at: now_millis(),
    };
    let Some(id) = state.store.add_notification(row.clone(), NOTIFICATIONS_PER_USER_MAX).await? else {
        return Err(AppError::Conflict(format!(
            "you have {NOTIFICATIONS_PER_USER_MAX} notification rules, as many as one user may keep: delete one first"
        )));
    };
    let info = notification_of(NotificationRow { id, ..row });
    Ok(audit::noted((StatusCode::CREATED, Json(info)), id.to_string(), None).into_response())
}

/// `DELETE /notifications/{id}`.
async fn delete_notification(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> AppResult<Response> {
    let number = number(&id, "notification rule")?;
    if !state.store.delete_notification(user.name.clone(), number).await? {
        return Err(AppError::NotFound(format!("you have no notification rule '{id}'")));
    }
    Ok(audit::noted(StatusCode::NO_CONTENT, id, None))
}
