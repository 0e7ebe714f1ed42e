//! The exact bodies the real `lep` CLI sends (see `fixtures/lep/README.md`):
//! each parses, validates as stated, and serializes back to the same JSON,
//! so no field a Lepton client sends is lost.

use jobdeck_api::{
    from_json, validate_job, validate_job_in, FieldErrors, LeptonJob, Metadata, NodeGroup, NodeGroupSpec, NodeInfo,
    Priority, Protocol, ResourceAmounts, Shape, ShapeSpec, ValidationContext, Visibility,
};
use serde_json::Value;

fn vector(name: &str) -> (Value, LeptonJob) {
    let path = format!("{}/fixtures/lep/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let raw: Value = serde_json::from_slice(&bytes).unwrap();
    let job: LeptonJob = from_json(&bytes).unwrap_or_else(|e| panic!("{name} does not parse: {e}"));
    (raw, job)
}

/// The job serializes back to exactly what was sent: nothing lost, nothing
/// added.
fn assert_round_trips(name: &str, raw: &Value, job: &LeptonJob) {
    let back = serde_json::to_value(job).unwrap();
    assert_eq!(&back, raw, "{name} changed on its way through the types");
}

/// What a Jobdeck server with a `gpu-a` group of two nodes, `cpu.small` and
/// the two referenced secrets knows.
fn context() -> ValidationContext {
    ValidationContext {
        shapes: vec![(&Shape {
            metadata: Metadata { id: Some("cpu.small".into()), ..Default::default() },
            spec: ShapeSpec { memory_in_mb: Some(4096), ..Default::default() },
        })
            .into()],
        node_groups: vec![(&NodeGroup {
            metadata: Metadata { id: Some("gpu-a".into()), ..Default::default() },
            spec: NodeGroupSpec {
                nodes: ["node-1", "node-2"]
                    .map(|n| NodeInfo {
                        name: n.into(),
                        capacity: ResourceAmounts { cpu: 8.0, memory_in_mb: 65536, gpu: 0 },
                    })
                    .to_vec(),
                ..Default::default()
            },
            status: Default::default(),
        })
            .into()],
        secret_names: vec!["hf-token".into(), "WANDB_API_KEY".into()],
        ..Default::default()
    }
}

#[test]
fn hello_parses_validates_and_round_trips() {
    let (raw, job) = vector("hello");
    assert_round_trips("hello", &raw, &job);
    assert_eq!(validate_job(&job), FieldErrors::new());
    assert_eq!(validate_job_in(&job, &context()), FieldErrors::new());
    assert_eq!(job.name(), "hello");
    assert_eq!(job.visibility(), Visibility::Public);
    let spec = &job.spec;
    assert_eq!((spec.workers(), spec.completions(), spec.parallelism()), (1, 1, 1));
    assert_eq!(spec.container.command(), ["/bin/bash", "-c", "echo hi"]);
    assert_eq!(spec.priority(), Priority::MEDIUM);
    assert_eq!(spec.backoff_limit(), 3);
    assert_eq!(spec.ttl_seconds_after_finished(), 259_200);
}

#[test]
fn rich_parses_validates_and_round_trips() {
    let (raw, job) = vector("rich");
    assert_round_trips("rich", &raw, &job);
    assert_eq!(validate_job(&job), FieldErrors::new());
    assert_eq!(validate_job_in(&job, &context()), FieldErrors::new());
    assert_eq!(job.name(), "rich-train");
    assert_eq!(job.visibility(), Visibility::Private);
    let spec = &job.spec;
    // `--num-workers 2` arrives as two workers.
    assert_eq!((spec.workers(), spec.completions(), spec.parallelism()), (2, 2, 2));
    assert!(spec.intra_job_communication());
    assert_eq!(spec.priority().level(), 7);
    assert!(spec.can_preempt() && spec.can_be_preempted());
    assert_eq!(spec.node_groups(), ["gpu-a"]);
    assert_eq!(spec.nodes(), ["node-1"]);
    assert_eq!(spec.envs()[2].secret_ref(), Some("hf-token"));
    assert_eq!(spec.mounts()[1].from, "node-nfs:my-nfs");
    assert_eq!(spec.container.ports()[1].protocol(), Protocol::Udp);
    assert_eq!(spec.shared_memory_mib(4096), 1024);
    assert!(spec.log_collection(false));
    assert_eq!(spec.max_failure_retry(), Some(2));
    // Lepton has only the per-replica setting; it is the limit that applies.
    assert_eq!(spec.backoff_limit(), i64::from(i32::MAX));

    // The same payload on a server that lacks what it names.
    let errors = validate_job_in(&job, &ValidationContext::default());
    let paths: Vec<&str> = errors.keys().map(String::as_str).collect();
    assert_eq!(
        paths,
        [
            "spec.affinity.allowed_dedicated_node_groups[0]",
            "spec.affinity.allowed_nodes_in_node_group[0]",
            "spec.envs[2].value_from.secret_name_ref",
            "spec.envs[3].value_from.secret_name_ref",
            "spec.resource_shape",
        ]
    );
}

#[test]
fn from_file_carries_every_other_lepton_field_and_round_trips() {
    let (raw, job) = vector("from-file");
    assert_round_trips("from-file", &raw, &job);
    assert_eq!(validate_job(&job), FieldErrors::new());
    assert_eq!(validate_job_in(&job, &context()), FieldErrors::new());
    let spec = &job.spec;
    assert_eq!((spec.completions(), spec.parallelism(), spec.workers()), (6, 3, 1));
    assert_eq!(spec.priority().level(), 1);
    assert_eq!(spec.shared_memory_mib(4096), 0);
    assert_eq!(spec.container.image_reference().as_deref(), Some("busybox:1.36"));
    assert_eq!(spec.metrics.as_ref().and_then(|m| m.disable_pulling_from_replica), Some(true));
}

#[test]
fn lepton_only_features_round_trip_but_are_refused_by_name() {
    let (raw, job) = vector("lepton-only");
    assert_round_trips("lepton-only", &raw, &job);
    // Privileged containers are refused by the server's context (no node
    // group opens them to the caller's role), not by the contract alone.
    let errors = validate_job_in(&job, &context());
    let expected: FieldErrors = [
        ("spec.reservation_config.reservation_id", "Jobdeck has no reservations; leave this out"),
        (
            "spec.storage_attachments",
            "Jobdeck has no object-storage data sources; mount a volume with spec.mounts instead",
        ),
        (
            "spec.user_security_context.privileged",
            "Jobdeck does not run privileged containers for you here: no node group allows them for your role",
        ),
    ]
    .into_iter()
    .map(|(p, m)| (p.to_string(), vec![m.to_string()]))
    .collect();
    assert_eq!(errors, expected);
    // What it asks for otherwise is understood: four workers in segments of two.
    assert_eq!(job.spec.workers(), 4);
    assert_eq!(job.spec.segment_config.as_ref().map(|s| s.count_per_segment), Some(2));
    assert_eq!(job.spec.time_schedule.as_ref().and_then(|t| t.start_at), Some(1_893_553_445));
}

#[test]
fn a_field_lep_does_not_send_is_refused_with_its_path() {
    let (mut raw, _) = vector("hello");
    raw["spec"]["container"]["entrypoint"] = Value::from("sh");
    let bytes = serde_json::to_vec(&raw).unwrap();
    match from_json::<LeptonJob>(&bytes) {
        Err(jobdeck_api::JsonError::Fields(fields)) => {
            assert!(fields.contains_key("spec.container.entrypoint"), "{fields:?}")
        }
        other => panic!("expected a field error, got {other:?}"),
    }
}
