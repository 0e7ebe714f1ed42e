//! A job spec with every default applied and every reference resolved
//! against this server's configuration: what the scheduler and executors
//! work from.
//!
//! Retry settings follow Kubernetes Indexed Jobs:
//! * `backoff_limit` bounds the failed attempts of a run in total (default 3);
//! * `max_failure_retry`, when set, bounds the failed attempts of each
//!   completion index (`backoffLimitPerIndex`); when it is set and
//!   `backoff_limit` is not, only the per-index bound applies;
//! * `max_job_failure_retry` restarts a failed run as a whole, that many
//!   times;
//! * `disable_retry_on_program_error` fails the run at the first attempt that
//!   fails with a program error, and skips job-level restarts.

use jobdeck_api::{FieldErrors, JobSpec};

use crate::config::{Config, NodeGroupConfig, ShapeConfig};

/// The default archive time: three days (design §3).
pub const DEFAULT_TTL_SECONDS: i64 = 3 * 24 * 3600;
/// The default priority class.
pub const DEFAULT_PRIORITY_CLASS: &str = "mid-4000";

/// A spec with its defaults applied.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedSpec {
    pub shape: ShapeConfig,
    /// The node groups the job may run in, in preference order.
    pub node_groups: Vec<String>,
    /// Nodes it may run on (empty: any node of those groups).
    pub nodes: Vec<String>,
    pub completions: i64,
    pub parallelism: i64,
    pub workers: i64,
    pub backoff_limit: i64,
    pub max_failure_retry: Option<i64>,
    pub max_job_failure_retry: i64,
    pub disable_retry_on_program_error: bool,
    pub active_deadline_seconds: Option<i64>,
    pub max_queued_duration_seconds: Option<i64>,
    pub ttl_seconds_after_finished: i64,
    pub priority: i64,
    pub can_preempt: bool,
    pub can_be_preempted: bool,
    pub shared_memory_mb: i64,
    pub log_collection: bool,
}

/// The priority number of a class name: `mid-4000` is 4000. Unknown names
/// are the default's (the contract rejects them on write).
pub fn priority_number(class: Option<&str>) -> i64 {
    class
        .and_then(|c| c.rsplit('-').next())
        .and_then(|n| n.parse::<i64>().ok())
        .filter(|n| (1000..=9000).contains(n))
        .unwrap_or(4000)
}

/// The shared-memory default in MiB for a shape's memory (configuration
/// page): 4 GiB → 2 GiB, 32 GiB → 16 GiB, 128 GiB → 32 GiB, 512 GiB → 64 GiB,
/// 1 TiB → 100 GiB; between rows the row of the largest memory not above the
/// shape's; below 4 GiB half the memory.
pub fn default_shared_memory_mb(memory_mb: i64) -> i64 {
    const TABLE: [(i64, i64); 5] = [
        (1024 * 1024, 100 * 1024),
        (512 * 1024, 64 * 1024),
        (128 * 1024, 32 * 1024),
        (32 * 1024, 16 * 1024),
        (4 * 1024, 2 * 1024),
    ];
    TABLE
        .iter()
        .find(|(memory, _)| memory_mb >= *memory)
        .map(|(_, shm)| *shm)
        .unwrap_or(memory_mb / 2)
}

