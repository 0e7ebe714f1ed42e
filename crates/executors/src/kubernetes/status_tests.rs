//! Pods as the API server reports them (testdata/pods.json, also served by
//! the fake API server) read as replica attempts.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::List;
use serde_json::json;

use super::*;

fn pods() -> Vec<Pod> {
    let list: List<Pod> = serde_json::from_str(include_str!("testdata/pods.json")).unwrap();
    list.items
}

fn attempt(name: &str) -> PodAttempt {
    let pod = pods()
        .into_iter()
        .find(|p| p.metadata.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no pod {name}"));
    pod_attempt(&pod).unwrap()
}

fn ms(rfc3339: &str) -> i64 {
    rfc3339.parse::<k8s_openapi::jiff::Timestamp>().unwrap().as_millisecond()
}

struct Expect {
    pod: &'static str,
    index: i64,
    phase: ReplicaPhase,
    issue: Option<(&'static str, &'static str)>,
    reason: Option<&'static str>,
    exit_code: Option<i32>,
    node: Option<&'static str>,
    class: Option<FailureClass>,
}

#[test]
fn pods_read_as_replica_attempts() {
    use ReplicaPhase::*;
    let table = [
        Expect {
            pod: "train-ab12c-0-x7k2p",
            index: 0,
            phase: Pending,
            issue: Some(("NoCapacity", "2 Insufficient nvidia.com/gpu")),
            reason: None,
            exit_code: None,
            node: None,
            class: None,
        },
        Expect {
            pod: "train-ab12c-1-m9q4z",
            index: 1,
            phase: Pending,
            issue: Some(("Failed", "cannot pull the image (ImagePullBackOff): Back-off pulling image")),
            reason: None,
            exit_code: None,
            node: Some("gpu-node-1"),
            class: Some(FailureClass::ImagePull),
        },
        Expect {
            pod: "train-ab12c-2-b5t8w",
            index: 2,
            phase: Running,
            issue: None,
            reason: None,
            exit_code: None,
            node: Some("gpu-node-2"),
            class: None,
        },
        Expect {
            pod: "train-ab12c-3-q2w6e",
            index: 3,
            phase: Succeeded,
            issue: None,
            reason: Some("Completed"),
            exit_code: Some(0),
            node: Some("gpu-node-2"),
            class: None,
        },
        Expect {
            pod: "train-ab12c-4-z8x1c",
            index: 4,
            phase: Failed,
            issue: None,
            reason: Some("OOMKilled"),
            exit_code: Some(137),
            node: Some("gpu-node-3"),
            class: Some(FailureClass::Oom),
        },
        Expect {
            pod: "train-ab12c-5-e4r7t",
            index: 5,
            phase: Failed,
            issue: None,
            reason: Some("Evicted"),
            exit_code: Some(137),
            node: Some("gpu-node-3"),
            class: Some(FailureClass::Infra),
        },
        Expect {
            pod: "train-ab12c-6-y3u5i",
            index: 6,
            phase: Failed,
            issue: None,
            reason: Some("Error"),
            exit_code: Some(1),
            node: Some("gpu-node-1"),
            class: Some(FailureClass::Program),
        },
        Expect {
            pod: "train-ab12c-6-p0o9l",
            index: 6,
            phase: Pending,
            issue: Some((
                "ConfigError",
                "cannot create the container (CreateContainerConfigError): secret \"train-ab12c-env\" not found",
            )),
            reason: None,
            exit_code: None,
            node: Some("gpu-node-1"),
            class: Some(FailureClass::Config),
        },
        Expect {
            pod: "train-ab12c-7-h6j3k",
            index: 7,
            phase: Pending,
            issue: Some(("InProgress", "starting (ContainerCreating)")),
            reason: None,
            exit_code: None,
            node: Some("gpu-node-2"),
            class: None,
        },
        Expect {
            pod: "train-ab12c-8-n1m2b",
            index: 8,
            phase: Failed,
            issue: None,
            reason: Some("Preempted"),
            exit_code: Some(143),
            node: Some("gpu-node-2"),
            class: Some(FailureClass::Infra),
        },
    ];
    assert_eq!(pods().len(), table.len(), "every pod of the fixture has a row");
    for row in table {
        let a = attempt(row.pod);
        assert_eq!(a.completion_index, row.index, "{}", row.pod);
        assert_eq!(a.run, Some(0), "{}", row.pod);
        assert_eq!(a.phase, row.phase, "{}", row.pod);
        match (row.issue, &a.readiness_issue) {
            (None, None) => {}
            (Some((reason, message)), Some(issue)) => {
                assert_eq!(issue.reason, reason, "{}", row.pod);
                assert!(issue.message.contains(message), "{}: {:?}", row.pod, issue.message);
            }
            (expected, actual) => panic!("{}: readiness issue {expected:?} vs {actual:?}", row.pod),
        }
        assert_eq!(a.reason.as_ref().map(EndReason::as_str), row.reason, "{}", row.pod);
        assert_eq!(a.exit_code, row.exit_code, "{}", row.pod);
        assert_eq!(a.node.as_deref(), row.node, "{}", row.pod);
        assert_eq!(a.failure_class(), row.class, "{}", row.pod);
    }
}

#[test]
fn times_messages_and_uids_come_from_the_pod() {
    let done = attempt("train-ab12c-3-q2w6e");
    assert_eq!(done.start_time, Some(ms("2026-01-10T10:00:04Z")));
    assert_eq!(done.end_time, Some(ms("2026-01-10T10:05:00Z")));
    assert_eq!(done.pod_uid, "aaaaaaaa-0000-4000-8000-0000000000a3");
    let running = attempt("train-ab12c-2-b5t8w");
    assert_eq!(running.start_time, Some(ms("2026-01-10T10:00:05Z")));
    assert_eq!(running.end_time, None);
    let evicted = attempt("train-ab12c-5-e4r7t");
    assert!(evicted.message.as_deref().unwrap().contains("low on resource: ephemeral-storage"));
    let preempted = attempt("train-ab12c-8-n1m2b");
    assert!(preempted.message.as_deref().unwrap().contains("Preempted by pod"));
    let failed = attempt("train-ab12c-6-y3u5i");
    assert_eq!(failed.message.as_deref(), Some("exited with code 1"));
    // The retry of index 6 was created after the failed attempt.
    assert!(attempt("train-ab12c-6-p0o9l").created_ms > failed.created_ms);
}

#[test]
fn program_exit_codes() {
    let cases = [(0, false), (1, true), (2, true), (127, true), (139, true), (137, false), (143, false)];
    for (code, program) in cases {
        assert_eq!(is_program_exit_code(code), program, "{code}");
    }
}

fn job_with_conditions(conditions: serde_json::Value, active: i64) -> Job {
    serde_json::from_value(json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "train-ab12c"},
        "status": {"conditions": conditions, "active": active}
    }))
    .unwrap()
}

