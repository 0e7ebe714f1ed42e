//! The rules a job must follow, run identically by the console before it
//! submits and by the server on every write.

use crate::{FieldErrors, LeptonJob};

/// The longest job name the managed-cluster page allows.
pub const JOB_NAME_MAX_LEN: usize = 20;

/// Checks a job name: starts with a lowercase letter; lowercase letters,
/// digits and hyphens only; ends with a letter or digit; at most 20
/// characters. Returns the first broken rule as a sentence.
pub fn check_job_name(name: &str) -> Result<(), String> {
    let Some(first) = name.chars().next() else {
        return Err("must not be empty".into());
    };
    if !first.is_ascii_lowercase() {
        return Err("must start with a lowercase letter".into());
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Err(format!(
            "may contain only lowercase letters, digits and hyphens, not '{bad}'"
        ));
    }
    if name.ends_with('-') {
        return Err("must end with a lowercase letter or a digit".into());
    }
    let len = name.chars().count();
    if len > JOB_NAME_MAX_LEN {
        return Err(format!(
            "must be at most {JOB_NAME_MAX_LEN} characters (it has {len})"
        ));
    }
    Ok(())
}

/// Every problem with `job`, as messages per field path. Empty means valid.
pub fn validate_job(job: &LeptonJob) -> FieldErrors {
    let mut errors = FieldErrors::new();
    let name = job.metadata.name.as_deref().unwrap_or("");
    if let Err(message) = check_job_name(name) {
        errors.entry("metadata.name".into()).or_default().push(message);
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_name_rules() {
        let cases: &[(&str, Result<(), &str>)] = &[
            ("a", Ok(())),
            ("train-01", Ok(())),
            ("abcdefghijklmnopqrst", Ok(())),
            ("", Err("must not be empty")),
            ("1abc", Err("must start with a lowercase letter")),
            ("-abc", Err("must start with a lowercase letter")),
            ("Abc", Err("must start with a lowercase letter")),
            ("aBc", Err("may contain only lowercase letters, digits and hyphens, not 'B'")),
            ("a_b", Err("may contain only lowercase letters, digits and hyphens, not '_'")),
            ("abc-", Err("must end with a lowercase letter or a digit")),
            ("abcdefghijklmnopqrstu", Err("must be at most 20 characters (it has 21)")),
        ];
        for (name, expected) in cases {
            assert_eq!(
                check_job_name(name),
                expected.map_err(String::from),
                "name {name:?}"
            );
        }
    }
}

/// What the server knows that the rules of a job depend on: the resource
/// shapes, node groups and secrets that exist. The console fills it from the
/// API; the server from its configuration and store.
#[derive(Debug, Clone, Default)]
pub struct ValidationContext {
    pub shapes: Vec<crate::Shape>,
    pub node_groups: Vec<crate::NodeGroup>,
    /// Names of the secrets the submitting user may reference.
    pub secret_names: Vec<String>,
}

/// Every problem with `job`, including the rules that need server data: the
/// shape exists, the node groups exist, the nodes belong to them and the
/// referenced secrets exist.
pub fn validate_job_in(job: &LeptonJob, context: &ValidationContext) -> FieldErrors {
    let mut errors = validate_job(job);
    let mut push = |path: &str, message: String| {
        errors.entry(path.to_string()).or_default().push(message);
    };
    if let Some(shape) = job.spec.resource_shape.as_deref() {
        if !context.shapes.iter().any(|s| s.metadata.id.as_deref() == Some(shape)) {
            push("spec.resource_shape", format!("no resource shape named '{shape}'"));
        }
    }
    let affinity = job.spec.affinity.as_ref();
    let groups = affinity.and_then(|a| a.allowed_dedicated_node_groups.as_deref()).unwrap_or(&[]);
    for (i, group) in groups.iter().enumerate() {
        if !context.node_groups.iter().any(|g| g.metadata.id.as_deref() == Some(group.as_str())) {
            push(
                &format!("spec.affinity.allowed_dedicated_node_groups[{i}]"),
                format!("no node group named '{group}'"),
            );
        }
    }
    let nodes = affinity.and_then(|a| a.allowed_nodes_in_node_group.as_deref()).unwrap_or(&[]);
    for (i, node) in nodes.iter().enumerate() {
        let belongs = context
            .node_groups
            .iter()
            .filter(|g| groups.is_empty() || groups.iter().any(|n| g.metadata.id.as_deref() == Some(n)))
            .any(|g| g.spec.nodes.iter().any(|n| &n.name == node));
        if !belongs {
            push(
                &format!("spec.affinity.allowed_nodes_in_node_group[{i}]"),
                format!("node '{node}' is not in the chosen node groups"),
            );
        }
    }
    for (i, env) in job.spec.envs.iter().flatten().enumerate() {
        if let Some(secret) = env.value_from.as_ref().and_then(|v| v.secret_name_ref.as_deref()) {
            if !context.secret_names.iter().any(|s| s == secret) {
                push(&format!("spec.envs[{i}].value_from.secret_name_ref"), format!("no secret named '{secret}'"));
            }
        }
    }
    errors
}
