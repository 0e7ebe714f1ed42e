//! The effective values of a job (its spec with every default applied) that
//! the mapping renders, taken from the scheduler's `ResolvedSpec` so the
//! defaults exist in one place.

use jobdeck_api::defaults::Priority;
use jobdeck_api::JobSpec;

use jobdeck_core::spec::ResolvedSpec;

/// A job's values with defaults applied.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecValues {
    pub workers: i64,
    pub completions: i64,
    /// The completion indexes a rerun of failed indexes runs
    /// (`spec.completion_indexes`); `None`: every index.
    pub indexes: Option<Vec<i64>>,
    pub parallelism: i64,
    /// Failed attempts the whole run tolerates; `None` leaves Kubernetes'
    /// default, which with a per-index limit means "no overall limit".
    pub backoff_limit: Option<i64>,
    /// Failed attempts one completion index tolerates (`backoffLimitPerIndex`).
    pub max_failure_retry: Option<i64>,
    pub active_deadline_seconds: Option<i64>,
    /// The pods' `terminationGracePeriodSeconds`; `None`: Kubernetes' 30.
    pub termination_grace_period_seconds: Option<i64>,
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
    /// The values of a spec the scheduler resolved (its defaults applied by
    /// `ResolvedSpec::resolve`).
    pub fn from_resolved(resolved: &ResolvedSpec, spec: &JobSpec) -> Self {
        SpecValues {
            workers: resolved.workers,
            completions: resolved.completions,
            indexes: resolved.chosen_indexes.clone(),
            parallelism: resolved.parallelism,
            backoff_limit: Self::backoff_limit_of(spec, resolved.backoff_limit),
            max_failure_retry: resolved.max_failure_retry,
            active_deadline_seconds: resolved.active_deadline_seconds,
            termination_grace_period_seconds: resolved.termination_grace_period_seconds,
            ttl_seconds_after_finished: Some(resolved.ttl_seconds_after_finished),
            // The class as the user named it (the contract checks the name);
            // the resolved number otherwise.
            priority: spec
                .queue_config
                .as_ref()
                .and_then(|q| q.priority_class.clone())
                .unwrap_or_else(|| priority_class_of(resolved.priority)),
            can_preempt: resolved.can_preempt,
            can_be_preempted: resolved.can_be_preempted,
            shared_memory_mib: resolved.shared_memory_mb,
            disable_retry_on_program_error: resolved.disable_retry_on_program_error,
            nodes: resolved.nodes.clone(),
        }
    }

    /// A resolved backoff limit as Kubernetes takes it. A job that sets only
    /// a per-index limit has no overall limit (`JobSpec::backoff_limit`),
    /// which is Kubernetes' own default once `backoffLimitPerIndex` is set, so
    /// `backoffLimit` is left out; every other job states its limit.
    pub fn backoff_limit_of(spec: &JobSpec, limit: i64) -> Option<i64> {
        (spec.backoff_limit.is_some() || spec.max_failure_retry().is_none()).then_some(limit)
    }
}

/// The class name of a resolved priority number (`4000` is `mid-4000`).
pub fn priority_class_of(priority: i64) -> String {
    u8::try_from(priority / 1000).ok().and_then(Priority::new).unwrap_or_default().class().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use jobdeck_api::defaults::PRIORITY_CLASSES;

    #[test]
    fn priority_numbers_name_their_class() {
        for class in PRIORITY_CLASSES {
            let number: i64 = class.rsplit('-').next().unwrap().parse().unwrap();
            assert_eq!(priority_class_of(number), class);
        }
    }

    #[test]
    fn an_unlimited_backoff_is_left_to_kubernetes() {
        let spec =
            |backoff_limit, max_failure_retry| JobSpec { backoff_limit, max_failure_retry, ..JobSpec::default() };
        let cases = [
            (spec(None, None), Some(3)),
            (spec(Some(0), None), Some(0)),
            (spec(None, Some(1)), None),
            (spec(Some(5), Some(1)), Some(5)),
            // An explicit limit as large as Kubernetes allows is still stated:
            // without a per-index limit Kubernetes' own default would be 6.
            (spec(Some(i64::from(i32::MAX)), None), Some(i64::from(i32::MAX))),
        ];
        for (spec, expected) in cases {
            assert_eq!(SpecValues::backoff_limit_of(&spec, spec.backoff_limit()), expected, "{spec:?}");
        }
    }
}
