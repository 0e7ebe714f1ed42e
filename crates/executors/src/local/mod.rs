//! The local executor: runs replicas on this machine, each under its own
//! supervisor process (`jobdeck supervise`, see [`supervisor`]).
//!
//! One controller task per run plays the part of a Kubernetes Indexed Job
//! controller: it starts the pending completion indexes into the run's slots
//! (at most `parallelism` at once), retries failed attempts within the
//! limits, ends the run when every index succeeded or the limits are
//! exhausted, and stops every replica (SIGTERM, then SIGKILL after the grace
//! period) when the scheduler asks.
//!
//! Restart safety: an attempt's row (with its run directory) is stored
//! before its supervisor starts, and the supervisor's lock and `exit.json`
//! tell a restarted server whether the attempt still runs, how it ended
//! meanwhile, or that it never started — so no attempt runs twice and none
//! is lost.

mod attempt_dir;
mod attempt_start;
pub mod cgroup;
mod leftovers;
pub mod policy;
pub mod process;
mod run_network;
pub mod supervisor;
pub mod volumes;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jobdeck_api::{EndReason, JobRequirements, ReadinessIssue, ReplicaPhase};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use self::attempt_dir::*;
use self::cgroup::MemoryLimits;
use self::policy::classify;
use self::supervisor::{
    ExitRecord, LogPaths, Stage, SuperviseSpec, EXIT_FILE, LOCK_FILE, PID_FILE, SPEC_FILE, STOP_FILE,
};
use crate::env::replica_env;
use crate::run_ledger::{self, Decision, Ending, Failure, RetryLimits, RunLedger};
use crate::{container, engine};
use jobdeck_core::config::{Config, ExecutorKind, LocalExecutorConfig, LocalMode};
use jobdeck_core::executor::{
    replica_id, BoxFuture, EventType, Executor, ExecutorError, ExecutorHost, JobLaunch, ReplicaObservation, StopReason,
};
use jobdeck_store::ReplicaRow;

/// What the local executor keeps in a replica row's `executor_state`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct AttemptState {
    run_dir: PathBuf,
    slot: usize,
    #[serde(default)]
    pid: Option<i32>,
    #[serde(default)]
    pid_start: Option<u64>,
    /// Container mode: what removes the attempt's container, for when its
    /// supervisor vanished and cannot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    remove_container: Option<Vec<String>>,
}

enum ControlMsg {
    Stop(StopReason),
    /// The job's environment anew, for the attempts that start from now on
    /// (its secret references were replaced).
    Env(Vec<(String, String)>),
    Ended {
        index: i64,
        attempt: i64,
        record: ExitRecord,
    },
    /// A container replica moved on (pulling, creating, running) at `since`
    /// (Unix ms).
    Stage {
        index: i64,
        attempt: i64,
        stage: Stage,
        since: i64,
    },
}

/// A failed replica waiting out its back-off before its next attempt.
struct Retry {
    attempt: i64,
    at: tokio::time::Instant,
}

struct Shared {
    host: ExecutorHost,
    settings: LocalExecutorConfig,
    runs_dir: PathBuf,
    /// Where supervisors bind containers' volumes (`volumes.rs`).
    mounts_dir: PathBuf,
    supervisor_bin: PathBuf,
    memory: MemoryLimits,
    /// Makes cgroup names unique among servers sharing a machine.
    cgroup_prefix: String,
    base_env: Vec<(String, String)>,
    /// The server's variables that configure the container engine.
    engine_env: Vec<(String, String)>,
    /// How the mode was decided, for the start-up message.
    mode_note: String,
    runs: super::runs::Runs<ControlMsg>,
    /// The running attempts the sampler reads, by (job, index, attempt).
    targets: Mutex<HashMap<(String, i64, i64), jobdeck_core::metrics::Target>>,
}

/// Runs replicas as processes (or containers) on this machine.
#[derive(Clone)]
pub struct LocalExecutor {
    shared: Arc<Shared>,
}

/// The variables of the server's own environment a replica inherits; the
/// rest (tokens, the server's settings) stays out.
const INHERITED_ENV: &[&str] =
    &["PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SHELL", "TERM"];

