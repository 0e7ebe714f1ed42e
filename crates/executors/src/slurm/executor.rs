//! The Slurm executor: one controller task per run submits it with `sbatch`
//! (one job array, `script.rs`), reads its tasks with `scontrol` every poll
//! interval, copies their output into the log store, retries failed
//! replicas within the job's limits with a new one-task submission held
//! back by its back-off, and cancels what is left when the run ends or is
//! stopped.
//!
//! A *unit* is what Slurm starts and ends as one: an array task, which is
//! one replica, or for a multi-worker job the one task whose allocation
//! holds every worker (one replica per rank). Failures are counted per unit.
//!
//! Restart safety: every attempt's row is stored before `sbatch` runs, with
//! its submission's number in its executor state, and gets the array's job
//! id as soon as `sbatch` answers. A restarted server takes over the rows of
//! unfinished attempts: one whose id is known is read from Slurm again (or
//! from its exit file when Slurm has forgotten it); one whose id is not
//! known is looked up by the submission's name and comment (`squeue`) and
//! submitted only if Slurm has no such job, so nothing runs twice. The log
//! copy resumes exactly where it stopped: the lines already stored are
//! counted, and the output file is read on from the line after them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use jobdeck_api::{EndReason, FieldErrors, JobRequirements, JobSpec, ReadinessIssue, ReplicaPhase};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::cli::{SlurmTools, TaskState};
use super::output::Tail;
use super::script::{self, SubmissionInput};
use super::settings::SlurmSettings;
use super::states::{ended_reason, pending_issue};
use crate::run_ledger::{self, Decision, Ending, Failure, RetryLimits, RunLedger};
use crate::runs::Runs;
use jobdeck_core::config::{Config, ConfigError, ExecutorKind};
use jobdeck_core::executor::{
    replica_id, BoxFuture, EventType, Executor, ExecutorError, ExecutorHost, JobLaunch, ReplicaObservation, RunOutcome,
    StopReason,
};
use jobdeck_core::failure::{classify, AttemptEnd};
use jobdeck_store::ReplicaRow;

/// What the executor keeps in an attempt's `executor_state`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct AttemptState {
    /// The run's submission this attempt belongs to (0 for the first).
    submission: u32,
    /// The array's job id, once `sbatch` answered.
    #[serde(default)]
    array_job_id: Option<u64>,
    /// The array task id.
    task: i64,
    /// A multi-worker job's rank.
    #[serde(default)]
    rank: Option<i64>,
    /// Unix ms: when the submission may start (a retry's back-off).
    #[serde(default)]
    retry_at: Option<i64>,
}

struct Shared {
    host: ExecutorHost,
    settings: SlurmSettings,
    tools: SlurmTools,
    /// `<log dir>`: one directory per job.
    log_dir: PathBuf,
    /// What jobs inherit of the server's environment (`PATH`, …).
    base_env: Vec<(String, String)>,
    runs: Runs<Control>,
    /// Whether this server's host is one of the cluster's nodes (a job
    /// placed there without a container runs beside the server).
    server_host_is_node: bool,
}

/// Runs jobs on a Slurm cluster (docs/slurm.md).
#[derive(Clone)]
pub struct SlurmExecutor {
    shared: Arc<Shared>,
}

