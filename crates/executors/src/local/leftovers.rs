//! What a deleted job leaves with the container engine: its containers,
//! the podman secrets that carried its multi-line variables, the pods of
//! its multi-worker runs and its runs' networks. A supervisor removes its own on every way out;
//! these are what one killed before it could left behind.

use std::process::{Command, Output, Stdio};

use crate::container::{self, Engine};

/// Runs the engine with `args`; its output, or `None` when it cannot run.
fn engine_output(engine: &str, engine_env: &[(String, String)], args: &[&str]) -> Option<Output> {
    Command::new(engine)
        .args(args)
        .envs(engine_env.iter().cloned())
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .inspect_err(|e| tracing::warn!(engine, ?args, error = %e, "cannot run the container engine"))
        .ok()
}

/// The words of a listing, one id or name each.
fn listed(output: Option<Output>) -> Vec<String> {
    output
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Removes every container of a job, running or not, then the secrets they
/// read their variables from, the pods they shared and their networks.
pub fn remove_job_containers(engine: &str, engine_env: &[(String, String)], job_id: &str) {
    let label = container::job_label(job_id);
    let filter = format!("label={label}");
    let containers = listed(engine_output(engine, engine_env, &["ps", "-a", "-q", "--filter", &filter]));
    remove(engine, engine_env, &["rm", "-f"], &containers);
    if Engine::from_binary(engine) != Engine::Podman {
        return;
    }
    let secrets = listed(engine_output(engine, engine_env, &["secret", "ls", "--format", "{{.Name}}"]));
    let secrets: Vec<String> =
        container::secrets_of_job(&secrets.join("\n"), job_id).into_iter().map(str::to_string).collect();
    remove(engine, engine_env, &["secret", "rm"], &secrets);
    let pods = listed(engine_output(engine, engine_env, &["pod", "ps", "-q", "--filter", &filter]));
    remove(engine, engine_env, &["pod", "rm", "-f"], &pods);
    let networks = listed(engine_output(
        engine,
        engine_env,
        &["network", "ls", "-q", "--filter", &filter, "--format", "{{.Name}}"],
    ));
    remove(engine, engine_env, &["network", "rm", "-f"], &networks);
}

/// `<engine> <command> <names…>`, when there are any.
fn remove(engine: &str, engine_env: &[(String, String)], command: &[&str], names: &[String]) {
    if names.is_empty() {
        return;
    }
    let mut args: Vec<&str> = command.to_vec();
    args.extend(names.iter().map(String::as_str));
    engine_output(engine, engine_env, &args);
}
