//! When a queued job may start (`status.start_estimate`, issue 38): the
//! admission pass replayed forward in time. Each running job with a
//! deadline frees its resources when the deadline and the stop after it
//! have passed; at each such moment the queue is admitted in the
//! scheduler's own order (a job that fits goes, smaller ones behind a job
//! that does not fit included), and a job admitted in the replay holds its
//! resources until its own deadline. The estimate is the first moment the
//! job is admitted. A running job without a deadline frees its resources
//! when its earlier runs say it will: the median length of the last
//! [`HISTORY_RUNS`] completed jobs of the same name and creator (a job run
//! again and again, as training jobs are); the estimate's basis is then
//! `history`, a likely time rather than a latest one. A running job with
//! neither never frees anything here, so where the job would need its
//! resources there is no estimate — no basis, no number.

use std::collections::{BTreeMap, HashMap};

use jobdeck_api::{EstimateBasis, StartEstimate};

use super::admission::{queue_key, QUOTA_EXCEEDED};
use super::placement::GroupState;
use super::*;

/// How many earlier runs a running job's typical length is taken from.
pub const HISTORY_RUNS: usize = 5;
/// The most running jobs whose history one estimate reads (one indexed
/// query each); past it, the others count as without a basis.
const HISTORY_LOOKUPS_MAX: usize = 100;

/// The typical run length (milliseconds) of running jobs without a
/// deadline, by job id.
pub(super) type TypicalRuns = HashMap<String, i64>;

/// A replayed holding of resources: its placement, its shape, and when it
/// ends (milliseconds).
struct Holding {
    ends_at: i64,
    placement: Placement,
    shape: crate::config::ShapeConfig,
}

impl Scheduler {
    /// When the queued job `id` may start, from `now` (milliseconds); `None`
    /// without a basis (it waits for a job without a deadline, or for its
    /// creator's quota, which the replay does not follow).
    pub(super) fn start_estimate(&self, id: &str, now: i64, typical: &TypicalRuns) -> Option<StartEstimate> {
        let job = self.jobs.get(id).filter(|a| a.state() == JobState::Queueing)?;
        if job.row.runtime.reason.as_deref() == Some(QUOTA_EXCEEDED) {
            return None;
        }
        let held: Vec<(Placement, crate::config::ShapeConfig)> =
            self.jobs.values().filter_map(|a| a.placement().map(|p| (p, a.resolved.shape.clone()))).collect();
        let mut groups = group_states(&self.config, held.iter().map(|(p, s)| (p, s)));
        let mut basis = EstimateBasis::Deadlines;
        let mut ending: Vec<Holding> = self
            .jobs
            .values()
            .filter_map(|a| {
                let placement = a.placement()?;
                let ends_at = match self.ends_at(a, now) {
                    Some(at) => at,
                    None => {
                        let length = typical.get(&a.row.id)?;
                        basis = EstimateBasis::History;
                        (a.row.runtime.started_at? + length).max(now)
                    }
                };
                Some(Holding { ends_at, placement, shape: a.resolved.shape.clone() })
            })
            .collect();
        // Nothing that holds resources now has a known end: whatever fits
        // now was admitted by the last pass, so the replay would end where
        // it starts, without a basis. (Most queues, and the cheap answer:
        // the replay is a pass over the whole queue per moment.)
        if ending.is_empty() {
            return None;
        }
        let mut queue: Vec<&Active> = self
            .jobs
            .values()
            .filter(|a| a.state() == JobState::Queueing)
            .filter(|a| a.row.runtime.reason.as_deref() != Some(QUOTA_EXCEEDED))
            .collect();
        queue.sort_by_key(|a| queue_key(a));

        let mut at = now;
        // Whether the replay has freed anything yet: a job admitted before
        // fits now, whatever the basis of the others.
        let mut released = false;
        loop {
            // The admission pass at `at`, over the jobs not yet admitted.
            let mut waiting = Vec::with_capacity(queue.len());
            for other in queue {
                match place(&groups, other) {
                    Some(_) if other.row.id == id => {
                        return Some(estimate(at, now, if released { basis } else { EstimateBasis::Deadlines }));
                    }
                    Some(placement) => {
                        occupy(&mut groups, &placement, &other.resolved.shape);
                        if let Some(seconds) = other.resolved.active_deadline_seconds {
                            let ends_at = after_seconds(at, seconds + self.stop_seconds(other));
                            ending.push(Holding { ends_at, placement, shape: other.resolved.shape.clone() });
                        }
                    }
                    None => waiting.push(other),
                }
            }
            queue = waiting;
            // The next holding to end frees its resources.
            let next = ending.iter().enumerate().min_by_key(|(_, h)| h.ends_at).map(|(i, _)| i)?;
            let freed = ending.swap_remove(next);
            release(&mut groups, &freed.placement, &freed.shape);
            released = true;
            at = at.max(freed.ends_at);
        }
    }