/// The variables of the server's environment the Slurm tools need, and jobs
/// get: the basics a login shell has, and `SLURM_CONF` when set.
const TOOL_ENV: &[&str] = &["PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "SHELL", "TMPDIR", "SLURM_CONF"];

impl SlurmExecutor {
    pub fn from_config(config: &Config, host: ExecutorHost) -> Result<Self, ConfigError> {
        let settings = SlurmSettings::from_table(&config.executor.slurm)?;
        let log_dir = settings.log_dir.clone().unwrap_or_else(|| config.data_dir.join("slurm"));
        let env: Vec<(String, String)> =
            std::env::vars().filter(|(name, _)| TOOL_ENV.contains(&name.as_str())).collect();
        let base_env = env.iter().filter(|(n, _)| n != "SLURM_CONF").cloned().collect();
        let (settings_for_nodes, env_for_nodes) = (settings.clone(), env.clone());
        Ok(Self {
            shared: Arc::new(Shared {
                host,
                tools: SlurmTools::new(settings.clone(), env),
                settings,
                log_dir,
                base_env,
                runs: Runs::default(),
                server_host_is_node: host_is_a_node(&settings_for_nodes, &env_for_nodes),
            }),
        })
    }

    fn spawn(&self, controller: SlurmRunController, stop_rx: mpsc::UnboundedReceiver<Control>) {
        tokio::spawn(controller.run(stop_rx));
    }

    /// Registers a run; `None` when it is already going.
    fn register(&self, launch: &JobLaunch) -> Result<Option<mpsc::UnboundedReceiver<Control>>, ExecutorError> {
        let (tx, rx) = mpsc::unbounded_channel();
        Ok(self.shared.runs.register(&launch.job_id, launch.run, tx)?.then_some(rx))
    }
}

/// Whether this machine's host name (without its domain) is one of the
/// cluster's nodes, as `sinfo` lists them; a cluster that cannot be asked
/// counts as one, so that not knowing is never silent.
fn host_is_a_node(settings: &SlurmSettings, env: &[(String, String)]) -> bool {
    let short = |name: &str| name.split('.').next().unwrap_or(name).trim().to_ascii_lowercase();
    let host = short(&jobdeck_core::config::MachineInfo::detect().hostname);
    let listed = std::process::Command::new(settings.command("sinfo"))
        .args(["--noheader", "--Node", "--format=%N"])
        .env_clear()
        .envs(env.iter().cloned())
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    match listed {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).lines().any(|node| short(node) == host),
        _ => true,
    }
}

impl Executor for SlurmExecutor {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::Slurm
    }

    fn isolation_warning(&self) -> Option<String> {
        (!self.shared.settings.pyxis && self.shared.server_host_is_node).then(|| {
            "Jobs run on Slurm nodes without containers (no pyxis), and this server's host is one of them: a job \
             placed here runs as the server's user and can read what the server can."
                .to_string()
        })
    }

    fn requirements(&self) -> JobRequirements {
        JobRequirements {
            // A batch script runs a command; with pyxis it runs in the image.
            command_required: true,
            image_required: self.shared.settings.pyxis,
            image_ignored: !self.shared.settings.pyxis,
            refused_env_names: script::REFUSED_ENV_NAMES.iter().map(|n| n.to_string()).collect(),
            ..JobRequirements::default()
        }
    }

    fn check_spec(&self, spec: &JobSpec) -> FieldErrors {
        script::check_spec(spec, &self.shared.settings)
    }

    fn notes(&self) -> Vec<String> {
        let images = if self.shared.settings.pyxis {
            "jobs run in their image with pyxis".to_string()
        } else {
            "images are ignored (no pyxis)".to_string()
        };
        vec![format!(
            "Slurm: jobs are submitted with {}; their output goes to {}; {images}",
            self.shared.settings.command("sbatch").display(),
            self.shared.log_dir.display()
        )]
    }

    fn mode(&self) -> Option<String> {
        Some("slurm".into())
    }

    fn start(&self, launch: JobLaunch) -> BoxFuture<'_, Result<(), ExecutorError>> {
        Box::pin(async move {
            let Some(stop_rx) = self.register(&launch)? else { return Ok(()) };
            let rows = self.shared.host.attempts(&launch.job_id).await?;
            let controller = SlurmRunController::new(self.shared.clone(), launch, &rows);
            self.spawn(controller, stop_rx);
            Ok(())
        })
    }

    fn stop(&self, job_id: &str, run: i64, reason: StopReason) -> BoxFuture<'_, Result<(), ExecutorError>> {
        let job_id = job_id.to_string();
        Box::pin(async move {
            self.shared.runs.stop(&self.shared.host, &job_id, run, Control::Stop(reason));
            Ok(())
        })
    }

    fn replace_env(&self, job_id: &str, run: i64, env: Vec<(String, String)>) -> bool {
        self.shared.runs.send(job_id, run, Control::Env(env))
    }

    fn recover(&self, runs: Vec<JobLaunch>) -> BoxFuture<'_, Result<(), ExecutorError>> {
        Box::pin(async move {
            for launch in runs {
                let Some(stop_rx) = self.register(&launch)? else { continue };
                let rows = self.shared.host.attempts(&launch.job_id).await?;
                let mut controller = SlurmRunController::new(self.shared.clone(), launch, &rows);
                controller.adopt(&rows);
                controller.judge_restored(&rows).await;
                self.spawn(controller, stop_rx);
            }
            Ok(())
        })
    }

    fn forget(&self, job_id: &str) -> BoxFuture<'_, Result<(), ExecutorError>> {
        let job_id = job_id.to_string();
        Box::pin(async move {
            if let Err(e) = self.shared.tools.cancel_named(&script::job_name(&job_id)).await {
                tracing::warn!(job = %job_id, error = %e, "cannot cancel a forgotten job's Slurm jobs");
            }
            let dir = self.shared.log_dir.join(&job_id);
            match tokio::fs::remove_dir_all(&dir).await {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(ExecutorError::Failed(format!("cannot remove {}: {e}", dir.display())))
                }
                _ => Ok(()),
            }
        })
    }
}

