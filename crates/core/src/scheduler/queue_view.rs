//! The queue as its own view (`GET /queue`, issue 38): every queued job in
//! the scheduler's one admission order (`admission::queue_key`), with what
//! a person reads the queue for: priorities, node groups, what each asks
//! for, who is held by a quota, and the preemption marks. The server hides
//! what a caller may not see; the order and the count are the scheduler's.

use jobdeck_api::Visibility;

use super::admission::{queue_key, QUOTA_EXCEEDED};
use super::*;

/// One queued job, in the admission order.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuedJob {
    pub id: String,
    pub name: String,
    pub created_by: String,
    pub visibility: Visibility,
    /// The resolved priority (`4000` for `mid-4000`).
    pub priority: i64,
    pub node_groups: Vec<String>,
    pub resource_shape: String,
    /// Replicas it runs at once.
    pub replicas: i64,
    pub gpus_per_replica: i64,
    /// Unix ms it entered the queue.
    pub queued_at: Option<i64>,
    /// Its creator's quota holds it: it does not hold back the jobs behind.
    pub held_by_quota: bool,
    /// It may stop lower-priority preemptible jobs to start.
    pub can_preempt: bool,
    /// Once running, a higher-priority job may stop it.
    pub can_be_preempted: bool,
    /// Why it waits, in the status's words.
    pub message: Option<String>,
}

impl Scheduler {
    /// Every queued job, first to be admitted first.
    pub(super) fn queue_view(&self) -> Vec<QueuedJob> {
        let mut queued: Vec<&Active> = self.jobs.values().filter(|a| a.state() == JobState::Queueing).collect();
        queued.sort_by_cached_key(|a| queue_key(a));
        queued
            .into_iter()
            .map(|a| QueuedJob {
                id: a.row.id.clone(),
                name: a.row.name.clone(),
                created_by: a.row.created_by.clone(),
                visibility: a.row.visibility,
                priority: a.resolved.priority,
                node_groups: a.resolved.node_groups.clone(),
                resource_shape: a.resolved.shape.name.clone(),
                replicas: a.resolved.parallelism,
                gpus_per_replica: a.resolved.shape.gpus,
                queued_at: a.row.runtime.queued_at,
                held_by_quota: a.row.runtime.reason.as_deref() == Some(QUOTA_EXCEEDED),
                can_preempt: a.resolved.can_preempt,
                can_be_preempted: a.resolved.can_be_preempted,
                message: a.row.runtime.message.clone(),
            })
            .collect()
    }
}
