//! What the executors and the clock tell the scheduler: a replica that
//! changed (the job's counts and state follow), a run's outcome (success,
//! a job-level retry or failure, a stop), and the deadlines that passed
//! (active, queued, archive).

use super::*;
use jobdeck_api::validate::RETRIES_MAX;

impl Scheduler {
    pub(super) async fn handle_host(&mut self, message: HostMessage) {
        let result = match message {
            HostMessage::ReplicaChanged { job_id, run } => self.refresh_counts(&job_id, run).await,
            HostMessage::Outcome { job_id, run, outcome } => self.on_outcome(&job_id, run, outcome).await,
        };
        if let Err(e) = result {
            tracing::error!(error = ?e, "cannot apply an executor report");
        }
    }

    /// Recomputes a job's replica counts from its stored attempts, and moves
    /// it to Running once a replica runs.
    pub(super) async fn refresh_counts(&mut self, id: &str, run: i64) -> SchedulerResult<()> {
        let Some(active) = self.jobs.get(id) else { return Ok(()) };
        if active.row.runtime.run != run {
            return Ok(());
        }
        let rows = self.store.replicas_of(id.to_string()).await?;
        let Some(active) = self.jobs.get_mut(id) else { return Ok(()) };
        let current: Vec<_> = rows.iter().filter(|r| r.run == run).collect();
        let running = current.iter().filter(|r| r.phase == jobdeck_api::ReplicaPhase::Running).count() as i64;
        let mut succeeded: Vec<i64> = current
            .iter()
            .filter(|r| r.phase == jobdeck_api::ReplicaPhase::Succeeded)
            .map(|r| r.completion_index)
            .collect();
        succeeded.dedup();
        let failed = current
            .iter()
            .filter(|r| r.phase == jobdeck_api::ReplicaPhase::Failed && r.reason != Some(EndReason::NotStarted))
            .count() as i64;
        let waiting = current.iter().filter(|r| r.phase == jobdeck_api::ReplicaPhase::Pending).count();
        let r = &mut active.row.runtime;
        let before = (r.active, r.ready, r.succeeded, r.failed, r.state, r.message.clone());
        r.active = running;
        r.ready = running;
        r.succeeded = succeeded.len() as i64;
        r.failed = failed;
        let mut events = Vec::new();
        if r.state == JobState::Starting && running > 0 {
            r.state = JobState::Running;
            r.reason = Some("Running".into());
            events.push(event(id, EventType::Normal, "Running", "the first replica is running"));
        }
        // A running job's message follows its replicas: after a replica
        // fails and waits out its back-off, "1 replica(s) running" would
        // be wrong.
        if r.state == JobState::Running {
            r.message = Some(match waiting {
                0 => format!("{running} replica(s) running"),
                _ => format!("{running} replica(s) running, {waiting} waiting to start"),
            });
        }
        if before != (r.active, r.ready, r.succeeded, r.failed, r.state, r.message.clone()) {
            self.save(id, events).await?;
        }
        Ok(())
    }