/// One replica attempt of the run.
struct Attempt {
    index: i64,
    attempt: i64,
    state: AttemptState,
    phase: ReplicaPhase,
    node: Option<String>,
    start: Option<i64>,
    tail: Option<Tail>,
    /// Said once: the attempt started.
    announced: bool,
}

/// What a run's controller is told.
enum Control {
    Stop(StopReason),
    /// The job's environment anew (its secret references were replaced).
    Env(Vec<(String, String)>),
}

/// One run of one job on Slurm: submits its array, polls it, copies its
/// output and retries within the limits.
struct SlurmRunController {
    shared: Arc<Shared>,
    launch: JobLaunch,
    /// Keyed by (completion index, attempt).
    attempts: BTreeMap<(i64, i64), Attempt>,
    submissions: u32,
    /// Next attempt number per completion index.
    next_attempt: BTreeMap<i64, i64>,
    /// Successes, counted failures (by unit: the array task, which for a
    /// multi-worker run is its allocation) and how the run is ending.
    ledger: RunLedger,
    cancelled: bool,
    /// When a job with a grace period of its own was sent SIGTERM: its
    /// running tasks are cancelled once the period is over.
    kill_at: Option<Instant>,
    /// Units to submit again, with their back-off.
    retries: Vec<(i64, Option<Duration>)>,
}

impl SlurmRunController {
    fn new(shared: Arc<Shared>, launch: JobLaunch, rows: &[ReplicaRow]) -> SlurmRunController {
        let mut next_attempt = BTreeMap::new();
        let mut submissions = 0;
        let limits = RetryLimits {
            backoff_limit: launch.resolved.backoff_limit,
            max_failure_retry: launch.resolved.max_failure_retry,
            disable_retry_on_program_error: launch.resolved.disable_retry_on_program_error,
        };
        let mut ledger = RunLedger::new(launch.resolved.index_count(), limits);
        for row in rows {
            let next = next_attempt.entry(row.completion_index).or_insert(launch.first_attempt);
            *next = (*next).max(row.attempt + 1);
            if row.run != launch.run {
                continue;
            }
            let state: AttemptState =
                row.executor_state.as_deref().and_then(|s| serde_json::from_str(s).ok()).unwrap_or_default();
            submissions = submissions.max(state.submission + 1);
            if row.phase == ReplicaPhase::Succeeded {
                ledger.succeed(row.completion_index);
            } else if counts_as_failure(row) {
                ledger.count_restored_failure(row.completion_index);
            }
        }
        SlurmRunController {
            shared,
            launch,
            attempts: BTreeMap::new(),
            submissions,
            next_attempt,
            ledger,
            cancelled: false,
            kill_at: None,
            retries: Vec::new(),
        }
    }

    fn workers(&self) -> i64 {
        self.launch.resolved.workers.max(1)
    }

    fn job_dir(&self) -> PathBuf {
        self.shared.log_dir.join(&self.launch.job_id)
    }

    /// The previous server may have been failing this run when it died:
    /// the stored failures decide again, so no task is submitted again that
    /// the limits had already given up on (the run then cancels what is
    /// left and ends failed).
    async fn judge_restored(&mut self, rows: &[ReplicaRow]) {
        let failures = rows.iter().filter(|r| r.run == self.launch.run && counts_as_failure(r)).collect::<Vec<_>>();
        let logs = self.shared.host.logs();
        let program_error = run_ledger::restored_program_error(
            logs,
            &self.launch.job_id,
            self.launch.resolved.log_collection,
            &failures,
        )
        .await;
        self.ledger.judge_restored(program_error);
    }

