//! `GET /queue` (a Jobdeck extension): the queue as its own view, in the
//! scheduler's admission order, with jobs the caller may not see counted
//! and kept in their place but never named (docs/api.md, "The queue").

use axum::extract::State;
use axum::routing::get;
use axum::Json;
use jobdeck_api::{Priority, QueueEntry, QueueList, Visibility};
use jobdeck_core::scheduler::QueuedJob;
use serde::Deserialize;

use crate::http::auth::CurrentUser;
use crate::http::error::{ApiQuery, AppError, AppResult};
use crate::{AppState, Route};

pub fn routes() -> Vec<Route> {
    vec![("/queue", get(list_queue))]
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct QueueQuery {
    /// Only the jobs that may run in this node group.
    node_group: Option<String>,
}

/// The wire's priority class of a resolved priority (`4000` → `mid-4000`).
fn class_of(priority: i64) -> String {
    u8::try_from(priority / 1000)
        .ok()
        .and_then(Priority::new)
        .map_or_else(|| priority.to_string(), |p| p.class().to_string())
}

/// `job` as `user` may read it, at `position`.
fn entry(job: QueuedJob, position: Option<i64>, user: &CurrentUser) -> QueueEntry {
    let visible = job.visibility == Visibility::Public || job.created_by == user.name;
    let shown = |value: String| visible.then_some(value);
    QueueEntry {
        position,
        id: shown(job.id),
        name: shown(job.name),
        created_by: shown(job.created_by),
        priority_class: class_of(job.priority),
        node_groups: job.node_groups,
        resource_shape: shown(job.resource_shape),
        replicas: job.replicas,
        gpus_per_replica: job.gpus_per_replica,
        queued_at: job.queued_at,
        held_by_quota: job.held_by_quota,
        can_preempt: job.can_preempt,
        can_be_preempted: job.can_be_preempted,
        message: job.message.filter(|_| visible),
    }
}

/// `GET /queue?node_group=<name>`: every queued job (or those that may run
/// in one node group), first to be admitted first. Positions count the
/// jobs listed, those a quota holds left out (as `status.queue_position`
/// leaves them out).
async fn list_queue(
    State(state): State<AppState>,
    user: CurrentUser,
    ApiQuery(query): ApiQuery<QueueQuery>,
) -> AppResult<Json<QueueList>> {
    if let Some(group) = &query.node_group {
        if !state.config.node_groups.iter().any(|g| &g.name == group) {
            return Err(AppError::NotFound(format!("no node group '{group}'")));
        }
    }
    let queued = state.scheduler.queue().await?;
    let mut position = 0;
    let mut hidden = 0;
    let mut jobs = Vec::new();
    for job in queued {
        if query.node_group.as_ref().is_some_and(|group| !job.node_groups.contains(group)) {
            continue;
        }
        let place = (!job.held_by_quota).then(|| {
            position += 1;
            position
        });
        let listed = entry(job, place, &user);
        if listed.id.is_none() {
            hidden += 1;
        }
        jobs.push(listed);
    }
    Ok(Json(QueueList { jobs, hidden }))
}
