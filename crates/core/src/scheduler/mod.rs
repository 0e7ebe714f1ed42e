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

mod admission;
pub mod error;
mod estimate;
mod handle;
mod log_removal;
pub mod placement;
mod progress;
mod queue_view;
mod quotas;
mod secret_refs;
mod standing;
pub mod transition;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use jobdeck_api::{EndReason, EventType, JobState, Visibility};
use tokio::sync::{mpsc, oneshot};

pub use self::error::{SchedulerError, SchedulerResult};
use self::handle::Msg;
pub use self::handle::SchedulerHandle;
use self::placement::{fit, group_states, occupy, plan_preemption, release, shortage, Candidate};
pub use self::queue_view::QueuedJob;
pub use self::standing::QueueStanding;
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
    /// `row.spec` with this server's defaults applied.
    pub resolved: ResolvedSpec,
    /// Why the job runs on its shape, when its requirements chose it
    /// (`spec::shape_chosen_by_requirements`): said in an event.
    pub shape_choice: Option<String>,
}

/// A job the scheduler looks after.
struct Active {
    row: JobRow,
    resolved: ResolvedSpec,
}

impl Active {
    fn placement(&self) -> Option<Placement> {
        self.row.runtime.placement.clone()
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
    /// The quotas in force (the config's, with the console's over them).
    quotas: crate::quota::QuotaRules,
    /// When the running jobs' logs are next measured (Unix ms).
    next_log_measure: i64,
    /// When finished jobs' logs go (`crate::retention`).
    log_retention: crate::retention::LogRetentionRule,
    /// The same rule as the handlers read it (`GET /workspace`, a job's
    /// `status.log_retention`); the scheduler is its only writer.
    log_retention_published: tokio::sync::watch::Sender<crate::retention::LogRetentionRule>,
    /// When the finished jobs whose logs are due are next looked for
    /// (Unix ms).
    next_log_removal: i64,
    /// When the logs are next held against the disk budget (Unix ms).
    next_budget_look: i64,
    /// The runs told their logs reached the job's log cap.
    log_caps_told: std::collections::HashSet<(String, i64)>,
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
        time: jobdeck_store::now_millis(),
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
    log_retention_published: tokio::sync::watch::Sender<crate::retention::LogRetentionRule>,
) -> SchedulerResult<SchedulerHandle> {
    let log_retention = *log_retention_published.borrow();
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
        quotas: Default::default(),
        next_log_measure: 0,
        log_retention,
        log_retention_published,
        next_log_removal: 0,
        next_budget_look: 0,
        log_caps_told: Default::default(),
    };
    scheduler.load_quotas().await?;
    scheduler.recover().await?;
    scheduler.measure_all_logs();
    tokio::spawn(scheduler.run());
    Ok(SchedulerHandle { tx })
}

