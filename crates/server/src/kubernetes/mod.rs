//! The kubernetes executor (design §5): every job is a `batch/v1` Job in
//! Indexed completion mode, its replicas are the Job's pods.
//!
//! * [`mapping`] renders a job as Kubernetes objects (pure; `jobdeck kube
//!   render` prints its output);
//! * [`status`] translates pods, Jobs and events back into replicas,
//!   readiness issues, events and failure classes (pure);
//! * [`executor`] talks to the API server with kube-rs: creates, suspends
//!   and deletes Jobs, watches Jobs, pods and events ([`watch`]) and copies
//!   pod logs into the log store ([`pod_logs`]);
//! * [`settings`] is the `[executor.kubernetes]` table of the config file.

pub mod executor;
pub mod mapping;
pub mod names;
pub mod network_policy;
pub mod pod_logs;
pub mod pod_metrics;
pub mod settings;
pub mod spec_values;
pub mod status;
pub mod watch;

pub use executor::{ConnectError, KubernetesExecutor};
pub use mapping::{render, KubeObjects, RenderInput, SecretValues};
pub use settings::KubernetesSettings;

use std::collections::BTreeMap;

use jobdeck_api::FieldErrors;

use crate::config::Config;
use crate::spec::{read_job_file, JobFileError};

/// `jobdeck kube render`: the objects a job would create, as YAML. The job
/// is checked as the server checks it; it is placed in `node_group` or its
/// first allowed group, and its secret values are redacted (a render never
/// sees them). Errors name the fields at fault; the command's own body, so
/// they are `anyhow`'s, for a person.
pub fn render_job_file(
    json: &str,
    config: &Config,
    node_group: Option<&str>,
    namespace: Option<&str>,
) -> anyhow::Result<String> {
    let (job, resolved) = read_job_file(json, config).map_err(|e| match e {
        JobFileError::Syntax(message) => anyhow::anyhow!("the job file is not valid JSON: {message}"),
        JobFileError::Fields(errors) => anyhow::anyhow!(describe(&errors)),
    })?;
    let settings = KubernetesSettings::from_table(&config.executor.kubernetes)?;
    let values = spec_values::SpecValues::from_resolved(&resolved, &job.spec);
    let group_name = node_group.map(String::from).or_else(|| resolved.node_groups.first().cloned()).unwrap_or_default();
    let Some(group) = config.node_group(&group_name) else {
        anyhow::bail!("--node-group: no node group named '{group_name}'");
    };
    if !resolved.node_groups.contains(&group.name) {
        anyhow::bail!("--node-group: the job may not run in node group '{group_name}'");
    }
    let target = mapping::NodeGroupTarget { name: group.name.clone(), node_labels: group.node_selector.clone() };
    let shape = mapping::ShapeResources {
        cpu: resolved.shape.cpu,
        memory_mib: resolved.shape.memory_mb,
        gpus: resolved.shape.gpus,
        accelerator_type: resolved.shape.accelerator_type.clone(),
    };
    let id = job.id().to_string();
    let name = job.metadata.name.clone().unwrap_or_else(|| id.clone());
    let empty = BTreeMap::new();
    let namespace =
        namespace.map(String::from).or_else(|| settings.namespace.clone()).unwrap_or_else(|| "default".into());
    if let Err(e) = names::check_dns_label(&namespace) {
        anyhow::bail!("--namespace: '{namespace}' {e}");
    }
    let objects = render(
        &RenderInput {
            job_id: &id,
            job_name: &name,
            run: 0,
            labels: job.metadata.labels.as_ref().unwrap_or(&empty),
            annotations: job.metadata.annotations.as_ref().unwrap_or(&empty),
            created_by: job.metadata.created_by.as_deref(),
            spec: &job.spec,
            values: &values,
            shape: &shape,
            node_group: Some(&target),
            namespace: &namespace,
            secrets: SecretValues::Redacted,
            pull_credentials: &[],
        },
        &settings,
    )
    .map_err(|e| anyhow::anyhow!(describe(&e)))?;
    Ok(objects.to_yaml()?)
}

/// Field errors as lines, `path: message`.
fn describe(errors: &FieldErrors) -> String {
    let lines: Vec<String> =
        errors.iter().flat_map(|(path, messages)| messages.iter().map(move |m| format!("  {path}: {m}"))).collect();
    format!("the job cannot run on Kubernetes:\n{}", lines.join("\n"))
}