/// What a replica inherits of the server's environment `vars`: the
/// variables of [`INHERITED_ENV`] and nothing else (no `JOBDECK_*` setting,
/// no cloud or cluster credential the server was started with), plus a
/// standard `PATH` when the server has none.
fn inherited_env(vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = vars
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .filter(|(name, _)| INHERITED_ENV.contains(&name.as_str()))
        .collect();
    env.sort();
    if !env.iter().any(|(n, _)| n == "PATH") {
        env.push(("PATH".into(), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into()));
    }
    env
}

impl LocalExecutor {
    pub fn new(host: ExecutorHost, config: &Config) -> LocalExecutor {
        let memory = MemoryLimits::detect(config.executor.local.memory_limits);
        let base_env = inherited_env(std::env::vars_os());
        let mut settings = config.executor.local.clone();
        let engine_env = engine::engine_env(&settings, std::env::vars_os());
        let marker = config.data_dir.join(engine::MODE_MARKER);
        let mode_note = engine::resolve(&mut settings, &engine_env, marker.exists());
        if settings.mode == LocalMode::Container {
            if let Err(e) = std::fs::write(&marker, "this data directory's jobs run in containers\n") {
                tracing::warn!(path = %marker.display(), error = %e, "cannot record that jobs run in containers");
            }
        }
        let digest = {
            use sha2::Digest;
            let hash = sha2::Sha256::digest(config.data_dir.to_string_lossy().as_bytes());
            hash.iter().take(4).map(|b| format!("{b:02x}")).collect::<String>()
        };
        let supervisor_bin = config
            .supervisor_bin
            .clone()
            .or_else(|| std::env::current_exe().ok())
            .unwrap_or_else(|| PathBuf::from("jobdeck"));
        let executor = LocalExecutor {
            shared: Arc::new(Shared {
                host,
                settings,
                runs_dir: config.data_dir.join("runs"),
                mounts_dir: config.data_dir.join("mounts"),
                supervisor_bin,
                memory,
                cgroup_prefix: format!("jd{digest}"),
                base_env,
                engine_env,
                mode_note,
                runs: super::runs::Runs::default(),
                targets: Mutex::new(HashMap::new()),
            }),
        };
        executor.start_sampler();
        executor
    }

    /// Samples every running attempt each `metrics_interval_ms` (issue 16).
    fn start_sampler(&self) {
        let interval = self.shared.settings.metrics_interval_ms;
        if interval == 0 {
            return;
        }
        let shared = self.shared.clone();
        let sampler = Arc::new(Mutex::new(jobdeck_core::metrics::Sampler::default()));
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(Duration::from_millis(interval));
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                let targets: Vec<jobdeck_core::metrics::Target> = {
                    let map = shared.targets.lock().unwrap_or_else(|p| p.into_inner());
                    map.values().cloned().collect()
                };
                let sampler = sampler.clone();
                let read = tokio::task::spawn_blocking(move || {
                    sampler.lock().unwrap_or_else(|p| p.into_inner()).tick(&targets, jobdeck_store::now_millis())
                });
                let Ok(samples) = read.await else { continue };
                if let Err(e) = shared.host.metrics(samples).await {
                    tracing::warn!(error = ?e, "cannot store resource samples");
                }
            }
        });
    }

    /// What is enforced on replicas here (memory limits).
    pub fn memory_limits(&self) -> &MemoryLimits {
        &self.shared.memory
    }
}

