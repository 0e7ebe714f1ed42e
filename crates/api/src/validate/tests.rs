//! Every rule of `validate_job` and `validate_job_in`, as tables: for each
//! rule the valid boundary and the first invalid value on each side, with
//! the exact field path and message a person sees.

use super::*;
use crate::{
    Affinity, ContainerPort, EnvValue, JobRequirements, Mount, MountOptions, NodeGroup, NodeGroupSpec, NodeInfo,
    QueueConfig, ReservationConfig, ResourceAmounts, SegmentConfig, ShapeSpec, StorageAttachment, TimeSchedule,
    UserSecurityContext,
};

/// A valid job every case starts from.
fn base() -> LeptonJob {
    LeptonJob {
        metadata: Metadata { name: Some("train".into()), ..Default::default() },
        spec: JobSpec {
            resource_shape: Some("cpu.small".into()),
            container: Container {
                image: Some("busybox".into()),
                command: Some(vec!["/bin/sh".into(), "-c".into(), "echo hi".into()]),
                ..Default::default()
            },
            ..Default::default()
        },
        status: None,
    }
}

type Case = (&'static str, fn(&mut LeptonJob), Option<(&'static str, &'static str)>);

fn env(name: &str, value: &str) -> EnvVar {
    EnvVar { name: name.into(), value: Some(value.into()), value_from: None }
}

fn secret_env(name: &str, secret: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: None,
        value_from: Some(EnvValue { secret_name_ref: Some(secret.into()), secret_owner: None }),
    }
}

fn mount(mount_path: &str) -> Mount {
    Mount {
        path: Some("/datasets".into()),
        from: "node-local".into(),
        mount_path: mount_path.into(),
        mount_options: None,
    }
}

fn port(number: i64, protocol: Option<&str>) -> ContainerPort {
    ContainerPort { container_port: number, protocol: protocol.map(String::from), ..Default::default() }
}

fn set_name(job: &mut LeptonJob, name: &str) {
    job.metadata.name = Some(name.into());
}

fn set_envs(job: &mut LeptonJob, envs: Vec<EnvVar>) {
    job.spec.envs = Some(envs);
}

fn set_mount_path(job: &mut LeptonJob, path: &str) {
    job.spec.mounts = Some(vec![mount(path)]);
}

fn set_label(job: &mut LeptonJob, key: &str, value: &str) {
    job.metadata.labels = Some([(key.to_string(), value.to_string())].into());
}

fn set_priority(job: &mut LeptonJob, class: &str) {
    job.spec.queue_config = Some(QueueConfig { priority_class: Some(class.into()), ..Default::default() });
}

fn run(cases: &[Case]) {
    for (rule, change, expected) in cases {
        let mut job = base();
        change(&mut job);
        let errors = validate_job(&job);
        let expected: FieldErrors =
            expected.iter().map(|(path, message)| (path.to_string(), vec![message.to_string()])).collect();
        assert_eq!(errors, expected, "rule: {rule}");
    }
}

#[test]
fn the_base_job_and_an_empty_spec_are_valid() {
    assert_eq!(validate_job(&base()), FieldErrors::new());
    let mut bare = LeptonJob::default();
    bare.metadata.name = Some("bare".into());
    assert_eq!(validate_job(&bare), FieldErrors::new());
}

#[test]
fn job_name_rules() {
    run(&[
        ("one letter", |j| set_name(j, "a"), None),
        ("36 characters, as the TAO SDK names jobs", |j| set_name(j, "tao-job-0c1f3a9e-5d2b-4e7a-9c1d-2f3e"), None),
        ("digits and hyphens inside", |j| set_name(j, "train-01"), None),
        (
            "37 characters",
            |j| set_name(j, "abcdefghijklmnopqrstuvwxyzabcdefghijk"),
            Some(("metadata.name", "must be at most 36 characters (it has 37)")),
        ),
        ("empty", |j| set_name(j, ""), Some(("metadata.name", "must not be empty"))),
        // Neither name nor id: the server gives the job a readable name.
        ("missing", |j| j.metadata.name = None, None),
        ("starts with a digit", |j| set_name(j, "1abc"), Some(("metadata.name", "must start with a lowercase letter"))),
        (
            "starts with a hyphen",
            |j| set_name(j, "-abc"),
            Some(("metadata.name", "must start with a lowercase letter")),
        ),
        ("starts uppercase", |j| set_name(j, "Abc"), Some(("metadata.name", "must start with a lowercase letter"))),
        (
            "uppercase inside",
            |j| set_name(j, "aBc"),
            Some(("metadata.name", "may contain only lowercase letters, digits and hyphens, not 'B'")),
        ),
        (
            "underscore",
            |j| set_name(j, "a_b"),
            Some(("metadata.name", "may contain only lowercase letters, digits and hyphens, not '_'")),
        ),
        (
            "newline",
            |j| set_name(j, "a\nb"),
            Some(("metadata.name", "may contain only lowercase letters, digits and hyphens, not '\\n'")),
        ),
        (
            "ends with a hyphen",
            |j| set_name(j, "abc-"),
            Some(("metadata.name", "must end with a lowercase letter or a digit")),
        ),
        ("ends with a digit", |j| set_name(j, "abc9"), None),
        (
            "lep sends the id only",
            |j| {
                j.metadata.name = None;
                j.metadata.id = Some("hello".into())
            },
            None,
        ),
        (
            "a bad id is reported as the name",
            |j| {
                j.metadata.name = None;
                j.metadata.id = Some("Hello".into())
            },
            Some(("metadata.name", "must start with a lowercase letter")),
        ),
    ]);
}

#[test]
fn replica_count_rules() {
    run(&[
        ("completions 1", |j| j.spec.completions = Some(1), None),
        ("completions 0", |j| j.spec.completions = Some(0), Some(("spec.completions", "must be between 1 and 100000"))),
        ("parallelism 1", |j| j.spec.parallelism = Some(1), None),
        ("parallelism 0", |j| j.spec.parallelism = Some(0), Some(("spec.parallelism", "must be between 1 and 100000"))),
        (
            "parallelism = completions",
            |j| {
                j.spec.completions = Some(4);
                j.spec.parallelism = Some(4)
            },
            None,
        ),
        (
            "parallelism > completions",
            |j| {
                j.spec.completions = Some(4);
                j.spec.parallelism = Some(5)
            },
            Some(("spec.parallelism", "must be less than or equal to completions (4)")),
        ),
        (
            "parallelism > default completions",
            |j| j.spec.parallelism = Some(2),
            Some(("spec.parallelism", "must be less than or equal to completions (1)")),
        ),
        (
            "completion indexes within completions",
            |j| {
                j.spec.completions = Some(8);
                j.spec.completion_indexes = Some(vec![7, 2])
            },
            None,
        ),
        (
            "no completion index",
            |j| j.spec.completion_indexes = Some(vec![]),
            Some(("spec.completion_indexes", "must list at least one index; leave it out to run every index")),
        ),
        (
            "a completion index past completions",
            |j| {
                j.spec.completions = Some(4);
                j.spec.completion_indexes = Some(vec![1, 4])
            },
            Some(("spec.completion_indexes[1]", "must be a completion index from 0 to 3, not 4")),
        ),
        (
            "a negative completion index",
            |j| j.spec.completion_indexes = Some(vec![-1]),
            Some(("spec.completion_indexes[0]", "must be a completion index from 0 to 0, not -1")),
        ),
        (
            "a completion index twice",
            |j| {
                j.spec.completions = Some(4);
                j.spec.completion_indexes = Some(vec![2, 3, 2])
            },
            Some(("spec.completion_indexes[2]", "2 is already listed at spec.completion_indexes[0]")),
        ),
        (
            "completion indexes of a distributed job",
            |j| {
                j.spec.workers = Some(4);
                j.spec.completion_indexes = Some(vec![1])
            },
            Some((
                "spec.completion_indexes",
                "a distributed job's 4 workers run together; leave this out to run them all",
            )),
        ),
        ("workers 1", |j| j.spec.workers = Some(1), None),
        ("workers 0", |j| j.spec.workers = Some(0), Some(("spec.workers", "must be between 1 and 100000"))),
        ("workers 4 alone", |j| j.spec.workers = Some(4), None),
        (
            "workers 4 with matching counts",
            |j| {
                j.spec.workers = Some(4);
                j.spec.completions = Some(4);
                j.spec.parallelism = Some(4);
                j.spec.intra_job_communication = Some(true)
            },
            None,
        ),
        (
            "workers 4, completions 3",
            |j| {
                j.spec.workers = Some(4);
                j.spec.completions = Some(3)
            },
            Some(("spec.completions", "must equal the number of workers (4) or be left out")),
        ),
        (
            "workers 4, parallelism 5",
            |j| {
                j.spec.workers = Some(4);
                j.spec.parallelism = Some(5)
            },
            Some(("spec.parallelism", "must equal the number of workers (4) or be left out")),
        ),
        (
            "workers 4, communication off",
            |j| {
                j.spec.workers = Some(4);
                j.spec.intra_job_communication = Some(false)
            },
            Some(("spec.intra_job_communication", "must be on (or left out) with more than one worker (4)")),
        ),
        (
            "workers 1, communication off",
            |j| {
                j.spec.workers = Some(1);
                j.spec.intra_job_communication = Some(false)
            },
            None,
        ),
        (
            "too many workers report only their own range",
            |j| {
                j.spec.workers = Some(100_001);
                j.spec.completions = Some(2);
                j.spec.parallelism = Some(2)
            },
            Some(("spec.workers", "must be between 1 and 100000")),
        ),
    ]);
}

