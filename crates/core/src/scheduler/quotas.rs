//! Quotas in the scheduler: a job over its creator's quota waits in the
//! queue with the reason in words; one that could never fit under it, or
//! one more than the queue allows, is refused when it would enter the
//! queue. And what each job's logs take on disk, measured when a run ends,
//! every minute for running jobs, and once at start.

use std::collections::HashMap;
use std::path::Path;

use jobdeck_api::Role;

use super::*;
use crate::quota::{Held, Needs, QuotaRules};

/// How often the logs of running jobs are measured.
pub(super) const LOG_MEASURE_EVERY_MS: i64 = 60_000;

/// What a job holds once admitted.
pub(super) fn needs(resolved: &ResolvedSpec) -> Needs {
    Needs { gpus: resolved.shape.gpus.max(0) * resolved.parallelism, replicas: resolved.parallelism }
}

/// The bytes of every file in a job's log directory (its logs, their
/// indexes and the failure analysis' caches); 0 when it has none.
pub fn directory_bytes(dir: &Path) -> i64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len() as i64)
        .sum()
}

impl Scheduler {
    /// Reads the quotas anew (the config's, with the console's over them).
    pub(super) async fn load_quotas(&mut self) -> SchedulerResult<()> {
        self.quotas = QuotaRules::new(&self.config.quotas, self.store.quotas().await?);
        self.dirty = true;
        Ok(())
    }

    async fn role_of(&self, user: &str) -> SchedulerResult<Role> {
        Ok(self.store.user(user).await?.map_or(Role::default(), |u| u.role))
    }

    /// Refuses a job that is about to enter the queue when it could never
    /// run under its creator's quota, or when their queue is full.
    pub(super) async fn check_entry(&self, owner: &str, resolved: &ResolvedSpec) -> SchedulerResult<()> {
        if self.quotas.is_empty() {
            return Ok(());
        }
        let limits = self.quotas.limits_for(owner, self.role_of(owner).await?);
        if let Some((field, message)) = limits.never_fits(needs(resolved), &resolved.shape.name) {
            return Err(SchedulerError::OverQuota { field: Some(field), message });
        }
        let queued =
            self.jobs.values().filter(|a| a.state() == JobState::Queueing && a.row.created_by == owner).count() as i64;
        if let Some(message) = limits.queue_full(queued) {
            return Err(SchedulerError::OverQuota { field: None, message });
        }
        Ok(())
    }

    /// What every user holds now, for an admission pass; `None` when no
    /// quota limits anything.
    pub(super) async fn quota_tally(&self) -> SchedulerResult<Option<QuotaTally>> {
        if self.quotas.is_empty() {
            return Ok(None);
        }
        let mut held: HashMap<String, Held> = HashMap::new();
        for active in self.jobs.values() {
            if let Some(placement) = active.placement() {
                let h = held.entry(active.row.created_by.clone()).or_default();
                h.replicas += placement.slots.len() as i64;
                h.gpus += placement.slots.iter().map(|s| s.gpu_ids.len() as i64).sum::<i64>();
            }
        }
        if self.quotas.limits_log_bytes() {
            for (user, bytes) in self.store.log_bytes_by_user().await? {
                held.entry(user).or_default().log_bytes = bytes;
            }
        }
        Ok(Some(QuotaTally { roles: self.store.user_roles().await?, held }))
    }

    /// Measures the logs of the jobs `ids` on a blocking thread and stores
    /// what they take; the scheduler does not wait for it.
    pub(super) fn measure_logs(&self, ids: Vec<String>) {
        if ids.is_empty() {
            return;
        }
        let (store, logs) = (self.store.clone(), self.logs.clone());
        tokio::spawn(async move {
            measure_and_record(store, logs, ids).await;
        });
    }

    /// Measures the running jobs' logs and waits until what they take is
    /// stored (the disk budget's look needs it now); a job whose logs
    /// reached its log cap gets an event saying so, once a run.
    pub(super) async fn measure_running_logs_now(&mut self) {
        let ids: Vec<String> =
            self.jobs.values().filter(|a| a.placement().is_some()).map(|a| a.row.id.clone()).collect();
        if ids.is_empty() {
            return;
        }
        measure_and_record(self.store.clone(), self.logs.clone(), ids.clone()).await;
        if self.config.logs.job_log_cap.is_some() {
            // The cap counts the stored lines, not the compressed files.
            let logs = self.logs.clone();
            let stored = tokio::task::spawn_blocking(move || {
                ids.into_iter()
                    .map(|id| (i64::try_from(logs.stored_bytes(&id)).unwrap_or(i64::MAX), id))
                    .collect::<Vec<_>>()
            })
            .await
            .unwrap_or_default();
            self.tell_log_caps(&stored).await;
        }
    }

