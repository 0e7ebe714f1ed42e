//! `GET /jobs/{id}/metrics` (every attempt's use now and at its peak, with
//! its flags) and `GET /jobs/{id}/replicas/{replica}/metrics` (its series
//! over a time range). Visibility is the job's.

use std::collections::BTreeMap;

use axum::extract::{Path, RawQuery, State};
use axum::routing::get;
use axum::Json;
use jobdeck_api::metrics::{series_unit, JobMetrics, MetricSeries, ReplicaMetrics};

use crate::http::auth::CurrentUser;
use crate::http::error::{AppError, AppResult};
use crate::http::jobs::{query_pairs, visible_job};
use crate::{AppState, Route};
use jobdeck_api::{parse_replica_id, replica_id};
use jobdeck_store::series::Point;
use jobdeck_store::JobRow;

pub fn routes() -> Vec<Route> {
    vec![("/jobs/{id}/metrics", get(job_metrics)), ("/jobs/{id}/replicas/{replica}/metrics", get(replica_metrics))]
}

/// The memory limit of a job's replicas: its shape's memory.
fn memory_limit_bytes(state: &AppState, job: &JobRow) -> i64 {
    state.config.shape_of(&job.spec).map(|s| s.memory_mb.saturating_mul(1 << 20)).unwrap_or(0)
}

async fn job_metrics(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> AppResult<Json<JobMetrics>> {
    let job = visible_job(&state, &user, &id).await?;
    let limit = memory_limit_bytes(&state, &job);
    let running: Vec<(i64, i64)> = state
        .store
        .replicas_of(job.id.clone())
        .await?
        .into_iter()
        .filter(|r| r.phase == jobdeck_api::ReplicaPhase::Running)
        .map(|r| (r.completion_index, r.attempt))
        .collect();
    let mut by_attempt: BTreeMap<(i64, i64), BTreeMap<String, Vec<Point>>> = BTreeMap::new();
    for (index, attempt, series, point) in state.store.job_metrics(job.id.clone()).await? {
        by_attempt.entry((index, attempt)).or_default().entry(series).or_default().push(point);
    }
    let now = crate::now_millis();
    let replicas = by_attempt
        .into_iter()
        .map(|((index, attempt), series)| {
            let id = replica_id(&job.id, index, attempt);
            jobdeck_core::metrics::summarize(
                id,
                index,
                attempt,
                &series,
                limit,
                running.contains(&(index, attempt)),
                now,
            )
        })
        .collect();
    Ok(Json(JobMetrics { replicas }))
}

async fn replica_metrics(
    State(state): State<AppState>,
    user: CurrentUser,
    Path((id, replica)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
) -> AppResult<Json<ReplicaMetrics>> {
    let mut from = i64::MIN;
    let mut to = i64::MAX;
    let mut wanted: Option<Vec<String>> = None;
    for (key, value) in query_pairs(raw.as_deref()) {
        let time = |v: &str| {
            v.parse::<i64>()
                .map_err(|_| AppError::BadRequest(format!("{key} must be a time in Unix milliseconds, not '{v}'")))
        };
        match key.as_str() {
            "from" => from = time(&value)?,
            "to" => to = time(&value)?,
            "series" => {
                let names: Vec<String> =
                    value.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
                if names
                    .iter()
                    .any(|n| n.len() > 64 || !n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_'))
                {
                    return Err(AppError::BadRequest("series must be series names separated by commas".into()));
                }
                wanted = Some(names);
            }
            _ => {}
        }
    }
    if from > to {
        return Err(AppError::BadRequest("from must not be after to".into()));
    }
    let job = visible_job(&state, &user, &id).await?;
    let not_found = || AppError::NotFound(format!("replica '{replica}' of job '{}' not found", job.id));
    let (index, attempt) = parse_replica_id(&job.id, &replica).ok_or_else(not_found)?;
    if state.store.replica(job.id.clone(), index, attempt).await?.is_none() {
        return Err(not_found());
    }
    let mut names = state.store.metric_series(job.id.clone(), index, attempt).await?;
    if let Some(wanted) = wanted {
        names.retain(|n| wanted.contains(n));
    }
    let mut series = Vec::new();
    for name in names {
        let points = state.store.metric_points(job.id.clone(), index, attempt, name.clone(), from, to).await?;
        series.push(MetricSeries {
            unit: series_unit(&name).to_string(),
            points: points.into_iter().map(|p| (p.t, p.mean, p.max)).collect(),
            name,
        });
    }
    Ok(Json(ReplicaMetrics {
        replica_id: replica_id(&job.id, index, attempt),
        memory_limit_bytes: memory_limit_bytes(&state, &job),
        series,
    }))
}
