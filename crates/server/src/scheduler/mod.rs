//! The scheduler: one task that owns every job's lifecycle (design §4).
//!
//! It is woken by messages — a job was created, a user stops, starts or
//! deletes a job, an executor reports a replica change or the end of a run —
//! and by a timer for deadlines, queue timeouts, job-level retries and
//! archiving. Every state change is written to the store together with its
//! events in one transaction; the store is the truth a restarted server
//! starts from.
//!
//! Admission: queued jobs are taken by priority (high first), then
//! submission time; a job starts when `parallelism` replicas of its shape fit
//! at once in one of its node groups (see [`placement`]). A job that does not
//! fit does not hold back smaller ones behind it. A job that may preempt and
//! does not fit evicts the fewest lower-priority preemptible jobs that make
//! it fit; they go back to the queue.

pub mod error;
pub mod placement;
pub mod transition;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use jobdeck_api::{EndReason, EventType, JobSpec, JobState, Visibility};
use tokio::sync::{mpsc, oneshot};

pub use self::error::{SchedulerError, SchedulerResult};
use self::placement::{fit, group_states, occupy, plan_preemption, release, shortage, Candidate};
pub use self::transition::Command;
use self::transition::{transition, Effect};
use crate::config::Config;
use crate::executor::{Executor, HostMessage, JobLaunch, Placement, PullCredential, RunOutcome, StopReason};
use crate::spec::ResolvedSpec;
use jobdeck_store::logs::LogStore;
use jobdeck_store::{EventRow, JobRow, JobRuntime, Store, StoreError};

/// A job a user asked for, checked and resolved by the handler; the
/// scheduler gives it its first state and stores it.
pub struct NewJob {
    /// Everything but the runtime, which the scheduler writes.
    pub row: JobRow,
    pub spec: JobSpec,
    pub resolved: ResolvedSpec,
}

enum Msg {
    Create { job: Box<NewJob>, by: String, reply: oneshot::Sender<SchedulerResult<JobRow>> },
    Command { id: String, command: Command, by: String, reply: oneshot::Sender<SchedulerResult<JobRow>> },
}

/// How handlers reach the scheduler; cheap to clone.
#[derive(Clone)]
pub struct SchedulerHandle {
    tx: mpsc::UnboundedSender<Msg>,
}

impl SchedulerHandle {
    /// Stores a new job in its first state (queued, or stopped when created
    /// stopped) with its first events, and answers with it as stored.
    pub async fn create(&self, job: NewJob, by: &str) -> SchedulerResult<JobRow> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Msg::Create { job: Box::new(job), by: by.to_string(), reply })
            .map_err(|_| SchedulerError::internal("the scheduler is not running"))?;
        answer.await.map_err(|_| SchedulerError::internal("the scheduler dropped a creation"))?
    }

    /// Runs a user's command and answers with the job as it is afterwards
    /// (for a delete: as it was when the deletion began).
    pub async fn command(&self, id: &str, command: Command, by: &str) -> SchedulerResult<JobRow> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Msg::Command { id: id.to_string(), command, by: by.to_string(), reply })
            .map_err(|_| SchedulerError::internal("the scheduler is not running"))?;
        answer.await.map_err(|_| SchedulerError::internal("the scheduler dropped a command"))?
    }
}

/// A job the scheduler looks after.
struct Active {
    row: JobRow,
    spec: JobSpec,
    resolved: ResolvedSpec,
}

impl Active {
    fn placement(&self) -> Option<Placement> {
        self.row.runtime.placement_json.as_deref().and_then(|p| serde_json::from_str(p).ok())
    }

    fn state(&self) -> JobState {
        self.row.runtime.state
    }
}

/// The scheduler task's state.
pub struct Scheduler {
    store: Store,
    config: Arc<Config>,
    executor: Arc<dyn Executor>,
    logs: LogStore,
    jobs: HashMap<String, Active>,
    rx: mpsc::UnboundedReceiver<Msg>,
    host_rx: mpsc::UnboundedReceiver<HostMessage>,
    /// PendingRetry jobs and when they go back to the queue.
    retry_at: HashMap<String, i64>,
    next_archive: Option<i64>,
    dirty: bool,
}

