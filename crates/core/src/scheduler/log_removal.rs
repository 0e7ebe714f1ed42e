//! Removing finished jobs' logs, metrics, run directories and containers
//! when the retention rule says (`crate::retention`; docs/api.md, "Log
//! retention"). The scheduler does it, so a job that is started again can
//! never lose the logs of its new run: a job it looks after (queued,
//! running, stopping) is never touched, and the store records a removal
//! only of a job that is still finished. The record, the events and the
//! failure analysis (kept as it was just before) stay.

use jobdeck_api::{duration_in_words, LogRemovalPolicy};
use jobdeck_store::LogsRemoved;

use super::*;
use crate::failure::of_job::analyse_job;
use crate::retention::{LogBudget, LogRetentionRule};

/// The longest the scheduler goes without asking the store when the next
/// job's logs fall due (a job finished meanwhile says so itself:
/// `Scheduler::save`).
const LOOK_AT_LEAST_EVERY_MS: i64 = 600_000;

/// Jobs removed in one pass of the loop: each removes files and perhaps
/// containers, and the loop takes messages in between.
const BATCH: i64 = 16;

/// How often the logs are held against the disk budget.
const BUDGET_LOOK_EVERY_MS: i64 = 60_000;

impl SchedulerHandle {
    /// Removes the logs of every job due at `now` (the timer does this with
    /// the clock's time; a test gives a time of its own), and answers how
    /// many jobs lost theirs.
    pub async fn remove_due_logs(&self, now: i64) -> SchedulerResult<usize> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Msg::RemoveDueLogs { now, reply })
            .map_err(|_| SchedulerError::internal("the scheduler is not running"))?;
        answer.await.map_err(|_| SchedulerError::internal("the scheduler dropped a removal of logs"))?
    }

    /// Sets the workspace's minimum log retention an admin chose in the
    /// console (`Some`, ms) or withdraws it for the config's (`None`):
    /// every finished job is timed by it again, and jobs whose logs it lets
    /// go are removed at the next look, which comes at once. Answers the
    /// rule now in force.
    pub async fn set_minimum_retention(&self, minimum_ms: Option<i64>) -> SchedulerResult<LogRetentionRule> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Msg::SetMinimumRetention { minimum_ms, reply })
            .map_err(|_| SchedulerError::internal("the scheduler is not running"))?;
        answer.await.map_err(|_| SchedulerError::internal("the scheduler dropped a change of the log retention"))?
    }

    /// Measures the running jobs' logs now (the timer does every minute),
    /// telling each job whose logs reached its log cap.
    pub async fn measure_running_logs(&self) -> SchedulerResult<()> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Msg::MeasureRunningLogs { reply })
            .map_err(|_| SchedulerError::internal("the scheduler is not running"))?;
        answer.await.map_err(|_| SchedulerError::internal("the scheduler dropped a measuring of logs"))
    }

    /// Measures the running jobs' logs and, past the disk budget, removes
    /// the logs of the jobs that finished longest ago (the timer does this
    /// every minute); answers how many jobs lost theirs.
    pub async fn hold_logs_to_budget(&self) -> SchedulerResult<usize> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Msg::HoldLogsToBudget { reply })
            .map_err(|_| SchedulerError::internal("the scheduler is not running"))?;
        answer.await.map_err(|_| SchedulerError::internal("the scheduler dropped a look at the disk budget"))?
    }
}

impl Scheduler {
    /// The console's minimum log retention set or withdrawn
    /// ([`SchedulerHandle::set_minimum_retention`]); kept first, so a
    /// restart reads it, and published to the handlers.
    pub(super) async fn set_minimum_retention(&mut self, minimum_ms: Option<i64>) -> SchedulerResult<LogRetentionRule> {
        self.store.set_console_minimum_retention(minimum_ms).await?;
        let rule = self.log_retention.with_console_minimum(&self.config.logs, minimum_ms);
        self.store.use_log_retention(rule.minimum_ms, rule.maximum_ms).await?;
        self.log_retention = rule;
        self.log_retention_published.send_replace(rule);
        self.next_log_removal = 0;
        Ok(rule)
    }

    /// The timer's part: one batch when the next job's logs fall due, then
    /// the time the one after falls due (at once after a full batch).
    pub(super) async fn remove_due_logs_when_time(&mut self, now: i64) -> SchedulerResult<()> {
        if now < self.next_log_removal {
            return Ok(());
        }
        // Set first: a look the store fails waits for a later one rather
        // than being tried again at once, round after round.
        let latest = now.saturating_add(LOOK_AT_LEAST_EVERY_MS);
        self.next_log_removal = latest;
        let (looked, removed) = self.remove_due_logs_batch(now).await?;
        // A full batch that removed some: more may be due. One that removed
        // none (files that cannot be removed) waits for a later look.
        self.next_log_removal = if looked == BATCH as usize && removed > 0 {
            now
        } else if let Some(until) = self.log_retention.paused_until.filter(|_| self.log_retention.paused_at(now)) {
            until.min(latest)
        } else {
            let next = self.store.next_logs_due().await?.unwrap_or(latest);
            // Past due yet not removed: left for a later look, not looked
            // at again at once.
            if next <= now {
                latest
            } else {
                next.min(latest)
            }
        };
        Ok(())
    }