#[test]
fn retry_deadline_and_archive_rules() {
    run(&[
        ("backoff 0", |j| j.spec.backoff_limit = Some(0), None),
        (
            "backoff -1",
            |j| j.spec.backoff_limit = Some(-1),
            Some(("spec.backoff_limit", "must be between 0 and 2147483647")),
        ),
        ("deadline 1", |j| j.spec.active_deadline_seconds = Some(1), None),
        (
            "deadline 0",
            |j| j.spec.active_deadline_seconds = Some(0),
            Some(("spec.active_deadline_seconds", "must be between 1 and 315360000")),
        ),
        ("queue limit 1", |j| j.spec.max_queued_duration_seconds = Some(1), None),
        (
            "queue limit 0",
            |j| j.spec.max_queued_duration_seconds = Some(0),
            Some(("spec.max_queued_duration_seconds", "must be between 1 and 315360000")),
        ),
        ("replica retry 0", |j| j.spec.max_failure_retry = Some(0), None),
        (
            "replica retry -1",
            |j| j.spec.max_failure_retry = Some(-1),
            Some(("spec.max_failure_retry", "must be between 0 and 2147483647")),
        ),
        ("job retry 0", |j| j.spec.max_job_failure_retry = Some(0), None),
        (
            "job retry -1",
            |j| j.spec.max_job_failure_retry = Some(-1),
            Some(("spec.max_job_failure_retry", "must be between 0 and 2147483647")),
        ),
        ("archive 0", |j| j.spec.ttl_seconds_after_finished = Some(0), None),
        (
            "archive -1",
            |j| j.spec.ttl_seconds_after_finished = Some(-1),
            Some(("spec.ttl_seconds_after_finished", "must be between 0 and 315360000")),
        ),
        ("shared memory 0", |j| j.spec.shared_memory_size = Some(0), None),
        (
            "shared memory -1",
            |j| j.spec.shared_memory_size = Some(-1),
            Some(("spec.shared_memory_size", "must be between 0 and 1073741824")),
        ),
    ]);
}

/// Every number of a spec with its range: (path, setter, min, max). The
/// setter puts the value in place with whatever else the job needs to stay
/// valid at both ends (a parallelism needs completions as large).
const NUMBER_RANGES: &[(&str, fn(&mut LeptonJob, i64), i64, i64)] = &[
    ("spec.completions", |j, v| j.spec.completions = Some(v), 1, 100_000),
    (
        "spec.parallelism",
        |j, v| {
            j.spec.completions = Some(REPLICAS_MAX);
            j.spec.parallelism = Some(v)
        },
        1,
        100_000,
    ),
    ("spec.workers", |j, v| j.spec.workers = Some(v), 1, 100_000),
    ("spec.backoff_limit", |j, v| j.spec.backoff_limit = Some(v), 0, 2_147_483_647),
    ("spec.max_failure_retry", |j, v| j.spec.max_failure_retry = Some(v), 0, 2_147_483_647),
    ("spec.max_job_failure_retry", |j, v| j.spec.max_job_failure_retry = Some(v), 0, 2_147_483_647),
    ("spec.active_deadline_seconds", |j, v| j.spec.active_deadline_seconds = Some(v), 1, 315_360_000),
    ("spec.max_queued_duration_seconds", |j, v| j.spec.max_queued_duration_seconds = Some(v), 1, 315_360_000),
    ("spec.ttl_seconds_after_finished", |j, v| j.spec.ttl_seconds_after_finished = Some(v), 0, 315_360_000),
    ("spec.shared_memory_size", |j, v| j.spec.shared_memory_size = Some(v), 0, 1_073_741_824),
    ("spec.termination_grace_period_seconds", |j, v| j.spec.termination_grace_period_seconds = Some(v), 0, 86_400),
    (
        "spec.time_schedule.start_at",
        |j, v| j.spec.time_schedule = Some(TimeSchedule { start_at: Some(v) }),
        0,
        253_402_300_799,
    ),
    (
        "spec.segment_config.count_per_segment",
        |j, v| {
            j.spec.workers = Some(REPLICAS_MAX);
            j.spec.segment_config = Some(SegmentConfig { count_per_segment: v })
        },
        1,
        100_000,
    ),
    ("spec.container.ports[0].container_port", |j, v| j.spec.container.ports = Some(vec![port(v, None)]), 1, 65_535),
    (
        "spec.container.ports[0].host_port",
        |j, v| j.spec.container.ports = Some(vec![ContainerPort { host_port: Some(v), ..port(80, None) }]),
        1,
        65_535,
    ),
    (
        "spec.mounts[0].mount_options.local_cache_size_mib",
        |j, v| {
            j.spec.mounts = Some(vec![Mount {
                mount_options: Some(MountOptions { local_cache_size_mib: Some(v), read_only: None }),
                ..mount("/a")
            }])
        },
        0,
        1_073_741_824,
    ),
];

#[test]
fn every_number_is_bounded_on_both_sides() {
    for (path, set, min, max) in NUMBER_RANGES {
        let message = format!("must be between {min} and {max}");
        let cases = [
            (*min, None),
            (*max, None),
            (min - 1, Some(&message)),
            (max + 1, Some(&message)),
            (i64::MIN, Some(&message)),
            (i64::MAX, Some(&message)),
        ];
        for (value, expected) in cases {
            let mut job = base();
            set(&mut job, value);
            let errors = validate_job(&job);
            let expected: FieldErrors = expected.iter().map(|m| (path.to_string(), vec![m.to_string()])).collect();
            assert_eq!(errors, expected, "{path} = {value}");
        }
    }
}