impl Executor for LocalExecutor {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::Local
    }

    fn requirements(&self) -> JobRequirements {
        match self.shared.settings.mode {
            LocalMode::Process | LocalMode::Auto => {
                JobRequirements { command_required: true, image_ignored: true, ..JobRequirements::default() }
            }
            LocalMode::Container => JobRequirements {
                image_required: true,
                volumes: Some(self.shared.settings.volumes.keys().cloned().collect()),
                multi_line_env_refused: container::Engine::from_binary(&self.shared.settings.engine)
                    == container::Engine::Docker,
                ..JobRequirements::default()
            },
        }
    }

    fn runs_privileged_containers(&self) -> bool {
        self.shared.settings.mode == LocalMode::Container
    }

    fn notes(&self) -> Vec<String> {
        let mut notes = vec![self.shared.mode_note.clone()];
        if self.shared.settings.mode != LocalMode::Container {
            notes.push(self.shared.memory.describe());
        }
        notes
    }

    fn mode(&self) -> Option<String> {
        Some(self.shared.settings.mode.as_str().to_string())
    }

    fn isolation_warning(&self) -> Option<String> {
        isolation_warning(self.shared.settings.mode, &self.shared.settings.engine)
    }

    fn engine(&self) -> Option<String> {
        (self.shared.settings.mode == LocalMode::Container).then(|| self.shared.settings.engine.clone())
    }

    fn start(&self, launch: JobLaunch) -> BoxFuture<'_, Result<(), ExecutorError>> {
        Box::pin(async move {
            let job_id = launch.job_id.clone();
            let rows = self.shared.host.attempts(&job_id).await?;
            let controller = LocalRunController::new(self.shared.clone(), launch, &rows);
            self.spawn_controller(job_id, controller)
        })
    }

    fn stop(&self, job_id: &str, run: i64, reason: StopReason) -> BoxFuture<'_, Result<(), ExecutorError>> {
        let job_id = job_id.to_string();
        Box::pin(async move {
            self.shared.runs.stop(&self.shared.host, &job_id, run, ControlMsg::Stop(reason));
            Ok(())
        })
    }

    fn replace_env(&self, job_id: &str, run: i64, env: Vec<(String, String)>) -> bool {
        self.shared.runs.send(job_id, run, ControlMsg::Env(env))
    }

    fn recover(&self, runs: Vec<JobLaunch>) -> BoxFuture<'_, Result<(), ExecutorError>> {
        Box::pin(async move {
            for launch in runs {
                let job_id = launch.job_id.clone();
                let rows = self.shared.host.attempts(&job_id).await?;
                let mut controller = LocalRunController::new(self.shared.clone(), launch, &rows);
                controller.reattach(&rows).await;
                self.spawn_controller(job_id, controller)?;
            }
            Ok(())
        })
    }

    fn forget(&self, job_id: &str) -> BoxFuture<'_, Result<(), ExecutorError>> {
        let dir = self.shared.runs_dir.join(job_id);
        let engine = (self.shared.settings.mode == LocalMode::Container).then(|| self.shared.settings.engine.clone());
        let engine_env = self.shared.engine_env.clone();
        let job = job_id.to_string();
        let mounts_dir = self.shared.mounts_dir.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                if let Some(engine) = engine {
                    leftovers::remove_job_containers(&engine, &engine_env, &job);
                    // Before the run directories go: a bind left by a killed
                    // supervisor must never be removed recursively.
                    volumes::release_job(&mounts_dir, &job);
                }
                match std::fs::remove_dir_all(&dir) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        Err(ExecutorError::Failed(format!("cannot remove {}: {e}", dir.display())))
                    }
                    _ => Ok(()),
                }
            })
            .await
            .map_err(|e| ExecutorError::Failed(e.to_string()))?
        })
    }
}

impl LocalExecutor {
    fn spawn_controller(&self, job_id: String, controller: LocalRunController) -> Result<(), ExecutorError> {
        if self.shared.runs.register(&job_id, controller.launch.run, controller.tx.clone())? {
            tokio::spawn(controller.run());
        }
        Ok(())
    }
}

struct Running {
    slot: usize,
    run_dir: PathBuf,
    state: AttemptState,
}

/// One run of one job on this machine: starts its indexes into its slots,
/// watches their supervisors and retries within the limits.
struct LocalRunController {
    shared: Arc<Shared>,
    launch: JobLaunch,
    tx: mpsc::UnboundedSender<ControlMsg>,
    rx: mpsc::UnboundedReceiver<ControlMsg>,
    /// Successes, counted failures and how the run is ending.
    ledger: RunLedger,
    pending: BTreeSet<i64>,
    running: BTreeMap<(i64, i64), Running>,
    free_slots: Vec<usize>,
    next_attempt: BTreeMap<i64, i64>,
    /// Failed indexes waiting out their back-off, by completion index.
    retries: BTreeMap<i64, Retry>,
    announced: bool,
}

