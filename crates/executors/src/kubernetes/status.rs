//! Kubernetes objects → Jobdeck's view of them: a pod is one replica attempt
//! with a phase, a readiness issue while it waits, and an exit code, reason
//! and failure class once it ends; a Job's conditions say how the run ended;
//! Kubernetes events become job events. Pure functions, so they are tested
//! on the same pod documents the fake API server serves.

use jobdeck_api::{EndReason, EventType, JobEvent, ReadinessIssue, ReplicaPhase};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ContainerStatus, Event, Pod, PodCondition};

use super::mapping::{COMPLETION_INDEX_ANNOTATION, CONTAINER_NAME, LABEL_RUN};

/// Container waiting reasons that mean the image cannot be pulled.
pub const IMAGE_PULL_REASONS: [&str; 5] =
    ["ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "RegistryUnavailable"];
/// Container waiting reasons that mean the pod's configuration is wrong (a
/// missing Secret key, an unusable command).
pub const CONFIG_REASONS: [&str; 3] = ["CreateContainerConfigError", "CreateContainerError", "RunContainerError"];

/// Why a pod waits, in more detail than Lepton's readiness reasons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitKind {
    /// The scheduler found no node with room (`Unschedulable`).
    NoCapacity,
    /// The image cannot be pulled.
    ImagePull,
    /// The pod's configuration is wrong.
    Config,
    /// Scheduling is held back (scheduling gates).
    Queueing,
    /// The node stopped reporting (`Unknown` phase).
    NodeLost,
    /// Being scheduled, pulled or created.
    InProgress,
}

/// The failure classes of design §7, shared with the local executor and the
/// failure analysis.
pub use jobdeck_core::failure::FailureClass;

/// One pod of a Job seen as a replica attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct PodAttempt {
    pub pod_name: String,
    pub pod_uid: String,
    /// The Jobdeck run the pod belongs to (`jobdeck.dev/run`).
    pub run: Option<i64>,
    pub completion_index: i64,
    /// Unix milliseconds; orders the attempts of one index.
    pub created_ms: i64,
    pub phase: ReplicaPhase,
    pub wait: Option<WaitKind>,
    pub readiness_issue: Option<ReadinessIssue>,
    pub node: Option<String>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Why the attempt ended.
    pub reason: Option<EndReason>,
    pub message: Option<String>,
    /// Unix milliseconds.
    pub start_time: Option<i64>,
    pub end_time: Option<i64>,
    /// Kubernetes is deleting the pod (a stop, a preemption, a drain).
    pub terminating: bool,
}

impl PodAttempt {
    /// The failure class of an attempt that failed or cannot start.
    pub fn failure_class(&self) -> Option<FailureClass> {
        match self.phase {
            // The shared classifier, from the pod's termination state. The
            // pod log is not consulted here: Kubernetes' own pod failure
            // policy has already acted on the exit code alone.
            ReplicaPhase::Failed => Some(jobdeck_core::failure::classify(
                &jobdeck_core::failure::AttemptEnd {
                    reason: self.reason.as_ref(),
                    exit_code: self.exit_code,
                    signal: self.signal,
                },
                None,
            )),
            ReplicaPhase::Pending => match self.wait {
                Some(WaitKind::ImagePull) => Some(FailureClass::ImagePull),
                Some(WaitKind::Config) => Some(FailureClass::Config),
                _ => None,
            },
            _ => None,
        }
    }
}

/// Whether an exit code is the program's own failure: non-zero and not one
/// of the signals the kubelet sends (see `NOT_PROGRAM_ERROR_EXIT_CODES`).
pub fn is_program_exit_code(code: i32) -> bool {
    jobdeck_core::failure::is_program_exit(Some(code), None)
}

fn millis(time: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time) -> i64 {
    time.0.as_millisecond()
}

fn condition<'a>(pod: &'a Pod, kind: &str) -> Option<&'a PodCondition> {
    pod.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == kind)
}

fn job_container(pod: &Pod) -> Option<&ContainerStatus> {
    pod.status.as_ref()?.container_statuses.as_ref()?.iter().find(|c| c.name == CONTAINER_NAME)
}

/// The completion index of a pod of an Indexed Job, from the annotation
/// (every version) or the label of the same name (1.28+).
pub fn completion_index(pod: &Pod) -> Option<i64> {
    let meta = &pod.metadata;
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(COMPLETION_INDEX_ANNOTATION))
        .or_else(|| meta.labels.as_ref().and_then(|l| l.get(COMPLETION_INDEX_ANNOTATION)))
        .and_then(|v| v.parse().ok())
}