#[test]
fn job_conditions_say_how_a_run_ended() {
    let cond = |t: &str, reason: &str| json!({"type": t, "status": "True", "reason": reason, "message": format!("{reason} message")});
    let cases = [
        (
            json!([cond("SuccessCriteriaMet", "CompletionsReached"), cond("Complete", "CompletionsReached")]),
            Some(JobEnd::Succeeded),
        ),
        (
            json!([cond("FailureTarget", "BackoffLimitExceeded")]),
            Some(JobEnd::Failed {
                reason: "BackoffLimitExceeded".into(),
                message: "BackoffLimitExceeded message".into(),
            }),
        ),
        (
            json!([cond("Failed", "DeadlineExceeded")]),
            Some(JobEnd::Failed { reason: "DeadlineExceeded".into(), message: "DeadlineExceeded message".into() }),
        ),
        (json!([{"type": "Failed", "status": "False"}]), None),
        (json!([cond("Suspended", "JobSuspended")]), None),
        (json!([]), None),
    ];
    for (conditions, expected) in cases {
        assert_eq!(job_end(&job_with_conditions(conditions.clone(), 0)), expected, "{conditions}");
    }
    let suspended = json!([cond("Suspended", "JobSuspended")]);
    assert!(job_suspended(&job_with_conditions(suspended.clone(), 0)));
    assert!(!job_suspended(&job_with_conditions(suspended, 2)), "pods still terminating");
    assert!(!job_suspended(&job_with_conditions(json!([]), 0)));
}

#[test]
fn run_failures_are_classified() {
    let all: Vec<PodAttempt> = pods().iter().filter_map(pod_attempt).collect();
    let only = |names: &[&str]| -> Vec<PodAttempt> {
        all.iter().filter(|a| names.contains(&a.pod_name.as_str())).cloned().collect()
    };
    let cases: Vec<(&str, Vec<PodAttempt>, FailureClass, &str, bool)> = vec![
        ("DeadlineExceeded", only(&["train-ab12c-2-b5t8w"]), FailureClass::Deadline, "DeadlineExceeded", false),
        ("PodFailurePolicy", only(&["train-ab12c-6-y3u5i"]), FailureClass::Program, "ProgramError", true),
        // The OOM kill (10:02:30) came before the eviction (10:03:00).
        (
            "BackoffLimitExceeded",
            only(&["train-ab12c-4-z8x1c", "train-ab12c-5-e4r7t"]),
            FailureClass::Oom,
            "BackoffLimitExceeded",
            false,
        ),
        // The exit code 1 (10:01:00) came first.
        ("BackoffLimitExceeded", all.clone(), FailureClass::Program, "BackoffLimitExceeded", true),
        ("BackoffLimitExceeded", only(&["train-ab12c-8-n1m2b"]), FailureClass::Infra, "BackoffLimitExceeded", false),
        ("BackoffLimitExceeded", vec![], FailureClass::Infra, "BackoffLimitExceeded", false),
    ];
    for (reason, attempts, class, recorded, program) in cases {
        let failure = run_failure(reason, "Job has reached the specified backoff limit", &attempts);
        assert_eq!(failure.class, class, "{reason} {:?}", attempts.iter().map(|a| &a.pod_name).collect::<Vec<_>>());
        assert_eq!(failure.reason.as_str(), recorded);
        assert_eq!(failure.program_error, program);
    }
    let failure = run_failure("BackoffLimitExceeded", "Job has reached the specified backoff limit", &all);
    assert!(failure.message.contains("first failure: replica 6 (Error, exit code 1)"), "{}", failure.message);
}