#[test]
fn the_bounds_keep_server_arithmetic_in_range() {
    // The server counts durations in milliseconds from a time stamp in
    // milliseconds, and memory in bytes; the largest valid values must not
    // come near overflowing an i64 there, nor an i32 in Kubernetes fields.
    let year_9999_ms = START_AT_MAX * 1000;
    assert!(year_9999_ms.checked_add(DURATION_MAX_SECONDS * 1000).is_some());
    assert!(MEMORY_MAX_MIB.checked_mul(1024 * 1024).is_some());
    assert!(REPLICAS_MAX <= i64::from(i32::MAX) && RETRIES_MAX == i64::from(i32::MAX));
    assert_eq!(DURATION_MAX_SECONDS, 315_360_000);
}

/// Image references follow the OCI distribution grammar, so nothing a
/// container engine could read as one of its options is ever accepted: the
/// reference goes on the engine's command line.
#[test]
fn image_references_that_an_engine_could_read_as_options_are_refused() {
    let valid = [
        "busybox",
        "library/busybox:1.36",
        "nvcr.io/nvidia/pytorch:25.08-py3",
        "localhost:5000/team/app",
        "127.0.0.1:5000/a/b",
        "[::1]:5000/a",
        "my-registry.example.com/team__x/a.b-c---d",
        "a_b/c",
        "img@sha256:0123abcd",
    ];
    for image in valid {
        assert_eq!(check_image(image), Ok(()), "{image}");
    }
    let refused = [
        ("--volume=/:/host:rw", "must not start with '-'"),
        ("-v", "must not start with '-'"),
        ("--privileged", "must not start with '-'"),
        ("team/--privileged", "has an invalid name part '--privileged'"),
        ("team/-x", "has an invalid name part '-x'"),
        ("team/x-", "has an invalid name part 'x-'"),
        ("a..b", "has an invalid name part 'a..b'"),
        ("a___b", "has an invalid name part 'a___b'"),
        ("a.-b", "has an invalid name part 'a.-b'"),
        ("a=b", "has an invalid name part 'a=b'"),
        ("team/a,b", "has an invalid name part 'a,b'"),
        ("-registry.io/a", "must not start with '-'"),
        ("bad-.io/a", "has an invalid registry 'bad-.io'"),
        ("registry.io:x/a", "has an invalid registry 'registry.io:x'"),
        ("reg_istry.io/a", "has an invalid registry 'reg_istry.io'"),
    ];
    for (image, start) in refused {
        let message = check_image(image).expect_err(image);
        assert!(message.starts_with(start), "{image}: {message}");
    }
}

#[test]
fn image_and_registry_rules() {
    run(&[
        ("registry host with port", |j| j.spec.container.image = Some("registry:5000/team/app:v1".into()), None),
        ("digest", |j| j.spec.container.image = Some("busybox@sha256:0123abcd".into()), None),
        (
            "empty image",
            |j| j.spec.container.image = Some("".into()),
            Some(("spec.container.image", "must not be empty; leave it out for the default")),
        ),
        (
            "space in image",
            |j| j.spec.container.image = Some("busy box".into()),
            Some(("spec.container.image", "must not contain spaces or control characters")),
        ),
        (
            "uppercase repository",
            |j| j.spec.container.image = Some("nvcr.io/NVIDIA/pytorch".into()),
            Some(("spec.container.image", "must be lowercase in its repository path ('NVIDIA/pytorch')")),
        ),
        ("uppercase host is fine", |j| j.spec.container.image = Some("Registry.example.com/team/app".into()), None),
        (
            "bad embedded tag",
            |j| j.spec.container.image = Some("busybox:-x".into()),
            Some(("spec.container.image", "has an invalid tag: it must start with a letter, a digit or '_'")),
        ),
        (
            "bad digest",
            |j| j.spec.container.image = Some("busybox@sha256".into()),
            Some(("spec.container.image", "has an invalid digest 'sha256': it must look like 'sha256:<hex>'")),
        ),
        ("tag 128 characters", |j| j.spec.container.image_tag = Some("a".repeat(128)), None),
        (
            "tag 129 characters",
            |j| j.spec.container.image_tag = Some("a".repeat(129)),
            Some(("spec.container.image_tag", "must be at most 128 characters (it has 129)")),
        ),
        ("tag with dots and dashes", |j| j.spec.container.image_tag = Some("25.08-py3".into()), None),
        (
            "tag starting with '.'",
            |j| j.spec.container.image_tag = Some(".x".into()),
            Some(("spec.container.image_tag", "must start with a letter, a digit or '_'")),
        ),
        (
            "tag with '/'",
            |j| j.spec.container.image_tag = Some("a/b".into()),
            Some(("spec.container.image_tag", "may contain only letters, digits, '_', '.' and '-', not '/'")),
        ),
        (
            "empty tag",
            |j| j.spec.container.image_tag = Some("".into()),
            Some(("spec.container.image_tag", "must not be empty")),
        ),
        (
            "tag twice",
            |j| {
                j.spec.container.image = Some("busybox:1.36".into());
                j.spec.container.image_tag = Some("1.37".into())
            },
            Some(("spec.container.image_tag", "must be left out when the image already names a tag ('1.36')")),
        ),
        (
            "tag and digest",
            |j| {
                j.spec.container.image = Some("busybox@sha256:ab".into());
                j.spec.container.image_tag = Some("1".into())
            },
            Some(("spec.container.image_tag", "must be left out when the image pins a digest")),
        ),
        (
            "tag without image",
            |j| {
                j.spec.container.image = None;
                j.spec.container.image_tag = Some("1".into())
            },
            Some(("spec.container.image_tag", "needs an image (spec.container.image)")),
        ),
        (
            "registry user and password",
            |j| {
                j.spec.container.registry_username = Some("u".into());
                j.spec.container.registry_password = Some("p".into())
            },
            None,
        ),
        (
            "registry user only",
            |j| j.spec.container.registry_username = Some("u".into()),
            Some(("spec.container.registry_password", "is required when a registry username is set")),
        ),
        (
            "registry password only",
            |j| j.spec.container.registry_password = Some("p".into()),
            Some(("spec.container.registry_username", "is required when a registry password is set")),
        ),
        (
            "empty registry user",
            |j| {
                j.spec.container.registry_username = Some("".into());
                j.spec.container.registry_password = Some("p".into())
            },
            Some(("spec.container.registry_username", "must not be empty; leave it out for a public image")),
        ),
        (
            "NUL in the command",
            |j| j.spec.container.command = Some(vec!["a\0b".into()]),
            Some(("spec.container.command[0]", "must not contain a NUL character")),
        ),
        ("empty command means the entrypoint", |j| j.spec.container.command = Some(vec![]), None),
        (
            "NUL in an argument",
            |j| j.spec.container.args = Some(vec!["--ok".into(), "a\0b".into()]),
            Some(("spec.container.args[1]", "must not contain a NUL character")),
        ),
        ("arguments alone go to the entrypoint", |j| j.spec.container.args = Some(vec!["--x".into()]), None),
        ("an absolute working directory", |j| j.spec.container.working_dir = Some("/workspace/run 1".into()), None),
        (
            "a relative working directory",
            |j| j.spec.container.working_dir = Some("workspace".into()),
            Some(("spec.container.working_dir", "must be an absolute path inside the container, such as /workspace")),
        ),
        (
            "a working directory with a line break",
            |j| j.spec.container.working_dir = Some("/w\n--privileged".into()),
            Some(("spec.container.working_dir", "must not contain control characters")),
        ),
        (
            "a working directory longer than PATH_MAX",
            |j| j.spec.container.working_dir = Some(format!("/{}", "a".repeat(4096))),
            Some(("spec.container.working_dir", "must be at most 4096 bytes")),
        ),
    ]);
}