impl LocalRunController {
    fn new(shared: Arc<Shared>, launch: JobLaunch, rows: &[ReplicaRow]) -> LocalRunController {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut next_attempt = BTreeMap::new();
        for row in rows {
            let next = next_attempt.entry(row.completion_index).or_insert(launch.first_attempt);
            *next = (*next).max(row.attempt + 1);
        }
        let mut ledger = RunLedger::new(launch.resolved.index_count(), retry_limits(&launch));
        for row in rows.iter().filter(|r| r.run == launch.run && r.is_finished()) {
            if row.phase == ReplicaPhase::Succeeded {
                ledger.succeed(row.completion_index);
            } else if counts_as_failure(row) {
                ledger.count_restored_failure(row.completion_index);
            }
        }
        let pending = launch.resolved.indexes().into_iter().filter(|i| !ledger.succeeded().contains(i)).collect();
        let free_slots = (0..launch.placement.slots.len()).rev().collect();
        let announced = rows.iter().any(|r| r.run == launch.run);
        LocalRunController {
            shared,
            launch,
            tx,
            rx,
            ledger,
            pending,
            running: BTreeMap::new(),
            free_slots,
            next_attempt,
            retries: BTreeMap::new(),
            announced,
        }
    }

    fn replica_id(&self, index: i64, attempt: i64) -> String {
        replica_id(&self.launch.job_id, index, attempt)
    }

    fn run_dir(&self, index: i64, attempt: i64) -> PathBuf {
        self.shared.runs_dir.join(&self.launch.job_id).join(format!("{index}-{attempt}"))
    }

    /// Takes over the attempts of this run a previous server left running.
    async fn reattach(&mut self, rows: &[ReplicaRow]) {
        for row in rows.iter().filter(|r| r.run == self.launch.run && !r.is_finished()) {
            let state: AttemptState =
                row.executor_state.as_deref().and_then(|s| serde_json::from_str(s).ok()).unwrap_or_else(|| {
                    AttemptState { run_dir: self.run_dir(row.completion_index, row.attempt), ..AttemptState::default() }
                });
            let (index, attempt) = (row.completion_index, row.attempt);
            self.pending.remove(&index);
            self.free_slots.retain(|s| *s != state.slot);
            let run_dir = state.run_dir.clone();
            let remove_container = state.remove_container.clone().map(|c| (c, self.shared.engine_env.clone()));
            let slot = state.slot;
            self.running.insert((index, attempt), Running { slot, run_dir: run_dir.clone(), state });
            if self.shared.settings.mode == LocalMode::Container {
                watch_stages(run_dir.clone(), index, attempt, self.tx.clone());
            } else if row.phase == ReplicaPhase::Running {
                self.register_target(index, attempt, slot);
            }
            let tx = self.tx.clone();
            tokio::spawn(async move {
                let record = watch_detached(&run_dir, remove_container.as_ref()).await;
                let _ = tx.send(ControlMsg::Ended { index, attempt, record });
            });
        }
        self.announced = true;
        // The previous server may have been failing this run when it died:
        // the stored failures decide again, so no index restarts that the
        // limits have already given up on.
        let failures = rows
            .iter()
            .filter(|r| r.run == self.launch.run && r.is_finished() && counts_as_failure(r))
            .collect::<Vec<_>>();
        let logs = self.shared.host.logs();
        let program_error = run_ledger::restored_program_error(
            logs,
            &self.launch.job_id,
            self.launch.resolved.log_collection,
            &failures,
        )
        .await;
        if self.ledger.judge_restored(program_error) {
            self.stop_running();
        }
    }

    async fn run(mut self) {
        loop {
            if !self.ledger.is_ending() {
                self.launch_pending().await;
            }
            if self.ledger.is_ending() && !self.retries.is_empty() {
                self.cancel_retries().await;
            }
            if let Some(outcome) = self.ledger.outcome(self.running.is_empty()) {
                self.shared.runs.finish(&self.shared.host, &self.launch.job_id, self.launch.run, outcome);
                return;
            }
            let next_retry = self.retries.values().map(|r| r.at).min();
            let message = match next_retry {
                Some(at) => tokio::select! {
                    message = self.rx.recv() => message,
                    () = tokio::time::sleep_until(at) => {
                        self.release_due_retries();
                        continue;
                    }
                },
                None => self.rx.recv().await,
            };
            let Some(message) = message else { return };
            match message {
                ControlMsg::Stop(reason) => self.begin_ending(Ending::Stop(reason)),
                ControlMsg::Env(env) => self.launch.env = env,
                ControlMsg::Ended { index, attempt, record } => self.on_ended(index, attempt, record).await,
                ControlMsg::Stage { index, attempt, stage, since } => self.on_stage(index, attempt, stage, since).await,
            }
        }
    }

