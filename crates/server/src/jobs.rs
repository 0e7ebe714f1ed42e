//! The job resource: `/jobs` and `/jobs/{id}`.
//!
//! Handlers parse, authorize and respond; storage is `Store`'s business.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use jobdeck_api::{JobList, JobSpec, JobState, JobStatus, LeptonJob, Metadata, Visibility};
use serde::Deserialize;

use crate::auth::CurrentUser;
use crate::error::{ApiJson, ApiQuery, AppError, AppResult};
use crate::store::{JobFilter, JobRow};
use crate::{now_millis, AppState};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/jobs", get(list_jobs).post(create_job))
        .route("/jobs/{id}", get(get_job))
}

/// The query string of `GET /jobs`.
#[derive(Debug, Deserialize)]
struct ListQuery {
    page: Option<i64>,
    page_size: Option<i64>,
}

const DEFAULT_PAGE_SIZE: i64 = 50;
const MAX_PAGE_SIZE: i64 = 500;

async fn list_jobs(
    State(state): State<AppState>,
    user: CurrentUser,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> AppResult<Json<JobList>> {
    let page = query.page.unwrap_or(1);
    if page < 1 {
        return Err(AppError::BadRequest("page must be 1 or more".into()));
    }
    let page_size = query.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
    if !(1..=MAX_PAGE_SIZE).contains(&page_size) {
        return Err(AppError::BadRequest(format!(
            "page_size must be between 1 and {MAX_PAGE_SIZE}"
        )));
    }
    let (rows, total) = state
        .store
        .list_jobs(JobFilter {
            viewer: user.name,
            page,
            page_size,
        })
        .await?;
    let jobs = rows.into_iter().map(row_to_job).collect::<AppResult<Vec<_>>>()?;
    Ok(Json(JobList {
        jobs,
        total,
        page,
        page_size,
    }))
}

async fn create_job(
    State(state): State<AppState>,
    user: CurrentUser,
    ApiJson(mut job): ApiJson<LeptonJob>,
) -> AppResult<(StatusCode, Json<LeptonJob>)> {
    // Lepton clients may send the name as the id only; accept either.
    if job.metadata.name.is_none() {
        job.metadata.name = job.metadata.id.clone();
    }
    let fields = jobdeck_api::validate_job(&job);
    if !fields.is_empty() {
        return Err(AppError::Validation(fields));
    }
    let name = job.metadata.name.clone().unwrap_or_default();
    let row = JobRow {
        id: format!("{name}-{}", random_suffix()),
        name,
        created_by: user.name,
        visibility: match job.metadata.visibility.unwrap_or_default() {
            Visibility::Public => "public".into(),
            Visibility::Private => "private".into(),
        },
        created_at: now_millis(),
        state: JobState::Queueing.as_str().into(),
        metadata_json: serde_json::to_string(&StoredMetadata::from(&job.metadata))
            .map_err(AppError::internal)?,
        spec_json: serde_json::to_string(&job.spec).map_err(AppError::internal)?,
    };
    state.store.insert_job(row.clone()).await?;
    Ok((StatusCode::OK, Json(row_to_job(row)?)))
}

async fn get_job(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> AppResult<Json<LeptonJob>> {
    let row = state
        .store
        .job_visible_to(id.clone(), user.name)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("job '{id}' not found")))?;
    Ok(Json(row_to_job(row)?))
}

/// The parts of `metadata` that are not columns of their own.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct StoredMetadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    labels: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    annotations: Option<std::collections::BTreeMap<String, String>>,
}

impl From<&Metadata> for StoredMetadata {
    fn from(m: &Metadata) -> Self {
        Self {
            labels: m.labels.clone(),
            annotations: m.annotations.clone(),
        }
    }
}

fn row_to_job(row: JobRow) -> AppResult<LeptonJob> {
    let stored: StoredMetadata =
        serde_json::from_str(&row.metadata_json).map_err(AppError::internal)?;
    let spec: JobSpec = serde_json::from_str(&row.spec_json).map_err(AppError::internal)?;
    let visibility = if row.visibility == "public" {
        Visibility::Public
    } else {
        Visibility::Private
    };
    Ok(LeptonJob {
        metadata: Metadata {
            id: Some(row.id),
            name: Some(row.name.clone()),
            created_at: Some(row.created_at),
            created_by: Some(row.created_by.clone()),
            owner: Some(row.created_by),
            visibility: Some(visibility),
            labels: stored.labels,
            annotations: stored.annotations,
            ..Metadata::default()
        },
        spec,
        status: Some(JobStatus {
            job_name: Some(row.name),
            state: JobState::parse(&row.state).or(Some(JobState::Unknown)),
            creation_time: Some(row.created_at / 1000),
            ..JobStatus::default()
        }),
    })
}

/// Five random lowercase letters and digits that make a job id unique among
/// jobs of the same name.
fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut bytes = [0u8; 5];
    getrandom::fill(&mut bytes).expect("the operating system has no random source");
    bytes
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect()
}