    pub(super) async fn on_outcome(&mut self, id: &str, run: i64, outcome: RunOutcome) -> SchedulerResult<()> {
        let Some(active) = self.jobs.get(id) else { return Ok(()) };
        if active.row.runtime.run != run {
            return Ok(());
        }
        self.refresh_counts(id, run).await?;
        // The run wrote its last line: what its logs take is final, and a
        // cut for the disk budget was this run's.
        self.measure_logs(vec![id.to_string()]);
        if let Err(e) = self.logs.uncut(id) {
            tracing::warn!(job = %id, error = %crate::error_chain(&e), "cannot end the cut of a job's logs");
        }
        let Some(active) = self.jobs.get_mut(id) else { return Ok(()) };
        let stop_reason = active.row.runtime.stop_reason;
        let now = jobdeck_store::now_millis();
        let ttl_s = active.resolved.ttl_seconds_after_finished;
        // A rerun of failed indexes runs some of the completions only.
        let completions = active.resolved.index_count();
        // The retry window counts from the job's creation; `None`: no window,
        // or still open.
        let window_ended = active
            .resolved
            .retry_window_seconds
            .filter(|&window| after_seconds(active.row.created_at, window) <= now)
            .map(jobdeck_api::duration_in_words);
        let window = active.resolved.retry_window_seconds.map(jobdeck_api::duration_in_words);
        self.dirty = true;
        let r = &mut active.row.runtime;
        r.placement = None;
        r.stop_reason = None;
        r.active = 0;
        r.ready = 0;
        match (stop_reason, outcome) {
            (Some(StopReason::Deleted), _) => return self.delete_now(id).await,
            (_, RunOutcome::Succeeded) => {
                r.state = JobState::Completed;
                r.reason = Some("Completed".into());
                r.message = Some(format!("all {completions} completion(s) succeeded"));
                r.completed_at = Some(now);
                r.archive_at = Some(after_seconds(now, ttl_s));
                let message = r.message.clone().unwrap_or_default();
                self.save(id, vec![event(id, EventType::Normal, "Completed", message)]).await
            }
            (Some(StopReason::Preempted), _) if window_ended.is_some() => {
                let window = window_ended.unwrap_or_default();
                let message = format!("preempted by a job of higher priority after its retry window of {window} ended");
                self.finish_failed(id, EndReason::Preempted, message).await
            }
            (Some(StopReason::Preempted), _) => {
                r.state = JobState::Queueing;
                r.run += 1;
                r.reason = Some(EndReason::Preempted.to_string());
                r.message = Some("preempted by a job of higher priority; waiting in the queue again".into());
                r.queued_at = Some(now);
                r.started_at = None;
                self.save(
                    id,
                    vec![event(
                        id,
                        EventType::Warning,
                        "Requeued",
                        "its replicas stopped after a preemption; back in the queue",
                    )],
                )
                .await
            }
            (Some(StopReason::DeadlineExceeded), _) => {
                let limit = active.resolved.active_deadline_seconds.unwrap_or(0);
                let message = format!("the job ran longer than its active deadline of {limit} s");
                self.finish_failed(id, EndReason::DeadlineExceeded, message).await
            }
            (Some(StopReason::Stopped), _) | (None, RunOutcome::Stopped) => {
                r.state = JobState::Stopped;
                r.reason = Some("Stopped".into());
                r.message = Some("the job was stopped; start it to run it again".into());
                r.completed_at = Some(now);
                r.archive_at = None;
                self.save(id, vec![event(id, EventType::Normal, "Stopped", "every replica has stopped")]).await
            }
            (None, RunOutcome::Failed { reason, message, program_error }) => {
                let retries_used = r.job_retries;
                let allowed = active.resolved.max_job_failure_retry;
                let blocked = program_error && active.resolved.disable_retry_on_program_error;
                if let Some(window) = window_ended.filter(|_| retries_used < allowed && !blocked) {
                    let message = format!("{message}; not restarted: its retry window of {window} ended");
                    self.finish_failed(id, reason, message).await
                } else if retries_used < allowed && !blocked {
                    let delay_s = (2i64 << retries_used.min(5)).min(60);
                    let count = match allowed {
                        RETRIES_MAX => format!("job retry {}", retries_used + 1),
                        _ => format!("job retry {} of {allowed}", retries_used + 1),
                    };
                    let within = window.map(|w| format!(", within its retry window of {w}")).unwrap_or_default();
                    r.state = JobState::PendingRetry;
                    r.job_retries += 1;
                    r.reason = Some(reason.to_string());
                    r.message = Some(format!("{message}; restarting the whole job in {delay_s} s ({count}{within})"));
                    r.started_at = None;
                    self.retry_at.insert(id.to_string(), after_seconds(now, delay_s));
                    let text = r.message.clone().unwrap_or_default();
                    self.save(id, vec![event(id, EventType::Warning, "PendingRetry", text)]).await
                } else {
                    self.finish_failed(id, reason, message).await
                }
            }
        }
    }