    fn begin_ending(&mut self, ending: Ending) {
        if self.ledger.begin_ending(ending) {
            self.stop_running();
        }
    }

    /// Asks every running attempt to stop (the run is ending).
    fn stop_running(&self) {
        for running in self.running.values() {
            request_stop(&running.run_dir, &running.state);
        }
    }

    async fn launch_pending(&mut self) {
        if !self.announced {
            self.announced = true;
            let mode = match self.shared.settings.mode {
                LocalMode::Process | LocalMode::Auto => {
                    let image = self.launch.spec.container.image.clone().unwrap_or_default();
                    if image.is_empty() {
                        "process mode: the command runs directly on this machine".to_string()
                    } else {
                        format!("process mode: the command runs directly on this machine, without the image '{image}'; ports and storage mounts are not applied")
                    }
                }
                LocalMode::Container => format!("container mode: replicas run with {}", self.shared.settings.engine),
            };
            let limits = match self.shared.settings.mode {
                LocalMode::Container => {
                    format!("the engine limits memory to the shape's {} MiB", self.launch.resolved.shape.memory_mb)
                }
                LocalMode::Process | LocalMode::Auto => self.shared.memory.describe(),
            };
            self.shared
                .host
                .note(&self.launch.job_id, EventType::Normal, "Executor", format!("{mode}; {limits}"), None)
                .await;
        }
        // A slot is taken only for an index that waits for one: popping it
        // unconditionally would lose it while nothing is pending (an index
        // waiting out its back-off, say).
        while let Some(&index) = self.pending.iter().next() {
            let Some(slot) = self.free_slots.pop() else { break };
            self.pending.remove(&index);
            let attempt = *self.next_attempt.entry(index).or_insert(self.launch.first_attempt);
            self.next_attempt.insert(index, attempt + 1);
            self.start_attempt(index, attempt, slot).await;
        }
    }

    fn observation(&self, index: i64, attempt: i64, slot: usize) -> ReplicaObservation {
        let mut o = ReplicaObservation::pending(&self.launch.job_id, self.launch.run, index, attempt);
        if let Some(s) = self.launch.placement.slots.get(slot) {
            o.node = Some(s.node.clone());
            o.gpu_ids = s.gpu_ids.clone();
        }
        o.node_group = Some(self.launch.placement.node_group.clone());
        o
    }

    /// A container attempt moved on: pulling its image, creating its
    /// container, or running.
    async fn on_stage(&mut self, index: i64, attempt: i64, stage: Stage, since: i64) {
        let Some(running) = self.running.get(&(index, attempt)) else { return };
        let slot = running.slot;
        let mut observation = self.observation(index, attempt, slot);
        observation.executor_state = serde_json::to_string(&running.state).ok();
        observation.executor_id = Some(container::container_name(&self.replica_id(index, attempt)));
        let image = self.launch.spec.container.image_reference().unwrap_or_default();
        let issue = |message: String| Some(ReadinessIssue { reason: "InProgress".into(), message });
        match stage {
            Stage::Pulling => observation.readiness_issue = issue(format!("Pulling image {image}")),
            Stage::Creating => observation.readiness_issue = issue("Creating the container".into()),
            Stage::Running => return self.report_running(index, attempt, slot, observation, since).await,
        }
        if let Err(e) = self.shared.host.replica(observation).await {
            tracing::error!(job = %self.launch.job_id, error = ?e, "cannot record a replica's stage");
        }
    }

