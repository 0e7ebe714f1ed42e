//! Rerunning a job's failed indexes: `POST /jobs/{id}/rerun?only=failed`,
//! and the links between a job and its reruns in `GET /jobs/{id}`.
//!
//! The rerun is a new job, created as the caller would create it with
//! `POST /jobs` (every rule, the caller's secrets, role and quota), whose
//! spec is the original's with `completion_indexes` set to the indexes that
//! did not succeed (`jobdeck_core::rerun`). The original is not touched: it
//! keeps its record and its succeeded indexes' logs.

use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use jobdeck_api::{JobState, LeptonJob, Metadata};
use jobdeck_core::rerun::{failed_indexes, NoRerun};
use jobdeck_store::JobRow;

use crate::http::audit::AuditNote;
use crate::http::auth::CurrentUser;
use crate::http::error::{AppError, AppResult};
use crate::http::jobs::{changeable_job, create_as, job_view, query_pairs};
use crate::AppState;

/// What a rerun adds to a job's name.
const RERUN_SUFFIX: &str = "-rerun";

pub async fn rerun_job(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> AppResult<Response> {
    let mut only = None;
    for (key, value) in query_pairs(raw.as_deref()) {
        if key == "only" {
            only = Some(value);
        }
    }
    if only.as_deref() != Some("failed") {
        return Err(AppError::BadRequest(
            "only must be 'failed': a rerun runs the indexes of the job that did not succeed".into(),
        ));
    }
    // Rerunning starts the job's spec again, its registry credentials
    // included: it is for those who may start the job itself.
    let original = changeable_job(&state, &user, &id).await?;
    let indexes = indexes_to_rerun(&state, &original).await?.map_err(|why| AppError::Conflict(why.to_string()))?;
    let mut spec = original.spec.clone();
    spec.completion_indexes = Some(indexes);
    spec.stopped = None;
    let job = LeptonJob {
        metadata: Metadata {
            name: Some(rerun_name(&original.name, state.config.job_name_max_length)),
            visibility: Some(original.visibility),
            labels: original.metadata.labels.clone(),
            annotations: original.metadata.annotations.clone(),
            ..Metadata::default()
        },
        spec,
        status: None,
    };
    let row = create_as(&state, &user, job, Some(original.id.clone())).await?;
    let note = AuditNote { target: Some(row.id.clone()), ..AuditNote::default() };
    let mut view = job_view(row);
    if let Some(status) = view.status.as_mut() {
        status.rerun_of = Some(original.id);
    }
    Ok(note.on(Json(view).into_response()))
}

/// The indexes a rerun of `job`'s failed indexes would run, or why there
/// are none, from its stored replicas.
async fn indexes_to_rerun(state: &AppState, job: &JobRow) -> AppResult<Result<Vec<i64>, NoRerun>> {
    if !matches!(job.runtime.state, JobState::Failed | JobState::Stopped) {
        return Ok(Err(NoRerun::NotEnded(job.runtime.state)));
    }
    let succeeded = state.store.succeeded_indexes(job.id.clone(), job.runtime.run).await?;
    Ok(failed_indexes(&job.spec, job.runtime.state, &succeeded))
}

/// The rerun's name: the job's with `-rerun` (once), shortened to fit.
fn rerun_name(name: &str, max_length: usize) -> String {
    let base = name.strip_suffix(RERUN_SUFFIX).unwrap_or(name);
    let room = max_length.saturating_sub(RERUN_SUFFIX.len());
    let base: String = base.chars().take(room).collect();
    format!("{}{RERUN_SUFFIX}", base.trim_end_matches('-'))
}

/// A job's links to reruns, as `GET /jobs/{id}` shows them
/// (`RerunLinks::add_to`).
#[derive(Debug, Default)]
pub struct RerunLinks {
    rerun_of: Option<String>,
    reruns: Vec<String>,
    rerun_indexes: Vec<i64>,
}

impl RerunLinks {
    /// The job `row` reruns and the reruns of it, those `user` may see,
    /// and, when it has failed indexes, which a rerun would run.
    pub async fn of(state: &AppState, user: &CurrentUser, row: &JobRow) -> AppResult<RerunLinks> {
        let mut links = RerunLinks::default();
        // The job it reruns is named only to those who may see it (its
        // visibility may have changed since).
        if let Some(of) = &row.rerun_of {
            if state.store.job_visible_to(of.clone(), user.name.clone()).await?.is_some() {
                links.rerun_of = Some(of.clone());
            }
        }
        links.reruns = state.store.reruns_visible_to(row.id.clone(), user.name.clone()).await?;
        let runs = row.spec.chosen_indexes().map_or(row.spec.completions(), |chosen| chosen.len() as i64);
        if runs > 1 {
            if let Ok(indexes) = indexes_to_rerun(state, row).await? {
                links.rerun_indexes = indexes;
            }
        }
        Ok(links)
    }

    pub fn add_to(self, job: &mut LeptonJob) {
        if let Some(status) = job.status.as_mut() {
            (status.rerun_of, status.reruns, status.rerun_indexes) = (self.rerun_of, self.reruns, self.rerun_indexes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reruns_name_says_so_once_and_fits() {
        assert_eq!(rerun_name("train", 36), "train-rerun");
        assert_eq!(rerun_name("train-rerun", 36), "train-rerun");
        assert_eq!(rerun_name("abcdefghij", 10), "abcd-rerun");
        assert_eq!(rerun_name("abc-efghij", 10), "abc-rerun");
    }
}