    pub(super) async fn finish_failed(&mut self, id: &str, reason: EndReason, message: String) -> SchedulerResult<()> {
        let Some(active) = self.jobs.get_mut(id) else { return Ok(()) };
        let now = jobdeck_store::now_millis();
        let ttl_s = active.resolved.ttl_seconds_after_finished;
        let r = &mut active.row.runtime;
        r.state = JobState::Failed;
        r.reason = Some(reason.to_string());
        r.message = Some(message.clone());
        r.placement = None;
        r.stop_reason = None;
        r.completed_at = Some(now);
        r.archive_at = Some(after_seconds(now, ttl_s));
        self.dirty = true;
        self.save(id, vec![event(id, EventType::Warning, reason.as_str(), message)]).await
    }

    pub(super) async fn timers(&mut self) -> SchedulerResult<()> {
        let now = jobdeck_store::now_millis();
        let mut deadlines = Vec::new();
        let mut queue_timeouts = Vec::new();
        for (id, active) in &self.jobs {
            let r = &active.row.runtime;
            match r.state {
                JobState::Starting | JobState::Running if r.stop_reason.is_none() => {
                    if let (Some(limit), Some(started)) = (active.resolved.active_deadline_seconds, r.started_at) {
                        if after_seconds(started, limit) <= now {
                            deadlines.push((id.clone(), limit));
                        }
                    }
                }
                JobState::Queueing => {
                    if let (Some(limit), Some(queued)) = (active.resolved.max_queued_duration_seconds, r.queued_at) {
                        if after_seconds(queued, limit) <= now {
                            queue_timeouts.push((id.clone(), limit));
                        }
                    }
                }
                _ => {}
            }
        }
        for (id, limit) in deadlines {
            let message = format!("the job exceeded its active deadline of {limit} s; stopping its replicas");
            self.begin_stop(&id, StopReason::DeadlineExceeded, message).await?;
        }
        for (id, limit) in queue_timeouts {
            let message = format!("the job waited in the queue longer than its maximum queued duration of {limit} s");
            self.finish_failed(&id, EndReason::MaxQueuedDurationExceeded, message).await?;
        }
        let due: Vec<String> = self.retry_at.iter().filter(|(_, at)| **at <= now).map(|(id, _)| id.clone()).collect();
        for id in due {
            self.retry_at.remove(&id);
            let Some(active) = self.jobs.get_mut(&id) else { continue };
            if active.state() != JobState::PendingRetry {
                continue;
            }
            let r = &mut active.row.runtime;
            r.state = JobState::Queueing;
            r.run += 1;
            r.reason = Some("Queued".into());
            r.message = Some(format!("restarted after a failed run (job retry {})", r.job_retries));
            r.queued_at = Some(now);
            self.dirty = true;
            self.save(&id, vec![event(&id, EventType::Normal, "Queued", "the job is restarted after a failed run")])
                .await?;
        }
        if self.next_archive.is_some_and(|at| at <= now) {
            for id in self.store.jobs_due_for_archive(now).await? {
                let Some(mut row) = self.store.job(id.clone()).await? else { continue };
                let finished = row.runtime.completed_at.unwrap_or(now);
                row.runtime.state = JobState::Archived;
                row.runtime.reason = Some("Archived".into());
                // Its logs go later, by their own rule (`log_removal.rs`).
                let logs_go = match (row.runtime.completed_at, row.logs.expire_at) {
                    (Some(finished), Some(expire_at)) => {
                        let (at, policy) = self.log_retention.removal(finished, expire_at);
                        let after = jobdeck_api::duration_in_words(at.saturating_sub(finished).max(0) / 1000);
                        if at <= now {
                            format!("its logs go now ({})", policy.in_words())
                        } else {
                            format!("its logs stay until {after} after it finished ({})", policy.in_words())
                        }
                    }
                    _ => "its logs stay".to_string(),
                };
                row.runtime.message = Some(format!(
                    "archived {} s after it finished; its record stays readable, {logs_go}",
                    now.saturating_sub(finished) / 1000
                ));
                let message = row.runtime.message.clone().unwrap_or_default();
                self.store
                    .update_job_runtime(
                        id.clone(),
                        row.runtime,
                        None,
                        vec![event(&id, EventType::Normal, "Archived", message)],
                    )
                    .await?;
            }
            self.next_archive = self.store.next_archive_time().await?;
        }
        self.remove_due_logs_when_time(now).await?;
        self.hold_logs_to_budget_when_time(now).await
    }
}