/// Reads one pod as a replica attempt; `None` for a pod without a
/// completion index (not one of an Indexed Job's).
pub fn pod_attempt(pod: &Pod) -> Option<PodAttempt> {
    let completion_index = completion_index(pod)?;
    let status = pod.status.clone().unwrap_or_default();
    let container = job_container(pod);
    let terminated = container.and_then(|c| c.state.as_ref()).and_then(|s| s.terminated.as_ref());
    let running = container.and_then(|c| c.state.as_ref()).and_then(|s| s.running.as_ref());
    let waiting = container.and_then(|c| c.state.as_ref()).and_then(|s| s.waiting.as_ref());

    let mut attempt = PodAttempt {
        pod_name: pod.metadata.name.clone().unwrap_or_default(),
        pod_uid: pod.metadata.uid.clone().unwrap_or_default(),
        run: pod.metadata.labels.as_ref().and_then(|l| l.get(LABEL_RUN)).and_then(|r| r.parse().ok()),
        completion_index,
        created_ms: pod.metadata.creation_timestamp.as_ref().map(millis).unwrap_or(0),
        phase: ReplicaPhase::Pending,
        wait: None,
        readiness_issue: None,
        node: pod.spec.as_ref().and_then(|s| s.node_name.clone()),
        exit_code: terminated.map(|t| t.exit_code),
        signal: terminated.and_then(|t| t.signal),
        reason: None,
        message: None,
        start_time: running
            .and_then(|r| r.started_at.as_ref())
            .or_else(|| terminated.and_then(|t| t.started_at.as_ref()))
            .or(status.start_time.as_ref())
            .map(millis),
        end_time: terminated.and_then(|t| t.finished_at.as_ref()).map(millis),
        terminating: pod.metadata.deletion_timestamp.is_some(),
    };

    match status.phase.as_deref() {
        Some("Succeeded") => {
            attempt.phase = ReplicaPhase::Succeeded;
            attempt.reason = Some(EndReason::Completed);
        }
        Some("Failed") => {
            attempt.phase = ReplicaPhase::Failed;
            let (reason, message) = failed_reason(pod, terminated);
            attempt.reason = Some(reason);
            attempt.message = message;
            if attempt.end_time.is_none() {
                attempt.end_time = condition(pod, "Ready").and_then(|c| c.last_transition_time.as_ref()).map(millis);
            }
        }
        Some("Running") => attempt.phase = ReplicaPhase::Running,
        Some("Unknown") => {
            attempt.wait = Some(WaitKind::NodeLost);
            attempt.readiness_issue = Some(ReadinessIssue {
                reason: "SystemError".into(),
                message: format!(
                    "node {} stopped reporting the state of this replica",
                    attempt.node.as_deref().unwrap_or("(unknown)")
                ),
            });
        }
        _ => {
            let (kind, issue) = pending_issue(pod, waiting.map(|w| (w.reason.as_deref(), w.message.as_deref())));
            attempt.wait = Some(kind);
            attempt.readiness_issue = Some(issue);
        }
    }
    Some(attempt)
}

/// Why a failed pod failed, most telling first: an OOM kill, an eviction, a
/// disruption (preemption, drain, node loss), a pod deadline, then the
/// container's own reason.
fn failed_reason(
    pod: &Pod,
    terminated: Option<&k8s_openapi::api::core::v1::ContainerStateTerminated>,
) -> (EndReason, Option<String>) {
    let status = pod.status.as_ref();
    let pod_reason = status.and_then(|s| s.reason.as_deref());
    let pod_message = status.and_then(|s| s.message.clone());
    let container_reason = terminated.and_then(|t| t.reason.as_deref()).map(cluster_end_reason);
    if container_reason == Some(EndReason::OomKilled) {
        return (
            EndReason::OomKilled,
            Some("the container used more memory than its shape allows and was killed".into()),
        );
    }
    let pod_reason = pod_reason.map(cluster_end_reason);
    if pod_reason == Some(EndReason::Evicted) {
        return (EndReason::Evicted, pod_message);
    }
    if let Some(disruption) = condition(pod, "DisruptionTarget").filter(|c| c.status == "True") {
        let reason = match disruption.reason.as_deref() {
            Some("PreemptionByScheduler") => EndReason::Preempted,
            Some("DeletionByTaintManager") => EndReason::NodeLost,
            Some("DeletionByPodGC") => EndReason::Lost,
            _ => EndReason::Evicted,
        };
        return (reason, disruption.message.clone().or(pod_message));
    }
    if pod_reason == Some(EndReason::DeadlineExceeded) {
        return (EndReason::DeadlineExceeded, pod_message);
    }
    match terminated {
        Some(t) => {
            let reason = container_reason.unwrap_or(EndReason::Error);
            let message = t.message.clone().or_else(|| match t.signal {
                Some(signal) => Some(format!("killed by signal {signal}")),
                None if t.exit_code != 0 => Some(format!("exited with code {}", t.exit_code)),
                None => None,
            });
            (reason, message)
        }
        None => (pod_reason.unwrap_or_else(|| EndReason::Other("Failed".into())), pod_message),
    }
}