    /// Takes over the unfinished attempts a previous server left.
    fn adopt(&mut self, rows: &[ReplicaRow]) {
        for row in rows.iter().filter(|r| r.run == self.launch.run && !r.is_finished()) {
            let state: AttemptState =
                row.executor_state.as_deref().and_then(|s| serde_json::from_str(s).ok()).unwrap_or_default();
            let phase = if row.phase == ReplicaPhase::Running { ReplicaPhase::Running } else { ReplicaPhase::Pending };
            self.attempts.insert(
                (row.completion_index, row.attempt),
                Attempt {
                    index: row.completion_index,
                    attempt: row.attempt,
                    state,
                    phase,
                    node: row.node.clone(),
                    start: row.start_time,
                    tail: None,
                    announced: phase == ReplicaPhase::Running,
                },
            );
        }
    }

    async fn run(mut self, mut stop_rx: mpsc::UnboundedReceiver<Control>) {
        if self.ledger.is_ending() {
            // Restored failures had already ended the run: nothing is
            // submitted, and what is left is cancelled below.
        } else if self.attempts.is_empty() {
            // A new run (or one whose every attempt had ended: the store
            // decides what is left).
            let pending: Vec<i64> = if self.workers() > 1 {
                if self.ledger.succeeded().is_empty() {
                    vec![0]
                } else {
                    vec![]
                }
            } else {
                self.launch.resolved.indexes().into_iter().filter(|i| !self.ledger.succeeded().contains(i)).collect()
            };
            if !pending.is_empty() {
                self.shared
                    .host
                    .note(
                        &self.launch.job_id,
                        EventType::Normal,
                        "Executor",
                        "Slurm: the run is submitted with sbatch".into(),
                        None,
                    )
                    .await;
                self.submit(&pending, None).await;
            }
        } else {
            self.resubmit_unknown().await;
        }
        let interval = Duration::from_millis(self.shared.settings.poll_interval_ms);
        loop {
            self.poll().await;
            while let Some((task, wait)) = self.retries.pop() {
                if !self.ledger.is_ending() {
                    self.submit(&[task], wait).await;
                }
            }
            if let Some(outcome) = self.outcome() {
                self.shared.runs.finish(&self.shared.host, &self.launch.job_id, self.launch.run, outcome);
                return;
            }
            if self.ledger.is_ending() && !self.cancelled {
                self.cancel_all().await;
            }
            if self.kill_at.is_some_and(|at| Instant::now() >= at) {
                self.kill_at = None;
                self.kill_running().await;
            }
            tokio::select! {
                control = stop_rx.recv() => match control {
                    Some(Control::Stop(reason)) => self.begin_ending(Ending::Stop(reason)),
                    // Submissions from now on write the new values into
                    // their environment files.
                    Some(Control::Env(env)) => self.launch.env = env,
                    None => {}
                },
                () = tokio::time::sleep(interval) => {}
            }
        }
    }

    fn outcome(&self) -> Option<RunOutcome> {
        let all_done =
            self.attempts.values().all(|a| matches!(a.phase, ReplicaPhase::Succeeded | ReplicaPhase::Failed));
        self.ledger.outcome(all_done)
    }

    fn begin_ending(&mut self, ending: Ending) {
        if self.ledger.begin_ending(ending) {
            // The new ending cancels what is still queued or running.
            self.cancelled = false;
        }
    }

    /// The Slurm ids of the attempts that have not ended, those running
    /// or only those waiting.
    fn unfinished_ids(&self, running: Option<bool>) -> Vec<String> {
        let ids: BTreeSet<String> = self
            .attempts
            .values()
            .filter(|a| !matches!(a.phase, ReplicaPhase::Succeeded | ReplicaPhase::Failed))
            .filter(|a| running.is_none_or(|running| (a.phase == ReplicaPhase::Running) == running))
            .filter_map(|a| a.state.array_job_id.map(|id| format!("{id}_{}", a.state.task)))
            .collect();
        ids.into_iter().collect()
    }