    /// The timer's part of the disk budget: a look every minute.
    pub(super) async fn hold_logs_to_budget_when_time(&mut self, now: i64) -> SchedulerResult<()> {
        if now < self.next_budget_look {
            return Ok(());
        }
        self.next_budget_look = now.saturating_add(BUDGET_LOOK_EVERY_MS);
        self.hold_logs_to_budget(now).await.map(|_| ())
    }

    /// Past the budget's [`LogBudget::REMOVE_ABOVE`], removes the logs of the
    /// jobs that finished longest ago until the logs take at most
    /// [`LogBudget::REMOVE_DOWN_TO`]; a running job's never. When running
    /// jobs' logs alone stay past it, the largest of them is cut
    /// ([`Scheduler::cut_largest_running_logs`]). Answers how many jobs
    /// lost their logs.
    pub(super) async fn hold_logs_to_budget(&mut self, now: i64) -> SchedulerResult<usize> {
        let Some(bytes) = self.config.logs.disk_budget else { return Ok(0) };
        let budget = LogBudget { bytes };
        self.measure_running_logs_now().await;
        // This measuring is the minute's: the regular one waits a minute.
        self.next_log_measure = now.saturating_add(super::quotas::LOG_MEASURE_EVERY_MS);
        let before = self.store.log_bytes_total().await?;
        if !budget.over(before) {
            return Ok(0);
        }
        let mut used = before;
        let mut removed = 0;
        'batches: while !budget.enough(used) {
            let longest = self.store.jobs_with_logs_longest_finished(BATCH).await?;
            let looked = longest.len();
            let mut freed_any = false;
            for job in longest {
                let cut = BudgetCut { used, budget: bytes };
                if let Some(freed) = self.remove_logs_of(job, now, Some(cut)).await? {
                    used = used.saturating_sub(freed);
                    removed += 1;
                    freed_any = true;
                }
                if budget.enough(used) {
                    break 'batches;
                }
            }
            if looked < BATCH as usize || !freed_any {
                break;
            }
        }
        if budget.over(used) {
            // Running jobs' logs alone fill it: the largest stops growing
            // before the disk fills and everyone's writes fail.
            self.cut_largest_running_logs(used, bytes).await?;
        }
        tracing::info!(
            removed,
            before,
            after = used,
            budget = bytes,
            "finished jobs' logs removed for the disk budget"
        );
        Ok(removed)
    }

    /// Cuts the logs of the running job whose logs take the most space,
    /// unless they are cut already: each of its replicas' logs ends with a
    /// line saying why and keeps no more for the rest of the run, and the
    /// job gets a `LogsCut` event. What was stored stays readable. Only the
    /// largest is ever cut: smaller ones keep writing, and one that grows
    /// past it is cut at a later look.
    async fn cut_largest_running_logs(&mut self, used: i64, budget: i64) -> SchedulerResult<()> {
        let running: Vec<String> =
            self.jobs.values().filter(|a| a.placement().is_some()).map(|a| a.row.id.clone()).collect();
        let logs = self.logs.clone();
        let largest = tokio::task::spawn_blocking(move || {
            running.into_iter().map(|id| (super::quotas::directory_bytes(&logs.job_dir(&id)), id)).max()
        })
        .await
        .map_err(|e| SchedulerError::internal(format!("measuring running logs failed: {e}")))?;
        let Some((bytes, id)) = largest.filter(|(bytes, id)| *bytes > 0 && !self.logs.is_cut(id)) else {
            tracing::warn!(
                used,
                budget,
                "the logs of running jobs alone take the disk budget; the largest is cut already"
            );
            return Ok(());
        };
        let why = format!(
            "the logs of running jobs alone take {} of the workspace's {} disk budget for logs ([logs] \
             disk_budget), and this job's take the most ({})",
            jobdeck_api::format_bytes(used),
            jobdeck_api::format_bytes(budget),
            jobdeck_api::format_bytes(bytes)
        );
        if let Err(e) =
            self.logs.cut(&id, &format!("jobdeck: this log is cut here: {why}; the lines after this one are not kept"))
        {
            tracing::warn!(job = %id, error = %crate::error_chain(&e), "cannot cut a running job's logs");
            return Ok(());
        }
        let message = format!(
            "its logs are cut: {why}. Each replica's log ends with a line saying so and keeps no more lines for \
             the rest of this run; what was written stays"
        );
        self.store.record_event(event(&id, EventType::Warning, "LogsCut", message)).await?;
        tracing::warn!(job = %id, used, budget, bytes, "a running job's logs are cut for the disk budget");
        Ok(())
    }

    /// Every due job, batch after batch.
    pub(super) async fn remove_all_due_logs(&mut self, now: i64) -> SchedulerResult<usize> {
        let mut total = 0;
        loop {
            let (looked, removed) = self.remove_due_logs_batch(now).await?;
            total += removed;
            // A batch that removed nothing (jobs the scheduler looks after
            // again) would come back the same: stop there.
            if looked < BATCH as usize || removed == 0 {
                return Ok(total);
            }
        }
    }

    /// One batch: how many jobs were due, and how many lost their logs.
    async fn remove_due_logs_batch(&mut self, now: i64) -> SchedulerResult<(usize, usize)> {
        let rule = self.log_retention;
        if rule.paused_at(now) {
            return Ok((0, 0));
        }
        let due = self.store.jobs_with_logs_due(now, BATCH).await?;
        let looked = due.len();
        let mut removed = 0;
        for job in due {
            if self.remove_logs_of(job, now, None).await?.is_some() {
                removed += 1;
            }
        }
        Ok((looked, removed))
    }

    /// Removes a finished job's logs, by its retention or, with `cut`, by
    /// the disk budget; answers the bytes they took (`None`: not removed).
    async fn remove_logs_of(&mut self, job: JobRow, now: i64, cut: Option<BudgetCut>) -> SchedulerResult<Option<i64>> {
        if self.jobs.contains_key(&job.id) {
            return Ok(None);
        }
        let (Some(finished), Some(expire_at)) = (job.runtime.completed_at, job.logs.expire_at) else {
            return Ok(None);
        };
        let (kept_until, retention) = self.log_retention.removal(finished, expire_at);
        let policy = if cut.is_some() { LogRemovalPolicy::DiskBudget } else { retention };
        // The analysis reads the logs: made now, kept for after.
        let analysis = match analyse_job(&self.store, &self.logs, &self.config, &job).await {
            Ok(analysis) => Some(analysis).filter(|a| !a.err_class.is_empty()),
            Err(e) => {
                tracing::warn!(job = %job.id, error = %crate::error_chain(&e), "cannot keep a job's failure analysis");
                None
            }
        };
        let logs = self.logs.clone();
        let id = job.id.clone();
        match tokio::task::spawn_blocking(move || logs.remove_job(&id)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                // Left for the next look: nothing is recorded as removed
                // that is still there.
                tracing::error!(job = %job.id, error = %e, "cannot remove a job's logs");
                return Ok(None);
            }
            Err(e) => return Err(SchedulerError::internal(format!("the removal of a job's logs stopped: {e}"))),
        }
        if let Err(e) = self.executor.forget(&job.id).await {
            tracing::warn!(job = %job.id, error = %crate::error_chain(&e), "cannot clean up after a job whose logs went");
        }
        let message = match cut {
            None => removal_message(finished, expire_at, now, policy),
            Some(cut) => cut.message(finished, kept_until, now),
        };
        let event = event(&job.id, EventType::Normal, "LogsRemoved", message);
        let removed = LogsRemoved { job_id: job.id.clone(), at: now, policy, analysis, event };
        Ok(self.store.record_logs_removed(removed).await?)
    }
}

