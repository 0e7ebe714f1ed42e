//! `jobdeck slurm render` and `jobdeck kube render`: what a job file would
//! submit to Slurm or create on Kubernetes, printed without running it. The
//! commands' own bodies, so their errors are `anyhow`'s, for a person.

use std::collections::BTreeMap;

use jobdeck_api::FieldErrors;
use jobdeck_core::config::Config;
use jobdeck_core::executor::{JobLaunch, Placement};
use jobdeck_core::spec::{read_job_file, JobFileError};
use jobdeck_executors::kubernetes::mapping::{NodeGroupTarget, ShapeResources};
use jobdeck_executors::kubernetes::names::check_dns_label;
use jobdeck_executors::kubernetes::spec_values::SpecValues;
use jobdeck_executors::kubernetes::{render, KubernetesSettings, RenderInput, SecretValues};
use jobdeck_executors::slurm::{script, SlurmSettings};

/// What `jobdeck slurm render` prints for a job file: the `sbatch` command
/// line and the batch script of the run's first submission, with every
/// exported value that comes from a secret shown as `<secret NAME>`. The
/// command's own body, so its errors are `anyhow`'s, for a person.
pub fn slurm_job_file(json: &str, config: &Config, node_group: Option<&str>) -> anyhow::Result<String> {
    let (job, resolved) = read_job_file(json, config).map_err(|e| match e {
        JobFileError::Syntax(message) => anyhow::anyhow!("the job file is not valid JSON: {message}"),
        JobFileError::Fields(errors) => anyhow::anyhow!(describe_for_slurm(&errors)),
    })?;
    let settings = SlurmSettings::from_table(&config.executor.slurm)?;
    let group = node_group.map(String::from).or_else(|| resolved.node_groups.first().cloned()).unwrap_or_default();
    if !resolved.node_groups.contains(&group) {
        anyhow::bail!("--node-group: the job may not run in node group '{group}'");
    }
    let id = job.id().to_string();
    let env = job
        .spec
        .envs
        .iter()
        .flatten()
        .map(|var| {
            let value = match var.value_from.as_ref().and_then(|v| v.secret_name_ref.as_deref()) {
                Some(secret) => format!("<secret {secret}>"),
                None => var.value.clone().unwrap_or_default(),
            };
            (var.name.clone(), value)
        })
        .collect();
    let name = job.metadata.name.clone().unwrap_or_else(|| id.clone());
    let placement = Placement { node_group: group, slots: Vec::new() };
    let launch = JobLaunch {
        env,
        master_port: settings.master_port,
        ..JobLaunch::new(&id, &name, 0, &job.spec, &resolved, placement)
    };
    let log_dir = settings.log_dir.clone().unwrap_or_else(|| config.data_dir.join("slurm"));
    let job_dir = log_dir.join(&id);
    let indexes: Vec<i64> = if resolved.workers > 1 { vec![0] } else { (0..resolved.completions).collect() };
    let submission = script::render(&script::SubmissionInput {
        launch: &launch,
        settings: &settings,
        job_dir: &job_dir,
        indexes: &indexes,
        submission: 0,
        begin_after_seconds: None,
        base_env: &[],
    })
    .map_err(anyhow::Error::msg)?;
    let mut out = String::new();
    out.push_str(&format!(
        "# The job's variables, in {} (0600), read by the task's shell:\n",
        script::env_file(&job_dir, 0, 0).display()
    ));
    for line in submission.env_file.lines() {
        out.push_str(&format!("#   {line}\n"));
    }
    out.push_str(&format!(
        "sbatch --parsable --chdir={} \\\n  {} <<'JOBDECK_SCRIPT'\n",
        script::shell_quote(&job_dir.to_string_lossy()),
        submission.options.iter().map(|o| script::shell_quote(o)).collect::<Vec<_>>().join(" \\\n  ")
    ));
    out.push_str(&submission.script);
    out.push_str("JOBDECK_SCRIPT\n");
    Ok(out)
}

fn describe_for_slurm(errors: &FieldErrors) -> String {
    errors.iter().map(|(path, messages)| format!("{path}: {}", messages.join("; "))).collect::<Vec<_>>().join("\n")
}

/// `jobdeck kube render`: the objects a job would create, as YAML. The job
/// is checked as the server checks it; it is placed in `node_group` or its
/// first allowed group, and its secret values are redacted (a render never
/// sees them). Errors name the fields at fault; the command's own body, so
/// they are `anyhow`'s, for a person.
pub fn kube_job_file(
    json: &str,
    config: &Config,
    node_group: Option<&str>,
    namespace: Option<&str>,
) -> anyhow::Result<String> {
    let (job, resolved) = read_job_file(json, config).map_err(|e| match e {
        JobFileError::Syntax(message) => anyhow::anyhow!("the job file is not valid JSON: {message}"),
        JobFileError::Fields(errors) => anyhow::anyhow!(describe_for_kubernetes(&errors)),
    })?;
    let settings = KubernetesSettings::from_table(&config.executor.kubernetes)?;
    let values = SpecValues::from_resolved(&resolved, &job.spec);
    let group_name = node_group.map(String::from).or_else(|| resolved.node_groups.first().cloned()).unwrap_or_default();
    let Some(group) = config.node_group(&group_name) else {
        anyhow::bail!("--node-group: no node group named '{group_name}'");
    };
    if !resolved.node_groups.contains(&group.name) {
        anyhow::bail!("--node-group: the job may not run in node group '{group_name}'");
    }
    let target = NodeGroupTarget { name: group.name.clone(), node_labels: group.node_selector.clone() };
    let shape = ShapeResources {
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
    if let Err(e) = check_dns_label(&namespace) {
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
    .map_err(|e| anyhow::anyhow!(describe_for_kubernetes(&e)))?;
    Ok(objects.to_yaml()?)
}

/// Field errors as lines, `path: message`.
fn describe_for_kubernetes(errors: &FieldErrors) -> String {
    let lines: Vec<String> =
        errors.iter().flat_map(|(path, messages)| messages.iter().map(move |m| format!("  {path}: {m}"))).collect();
    format!("the job cannot run on Kubernetes:\n{}", lines.join("\n"))
}
