//! A stored job's failure analysis, whole: the facts its spec and shape
//! give, [`super::analysis::analyse`] over its attempts, events and logs,
//! and the memory curve of an out-of-memory kill. `GET
//! /jobs/{id}/failure-analysis` serves it, and the scheduler keeps it when a
//! job's logs go (they are what it reads).

use jobdeck_api::{EndReason, FailureAnalysis};
use jobdeck_store::logs::LogStore;
use jobdeck_store::{JobRow, Store, StoreError};

use super::analysis::{analyse, JobFacts};
use super::FailureClass;
use crate::Config;

/// Why a job's analysis could not be made.
#[derive(Debug, thiserror::Error)]
pub enum AnalysisError {
    #[error("cannot read the job's attempts, events or metrics")]
    Store(#[from] StoreError),
    #[error("the analysis of the job's logs stopped")]
    Stopped(#[from] tokio::task::JoinError),
}

/// The analysis of `job` as it stands now.
pub async fn analyse_job(
    store: &Store,
    logs: &LogStore,
    config: &Config,
    job: &JobRow,
) -> Result<FailureAnalysis, AnalysisError> {
    let spec = &job.spec;
    let shape = config.shape_of(spec);
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
        log_collection: spec.log_collection(config.log_collection_default),
    };
    let replicas = store.replicas_of(job.id.clone()).await?;
    let events = store.events_of(job.id.clone()).await?;
    let logs = logs.clone();
    let memory_limit = facts.memory_mb.saturating_mul(1 << 20);
    // Scanning logs reads files: off the async workers.
    let mut analysis = tokio::task::spawn_blocking(move || analyse(&facts, &replicas, &events, &logs)).await?;
    // An out-of-memory kill shows the memory curve that led to it.
    if analysis.err_class == FailureClass::Oom.as_str() {
        let killed = analysis
            .failed_replicas
            .iter()
            .find(|r| r.reason.as_deref().map(EndReason::parse) == Some(EndReason::OomKilled));
        if let Some(replica) = killed.or(analysis.failed_replicas.first()) {
            let points = store
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
    Ok(analysis)
}
