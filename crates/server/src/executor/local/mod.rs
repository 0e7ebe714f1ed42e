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

use self::cgroup::MemoryLimits;
use self::policy::classify;
use self::supervisor::{
    ExitRecord, LogPaths, Stage, SuperviseSpec, EXIT_FILE, LOCK_FILE, PID_FILE, SPEC_FILE, STOP_FILE,
};
use super::env::replica_env;
use super::run_ledger::{self, Decision, Ending, Failure, RetryLimits, RunLedger};
use super::{
    container, engine, replica_id, BoxFuture, EventType, Executor, ExecutorError, ExecutorEvent, ExecutorHost,
    JobLaunch, ReplicaObservation, StopReason,
};
use crate::config::{Config, ExecutorKind, LocalExecutorConfig, LocalMode};
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
    targets: Mutex<HashMap<(String, i64, i64), crate::metrics::Target>>,
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
        let sampler = Arc::new(Mutex::new(crate::metrics::Sampler::default()));
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(Duration::from_millis(interval));
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                let targets: Vec<crate::metrics::Target> = {
                    let map = shared.targets.lock().unwrap_or_else(|p| p.into_inner());
                    map.values().cloned().collect()
                };
                let sampler = sampler.clone();
                let read = tokio::task::spawn_blocking(move || {
                    sampler.lock().unwrap_or_else(|p| p.into_inner()).tick(&targets, crate::now_millis())
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
        let mut ledger = RunLedger::new(launch.resolved.completions, retry_limits(&launch));
        for row in rows.iter().filter(|r| r.run == launch.run && r.is_finished()) {
            if row.phase == ReplicaPhase::Succeeded {
                ledger.succeed(row.completion_index);
            } else if counts_as_failure(row) {
                ledger.count_restored_failure(row.completion_index);
            }
        }
        let pending = (0..launch.resolved.completions).filter(|i| !ledger.succeeded().contains(i)).collect();
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
        let mut program_error = false;
        for row in rows.iter().filter(|r| r.run == self.launch.run && r.is_finished() && counts_as_failure(r)) {
            let finding = self.first_error(row.completion_index, row.attempt).await;
            let end = crate::failure::AttemptEnd {
                reason: row.reason.as_ref(),
                exit_code: row.exit_code.map(|c| c as i32),
                signal: row.signal.map(|s| s as i32),
            };
            program_error |= crate::failure::classify(&end, finding).is_program_error();
        }
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

    async fn event(&self, kind: EventType, reason: &str, message: String, replica: Option<String>) {
        let _ = self
            .shared
            .host
            .event(ExecutorEvent {
                job_id: self.launch.job_id.clone(),
                kind,
                reason: reason.into(),
                message,
                regarding_replica: replica,
            })
            .await;
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
            self.event(EventType::Normal, "Executor", format!("{mode}; {limits}"), None).await;
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

    /// The supervisor's spec for one attempt.
    fn supervise_spec(
        &self,
        index: i64,
        attempt: i64,
        slot: usize,
        run_dir: &Path,
    ) -> Result<SuperviseSpec, AttemptStartError> {
        let gpu_ids = self.launch.placement.slots.get(slot).map(|s| s.gpu_ids.clone()).unwrap_or_default();
        let replica = self.replica_id(index, attempt);
        let log = self.launch.resolved.log_collection.then(|| {
            let (log, idx) = self.shared.host.logs().paths(&self.launch.job_id, index, attempt);
            LogPaths { log, idx }
        });
        let cgroup = self
            .shared
            .memory
            .replica(&format!("{}-{replica}", self.shared.cgroup_prefix), self.launch.resolved.shape.memory_mb);
        let mut env = self.shared.base_env.clone();
        let grace = self.shared.settings.grace_period_seconds;
        let workdir = run_dir.join("work");
        let spec = match self.shared.settings.mode {
            LocalMode::Process | LocalMode::Auto => {
                for (k, v) in replica_env(&self.launch, index, &gpu_ids) {
                    env.retain(|(n, _)| *n != k);
                    env.push((k, v));
                }
                SuperviseSpec {
                    command: self.launch.spec.container.command.clone().unwrap_or_default(),
                    env,
                    workdir,
                    log,
                    cgroup,
                    grace_seconds: grace,
                    container: None,
                }
            }
            LocalMode::Container => {
                let settings = self.container_settings();
                let steps = container::plan(&settings, &self.launch, &replica, index, &gpu_ids)
                    .map_err(AttemptStartError::Container)?;
                // The engine process gets the server's engine settings and
                // nothing of the job's: the container gets its environment
                // through the env file and the engine's secrets.
                for (k, v) in self.shared.engine_env.iter().cloned() {
                    env.retain(|(n, _)| *n != k);
                    env.push((k, v));
                }
                SuperviseSpec {
                    command: steps.start(),
                    env,
                    workdir,
                    log,
                    // The engine enforces the memory limit of a container.
                    cgroup: None,
                    grace_seconds: grace,
                    container: Some(steps),
                }
            }
        };
        Ok(spec)
    }

    fn container_settings(&self) -> container::ContainerSettings<'_> {
        container::ContainerSettings {
            engine: &self.shared.settings.engine,
            pull_policy: self.shared.settings.pull_policy,
            volumes: &self.shared.settings.volumes,
            pids_limit: self.shared.settings.pids_limit,
            blocked_networks: &self.shared.settings.blocked_networks,
            network_pool: &self.shared.settings.network_pool,
            user_namespace: self.shared.settings.user_namespace,
            staging_dir: &self.shared.mounts_dir,
        }
    }

    /// The command that removes an attempt's container, in container mode.
    fn remove_container(&self, replica: &str) -> Option<Vec<String>> {
        (self.shared.settings.mode == LocalMode::Container).then(|| {
            vec![self.shared.settings.engine.clone(), "rm".into(), "-f".into(), container::container_name(replica)]
        })
    }

    async fn start_attempt(&mut self, index: i64, attempt: i64, slot: usize) {
        let replica = self.replica_id(index, attempt);
        let run_dir = self.run_dir(index, attempt);
        let in_container = self.shared.settings.mode == LocalMode::Container;
        let remove_container = self.remove_container(&replica);
        let mut state = AttemptState {
            run_dir: run_dir.clone(),
            slot,
            pid: None,
            pid_start: None,
            remove_container: remove_container.clone(),
        };
        let mut pending = self.observation(index, attempt, slot);
        pending.readiness_issue = Some(if in_container {
            ReadinessIssue { reason: "InProgress".into(), message: "Starting the container".into() }
        } else {
            ReadinessIssue { reason: "Starting".into(), message: "the replica is starting".into() }
        });
        pending.executor_id = in_container.then(|| container::container_name(&replica));
        pending.executor_state = serde_json::to_string(&state).ok();
        let starting = pending.readiness_issue.clone();
        // Durable before the supervisor exists: a restarted server finds the
        // attempt and its run directory either way.
        if let Err(e) = self.shared.host.replica(pending).await {
            tracing::error!(job = %self.launch.job_id, error = ?e, "cannot record a replica attempt");
        }
        self.running.insert((index, attempt), Running { slot, run_dir: run_dir.clone(), state: state.clone() });

        let prepared = self
            .supervise_spec(index, attempt, slot, &run_dir)
            .and_then(|spec| prepare_run_dir(&run_dir, &spec).map(|_| spec));
        let child = match prepared {
            Ok(_) => spawn_supervisor(&self.shared.supervisor_bin, &run_dir),
            Err(e) => Err(e),
        };
        let mut child = match child {
            Ok(child) => child,
            Err(error) => {
                // Nothing runs; declare the attempt over (holding the lock, so
                // a supervisor could not start it after all).
                let message = crate::error_chain(&error);
                let record = claim_end(&run_dir, |r| r.start_error = Some(message));
                let _ = self.tx.send(ControlMsg::Ended { index, attempt, record });
                return;
            }
        };
        let pid = child.id().map(|p| p as i32);
        state.pid = pid;
        state.pid_start = pid.and_then(process::pid_start_time);
        if let Some(running) = self.running.get_mut(&(index, attempt)) {
            running.state = state.clone();
        }
        let mut observation = self.observation(index, attempt, slot);
        observation.executor_state = serde_json::to_string(&state).ok();
        if in_container {
            // Running once the container is; until then the stages say what
            // it waits for.
            observation.readiness_issue = starting;
            if let Err(e) = self.shared.host.replica(observation).await {
                tracing::error!(job = %self.launch.job_id, error = ?e, "cannot record a starting replica");
            }
            watch_stages(run_dir.clone(), index, attempt, self.tx.clone());
        } else {
            self.report_running(index, attempt, slot, observation, crate::now_millis()).await;
        }
        if self.ledger.is_ending() {
            request_stop(&run_dir, &state);
        }
        let tx = self.tx.clone();
        let remove_container = remove_container.map(|c| (c, self.shared.engine_env.clone()));
        tokio::spawn(async move {
            let _ = child.wait().await;
            let record = read_exit(&run_dir).unwrap_or_else(|| claim_lost(&run_dir, remove_container.as_ref()));
            let _ = tx.send(ControlMsg::Ended { index, attempt, record });
        });
    }

    /// Records an attempt as running and says so in an event.
    async fn report_running(
        &self,
        index: i64,
        attempt: i64,
        slot: usize,
        mut observation: ReplicaObservation,
        since: i64,
    ) {
        self.register_target(index, attempt, slot);
        let replica = self.replica_id(index, attempt);
        observation.phase = ReplicaPhase::Running;
        observation.readiness_issue = None;
        observation.start_time = Some(since);
        if let Err(e) = self.shared.host.replica(observation).await {
            tracing::error!(job = %self.launch.job_id, error = ?e, "cannot record a running replica");
        }
        let node = self.launch.placement.slots.get(slot).map(|s| s.node.clone()).unwrap_or_default();
        self.event(
            EventType::Normal,
            "Started",
            format!("replica {replica} (attempt {attempt}) started on node {node}"),
            Some(replica.clone()),
        )
        .await;
    }

    /// Lets the sampler read a running attempt.
    fn register_target(&self, index: i64, attempt: i64, slot: usize) {
        let replica = self.replica_id(index, attempt);
        let source = match self.shared.settings.mode {
            LocalMode::Container => crate::metrics::Source::Container {
                engine: self.shared.settings.engine.clone(),
                engine_env: self.shared.engine_env.clone(),
                name: container::container_name(&replica),
            },
            LocalMode::Process | LocalMode::Auto => {
                let Some(supervisor) = self.running.get(&(index, attempt)).and_then(|r| r.state.pid) else { return };
                let cgroup = self
                    .shared
                    .memory
                    .replica(&format!("{}-{replica}", self.shared.cgroup_prefix), self.launch.resolved.shape.memory_mb)
                    .map(|spec| crate::metrics::probe::MemoryCgroup { version: spec.version, dir: spec.dir });
                crate::metrics::Source::Session { supervisor, cgroup }
            }
        };
        let target = crate::metrics::Target {
            job_id: self.launch.job_id.clone(),
            completion_index: index,
            attempt,
            source,
            gpu_ids: self.launch.placement.slots.get(slot).map(|s| s.gpu_ids.clone()).unwrap_or_default(),
        };
        let mut targets = self.shared.targets.lock().unwrap_or_else(|p| p.into_inner());
        targets.insert((self.launch.job_id.clone(), index, attempt), target);
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
        let retry_at = crate::now_millis() + wait.as_millis() as i64;
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
            observation.end_time = Some(crate::now_millis());
            if let Err(e) = self.shared.host.replica(observation).await {
                tracing::error!(job = %self.launch.job_id, error = ?e, "cannot record a cancelled retry");
            }
        }
    }

    /// The kind of the first error in an ended attempt's log, if logs are
    /// kept.
    async fn first_error(&self, index: i64, attempt: i64) -> Option<crate::failure::FindingKind> {
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
            self.event(EventType::Normal, "Succeeded", format!("replica {replica} succeeded"), Some(replica)).await;
            return;
        }
        self.event(
            EventType::Warning,
            verdict.reason.as_str(),
            format!("replica {replica}: {}", verdict.message),
            Some(replica.clone()),
        )
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

/// Why an attempt could not be started. Stored with the attempt as one
/// sentence, the error and its sources (`error::chain`), which the replica
/// table shows.
#[derive(Debug, thiserror::Error)]
enum AttemptStartError {
    /// The job cannot run as a container here (a rule of container mode).
    #[error("{0}")]
    Container(String),
    #[error("cannot create {}", path.display())]
    RunDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the replica spec")]
    WriteSpec(#[source] std::io::Error),
    #[error("cannot encode the replica spec")]
    EncodeSpec(#[source] serde_json::Error),
    #[error("cannot create the supervisor log")]
    SupervisorLog(#[source] std::io::Error),
    #[error("cannot start the replica supervisor {}", bin.display())]
    Spawn {
        bin: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn prepare_run_dir(run_dir: &Path, spec: &SuperviseSpec) -> Result<(), AttemptStartError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(run_dir.join("work"))
        .map_err(|source| AttemptStartError::RunDir { path: run_dir.to_path_buf(), source })?;
    let bytes = serde_json::to_vec(spec).map_err(AttemptStartError::EncodeSpec)?;
    // The spec holds secret values: owner-only, and the supervisor deletes
    // it once read.
    process::write_atomic(&run_dir.join(SPEC_FILE), &bytes, 0o600).map_err(AttemptStartError::WriteSpec)
}

fn spawn_supervisor(bin: &Path, run_dir: &Path) -> Result<tokio::process::Child, AttemptStartError> {
    let log = std::fs::File::create(run_dir.join("supervisor.log")).map_err(AttemptStartError::SupervisorLog)?;
    let log_err = log.try_clone().map_err(AttemptStartError::SupervisorLog)?;
    let mut command = tokio::process::Command::new(bin);
    command
        .arg("supervise")
        .arg(run_dir)
        .stdin(std::process::Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .kill_on_drop(false);
    // SAFETY: setsid and signal are async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            process::new_session()?;
            process::reset_signals();
            Ok(())
        });
    }
    command.spawn().map_err(|source| AttemptStartError::Spawn { bin: bin.to_path_buf(), source })
}

fn read_exit(run_dir: &Path) -> Option<ExitRecord> {
    let bytes = std::fs::read(run_dir.join(EXIT_FILE)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Declares an attempt over on behalf of a supervisor that is gone (or never
/// came): takes its lock, so none can start it later, and writes `exit.json`
/// unless the supervisor wrote one after all.
fn claim_end(run_dir: &Path, describe: impl FnOnce(&mut ExitRecord)) -> ExitRecord {
    let _ = std::fs::create_dir_all(run_dir);
    let lock = process::try_lock(&run_dir.join(LOCK_FILE)).ok().flatten();
    if let Some(record) = read_exit(run_dir) {
        return record;
    }
    let mut record = ExitRecord { ended_at: crate::now_millis(), ..ExitRecord::default() };
    describe(&mut record);
    if lock.is_some() {
        let bytes = serde_json::to_vec(&record).unwrap_or_default();
        let _ = process::write_atomic(&run_dir.join(EXIT_FILE), &bytes, 0o644);
    }
    record
}

/// Declares the attempt of a supervisor that vanished lost, and kills what it
/// left running: the replica is in the supervisor's session (a container,
/// outside it, is removed with `remove_container`), and without its
/// supervisor nothing would ever stop it.
fn claim_lost(run_dir: &Path, remove_container: Option<&RemoveContainer>) -> ExitRecord {
    if let Some((pid, start)) = read_pid_file(run_dir) {
        let killed = process::kill_orphaned_session(pid, start);
        if killed > 0 {
            tracing::warn!(run_dir = %run_dir.display(), killed, "killed the processes a vanished supervisor left");
        }
    }
    if let Some(((program, args), env)) = remove_container.and_then(|(c, env)| Some((c.split_first()?, env))) {
        let removed = std::process::Command::new(program)
            .args(args)
            .envs(env.iter().cloned())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
        if let Err(e) = removed {
            tracing::warn!(run_dir = %run_dir.display(), error = %e, "cannot remove the container a vanished supervisor left");
        }
    }
    claim_end(run_dir, |r| r.lost = true)
}

/// The command that removes an attempt's container, and the engine's
/// environment to run it in.
type RemoveContainer = (Vec<String>, Vec<(String, String)>);

/// Reports the stages of a container attempt as they change, until it runs
/// or ends.
fn watch_stages(run_dir: PathBuf, index: i64, attempt: i64, tx: mpsc::UnboundedSender<ControlMsg>) {
    tokio::spawn(async move {
        let mut last = None;
        loop {
            if run_dir.join(EXIT_FILE).exists() {
                return;
            }
            let read = Stage::read(&run_dir);
            let stage = read.map(|(stage, _)| stage);
            if stage != last {
                if let Some((stage, since)) = read {
                    if tx.send(ControlMsg::Stage { index, attempt, stage, since }).is_err() {
                        return;
                    }
                }
                last = stage;
            }
            if stage == Some(Stage::Running) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
}

/// Asks an attempt's supervisor to stop: the stop file (which it also polls)
/// then SIGTERM, if the recorded process is still that supervisor.
fn request_stop(run_dir: &Path, state: &AttemptState) {
    let _ = std::fs::write(run_dir.join(STOP_FILE), b"stop");
    let (pid, start) = match (state.pid, state.pid_start) {
        (Some(pid), Some(start)) => (pid, start),
        _ => match read_pid_file(run_dir) {
            Some(found) => found,
            None => return,
        },
    };
    process::signal_process(pid, start, libc::SIGTERM);
}

fn read_pid_file(run_dir: &Path) -> Option<(i32, u64)> {
    let text = std::fs::read_to_string(run_dir.join(PID_FILE)).ok()?;
    let mut parts = text.split_whitespace();
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// Waits for the end of an attempt whose supervisor is not our child (after
/// a restart): polls for `exit.json` and for the supervisor's lock.
async fn watch_detached(run_dir: &Path, remove_container: Option<&RemoveContainer>) -> ExitRecord {
    let mut free_since_start = 0u32;
    loop {
        if let Some(record) = read_exit(run_dir) {
            return record;
        }
        let lock_free = !run_dir.exists() || process::try_lock(&run_dir.join(LOCK_FILE)).ok().flatten().is_some();
        if lock_free {
            if run_dir.join(PID_FILE).exists() {
                // The supervisor ran and is gone; it may have written
                // exit.json just before releasing the lock.
                return claim_lost(run_dir, remove_container);
            }
            // No supervisor has started yet: one may be starting right now
            // (the server died just after spawning it). Give it a moment,
            // then declare the attempt never started.
            free_since_start += 1;
            if free_since_start >= 8 {
                return claim_end(run_dir, |r| r.not_started = true);
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
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
