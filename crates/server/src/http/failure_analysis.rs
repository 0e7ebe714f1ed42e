//! `GET /jobs/{id}/failure-analysis`: why a job failed and what to do about
//! it (design §7). The analysis itself is `failure::analysis`, made whole
//! by `failure::of_job`.

use axum::extract::{Path, State};
use axum::routing::get;
use axum::Json;
use jobdeck_api::FailureAnalysis;
use jobdeck_core::failure::of_job::{analyse_job, AnalysisError};

use crate::http::auth::CurrentUser;
use crate::http::error::{AppError, AppResult};
use crate::http::jobs::visible_job;
use crate::{AppState, Route};

pub fn routes() -> Vec<Route> {
    vec![("/jobs/{id}/failure-analysis", get(failure_analysis))]
}

async fn failure_analysis(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> AppResult<Json<FailureAnalysis>> {
    let job = visible_job(&state, &user, &id).await?;
    // Once its logs are gone, the analysis made just before they went
    // (class, suggestion, excerpts); a job that had none kept is analysed
    // from what is left (its attempts and events).
    if job.logs.removed_at.is_some() {
        if let Some(kept) = state.store.kept_failure_analysis(job.id.clone()).await? {
            return Ok(Json(kept));
        }
    }
    match analyse_job(&state.store, &state.logs, &state.config, &job).await {
        Ok(analysis) => Ok(Json(analysis)),
        Err(AnalysisError::Store(e)) => Err(e.into()),
        Err(e) => Err(AppError::internal(e)),
    }
}
