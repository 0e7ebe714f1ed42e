//! Starting one attempt: its supervisor's spec (command, environment,
//! container settings, volumes, limits), its run directory and supervisor,
//! and reporting it running.

use super::*;

impl LocalRunController {
    /// The supervisor's spec for one attempt.
    pub(super) fn supervise_spec(
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
            LogPaths { log, idx, cap: self.launch.resolved.log_cap_per_replica }
        });
        let cgroup = self
            .shared
            .memory
            .replica(&format!("{}-{replica}", self.shared.cgroup_prefix), self.launch.resolved.shape.memory_mb);
        let mut env = self.shared.base_env.clone();
        // The job's own grace period, else the server's.
        let grace = match self.launch.resolved.termination_grace_period_seconds {
            Some(seconds) => seconds.unsigned_abs(),
            None => self.shared.settings.grace_period_seconds,
        };
        let workdir = run_dir.join("work");
        let spec = match self.shared.settings.mode {
            LocalMode::Process | LocalMode::Auto => {
                for (k, v) in replica_env(&self.launch, index, &gpu_ids) {
                    env.retain(|(n, _)| *n != k);
                    env.push((k, v));
                }
                SuperviseSpec {
                    // Never empty with arguments alone: the contract
                    // requires a command in process mode.
                    command: self.launch.spec.container.command_line(),
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

    pub(super) fn container_settings(&self) -> container::ContainerSettings<'_> {
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
    pub(super) fn remove_container(&self, replica: &str) -> Option<Vec<String>> {
        (self.shared.settings.mode == LocalMode::Container).then(|| {
            vec![self.shared.settings.engine.clone(), "rm".into(), "-f".into(), container::container_name(replica)]
        })
    }

    pub(super) async fn start_attempt(&mut self, index: i64, attempt: i64, slot: usize) {
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
                let message = jobdeck_core::error_chain(&error);
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
            self.report_running(index, attempt, slot, observation, jobdeck_store::now_millis()).await;
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
    pub(super) async fn report_running(
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
        self.shared.host.note_replica_started(&self.launch.job_id, &replica, attempt, &node, "").await;
    }

    /// Lets the sampler read a running attempt.
    pub(super) fn register_target(&self, index: i64, attempt: i64, slot: usize) {
        let replica = self.replica_id(index, attempt);
        let source = match self.shared.settings.mode {
            LocalMode::Container => jobdeck_core::metrics::Source::Container {
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
                    .map(|spec| jobdeck_core::metrics::probe::MemoryCgroup { version: spec.version, dir: spec.dir });
                jobdeck_core::metrics::Source::Session { supervisor, cgroup }
            }
        };
        let target = jobdeck_core::metrics::Target {
            job_id: self.launch.job_id.clone(),
            completion_index: index,
            attempt,
            source,
            gpu_ids: self.launch.placement.slots.get(slot).map(|s| s.gpu_ids.clone()).unwrap_or_default(),
        };
        let mut targets = self.shared.targets.lock().unwrap_or_else(|p| p.into_inner());
        targets.insert((self.launch.job_id.clone(), index, attempt), target);
    }
}