#[test]
fn port_rules() {
    run(&[
        ("port 1", |j| j.spec.container.ports = Some(vec![port(1, None)]), None),
        ("port 65535", |j| j.spec.container.ports = Some(vec![port(65535, None)]), None),
        (
            "port 0",
            |j| j.spec.container.ports = Some(vec![port(0, None)]),
            Some(("spec.container.ports[0].container_port", "must be between 1 and 65535")),
        ),
        (
            "port 65536",
            |j| j.spec.container.ports = Some(vec![port(65536, None)]),
            Some(("spec.container.ports[0].container_port", "must be between 1 and 65535")),
        ),
        (
            "host port 0",
            |j| j.spec.container.ports = Some(vec![ContainerPort { host_port: Some(0), ..port(80, None) }]),
            Some(("spec.container.ports[0].host_port", "must be between 1 and 65535")),
        ),
        (
            "host port 65536",
            |j| j.spec.container.ports = Some(vec![ContainerPort { host_port: Some(65536), ..port(80, None) }]),
            Some(("spec.container.ports[0].host_port", "must be between 1 and 65535")),
        ),
        (
            "protocols in any case",
            |j| {
                j.spec.container.ports =
                    Some(vec![port(80, Some("tcp")), port(81, Some("Udp")), port(82, Some("SCTP"))])
            },
            None,
        ),
        (
            "unknown protocol",
            |j| j.spec.container.ports = Some(vec![port(80, Some("HTTP"))]),
            Some(("spec.container.ports[0].protocol", "must be TCP, UDP or SCTP")),
        ),
        (
            "same port, two protocols",
            |j| j.spec.container.ports = Some(vec![port(53, Some("TCP")), port(53, Some("udp"))]),
            None,
        ),
        (
            "same port and protocol",
            |j| j.spec.container.ports = Some(vec![port(8080, None), port(8080, Some("tcp"))]),
            Some(("spec.container.ports[1].container_port", "8080/TCP is already listed at spec.container.ports[0]")),
        ),
        (
            "port name 15 characters",
            |j| {
                j.spec.container.ports =
                    Some(vec![ContainerPort { name: Some("abcdefghijklmno".into()), ..port(80, None) }])
            },
            None,
        ),
        (
            "port name 16 characters",
            |j| {
                j.spec.container.ports =
                    Some(vec![ContainerPort { name: Some("abcdefghijklmnop".into()), ..port(80, None) }])
            },
            Some(("spec.container.ports[0].name", "must be at most 15 characters (it has 16)")),
        ),
        (
            "port name digits only",
            |j| j.spec.container.ports = Some(vec![ContainerPort { name: Some("8080".into()), ..port(80, None) }]),
            Some(("spec.container.ports[0].name", "must contain at least one letter")),
        ),
        (
            "port name with '--'",
            |j| j.spec.container.ports = Some(vec![ContainerPort { name: Some("a--b".into()), ..port(80, None) }]),
            Some(("spec.container.ports[0].name", "must not start or end with '-' or contain '--'")),
        ),
        (
            "port name twice",
            |j| {
                j.spec.container.ports = Some(vec![
                    ContainerPort { name: Some("http".into()), ..port(80, None) },
                    ContainerPort { name: Some("http".into()), ..port(81, None) },
                ])
            },
            Some(("spec.container.ports[1].name", "'http' is already used by spec.container.ports[0]")),
        ),
        (
            "expose strategies",
            |j| {
                j.spec.container.ports = Some(vec![ContainerPort {
                    expose_strategies: Some(vec!["IngressProxy".into(), "Magic".into()]),
                    ..port(80, None)
                }])
            },
            Some(("spec.container.ports[0].expose_strategies[1]", "must be HostPortMapping or IngressProxy")),
        ),
    ]);
}

#[test]
fn env_rules() {
    run(&[
        ("C identifiers", |j| set_envs(j, vec![env("A", "1"), env("_b9", "2"), env("HF_TOKEN", "")]), None),
        (
            "no value at all",
            |j| set_envs(j, vec![EnvVar { name: "EMPTY".into(), value: None, value_from: None }]),
            None,
        ),
        ("empty name", |j| set_envs(j, vec![env("", "1")]), Some(("spec.envs[0].name", "must not be empty"))),
        (
            "starts with a digit",
            |j| set_envs(j, vec![env("1A", "1")]),
            Some(("spec.envs[0].name", "must start with a letter or '_'")),
        ),
        (
            "hyphen",
            |j| set_envs(j, vec![env("A-B", "1")]),
            Some(("spec.envs[0].name", "may contain only letters, digits and '_', not '-'")),
        ),
        (
            "dot",
            |j| set_envs(j, vec![env("A.B", "1")]),
            Some(("spec.envs[0].name", "may contain only letters, digits and '_', not '.'")),
        ),
        (
            "JOB_COMPLETION_INDEX",
            |j| set_envs(j, vec![env("JOB_COMPLETION_INDEX", "1")]),
            Some(("spec.envs[0].name", "'JOB_COMPLETION_INDEX' is reserved: Jobdeck sets it")),
        ),
        (
            "JOB_COMPLETIONS",
            |j| set_envs(j, vec![env("JOB_COMPLETIONS", "1")]),
            Some(("spec.envs[0].name", "'JOB_COMPLETIONS' is reserved: Jobdeck sets it")),
        ),
        (
            "JOBDECK_COMPLETION_INDEXES",
            |j| set_envs(j, vec![env("JOBDECK_COMPLETION_INDEXES", "0")]),
            Some(("spec.envs[0].name", "'JOBDECK_COMPLETION_INDEXES' is reserved: Jobdeck sets it")),
        ),
        ("JOB_COMPLETIONS_X is not reserved", |j| set_envs(j, vec![env("JOB_COMPLETIONS_X", "1")]), None),
        (
            "LEPTON_ prefix",
            |j| set_envs(j, vec![env("LEPTON_X", "1")]),
            Some((
                "spec.envs[0].name",
                "must not start with 'LEPTON_': that prefix is reserved for variables Jobdeck sets",
            )),
        ),
        ("LEPTON without underscore is not reserved", |j| set_envs(j, vec![env("LEPTONX", "1")]), None),
        (
            "duplicate",
            |j| set_envs(j, vec![env("A", "1"), env("B", "2"), env("A", "3")]),
            Some(("spec.envs[2].name", "'A' is already set by spec.envs[0]")),
        ),
        ("secret reference", |j| set_envs(j, vec![secret_env("HF_TOKEN", "hf-token")]), None),
        (
            "value and secret",
            |j| set_envs(j, vec![EnvVar { value: Some("x".into()), ..secret_env("A", "s") }]),
            Some((
                "spec.envs[0].value_from",
                "must be left out when a value is given: a variable has either a value or a secret reference, not both",
            )),
        ),
        (
            "empty secret reference",
            |j| set_envs(j, vec![secret_env("A", "")]),
            Some(("spec.envs[0].value_from.secret_name_ref", "must name a secret")),
        ),
        (
            "NUL in a value",
            |j| set_envs(j, vec![env("A", "x\0y")]),
            Some(("spec.envs[0].value", "must not contain a NUL character")),
        ),
    ]);
}

