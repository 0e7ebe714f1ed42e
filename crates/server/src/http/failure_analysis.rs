//! `GET /jobs/{id}/failure-analysis`: why a job failed and what to do about
//! it (design §7). The analysis itself is `failure::analysis`.

use axum::extract::{Path, State};
use axum::routing::get;
use axum::Json;
use jobdeck_api::{EndReason, FailureAnalysis};

use crate::http::auth::CurrentUser;
use crate::http::error::{AppError, AppResult};
use crate::http::jobs::visible_job;
use crate::{AppState, Route};
use jobdeck_core::failure::analysis::{analyse, JobFacts};

pub fn routes() -> Vec<Route> {
    vec![("/jobs/{id}/failure-analysis", get(failure_analysis))]
}

async fn failure_analysis(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> AppResult<Json<FailureAnalysis>> {
    let job = visible_job(&state, &user, &id).await?;
    let id = job.id.clone();
    let spec = &job.spec;
    let shape = state.config.shape_of(spec);
    let facts = JobFacts {
        job_id: job.id.clone(),
        state: job.runtime.state,
        reason: job.runtime.reason.clone(),
        message: job.runtime.message.clone(),
        run: job.runtime.run,
        shape_name: shape.map(|s| s.name.clone()).unwrap_or_default(),
        memory_mb: shape.map(|s| s.memory_mb).unwrap_or(0),
        gpus: shape.map(|s| s.gpus).unwrap_or(0),
        accelerator_memory_mb: shape.and_then(|s| s.accelerator_memory_mb),
        image: spec.container.image_reference(),
        active_deadline_seconds: spec.active_deadline_seconds(),
        max_queued_duration_seconds: spec.max_queued_duration_seconds(),
        disable_retry_on_program_error: spec.disable_retry_on_program_error(),
        log_collection: spec.log_collection(state.config.log_collection_default),
    };
    let replicas = state.store.replicas_of(id.clone()).await?;
    let events = state.store.events_of(id).await?;
    let logs = state.logs.clone();
    // Scanning logs reads files: off the async workers.
    let memory_limit = facts.memory_mb.saturating_mul(1 << 20);
    let mut analysis = tokio::task::spawn_blocking(move || analyse(&facts, &replicas, &events, &logs))
        .await
        .map_err(AppError::internal)?;
    // An out-of-memory kill shows the memory curve that led to it.
    if analysis.err_class == jobdeck_core::failure::FailureClass::Oom.as_str() {
        let killed = analysis
            .failed_replicas
            .iter()
            .find(|r| r.reason.as_deref().map(EndReason::parse) == Some(EndReason::OomKilled));
        if let Some(replica) = killed.or(analysis.failed_replicas.first()) {
            let points = state
                .store
                .metric_points(
                    job.id.clone(),
                    replica.completion_index,
                    replica.attempt,
                    jobdeck_api::metrics::SERIES_MEMORY.into(),
                    i64::MIN,
                    i64::MAX,
                )
                .await?;
            if !points.is_empty() {
                analysis.memory_curve = Some(jobdeck_api::MemoryCurve {
                    replica_id: replica.replica_id.clone(),
                    limit_bytes: memory_limit,
                    points: points.into_iter().map(|p| (p.t, p.mean, p.max)).collect(),
                });
            }
        }
    }
    Ok(Json(analysis))
}
