//! Admission: the queue in the scheduler's order, what a job's launch
//! needs, preemption of lower-priority work, and admitting a job onto its
//! placement.

use super::*;

/// The admission order: priority (high first), then submission time, then
/// id, so that two jobs never tie.
pub(super) type QueueKey = (i64, i64, String);

pub(super) fn queue_key(active: &Active) -> QueueKey {
    (-active.resolved.priority, active.row.created_at, active.row.id.clone())
}

/// The reason of a queued job its creator's quota holds back.
pub(super) const QUOTA_EXCEEDED: &str = "QuotaExceeded";

impl Scheduler {
    /// What a run needs to start, with secrets resolved; the inner error
    /// says why it cannot (a referenced secret that does not exist).
    pub(super) async fn build_launch(&self, active: &Active) -> SchedulerResult<Result<JobLaunch, LaunchRefusal>> {
        let Some(placement) = active.placement() else {
            return Ok(Err(LaunchRefusal::NotPlaced));
        };
        let env = match self.resolve_env(&active.row).await? {
            Ok(env) => env,
            Err(refusal) => return Ok(Err(refusal)),
        };
        let mut pull_credentials = Vec::new();
        for name in active.row.spec.image_pull_secrets() {
            if let Some(stored) =
                self.store.resolve_image_pull_secret(active.row.created_by.clone(), name.clone()).await?
            {
                pull_credentials.push(PullCredential {
                    name: stored.name,
                    registry_server: stored.registry_server,
                    username: stored.username,
                    password: stored.password,
                });
            }
        }
        let row = &active.row;
        Ok(Ok(JobLaunch {
            env,
            master_port: row.runtime.master_port.clamp(0, u16::MAX as i64) as u16,
            pull_credentials,
            ..JobLaunch::new(&row.id, &row.name, row.runtime.run, &active.row.spec, &active.resolved, placement)
        }))
    }

    /// The job's environment with its secret references resolved for its
    /// creator, in order; the inner error names a secret that is gone.
    pub(super) async fn resolve_env(
        &self,
        row: &JobRow,
    ) -> SchedulerResult<Result<Vec<(String, String)>, LaunchRefusal>> {
        let mut env = Vec::new();
        for (i, var) in row.spec.envs.iter().flatten().enumerate() {
            let pinned = var.value_from.as_ref().and_then(|v| v.secret_owner.clone());
            let value = match (&var.value, var.value_from.as_ref().and_then(|v| v.secret_name_ref.as_deref())) {
                (_, Some(secret)) => {
                    match self.store.resolve_secret(row.created_by.clone(), secret.to_string(), pinned).await? {
                        Some(value) => value,
                        None => {
                            return Ok(Err(LaunchRefusal::MissingSecret {
                                index: i,
                                secret: secret.to_string(),
                                user: row.created_by.clone(),
                            }))
                        }
                    }
                }
                (Some(value), None) => value.clone(),
                (None, None) => String::new(),
            };
            env.push((var.name.clone(), value));
        }
        Ok(Ok(env))
    }