    /// An event for each running job whose stored lines reached its log
    /// cap (each replica's log then ends with a line saying so and keeps no
    /// more: `LogWriter::with_cap`), once a run.
    async fn tell_log_caps(&mut self, sizes: &[(i64, String)]) {
        let Some(cap) = self.config.logs.job_log_cap else { return };
        let jobs = &self.jobs;
        self.log_caps_told.retain(|(id, run)| jobs.get(id).is_some_and(|a| a.row.runtime.run == *run));
        for (bytes, id) in sizes {
            let Some(active) = self.jobs.get(id).filter(|_| *bytes >= cap) else { continue };
            let key = (id.clone(), active.row.runtime.run);
            if self.log_caps_told.contains(&key) {
                continue;
            }
            let share = active.resolved.log_cap_per_replica.unwrap_or(0);
            let message = format!(
                "its logs reached the job's log cap of {} ([logs] job_log_cap): each replica keeps the first {} of \
                 its log, which then ends with a line saying so; later lines are not kept",
                jobdeck_api::format_bytes(cap),
                jobdeck_api::format_bytes(i64::try_from(share).unwrap_or(i64::MAX))
            );
            match self.store.record_event(event(id, EventType::Warning, "LogCapReached", message)).await {
                Ok(()) => {
                    self.log_caps_told.insert(key);
                }
                Err(e) => {
                    tracing::warn!(job = %id, error = %crate::error_chain(&e), "cannot say a log reached its cap")
                }
            }
        }
    }

    /// Measures every job's logs once, when the server starts (a job whose
    /// run ended while the server was down was not measured then).
    pub(super) fn measure_all_logs(&self) {
        let Ok(entries) = std::fs::read_dir(self.logs.root()) else { return };
        let ids = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        self.measure_logs(ids);
    }

    /// Measures the running jobs' logs when a minute has passed since the
    /// last time (a directory listing a job: the scheduler waits for it).
    pub(super) async fn measure_running_logs(&mut self, now: i64) {
        if now < self.next_log_measure {
            return;
        }
        self.next_log_measure = now + LOG_MEASURE_EVERY_MS;
        self.measure_running_logs_now().await;
    }
}

/// Measures the logs of the jobs `ids` on a blocking thread and stores
/// what they take on disk.
async fn measure_and_record(store: Store, logs: LogStore, ids: Vec<String>) {
    let measured = tokio::task::spawn_blocking(move || {
        ids.into_iter().map(|id| (directory_bytes(&logs.job_dir(&id)), id)).collect::<Vec<_>>()
    })
    .await;
    let Ok(measured) = measured else { return };
    let now = jobdeck_store::now_millis();
    let sizes: Vec<(String, i64)> = measured.into_iter().map(|(bytes, id)| (id, bytes)).collect();
    if let Err(e) = store.set_log_bytes_many(sizes, now).await {
        tracing::warn!(error = %crate::error_chain(&e), "cannot record what logs take on disk");
    }
}

/// What every user holds, kept up to date through one admission pass.
pub(super) struct QuotaTally {
    roles: HashMap<String, Role>,
    held: HashMap<String, Held>,
}

impl QuotaTally {
    /// Why `active` may not be admitted now, if its creator's quota says so.
    pub(super) fn refusal(&self, rules: &QuotaRules, active: &Active) -> Option<String> {
        self.refusal_for(rules, &active.row.created_by, &active.resolved)
    }

    /// Why a job of `owner`'s resolved as `resolved` may not be admitted
    /// now, if `owner`'s quota says so.
    pub(super) fn refusal_for(&self, rules: &QuotaRules, owner: &str, resolved: &ResolvedSpec) -> Option<String> {
        // A user the store does not know counts as the least powerful role.
        let role = self.roles.get(owner).copied().unwrap_or(Role::Viewer);
        let held = self.held.get(owner).copied().unwrap_or_default();
        rules.limits_for(owner, role).over(held, needs(resolved))
    }

    /// Counts an admitted job's resources for its creator.
    pub(super) fn admitted(&mut self, active: &Active) {
        let needs = needs(&active.resolved);
        let held = self.held.entry(active.row.created_by.clone()).or_default();
        held.gpus += needs.gpus;
        held.replicas += needs.replicas;
    }
}
