//! Property: whatever validates round-trips through JSON unchanged, and
//! validation itself gives the same answer after a round trip (so the
//! console, which validates the value it built, and the server, which
//! validates the JSON it received, agree).

use std::collections::BTreeMap;

use jobdeck_api::{
    from_json, validate_job, Affinity, Container, ContainerPort, Decode, EnvValue, EnvVar, JobSpec, LeptonJob,
    LogConfig, Metadata, Mount, MountOptions, QueueConfig, SegmentConfig, TimeSchedule, Visibility,
};
use proptest::collection::vec;
use proptest::prelude::*;

/// `Some` a quarter of the time: with every field set half the time, almost
/// no generated job would be valid and the property would say little.
fn of<S: Strategy>(inner: S) -> impl Strategy<Value = Option<S::Value>> {
    proptest::option::weighted(0.25, inner)
}

/// Strings over an alphabet that hits every rule's edge: lowercase, upper,
/// digits, separators, slashes, spaces, non-ASCII and NUL.
fn text() -> impl Strategy<Value = String> {
    vec(prop::sample::select(vec!['a', 'b', 'z', '0', '9', '-', '_', '.', '/', ':', 'A', ' ', 'é', '\0']), 0..12)
        .prop_map(String::from_iter)
}

/// Text a rule rarely objects to: no NUL, no spaces.
fn plain() -> impl Strategy<Value = String> {
    vec(prop::sample::select(vec!['a', 'b', 'z', '0', '9', '-', '_', '.', 'A', 'é']), 0..12).prop_map(String::from_iter)
}

/// Mostly `plain`, sometimes anything.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![9 => plain(), 1 => text()]
}

/// Mostly valid job names, sometimes anything.
fn job_name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => vec(prop::sample::select(vec!['a', 'k', 'z', '0', '7', '-']), 0..20)
            .prop_map(|chars| format!("j{}", String::from_iter(chars)).trim_end_matches('-').to_string()),
        1 => text(),
    ]
}

fn env_name() -> impl Strategy<Value = String> {
    prop_oneof![
        12 => prop::sample::select(vec!["A", "B", "C", "D", "E", "F", "G", "HF_TOKEN", "_x", "MODE", "B2", "WANDB_KEY", "PATH", "N", "M"]).prop_map(String::from),
        1 => prop::sample::select(vec!["JOB_COMPLETIONS", "LEPTON_X", "1A", "A-B", ""]).prop_map(String::from),
        1 => text(),
    ]
}

fn small() -> impl Strategy<Value = Option<i64>> {
    of(prop_oneof![4 => -2i64..12, 1 => any::<i64>()])
}

fn env() -> impl Strategy<Value = EnvVar> {
    (env_name(), of(value()), proptest::option::weighted(0.15, of(value()))).prop_map(|(name, value, secret)| EnvVar {
        name,
        value,
        value_from: secret.map(|secret_name_ref| EnvValue { secret_name_ref, secret_owner: None }),
    })
}

fn mount() -> impl Strategy<Value = Mount> {
    (
        of(value()),
        prop_oneof![
            9 => prop::sample::select(vec!["node-local", "node-nfs:share", "shared"]),
            1 => prop::sample::select(vec!["node-x", ""]),
        ],
        prop_oneof![
            12 => prop::sample::select(vec!["/data", "/ckpt", "/root/.cache", "/a", "/b", "/c", "/d", "/e", "/mnt/x", "/workspace"]).prop_map(String::from),
            1 => prop::sample::select(vec!["/etc", "/proc/x", "/a/../b", "data"]).prop_map(String::from),
            1 => text().prop_map(|t| format!("/{t}")),
        ],
        of((of(-1i64..4096), of(any::<bool>()))),
    )
        .prop_map(|(path, from, mount_path, options)| Mount {
            path,
            from: from.to_string(),
            mount_path,
            mount_options: options.map(|(local_cache_size_mib, read_only)| MountOptions {
                local_cache_size_mib,
                read_only,
            }),
        })
}

fn port() -> impl Strategy<Value = ContainerPort> {
    (
        of(prop::sample::select(vec!["http", "metrics", "8080", "a--b"]).prop_map(String::from)),
        prop_oneof![4 => 1i64..70000, 1 => any::<i64>()],
        of(prop::sample::select(vec!["TCP", "udp", "Sctp", "http"]).prop_map(String::from)),
        of(1i64..70000),
        of(vec(prop::sample::select(vec!["HostPortMapping", "IngressProxy"]).prop_map(String::from), 0..2)),
    )
        .prop_map(|(name, container_port, protocol, host_port, expose_strategies)| ContainerPort {
            name,
            container_port,
            protocol,
            host_port,
            expose_strategies,
            ..Default::default()
        })
}

fn container() -> impl Strategy<Value = Container> {
    (
        of(prop::sample::select(vec![
            "busybox",
            "busybox:1.36",
            "nvcr.io/nvidia/pytorch:25.08-py3",
            "Bad Image",
            "app@sha256:ab",
        ])
        .prop_map(String::from)),
        of(vec(port(), 0..3)),
        (
            of(vec(value(), 0..4)),
            of(vec(value(), 0..3)),
            // Mostly absolute, as the rule wants, sometimes not.
            proptest::option::weighted(
                0.3,
                prop::sample::select(vec!["/workspace", "/w s", "src"]).prop_map(String::from),
            ),
        ),
        (
            proptest::option::weighted(0.1, prop::sample::select(vec!["latest", "1.0", "-x"]).prop_map(String::from)),
            proptest::option::weighted(
                0.1,
                prop::sample::select(vec!["1000:1000", "ubuntu", "-u"]).prop_map(String::from),
            ),
        ),
        // Registry credentials come in pairs, as the rule wants, except
        // sometimes.
        prop_oneof![
            8 => of((value(), value())).prop_map(|pair| pair.map_or((None, None), |(u, p)| (Some(u), Some(p)))),
            1 => (of(value()), of(value())),
        ],
    )
        .prop_map(
            |(
                image,
                ports,
                (command, args, working_dir),
                (image_tag, user),
                (registry_username, registry_password),
            )| {
                Container {
                    image,
                    ports,
                    command,
                    args,
                    working_dir,
                    user,
                    image_tag,
                    registry_username,
                    registry_password,
                }
            },
        )
}