    /// Ends what is left of the run. Without a grace period of the job's
    /// own, `scancel` does it with the cluster's `KillWait`; with one, what
    /// waits is cancelled, what runs gets SIGTERM now and is cancelled when
    /// the period is over (`kill_running`).
    async fn cancel_all(&mut self) {
        self.cancelled = true;
        let tools = &self.shared.tools;
        let result = match self.launch.resolved.termination_grace_period_seconds {
            None => tools.cancel(&self.unfinished_ids(None)).await,
            Some(grace) => {
                let running = self.unfinished_ids(Some(true));
                self.kill_at.get_or_insert(Instant::now() + Duration::from_secs(grace.unsigned_abs()));
                match tools.cancel(&self.unfinished_ids(Some(false))).await {
                    Ok(()) => tools.signal(&running, "TERM").await,
                    Err(e) => Err(e),
                }
            }
        };
        if let Err(e) = result {
            tracing::warn!(job = %self.launch.job_id, error = %e, "cannot cancel the run's Slurm jobs");
        }
    }

    /// The end of a grace period: `scancel` what still runs. Slurm ends a
    /// job its own way, SIGTERM again and SIGKILL after the cluster's
    /// `KillWait` (a SIGKILL sent with `scancel --signal` is turned into the
    /// same cancel), so a program gets at least its grace period and at
    /// most that plus `KillWait` (docs/slurm.md).
    async fn kill_running(&mut self) {
        if let Err(e) = self.shared.tools.cancel(&self.unfinished_ids(None)).await {
            tracing::warn!(job = %self.launch.job_id, error = %e, "cannot cancel the run's Slurm jobs");
        }
    }

    fn observation(&self, a: &Attempt) -> ReplicaObservation {
        let mut o = ReplicaObservation::pending(&self.launch.job_id, self.launch.run, a.index, a.attempt);
        o.phase = a.phase;
        o.node = a.node.clone();
        o.node_group = Some(self.launch.placement.node_group.clone());
        o.start_time = a.start;
        o.executor_state = serde_json::to_string(&a.state).ok();
        o.executor_id = a.state.array_job_id.map(|id| match a.state.rank {
            Some(rank) => format!("{id}_{} (rank {rank})", a.state.task),
            None => format!("{id}_{}", a.state.task),
        });
        o
    }

    async fn record(&self, observation: ReplicaObservation) {
        if let Err(e) = self.shared.host.replica(observation).await {
            tracing::error!(job = %self.launch.job_id, error = ?e, "cannot record a replica");
        }
    }

    /// Submits `indexes` (a retry: one) as a new array, after `wait`.
    async fn submit(&mut self, indexes: &[i64], wait: Option<Duration>) {
        let submission = self.submissions;
        self.submissions += 1;
        let retry_at = wait.map(|w| jobdeck_store::now_millis() + w.as_millis() as i64);
        // The attempts: per completion index, or per rank of one allocation.
        let mut keys = Vec::new();
        for &index in indexes {
            let ranks: Vec<Option<i64>> =
                if self.workers() > 1 { (0..self.workers()).map(Some).collect() } else { vec![None] };
            for rank in ranks {
                let replica_index = rank.unwrap_or(index);
                let attempt = *self.next_attempt.entry(replica_index).or_insert(self.launch.first_attempt);
                self.next_attempt.insert(replica_index, attempt + 1);
                let state = AttemptState { submission, array_job_id: None, task: index, rank, retry_at };
                self.attempts.insert(
                    (replica_index, attempt),
                    Attempt {
                        index: replica_index,
                        attempt,
                        state,
                        phase: ReplicaPhase::Pending,
                        node: None,
                        start: None,
                        tail: None,
                        announced: false,
                    },
                );
                keys.push((replica_index, attempt));
            }
        }
        // Stored before sbatch runs: a restart finds the submission either
        // way (by its comment when its id was never stored).
        for key in &keys {
            let a = &self.attempts[key];
            let mut o = self.observation(a);
            o.retry_at = retry_at;
            o.readiness_issue = Some(match wait {
                Some(wait) => {
                    ReadinessIssue { reason: "BackOff".into(), message: format!("retrying in {} s", wait.as_secs()) }
                }
                None => ReadinessIssue { reason: "Queueing".into(), message: "submitting to Slurm".into() },
            });
            self.record(o).await;
        }
        self.send(submission, &keys, indexes, wait).await;
    }

