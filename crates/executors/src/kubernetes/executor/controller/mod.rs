//! The single task that owns the view of the cluster: it takes the watches'
//! changes and the executor's commands, follows every run's pods and Job,
//! and reports replicas and outcomes. Events and log copies are in the
//! modules below.

use super::*;

mod events;
mod log_copies;

pub(super) enum Command {
    /// Starts following a run; replies false when it is followed already.
    Register {
        run: Box<RunState>,
        reply: oneshot::Sender<bool>,
    },
    /// Forgets a run whose objects could not be created.
    Unregister {
        job_id: String,
        run: i64,
    },
    /// A stop was asked; replies whether the run is known.
    Stop {
        job_id: String,
        run: i64,
        reason: StopReason,
        reply: oneshot::Sender<bool>,
    },
    /// The run's Job no longer exists.
    JobGone {
        job_id: String,
        run: i64,
    },
    Forget {
        job_id: String,
    },
    /// A log copy ended.
    LogCopied {
        job_id: String,
        run: i64,
        uid: String,
        complete: bool,
    },
}

/// The single task that owns the view of the cluster.
pub(super) struct ClusterController {
    shared: Arc<Shared>,
    commands: mpsc::WeakUnboundedSender<Command>,
    runs: HashMap<String, RunState>,
    /// The last state of every managed Job and pod, so a run registered
    /// after the watchers listed them (a recovery) still sees them.
    jobs: HashMap<String, Job>,
    pods: HashMap<String, Pod>,
    /// The current events about Jobdeck's Jobs and pods (Kubernetes keeps
    /// events about an hour), so a recovered run records what happened while
    /// the server was down, with when each arrived (Unix ms). Events about
    /// other objects are dropped once [`EVENT_GRACE`] has passed without
    /// their object showing up.
    events: HashMap<String, (Event, i64)>,
    /// Kubernetes event uid → the count already recorded.
    event_counts: HashMap<String, i64>,
    /// The log copies that run: pod uid → (job id, the task). They end with
    /// the controller, as they would with the server's process, so two
    /// copies never write one log.
    copies: HashMap<String, (String, tokio::task::AbortHandle)>,
    /// Whether the cluster serves `metrics.k8s.io`; false after a 404, and
    /// then never asked again.
    metrics_served: bool,
}

impl ClusterController {
    pub(super) fn new(shared: Arc<Shared>, commands: mpsc::WeakUnboundedSender<Command>) -> Self {
        Self {
            shared,
            commands,
            runs: HashMap::new(),
            jobs: HashMap::new(),
            pods: HashMap::new(),
            events: HashMap::new(),
            event_counts: HashMap::new(),
            copies: HashMap::new(),
            metrics_served: true,
        }
    }

