//! Where a queued job stands (issue 38): its place in the admission order
//! among the jobs that wait for its node groups, and what would let it
//! start now — each a change of its specification checked against what is
//! free this moment and its creator's quota, or what holds it that no
//! change of its own helps.

use jobdeck_api::{Affinity, AffinityChange, JobSpec, SpecChange, StartEstimate, StartSuggestion, SuggestionKind};

use super::admission::{queue_key, QUOTA_EXCEEDED};
use super::placement::GroupState;
use super::quotas::QuotaTally;
use super::*;

/// A queued job's place and the suggestions that would let it start.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueStanding {
    /// 1 plus the queued jobs ahead of it in the admission order that wait
    /// for any of its node groups (those held by their quota left out).
    pub position: i64,
    pub suggestions: Vec<StartSuggestion>,
    /// When it may start, where there is a basis (`estimate.rs`).
    pub estimate: Option<StartEstimate>,
}

/// What the suggestions are judged against: the resources free now and
/// what every user holds.
struct Now<'a> {
    config: &'a Config,
    groups: std::collections::BTreeMap<String, GroupState>,
    tally: Option<QuotaTally>,
    quotas: &'a crate::quota::QuotaRules,
    owner: &'a str,
}

impl Now<'_> {
    /// The first of `resolved`'s node groups where it fits now, when its
    /// creator's quota lets it too.
    fn fits(&self, resolved: &ResolvedSpec) -> Option<&GroupState> {
        if self.tally.as_ref().is_some_and(|t| t.refusal_for(self.quotas, self.owner, resolved).is_some()) {
            return None;
        }
        resolved
            .node_groups
            .iter()
            .filter_map(|g| self.groups.get(g))
            .find(|g| fit(g, &resolved.shape, resolved.parallelism, &resolved.nodes).is_some())
    }

    /// `spec` with `change` made, resolved as the server would, and the
    /// group it would fit in now.
    fn try_change(&self, spec: &JobSpec, change: &SpecChange) -> Option<(ResolvedSpec, &GroupState)> {
        let mut changed = spec.clone();
        if let Some(shape) = &change.resource_shape {
            changed.resource_shape = Some(shape.clone());
        }
        if let Some(parallelism) = change.parallelism {
            changed.parallelism = Some(parallelism);
        }
        if let Some(affinity) = &change.affinity {
            let into = changed.affinity.get_or_insert_with(Affinity::default);
            if let Some(groups) = &affinity.allowed_dedicated_node_groups {
                into.allowed_dedicated_node_groups = Some(groups.clone());
            }
            if let Some(nodes) = &affinity.allowed_nodes_in_node_group {
                into.allowed_nodes_in_node_group = Some(nodes.clone());
            }
        }
        let resolved = ResolvedSpec::resolve(&changed, self.config).ok()?;
        let group = self.fits(&resolved)?;
        Some((resolved, group))
    }
}

impl Scheduler {
    /// Where the queued job `id` stands; `None` for a job that is not
    /// queued here.
    pub(super) async fn queue_standing(&self, id: &str) -> SchedulerResult<Option<QueueStanding>> {
        let Some(job) = self.jobs.get(id).filter(|a| a.state() == JobState::Queueing) else { return Ok(None) };
        let key = queue_key(job);
        let shares_a_group =
            |other: &Active| other.resolved.node_groups.iter().any(|g| job.resolved.node_groups.contains(g));
        let ahead: Vec<&Active> = self
            .jobs
            .values()
            .filter(|other| other.state() == JobState::Queueing && queue_key(other) < key)
            .filter(|other| other.row.runtime.reason.as_deref() != Some(QUOTA_EXCEEDED))
            .filter(|other| shares_a_group(other))
            .collect();

        let held: Vec<(Placement, crate::config::ShapeConfig)> =
            self.jobs.values().filter_map(|a| a.placement().map(|p| (p, a.resolved.shape.clone()))).collect();
        let now = Now {
            config: &self.config,
            groups: group_states(&self.config, held.iter().map(|(p, s)| (p, s))),
            tally: self.quota_tally().await?,
            quotas: &self.quotas,
            owner: &job.row.created_by,
        };
        let mut suggestions = Vec::new();
        suggestions.extend(smaller_shape(&now, job));
        suggestions.extend(fewer_at_once(&now, job));
        suggestions.extend(other_node_groups(&now, job));
        let higher = ahead.iter().filter(|o| o.resolved.priority > job.resolved.priority).count();
        if higher > 0 {
            suggestions.push(StartSuggestion {
                kind: SuggestionKind::PriorityAhead,
                change: None,
                reason: format!(
                    "{higher} job{} of higher priority {} ahead for the same node groups",
                    if higher == 1 { "" } else { "s" },
                    if higher == 1 { "waits" } else { "wait" }
                ),
            });
        }
        if job.row.runtime.reason.as_deref() == Some(QUOTA_EXCEEDED) {
            suggestions.push(StartSuggestion {
                kind: SuggestionKind::Quota,
                change: None,
                reason: job.row.runtime.message.clone().unwrap_or_else(|| "over its creator's quota".into()),
            });
        }
        let at = jobdeck_store::now_millis();
        let typical = self.typical_runs(at).await?;
        let estimate = self.start_estimate(id, at, &typical);
        Ok(Some(QueueStanding { position: ahead.len() as i64 + 1, suggestions, estimate }))
    }
}

