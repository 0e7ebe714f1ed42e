//! The runs an executor drives, one controller task each: what `start`,
//! `stop` and a run's end share between the local and the Slurm executor.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::mpsc;

use jobdeck_core::executor::{ExecutorError, ExecutorHost, RunOutcome};

/// Job id → its current run and the channel to its controller.
pub struct Runs<M> {
    runs: Mutex<HashMap<String, (i64, mpsc::UnboundedSender<M>)>>,
}

impl<M> Default for Runs<M> {
    fn default() -> Self {
        Self { runs: Mutex::new(HashMap::new()) }
    }
}

impl<M> Runs<M> {
    /// Registers run `run` of `job_id` with its controller's channel.
    /// `Ok(false)` when that very run is already going (starting it again
    /// does nothing); an error when another run of the job still is.
    pub fn register(&self, job_id: &str, run: i64, tx: mpsc::UnboundedSender<M>) -> Result<bool, ExecutorError> {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((going, _)) = runs.get(job_id) {
            if *going == run {
                return Ok(false);
            }
            return Err(ExecutorError::Failed(format!(
                "job {job_id} still has run {going} going; run {run} cannot start"
            )));
        }
        runs.insert(job_id.to_string(), (run, tx));
        Ok(true)
    }

    /// Sends `message` to the controller of that run; `false` when the
    /// executor does not drive it.
    pub fn send(&self, job_id: &str, run: i64, message: M) -> bool {
        let runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        match runs.get(job_id) {
            Some((going, tx)) if *going == run => tx.send(message).is_ok(),
            _ => false,
        }
    }

    /// A stop for that run, or, when the executor does not drive it, its
    /// `Stopped` outcome at once (the trait's contract).
    pub fn stop(&self, host: &ExecutorHost, job_id: &str, run: i64, message: M) {
        if !self.send(job_id, run, message) {
            host.outcome(job_id, run, RunOutcome::Stopped);
        }
    }

    /// The run ended: forgets it and reports its outcome.
    pub fn finish(&self, host: &ExecutorHost, job_id: &str, run: i64, outcome: RunOutcome) {
        {
            let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
            if runs.get(job_id).is_some_and(|(going, _)| *going == run) {
                runs.remove(job_id);
            }
        }
        host.outcome(job_id, run, outcome);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_has_one_run_at_a_time() {
        let runs: Runs<u8> = Runs::default();
        let (tx, mut rx) = mpsc::unbounded_channel();
        assert!(runs.register("j", 0, tx.clone()).unwrap());
        assert!(!runs.register("j", 0, tx.clone()).unwrap(), "starting the same run again does nothing");
        assert!(runs.register("j", 1, tx.clone()).unwrap_err().to_string().contains("still has run 0 going"));
        assert!(runs.send("j", 0, 7));
        assert_eq!(rx.try_recv(), Ok(7));
        assert!(!runs.send("j", 1, 7), "another run is not this one");
        assert!(!runs.send("other", 0, 7));
    }
}
