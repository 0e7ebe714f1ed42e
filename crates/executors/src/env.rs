//! The environment every replica gets (design §3), shared by all executors.

use jobdeck_core::executor::JobLaunch;

/// Names the platform sets; the contract rejects them in a job's own `envs`.
pub const JOB_COMPLETION_INDEX: &str = "JOB_COMPLETION_INDEX";
pub const JOB_COMPLETIONS: &str = "JOB_COMPLETIONS";

/// The variables of one replica, in this order: the job's own (secrets
/// resolved), then the platform's, which therefore win on a clash.
///
/// `gpu_ids` are the GPUs of the replica's slot; an empty list on a GPU-less
/// replica hides every GPU (`CUDA_VISIBLE_DEVICES=""`) so a process cannot
/// use a device it was not given.
pub fn replica_env(launch: &JobLaunch, completion_index: i64, gpu_ids: &[u32]) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = launch.env.clone();
    let mut set = |name: &str, value: String| {
        env.retain(|(n, _)| n != name);
        env.push((name.to_string(), value));
    };
    set(JOB_COMPLETION_INDEX, completion_index.to_string());
    set(JOB_COMPLETIONS, launch.resolved.completions.to_string());
    set("LEPTON_JOB_NAME", launch.job_name.clone());
    set("LEPTON_RESOURCE_ACCELERATOR_TYPE", launch.resolved.shape.accelerator_type.clone().unwrap_or_default());
    set("LEPTON_RESOURCE_ACCELERATOR_NUM", launch.resolved.shape.gpus.to_string());
    set("LEPTON_JOB_WORKER_INDEX", completion_index.to_string());
    set("LEPTON_JOB_TOTAL_WORKERS", launch.resolved.workers.max(1).to_string());
    if launch.resolved.workers > 1 {
        set("MASTER_ADDR", "127.0.0.1".into());
        set("MASTER_PORT", launch.master_port.to_string());
        set("WORLD_SIZE", launch.resolved.workers.to_string());
        set("NODE_RANK", completion_index.to_string());
    }
    let devices = gpu_ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    set("CUDA_VISIBLE_DEVICES", devices.clone());
    set("NVIDIA_VISIBLE_DEVICES", if devices.is_empty() { "void".into() } else { devices });
    env
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use jobdeck_api::JobSpec;
    use jobdeck_core::config::ShapeConfig;
    use jobdeck_core::executor::{Placement, Slot};
    use jobdeck_core::spec::ResolvedSpec;

    pub fn launch(workers: i64) -> JobLaunch {
        JobLaunch {
            job_id: "train-abcde".into(),
            job_name: "train".into(),
            run: 0,
            spec: JobSpec::default(),
            resolved: ResolvedSpec {
                shape: ShapeConfig {
                    name: "gpu.1x".into(),
                    cpu: 4.0,
                    memory_mb: 8192,
                    gpus: 1,
                    accelerator_type: Some("NVIDIA-A10G".into()),
                    accelerator_memory_mb: None,
                    compute_capability: None,
                    ephemeral_storage_gb: None,
                    description: None,
                },
                node_groups: vec!["local".into()],
                nodes: Vec::new(),
                completions: workers.max(3),
                chosen_indexes: None,
                parallelism: workers.max(1),
                log_cap_per_replica: None,
                workers,
                backoff_limit: 3,
                max_failure_retry: None,
                max_job_failure_retry: 0,
                retry_window_seconds: None,
                disable_retry_on_program_error: false,
                active_deadline_seconds: None,
                max_queued_duration_seconds: None,
                termination_grace_period_seconds: None,
                ttl_seconds_after_finished: 0,
                priority: 4000,
                can_preempt: false,
                can_be_preempted: false,
                shared_memory_mb: 2048,
                log_collection: true,
            },
            placement: Placement {
                node_group: "local".into(),
                slots: vec![Slot { node: "n1".into(), gpu_ids: vec![0] }],
            },
            env: vec![("MY_VAR".into(), "1".into()), ("JOB_COMPLETION_INDEX".into(), "spoofed".into())],
            first_attempt: 0,
            master_port: 29500,
            pull_credentials: Vec::new(),
        }
    }

    fn get<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
        env.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    #[test]
    fn every_replica_gets_the_platform_variables() {
        let env = replica_env(&launch(1), 2, &[1, 3]);
        let cases = [
            ("MY_VAR", Some("1")),
            ("JOB_COMPLETION_INDEX", Some("2")),
            ("JOB_COMPLETIONS", Some("3")),
            ("LEPTON_JOB_NAME", Some("train")),
            ("LEPTON_RESOURCE_ACCELERATOR_TYPE", Some("NVIDIA-A10G")),
            ("LEPTON_JOB_WORKER_INDEX", Some("2")),
            ("LEPTON_JOB_TOTAL_WORKERS", Some("1")),
            ("CUDA_VISIBLE_DEVICES", Some("1,3")),
            ("MASTER_ADDR", None),
            ("WORLD_SIZE", None),
        ];
        for (name, expected) in cases {
            assert_eq!(get(&env, name), expected, "{name}");
        }
        assert_eq!(env.iter().filter(|(n, _)| n == "JOB_COMPLETION_INDEX").count(), 1);
    }

    #[test]
    fn multi_worker_replicas_get_the_rendezvous_variables() {
        let env = replica_env(&launch(4), 1, &[]);
        let cases = [
            ("MASTER_ADDR", "127.0.0.1"),
            ("MASTER_PORT", "29500"),
            ("WORLD_SIZE", "4"),
            ("NODE_RANK", "1"),
            ("LEPTON_JOB_TOTAL_WORKERS", "4"),
            ("CUDA_VISIBLE_DEVICES", ""),
        ];
        for (name, expected) in cases {
            assert_eq!(get(&env, name), Some(expected), "{name}");
        }
    }
}