#[test]
fn pods_that_can_never_start_fail_the_run() {
    let pull = stuck_failure(&attempt("train-ab12c-1-m9q4z")).unwrap();
    assert_eq!(
        (pull.class, pull.reason.as_str(), pull.program_error),
        (FailureClass::ImagePull, "ImagePullFailed", false)
    );
    assert!(pull.message.contains("401 Unauthorized"));
    let config = stuck_failure(&attempt("train-ab12c-6-p0o9l")).unwrap();
    assert_eq!(config.class, FailureClass::Config);
    assert_eq!(stuck_failure(&attempt("train-ab12c-0-x7k2p")), None, "waiting for capacity is not a failure");
    assert_eq!(stuck_failure(&attempt("train-ab12c-2-b5t8w")), None);
}

#[test]
fn kubernetes_events_become_job_events() {
    let event: Event = serde_json::from_value(json!({
        "metadata": {"name": "train-ab12c-1-m9q4z.17a", "namespace": "ml"},
        "involvedObject": {"kind": "Pod", "name": "train-ab12c-1-m9q4z", "namespace": "ml"},
        "reason": "Failed", "type": "Warning", "count": 4,
        "message": "Failed to pull image \"registry.example.com/team/train:v1\": 401 Unauthorized",
        "firstTimestamp": "2026-01-10T10:00:03Z", "lastTimestamp": "2026-01-10T10:02:03Z"
    }))
    .unwrap();
    let e = job_event(&event, |pod| (pod == "train-ab12c-1-m9q4z").then(|| "train-ab12c-1-0".to_string()));
    assert_eq!(e.kind, jobdeck_api::EventType::Warning);
    assert_eq!(e.reason, "Failed");
    assert_eq!(e.count, 4);
    assert_eq!(e.last_observed_time, "2026-01-10T10:02:03Z");
    assert_eq!(e.regarding.as_ref().unwrap().kind, "Replica");
    assert_eq!(e.regarding.as_ref().unwrap().name, "train-ab12c-1-0");
    assert!(e.message.contains("401"));

    let series: Event = serde_json::from_value(json!({
        "metadata": {"name": "train-ab12c.1", "creationTimestamp": "2026-01-10T09:59:59Z"},
        "involvedObject": {"kind": "Job", "name": "train-ab12c"},
        "reason": "SuccessfulCreate", "type": "Normal",
        "eventTime": "2026-01-10T10:00:00.000000Z",
        "series": {"count": 9, "lastObservedTime": "2026-01-10T10:09:00.000000Z"},
        "message": "Created pod: train-ab12c-0-x7k2p"
    }))
    .unwrap();
    let e = job_event(&series, |_| None);
    assert_eq!(e.count, 9);
    assert_eq!(e.last_observed_time, "2026-01-10T10:09:00Z");
    assert_eq!(e.regarding.as_ref().unwrap().kind, "Job");
}

#[test]
fn events_replay_in_the_order_they_happened_whatever_their_resource_versions() {
    let event = |name: &str, version: &str, time: serde_json::Value| -> Event {
        let mut value = json!({
            "metadata": {"name": name, "resourceVersion": version},
            "involvedObject": {"kind": "Pod", "name": "p"},
        });
        value.as_object_mut().unwrap().extend(time.as_object().unwrap().clone());
        serde_json::from_value(value).unwrap()
    };
    let mut events = [
        // Opaque versions that sort the wrong way as numbers or as text.
        event("pulled", "9", json!({"firstTimestamp": "2026-01-10T10:00:05Z"})),
        event("scheduled", "10", json!({"eventTime": "2026-01-10T10:00:01.500000Z"})),
        event("started", "abc", json!({"firstTimestamp": "2026-01-10T10:00:07Z"})),
        event("created", "8", json!({"firstTimestamp": "2026-01-10T10:00:07Z"})),
    ];
    events.sort_by_key(event_order);
    let names: Vec<&str> = events.iter().map(|e| e.metadata.name.as_deref().unwrap()).collect();
    assert_eq!(names, ["scheduled", "pulled", "created", "started"]);
}