#[test]
fn mount_rules() {
    run(&[
        ("absolute path", |j| set_mount_path(j, "/data"), None),
        ("below a reserved path", |j| set_mount_path(j, "/usr/share/data"), None),
        ("home cache", |j| set_mount_path(j, "/root/.cache/huggingface"), None),
        ("empty", |j| set_mount_path(j, ""), Some(("spec.mounts[0].mount_path", "must not be empty"))),
        (
            "relative",
            |j| set_mount_path(j, "data"),
            Some(("spec.mounts[0].mount_path", "must be an absolute path (start with '/')")),
        ),
        (
            "'..'",
            |j| set_mount_path(j, "/data/../x"),
            Some(("spec.mounts[0].mount_path", "must not contain '..' segments")),
        ),
        (
            "'.'",
            |j| set_mount_path(j, "/data/./x"),
            Some(("spec.mounts[0].mount_path", "must not contain '.' segments")),
        ),
        ("'//'", |j| set_mount_path(j, "/data//x"), Some(("spec.mounts[0].mount_path", "must not contain '//'"))),
        ("trailing '/'", |j| set_mount_path(j, "/data/"), Some(("spec.mounts[0].mount_path", "must not end with '/'"))),
        ("':'", |j| set_mount_path(j, "/data:ro"), Some(("spec.mounts[0].mount_path", "must not contain ':'"))),
        (
            "control character",
            |j| set_mount_path(j, "/da\tta"),
            Some(("spec.mounts[0].mount_path", "must not contain control characters")),
        ),
        (
            "root",
            |j| set_mount_path(j, "/"),
            Some(("spec.mounts[0].mount_path", "'/' is a system path and cannot be a mount path")),
        ),
        (
            "/etc",
            |j| set_mount_path(j, "/etc"),
            Some(("spec.mounts[0].mount_path", "'/etc' is a system path and cannot be a mount path")),
        ),
        (
            "/etc/ is still /etc",
            |j| set_mount_path(j, "/etc/"),
            Some(("spec.mounts[0].mount_path", "'/etc' is a system path and cannot be a mount path")),
        ),
        (
            "climbing to /usr",
            |j| set_mount_path(j, "/data/../usr"),
            Some(("spec.mounts[0].mount_path", "'/usr' is a system path and cannot be a mount path")),
        ),
        (
            "//proc",
            |j| set_mount_path(j, "//proc"),
            Some(("spec.mounts[0].mount_path", "'/proc' is a system path and cannot be a mount path")),
        ),
        (
            "/dev/shm",
            |j| set_mount_path(j, "/dev/shm"),
            Some(("spec.mounts[0].mount_path", "'/dev/shm' is a system path and cannot be a mount path")),
        ),
        (
            "inside /proc",
            |j| set_mount_path(j, "/proc/sys"),
            Some(("spec.mounts[0].mount_path", "'/proc/sys' is inside '/proc', which nothing may be mounted into")),
        ),
        (
            "inside /var/run/secrets",
            |j| set_mount_path(j, "/var/run/secrets/x"),
            Some((
                "spec.mounts[0].mount_path",
                "'/var/run/secrets/x' is inside '/var/run/secrets', which nothing may be mounted into",
            )),
        ),
        ("/procfs is not /proc", |j| set_mount_path(j, "/procfs"), None),
        (
            "duplicate",
            |j| j.spec.mounts = Some(vec![mount("/a"), mount("/b"), mount("/a")]),
            Some(("spec.mounts[2].mount_path", "'/a' is already used by spec.mounts[0]")),
        ),
        ("named volume", |j| j.spec.mounts = Some(vec![Mount { from: "node-nfs:my-nfs".into(), ..mount("/a") }]), None),
        ("plain volume name", |j| j.spec.mounts = Some(vec![Mount { from: "shared".into(), ..mount("/a") }]), None),
        (
            "empty volume",
            |j| j.spec.mounts = Some(vec![Mount { from: "".into(), ..mount("/a") }]),
            Some(("spec.mounts[0].from", "must name a volume")),
        ),
        (
            "volume without a name",
            |j| j.spec.mounts = Some(vec![Mount { from: "node-nfs".into(), ..mount("/a") }]),
            Some(("spec.mounts[0].from", "must be 'node-local' or 'node-<type>:<name>', such as 'node-nfs:my-nfs'")),
        ),
        (
            "path a volume argument would split",
            |j| j.spec.mounts = Some(vec![Mount { path: Some("/a:/etc:rw".into()), ..mount("/a") }]),
            Some((
                "spec.mounts[0].path",
                "must not contain ':' or ',' (container engines split volume arguments on them)",
            )),
        ),
        (
            "path climbing out of the volume",
            |j| j.spec.mounts = Some(vec![Mount { path: Some("/a/../../etc".into()), ..mount("/a") }]),
            Some(("spec.mounts[0].path", "must not contain '..' segments: a mount stays inside its volume")),
        ),
        (
            "cache size 0",
            |j| {
                j.spec.mounts = Some(vec![Mount {
                    mount_options: Some(MountOptions { local_cache_size_mib: Some(0), read_only: None }),
                    ..mount("/a")
                }])
            },
            None,
        ),
        (
            "cache size -1",
            |j| {
                j.spec.mounts = Some(vec![Mount {
                    mount_options: Some(MountOptions { local_cache_size_mib: Some(-1), read_only: None }),
                    ..mount("/a")
                }])
            },
            Some(("spec.mounts[0].mount_options.local_cache_size_mib", "must be between 0 and 1073741824")),
        ),
    ]);
}

#[test]
fn label_and_annotation_rules() {
    run(&[
        ("simple label", |j| set_label(j, "team", "vision"), None),
        ("prefixed label", |j| set_label(j, "example.com/team", "a.b-c_d"), None),
        ("empty value", |j| set_label(j, "team", ""), None),
        ("63-character name", |j| set_label(j, &"a".repeat(63), "x"), None),
        ("64-character name", |j| set_label(j, &"a".repeat(64), "x"), Some(("metadata.labels[\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]", "the key's name must be at most 63 characters (it has 64)"))),
        ("empty key", |j| set_label(j, "", "x"), Some(("metadata.labels[\"\"]", "the key must not be empty"))),
        ("space in key", |j| set_label(j, "my team", "x"), Some(("metadata.labels[\"my team\"]", "the key's name may contain only letters, digits, '-', '_' and '.', not ' '"))),
        ("key ending in '-'", |j| set_label(j, "team-", "x"), Some(("metadata.labels[\"team-\"]", "the key's name must start and end with a letter or digit"))),
        ("uppercase prefix", |j| set_label(j, "Example.com/team", "x"), Some(("metadata.labels[\"Example.com/team\"]", "the key's prefix 'Example.com' must be a DNS name: dot-separated parts of lowercase letters, digits and '-', each starting and ending with a letter or digit"))),
        ("two slashes", |j| set_label(j, "a/b/c", "x"), Some(("metadata.labels[\"a/b/c\"]", "the key's name may contain only letters, digits, '-', '_' and '.', not '/'"))),
        ("kubernetes prefix", |j| set_label(j, "app.kubernetes.io/name", "x"), Some(("metadata.labels[\"app.kubernetes.io/name\"]", "the key's prefix 'app.kubernetes.io/' is reserved for Kubernetes"))),
        ("batch.kubernetes.io prefix", |j| set_label(j, "batch.kubernetes.io/job-name", "x"), Some(("metadata.labels[\"batch.kubernetes.io/job-name\"]", "the key's prefix 'batch.kubernetes.io/' is reserved for Kubernetes"))),
        ("k8s.io prefix", |j| set_label(j, "k8s.io/x", "x"), Some(("metadata.labels[\"k8s.io/x\"]", "the key's prefix 'k8s.io/' is reserved for Kubernetes"))),
        ("a domain ending in kubernetes.io is not reserved", |j| set_label(j, "notkubernetes.io/x", "x"), None),
        ("jobdeck prefix", |j| set_label(j, "jobdeck.dev/job-id", "other"), Some(("metadata.labels[\"jobdeck.dev/job-id\"]", "the key's prefix 'jobdeck.dev/' is reserved for Jobdeck"))),
        ("jobdeck subdomain", |j| set_label(j, "x.jobdeck.dev/run", "1"), Some(("metadata.labels[\"x.jobdeck.dev/run\"]", "the key's prefix 'x.jobdeck.dev/' is reserved for Jobdeck"))),
        ("a name without a prefix is not reserved", |j| set_label(j, "jobdeck.dev", "x"), None),
        ("a domain ending in jobdeck.dev is not reserved", |j| set_label(j, "myjobdeck.dev/x", "x"), None),
        ("jobdeck annotation", |j| j.metadata.annotations = Some([("jobdeck.dev/created-by".to_string(), "mallory".to_string())].into()), Some(("metadata.annotations[\"jobdeck.dev/created-by\"]", "the key's prefix 'jobdeck.dev/' is reserved for Jobdeck"))),
        ("kubernetes annotation", |j| j.metadata.annotations = Some([("batch.kubernetes.io/job-completion-index".to_string(), "3".to_string())].into()), Some(("metadata.annotations[\"batch.kubernetes.io/job-completion-index\"]", "the key's prefix 'batch.kubernetes.io/' is reserved for Kubernetes"))),
        ("63-character value", |j| set_label(j, "team", &"v".repeat(63)), None),
        ("64-character value", |j| set_label(j, "team", &"v".repeat(64)), Some(("metadata.labels[\"team\"]", "the value must be at most 63 characters (it has 64)"))),
        ("value with '/'", |j| set_label(j, "team", "a/b"), Some(("metadata.labels[\"team\"]", "the value may contain only letters, digits, '-', '_' and '.', not '/'"))),
        ("annotation with free text", |j| j.metadata.annotations = Some([("note".to_string(), "any text: at all / ok".to_string())].into()), None),
        ("annotation with a bad key", |j| j.metadata.annotations = Some([("bad key".to_string(), "x".to_string())].into()), Some(("metadata.annotations[\"bad key\"]", "the key's name may contain only letters, digits, '-', '_' and '.', not ' '"))),
        ("annotations at the size limit", |j| j.metadata.annotations = Some([("a".to_string(), "x".repeat(ANNOTATIONS_MAX_BYTES - 1))].into()), None),
        ("annotations over the size limit", |j| j.metadata.annotations = Some([("a".to_string(), "x".repeat(ANNOTATIONS_MAX_BYTES))].into()), Some(("metadata.annotations", "must take at most 262144 bytes in total, keys and values (they take 262145)"))),
    ]);
}

