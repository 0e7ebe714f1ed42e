//! A job spec with every default applied and every reference resolved
//! against this server's configuration: what the scheduler and executors
//! work from.
//!
//! Every default comes from the contract's accessors (`JobSpec::completions()`,
//! `JobSpec::backoff_limit()`, …, `jobdeck_api::defaults`); this module only
//! adds what needs the configuration (the shape, the node groups, the
//! workspace's log-collection default) and clamps what a job stored before a
//! rule existed could still hold, so the scheduler never works from an
//! impossible number.
//!
//! Retry settings follow Kubernetes Indexed Jobs (docs/contract.md,
//! "Retries"):
//! * `backoff_limit` bounds the failed attempts of a run in total (default 3;
//!   no overall bound when only `max_failure_retry` is set);
//! * `max_failure_retry`, when set, bounds the failed attempts of each
//!   completion index (`backoffLimitPerIndex`);
//! * `max_job_failure_retry` restarts a failed run as a whole, that many
//!   times;
//! * `disable_retry_on_program_error` fails the run at the first attempt that
//!   fails with a program error, and skips job-level restarts.

use jobdeck_api::validate::{
    DURATION_MAX_SECONDS, GRACE_PERIOD_MAX_SECONDS, MEMORY_MAX_MIB, REPLICAS_MAX, RETRIES_MAX,
};
use jobdeck_api::{
    choice_words, chosen_offer, offer_problems, offers, FieldErrors, JobSpec, LeptonJob, NodeGroupChoice, Offer,
    Priority, ResourceRequirements, ShapeChoice,
};

use crate::config::{Config, NodeGroupConfig, ShapeConfig};
use crate::topology::{node_group_views, shape_view};

/// A spec with its defaults applied.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedSpec {
    pub shape: ShapeConfig,
    /// The node groups the job may run in, in preference order.
    pub node_groups: Vec<String>,
    /// Nodes it may run on (empty: any node of those groups).
    pub nodes: Vec<String>,
    /// The job's completions: `JOB_COMPLETIONS` of every replica.
    pub completions: i64,
    /// The completion indexes a rerun of failed indexes runs
    /// (`spec.completion_indexes`), in order; `None`: every index, which is
    /// not listed (a job may have 100,000 and is resolved often).
    pub chosen_indexes: Option<Vec<i64>>,
    pub parallelism: i64,
    pub workers: i64,
    pub backoff_limit: i64,
    pub max_failure_retry: Option<i64>,
    pub max_job_failure_retry: i64,
    /// Seconds from the job's creation within which the scheduler restarts
    /// a failed run and requeues a preempted one (`retry_window_seconds`).
    pub retry_window_seconds: Option<i64>,
    pub disable_retry_on_program_error: bool,
    pub active_deadline_seconds: Option<i64>,
    pub max_queued_duration_seconds: Option<i64>,
    /// Seconds between SIGTERM and SIGKILL when a replica is stopped;
    /// `None`: the executor's default.
    pub termination_grace_period_seconds: Option<i64>,
    pub ttl_seconds_after_finished: i64,
    /// The priority level times 1000 (`mid-4000` is 4000), as stored in the
    /// jobs table and compared by the scheduler.
    pub priority: i64,
    pub can_preempt: bool,
    pub can_be_preempted: bool,
    pub shared_memory_mb: i64,
    pub log_collection: bool,
    /// Bytes of log each replica attempt keeps: the job's log cap (`[logs]
    /// job_log_cap`) shared among the replicas that run at once; `None`:
    /// no cap. Every executor's log writer holds its attempts to it.
    pub log_cap_per_replica: Option<u64>,
}

/// Writes the workspace's defaults into a new job's spec where it names
/// nothing, so the job keeps what it was created with when the
/// configuration changes later (as Kubernetes writes defaults into the
/// object it admits): the queue limit (`default_max_queued_duration`).
pub fn apply_workspace_defaults(spec: &mut JobSpec, config: &Config) {
    if spec.max_queued_duration_seconds.is_none() {
        spec.max_queued_duration_seconds = config.default_max_queued_duration_seconds;
    }
}