impl ResolvedSpec {
    /// Applies the defaults to `spec`; errors name the field whose reference
    /// this server cannot satisfy (a shape or node group it does not have, a
    /// job that can never fit).
    pub fn resolve(spec: &JobSpec, config: &Config) -> Result<ResolvedSpec, FieldErrors> {
        let mut errors = FieldErrors::new();
        let mut push = |path: &str, message: String| errors.entry(path.to_string()).or_default().push(message);

        let shape = match spec.resource_shape.as_deref() {
            Some(name) => config.shape(name).cloned(),
            None => config.shapes.first().cloned(),
        };
        let Some(shape) = shape else {
            push(
                "spec.resource_shape",
                format!("no resource shape named '{}'", spec.resource_shape.as_deref().unwrap_or("")),
            );
            return Err(errors);
        };

        let affinity = spec.affinity.as_ref();
        let allowed: Vec<String> = affinity
            .and_then(|a| a.allowed_dedicated_node_groups.clone())
            .unwrap_or_default();
        let node_groups: Vec<String> = if allowed.is_empty() {
            config.node_groups.iter().map(|g| g.name.clone()).collect()
        } else {
            allowed.clone()
        };
        for (i, name) in allowed.iter().enumerate() {
            if config.node_group(name).is_none() {
                push(
                    &format!("spec.affinity.allowed_dedicated_node_groups[{i}]"),
                    format!("no node group named '{name}'"),
                );
            }
        }
        let nodes: Vec<String> = affinity
            .and_then(|a| a.allowed_nodes_in_node_group.clone())
            .unwrap_or_default();

        // The contract's accessors, so a `lep job create --num-workers N`
        // payload (completions = parallelism = N with intra-job
        // communication, no `workers`) runs as N workers with the
        // rendezvous environment.
        let workers = spec.workers().max(1);
        let completions = spec.completions().max(1);
        let parallelism = spec.parallelism().clamp(1, completions);
        let max_failure_retry = spec.max_failure_retry.filter(|n| *n >= 0);
        let backoff_limit = match (spec.backoff_limit, max_failure_retry) {
            (Some(limit), _) => limit.max(0),
            (None, Some(_)) => i64::MAX,
            (None, None) => 3,
        };
        let queue = spec.queue_config.as_ref();
        let resolved = ResolvedSpec {
            shared_memory_mb: spec
                .shared_memory_size
                .filter(|s| *s > 0)
                .unwrap_or_else(|| default_shared_memory_mb(shape.memory_mb)),
            shape,
            node_groups,
            nodes,
            completions,
            parallelism,
            workers,
            backoff_limit,
            max_failure_retry,
            max_job_failure_retry: spec.max_job_failure_retry.unwrap_or(0).max(0),
            disable_retry_on_program_error: spec.disable_retry_on_program_error.unwrap_or(false),
            active_deadline_seconds: spec.active_deadline_seconds.filter(|s| *s > 0),
            max_queued_duration_seconds: spec.max_queued_duration_seconds.filter(|s| *s > 0),
            ttl_seconds_after_finished: spec.ttl_seconds_after_finished.filter(|s| *s >= 0).unwrap_or(DEFAULT_TTL_SECONDS),
            priority: priority_number(queue.and_then(|q| q.priority_class.as_deref())),
            can_preempt: queue.and_then(|q| q.can_preempt).unwrap_or(false),
            can_be_preempted: queue.and_then(|q| q.can_be_preempted).unwrap_or(false),
            log_collection: spec
                .log
                .as_ref()
                .and_then(|l| l.enable_collection)
                .unwrap_or(config.log_collection_default),
        };
        if errors.is_empty() {
            resolved.check_fits(config, &mut errors);
        }
        if errors.is_empty() {
            Ok(resolved)
        } else {
            Err(errors)
        }
    }