    /// Runs `sbatch` for a submission whose attempts are recorded.
    async fn send(&mut self, submission: u32, keys: &[(i64, i64)], indexes: &[i64], wait: Option<Duration>) {
        let job_dir = self.job_dir();
        let prepared =
            std::fs::create_dir_all(&job_dir).map_err(|e| format!("cannot create {}: {e}", job_dir.display()));
        let rendered = prepared.and_then(|_| {
            script::render(&SubmissionInput {
                launch: &self.launch,
                settings: &self.shared.settings,
                job_dir: &job_dir,
                indexes,
                submission,
                begin_after_seconds: wait.map(|w| w.as_secs()),
                base_env: &self.shared.base_env,
            })
        });
        let submitted = match rendered {
            Ok(sub) => {
                let variables = script::env_file(&job_dir, self.launch.run, submission);
                match crate::atomic_file::write_atomic(&variables, sub.env_file.as_bytes(), 0o600) {
                    Ok(()) => self
                        .shared
                        .tools
                        .submit(&sub.options, &sub.script, &sub.env, &job_dir)
                        .await
                        .map_err(|e| e.to_string()),
                    Err(e) => Err(format!("cannot write the job's variables to {}: {e}", variables.display())),
                }
            }
            Err(e) => Err(e),
        };
        match submitted {
            Ok(id) => {
                for key in keys {
                    if let Some(a) = self.attempts.get_mut(key) {
                        a.state.array_job_id = Some(id);
                    }
                    let mut o = self.observation(&self.attempts[key]);
                    o.retry_at = self.attempts[key].state.retry_at;
                    o.readiness_issue = Some(ReadinessIssue {
                        reason: "Queueing".into(),
                        message: format!("submitted to Slurm as job {id}"),
                    });
                    self.record(o).await;
                }
                self.shared
                    .host
                    .note(
                        &self.launch.job_id,
                        EventType::Normal,
                        "Submitted",
                        format!("submitted to Slurm as job {id} (array {})", script::array_spec(indexes)),
                        None,
                    )
                    .await;
            }
            Err(error) => {
                self.shared
                    .host
                    .note(
                        &self.launch.job_id,
                        EventType::Warning,
                        "SubmitFailed",
                        format!("sbatch failed: {error}"),
                        None,
                    )
                    .await;
                for key in keys.iter().copied() {
                    self.end_attempt(
                        key,
                        EndReason::StartError,
                        format!("sbatch could not submit it: {error}"),
                        None,
                        None,
                        None,
                    )
                    .await;
                }
            }
        }
    }

    /// After a restart: submissions whose `sbatch` answer was never stored
    /// are found by their comment, or submitted now.
    async fn resubmit_unknown(&mut self) {
        let mut unknown: BTreeMap<u32, Vec<(i64, i64)>> = BTreeMap::new();
        for (key, a) in &self.attempts {
            if a.state.array_job_id.is_none() {
                unknown.entry(a.state.submission).or_default().push(*key);
            }
        }
        for (submission, keys) in unknown {
            let name = script::job_name(&self.launch.job_id);
            let comment = script::comment(&self.launch.job_id, self.launch.run, submission);
            match self.shared.tools.find(&name, &comment).await {
                Ok(ids) if !ids.is_empty() => {
                    for key in &keys {
                        if let Some(a) = self.attempts.get_mut(key) {
                            a.state.array_job_id = Some(ids[0]);
                        }
                    }
                }
                Ok(_) => {
                    let mut indexes: Vec<i64> = keys.iter().map(|k| self.attempts[k].state.task).collect();
                    indexes.sort();
                    indexes.dedup();
                    let wait = keys
                        .iter()
                        .filter_map(|k| self.attempts[k].state.retry_at)
                        .max()
                        .map(|at| Duration::from_millis((at - jobdeck_store::now_millis()).max(0) as u64));
                    self.send(submission, &keys, &indexes, wait).await;
                }
                Err(e) => {
                    tracing::warn!(job = %self.launch.job_id, error = %e, "cannot look for an unrecorded submission");
                }
            }
        }
    }

