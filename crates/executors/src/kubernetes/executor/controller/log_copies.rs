//! Copies of pods' logs into the log store, one task per pod, restarted
//! with a growing pause when a copy breaks.

use super::*;

impl ClusterController {
    pub(super) fn spawn_log_copy(&mut self, job_id: &str, run: i64, uid: &str, pod: String, index: i64, attempt: i64) {
        let pods = self.shared.pods();
        let logs = self.shared.host.logs().clone();
        let commands = self.commands.clone();
        let owner = job_id.to_string();
        let job_id = job_id.to_string();
        let key = uid.to_string();
        let uid = uid.to_string();
        let cap = self.runs.get(&owner).and_then(|state| state.log_cap);
        let task = tokio::spawn(async move {
            let result =
                crate::kubernetes::pod_logs::copy_pod_log(&pods, &pod, &logs, &job_id, index, attempt, cap).await;
            if let Err(e) = &result {
                tracing::warn!(error = %jobdeck_core::error_chain(e), "kubernetes: a pod's log copy stopped");
            }
            if let Some(commands) = commands.upgrade() {
                let _ = commands.send(Command::LogCopied { job_id, run, uid, complete: result.is_ok() });
            }
        });
        if let Some((_, earlier)) = self.copies.insert(key, (owner, task.abort_handle())) {
            earlier.abort();
        }
    }

    /// Starts again the log copies that broke, once their pause is over,
    /// for pods that still exist.
    pub(super) fn retry_log_copies(&mut self, now: i64) {
        let mut due = Vec::new();
        for state in self.runs.values_mut() {
            if !state.log_collection {
                continue;
            }
            for (uid, tracked) in state.tracked.iter_mut() {
                if tracked.log_started || tracked.logs_copied || tracked.log_retry_at.is_none_or(|at| at > now) {
                    continue;
                }
                if !self.pods.contains_key(uid) {
                    // The pod is gone, and its log with it: what was copied
                    // is all there is.
                    tracked.log_retry_at = None;
                    continue;
                }
                tracked.log_started = true;
                tracked.log_retry_at = None;
                due.push((
                    state.job_id.clone(),
                    state.run,
                    uid.clone(),
                    tracked.pod_name.clone(),
                    tracked.completion_index,
                    tracked.attempt,
                ));
            }
        }
        for (job_id, run, uid, pod, index, attempt) in due {
            self.spawn_log_copy(&job_id, run, &uid, pod, index, attempt);
        }
    }
}