/// Where the logs stood when the disk budget took a job's.
#[derive(Debug, Clone, Copy)]
struct BudgetCut {
    used: i64,
    budget: i64,
}

impl BudgetCut {
    /// The event's sentence: when after the finish, how much earlier than
    /// its retention, and how full the budget was.
    fn message(&self, finished: i64, kept_until: i64, now: i64) -> String {
        let after = duration_in_words(now.saturating_sub(finished).max(0) / 1000);
        let retention = duration_in_words(kept_until.saturating_sub(finished).max(0) / 1000);
        format!(
            "its logs, metrics and run directory were removed {after} after it finished, before its retention of \
             {retention} ended, by the workspace's disk budget for logs: logs took {} of {}, and the jobs that \
             finished longest ago go first; its record, events and failure analysis stay",
            jobdeck_api::format_bytes(self.used),
            jobdeck_api::format_bytes(self.budget)
        )
    }
}

/// The event's sentence: what went, when after the finish, and which rule
/// said so (with the archive time it overrode).
fn removal_message(finished: i64, expire_at: i64, now: i64, policy: LogRemovalPolicy) -> String {
    let after = duration_in_words(now.saturating_sub(finished).max(0) / 1000);
    let own = duration_in_words(expire_at.saturating_sub(finished).max(0) / 1000);
    let why = match policy {
        LogRemovalPolicy::ArchiveTime => format!("its archive time of {own}"),
        other => format!("{} (its own archive time was {own})", other.in_words()),
    };
    format!("its logs, metrics and run directory were removed {after} after it finished, by {why}; its record, events and failure analysis stay")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_event_says_when_and_by_which_rule() {
        let day = 86_400_000;
        assert_eq!(
            removal_message(0, 600_000, 7 * day, LogRemovalPolicy::MinimumRetention),
            "its logs, metrics and run directory were removed 7 days after it finished, by the workspace's minimum \
             log retention (its own archive time was 10 minutes); its record, events and failure analysis stay"
        );
        assert!(removal_message(0, 3 * day, 3 * day, LogRemovalPolicy::ArchiveTime)
            .contains("by its archive time of 3 days;"));
    }
}