    /// Reads every unfinished attempt's task from Slurm and moves it on.
    async fn poll(&mut self) {
        let ids: BTreeSet<u64> = self
            .attempts
            .values()
            .filter(|a| !matches!(a.phase, ReplicaPhase::Succeeded | ReplicaPhase::Failed))
            .filter_map(|a| a.state.array_job_id)
            .collect();
        for id in ids {
            let tasks = match self.shared.tools.show(id).await {
                Ok(tasks) => tasks,
                Err(e) => {
                    tracing::warn!(job = %self.launch.job_id, slurm_job = id, error = %e, "cannot read a Slurm job");
                    continue;
                }
            };
            let keys: Vec<(i64, i64)> = self
                .attempts
                .iter()
                .filter(|(_, a)| a.state.array_job_id == Some(id))
                .filter(|(_, a)| !matches!(a.phase, ReplicaPhase::Succeeded | ReplicaPhase::Failed))
                .map(|(k, _)| *k)
                .collect();
            for key in keys {
                let task_id = self.attempts[&key].state.task;
                let task = tasks.as_ref().and_then(|list| list.iter().find(|t| t.tasks.contains(&task_id)).cloned());
                self.observe(key, id, task).await;
            }
        }
    }

    /// Moves one attempt on from what Slurm says of its task (`None`: Slurm
    /// has forgotten it).
    async fn observe(&mut self, key: (i64, i64), array_job_id: u64, task: Option<TaskState>) {
        let job_dir = self.job_dir();
        let Some(task) = task else {
            // Forgotten by slurmctld: the exit file says how it ended.
            self.copy_output(key);
            let exit = read_exit_file(&script::exit_file(&job_dir, array_job_id, self.attempts[&key].state.task));
            match exit {
                Some(0) => {
                    self.end_attempt(
                        key,
                        EndReason::Completed,
                        "the command exited with code 0".into(),
                        Some(0),
                        None,
                        None,
                    )
                    .await
                }
                Some(code) => {
                    let message = format!("the command exited with code {code}");
                    self.end_attempt(key, EndReason::Error, message, Some(code), None, None).await
                }
                None => {
                    let message = "Slurm no longer knows the job and it left no exit code".to_string();
                    self.end_attempt(key, EndReason::Lost, message, None, None, None).await
                }
            }
            return;
        };
        match task.state.as_str() {
            "PENDING" | "REQUEUED" | "SUSPENDED" => {
                let retry_at = self.attempts[&key].state.retry_at.filter(|at| *at > jobdeck_store::now_millis());
                let a = &self.attempts[&key];
                let mut o = self.observation(a);
                o.retry_at = retry_at;
                o.readiness_issue = Some(pending_issue(&task.reason, retry_at));
                self.record(o).await;
            }
            "CONFIGURING" | "RUNNING" | "COMPLETING" | "SIGNALING" | "RESIZING" => {
                if let Some(a) = self.attempts.get_mut(&key) {
                    a.phase = ReplicaPhase::Running;
                    a.node = task.node.clone().or(a.node.take());
                    a.start = a.start.or(task.start).or(Some(jobdeck_store::now_millis()));
                }
                self.copy_output(key);
                if let Some(a) = self.attempts.get_mut(&key).filter(|a| !a.announced) {
                    a.announced = true;
                    let o = self.observation(&self.attempts[&key]);
                    self.record(o).await;
                    let replica = replica_id(&self.launch.job_id, key.0, key.1);
                    let node = task.node.clone().unwrap_or_default();
                    let how = format!(" as Slurm job {array_job_id}_{}", task.tasks.first().copied().unwrap_or(0));
                    self.shared.host.note_replica_started(&self.launch.job_id, &replica, key.1, &node, &how).await;
                }
            }
            _ => {
                if let Some(a) = self.attempts.get_mut(&key) {
                    a.node = task.node.clone().or(a.node.take());
                    a.start = a.start.or(task.start);
                }
                self.copy_output(key);
                let exit_file = read_exit_file(&script::exit_file(
                    &job_dir,
                    array_job_id,
                    task.tasks.first().copied().unwrap_or(0),
                ));
                let (reason, message) = ended_reason(&task, self.ledger.ending());
                let code = exit_file.or(task.exit_code.filter(|_| task.signal.is_none()));
                let signal = task.signal.filter(|_| exit_file.is_none());
                self.end_attempt(key, reason, message, code, signal, task.end).await;
            }
        }
    }