/// The shape a job's requirements (`spec.resources`) choose on this server
/// (the smallest that meets them and fits its node groups, by the
/// contract's one chooser), with why in words; `None` when the job names a
/// shape, gives no requirements, or no shape meets them (which
/// `validate_job_in` has refused already).
pub fn shape_chosen_by_requirements(spec: &JobSpec, config: &Config) -> Option<(String, String)> {
    let requirements = spec.resources.as_ref().filter(|_| spec.resource_shape.is_none())?;
    with_offers(spec, requirements, config, |offers| {
        let chosen = chosen_offer(offers)?;
        Some((chosen.shape.id.clone()?, choice_words(requirements, offers, chosen.shape)))
    })
}

/// `read` of the offers this server's shapes make to `spec`'s requirements.
fn with_offers<T>(
    spec: &JobSpec,
    requirements: &ResourceRequirements,
    config: &Config,
    read: impl FnOnce(&[Offer<'_>]) -> T,
) -> T {
    let shapes: Vec<ShapeChoice> = config.shapes.iter().map(|s| (&shape_view(s)).into()).collect();
    let groups: Vec<NodeGroupChoice> = node_group_views(config, &[], &[]).iter().map(Into::into).collect();
    read(&offers(spec, requirements, &shapes, &groups))
}

/// The number the scheduler orders by for a priority: its class's number
/// (`mid-4000` is 4000).
pub fn priority_number(priority: Priority) -> i64 {
    i64::from(priority.level()) * 1000
}

/// Why a job file (`jobdeck kube render`, `jobdeck slurm render`) cannot be
/// rendered before any executor looks at it.
#[derive(Debug)]
pub enum JobFileError {
    /// Not JSON at all.
    Syntax(String),
    /// Fields that do not fit the types, break the contract's rules or do not
    /// fit this server's configuration, by path.
    Fields(FieldErrors),
}

/// Reads a job file as the API reads a body, so a mistyped or unknown field
/// is named by its path (`spec.completions: must be a whole number`), not by
/// a line and column; checks it as the server checks a new job (a job may
/// be named by its id alone, as Lepton clients do) and resolves it against
/// `config`.
pub fn read_job_file(json: &str, config: &Config) -> Result<(LeptonJob, ResolvedSpec), JobFileError> {
    let job: LeptonJob = jobdeck_api::from_json(json.as_bytes()).map_err(|e| match e {
        jobdeck_api::JsonError::Syntax(message) => JobFileError::Syntax(message),
        jobdeck_api::JsonError::Fields(errors) => JobFileError::Fields(errors),
    })?;
    let mut errors = jobdeck_api::validate_job(&job);
    if job.metadata.name.is_none() && job.metadata.id.is_some() {
        errors.remove("metadata.name");
    }
    // Rendered objects are named after the job: a file must name it (the
    // server names a job posted without a name; a file is not posted).
    if job.metadata.name.is_none() && job.metadata.id.is_none() {
        errors.insert("metadata.name".into(), vec!["must not be empty".into()]);
    }
    if !errors.is_empty() {
        return Err(JobFileError::Fields(errors));
    }
    let resolved = ResolvedSpec::resolve(&job.spec, config).map_err(JobFileError::Fields)?;
    Ok((job, resolved))
}

impl ResolvedSpec {
    /// Applies the defaults to `spec`; errors name the field whose reference
    /// this server cannot satisfy (a shape or node group it does not have, a
    /// job that can never fit).
    pub fn resolve(spec: &JobSpec, config: &Config) -> Result<ResolvedSpec, FieldErrors> {
        let mut errors = FieldErrors::new();
        let mut push = |path: &str, message: String| errors.entry(path.to_string()).or_default().push(message);

        let shape = match (spec.resource_shape.as_deref(), &spec.resources) {
            (Some(name), _) => config.shape(name).cloned(),
            (None, Some(_)) => {
                shape_chosen_by_requirements(spec, config).and_then(|(name, _)| config.shape(&name).cloned())
            }
            (None, None) => config.shapes.first().cloned(),
        };
        let Some(shape) = shape else {
            match spec.resource_shape.as_deref() {
                Some(name) => push("spec.resource_shape", format!("no resource shape named '{name}'")),
                // The contract's own words, with the nearest shapes.
                None => match &spec.resources {
                    Some(requirements) => {
                        errors.extend(with_offers(spec, requirements, config, |o| offer_problems(spec, o)))
                    }
                    None => push("spec.resources", "this server has no shapes".into()),
                },
            }
            return Err(errors);
        };

        let allowed = spec.node_groups();
        let node_groups: Vec<String> = if allowed.is_empty() {
            config.node_groups.iter().map(|g| g.name.clone()).collect()
        } else {
            allowed.to_vec()
        };
        for (i, name) in allowed.iter().enumerate() {
            if config.node_group(name).is_none() {
                push(
                    &format!("spec.affinity.allowed_dedicated_node_groups[{i}]"),
                    format!("no node group named '{name}'"),
                );
            }
        }

        // Who may ask is checked when the job is created (the caller's role,
        // `privileged_node_groups`); this is the server's own line, held
        // whenever a job is resolved, as the scheduler does for every job
        // it holds when the server starts: a group an admin has closed
        // since runs no privileged container, whoever created the job.
        if spec.privileged() {
            let closed: Vec<String> = node_groups
                .iter()
                .filter(|name| config.node_group(name).is_some_and(|g| g.privileged_roles.is_empty()))
                .map(|name| format!("'{name}'"))
                .collect();
            if !closed.is_empty() {
                push(
                    "spec.user_security_context.privileged",
                    format!(
                        "node group(s) {} allow no privileged containers (privileged_roles in the config)",
                        closed.join(", ")
                    ),
                );
            }
        }

        // The contract's rules hold for every job written since they exist;
        // the clamps keep a job stored before a rule from misleading the
        // scheduler (a zero parallelism would never start, an enormous one
        // would never fit).
        let workers = spec.workers().clamp(1, REPLICAS_MAX);
        let completions = spec.completions().clamp(1, REPLICAS_MAX);
        let chosen_indexes = spec.chosen_indexes().map(|_| spec.completion_indexes()).filter(|i| !i.is_empty());
        let index_count = chosen_indexes.as_ref().map_or(completions, |i| i.len() as i64);
        let parallelism = spec.parallelism().clamp(1, index_count);
        let seconds = |value: Option<i64>| value.filter(|s| *s > 0).map(|s| s.min(DURATION_MAX_SECONDS));
        let resolved = ResolvedSpec {
            shared_memory_mb: spec.shared_memory_mib(shape.memory_mb).clamp(0, MEMORY_MAX_MIB),
            shape,
            node_groups,
            nodes: spec.nodes().to_vec(),
            completions,
            chosen_indexes,
            parallelism,
            workers,
            backoff_limit: spec.backoff_limit().clamp(0, RETRIES_MAX),
            max_failure_retry: spec.max_failure_retry().map(|n| n.clamp(0, RETRIES_MAX)),
            // A window bounds the restarts by time: without a count they go
            // on until it ends.
            max_job_failure_retry: match (spec.max_job_failure_retry, spec.retry_window_seconds) {
                (None, Some(_)) => RETRIES_MAX,
                _ => spec.max_job_failure_retry().clamp(0, RETRIES_MAX),
            },
            retry_window_seconds: seconds(spec.retry_window_seconds),
            disable_retry_on_program_error: spec.disable_retry_on_program_error(),
            active_deadline_seconds: seconds(spec.active_deadline_seconds()),
            max_queued_duration_seconds: seconds(spec.max_queued_duration_seconds()),
            termination_grace_period_seconds: spec
                .termination_grace_period_seconds
                .map(|s| s.clamp(0, GRACE_PERIOD_MAX_SECONDS)),
            ttl_seconds_after_finished: spec.ttl_seconds_after_finished().clamp(0, DURATION_MAX_SECONDS),
            priority: priority_number(spec.priority()),
            can_preempt: spec.can_preempt(),
            can_be_preempted: spec.can_be_preempted(),
            log_collection: spec.log_collection(config.log_collection_default),
            log_cap_per_replica: config.logs.log_cap_per_replica(parallelism),
        };
        // A job that could not run even on an idle cluster would wait
        // forever: the contract's rule, asked of this server's own view of
        // its shapes and node groups.
        if errors.is_empty() {
            let groups: Vec<_> = node_group_views(config, &[], &[]).iter().map(Into::into).collect();
            let fit = jobdeck_api::check_fit(spec, &(&shape_view(&resolved.shape)).into(), &groups);
            errors.extend(fit);
        }
        if errors.is_empty() {
            Ok(resolved)
        } else {
            Err(errors)
        }
    }

    /// The groups (with their config) this job may use.
    /// How many completion indexes a run runs: it succeeds once each has.
    pub fn index_count(&self) -> i64 {
        self.chosen_indexes.as_ref().map_or(self.completions, |i| i.len() as i64)
    }

    /// The completion indexes a run runs, in order (listed when a run
    /// starts).
    pub fn indexes(&self) -> Vec<i64> {
        self.chosen_indexes.clone().unwrap_or_else(|| (0..self.completions).collect())
    }

    pub fn groups<'a>(&'a self, config: &'a Config) -> impl Iterator<Item = &'a NodeGroupConfig> + 'a {
        self.node_groups.iter().filter_map(|name| config.node_group(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MachineInfo;
    use jobdeck_api::{Affinity, QueueConfig};

    fn config() -> Config {
        Config::for_machine(
            "/tmp/x",
            &MachineInfo {
                hostname: "box".into(),
                cpus: 4.0,
                memory_mb: 16384,
                gpus: 0,
                gpu_product: None,
                gpu_memory_mb: None,
            },
        )
    }

    #[test]
    fn priorities_are_the_contracts() {
        let cases = [
            (None, 4000),
            (Some("low-1000"), 1000),
            (Some("high-9000"), 9000),
            (Some("weird"), 4000),
            (Some("x-99999"), 4000),
        ];
        for (class, expected) in cases {
            let spec = JobSpec {
                queue_config: Some(QueueConfig { priority_class: class.map(String::from), ..QueueConfig::default() }),
                ..JobSpec::default()
            };
            let r = ResolvedSpec::resolve(&spec, &config()).unwrap();
            assert_eq!(r.priority, expected, "{class:?}");
        }
    }

    #[test]
    fn defaults_apply_to_an_empty_spec() {
        let r = ResolvedSpec::resolve(&JobSpec::default(), &config()).unwrap();
        assert_eq!(r.shape.name, "cpu.small");
        assert_eq!(r.node_groups, ["local"]);
        assert_eq!((r.completions, r.parallelism, r.workers), (1, 1, 1));
        assert_eq!((r.backoff_limit, r.max_failure_retry, r.max_job_failure_retry), (3, None, 0));
        assert_eq!((r.priority, r.can_preempt, r.can_be_preempted), (4000, false, false));
        assert_eq!(r.ttl_seconds_after_finished, jobdeck_api::defaults::TTL_SECONDS_AFTER_FINISHED);
        assert_eq!(r.shared_memory_mb, 2048);
        assert!(r.log_collection);
        assert_eq!(r.active_deadline_seconds, None);
    }

    /// `jobdeck kube|slurm render` reads a job file without the server's
    /// context: requirements no shape meets get the contract's own answer,
    /// the field and the nearest shapes, not a bare refusal.
    #[test]
    fn requirements_no_shape_meets_name_the_field_and_the_nearest_shapes() {
        let spec = JobSpec {
            resources: Some(ResourceRequirements {
                gpu: Some(jobdeck_api::GpuRequirement {
                    count: Some(jobdeck_api::AmountRange::at_least(1)),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..JobSpec::default()
        };
        let errors = ResolvedSpec::resolve(&spec, &config()).unwrap_err();
        let message = &errors["spec.resources.gpu.count"][0];
        assert!(message.starts_with("no shape of this workspace has") && message.contains("(has 0 GPU"), "{message}");
    }

    #[test]
    fn workers_set_completions_and_parallelism() {
        let spec = JobSpec { workers: Some(2), completions: Some(7), ..JobSpec::default() };
        let r = ResolvedSpec::resolve(&spec, &config()).unwrap();
        assert_eq!((r.completions, r.parallelism, r.workers), (2, 2, 2));
    }

    #[test]
    fn a_lep_num_workers_payload_runs_as_that_many_workers() {
        let spec = JobSpec {
            completions: Some(2),
            parallelism: Some(2),
            intra_job_communication: Some(true),
            ..JobSpec::default()
        };
        let r = ResolvedSpec::resolve(&spec, &config()).unwrap();
        assert_eq!((r.completions, r.parallelism, r.workers), (2, 2, 2));
        let spec = JobSpec { completions: Some(3), parallelism: Some(2), ..JobSpec::default() };
        let r = ResolvedSpec::resolve(&spec, &config()).unwrap();
        assert_eq!((r.completions, r.parallelism, r.workers), (3, 2, 1));
    }

    #[test]
    fn a_per_index_retry_limit_lifts_the_default_total() {
        let spec = JobSpec { max_failure_retry: Some(1), ..JobSpec::default() };
        let r = ResolvedSpec::resolve(&spec, &config()).unwrap();
        assert_eq!((r.backoff_limit, r.max_failure_retry), (spec.backoff_limit(), Some(1)));
        assert_eq!(r.backoff_limit, i64::from(i32::MAX));
        let spec = JobSpec { max_failure_retry: Some(1), backoff_limit: Some(0), ..JobSpec::default() };
        let r = ResolvedSpec::resolve(&spec, &config()).unwrap();
        assert_eq!((r.backoff_limit, r.max_failure_retry), (0, Some(1)));
    }

    #[test]
    fn the_server_applies_the_contracts_defaults() {
        // Whatever the contract's accessors say is what the scheduler runs.
        let specs = [
            JobSpec::default(),
            JobSpec { shared_memory_size: Some(0), ..JobSpec::default() },
            JobSpec { shared_memory_size: Some(512), ..JobSpec::default() },
            JobSpec { max_failure_retry: Some(2), ..JobSpec::default() },
            JobSpec { ttl_seconds_after_finished: Some(0), ..JobSpec::default() },
            // What `lep job create --num-workers 2` sends: two workers.
            JobSpec {
                completions: Some(2),
                parallelism: Some(2),
                intra_job_communication: Some(true),
                ..JobSpec::default()
            },
            JobSpec { completions: Some(3), parallelism: Some(2), ..JobSpec::default() },
            JobSpec {
                log: Some(jobdeck_api::LogConfig { enable_collection: Some(false), ..Default::default() }),
                ..JobSpec::default()
            },
        ];
        let config = config();
        for spec in specs {
            let r = ResolvedSpec::resolve(&spec, &config).unwrap();
            let memory = r.shape.memory_mb;
            assert_eq!(
                (r.workers, r.completions, r.parallelism),
                (spec.workers(), spec.completions(), spec.parallelism()),
                "{spec:?}"
            );
            assert_eq!(
                (r.backoff_limit, r.max_failure_retry),
                (spec.backoff_limit(), spec.max_failure_retry()),
                "{spec:?}"
            );
            assert_eq!(r.max_job_failure_retry, spec.max_job_failure_retry(), "{spec:?}");
            assert_eq!(r.ttl_seconds_after_finished, spec.ttl_seconds_after_finished(), "{spec:?}");
            assert_eq!(r.shared_memory_mb, spec.shared_memory_mib(memory), "{spec:?}");
            assert_eq!(r.priority, priority_number(spec.priority()), "{spec:?}");
            assert_eq!(r.log_collection, spec.log_collection(config.log_collection_default), "{spec:?}");
        }
        // An explicit 0 is no shared memory, not the default.
        let zero = JobSpec { shared_memory_size: Some(0), ..JobSpec::default() };
        assert_eq!(ResolvedSpec::resolve(&zero, &config).unwrap().shared_memory_mb, 0);
    }

    #[test]
    fn numbers_stored_before_their_bounds_are_clamped() {
        // A job stored before the contract bounded its numbers must not make
        // the scheduler's arithmetic overflow.
        let spec = JobSpec {
            active_deadline_seconds: Some(i64::MAX),
            max_queued_duration_seconds: Some(i64::MAX),
            ttl_seconds_after_finished: Some(i64::MAX),
            backoff_limit: Some(i64::MAX),
            max_job_failure_retry: Some(-4),
            ..JobSpec::default()
        };
        let r = ResolvedSpec::resolve(&spec, &config()).unwrap();
        assert_eq!(r.active_deadline_seconds, Some(DURATION_MAX_SECONDS));
        assert_eq!(r.max_queued_duration_seconds, Some(DURATION_MAX_SECONDS));
        assert_eq!(r.ttl_seconds_after_finished, DURATION_MAX_SECONDS);
        assert_eq!((r.backoff_limit, r.max_job_failure_retry), (RETRIES_MAX, 0));
    }

    #[test]
    fn jobs_that_can_never_fit_are_refused_on_the_field_at_fault() {
        let cases: Vec<(JobSpec, &str, &str)> = vec![
            (
                JobSpec {
                    resource_shape: Some("cpu.large".into()),
                    parallelism: Some(2),
                    completions: Some(2),
                    ..JobSpec::default()
                },
                "spec.parallelism",
                "2 replicas must run at once, but group 'local' can hold at most 1 replicas of shape 'cpu.large'",
            ),
            (
                JobSpec { resource_shape: Some("gpu.8x".into()), ..JobSpec::default() },
                "spec.resource_shape",
                "no resource shape named 'gpu.8x'",
            ),
            (
                JobSpec {
                    affinity: Some(Affinity {
                        allowed_dedicated_node_groups: Some(vec!["h100".into()]),
                        ..Affinity::default()
                    }),
                    ..JobSpec::default()
                },
                "spec.affinity.allowed_dedicated_node_groups[0]",
                "no node group named 'h100'",
            ),
            (
                JobSpec {
                    affinity: Some(Affinity {
                        allowed_nodes_in_node_group: Some(vec!["elsewhere".into()]),
                        ..Affinity::default()
                    }),
                    ..JobSpec::default()
                },
                "spec.affinity.allowed_nodes_in_node_group",
                "none of these nodes is in the chosen node groups",
            ),
        ];
        for (spec, path, message) in cases {
            let errors = ResolvedSpec::resolve(&spec, &config()).unwrap_err();
            assert_eq!(errors.get(path).map(|m| m[0].as_str()), Some(message), "{errors:?}");
        }
        let mut small = config();
        small.shapes[2].cpu = 8.0;
        let spec = JobSpec { resource_shape: Some("cpu.large".into()), ..JobSpec::default() };
        let errors = ResolvedSpec::resolve(&spec, &small).unwrap_err();
        assert!(errors["spec.resource_shape"][0].starts_with("shape 'cpu.large' needs 8 CPU"), "{errors:?}");
    }

    #[test]
    fn queue_settings_are_read() {
        let spec = JobSpec {
            queue_config: Some(QueueConfig {
                priority_class: Some("high-8000".into()),
                can_preempt: Some(true),
                can_be_preempted: None,
            }),
            ..JobSpec::default()
        };
        let r = ResolvedSpec::resolve(&spec, &config()).unwrap();
        assert_eq!((r.priority, r.can_preempt, r.can_be_preempted), (8000, true, false));
    }
}