/// The end reason a Kubernetes word names: the kubelet's and the container
/// runtimes' words for an image that cannot be pulled or a container that
/// cannot be created are Jobdeck's reasons for the same; any other word is
/// read as the enum reads it.
fn cluster_end_reason(word: &str) -> EndReason {
    match word {
        "ErrImagePull" | "ImagePullBackOff" => EndReason::ImagePullFailed,
        "CreateContainerConfigError" | "CreateContainerError" => EndReason::ConfigError,
        other => EndReason::parse(other),
    }
}

/// Why a pending pod is not running yet.
fn pending_issue(pod: &Pod, waiting: Option<(Option<&str>, Option<&str>)>) -> (WaitKind, ReadinessIssue) {
    let issue = |reason: &str, message: String| ReadinessIssue { reason: reason.into(), message };
    if let Some((Some(reason), message)) = waiting {
        let detail = message.unwrap_or("").trim();
        let text = |what: &str| {
            if detail.is_empty() {
                format!("{what} ({reason})")
            } else {
                format!("{what} ({reason}): {detail}")
            }
        };
        if IMAGE_PULL_REASONS.contains(&reason) {
            // Lepton's readiness reason for a failed pull.
            return (WaitKind::ImagePull, issue("Failed", text("cannot pull the image")));
        }
        if CONFIG_REASONS.contains(&reason) {
            return (WaitKind::Config, issue("ConfigError", text("cannot create the container")));
        }
    }
    if let Some(scheduled) = condition(pod, "PodScheduled").filter(|c| c.status == "False") {
        let message = scheduled.message.clone().unwrap_or_default();
        return match scheduled.reason.as_deref() {
            Some("Unschedulable") => (
                WaitKind::NoCapacity,
                issue(
                    "NoCapacity",
                    if message.is_empty() { "no node has room for this replica".into() } else { message },
                ),
            ),
            Some("SchedulingGated") => {
                (WaitKind::Queueing, issue("Queueing", "waiting for its scheduling gates to be lifted".into()))
            }
            _ => (WaitKind::InProgress, issue("InProgress", "being scheduled".into())),
        };
    }
    let message = match waiting.and_then(|(reason, _)| reason) {
        Some(reason) => format!("starting ({reason})"),
        None if pod.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some() => "starting".into(),
        None => "being scheduled".into(),
    };
    (WaitKind::InProgress, issue("InProgress", message))
}

/// How a Kubernetes Job says its run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum JobEnd {
    Succeeded,
    Failed { reason: String, message: String },
}

/// The end of a Job from its conditions (`Complete`/`SuccessCriteriaMet`,
/// `Failed`/`FailureTarget`); `None` while it runs or is suspended.
pub fn job_end(job: &Job) -> Option<JobEnd> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    let is_true = |kind: &str| conditions.iter().find(|c| c.type_ == kind && c.status == "True");
    if is_true("Complete").or_else(|| is_true("SuccessCriteriaMet")).is_some() {
        return Some(JobEnd::Succeeded);
    }
    let failed = is_true("Failed").or_else(|| is_true("FailureTarget"))?;
    Some(JobEnd::Failed {
        reason: failed.reason.clone().unwrap_or_else(|| "Failed".into()),
        message: failed.message.clone().unwrap_or_default(),
    })
}

/// Whether a Job is suspended and none of its pods is still active.
pub fn job_suspended(job: &Job) -> bool {
    let status = job.status.as_ref();
    let suspended = status
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Suspended" && c.status == "True"));
    suspended && status.and_then(|s| s.active).unwrap_or(0) == 0
}

/// A failed run explained: the reason the scheduler records, its failure
/// class, and whether the user's program is to blame.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFailure {
    pub reason: EndReason,
    pub message: String,
    pub class: FailureClass,
    pub program_error: bool,
}