    /// Copies what the attempt's output file gained since the last copy.
    fn copy_output(&mut self, key: (i64, i64)) {
        if !self.launch.resolved.log_collection {
            return;
        }
        let job_dir = self.job_dir();
        let logs = self.shared.host.logs().clone();
        let job_id = self.launch.job_id.clone();
        let cap = self.launch.resolved.log_cap_per_replica;
        let Some(a) = self.attempts.get_mut(&key) else { return };
        let Some(array_job_id) = a.state.array_job_id else { return };
        if a.tail.is_none() {
            let path = script::output_file(&job_dir, array_job_id, a.state.task, a.state.rank);
            match Tail::open(&logs, &job_id, a.index, a.attempt, path, cap) {
                Ok(tail) => a.tail = Some(tail),
                Err(e) => {
                    tracing::warn!(job = %job_id, error = %e, "cannot copy a Slurm job's output");
                    return;
                }
            }
        }
        if let Some(tail) = a.tail.as_mut() {
            if let Err(e) = tail.copy(jobdeck_store::now_millis()) {
                tracing::warn!(job = %job_id, error = %e, "cannot copy a Slurm job's output");
            }
        }
    }

    /// Ends an attempt: records it, decides on a retry or the run's end.
    async fn end_attempt(
        &mut self,
        key: (i64, i64),
        reason: EndReason,
        message: String,
        exit_code: Option<i32>,
        signal: Option<i32>,
        ended_at: Option<i64>,
    ) {
        if let Some(tail) = self.attempts.get_mut(&key).and_then(|a| a.tail.as_mut()) {
            tail.finish(jobdeck_store::now_millis());
        }
        let Some(a) = self.attempts.get_mut(&key) else { return };
        if matches!(a.phase, ReplicaPhase::Succeeded | ReplicaPhase::Failed) {
            return;
        }
        let succeeded = reason == EndReason::Completed;
        a.phase = if succeeded { ReplicaPhase::Succeeded } else { ReplicaPhase::Failed };
        let (index, rank, task) = (a.index, a.state.rank, a.state.task);
        let mut o = self.observation(&self.attempts[&key]);
        o.exit_code = exit_code;
        o.signal = signal;
        o.reason = Some(reason.clone());
        o.message = Some(message.clone());
        o.end_time = Some(ended_at.unwrap_or_else(jobdeck_store::now_millis));
        let replica = replica_id(&self.launch.job_id, key.0, key.1);
        if succeeded {
            self.record(o).await;
            self.ledger.succeed(index);
            self.shared.host.note_replica_succeeded(&self.launch.job_id, &replica).await;
            return;
        }
        let finding = self.first_error(key).await;
        let class = classify(&AttemptEnd { reason: Some(&reason), exit_code, signal }, finding);
        let counts = !self.ledger.is_ending() && reason.counts_against_retries();
        let program_error = class.is_program_error();
        self.record(o).await;
        self.shared.host.note_replica_failed(&self.launch.job_id, &replica, reason.as_str(), &message).await;
        // A multi-worker allocation fails as one: rank 0 speaks for it.
        if !counts || rank.unwrap_or(0) != 0 {
            return;
        }
        let failure = Failure { replica: &replica, message: &message, program_error };
        match self.ledger.fail(task, &failure) {
            None => {}
            Some(Decision::Retry) => {
                let of_unit = self.ledger.failures_of(task);
                let wait = Some(self.shared.settings.retry_backoff(of_unit)).filter(|w| !w.is_zero());
                self.retries.push((task, wait));
            }
            Some(Decision::Fail { reason, message, program_error }) => {
                self.begin_ending(Ending::Fail { reason, message, program_error });
            }
        }
    }

    /// The kind of the first error in an ended attempt's log, if logs are
    /// kept.
    async fn first_error(&self, key: (i64, i64)) -> Option<jobdeck_core::failure::FindingKind> {
        if !self.launch.resolved.log_collection {
            return None;
        }
        run_ledger::first_error(self.shared.host.logs(), &self.launch.job_id, key.0, key.1).await
    }
}

/// Whether a stored attempt is a failure counted against the retry limits:
/// it ended for a reason that counts, and it is not a worker of a
/// multi-worker allocation, whose rank 0 speaks for it.
fn counts_as_failure(row: &ReplicaRow) -> bool {
    let rank =
        row.executor_state.as_deref().and_then(|s| serde_json::from_str::<AttemptState>(s).ok()).and_then(|s| s.rank);
    row.is_finished() && row.reason.as_ref().is_some_and(EndReason::counts_against_retries) && rank.unwrap_or(0) == 0
}

fn read_exit_file(path: &Path) -> Option<i32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}
