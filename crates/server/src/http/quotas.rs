//! `/quotas` and `/usage` (Jobdeck extensions): what each role and user may
//! hold, set by admins, and what users use now and per day, as JSON or
//! CSV. The authorization table lets only admins in; the scheduler applies
//! the quotas (`jobdeck_core::scheduler`, docs/teams.md "Quotas").

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;
use jobdeck_api::{
    JobLogUsage, LogUsage, QuotaLimits, QuotaList, QuotaScope, Role, UsageGrouping, UsageHistory, UsageNow, UserUsage,
    Visibility, LOG_USAGE_DEFAULT_JOBS, LOG_USAGE_MAX_JOBS, USAGE_HISTORY_DEFAULT_DAYS, USAGE_HISTORY_MAX_DAYS,
};
use jobdeck_core::quota::QuotaRules;
use jobdeck_core::usage::{self, HistoryRequest};
use jobdeck_store::{QuotaRow, DAY_MS};
use serde::Deserialize;

use crate::http::audit;
use crate::http::auth::CurrentUser;
use crate::http::error::{ApiJson, ApiQuery, AppError, AppResult};
use crate::{now_millis, AppState, Route};

pub fn routes() -> Vec<Route> {
    vec![
        ("/quotas", get(list_quotas)),
        ("/quotas/{scope}/{name}", axum::routing::put(set_quota).delete(delete_quota)),
        ("/usage", get(usage_now)),
        ("/usage/history", get(usage_history)),
        ("/usage/logs", get(log_usage)),
    ]
}

async fn rules(state: &AppState) -> AppResult<QuotaRules> {
    Ok(QuotaRules::new(&state.config.quotas, state.store.quotas().await?))
}

/// `GET /quotas`: every quota in force, roles first, each with where it is
/// set (the config, or the console over it).
async fn list_quotas(State(state): State<AppState>, _admin: CurrentUser) -> AppResult<Json<QuotaList>> {
    Ok(Json(QuotaList { items: rules(&state).await?.list() }))
}

/// The scope and name of a quota path, checked: a role that exists, or a
/// user that does.
async fn subject(state: &AppState, scope: &str, name: &str) -> AppResult<QuotaScope> {
    let scope = QuotaScope::parse(scope)
        .ok_or_else(|| AppError::NotFound(format!("no quota scope '{scope}': quotas are for a role or a user")))?;
    match scope {
        QuotaScope::Role if Role::parse(name).is_none() => {
            Err(AppError::NotFound(format!("there is no role '{name}': the roles are viewer, member and admin")))
        }
        QuotaScope::User if state.store.user(name).await?.is_none() => {
            Err(AppError::NotFound(format!("there is no user '{name}'")))
        }
        _ => Ok(scope),
    }
}

/// `PUT /quotas/{scope}/{name}`: sets a role's or user's quota; it replaces
/// the config's for the same role or user, and the queue is judged again
/// at once.
async fn set_quota(
    State(state): State<AppState>,
    admin: CurrentUser,
    Path((scope, name)): Path<(String, String)>,
    ApiJson(limits): ApiJson<QuotaLimits>,
) -> AppResult<Response> {
    let scope = subject(&state, &scope, &name).await?;
    let problems = limits.problems();
    if !problems.is_empty() {
        return Err(AppError::Validation(problems));
    }
    let row = QuotaRow { scope, name: name.clone(), limits, updated_by: admin.name.clone(), updated_at: now_millis() };
    state.store.set_quota(row).await?;
    state.scheduler.quotas_changed().await?;
    tracing::info!(scope = scope.as_str(), name, by = admin.name, ?limits, "quota set");
    let quota = rules(&state).await?.list().into_iter().find(|q| q.scope == scope && q.name == name);
    let quota = quota.ok_or_else(|| AppError::internal("a quota just stored is not in force"))?;
    let detail = serde_json::to_string(&limits).unwrap_or_default();
    Ok(audit::noted(Json(quota), format!("{}/{name}", scope.as_str()), Some(detail)))
}