    /// One admission pass over the queue.
    pub(super) async fn schedule(&mut self) -> SchedulerResult<()> {
        let held: Vec<(Placement, crate::config::ShapeConfig)> =
            self.jobs.values().filter_map(|a| a.placement().map(|p| (p, a.resolved.shape.clone()))).collect();
        let mut groups = group_states(&self.config, held.iter().map(|(p, s)| (p, s)));
        let mut queue: Vec<QueueKey> =
            self.jobs.values().filter(|a| a.state() == JobState::Queueing).map(queue_key).collect();
        queue.sort();
        let mut tally = self.quota_tally().await?;
        for (_, _, id) in queue {
            let Some(active) = self.jobs.get(&id) else { continue };
            // A job over its creator's quota waits, says why, and neither
            // takes free resources nor preempts; the jobs behind it go on.
            if let Some(message) = tally.as_ref().and_then(|t| t.refusal(&self.quotas, active)) {
                self.set_waiting(&id, QUOTA_EXCEEDED, message).await?;
                continue;
            }
            let resolved = &active.resolved;
            let mut placed = None;
            for group in &resolved.node_groups {
                if let Some(state) = groups.get(group) {
                    if let Some(slots) = fit(state, &resolved.shape, resolved.parallelism, &resolved.nodes) {
                        placed = Some(Placement { node_group: group.clone(), slots });
                        break;
                    }
                }
            }
            if let Some(placement) = placed {
                occupy(&mut groups, &placement, &resolved.shape.clone());
                if let Some(tally) = tally.as_mut() {
                    tally.admitted(active);
                }
                self.admit(&id, placement).await?;
                continue;
            }
            let (reason, message) = if resolved.can_preempt {
                self.preempt_for(&id, &groups).await?
            } else {
                ("NoCapacity".to_string(), None)
            };
            let Some(active) = self.jobs.get_mut(&id) else { continue };
            let resolved = &active.resolved;
            let message = message.unwrap_or_else(|| {
                let parts: Vec<String> = resolved
                    .node_groups
                    .iter()
                    .filter_map(|g| groups.get(g))
                    .map(|g| shortage(g, &resolved.shape, resolved.parallelism, &resolved.nodes))
                    .collect();
                format!("waiting for capacity: {}", parts.join("; "))
            });
            self.set_waiting(&id, &reason, message).await?;
        }
        Ok(())
    }

    /// Says why a queued job waits, with an event when the reason changed.
    async fn set_waiting(&mut self, id: &str, reason: &str, message: String) -> SchedulerResult<()> {
        let Some(active) = self.jobs.get_mut(id) else { return Ok(()) };
        let r = &mut active.row.runtime;
        if r.reason.as_deref() != Some(reason) || r.message.as_deref() != Some(message.as_str()) {
            r.reason = Some(reason.to_string());
            r.message = Some(message.clone());
            self.save(id, vec![event(id, EventType::Normal, reason, message)]).await?;
        }
        Ok(())
    }

    /// Tries to make room for `id` by preemption; returns the readiness
    /// reason and message while it waits.
    pub(super) async fn preempt_for(
        &mut self,
        id: &str,
        groups: &std::collections::BTreeMap<String, placement::GroupState>,
    ) -> SchedulerResult<(String, Option<String>)> {
        let Some(active) = self.jobs.get(id) else { return Ok(("NoCapacity".into(), None)) };
        let resolved = active.resolved.clone();
        for group in &resolved.node_groups {
            let Some(state) = groups.get(group) else { continue };
            // Resources of victims already stopping for a preemption count as
            // free for planning: they are on their way out.
            let mut scratch = groups.clone();
            let mut stopping = Vec::new();
            for other in self.jobs.values() {
                if other.row.runtime.stop_reason == Some(StopReason::Preempted) {
                    if let Some(p) = other.placement().filter(|p| &p.node_group == group) {
                        release(&mut scratch, &p, &other.resolved.shape);
                        stopping.push(other.row.id.clone());
                    }
                }
            }
            let scratch_group = scratch.get(group).unwrap_or(state);
            if !stopping.is_empty()
                && fit(scratch_group, &resolved.shape, resolved.parallelism, &resolved.nodes).is_some()
            {
                return Ok(("Preempting".into(), Some(self.waiting_for_victims(id, &stopping))));
            }
            let candidates: Vec<Candidate> = self
                .jobs
                .values()
                .filter(|o| o.row.id != id && o.resolved.can_be_preempted && o.resolved.priority < resolved.priority)
                .filter(|o| o.row.runtime.stop_reason.is_none())
                .filter_map(|o| {
                    o.placement().filter(|p| &p.node_group == group).map(|placement| Candidate {
                        job_id: o.row.id.clone(),
                        priority: o.resolved.priority,
                        started_at: o.row.runtime.started_at.unwrap_or(0),
                        placement,
                        shape: o.resolved.shape.clone(),
                    })
                })
                .collect();
            if let Some(victims) =
                plan_preemption(scratch_group, &resolved.shape, resolved.parallelism, &resolved.nodes, candidates)
            {
                let preemptor = self.jobs.get(id).map(|a| a.row.clone());
                for victim in &victims {
                    let named = match (self.jobs.get(victim), &preemptor) {
                        (Some(v), Some(p)) if may_name(&v.row, p) => {
                            format!("job {id} (priority {})", resolved.priority)
                        }
                        _ => "a higher-priority job".to_string(),
                    };
                    let message = format!("preempted by {named} which needs its resources in node group {group}");
                    self.begin_stop(victim, StopReason::Preempted, message).await?;
                }
                let mut all = stopping;
                all.extend(victims);
                let message = self.waiting_for_victims(id, &all);
                let reason = "Preempting".to_string();
                self.save(id, vec![event(id, EventType::Normal, "Preempting", message.clone())]).await?;
                return Ok((reason, Some(message)));
            }
        }
        Ok(("NoCapacity".into(), None))
    }