    /// Holds a failed index back for `wait` before its next attempt; the
    /// attempt is listed meanwhile, pending with when it starts.
    async fn schedule_retry(&mut self, index: i64, failures: i64, wait: Duration) {
        let attempt = *self.next_attempt.entry(index).or_insert(self.launch.first_attempt);
        let retry_at = jobdeck_store::now_millis() + wait.as_millis() as i64;
        let mut observation = ReplicaObservation::pending(&self.launch.job_id, self.launch.run, index, attempt);
        observation.node_group = Some(self.launch.placement.node_group.clone());
        observation.retry_at = Some(retry_at);
        observation.readiness_issue = Some(ReadinessIssue {
            reason: "BackOff".into(),
            message: format!(
                "retrying in {} s, after {failures} failed attempt{} of this replica",
                wait.as_secs(),
                if failures == 1 { "" } else { "s" }
            ),
        });
        if let Err(e) = self.shared.host.replica(observation).await {
            tracing::error!(job = %self.launch.job_id, error = ?e, "cannot record a replica's back-off");
        }
        self.retries.insert(index, Retry { attempt, at: tokio::time::Instant::now() + wait });
    }

    /// Moves the indexes whose back-off is over to the pending ones.
    fn release_due_retries(&mut self) {
        let now = tokio::time::Instant::now();
        let due: Vec<i64> = self.retries.iter().filter(|(_, r)| r.at <= now).map(|(i, _)| *i).collect();
        for index in due {
            self.retries.remove(&index);
            self.pending.insert(index);
        }
    }

    /// Ends the attempts that were waiting out a back-off when the run
    /// began to end: they never start.
    async fn cancel_retries(&mut self) {
        let reason = self.ledger.ending().map_or(EndReason::Stopped, Ending::reason);
        for (index, retry) in std::mem::take(&mut self.retries) {
            let mut observation =
                ReplicaObservation::pending(&self.launch.job_id, self.launch.run, index, retry.attempt);
            observation.node_group = Some(self.launch.placement.node_group.clone());
            observation.phase = ReplicaPhase::Failed;
            observation.reason = Some(reason.clone());
            observation.message = Some(format!("the run ended ({reason}) before this retry started"));
            observation.end_time = Some(jobdeck_store::now_millis());
            if let Err(e) = self.shared.host.replica(observation).await {
                tracing::error!(job = %self.launch.job_id, error = ?e, "cannot record a cancelled retry");
            }
        }
    }

    /// The kind of the first error in an ended attempt's log, if logs are
    /// kept.
    async fn first_error(&self, index: i64, attempt: i64) -> Option<jobdeck_core::failure::FindingKind> {
        if !self.launch.resolved.log_collection {
            return None;
        }
        run_ledger::first_error(self.shared.host.logs(), &self.launch.job_id, index, attempt).await
    }

    async fn on_ended(&mut self, index: i64, attempt: i64, record: ExitRecord) {
        self.shared.targets.lock().unwrap_or_else(|p| p.into_inner()).remove(&(
            self.launch.job_id.clone(),
            index,
            attempt,
        ));
        let Some(running) = self.running.remove(&(index, attempt)) else { return };
        self.free_slots.push(running.slot);
        let ending = self.ledger.ending().map(Ending::reason);
        let mut verdict = classify(&record, ending.as_ref(), None);
        // A failure's class also depends on the first error in its log (an
        // NCCL failure behind exit code 1 is not the program's fault).
        if verdict.counts_as_failure {
            let finding = self.first_error(index, attempt).await;
            verdict = classify(&record, ending.as_ref(), finding);
        }
        let replica = self.replica_id(index, attempt);
        let mut observation = self.observation(index, attempt, running.slot);
        observation.phase = verdict.phase;
        observation.exit_code = record.exit_code;
        observation.signal = record.signal;
        observation.reason = Some(verdict.reason.clone());
        observation.message = Some(verdict.message.clone());
        observation.start_time = record.started_at;
        observation.end_time = Some(record.ended_at);
        observation.executor_state = serde_json::to_string(&running.state).ok();
        if self.shared.settings.mode == LocalMode::Container {
            observation.executor_id = Some(container::container_name(&self.replica_id(index, attempt)));
        }
        if record.image_pull_error.is_some() && verdict.reason == EndReason::ImagePullFailed {
            // Lepton's readiness reason for an image that cannot be pulled.
            observation.readiness_issue =
                Some(ReadinessIssue { reason: "Failed".into(), message: verdict.message.clone() });
        }
        if let Err(e) = self.shared.host.replica(observation).await {
            tracing::error!(job = %self.launch.job_id, error = ?e, "cannot record an ended replica");
        }
        if verdict.phase == ReplicaPhase::Succeeded {
            self.ledger.succeed(index);
            self.shared.host.note_replica_succeeded(&self.launch.job_id, &replica).await;
            return;
        }
        self.shared
            .host
            .note_replica_failed(&self.launch.job_id, &replica, verdict.reason.as_str(), &verdict.message)
            .await;
        if self.ledger.is_ending() {
            return;
        }
        if !verdict.counts_as_failure {
            self.pending.insert(index);
            return;
        }
        let failure = Failure { replica: &replica, message: &verdict.message, program_error: verdict.program_error };
        match self.ledger.fail(index, &failure) {
            None => {}
            Some(Decision::Retry) => {
                let of_index = self.ledger.failures_of(index);
                let wait = self.shared.settings.retry_backoff(of_index);
                if wait.is_zero() {
                    self.pending.insert(index);
                } else {
                    self.schedule_retry(index, of_index, wait).await;
                }
            }
            Some(Decision::Fail { reason, message, program_error }) => {
                self.begin_ending(Ending::Fail { reason, message, program_error });
            }
        }
    }
}