#[test]
fn queue_affinity_and_lepton_only_rules() {
    run(&[
        ("lowest priority", |j| set_priority(j, "low-1000"), None),
        ("highest priority", |j| set_priority(j, "high-9000"), None),
        ("short form", |j| set_priority(j, "mid"), Some(("spec.queue_config.priority_class", "must be one of low-1000, low-2000, low-3000, mid-4000, mid-5000, mid-6000, high-7000, high-8000, high-9000 (priority 1 to 9) ('mid' is written 'mid-4000')"))),
        ("below 1", |j| set_priority(j, "low-0"), Some(("spec.queue_config.priority_class", "must be one of low-1000, low-2000, low-3000, mid-4000, mid-5000, mid-6000, high-7000, high-8000, high-9000 (priority 1 to 9)"))),
        ("above 9", |j| set_priority(j, "high-10000"), Some(("spec.queue_config.priority_class", "must be one of low-1000, low-2000, low-3000, mid-4000, mid-5000, mid-6000, high-7000, high-8000, high-9000 (priority 1 to 9)"))),
        ("node groups", |j| j.spec.affinity = Some(Affinity { allowed_dedicated_node_groups: Some(vec!["a".into(), "b".into()]), ..Default::default() }), None),
        ("a node group twice", |j| j.spec.affinity = Some(Affinity { allowed_dedicated_node_groups: Some(vec!["a".into(), "a".into()]), ..Default::default() }), Some(("spec.affinity.allowed_dedicated_node_groups[1]", "'a' is already listed at spec.affinity.allowed_dedicated_node_groups[0]"))),
        ("an empty node name", |j| j.spec.affinity = Some(Affinity { allowed_nodes_in_node_group: Some(vec!["".into()]), ..Default::default() }), Some(("spec.affinity.allowed_nodes_in_node_group[0]", "must not be empty"))),
        ("a pull secret twice", |j| j.spec.image_pull_secrets = Some(vec!["r".into(), "r".into()]), Some(("spec.image_pull_secrets[1]", "'r' is already listed at spec.image_pull_secrets[0]"))),
        ("empty shape", |j| j.spec.resource_shape = Some("".into()), Some(("spec.resource_shape", "must not be empty; leave it out for the default shape"))),
        ("no storage attachments", |j| j.spec.storage_attachments = Some(vec![]), None),
        ("storage attachments", |j| j.spec.storage_attachments = Some(vec![StorageAttachment { data_source_name: "b".into(), attachments: vec![] }]), Some(("spec.storage_attachments", "Jobdeck has no object-storage data sources; mount a volume with spec.mounts instead"))),
        ("unprivileged", |j| j.spec.user_security_context = Some(UserSecurityContext { privileged: Some(false), no_specific_user: Some(true) }), None),
        // Who may run privileged is the server's to say (`executor_requirements`).
        ("privileged", |j| j.spec.user_security_context = Some(UserSecurityContext { privileged: Some(true), no_specific_user: None }), None),
        ("burst without reservation", |j| j.spec.reservation_config = Some(ReservationConfig { reservation_id: None, allow_burst_to_other_reservations: Some(true) }), None),
        ("reservation", |j| j.spec.reservation_config = Some(ReservationConfig { reservation_id: Some("r".into()), allow_burst_to_other_reservations: None }), Some(("spec.reservation_config.reservation_id", "Jobdeck has no reservations; leave this out"))),
        ("start time 0", |j| j.spec.time_schedule = Some(TimeSchedule { start_at: Some(0) }), None),
        ("start time -1", |j| j.spec.time_schedule = Some(TimeSchedule { start_at: Some(-1) }), Some(("spec.time_schedule.start_at", "must be between 0 and 253402300799"))),
        ("segments dividing the workers", |j| { j.spec.workers = Some(4); j.spec.segment_config = Some(SegmentConfig { count_per_segment: 2 }) }, None),
        ("segments of 0", |j| { j.spec.workers = Some(4); j.spec.segment_config = Some(SegmentConfig { count_per_segment: 0 }) }, Some(("spec.segment_config.count_per_segment", "must be between 1 and 100000"))),
        ("segments not dividing", |j| { j.spec.workers = Some(4); j.spec.segment_config = Some(SegmentConfig { count_per_segment: 3 }) }, Some(("spec.segment_config.count_per_segment", "must divide the number of workers (4)"))),
        ("segments with one worker", |j| j.spec.segment_config = Some(SegmentConfig { count_per_segment: 1 }), Some(("spec.segment_config", "needs more than one worker"))),
    ]);
}

#[test]
fn every_problem_is_reported_at_once_with_one_message_per_field() {
    let mut job = base();
    job.metadata.name = Some("Bad".into());
    job.spec.completions = Some(0);
    job.spec.parallelism = Some(0);
    job.spec.envs = Some(vec![env("LEPTON_X", "1"), env("1", "2")]);
    let errors = validate_job(&job);
    let paths: Vec<&str> = errors.keys().map(String::as_str).collect();
    assert_eq!(
        paths,
        ["metadata.name", "spec.completions", "spec.envs[0].name", "spec.envs[1].name", "spec.parallelism"]
    );
    assert!(errors.values().all(|m| m.len() == 1), "{errors:?}");
}