fn spec() -> impl Strategy<Value = JobSpec> {
    let counts = (small(), small(), small(), small(), small(), small(), small(), small());
    let lists = (
        of(vec(env(), 0..4)),
        of(vec(mount(), 0..3)),
        of(vec(prop::sample::select(vec!["gpu-a", "gpu-b", ""]).prop_map(String::from), 0..3)),
        of(vec(prop::sample::select(vec!["node-1", "node-2"]).prop_map(String::from), 0..2)),
        of(vec(text(), 0..2)),
    );
    let switches = (
        of(prop::sample::select(vec!["cpu.small", "gpu.1xh100", ""]).prop_map(String::from)),
        of(any::<bool>()),
        of(any::<bool>()),
        of((
            of(prop::sample::select(vec!["mid-4000", "high-9000", "mid", "low-0"]).prop_map(String::from)),
            of(any::<bool>()),
            of(any::<bool>()),
        )),
        of((of(any::<bool>()), of(any::<bool>()))),
        of(any::<bool>()),
        of(small().prop_map(|s| TimeSchedule { start_at: s })),
        proptest::option::weighted(0.05, (-1i64..5).prop_map(|count_per_segment| SegmentConfig { count_per_segment })),
    );
    (container(), counts, lists, switches).prop_map(|(container, counts, lists, switches)| {
        let (
            completions,
            parallelism,
            workers,
            backoff_limit,
            active_deadline_seconds,
            max_failure_retry,
            shared_memory_size,
            ttl_seconds_after_finished,
        ) = counts;
        let (envs, mounts, groups, nodes, image_pull_secrets) = lists;
        let (
            resource_shape,
            intra_job_communication,
            stopped,
            queue,
            log,
            disable_retry_on_program_error,
            time_schedule,
            segment_config,
        ) = switches;
        JobSpec {
            resource_shape,
            affinity: (groups.is_some() || nodes.is_some()).then_some(Affinity {
                allowed_dedicated_node_groups: groups,
                allowed_nodes_in_node_group: nodes,
                allowed_providers: None,
            }),
            container,
            shared_memory_size,
            completions,
            parallelism,
            max_failure_retry,
            envs,
            mounts,
            image_pull_secrets,
            ttl_seconds_after_finished,
            intra_job_communication,
            log: log.map(|(save_termination_logs, enable_collection)| LogConfig {
                save_termination_logs,
                enable_collection,
            }),
            queue_config: queue.map(|(priority_class, can_be_preempted, can_preempt)| QueueConfig {
                priority_class,
                can_be_preempted,
                can_preempt,
            }),
            stopped,
            time_schedule,
            segment_config,
            workers,
            backoff_limit,
            active_deadline_seconds,
            disable_retry_on_program_error,
            ..Default::default()
        }
    })
}

fn labels() -> impl Strategy<Value = Option<BTreeMap<String, String>>> {
    of(prop::collection::btree_map(
        prop_oneof![8 => prop::sample::select(vec!["team", "example.com/owner", "tier", "x.y/z"]).prop_map(String::from), 1 => Just("k8s.io/x".to_string()), 1 => text()],
        prop_oneof![8 => prop::sample::select(vec!["", "a", "v1.2", "x_y-z"]).prop_map(String::from), 1 => text()],
        0..3,
    ))
}

fn job() -> impl Strategy<Value = LeptonJob> {
    (
        job_name(),
        any::<bool>(),
        of(prop_oneof![Just(Visibility::Public), Just(Visibility::Private)]),
        labels(),
        labels(),
        spec(),
    )
        .prop_map(|(name, as_id, visibility, labels, annotations, spec)| {
            let (id, name) = if as_id { (Some(name), None) } else { (None, Some(name)) };
            LeptonJob {
                metadata: Metadata { id, name, visibility, labels, annotations, ..Default::default() },
                spec,
                status: None,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn whatever_validates_round_trips_through_json(job in job()) {
        let errors = validate_job(&job);
        let json = serde_json::to_vec(&job).unwrap();
        let back: LeptonJob = from_json(&json).unwrap();
        // The console's reader (`Decode`) reads the same JSON to the same
        // job, or refuses an integer a browser's number cannot hold exactly.
        let value: serde_json::Value = serde_json::from_slice(&json).unwrap();
        match LeptonJob::decode(&value, true) {
            Ok(decoded) => prop_assert_eq!(&decoded, &back),
            Err(error) => prop_assert!(error.to_string().contains("not a whole number below 2^53"), "{}", error),
        }
        prop_assert_eq!(&validate_job(&back), &errors);
        if errors.is_empty() {
            prop_assert_eq!(&back, &job);
            prop_assert_eq!(serde_json::to_vec(&back).unwrap(), json);
        }
    }
}

/// The generator must produce valid jobs often enough for the property to
/// mean something.
#[test]
fn the_generator_produces_valid_jobs() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = job();
    let valid =
        (0..2000).filter(|_| validate_job(&strategy.new_tree(&mut runner).unwrap().current()).is_empty()).count();
    println!("{valid} of 2000 generated jobs are valid");
    assert!(valid >= 200, "only {valid} of 2000 generated jobs were valid");
}