/// The job's retry limits, as the run ledger reads them.
fn retry_limits(launch: &JobLaunch) -> RetryLimits {
    RetryLimits {
        backoff_limit: launch.resolved.backoff_limit,
        max_failure_retry: launch.resolved.max_failure_retry,
        disable_retry_on_program_error: launch.resolved.disable_retry_on_program_error,
    }
}

/// Whether a stored ended attempt counted against the limits.
fn counts_as_failure(row: &ReplicaRow) -> bool {
    row.reason.as_ref().is_some_and(EndReason::counts_against_retries)
}

/// The standing notice of a local executor running jobs in `mode` with
/// `engine`, when its jobs are not isolated as container mode on podman
/// isolates them.
fn isolation_warning(mode: LocalMode, engine: &str) -> Option<String> {
    match mode {
        LocalMode::Process => Some(
            "Jobs run as processes of the server's own user, not in containers: a job can read what the server \
             can, other users' secrets and jobs included."
                .to_string(),
        ),
        // Docker has no pods and no step between creating a container and
        // starting it where a route could be added.
        _ if container::Engine::from_binary(engine) == container::Engine::Docker => Some(
            "Jobs run under docker, where Jobdeck cannot keep them from each other's containers or from the cloud \
             metadata address, and multi-worker jobs share the host's network: use podman to isolate them."
                .to_string(),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_mode_and_docker_are_never_silent() {
        assert!(isolation_warning(LocalMode::Process, "").unwrap().contains("processes of the server's own user"));
        assert!(isolation_warning(LocalMode::Container, "/usr/bin/docker").unwrap().contains("use podman"));
        assert_eq!(isolation_warning(LocalMode::Container, "/usr/bin/podman"), None);
    }

    #[test]
    fn replicas_inherit_only_the_allowed_part_of_the_servers_environment() {
        let server_env = [
            ("PATH", "/usr/bin:/bin"),
            ("HOME", "/home/jobdeck"),
            ("LANG", "C.UTF-8"),
            ("JOBDECK_BIN", "/opt/jobdeck"),
            ("JOBDECK_TOKEN", "jd_secret"),
            ("RUST_LOG", "debug"),
            ("AWS_SECRET_ACCESS_KEY", "aws-secret"),
            ("KUBECONFIG", "/home/jobdeck/.kube/config"),
            ("LEPTON_WORKSPACE_TOKEN", "lepton-secret"),
            ("LD_PRELOAD", "/tmp/evil.so"),
        ];
        let vars = server_env.iter().map(|(n, v)| (n.into(), v.into()));
        let got = inherited_env(vars);
        let expected: Vec<(String, String)> =
            [("HOME", "/home/jobdeck"), ("LANG", "C.UTF-8"), ("PATH", "/usr/bin:/bin")]
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect();
        assert_eq!(got, expected);
        // A server without PATH still gives its replicas a usable one.
        let bare = inherited_env(std::iter::once(("JOBDECK_TOKEN".into(), "x".into())));
        assert_eq!(bare.len(), 1);
        assert_eq!(bare[0].0, "PATH");
    }
}