/// Explains a Job's failure from its condition and its pods. The Job's
/// reason decides deadline and "program error, no retry"; a backoff limit
/// takes the class of the first attempt that failed.
pub fn run_failure(reason: &str, message: &str, attempts: &[PodAttempt]) -> RunFailure {
    let first_failed = attempts
        .iter()
        .filter(|a| a.phase == ReplicaPhase::Failed)
        .min_by_key(|a| (a.end_time.unwrap_or(i64::MAX), a.completion_index));
    let (class, reason) = match reason {
        // The only FailJob rule Jobdeck writes is the program-error rule.
        "PodFailurePolicy" => (FailureClass::Program, EndReason::ProgramError),
        other => match cluster_end_reason(other) {
            EndReason::DeadlineExceeded => (FailureClass::Deadline, EndReason::DeadlineExceeded),
            reason => (first_failed.and_then(PodAttempt::failure_class).unwrap_or(FailureClass::Infra), reason),
        },
    };
    let message = match first_failed {
        Some(a) if !message.is_empty() => format!(
            "{message}; first failure: replica {} ({}{})",
            a.completion_index,
            a.reason.as_ref().map_or("failed", EndReason::as_str),
            a.exit_code.map(|c| format!(", exit code {c}")).unwrap_or_default()
        ),
        _ => message.to_string(),
    };
    RunFailure { reason, message, class, program_error: class.is_program_error() }
}

/// The failure of a run whose pods cannot start at all (an image that
/// cannot be pulled, a configuration the kubelet rejects): Kubernetes keeps
/// such pods pending forever, so the executor ends the run itself.
pub fn stuck_failure(attempt: &PodAttempt) -> Option<RunFailure> {
    let class = match attempt.wait? {
        WaitKind::ImagePull => FailureClass::ImagePull,
        WaitKind::Config => FailureClass::Config,
        _ => return None,
    };
    let reason = match class {
        FailureClass::ImagePull => EndReason::ImagePullFailed,
        _ => EndReason::ConfigError,
    };
    Some(RunFailure {
        reason,
        message: attempt.readiness_issue.as_ref().map(|i| i.message.clone()).unwrap_or_default(),
        class,
        program_error: class.is_program_error(),
    })
}

/// A Kubernetes event as a job event; `replica_of` names the replica of a
/// pod (its attempt's replica id) so events point at replicas, not pods.
/// The order events are replayed in: when each first happened, then its
/// name. Not by `resourceVersion`, which Kubernetes documents as opaque (it
/// is not a number clients may compare), and which orders writes to the
/// event object, not occurrences.
pub fn event_order(event: &Event) -> (i64, String) {
    let first = event
        .event_time
        .as_ref()
        .map(|t| t.0)
        .or_else(|| event.first_timestamp.as_ref().map(|t| t.0))
        .or_else(|| event.metadata.creation_timestamp.as_ref().map(|t| t.0))
        .map(|t| t.as_millisecond())
        .unwrap_or(0);
    (first, event.metadata.name.clone().unwrap_or_default())
}

pub fn job_event(event: &Event, replica_of: impl Fn(&str) -> Option<String>) -> JobEvent {
    let involved = &event.involved_object;
    let kind = involved.kind.clone().unwrap_or_default();
    let name = involved.name.clone().unwrap_or_default();
    let regarding = match kind.as_str() {
        "Pod" => jobdeck_api::EventSubject { kind: "Replica".into(), name: replica_of(&name).unwrap_or(name) },
        _ => jobdeck_api::EventSubject { kind, name },
    };
    let last = event
        .series
        .as_ref()
        .and_then(|s| s.last_observed_time.as_ref())
        .map(|t| t.0)
        .or_else(|| event.last_timestamp.as_ref().map(|t| t.0))
        .or_else(|| event.event_time.as_ref().map(|t| t.0))
        .or_else(|| event.first_timestamp.as_ref().map(|t| t.0))
        .or_else(|| event.metadata.creation_timestamp.as_ref().map(|t| t.0));
    JobEvent {
        // Kubernetes has no other event types; a missing one is Normal.
        kind: event.type_.as_deref().and_then(EventType::parse).unwrap_or_default(),
        reason: event.reason.clone().unwrap_or_default(),
        regarding: Some(regarding),
        count: event.series.as_ref().and_then(|s| s.count).or(event.count).map(i64::from).unwrap_or(1),
        last_observed_time: last.map(|t| t.to_string()).unwrap_or_default(),
        message: event.message.clone().unwrap_or_default(),
    }
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