/// The most the loop sleeps without a timer due, so nothing waits on a
/// missed wake-up for long.
const MAX_SLEEP: Duration = Duration::from_secs(5);

fn event(job_id: &str, kind: EventType, reason: &str, message: impl Into<String>) -> EventRow {
    EventRow {
        job_id: job_id.to_string(),
        kind,
        reason: reason.into(),
        message: message.into(),
        regarding_kind: "Job".into(),
        regarding_name: job_id.to_string(),
        time: crate::now_millis(),
    }
}

/// How many suffixes a new job's id may draw before its creation fails.
const ID_DRAWS: usize = 8;

/// Stores a new job as `<name>-<suffix>`, drawing another suffix while that
/// id is taken: jobs of one name share the name part, and among thousands
/// of them two five-character suffixes do meet (a benchmark of 100,000 jobs
/// hit one), which must not fail a creation.
async fn insert_new_job(
    store: &Store,
    mut row: JobRow,
    events: impl Fn(&str) -> Vec<EventRow>,
    mut suffix: impl FnMut() -> SchedulerResult<String>,
) -> SchedulerResult<JobRow> {
    for _ in 0..ID_DRAWS {
        row.id = format!("{}-{}", row.name, suffix()?);
        match store.insert_job(row.clone(), events(&row.id)).await {
            Ok(()) => return Ok(row),
            Err(StoreError::DuplicateJob(_)) => continue,
            Err(other) => return Err(other.into()),
        }
    }
    Err(SchedulerError::internal(format!("no free id for a job named '{}' after {ID_DRAWS} draws", row.name)))
}

/// Five random lowercase letters and digits, as Lepton's job ids end.
fn random_suffix() -> SchedulerResult<String> {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut bytes = [0u8; 5];
    getrandom::fill(&mut bytes).map_err(|e| SchedulerError::internal(format!("no random source: {e}")))?;
    Ok(bytes.iter().map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char).collect())
}

/// The time `seconds` after the time stamp `at_ms`, in milliseconds. The
/// contract bounds every duration far below overflow, but the arithmetic
/// saturates anyway: one job's number must never panic the task that runs
/// every job's lifecycle.
fn after_seconds(at_ms: i64, seconds: i64) -> i64 {
    at_ms.saturating_add(seconds.saturating_mul(1000))
}

/// Whether job `other` may be named (by its id) in what `subject` shows: its
/// events and status message. Only when everyone who can read `subject` can
/// also read `other`: `other` is public, or both are private jobs of the same
/// creator. A public job's events are read by the whole workspace, so they
/// never name a private job, not even one of the same creator.
fn may_name(subject: &JobRow, other: &JobRow) -> bool {
    other.visibility == Visibility::Public
        || (subject.visibility == Visibility::Private && subject.created_by == other.created_by)
}

/// The jobs `others` as `subject` may show them: the ids it may name, and a
/// count for the rest ("train-abcde and 2 other jobs").
fn name_jobs(subject: &JobRow, others: &[&JobRow]) -> String {
    let named: Vec<&str> = others.iter().filter(|o| may_name(subject, o)).map(|o| o.id.as_str()).collect();
    let hidden = others.len() - named.len();
    let rest = match hidden {
        0 => None,
        1 => Some("1 other job".to_string()),
        n => Some(format!("{n} other jobs")),
    };
    match (named.is_empty(), rest) {
        (_, None) => named.join(", "),
        (true, Some(rest)) => rest,
        (false, Some(rest)) => format!("{} and {rest}", named.join(", ")),
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).unwrap_or(29500)
}

/// Starts the scheduler: loads the jobs that need attention, lets the
/// executor re-attach to the runs that were going when the server stopped,
/// and spawns the loop.
pub async fn start(
    store: Store,
    config: Arc<Config>,
    executor: Arc<dyn Executor>,
    logs: LogStore,
    host_rx: mpsc::UnboundedReceiver<HostMessage>,
) -> SchedulerResult<SchedulerHandle> {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut scheduler = Scheduler {
        store,
        config,
        executor,
        logs,
        jobs: HashMap::new(),
        rx,
        host_rx,
        retry_at: HashMap::new(),
        next_archive: None,
        dirty: true,
    };
    scheduler.recover().await?;
    tokio::spawn(scheduler.run());
    Ok(SchedulerHandle { tx })
}