/// `DELETE /quotas/{scope}/{name}`: deletes a quota set in the console; the
/// config's for the same role or user, if any, is in force again.
async fn delete_quota(
    State(state): State<AppState>,
    admin: CurrentUser,
    Path((scope, name)): Path<(String, String)>,
) -> AppResult<StatusCode> {
    let Some(scope) = QuotaScope::parse(&scope) else {
        return Err(AppError::NotFound(format!("no quota scope '{scope}': quotas are for a role or a user")));
    };
    if !state.store.delete_quota(scope, name.clone()).await? {
        return Err(AppError::NotFound(format!(
            "no quota for {} '{name}' was set in the console (a quota of the config file is changed there)",
            scope.as_str()
        )));
    }
    state.scheduler.quotas_changed().await?;
    tracing::info!(scope = scope.as_str(), name, by = admin.name, "quota deleted");
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /usage`: every user's use now against the limits in force for them.
async fn usage_now(State(state): State<AppState>, _admin: CurrentUser) -> AppResult<Json<UsageNow>> {
    let rules = rules(&state).await?;
    let items = state
        .store
        .usage_now()
        .await?
        .into_iter()
        .map(|u| UserUsage {
            limits: rules.limits_for(&u.user, u.role).effective(),
            user: u.user,
            role: u.role,
            running_gpus: u.running_gpus,
            running_replicas: u.running_replicas,
            queued_jobs: u.queued_jobs,
            log_bytes: u.log_bytes,
        })
        .collect();
    Ok(Json(UsageNow { items }))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LogUsageQuery {
    limit: Option<i64>,
}

/// `GET /usage/logs[?limit=N]`: what the logs take against the disk budget,
/// and the jobs whose logs take the most. Another user's private job stays
/// unnamed, as everywhere an admin looks: its owner and size are shown.
async fn log_usage(
    State(state): State<AppState>,
    admin: CurrentUser,
    ApiQuery(query): ApiQuery<LogUsageQuery>,
) -> AppResult<Json<LogUsage>> {
    let limit = query.limit.unwrap_or(LOG_USAGE_DEFAULT_JOBS);
    if !(1..=LOG_USAGE_MAX_JOBS).contains(&limit) {
        let mut problems = jobdeck_api::FieldErrors::new();
        problems.entry("limit".into()).or_default().push(format!("from 1 to {LOG_USAGE_MAX_JOBS}"));
        return Err(AppError::Validation(problems));
    }
    let items = state
        .store
        .jobs_with_largest_logs(limit)
        .await?
        .into_iter()
        .map(|(row, log_bytes)| JobLogUsage {
            job_id: (row.visibility == Visibility::Public || row.created_by == admin.name).then(|| row.id.clone()),
            log_retention: crate::http::jobs::log_retention(&state, &row),
            created_by: row.created_by,
            state: row.runtime.state,
            log_bytes,
        })
        .collect();
    Ok(Json(LogUsage {
        used_bytes: state.store.log_bytes_total().await?,
        disk_budget_bytes: state.config.logs.disk_budget,
        items,
    }))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct HistoryQuery {
    by: Option<String>,
    from: Option<String>,
    to: Option<String>,
    format: Option<String>,
}

/// `GET /usage/history[?by=user|role&from=YYYY-MM-DD&to=YYYY-MM-DD&format=json|csv]`:
/// GPU-hours, CPU-hours and log bytes per user (or role) and day, the
/// last 30 days unless asked otherwise.
async fn usage_history(
    State(state): State<AppState>,
    _admin: CurrentUser,
    ApiQuery(query): ApiQuery<HistoryQuery>,
) -> AppResult<Response> {
    let now = now_millis();
    let mut problems = jobdeck_api::FieldErrors::new();
    let mut problem = |field: &str, message: String| problems.entry(field.to_string()).or_default().push(message);
    let by = match query.by.as_deref() {
        None => UsageGrouping::User,
        Some(by) => UsageGrouping::parse(by).unwrap_or_else(|| {
            problem("by", "user or role".into());
            UsageGrouping::User
        }),
    };
    let csv = match query.format.as_deref() {
        None | Some("json") => false,
        Some("csv") => true,
        Some(_) => {
            problem("format", "json or csv".into());
            false
        }
    };
    let mut day = |field: &str, text: Option<&str>, default: i64| match text {
        None => default,
        Some(text) => usage::parse_day(text).unwrap_or_else(|| {
            problem(field, "a day as YYYY-MM-DD".into());
            default
        }),
    };
    let to = day("to", query.to.as_deref(), now.div_euclid(DAY_MS));
    let from = day("from", query.from.as_deref(), to - (USAGE_HISTORY_DEFAULT_DAYS - 1));
    if to < from {
        problem("to", "not before from".into());
    } else if to - from >= USAGE_HISTORY_MAX_DAYS {
        problem("from", format!("at most {USAGE_HISTORY_MAX_DAYS} days before to"));
    }
    if !problems.is_empty() {
        return Err(AppError::Validation(problems));
    }
    let charges = state.store.charges_between(from * DAY_MS, (to + 1) * DAY_MS).await?;
    let log_days = state.store.log_bytes_days(from, to).await?;
    let roles = state.store.user_roles().await?;
    let request = HistoryRequest { by, from, to, now };
    let items = usage::history(&request, &charges, &log_days, &roles);
    if csv {
        let mut response = usage::csv(by, &items).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/csv; charset=utf-8"));
        let file = format!(
            "attachment; filename=\"usage-{}-{}-{}.csv\"",
            by.as_str(),
            usage::day_text(from),
            usage::day_text(to)
        );
        if let Ok(value) = HeaderValue::from_str(&file) {
            headers.insert(header::CONTENT_DISPOSITION, value);
        }
        return Ok(response);
    }
    let history = UsageHistory { by, from: usage::day_text(from), to: usage::day_text(to), items };
    Ok(Json(history).into_response())
}
