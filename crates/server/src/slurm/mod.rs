//! The Slurm executor (docs/slurm.md): jobs run as Slurm job arrays
//! submitted with `sbatch`, read back with `scontrol`, their output copied
//! into the log store.
//!
//! * `settings.rs` — `[executor.slurm]`;
//! * `script.rs` — one submission as data: options, batch script, exported
//!   variables (pure; `jobdeck slurm render` prints it);
//! * `cli.rs` — the Slurm tools: running them, parsing `scontrol show job`;
//! * `executor.rs` — the controller of each run.

pub mod cli;
pub mod executor;
mod output;
pub mod script;
pub mod settings;
mod states;

pub use executor::SlurmExecutor;
pub use settings::SlurmSettings;

use crate::config::Config;
use crate::spec::{read_job_file, JobFileError};

/// What `jobdeck slurm render` prints for a job file: the `sbatch` command
/// line and the batch script of the run's first submission, with every
/// exported value that comes from a secret shown as `<secret NAME>`. The
/// command's own body, so its errors are `anyhow`'s, for a person.
pub fn render_job_file(json: &str, config: &Config, node_group: Option<&str>) -> anyhow::Result<String> {
    let (job, resolved) = read_job_file(json, config).map_err(|e| match e {
        JobFileError::Syntax(message) => anyhow::anyhow!("the job file is not valid JSON: {message}"),
        JobFileError::Fields(errors) => anyhow::anyhow!(describe(&errors)),
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
    let placement = crate::executor::Placement { node_group: group, slots: Vec::new() };
    let launch = crate::executor::JobLaunch {
        env,
        master_port: settings.master_port,
        ..crate::executor::JobLaunch::new(&id, &name, 0, &job.spec, &resolved, placement)
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

fn describe(errors: &jobdeck_api::FieldErrors) -> String {
    errors.iter().map(|(path, messages)| format!("{path}: {}", messages.join("; "))).collect::<Vec<_>>().join("\n")
}