    /// The typical run length of each running job without a deadline
    /// whose creator has run jobs of its name to completion before.
    pub(super) async fn typical_runs(&self, now: i64) -> SchedulerResult<TypicalRuns> {
        let open_ended = self.jobs.values().filter(|a| a.placement().is_some() && self.ends_at(a, now).is_none());
        let mut typical = TypicalRuns::new();
        for active in open_ended.take(HISTORY_LOOKUPS_MAX) {
            let (owner, name) = (active.row.created_by.clone(), active.row.name.clone());
            let mut lengths = self.store.completed_run_lengths(owner, name, HISTORY_RUNS).await?;
            if lengths.is_empty() {
                continue;
            }
            lengths.sort_unstable();
            typical.insert(active.row.id.clone(), lengths[lengths.len() / 2].max(0));
        }
        Ok(typical)
    }

    /// When a running job's resources are free at the latest: its deadline
    /// and the stop after it; now for one already stopping. `None` for one
    /// without a deadline.
    fn ends_at(&self, active: &Active, now: i64) -> Option<i64> {
        if active.row.runtime.stop_reason.is_some() {
            return Some(after_seconds(now, self.stop_seconds(active)));
        }
        let started = active.row.runtime.started_at?;
        let seconds = active.resolved.active_deadline_seconds?;
        Some(after_seconds(started, seconds + self.stop_seconds(active)))
    }

    /// The longest a stop of `active` takes: its grace period between
    /// SIGTERM and SIGKILL, or the executor's.
    fn stop_seconds(&self, active: &Active) -> i64 {
        let default = self.config.executor.local.grace_period_seconds as i64;
        active.resolved.termination_grace_period_seconds.unwrap_or(default)
    }
}

/// Where `active` fits in `groups` now, in its groups' order.
fn place(groups: &BTreeMap<String, GroupState>, active: &Active) -> Option<Placement> {
    let resolved = &active.resolved;
    resolved.node_groups.iter().find_map(|group| {
        let slots = fit(groups.get(group)?, &resolved.shape, resolved.parallelism, &resolved.nodes)?;
        Some(Placement { node_group: group.clone(), slots })
    })
}

/// The estimate for a start at `at` (milliseconds), rounded up to the
/// second.
fn estimate(at: i64, now: i64, basis: EstimateBasis) -> StartEstimate {
    let reason = match basis {
        EstimateBasis::History if at <= now => "any moment, if the running jobs it waits for end as their earlier runs did: they have run longer already; a guess, not a limit".to_string(),
        _ if at <= now => "it fits now: the next admission pass starts it".to_string(),
        EstimateBasis::Deadlines => "at the latest, when the deadlines of the running jobs it waits for have passed; sooner if they end earlier, later if jobs of higher priority arrive first".to_string(),
        EstimateBasis::History => format!(
            "likely, if the running jobs it waits for take as long as their earlier runs (the median of the last {HISTORY_RUNS} completed jobs of the same name and creator); a guess, not a limit: later if they run longer or jobs of higher priority arrive first"
        ),
    };
    StartEstimate { at: (at + 999).div_euclid(1000), basis, reason }
}