    pub(super) async fn run(mut self, mut commands: mpsc::UnboundedReceiver<Command>) {
        let managed = Selector { labels: Some(format!("{LABEL_MANAGED_BY}={MANAGED_BY_VALUE}")), fields: None };
        // Events carry no labels of their object, and field selectors
        // select by one value, so Jobdeck's events cannot be asked for
        // directly: two watches narrow them to Job and pod events, and the
        // controller keeps those about its own objects (docs/kubernetes.md,
        // "Replicas, readiness and events").
        let events_about = |kind: &str| Selector { labels: None, fields: Some(format!("involvedObject.kind={kind}")) };
        let (job_tx, mut job_rx) = mpsc::channel(watch::BUFFER);
        let (pod_tx, mut pod_rx) = mpsc::channel(watch::BUFFER);
        let (job_event_tx, mut job_event_rx) = mpsc::channel(watch::BUFFER);
        let (pod_event_tx, mut pod_event_rx) = mpsc::channel(watch::BUFFER);
        let watchers = [
            tokio::spawn(watch::run(self.shared.jobs(), managed.clone(), job_tx, "jobs")),
            tokio::spawn(watch::run(self.shared.pods(), managed, pod_tx, "pods")),
            tokio::spawn(watch::run(self.shared.events(), events_about("Job"), job_event_tx, "Job events")),
            tokio::spawn(watch::run(self.shared.events(), events_about("Pod"), pod_event_tx, "pod events")),
        ];
        let mut tick = tokio::time::interval(TICK);
        let metrics_every = self.shared.settings.metrics_interval_seconds;
        let mut metrics = tokio::time::interval(Duration::from_secs(metrics_every.max(1)));
        metrics.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                command = commands.recv() => match command {
                    Some(command) => self.on_command(command).await,
                    None => break,
                },
                Some(change) = pod_rx.recv() => self.on_pods(change).await,
                Some(change) = job_rx.recv() => self.on_jobs(change).await,
                Some(change) = job_event_rx.recv() => self.on_events("Job", change).await,
                Some(change) = pod_event_rx.recv() => self.on_events("Pod", change).await,
                _ = tick.tick() => self.on_tick().await,
                _ = metrics.tick(), if metrics_every > 0 && self.metrics_served => self.sample_metrics().await,
            }
        }
        for watcher in watchers {
            watcher.abort();
        }
        for (_, (_, copy)) in self.copies.drain() {
            copy.abort();
        }
    }

    async fn on_command(&mut self, command: Command) {
        match command {
            Command::Register { run, reply } => {
                let known = self.runs.get(&run.job_id).is_some_and(|existing| existing.run == run.run);
                if known {
                    let _ = reply.send(false);
                    return;
                }
                let job_id = run.job_id.clone();
                self.runs.insert(job_id.clone(), *run);
                let _ = reply.send(true);
                self.replay(&job_id).await;
            }
            Command::Unregister { job_id, run } => {
                if self.runs.get(&job_id).is_some_and(|r| r.run == run) {
                    self.runs.remove(&job_id);
                }
            }
            Command::Stop { job_id, run, reason, reply } => match self.runs.get_mut(&job_id).filter(|r| r.run == run) {
                Some(state) => {
                    state.stop.get_or_insert(reason);
                    let _ = reply.send(true);
                }
                None => {
                    let _ = reply.send(false);
                }
            },
            Command::JobGone { job_id, run } => {
                if self.runs.get(&job_id).is_some_and(|r| r.run == run) {
                    self.job_deleted(&job_id).await;
                }
            }
            Command::Forget { job_id } => {
                self.runs.remove(&job_id);
                // The job's logs are being removed: its copies must not
                // write them again.
                self.copies.retain(|_, (job, copy)| {
                    if *job == job_id {
                        copy.abort();
                    }
                    *job != job_id
                });
            }
            Command::LogCopied { job_id, run, uid, complete } => {
                self.copies.remove(&uid);
                let Some(state) = self.runs.get_mut(&job_id).filter(|r| r.run == run) else {
                    return;
                };
                let Some(tracked) = state.tracked.get_mut(&uid) else {
                    return;
                };
                // The kubelet ends a followed log when the container stops
                // running; a stream that ends while the pod still reads as
                // running was cut (an API server restarting, an idle
                // timeout) and is copied on from where it stopped.
                let still_running =
                    tracked.last.as_ref().is_some_and(|a| a.phase == ReplicaPhase::Running && !a.terminating);
                if complete && !still_running {
                    tracked.logs_copied = true;
                    // Record that the copy is complete, so a restart does not
                    // copy it again. The copy usually ends after the attempt
                    // was recorded as ended, which a replica report cannot
                    // change any more; the executor state can.
                    let state = pod_state(tracked);
                    if let Some(observation) = tracked.reported.as_mut() {
                        observation.executor_state = Some(state.clone());
                    }
                    let (index, attempt) = (tracked.completion_index, tracked.attempt);
                    if let Err(e) = self.shared.host.executor_state(&job_id, index, attempt, state).await {
                        tracing::warn!("kubernetes: cannot record replica of {job_id}: {e:?}");
                    }
                } else {
                    // Started again on the next tick after a pause, or on
                    // the pod's next update, whichever comes first; the
                    // copy resumes after the last stored line.
                    tracked.log_started = false;
                    let pause =
                        LOG_RETRY_DELAY.saturating_mul(1 << tracked.log_failures.min(6)).min(LOG_RETRY_MAX_DELAY);
                    tracked.log_failures += 1;
                    tracked.log_retry_at = Some(jobdeck_store::now_millis() + pause.as_millis() as i64);
                }
            }
        }
    }

    /// Feeds a newly registered run what the watchers already know.
    async fn replay(&mut self, job_id: &str) {
        let mut pods: Vec<Pod> =
            self.pods.values().filter(|p| label(&p.metadata, LABEL_JOB_ID) == Some(job_id)).cloned().collect();
        pods.sort_by_key(creation_order);
        for pod in pods {
            self.on_pod(&pod, false).await;
        }
        let mut events: Vec<Event> = self.events.values().map(|(e, _)| e.clone()).collect();
        events.sort_by_key(status::event_order);
        for event in events {
            self.on_event(&event).await;
        }
        if let Some(job) = self.jobs.get(job_id).cloned() {
            self.on_job(&job).await;
        }
    }

    async fn on_pods(&mut self, change: Change<Pod>) {
        match change {
            Change::Listed(mut pods) => {
                pods.sort_by_key(creation_order);
                let present: std::collections::HashSet<String> =
                    pods.iter().filter_map(|p| p.metadata.uid.clone()).collect();
                let vanished: Vec<Pod> =
                    self.pods.iter().filter(|(uid, _)| !present.contains(*uid)).map(|(_, p)| p.clone()).collect();
                for pod in vanished {
                    self.forget_pod(&pod);
                    self.on_pod(&pod, true).await;
                }
                for pod in pods {
                    self.remember_pod(&pod);
                    self.on_pod(&pod, false).await;
                }
            }
            Change::Applied(pod) => {
                self.remember_pod(&pod);
                self.on_pod(&pod, false).await;
            }
            Change::Deleted(pod) => {
                self.forget_pod(&pod);
                self.on_pod(&pod, true).await;
            }
        }
    }

    fn remember_pod(&mut self, pod: &Pod) {
        if let Some(uid) = &pod.metadata.uid {
            self.pods.insert(uid.clone(), pod.clone());
        }
    }

    fn forget_pod(&mut self, pod: &Pod) {
        if let Some(uid) = &pod.metadata.uid {
            self.pods.remove(uid);
        }
    }

    async fn on_jobs(&mut self, change: Change<Job>) {
        match change {
            Change::Listed(jobs) => {
                let present: std::collections::HashSet<String> =
                    jobs.iter().filter_map(|j| j.metadata.name.clone()).collect();
                let vanished: Vec<String> = self.jobs.keys().filter(|n| !present.contains(*n)).cloned().collect();
                for name in vanished {
                    if let Some(job) = self.jobs.remove(&name) {
                        self.on_job_deleted(&job).await;
                    }
                }
                for job in jobs {
                    if let Some(name) = &job.metadata.name {
                        self.jobs.insert(name.clone(), job.clone());
                    }
                    self.on_job(&job).await;
                }
            }
            Change::Applied(job) => {
                if let Some(name) = &job.metadata.name {
                    self.jobs.insert(name.clone(), job.clone());
                }
                self.on_job(&job).await;
            }
            Change::Deleted(job) => {
                if let Some(name) = &job.metadata.name {
                    self.jobs.remove(name);
                }
                self.on_job_deleted(&job).await;
            }
        }
    }

    /// Reads one pod into its run: assigns its attempt number, reports its
    /// state when it changed, starts copying its log, and notes pods that
    /// can never start.
    async fn on_pod(&mut self, pod: &Pod, deleted: bool) {
        let Some(job_id) = label(&pod.metadata, LABEL_JOB_ID).map(String::from) else {
            return;
        };
        let Some(state) = self.runs.get_mut(&job_id) else {
            return;
        };
        let run: Option<i64> = label(&pod.metadata, LABEL_RUN).and_then(|r| r.parse().ok());
        if run != Some(state.run) {
            return;
        }
        let Some(mut attempt) = status::pod_attempt(pod) else {
            return;
        };
        if let Some(indexes) = &state.indexes {
            // A Job of chosen indexes: its pod's index is a position.
            let Some(&index) = usize::try_from(attempt.completion_index).ok().and_then(|p| indexes.get(p)) else {
                return;
            };
            attempt.completion_index = index;
        }
        let now = jobdeck_store::now_millis();
        let uid = attempt.pod_uid.clone();
        let newly_tracked = !state.tracked.contains_key(&uid);
        if newly_tracked {
            if deleted {
                // A pod we never saw alive: nothing to report.
                return;
            }
            let next = state.next_attempt.entry(attempt.completion_index).or_insert(state.first_attempt);
            let number = *next;
            *next += 1;
            state.tracked.insert(
                uid.clone(),
                Tracked {
                    pod_name: attempt.pod_name.clone(),
                    completion_index: attempt.completion_index,
                    attempt: number,
                    last: None,
                    reported: None,
                    finished: false,
                    log_started: false,
                    logs_copied: false,
                    log_retry_at: None,
                    log_failures: 0,
                    pulling: false,
                    stuck_since: None,
                },
            );
        }
        let stop = state.stop;
        let failure_reason = state.failure.as_ref().map(|f| f.reason.clone());
        let node_group = state.node_group.clone();
        let log_collection = state.log_collection;
        let run_number = state.run;
        let tracked = state.tracked.get_mut(&uid).expect("tracked above");
        tracked.pod_name = attempt.pod_name.clone();
        tracked.last = Some(attempt.clone());
        tracked.stuck_since = match attempt.wait {
            Some(status::WaitKind::ImagePull | status::WaitKind::Config) => tracked.stuck_since.or(Some(now)),
            _ => None,
        };

        let mut observation = observation(&job_id, run_number, &node_group, tracked, &attempt);
        let alive = matches!(observation.phase, ReplicaPhase::Pending | ReplicaPhase::Running);
        if alive && (deleted || attempt.terminating) {
            if let Some(reason) = failure_reason {
                end_observation(&mut observation, reason, "the run failed; its replicas were stopped", now);
            } else if let Some(reason) = stop {
                end_observation(&mut observation, reason.into(), "stopped by Jobdeck", now);
            } else if deleted {
                end_observation(&mut observation, EndReason::Deleted, "the pod was deleted outside Jobdeck", now);
            }
        }
        let finished = matches!(observation.phase, ReplicaPhase::Succeeded | ReplicaPhase::Failed);
        let start_log = log_collection
            && !deleted
            && !tracked.log_started
            && (observation.phase == ReplicaPhase::Running || (finished && attempt.start_time.is_some()));
        if tracked.finished {
            // A finished attempt keeps its final report.
        } else if tracked.reported.as_ref() != Some(&observation) {
            tracked.finished = finished;
            tracked.reported = Some(observation.clone());
            if let Err(e) = self.shared.host.replica(observation).await {
                tracing::warn!("kubernetes: cannot record replica of {job_id}: {e:?}");
            }
        }
        if start_log {
            let tracked = self.runs.get_mut(&job_id).and_then(|s| s.tracked.get_mut(&uid)).expect("tracked above");
            tracked.log_started = true;
            tracked.log_retry_at = None;
            let (pod, index, number) = (tracked.pod_name.clone(), tracked.completion_index, tracked.attempt);
            self.spawn_log_copy(&job_id, run_number, &uid, pod, index, number);
        }
        if newly_tracked {
            self.replay_pod_events(&uid, &attempt.pod_name).await;
        }
    }

    async fn on_job(&mut self, job: &Job) {
        let Some(job_id) = job.metadata.name.clone() else {
            return;
        };
        let Some(state) = self.runs.get_mut(&job_id) else {
            return;
        };
        if job_run(job) != Some(state.run) {
            return;
        }
        state.job_uid = job.metadata.uid.clone();
        match status::job_end(job) {
            Some(JobEnd::Succeeded) => {
                self.refresh_pods(&job_id).await;
                self.finish(&job_id, RunOutcome::Succeeded).await;
            }
            Some(JobEnd::Failed { reason, message }) => {
                self.refresh_pods(&job_id).await;
                let Some(state) = self.runs.get(&job_id) else {
                    return;
                };
                let attempts: Vec<PodAttempt> = state.tracked.values().filter_map(|t| t.last.clone()).collect();
                let failure = status::run_failure(&reason, &message, &attempts);
                self.finish_failed(&job_id, failure).await;
            }
            None => {
                if status::job_suspended(job) && (state.stop.is_some() || state.failure.is_some()) {
                    self.refresh_pods(&job_id).await;
                    self.finish_stopped(&job_id).await;
                }
            }
        }
    }

    async fn on_job_deleted(&mut self, job: &Job) {
        let Some(job_id) = job.metadata.name.clone() else {
            return;
        };
        let current = self.runs.get(&job_id).is_some_and(|s| job_run(job) == Some(s.run));
        if current {
            self.job_deleted(&job_id).await;
        }
    }

    async fn job_deleted(&mut self, job_id: &str) {
        let Some(state) = self.runs.get(job_id) else {
            return;
        };
        if state.stop.is_some() || state.failure.is_some() {
            self.finish_stopped(job_id).await;
        } else {
            let failure = RunFailure {
                // Kubernetes' own event, not a reason of Jobdeck's.
                reason: EndReason::Other("JobDeleted".into()),
                message: "the Kubernetes Job was deleted outside Jobdeck".into(),
                class: status::FailureClass::Infra,
                program_error: false,
            };
            self.finish_failed(job_id, failure).await;
        }
    }

    /// Reads the run's pods again before its outcome is reported, so the
    /// last state of every replica is recorded first (the Job's watch can
    /// run ahead of the pods').
    async fn refresh_pods(&mut self, job_id: &str) {
        let Some(state) = self.runs.get(job_id) else {
            return;
        };
        let selector = format!("{LABEL_JOB_ID}={job_id},{LABEL_RUN}={}", state.run);
        match self.shared.pods().list(&ListParams::default().labels(&selector)).await {
            Ok(list) => {
                let mut pods = list.items;
                pods.sort_by_key(creation_order);
                for pod in pods {
                    self.remember_pod(&pod);
                    self.on_pod(&pod, false).await;
                }
            }
            Err(e) => tracing::warn!("kubernetes: cannot list the pods of {job_id}: {e}"),
        }
    }

    async fn finish_stopped(&mut self, job_id: &str) {
        self.end_alive_replicas(job_id).await;
        let Some(state) = self.runs.get(job_id) else {
            return;
        };
        match state.failure.clone() {
            Some(failure) => self.finish_failed(job_id, failure).await,
            None => self.finish(job_id, RunOutcome::Stopped).await,
        }
    }

    async fn finish_failed(&mut self, job_id: &str, failure: RunFailure) {
        let _ = self
            .shared
            .host
            .event(ExecutorEvent {
                job_id: job_id.to_string(),
                kind: EventType::Warning,
                reason: failure.reason.to_string(),
                message: format!("{} ({})", failure.message, failure.class.as_str()),
                regarding_replica: None,
            })
            .await;
        self.end_alive_replicas(job_id).await;
        self.finish(
            job_id,
            RunOutcome::Failed {
                reason: failure.reason,
                message: failure.message,
                program_error: failure.program_error,
            },
        )
        .await;
    }

    /// Reports every replica that has not ended as ended by the stop (or
    /// failure) of its run.
    async fn end_alive_replicas(&mut self, job_id: &str) {
        let Some(state) = self.runs.get_mut(job_id) else {
            return;
        };
        let (reason, message) = match (&state.failure, state.stop) {
            (Some(f), _) => (f.reason.clone(), "the run failed; its replicas were stopped".to_string()),
            (None, Some(stop)) => (stop.into(), "stopped by Jobdeck".to_string()),
            (None, None) => (EndReason::Stopped, "the run ended".to_string()),
        };
        let now = jobdeck_store::now_millis();
        let mut reports = Vec::new();
        for tracked in state.tracked.values_mut().filter(|t| !t.finished) {
            let Some(mut observation) = tracked.reported.clone() else {
                continue;
            };
            end_observation(&mut observation, reason.clone(), &message, now);
            tracked.finished = true;
            tracked.reported = Some(observation.clone());
            reports.push(observation);
        }
        for observation in reports {
            if let Err(e) = self.shared.host.replica(observation).await {
                tracing::warn!("kubernetes: cannot record replica of {job_id}: {e:?}");
            }
        }
    }

    async fn finish(&mut self, job_id: &str, outcome: RunOutcome) {
        if let Some(state) = self.runs.remove(job_id) {
            self.shared.host.outcome(job_id, state.run, outcome);
        }
    }

    /// Ends runs whose pods wait on something that never resolves by itself.
    /// Reads the CPU and memory of Jobdeck's running pods from
    /// `metrics.k8s.io` and records them as their attempts' samples.
    async fn sample_metrics(&mut self) {
        let mut attempts: HashMap<&str, (&str, i64, i64)> = HashMap::new();
        for (job_id, state) in &self.runs {
            for tracked in state.tracked.values().filter(|t| !t.finished) {
                if tracked.last.as_ref().is_some_and(|a| a.phase == ReplicaPhase::Running) {
                    attempts.insert(
                        tracked.pod_name.as_str(),
                        (job_id.as_str(), tracked.completion_index, tracked.attempt),
                    );
                }
            }
        }
        if attempts.is_empty() {
            return;
        }
        let selector = format!("{LABEL_MANAGED_BY}={MANAGED_BY_VALUE}");
        let uses =
            match crate::kubernetes::pod_metrics::read(&self.shared.client, &self.shared.namespace, &selector).await {
                Ok(Some(uses)) => uses,
                Ok(None) => {
                    tracing::info!(
                        "the cluster does not serve metrics.k8s.io (no metrics-server): replicas are not sampled"
                    );
                    self.metrics_served = false;
                    return;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read pod metrics");
                    return;
                }
            };
        let now = jobdeck_store::now_millis();
        let mut samples = Vec::new();
        for pod_use in uses {
            let Some((job_id, index, attempt)) = attempts.get(pod_use.pod.as_str()) else { continue };
            for (series, value) in [
                (jobdeck_api::metrics::SERIES_CPU, pod_use.cores),
                (jobdeck_api::metrics::SERIES_MEMORY, pod_use.memory_bytes),
            ] {
                samples.push(jobdeck_store::MetricSample {
                    job_id: job_id.to_string(),
                    completion_index: *index,
                    attempt: *attempt,
                    series: series.to_string(),
                    t: now,
                    value,
                });
            }
        }
        if let Err(e) = self.shared.host.metrics(samples).await {
            tracing::warn!(error = ?e, "cannot store pod metrics");
        }
    }

    async fn on_tick(&mut self) {
        let now = jobdeck_store::now_millis();
        self.retry_log_copies(now);
        self.prune_events(now);
        let limit = (self.shared.settings.stuck_pod_timeout_seconds as i64).saturating_mul(1000);
        let mut failing = Vec::new();
        for state in self.runs.values_mut() {
            if state.failure.is_some() || state.stop.is_some() {
                continue;
            }
            let stuck = state
                .tracked
                .values()
                .filter(|t| !t.finished && t.stuck_since.is_some_and(|since| now - since >= limit))
                .filter_map(|t| t.last.as_ref())
                .min_by_key(|a| a.completion_index)
                .and_then(status::stuck_failure);
            if let Some(mut failure) = stuck {
                failure.message =
                    format!("{} (for more than {} s)", failure.message, self.shared.settings.stuck_pod_timeout_seconds);
                state.failure = Some(failure);
                failing.push(state.job_id.clone());
            }
        }
        for job_id in failing {
            match suspend(&self.shared, &job_id).await {
                Ok(()) => {}
                Err(e) if e.is_not_found() => self.finish_stopped(&job_id).await,
                Err(e) => tracing::warn!("kubernetes: cannot suspend Job {job_id}: {e}"),
            }
        }
    }
}
