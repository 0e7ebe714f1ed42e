//! What the controller knows of a run: its pods with their attempt
//! numbers, what each replica last reported, and the observations it sends.

use super::*;

/// What a replica's `executor_state` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct PodState {
    pub(super) pod: String,
    pub(super) uid: String,
    #[serde(default)]
    pub(super) logs_copied: bool,
}

/// An attempt recorded before a restart.
#[derive(Debug, Clone)]
pub(super) struct KnownAttempt {
    pub(super) uid: String,
    pub(super) pod_name: String,
    pub(super) completion_index: i64,
    pub(super) attempt: i64,
    pub(super) finished: bool,
    pub(super) logs_copied: bool,
}

/// One pod the run has given an attempt number.
#[derive(Debug, Clone)]
pub(super) struct Tracked {
    pub(super) pod_name: String,
    pub(super) completion_index: i64,
    pub(super) attempt: i64,
    /// The last state read from the pod.
    pub(super) last: Option<PodAttempt>,
    /// The last observation reported.
    pub(super) reported: Option<ReplicaObservation>,
    pub(super) finished: bool,
    /// A copy of the log runs or ran to the end.
    pub(super) log_started: bool,
    pub(super) logs_copied: bool,
    /// When (Unix ms) a copy that broke, or ended while the container
    /// still ran, is started again.
    pub(super) log_retry_at: Option<i64>,
    /// How many copies of this pod's log broke so far (the pause before the
    /// next doubles with each, so a lasting error is not retried every
    /// second).
    pub(super) log_failures: u32,
    /// The kubelet said it is pulling the pod's image (a `Pulling` event,
    /// not yet followed by `Pulled` or a failure): a pending replica then
    /// says "Pulling image", as Lepton's do.
    pub(super) pulling: bool,
    /// Since when (Unix ms) the pod waits on something that never resolves
    /// by itself.
    pub(super) stuck_since: Option<i64>,
}

/// What the controller knows about one run.
pub(super) struct RunState {
    pub(super) job_id: String,
    pub(super) run: i64,
    pub(super) node_group: String,
    pub(super) first_attempt: i64,
    /// The job's indexes in the order of the Job's own, where the run runs
    /// chosen ones (a rerun of failed indexes): a pod of the Job's index
    /// `p` is the job's index `indexes[p]`.
    pub(super) indexes: Option<Vec<i64>>,
    pub(super) log_collection: bool,
    /// Each attempt's share of the job's log cap (bytes).
    pub(super) log_cap: Option<u64>,
    /// When the run was registered; older events belong to earlier runs.
    pub(super) since_ms: i64,
    pub(super) job_uid: Option<String>,
    pub(super) tracked: HashMap<String, Tracked>,
    pub(super) next_attempt: BTreeMap<i64, i64>,
    pub(super) stop: Option<StopReason>,
    /// Set when the run failed on Jobdeck's own account (a pod that can
    /// never start); the Job is being suspended.
    pub(super) failure: Option<RunFailure>,
}

impl RunState {
    pub(super) fn new(launch: &JobLaunch, known: Vec<KnownAttempt>, since_ms: i64) -> Self {
        let mut state = RunState {
            job_id: launch.job_id.clone(),
            run: launch.run,
            node_group: launch.placement.node_group.clone(),
            first_attempt: launch.first_attempt,
            indexes: launch.resolved.chosen_indexes.clone(),
            log_collection: launch.resolved.log_collection,
            log_cap: launch.resolved.log_cap_per_replica,
            since_ms,
            job_uid: None,
            tracked: HashMap::new(),
            next_attempt: BTreeMap::new(),
            stop: None,
            failure: None,
        };
        for k in known {
            let next = state.next_attempt.entry(k.completion_index).or_insert(launch.first_attempt);
            *next = (*next).max(k.attempt + 1);
            state.tracked.insert(
                k.uid,
                Tracked {
                    pod_name: k.pod_name,
                    completion_index: k.completion_index,
                    attempt: k.attempt,
                    last: None,
                    reported: None,
                    finished: k.finished,
                    log_started: k.logs_copied,
                    logs_copied: k.logs_copied,
                    log_retry_at: None,
                    log_failures: 0,
                    pulling: false,
                    stuck_since: None,
                },
            );
        }
        state
    }

    pub(super) fn replica_id(&self, tracked: &Tracked) -> String {
        replica_id(&self.job_id, tracked.completion_index, tracked.attempt)
    }
}

pub(super) fn pod_state(tracked: &Tracked) -> String {
    let uid = tracked.last.as_ref().map(|a| a.pod_uid.clone()).unwrap_or_default();
    serde_json::to_string(&PodState { pod: tracked.pod_name.clone(), uid, logs_copied: tracked.logs_copied })
        .unwrap_or_default()
}

pub(super) fn observation(
    job_id: &str,
    run: i64,
    node_group: &str,
    tracked: &Tracked,
    attempt: &PodAttempt,
) -> ReplicaObservation {
    ReplicaObservation {
        job_id: job_id.to_string(),
        run,
        completion_index: tracked.completion_index,
        attempt: tracked.attempt,
        phase: attempt.phase,
        readiness_issue: match &attempt.readiness_issue {
            // Lepton's words for a replica whose image is being pulled.
            Some(issue)
                if tracked.pulling && attempt.phase == ReplicaPhase::Pending && issue.reason == "InProgress" =>
            {
                Some(ReadinessIssue { reason: "InProgress".into(), message: "Pulling image".into() })
            }
            other => other.clone(),
        },
        node: attempt.node.clone(),
        node_group: attempt.node.as_ref().map(|_| node_group.to_string()),
        gpu_ids: Vec::new(),
        exit_code: attempt.exit_code,
        signal: attempt.signal,
        reason: attempt.reason.clone(),
        message: attempt.message.clone(),
        start_time: attempt.start_time,
        end_time: attempt.end_time,
        executor_state: Some(pod_state(tracked)),
        retry_at: None,
        executor_id: Some(attempt.pod_name.clone()),
    }
}

pub(super) fn end_observation(observation: &mut ReplicaObservation, reason: EndReason, message: &str, now: i64) {
    observation.phase = ReplicaPhase::Failed;
    observation.readiness_issue = None;
    observation.reason = Some(reason);
    observation.message = Some(message.to_string());
    observation.end_time.get_or_insert(now);
}