    /// The groups (with their config) this job may use.
    pub fn groups<'a>(&'a self, config: &'a Config) -> impl Iterator<Item = &'a NodeGroupConfig> + 'a {
        self.node_groups.iter().filter_map(|name| config.node_group(name))
    }

    /// A job that could not run even on an idle cluster would wait forever:
    /// refuse it and say what is too big.
    fn check_fits(&self, config: &Config, errors: &mut FieldErrors) {
        let shape = &self.shape;
        let mut best: Option<String> = None;
        let mut node_known = self.nodes.is_empty();
        for group in self.groups(config) {
            let nodes: Vec<_> = group
                .node_list()
                .into_iter()
                .filter(|n| self.nodes.is_empty() || self.nodes.contains(&n.name))
                .collect();
            node_known |= !nodes.is_empty();
            let per_node = |n: &crate::config::NodeConfig| {
                let by_cpu = (n.cpu / shape.cpu).floor() as i64;
                let by_memory = n.memory_mb / shape.memory_mb;
                let by_gpu = if shape.gpus > 0 { n.gpus / shape.gpus } else { i64::MAX };
                by_cpu.min(by_memory).min(by_gpu)
            };
            let fits: i64 = nodes.iter().map(per_node).sum();
            if fits >= self.parallelism {
                return;
            }
            if best.is_none() {
                best = Some(match nodes.iter().map(per_node).max().unwrap_or(0) {
                    0 => format!(
                        "shape '{}' needs {} CPU, {} MiB memory and {} GPU per replica, more than any node of group '{}' has ({} CPU, {} MiB, {} GPU)",
                        shape.name, shape.cpu, shape.memory_mb, shape.gpus, group.name, group.cpu, group.memory_mb, group.gpus
                    ),
                    _ => format!(
                        "{} replicas must run at once, but group '{}' can hold at most {fits} replicas of shape '{}'",
                        self.parallelism, group.name, shape.name
                    ),
                });
            }
        }
        if !node_known {
            errors
                .entry("spec.affinity.allowed_nodes_in_node_group".into())
                .or_default()
                .push("none of these nodes is in the chosen node groups".into());
            return;
        }
        if let Some(message) = best {
            let path = if message.starts_with("shape") { "spec.resource_shape" } else { "spec.parallelism" };
            errors.entry(path.into()).or_default().push(message);
        }
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
    fn shared_memory_defaults_follow_the_table() {
        let gib = 1024;
        let cases = [
            (2 * gib, gib),
            (4 * gib, 2 * gib),
            (16 * gib, 2 * gib),
            (32 * gib, 16 * gib),
            (128 * gib, 32 * gib),
            (256 * gib, 32 * gib),
            (512 * gib, 64 * gib),
            (1024 * gib, 100 * gib),
            (2048 * gib, 100 * gib),
        ];
        for (memory, expected) in cases {
            assert_eq!(default_shared_memory_mb(memory), expected, "{memory} MiB");
        }
    }

    #[test]
    fn priorities_are_read_from_class_names() {
        let cases = [(None, 4000), (Some("low-1000"), 1000), (Some("high-9000"), 9000), (Some("weird"), 4000), (Some("x-99999"), 4000)];
        for (class, expected) in cases {
            assert_eq!(priority_number(class), expected, "{class:?}");
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
        assert_eq!(r.ttl_seconds_after_finished, DEFAULT_TTL_SECONDS);
        assert_eq!(r.shared_memory_mb, 2048);
        assert!(r.log_collection);
        assert_eq!(r.active_deadline_seconds, None);
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
        assert_eq!((r.backoff_limit, r.max_failure_retry), (i64::MAX, Some(1)));
        let spec = JobSpec { max_failure_retry: Some(1), backoff_limit: Some(0), ..JobSpec::default() };
        let r = ResolvedSpec::resolve(&spec, &config()).unwrap();
        assert_eq!((r.backoff_limit, r.max_failure_retry), (0, Some(1)));
    }

    #[test]
    fn jobs_that_can_never_fit_are_refused_on_the_field_at_fault() {
        let cases: Vec<(JobSpec, &str, &str)> = vec![
            (
                JobSpec { resource_shape: Some("cpu.large".into()), parallelism: Some(2), completions: Some(2), ..JobSpec::default() },
                "spec.parallelism",
                "2 replicas must run at once, but group 'local' can hold at most 1 replicas of shape 'cpu.large'",
            ),
            (JobSpec { resource_shape: Some("gpu.8x".into()), ..JobSpec::default() }, "spec.resource_shape", "no resource shape named 'gpu.8x'"),
            (
                JobSpec {
                    affinity: Some(Affinity { allowed_dedicated_node_groups: Some(vec!["h100".into()]), ..Affinity::default() }),
                    ..JobSpec::default()
                },
                "spec.affinity.allowed_dedicated_node_groups[0]",
                "no node group named 'h100'",
            ),
            (
                JobSpec {
                    affinity: Some(Affinity { allowed_nodes_in_node_group: Some(vec!["elsewhere".into()]), ..Affinity::default() }),
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
            queue_config: Some(QueueConfig { priority_class: Some("high-8000".into()), can_preempt: Some(true), can_be_preempted: None }),
            ..JobSpec::default()
        };
        let r = ResolvedSpec::resolve(&spec, &config()).unwrap();
        assert_eq!((r.priority, r.can_preempt, r.can_be_preempted), (8000, true, false));
    }
}