impl Scheduler {
    #[allow(
        clippy::result_large_err,
        reason = "the error hands the row back to the caller, who stores it failed; it is moved, not copied"
    )]
    fn activate(&self, row: JobRow) -> Result<Active, (JobRow, String)> {
        let spec: JobSpec = match serde_json::from_str(&row.spec_json) {
            Ok(spec) => spec,
            Err(e) => return Err((row, format!("the stored spec cannot be read: {e}"))),
        };
        match ResolvedSpec::resolve(&spec, &self.config) {
            Ok(resolved) => Ok(Active { row, spec, resolved }),
            Err(errors) => {
                let problems: Vec<String> =
                    errors.iter().map(|(path, m)| format!("{path}: {}", m.join("; "))).collect();
                Err((row, format!("the job no longer fits this server's configuration: {}", problems.join("; "))))
            }
        }
    }

    async fn recover(&mut self) -> SchedulerResult<()> {
        let rows = self.store.active_jobs().await?;
        let mut launches = Vec::new();
        let mut stops = Vec::new();
        for row in rows {
            match self.activate(row) {
                Ok(active) => {
                    let id = active.row.id.clone();
                    if active.state() == JobState::PendingRetry {
                        self.retry_at.insert(id.clone(), crate::now_millis());
                    }
                    if active.placement().is_some() {
                        match self.build_launch(&active).await? {
                            Ok(launch) => launches.push(launch),
                            Err(refusal) => tracing::warn!(job = %id, %refusal, "cannot resume a run"),
                        }
                        if let Some(reason) = active.row.runtime.stop_reason.as_deref().and_then(StopReason::parse) {
                            stops.push((id.clone(), active.row.runtime.run, reason));
                        }
                    }
                    self.jobs.insert(id, active);
                }
                Err((row, message)) => {
                    let id = row.id.clone();
                    let mut runtime = row.runtime.clone();
                    runtime.state = JobState::Failed;
                    runtime.reason = Some("ConfigError".into());
                    runtime.message = Some(message.clone());
                    runtime.placement_json = None;
                    runtime.completed_at = Some(crate::now_millis());
                    self.store
                        .update_job_runtime(
                            id.clone(),
                            runtime,
                            vec![event(&id, EventType::Warning, "ConfigError", message)],
                        )
                        .await?;
                }
            }
        }
        let count = launches.len();
        if let Err(e) = self.executor.recover(launches).await {
            tracing::error!(error = %e, "the executor could not resume every run");
        }
        for (id, run, reason) in stops {
            if let Err(e) = self.executor.stop(&id, run, reason).await {
                tracing::error!(job = %id, error = %e, "cannot resume a stop");
            }
        }
        self.next_archive = self.store.next_archive_time().await?;
        tracing::info!(jobs = self.jobs.len(), resumed_runs = count, "scheduler started");
        Ok(())
    }

    async fn run(mut self) {
        loop {
            let now = crate::now_millis();
            let wait = self
                .next_timer()
                .map(|at| Duration::from_millis(at.saturating_sub(now).max(0) as u64))
                .unwrap_or(MAX_SLEEP)
                .min(MAX_SLEEP);
            tokio::select! {
                message = self.rx.recv() => match message {
                    Some(message) => self.handle(message).await,
                    None => return,
                },
                Some(message) = self.host_rx.recv() => self.handle_host(message).await,
                _ = tokio::time::sleep(wait) => {}
            }
            // Take whatever else arrived meanwhile before deciding, so a burst
            // of creations is admitted in one pass.
            loop {
                if let Ok(message) = self.host_rx.try_recv() {
                    self.handle_host(message).await;
                } else if let Ok(message) = self.rx.try_recv() {
                    self.handle(message).await;
                } else {
                    break;
                }
            }
            // A job is considered for placement before its queue deadline is
            // judged, so even one whose deadline passed while the scheduler
            // was busy gets its chance and says what it waited for.
            self.schedule_if_changed().await;
            if let Err(e) = self.timers().await {
                tracing::error!(error = ?e, "scheduler timers failed");
            }
            self.schedule_if_changed().await;
        }
    }

    async fn schedule_if_changed(&mut self) {
        if self.dirty {
            self.dirty = false;
            if let Err(e) = self.schedule().await {
                tracing::error!(error = ?e, "scheduling pass failed");
            }
        }
    }

    fn next_timer(&self) -> Option<i64> {
        let mut next: Option<i64> = self.next_archive;
        let mut consider = |at: i64| next = Some(next.map_or(at, |n| n.min(at)));
        for active in self.jobs.values() {
            let r = &active.row.runtime;
            match r.state {
                JobState::Queueing => {
                    if let (Some(limit), Some(queued)) = (active.resolved.max_queued_duration_seconds, r.queued_at) {
                        consider(after_seconds(queued, limit));
                    }
                }
                JobState::Starting | JobState::Running if r.stop_reason.is_none() => {
                    if let (Some(limit), Some(started)) = (active.resolved.active_deadline_seconds, r.started_at) {
                        consider(after_seconds(started, limit));
                    }
                }
                _ => {}
            }
        }
        for at in self.retry_at.values() {
            consider(*at);
        }
        next
    }

    /// Writes a job's runtime with its events; a job that ended leaves the
    /// active set.
    async fn save(&mut self, id: &str, events: Vec<EventRow>) -> SchedulerResult<()> {
        let Some(active) = self.jobs.get(id) else { return Ok(()) };
        let runtime = active.row.runtime.clone();
        let state = runtime.state;
        if let Some(at) = runtime.archive_at {
            self.next_archive = Some(self.next_archive.map_or(at, |n| n.min(at)));
        }
        self.store.update_job_runtime(id.to_string(), runtime, events).await?;
        let ended = state.is_terminal();
        if ended {
            self.jobs.remove(id);
            self.retry_at.remove(id);
        }
        Ok(())
    }

    async fn handle(&mut self, message: Msg) {
        match message {
            Msg::Create { job, by, reply } => {
                let result = self.create(*job, &by).await;
                let _ = reply.send(result);
            }
            Msg::Command { id, command, by, reply } => {
                let result = self.command(&id, command, &by).await;
                let _ = reply.send(result);
            }
        }
    }

    async fn create(&mut self, job: NewJob, by: &str) -> SchedulerResult<JobRow> {
        let NewJob { mut row, spec, resolved } = job;
        let now = crate::now_millis();
        let first = transition::on_create(spec.stopped(), &resolved.node_groups);
        let queued = first.state == JobState::Queueing;
        row.runtime = JobRuntime {
            state: first.state,
            reason: Some(first.reason.into()),
            message: Some(first.message.clone()),
            queued_at: queued.then_some(now),
            completed_at: (!queued).then_some(now),
            ..JobRuntime::default()
        };
        let events = |id: &str| {
            vec![
                event(id, EventType::Normal, "Created", format!("job created by {by}")),
                event(id, EventType::Normal, first.reason, first.message.clone()),
            ]
        };
        let row = insert_new_job(&self.store, row, events, random_suffix).await?;
        if queued {
            self.jobs.insert(row.id.clone(), Active { row: row.clone(), spec, resolved });
            self.dirty = true;
        }
        Ok(row)
    }

    /// The job's current row: from the active set, else from the store.
    async fn current_row(&self, id: &str) -> SchedulerResult<JobRow> {
        if let Some(active) = self.jobs.get(id) {
            return Ok(active.row.clone());
        }
        self.store.job(id.to_string()).await?.ok_or_else(|| SchedulerError::NotFound(format!("job '{id}' not found")))
    }

    async fn set_stopped_flag(&mut self, row: &mut JobRow, stopped: bool) -> SchedulerResult<()> {
        let mut spec: JobSpec = serde_json::from_str(&row.spec_json).map_err(SchedulerError::internal)?;
        if spec.stopped == Some(stopped) {
            return Ok(());
        }
        spec.stopped = Some(stopped);
        row.spec_json = serde_json::to_string(&spec).map_err(SchedulerError::internal)?;
        self.store.update_job_spec(row.id.clone(), row.spec_json.clone()).await?;
        if let Some(active) = self.jobs.get_mut(&row.id) {
            active.row.spec_json = row.spec_json.clone();
            active.spec = spec;
        }
        Ok(())
    }

    async fn command(&mut self, id: &str, command: Command, by: &str) -> SchedulerResult<JobRow> {
        let mut row = self.current_row(id).await?;
        let now = crate::now_millis();
        let effect =
            transition(row.runtime.state, command).map_err(|refusal| SchedulerError::Refused(refusal.message(id)))?;
        match effect {
            Effect::StopUnplaced => {
                self.set_stopped_flag(&mut row, true).await?;
                self.ensure_active(&row)?;
                let active = self.active_mut(id)?;
                let r = &mut active.row.runtime;
                r.state = JobState::Stopped;
                r.reason = Some(EndReason::Stopped.to_string());
                r.message = Some(format!("stopped by {by} before it started"));
                r.completed_at = Some(now);
                r.queued_at = None;
                let row = active.row.clone();
                self.save(
                    id,
                    vec![event(
                        id,
                        EventType::Normal,
                        "Stopped",
                        format!("stopped by {by} while waiting in the queue"),
                    )],
                )
                .await?;
                self.dirty = true;
                Ok(row)
            }
            Effect::BeginStop => {
                self.set_stopped_flag(&mut row, true).await?;
                self.begin_stop(id, StopReason::Stopped, format!("stopped by {by}; stopping its replicas")).await?;
                self.current_row(id).await
            }
            Effect::RecordStopped => {
                self.set_stopped_flag(&mut row, true).await?;
                Ok(row)
            }
            Effect::Requeue => {
                self.set_stopped_flag(&mut row, false).await?;
                self.ensure_active(&row)?;
                let active = self.active_mut(id)?;
                let groups = active.resolved.node_groups.join(", ");
                let r = &mut active.row.runtime;
                r.state = JobState::Queueing;
                r.run += 1;
                r.reason = Some("Queued".into());
                r.message = Some(format!("started again by {by}; waiting in the queue of node group(s) {groups}"));
                r.queued_at = Some(now);
                r.started_at = None;
                r.completed_at = None;
                r.archive_at = None;
                r.succeeded = 0;
                r.failed = 0;
                r.active = 0;
                r.ready = 0;
                let row = active.row.clone();
                self.save(id, vec![event(id, EventType::Normal, "Queued", format!("started again by {by}"))]).await?;
                self.dirty = true;
                Ok(row)
            }
            Effect::RecordStarted => {
                self.set_stopped_flag(&mut row, false).await?;
                Ok(row)
            }
            Effect::StopThenDelete => {
                self.begin_stop(id, StopReason::Deleted, format!("deleted by {by}; stopping its replicas")).await?;
                let active = self.active_mut(id)?;
                active.row.runtime.state = JobState::Deleting;
                let row = active.row.clone();
                self.save(id, vec![]).await?;
                Ok(row)
            }
            Effect::DeleteAfterStop => {
                let active = self.active_mut(id)?;
                let r = &mut active.row.runtime;
                r.state = JobState::Deleting;
                r.stop_reason = Some(StopReason::Deleted.as_str().into());
                r.reason = Some("Deleting".into());
                r.message = Some(format!("deleted by {by}; waiting for its replicas to stop"));
                let row = active.row.clone();
                self.save(id, vec![event(id, EventType::Normal, "Deleting", format!("deleted by {by}"))]).await?;
                Ok(row)
            }
            Effect::AlreadyDeleting => Ok(row),
            Effect::DeleteNow => {
                self.delete_now(id).await?;
                self.dirty = true;
                Ok(row)
            }
        }
    }

    /// A job the scheduler must be looking after at this point. Its absence
    /// is a bug, reported as an internal error rather than a panic, so the
    /// scheduler task (and every later command) survives it.
    fn active_mut(&mut self, id: &str) -> SchedulerResult<&mut Active> {
        self.jobs
            .get_mut(id)
            .ok_or_else(|| SchedulerError::internal(format!("job '{id}' is not in the scheduler's active set")))
    }

    /// Puts a stored job in the active set if it is not there.
    fn ensure_active(&mut self, row: &JobRow) -> SchedulerResult<()> {
        if !self.jobs.contains_key(&row.id) {
            let active = self.activate(row.clone()).map_err(|(_, message)| SchedulerError::Refused(message))?;
            self.jobs.insert(row.id.clone(), active);
        }
        Ok(())
    }

    /// Moves a placed job to `Stopping` and asks the executor to stop its run.
    async fn begin_stop(&mut self, id: &str, reason: StopReason, message: String) -> SchedulerResult<()> {
        let Some(active) = self.jobs.get_mut(id) else { return Ok(()) };
        let run = active.row.runtime.run;
        let r = &mut active.row.runtime;
        r.state = JobState::Stopping;
        r.stop_reason = Some(reason.as_str().into());
        r.reason = Some(reason.as_str().into());
        r.message = Some(message.clone());
        let kind = if matches!(reason, StopReason::Stopped | StopReason::Deleted) {
            EventType::Normal
        } else {
            EventType::Warning
        };
        self.save(id, vec![event(id, kind, reason.as_str(), message)]).await?;
        if let Err(e) = self.executor.stop(id, run, reason).await {
            tracing::error!(job = %id, error = %e, "the executor cannot stop a run");
        }
        Ok(())
    }

    async fn delete_now(&mut self, id: &str) -> SchedulerResult<()> {
        self.jobs.remove(id);
        self.retry_at.remove(id);
        self.store.delete_job(id.to_string()).await?;
        let logs = self.logs.clone();
        let job = id.to_string();
        let _ = tokio::task::spawn_blocking(move || logs.remove_job(&job)).await;
        if let Err(e) = self.executor.forget(id).await {
            tracing::warn!(job = %id, error = %e, "cannot clean up after a deleted job");
        }
        Ok(())
    }

    async fn handle_host(&mut self, message: HostMessage) {
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
    async fn refresh_counts(&mut self, id: &str, run: i64) -> SchedulerResult<()> {
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

    async fn on_outcome(&mut self, id: &str, run: i64, outcome: RunOutcome) -> SchedulerResult<()> {
        let Some(active) = self.jobs.get(id) else { return Ok(()) };
        if active.row.runtime.run != run {
            return Ok(());
        }
        self.refresh_counts(id, run).await?;
        let Some(active) = self.jobs.get_mut(id) else { return Ok(()) };
        let stop_reason = active.row.runtime.stop_reason.as_deref().and_then(StopReason::parse);
        let now = crate::now_millis();
        let ttl_s = active.resolved.ttl_seconds_after_finished;
        let completions = active.resolved.completions;
        self.dirty = true;
        let r = &mut active.row.runtime;
        r.placement_json = None;
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
                if retries_used < allowed && !blocked {
                    let delay_s = (2i64 << retries_used.min(5)).min(60);
                    r.state = JobState::PendingRetry;
                    r.job_retries += 1;
                    r.reason = Some(reason.to_string());
                    r.message = Some(format!(
                        "{message}; restarting the whole job in {delay_s} s (job retry {} of {allowed})",
                        retries_used + 1
                    ));
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

    async fn finish_failed(&mut self, id: &str, reason: EndReason, message: String) -> SchedulerResult<()> {
        let Some(active) = self.jobs.get_mut(id) else { return Ok(()) };
        let now = crate::now_millis();
        let ttl_s = active.resolved.ttl_seconds_after_finished;
        let r = &mut active.row.runtime;
        r.state = JobState::Failed;
        r.reason = Some(reason.to_string());
        r.message = Some(message.clone());
        r.placement_json = None;
        r.stop_reason = None;
        r.completed_at = Some(now);
        r.archive_at = Some(after_seconds(now, ttl_s));
        self.dirty = true;
        self.save(id, vec![event(id, EventType::Warning, reason.as_str(), message)]).await
    }

    async fn timers(&mut self) -> SchedulerResult<()> {
        let now = crate::now_millis();
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
                row.runtime.message = Some(format!(
                    "archived {} s after it finished; its record and logs stay readable",
                    now.saturating_sub(finished) / 1000
                ));
                let message = row.runtime.message.clone().unwrap_or_default();
                self.store
                    .update_job_runtime(
                        id.clone(),
                        row.runtime,
                        vec![event(&id, EventType::Normal, "Archived", message)],
                    )
                    .await?;
                if let Err(e) = self.executor.forget(&id).await {
                    tracing::warn!(job = %id, error = %e, "cannot clean up after an archived job");
                }
            }
            self.next_archive = self.store.next_archive_time().await?;
        }
        Ok(())
    }

    /// What a run needs to start, with secrets resolved; the inner error
    /// says why it cannot (a referenced secret that does not exist).
    async fn build_launch(&self, active: &Active) -> SchedulerResult<Result<JobLaunch, LaunchRefusal>> {
        let Some(placement) = active.placement() else {
            return Ok(Err(LaunchRefusal::NotPlaced));
        };
        let mut env = Vec::new();
        for (i, var) in active.spec.envs.iter().flatten().enumerate() {
            let pinned = var.value_from.as_ref().and_then(|v| v.secret_owner.clone());
            let value = match (&var.value, var.value_from.as_ref().and_then(|v| v.secret_name_ref.as_deref())) {
                (_, Some(secret)) => {
                    match self.store.resolve_secret(active.row.created_by.clone(), secret.to_string(), pinned).await? {
                        Some(value) => value,
                        None => {
                            return Ok(Err(LaunchRefusal::MissingSecret {
                                index: i,
                                secret: secret.to_string(),
                                user: active.row.created_by.clone(),
                            }))
                        }
                    }
                }
                (Some(value), None) => value.clone(),
                (None, None) => String::new(),
            };
            env.push((var.name.clone(), value));
        }
        let mut pull_credentials = Vec::new();
        for name in active.spec.image_pull_secrets() {
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
            ..JobLaunch::new(&row.id, &row.name, row.runtime.run, &active.spec, &active.resolved, placement)
        }))
    }

    /// One admission pass over the queue.
    async fn schedule(&mut self) -> SchedulerResult<()> {
        let held: Vec<(Placement, crate::config::ShapeConfig)> =
            self.jobs.values().filter_map(|a| a.placement().map(|p| (p, a.resolved.shape.clone()))).collect();
        let mut groups = group_states(&self.config, held.iter().map(|(p, s)| (p, s)));
        let mut queue: Vec<(i64, i64, String)> = self
            .jobs
            .values()
            .filter(|a| a.state() == JobState::Queueing)
            .map(|a| (-a.resolved.priority, a.row.created_at, a.row.id.clone()))
            .collect();
        queue.sort();
        for (_, _, id) in queue {
            let Some(active) = self.jobs.get(&id) else { continue };
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
            let r = &mut active.row.runtime;
            if r.reason.as_deref() != Some(reason.as_str()) || r.message.as_deref() != Some(message.as_str()) {
                r.reason = Some(reason.clone());
                r.message = Some(message.clone());
                self.save(&id, vec![event(&id, EventType::Normal, &reason, message)]).await?;
            }
        }
        Ok(())
    }

    /// Tries to make room for `id` by preemption; returns the readiness
    /// reason and message while it waits.
    async fn preempt_for(
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
                if other.row.runtime.stop_reason.as_deref() == Some(StopReason::Preempted.as_str()) {
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
    fn waiting_for_victims(&self, id: &str, victims: &[String]) -> String {
        let rows: Vec<&JobRow> = victims.iter().filter_map(|v| self.jobs.get(v)).map(|a| &a.row).collect();
        match self.jobs.get(id) {
            Some(subject) if !rows.is_empty() => {
                format!("waiting for {} preempted job(s) to stop: {}", victims.len(), name_jobs(&subject.row, &rows))
            }
            _ => format!("waiting for {} preempted job(s) to stop", victims.len()),
        }
    }

    /// Starts a job's run on `placement`.
    async fn admit(&mut self, id: &str, placement: Placement) -> SchedulerResult<()> {
        let now = crate::now_millis();
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
        r.placement_json = Some(serde_json::to_string(&placement).map_err(SchedulerError::internal)?);
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
enum LaunchRefusal {
    #[error("the job has no placement")]
    NotPlaced,
    #[error("spec.envs[{index}] refers to the secret '{secret}', which does not exist or is not visible to {user}")]
    MissingSecret { index: usize, secret: String, user: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, created_by: &str, visibility: &str) -> JobRow {
        JobRow {
            id: id.into(),
            created_by: created_by.into(),
            visibility: Visibility::parse(visibility).unwrap(),
            ..JobRow::default()
        }
    }

    #[test]
    fn a_job_names_another_only_when_its_readers_may_see_it() {
        // (subject, other, may the subject's events name the other)
        let cases = [
            (row("a", "alice", "private"), row("b", "bob", "public"), true),
            (row("a", "alice", "public"), row("b", "bob", "public"), true),
            (row("a", "alice", "private"), row("b", "alice", "private"), true),
            (row("a", "alice", "private"), row("b", "bob", "private"), false),
            (row("a", "alice", "public"), row("b", "bob", "private"), false),
            // Everyone reads a public job's events; a private job of the
            // same creator stays unnamed there.
            (row("a", "alice", "public"), row("b", "alice", "private"), false),
        ];
        for (subject, other, expected) in cases {
            assert_eq!(may_name(&subject, &other), expected, "{subject:?} naming {other:?}");
        }
    }

    #[test]
    fn lists_of_jobs_hide_the_ones_that_may_not_be_named() {
        let me = row("mine", "alice", "private");
        let public = row("pub-1", "bob", "public");
        let own = row("own-1", "alice", "private");
        let hidden = row("secret-1", "bob", "private");
        let hidden2 = row("secret-2", "carol", "private");
        let cases: [(Vec<&JobRow>, &str); 5] = [
            (vec![&public], "pub-1"),
            (vec![&public, &own], "pub-1, own-1"),
            (vec![&hidden], "1 other job"),
            (vec![&hidden, &hidden2], "2 other jobs"),
            (vec![&public, &hidden, &own], "pub-1, own-1 and 1 other job"),
        ];
        for (others, expected) in cases {
            assert_eq!(name_jobs(&me, &others), expected);
        }
    }

    #[tokio::test]
    async fn a_taken_id_draws_another_suffix_and_endless_clashes_fail_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("jobdeck.db")).unwrap();
        let new = || JobRow { name: "train".into(), ..JobRow::default() };
        let events = |id: &str| vec![event(id, EventType::Normal, "Created", "created")];
        let script = |suffixes: &'static [&'static str]| {
            let mut next = suffixes.iter().cycle();
            move || Ok(next.next().unwrap().to_string())
        };
        let first = insert_new_job(&store, new(), events, script(&["aaaaa"])).await.unwrap();
        assert_eq!(first.id, "train-aaaaa");
        let second = insert_new_job(&store, new(), events, script(&["aaaaa", "bbbbb"])).await.unwrap();
        assert_eq!(second.id, "train-bbbbb");
        assert_eq!(store.events_of("train-bbbbb".into()).await.unwrap().len(), 1);
        let error = insert_new_job(&store, new(), events, script(&["aaaaa", "bbbbb"])).await.unwrap_err();
        assert!(matches!(error, SchedulerError::Internal(_)), "{error:?}");
        assert_eq!(random_suffix().unwrap().len(), 5);
    }

    #[test]
    fn timer_arithmetic_saturates_instead_of_overflowing() {
        let now = 1_700_000_000_000;
        let cases = [
            (now, 2, now + 2000),
            (now, 0, now),
            (now, 315_360_000, now + 315_360_000_000),
            (now, i64::MAX, i64::MAX),
            (i64::MAX, 1, i64::MAX),
            (0, i64::MIN, i64::MIN),
        ];
        for (at, seconds, expected) in cases {
            assert_eq!(after_seconds(at, seconds), expected, "{at} + {seconds} s");
        }
    }
}