fn context() -> ValidationContext {
    let shape = |id: &str, memory: i64| Shape {
        metadata: Metadata { id: Some(id.into()), ..Default::default() },
        spec: ShapeSpec { memory_in_mb: Some(memory), ..Default::default() },
    };
    let group = |id: &str, nodes: &[&str]| NodeGroup {
        metadata: Metadata { id: Some(id.into()), ..Default::default() },
        spec: NodeGroupSpec {
            nodes: nodes
                .iter()
                .map(|n| NodeInfo {
                    name: n.to_string(),
                    capacity: ResourceAmounts { cpu: 4.0, memory_in_mb: 16384, gpu: 0 },
                })
                .collect(),
            ..Default::default()
        },
        status: Default::default(),
    };
    ValidationContext {
        shapes: [shape("cpu.small", 4096), shape("cpu.large", 16384), shape("mem.64g", 65536)]
            .iter()
            .map(ShapeChoice::from)
            .collect(),
        node_groups: [group("a", &["a1", "a2"]), group("b", &["b1"])].iter().map(NodeGroupChoice::from).collect(),
        secret_names: vec!["hf-token".into()],
        ..Default::default()
    }
}

#[test]
fn server_data_rules() {
    let groups = |groups: &[&str], nodes: &[&str]| {
        Some(Affinity {
            allowed_dedicated_node_groups: Some(groups.iter().map(|s| s.to_string()).collect()),
            allowed_nodes_in_node_group: Some(nodes.iter().map(|s| s.to_string()).collect()),
            allowed_providers: None,
        })
    };
    let cases: Vec<(&str, Box<dyn Fn(&mut LeptonJob)>, Option<(&str, &str)>)> = vec![
        ("known shape", Box::new(|j| j.spec.resource_shape = Some("cpu.large".into())), None),
        ("unknown shape", Box::new(|j| j.spec.resource_shape = Some("gpu.8xh100".into())), Some(("spec.resource_shape", "no resource shape named 'gpu.8xh100'; this workspace has 'cpu.small', 'cpu.large' or 'mem.64g'"))),
        ("shared memory = shape memory", Box::new(|j| j.spec.shared_memory_size = Some(4096)), None),
        ("shared memory > shape memory", Box::new(|j| j.spec.shared_memory_size = Some(4097)), Some(("spec.shared_memory_size", "must be at most the memory of shape 'cpu.small' (4096 MiB)"))),
        ("default shape bounds shared memory", Box::new(|j| { j.spec.resource_shape = None; j.spec.shared_memory_size = Some(4097) }), Some(("spec.shared_memory_size", "must be at most the memory of shape 'cpu.small' (4096 MiB)"))),
        ("known groups and nodes", Box::new(move |j| j.spec.affinity = groups(&["a", "b"], &["a2", "b1"])), None),
        ("unknown group", Box::new(move |j| j.spec.affinity = groups(&["a", "zz"], &[])), Some(("spec.affinity.allowed_dedicated_node_groups[1]", "no node group named 'zz'"))),
        ("node of another group", Box::new(move |j| j.spec.affinity = groups(&["a"], &["b1"])), Some(("spec.affinity.allowed_nodes_in_node_group[0]", "node 'b1' is not in the chosen node groups"))),
        ("known secret", Box::new(|j| set_envs(j, vec![secret_env("HF_TOKEN", "hf-token")])), None),
        ("unknown secret", Box::new(|j| set_envs(j, vec![env("A", "1"), secret_env("HF_TOKEN", "nope")])), Some(("spec.envs[1].value_from.secret_name_ref", "no secret named 'nope'"))),
        // Whether the job fits at all: group a has two nodes, b one, each
        // with 16384 MiB; cpu.large takes a whole node.
        ("two on two nodes", Box::new(move |j| { j.spec.resource_shape = Some("cpu.large".into()); j.spec.completions = Some(2); j.spec.parallelism = Some(2); j.spec.affinity = groups(&["a"], &[]) }), None),
        ("two on one node", Box::new(move |j| { j.spec.resource_shape = Some("cpu.large".into()); j.spec.completions = Some(2); j.spec.parallelism = Some(2); j.spec.affinity = groups(&["b"], &[]) }), Some(("spec.parallelism", "2 replicas must run at once, but group 'b' can hold at most 1 replicas of shape 'cpu.large'"))),
        ("two on one chosen node", Box::new(move |j| { j.spec.resource_shape = Some("cpu.large".into()); j.spec.completions = Some(2); j.spec.parallelism = Some(2); j.spec.affinity = groups(&["a"], &["a1"]) }), Some(("spec.parallelism", "2 replicas must run at once, but group 'a' can hold at most 1 replicas of shape 'cpu.large'"))),
        ("one at a time fits", Box::new(move |j| { j.spec.resource_shape = Some("cpu.large".into()); j.spec.completions = Some(2); j.spec.parallelism = Some(1); j.spec.affinity = groups(&["b"], &[]) }), None),
        ("larger than any node", Box::new(|j| j.spec.resource_shape = Some("mem.64g".into())), Some(("spec.resource_shape", "shape 'mem.64g' needs 0 CPU, 65536 MiB memory and 0 GPU per replica, more than any node of group 'a' has (4 CPU, 16384 MiB, 0 GPU)"))),
    ];
    let context = context();
    for (rule, change, expected) in cases {
        let mut job = base();
        change(&mut job);
        let expected: FieldErrors =
            expected.iter().map(|(path, message)| (path.to_string(), vec![message.to_string()])).collect();
        assert_eq!(validate_job_in(&job, &context), expected, "rule: {rule}");
    }
}

