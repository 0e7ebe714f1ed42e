//! The form's job as other tools take it: the `lep job create` command line,
//! the JSON spec, and a draft link.

use jobdeck_api::{LeptonJob, Visibility};

use super::form::shell_quote;

/// The `lep job create` command that creates `job` (without the registry
/// password, which lep has no flag for). What lep has no flag for is named
/// in a comment, pointing to the JSON spec.
pub fn lep_command(job: &LeptonJob) -> String {
    let spec = &job.spec;
    let container = &spec.container;
    let mut args: Vec<String> = vec!["lep job create".into()];
    let mut flag = |name: &str, value: &str| args.push(format!("--{name} {}", shell_quote(value)));
    let mut missing: Vec<&str> = Vec::new();

    flag("name", job.metadata.name.as_deref().unwrap_or(""));
    if let Some(shape) = &spec.resource_shape {
        flag("resource-shape", shape);
    }
    for group in spec.node_groups() {
        flag("node-group", group);
    }
    for node in spec.nodes() {
        flag("node-id", node);
    }
    let priority = spec.priority();
    if spec.queue_config.as_ref().is_some_and(|q| q.priority_class.is_some()) {
        flag("queue-priority", &priority.short_class());
    }
    let mut switches = Vec::new();
    if spec.can_preempt() {
        switches.push("--can-preempt");
    }
    if spec.can_be_preempted() {
        switches.push("--can-be-preempted");
    }
    if spec.workers() > 1 {
        flag("num-workers", &spec.workers().to_string());
    } else if spec.completions.is_some() || spec.parallelism.is_some() {
        missing.push("completions and parallelism");
    }
    if spec.backoff_limit.is_some() {
        missing.push("backoff limit");
    }
    if spec.active_deadline_seconds.is_some() {
        missing.push("active deadline seconds");
    }
    if let Some(image) = container.image_reference() {
        flag("container-image", &image);
    }
    if container.registry_username.is_some() {
        missing.push("registry username and password");
    }
    match container.command() {
        [] => {}
        [shell, c, text] if c == "-c" && (shell.ends_with("/bash") || shell.ends_with("/sh")) => {
            flag("command", text);
        }
        _ => missing.push("a command given as an argument list"),
    }
    if !container.args().is_empty() {
        missing.push("arguments");
    }
    if container.working_dir.is_some() {
        missing.push("working directory");
    }
    for port in container.ports() {
        let protocol = port.protocol.as_deref().unwrap_or("TCP").to_ascii_lowercase();
        flag("container-port", &format!("{}:{protocol}", port.container_port));
    }
    if let Some(on) = spec.log.as_ref().and_then(|l| l.enable_collection) {
        flag("log-collection", if on { "true" } else { "false" });
    }
    for env in spec.envs() {
        match env.value_from.as_ref().and_then(|f| f.secret_name_ref.as_deref()) {
            Some(secret) => flag("secret", &format!("{}={secret}", env.name)),
            None => flag("env", &format!("{}={}", env.name, env.value.as_deref().unwrap_or(""))),
        }
    }
    for mount in spec.mounts() {
        flag("mount", &format!("{}:{}:{}", mount.path.as_deref().unwrap_or("/"), mount.mount_path, mount.from));
    }
    for secret in spec.image_pull_secrets() {
        flag("image-pull-secrets", secret);
    }
    if let Some(size) = spec.shared_memory_size {
        flag("shared-memory-size", &size.to_string());
    }
    if let Some(n) = spec.max_failure_retry {
        flag("max-failure-retry", &n.to_string());
    }
    if let Some(n) = spec.max_job_failure_retry {
        flag("max-job-failure-retry", &n.to_string());
    }
    if spec.disable_retry_on_program_error() {
        missing.push("disable retry when program error occurs");
    }
    // lep sends its own default archive time when the flag is left out.
    flag("ttl-seconds-after-finished", &spec.ttl_seconds_after_finished().to_string());
    if let Some(visibility) = job.metadata.visibility {
        flag("visibility", if visibility == Visibility::Private { "private" } else { "public" });
    }
    if job.metadata.labels.is_some() {
        missing.push("labels");
    }
    if job.metadata.annotations.is_some() {
        missing.push("annotations");
    }
    args.extend(switches.into_iter().map(String::from));
    let mut out = args.join(" \\\n  ");
    if !missing.is_empty() {
        out.push_str(&format!(
            "\n# lep has no flags for: {}. Create the job from the JSON spec instead (POST it to /api/v2/jobs).",
            missing.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn the_lep_command_has_a_flag_per_value_and_names_what_it_cannot_say() {
        let job: LeptonJob = serde_json::from_str(
            r#"{"metadata":{"name":"train","visibility":"private"},
                "spec":{"resource_shape":"cpu.small","container":{"image":"busybox","image_tag":"1.36",
                        "command":["/bin/sh","-c","echo 'hi'"],"ports":[{"container_port":8080,"protocol":"UDP"}]},
                        "affinity":{"allowed_dedicated_node_groups":["local"]},
                        "queue_config":{"priority_class":"high-7000","can_preempt":true},
                        "envs":[{"name":"A","value":"b c"},{"name":"T","value_from":{"secret_name_ref":"hf"}}],
                        "mounts":[{"from":"node-local","path":"/d","mount_path":"/mnt/d"}],
                        "backoff_limit":2}}"#,
        )
        .unwrap();
        let command = lep_command(&job);
        for expected in [
            "lep job create \\\n  --name train",
            "--resource-shape cpu.small",
            "--node-group local",
            "--queue-priority high-7",
            "--container-image busybox:1.36",
            r"--command 'echo '\''hi'\'''",
            "--container-port 8080:udp",
            "--env 'A=b c'",
            "--secret T=hf",
            "--mount /d:/mnt/d:node-local",
            "--ttl-seconds-after-finished 259200",
            "--visibility private",
            "--can-preempt",
            "# lep has no flags for: backoff limit.",
        ] {
            assert!(command.contains(expected), "{expected:?} missing from:\n{command}");
        }
    }
}