    /// The status message of a job waiting for the jobs it preempted to stop,
    /// naming only those its readers may see.
    pub(super) fn waiting_for_victims(&self, id: &str, victims: &[String]) -> String {
        let rows: Vec<&JobRow> = victims.iter().filter_map(|v| self.jobs.get(v)).map(|a| &a.row).collect();
        match self.jobs.get(id) {
            Some(subject) if !rows.is_empty() => {
                format!("waiting for {} preempted job(s) to stop: {}", victims.len(), name_jobs(&subject.row, &rows))
            }
            _ => format!("waiting for {} preempted job(s) to stop", victims.len()),
        }
    }

    /// Starts a job's run on `placement`.
    pub(super) async fn admit(&mut self, id: &str, placement: Placement) -> SchedulerResult<()> {
        let now = jobdeck_store::now_millis();
        let Some(active) = self.jobs.get_mut(id) else { return Ok(()) };
        let nodes: Vec<&str> = placement.slots.iter().map(|s| s.node.as_str()).collect();
        let mut unique = nodes.clone();
        unique.dedup();
        let message = format!(
            "admitted to node group {}: {} replica slot(s) on {}",
            placement.node_group,
            placement.slots.len(),
            unique.join(", ")
        );
        let r = &mut active.row.runtime;
        r.state = JobState::Starting;
        r.reason = Some("Scheduled".into());
        r.message = Some(message.clone());
        r.started_at = Some(now);
        r.placement = Some(placement.clone());
        r.stop_reason = None;
        r.succeeded = 0;
        r.failed = 0;
        r.active = 0;
        r.ready = 0;
        if active.resolved.workers > 1 {
            r.master_port = free_port() as i64;
        }
        self.save(id, vec![event(id, EventType::Normal, "Scheduled", message)]).await?;
        let Some(active) = self.jobs.get(id) else { return Ok(()) };
        match self.build_launch(active).await? {
            Ok(launch) => {
                if let Err(e) = self.executor.start(launch).await {
                    self.finish_failed(
                        id,
                        EndReason::ExecutorError,
                        format!("the executor could not start the job: {e}"),
                    )
                    .await?;
                }
            }
            Err(refusal) => self.finish_failed(id, EndReason::SecretNotFound, refusal.to_string()).await?,
        }
        Ok(())
    }
}

/// Why a placed run cannot be handed to the executor.
#[derive(Debug, thiserror::Error)]
pub(super) enum LaunchRefusal {
    #[error("the job has no placement")]
    NotPlaced,
    #[error("spec.envs[{index}] refers to the secret '{secret}', which does not exist or is not visible to {user}")]
    MissingSecret { index: usize, secret: String, user: String },
}