/// What the executor needs of every job (`GET /workspace`'s
/// `job_requirements`), checked the same on both sides.
#[test]
fn executor_requirements() {
    let process = JobRequirements { command_required: true, ..Default::default() };
    let containers = JobRequirements { image_required: true, volumes: Some(vec!["data".into()]), ..Default::default() };
    let no_command = |j: &mut LeptonJob| j.spec.container.command = None;
    let cases: Vec<(&str, &JobRequirements, Box<dyn Fn(&mut LeptonJob)>, Option<(&str, &str)>)> = vec![
        ("process mode, command", &process, Box::new(|_| {}), None),
        ("process mode, no command", &process, Box::new(no_command), Some(("spec.container.command", "a command is required on this server: it runs replicas as plain processes, and an empty command means the image's own entrypoint, which only a container runs"))),
        ("process mode, blank command", &process, Box::new(|j| j.spec.container.command = Some(vec![" ".into()])), Some(("spec.container.command", "a command is required on this server: it runs replicas as plain processes, and an empty command means the image's own entrypoint, which only a container runs"))),
        ("containers, no command", &containers, Box::new(no_command), None),
        ("containers, no image", &containers, Box::new(|j| j.spec.container.image = None), Some(("spec.container.image", "an image is required on this server: it runs replicas in containers"))),
        ("containers, known volume", &containers, Box::new(|j| j.spec.mounts = Some(vec![Mount { path: Some("/".into()), mount_path: "/data".into(), from: "data".into(), mount_options: None }])), None),
        ("containers, unknown volume", &containers, Box::new(|j| j.spec.mounts = Some(vec![Mount { path: Some("/".into()), mount_path: "/data".into(), from: "scratch".into(), mount_options: None }])), Some(("spec.mounts[0].from", "no volume named 'scratch' on this server; it has 'data'"))),
    ];
    let processes = JobRequirements { command_required: true, image_ignored: true, ..Default::default() };
    let opened = JobRequirements { privileged_node_groups: vec!["b".into()], ..Default::default() };
    let privileged = |groups: &[&str]| {
        let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        Box::new(move |j: &mut LeptonJob| {
            j.spec.user_security_context = Some(UserSecurityContext { privileged: Some(true), no_specific_user: None });
            if !groups.is_empty() {
                j.spec.affinity =
                    Some(Affinity { allowed_dedicated_node_groups: Some(groups.clone()), ..Default::default() });
            }
        }) as Box<dyn Fn(&mut LeptonJob)>
    };
    let user = |text: &str| {
        let text = text.to_string();
        Box::new(move |j: &mut LeptonJob| j.spec.container.user = Some(text.clone())) as Box<dyn Fn(&mut LeptonJob)>
    };
    let cases = cases.into_iter().chain([
        ("process mode, a user", &processes, user("1000"), Some(("spec.container.user", "is a user inside the container, and this server runs replicas as plain processes, as the server's own user"))),
        ("containers, a user", &containers, user("1000:1000"), None),
        ("containers, not a user", &containers, user("-u0"), Some(("spec.container.user", "a name starts with a letter or _, such as ubuntu"))),
        ("privileged, nowhere opened", &containers, privileged(&["b"]), Some(("spec.user_security_context.privileged", "Jobdeck does not run privileged containers for you here: no node group allows them for your role"))),
        ("privileged, any group", &opened, privileged(&[]), Some(("spec.user_security_context.privileged", "runs only on node groups that allow privileged containers for your role: choose 'b' in spec.affinity.allowed_dedicated_node_groups"))),
        ("privileged, a closed group too", &opened, privileged(&["a", "b"]), Some(("spec.user_security_context.privileged", "runs only on node groups that allow privileged containers for your role: choose 'b' in spec.affinity.allowed_dedicated_node_groups"))),
        ("privileged, the opened group", &opened, privileged(&["b"]), None),
    ]);
    let slurm = JobRequirements {
        refused_env_names: vec!["PATH".into(), "LD_*".into(), "SLURM_*".into()],
        ..Default::default()
    };
    let docker = JobRequirements { multi_line_env_refused: true, ..Default::default() };
    let env = |name: &str, value: &str| {
        let (name, value) = (name.to_string(), value.to_string());
        Box::new(move |j: &mut LeptonJob| {
            j.spec.envs = Some(vec![EnvVar { name: name.clone(), value: Some(value.clone()), value_from: None }])
        }) as Box<dyn Fn(&mut LeptonJob)>
    };
    let refused = "may not be set on this server: a process outside the job's container would read it";
    let cases: Vec<(&str, &JobRequirements, Box<dyn Fn(&mut LeptonJob)>, Option<(&str, String)>)> = cases
        .into_iter()
        .map(|(rule, r, change, expected)| (rule, r, change, expected.map(|(p, m)| (p, m.to_string()))))
        .chain([
            ("slurm, own variable", &slurm, env("HF_HOME", "/data"), None),
            ("slurm, PATH", &slurm, env("PATH", "/tmp/evil"), Some(("spec.envs[0].name", format!("'PATH' {refused}")))),
            ("slurm, LD_PRELOAD", &slurm, env("LD_PRELOAD", "/x.so"), Some(("spec.envs[0].name", format!("'LD_*' {refused}")))),
            ("slurm, SLURM_ prefix", &slurm, env("SLURM_JOB_ID", "1"), Some(("spec.envs[0].name", format!("'SLURM_*' {refused}")))),
            ("slurm, PATHS is another name", &slurm, env("PATHS", "x"), None),
            ("docker, one line", &docker, env("KEY", "a b"), None),
            ("docker, two lines", &docker, env("KEY", "a\nb"), Some(("spec.envs[0].value", "must be one line on this server: its container engine cannot pass a line break to the container safely".to_string()))),
            ("podman, two lines", &containers, env("KEY", "a\r\nb"), None),
        ])
        .collect();
    for (rule, requirements, change, expected) in cases {
        let context = ValidationContext { requirements: requirements.clone(), ..context() };
        let mut job = base();
        change(&mut job);
        let expected: FieldErrors = expected.iter().map(|(p, m)| (p.to_string(), vec![m.to_string()])).collect();
        assert_eq!(validate_job_in(&job, &context), expected, "rule: {rule}");
    }
}

#[test]
fn server_rules_add_to_the_context_free_ones() {
    let mut job = base();
    job.metadata.name = Some("Bad".into());
    job.spec.resource_shape = Some("nope".into());
    let errors = validate_job_in(&job, &context());
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors.contains_key("metadata.name"));
    assert!(errors.contains_key("spec.resource_shape"));
}

/// A workspace may lower the limit (the managed-cluster page's 20): the
/// context carries it, so the console and the server apply the same one.
#[test]
fn a_workspace_limit_on_job_names_applies_in_context() {
    let mut job = LeptonJob::default();
    job.metadata.name = Some("abcdefghijklmnopqrstu".into());
    job.spec.container.command = Some(vec!["true".into()]);
    let mut strict = context();
    strict.requirements.job_name_max_length = Some(20);
    let errors = validate_job_in(&job, &strict);
    assert_eq!(errors.get("metadata.name").map(|m| m[0].as_str()), Some("must be at most 20 characters (it has 21)"));
    assert!(!validate_job_in(&job, &context()).contains_key("metadata.name"));
    job.metadata.name = Some("abcdefghijklmnopqrst".into());
    assert!(!validate_job_in(&job, &strict).contains_key("metadata.name"));
}

/// Image pull secret names are checked when the server lists them, and left
/// to the cluster when it does not (`None`).
#[test]
fn image_pull_secret_names_are_checked_when_known() {
    let mut job = LeptonJob::default();
    job.metadata.name = Some("pull".into());
    job.spec.image_pull_secrets = Some(vec!["tao-image-pull-secret".into(), "missing".into()]);
    let mut known = context();
    known.image_pull_secret_names = Some(vec!["tao-image-pull-secret".into()]);
    let errors = validate_job_in(&job, &known);
    assert!(!errors.contains_key("spec.image_pull_secrets[0]"), "{errors:?}");
    assert_eq!(
        errors.get("spec.image_pull_secrets[1]").map(|m| m[0].as_str()),
        Some("no image pull secret named 'missing'")
    );
    assert!(!validate_job_in(&job, &context()).contains_key("spec.image_pull_secrets[1]"));
}

#[test]
fn a_character_that_broke_a_rule_is_quoted_as_rust_debug_quotes_it() {
    // `quoted` replaces `{:?}` in the messages: the same text for what a
    // person types, letters of any script shown as they are.
    for c in ['B', '_', '/', ' ', 'é', '中', '\n', '\t', '\r', '\'', '\\', '\u{7f}', '\u{85}'] {
        assert_eq!(super::quoted(c), format!("{c:?}"), "{c:?}");
    }
    // NUL is the one character written differently (Rust's `{:?}` says '\0').
    assert_eq!(super::quoted('\0'), "'\\u{0}'");
}

#[test]
fn repeated_keys_are_found_with_their_first_index_as_a_scan_finds_them() {
    // Lists of every length up to 40 over a few keys, against the plain
    // quadratic scan: the merge sort's runs, odd tails and equal keys.
    let mut seed = 7u32;
    for length in 0..40 {
        let items: Vec<String> = (0..length)
            .map(|_| {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                format!("k{}", (seed >> 16) % 5)
            })
            .collect();
        let mut keys = super::Keys::default();
        for (i, item) in items.iter().enumerate() {
            keys.add(item.as_str(), i);
        }
        let mut found = keys.repeats();
        found.sort();
        let scanned: Vec<(usize, String, usize)> = items
            .iter()
            .enumerate()
            .filter_map(|(i, key)| Some((i, key.clone(), items[..i].iter().position(|k| k == key)?)))
            .collect();
        assert_eq!(found, scanned, "{items:?}");
    }
}
