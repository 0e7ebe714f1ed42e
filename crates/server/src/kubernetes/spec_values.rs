//! The effective values of a job (its spec with every default applied) that
//! the mapping renders. The executor fills them from what the scheduler
//! resolved; `jobdeck kube render` from the same defaults.

use jobdeck_api::JobSpec;

/// Lepton's nine priority classes, lowest first.
pub const PRIORITY_CLASSES: [&str; 9] = [
    "low-1000", "low-2000", "low-3000", "mid-4000", "mid-5000", "mid-6000", "high-7000", "high-8000", "high-9000",
];
/// Medium (4), the configuration page's default.
pub const DEFAULT_PRIORITY_CLASS: &str = "mid-4000";

/// A job's values with defaults applied.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecValues {
    pub workers: i64,
    pub completions: i64,
    pub parallelism: i64,
    /// Failed attempts the whole run tolerates; `None` leaves Kubernetes'
    /// default, which with a per-index limit means "no overall limit".
    pub backoff_limit: Option<i64>,
    /// Failed attempts one completion index tolerates (`backoffLimitPerIndex`).
    pub max_failure_retry: Option<i64>,
    pub active_deadline_seconds: Option<i64>,
    pub ttl_seconds_after_finished: Option<i64>,
    /// A class name such as `mid-4000`.
    pub priority: String,
    pub can_preempt: bool,
    pub can_be_preempted: bool,
    /// The `/dev/shm` size in MiB; 0 means none.
    pub shared_memory_mib: i64,
    pub disable_retry_on_program_error: bool,
    /// Nodes the job may run on; empty means any node of its group.
    pub nodes: Vec<String>,
}

impl SpecValues {
    /// The values of a spec with the design's defaults: workers 1,
    /// completions 1, parallelism 1 (both = workers when workers > 1),
    /// backoff limit 3, priority `mid-4000`, no preemption either way, shared
    /// memory from the shape's memory by the configuration page's table.
    pub fn from_spec(spec: &JobSpec, shape_memory_mib: i64) -> Self {
        let workers = spec.workers.unwrap_or(1).max(1);
        let (completions, parallelism) = if workers > 1 {
            (workers, workers)
        } else {
            (spec.completions.unwrap_or(1), spec.parallelism.unwrap_or(1))
        };
        let queue = spec.queue_config.clone().unwrap_or_default();
        SpecValues {
            workers,
            completions,
            parallelism,
            backoff_limit: Some(spec.backoff_limit.unwrap_or(3)),
            max_failure_retry: spec.max_failure_retry,
            active_deadline_seconds: spec.active_deadline_seconds,
            ttl_seconds_after_finished: spec.ttl_seconds_after_finished,
            priority: queue.priority_class.unwrap_or_else(|| DEFAULT_PRIORITY_CLASS.into()),
            can_preempt: queue.can_preempt.unwrap_or(false),
            can_be_preempted: queue.can_be_preempted.unwrap_or(false),
            shared_memory_mib: spec
                .shared_memory_size
                .unwrap_or_else(|| shared_memory_default_mib(shape_memory_mib)),
            disable_retry_on_program_error: spec.disable_retry_on_program_error.unwrap_or(false),
            nodes: spec
                .affinity
                .as_ref()
                .and_then(|a| a.allowed_nodes_in_node_group.clone())
                .unwrap_or_default(),
        }
    }
}

/// The configuration page's shared-memory table: the row of the largest
/// memory not above the shape's; below 4 GiB, half the memory.
fn shared_memory_default_mib(memory_mib: i64) -> i64 {
    const GIB: i64 = 1024;
    const TABLE: [(i64, i64); 5] = [
        (1024 * GIB, 100 * GIB),
        (512 * GIB, 64 * GIB),
        (128 * GIB, 32 * GIB),
        (32 * GIB, 16 * GIB),
        (4 * GIB, 2 * GIB),
    ];
    TABLE
        .iter()
        .find(|(memory, _)| memory_mib >= *memory)
        .map(|(_, shm)| *shm)
        .unwrap_or(memory_mib / 2)
}