impl Scheduler {
    #[allow(
        clippy::result_large_err,
        reason = "the error hands the row back to the caller, who stores it failed; it is moved, not copied"
    )]
    fn activate(&self, row: JobRow) -> Result<Active, (JobRow, String)> {
        match ResolvedSpec::resolve(&row.spec, &self.config) {
            Ok(resolved) => Ok(Active { row, resolved }),
            Err(errors) => {
                let problems: Vec<String> =
                    errors.iter().map(|(path, m)| format!("{path}: {}", m.join("; "))).collect();
                Err((row, format!("the job no longer fits this server's configuration: {}", problems.join("; "))))
            }
        }
    }

    async fn recover(&mut self) -> SchedulerResult<()> {
        let rows = self.store.active_jobs_to_recover().await?;
        let mut launches = Vec::new();
        let mut stops = Vec::new();
        for row in rows {
            let activated = match row {
                Ok(row) => self.activate(row).map_err(|(row, message)| (row.id, row.runtime, message)),
                Err(unreadable) => Err((
                    unreadable.id,
                    unreadable.runtime,
                    format!("the stored job cannot be read: {}", unreadable.problem),
                )),
            };
            match activated {
                Ok(active) => {
                    let id = active.row.id.clone();
                    if active.state() == JobState::PendingRetry {
                        self.retry_at.insert(id.clone(), jobdeck_store::now_millis());
                    }
                    if active.placement().is_some() {
                        match self.build_launch(&active).await? {
                            Ok(launch) => launches.push(launch),
                            Err(refusal) => tracing::warn!(job = %id, %refusal, "cannot resume a run"),
                        }
                        if let Some(reason) = active.row.runtime.stop_reason {
                            stops.push((id.clone(), active.row.runtime.run, reason));
                        }
                    }
                    self.jobs.insert(id, active);
                }
                Err((id, mut runtime, message)) => {
                    runtime.state = JobState::Failed;
                    runtime.reason = Some("ConfigError".into());
                    runtime.message = Some(message.clone());
                    runtime.placement = None;
                    runtime.completed_at = Some(jobdeck_store::now_millis());
                    self.store
                        .update_job_runtime(
                            id.clone(),
                            runtime,
                            None,
                            vec![event(&id, EventType::Warning, "ConfigError", message)],
                        )
                        .await?;
                }
            }
        }
        let count = launches.len();
        if let Err(e) = self.executor.recover(launches).await {
            tracing::error!(error = %crate::error_chain(&e), "the executor could not resume every run");
        }
        for (id, run, reason) in stops {
            if let Err(e) = self.executor.stop(&id, run, reason).await {
                tracing::error!(job = %id, error = %crate::error_chain(&e), "cannot resume a stop");
            }
        }
        self.next_archive = self.store.next_archive_time().await?;
        tracing::info!(jobs = self.jobs.len(), resumed_runs = count, "scheduler started");
        Ok(())
    }

    async fn run(mut self) {
        loop {
            let now = jobdeck_store::now_millis();
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
            self.measure_running_logs(jobdeck_store::now_millis()).await;
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
        consider(self.next_log_removal);
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
        // A finished job's logs are looked at when they fall due, not only
        // at the next regular look (`log_removal.rs`).
        if let (true, Some(finished)) = (state.is_terminal(), runtime.completed_at) {
            let expire_at = after_seconds(finished, active.resolved.ttl_seconds_after_finished);
            let (due, _) = self.log_retention.removal(finished, expire_at);
            self.next_log_removal = self.next_log_removal.min(due);
        }
        let holding = jobdeck_store::Holding { cpus_per_replica: active.resolved.shape.cpu };
        self.store.update_job_runtime(id.to_string(), runtime, Some(holding), events).await?;
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
            Msg::HandOver { id, to, by, reply } => {
                let result = self.hand_over(&id, &to, &by).await;
                let _ = reply.send(result);
            }
            Msg::ReplaceSecretRefs { id, envs, by, reply } => {
                let result = self.replace_secret_refs(&id, envs, &by).await;
                let _ = reply.send(result);
            }
            Msg::QuotasChanged { reply } => {
                let _ = reply.send(self.load_quotas().await);
            }
            Msg::QueueStanding { id, reply } => {
                let _ = reply.send(self.queue_standing(&id).await);
            }
            Msg::Queue { reply } => {
                let _ = reply.send(self.queue_view());
            }
            Msg::RemoveDueLogs { now, reply } => {
                let _ = reply.send(self.remove_all_due_logs(now).await);
            }
            Msg::MeasureRunningLogs { reply } => {
                self.measure_running_logs_now().await;
                let _ = reply.send(());
            }
            Msg::HoldLogsToBudget { reply } => {
                let _ = reply.send(self.hold_logs_to_budget(jobdeck_store::now_millis()).await);
            }
            Msg::SetMinimumRetention { minimum_ms, reply } => {
                let _ = reply.send(self.set_minimum_retention(minimum_ms).await);
            }
        }
    }

    /// The job's creator becomes `to`, in the store and in the scheduler's
    /// own copy, so later launches resolve its pull secrets as `to`'s.
    async fn hand_over(&mut self, id: &str, to: &str, by: &str) -> SchedulerResult<JobRow> {
        let mut row = self.current_row(id).await?;
        let said = format!("handed over from {} to {to} by {by}", row.created_by);
        let events = vec![event(id, EventType::Normal, "HandedOver", said)];
        if !self.store.set_job_owner(id.to_string(), to.to_string(), events).await? {
            return Err(SchedulerError::NotFound(format!("job '{id}' is gone")));
        }
        if let Some(active) = self.jobs.get_mut(id) {
            active.row.created_by = to.to_string();
        }
        row.created_by = to.to_string();
        Ok(row)
    }

    async fn create(&mut self, job: NewJob, by: &str) -> SchedulerResult<JobRow> {
        let NewJob { mut row, resolved, shape_choice } = job;
        let now = jobdeck_store::now_millis();
        let first = transition::on_create(row.spec.stopped(), &resolved.node_groups);
        let queued = first.state == JobState::Queueing;
        if queued {
            self.check_entry(&row.created_by, &resolved).await?;
        }
        row.runtime = JobRuntime {
            state: first.state,
            reason: Some(first.reason.into()),
            message: Some(first.message.clone()),
            queued_at: queued.then_some(now),
            completed_at: (!queued).then_some(now),
            ..JobRuntime::default()
        };
        let events = |id: &str| {
            let mut events = vec![event(id, EventType::Normal, "Created", format!("job created by {by}"))];
            if let Some(why) = &shape_choice {
                events.push(event(id, EventType::Normal, "ShapeChosen", why.clone()));
            }
            events.push(event(id, EventType::Normal, first.reason, first.message.clone()));
            events
        };
        let row = insert_new_job(&self.store, row, events, random_suffix).await?;
        if queued {
            self.jobs.insert(row.id.clone(), Active { row: row.clone(), resolved });
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
        if row.spec.stopped == Some(stopped) {
            return Ok(());
        }
        row.spec.stopped = Some(stopped);
        self.store.update_job_spec(row.id.clone(), row.spec.clone()).await?;
        if let Some(active) = self.jobs.get_mut(&row.id) {
            active.row.spec = row.spec.clone();
        }
        Ok(())
    }

    async fn command(&mut self, id: &str, command: Command, by: &str) -> SchedulerResult<JobRow> {
        let mut row = self.current_row(id).await?;
        let now = jobdeck_store::now_millis();
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
            Effect::AlreadyEnded => Ok(row),
            Effect::Requeue => {
                let resolved = ResolvedSpec::resolve(&row.spec, &self.config).map_err(|_| {
                    SchedulerError::Refused(format!("job '{id}' no longer fits this server's configuration"))
                })?;
                self.check_entry(&row.created_by, &resolved).await?;
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
                r.stop_reason = Some(StopReason::Deleted);
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
        r.stop_reason = Some(reason);
        r.reason = Some(reason.as_str().into());
        r.message = Some(message.clone());
        let kind = if matches!(reason, StopReason::Stopped | StopReason::Deleted) {
            EventType::Normal
        } else {
            EventType::Warning
        };
        self.save(id, vec![event(id, kind, reason.as_str(), message)]).await?;
        if let Err(e) = self.executor.stop(id, run, reason).await {
            tracing::error!(job = %id, error = %crate::error_chain(&e), "the executor cannot stop a run");
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
            tracing::warn!(job = %id, error = %crate::error_chain(&e), "cannot clean up after a deleted job");
        }
        Ok(())
    }
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