/// The largest smaller shape that fits now: fewer GPUs a replica (of the
/// same kind) for a GPU job, fewer CPUs or less memory for a CPU job. Not
/// for a job that states its requirements (`spec.resources`): a shape it
/// names must meet them.
fn smaller_shape(now: &Now, job: &Active) -> Option<StartSuggestion> {
    if job.row.spec.resources.is_some() {
        return None;
    }
    let current = &job.resolved.shape;
    let mut smaller: Vec<&crate::config::ShapeConfig> = now
        .config
        .shapes
        .iter()
        .filter(|s| {
            if current.gpus > 0 {
                s.gpus > 0 && s.gpus < current.gpus && s.accelerator_type == current.accelerator_type
            } else {
                s.gpus == 0 && s.cpu <= current.cpu && s.memory_mb <= current.memory_mb && s.name != current.name
            }
        })
        .collect();
    smaller.sort_by(|a, b| b.gpus.cmp(&a.gpus).then(b.cpu.total_cmp(&a.cpu)).then(b.memory_mb.cmp(&a.memory_mb)));
    smaller.into_iter().find_map(|shape| {
        let change = SpecChange { resource_shape: Some(shape.name.clone()), ..Default::default() };
        let (_, group) = now.try_change(&job.row.spec, &change)?;
        let what = if current.gpus > 0 {
            format!("{} a replica instead of {}", gpus(shape.gpus), current.gpus)
        } else {
            format!(
                "{} CPU and {} MiB a replica instead of {} and {} MiB",
                shape.cpu, shape.memory_mb, current.cpu, current.memory_mb
            )
        };
        Some(StartSuggestion {
            kind: SuggestionKind::SmallerShape,
            reason: format!("fits now with {what} (shape {}) in node group {}", shape.name, group.name),
            change: Some(change),
        })
    })
}

/// The most replicas at once, fewer than now, that fit now; every
/// completion still runs. Not for a distributed job (its workers start
/// together) nor one running one replica at a time.
fn fewer_at_once(now: &Now, job: &Active) -> Option<StartSuggestion> {
    let resolved = &job.resolved;
    if resolved.workers > 1 || resolved.parallelism <= 1 {
        return None;
    }
    (1..resolved.parallelism).rev().find_map(|parallelism| {
        let change = SpecChange { parallelism: Some(parallelism), ..Default::default() };
        let (_, group) = now.try_change(&job.row.spec, &change)?;
        Some(StartSuggestion {
            kind: SuggestionKind::FewerAtOnce,
            reason: format!(
                "fits now running {parallelism} replica{} at a time instead of {} in node group {}; all {} completions still run",
                if parallelism == 1 { "" } else { "s" },
                resolved.parallelism,
                group.name,
                resolved.completions
            ),
            change: Some(change),
        })
    })
}

/// Every node group the job does not ask for where it fits now, as it is.
fn other_node_groups(now: &Now, job: &Active) -> Vec<StartSuggestion> {
    let pinned = !job.row.spec.nodes().is_empty();
    now.config
        .node_groups
        .iter()
        .filter(|g| !job.resolved.node_groups.contains(&g.name))
        .filter_map(|g| {
            let change = SpecChange {
                affinity: Some(AffinityChange {
                    allowed_dedicated_node_groups: Some(vec![g.name.clone()]),
                    // Nodes named of another group would not be found in this one.
                    allowed_nodes_in_node_group: pinned.then(Vec::new),
                }),
                ..Default::default()
            };
            let (resolved, group) = now.try_change(&job.row.spec, &change)?;
            let free = if resolved.shape.gpus > 0 {
                format!("{} free", gpus(group.free_gpus() as i64))
            } else {
                format!("{} CPU free", group.free_cpu())
            };
            Some(StartSuggestion {
                kind: SuggestionKind::OtherNodeGroup,
                reason: format!("node group {} has {free}: the job fits there now", group.name),
                change: Some(change),
            })
        })
        .collect()
}

fn gpus(n: i64) -> String {
    format!("{n} GPU{}", if n == 1 { "" } else { "s" })
}
