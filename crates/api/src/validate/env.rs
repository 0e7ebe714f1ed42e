//! Environment variables.

use super::*;

/// An environment variable name's form as a regular expression, for
/// schemas: what [`check_env_name`] accepts, apart from the names and the
/// prefix Jobdeck reserves.
pub const ENV_NAME_PATTERN: &str = "^[A-Za-z_][A-Za-z0-9_]*$";

/// Checks an environment variable name: a C identifier (a letter or `_`, then
/// letters, digits and `_`) that Jobdeck does not set itself.
pub fn check_env_name(name: &str) -> Result<(), String> {
    let Some(first) = name.chars().next() else {
        return Err("must not be empty".into());
    };
    if !(first.is_ascii_alphabetic() || first == '_') {
        return Err("must start with a letter or '_'".into());
    }
    if let Some(bad) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '_')) {
        return Err(format!("may contain only letters, digits and '_', not {}", quoted(bad)));
    }
    if RESERVED_ENV_NAMES.contains(&name) {
        return Err(format!("'{name}' is reserved: Jobdeck sets it"));
    }
    if name.starts_with(RESERVED_ENV_PREFIX) {
        return Err(format!(
            "must not start with '{RESERVED_ENV_PREFIX}': that prefix is reserved for variables Jobdeck sets"
        ));
    }
    Ok(())
}

pub(super) fn check_envs(envs: &[EnvVar], problems: &mut Problems) {
    let mut seen = Keys::default();
    for (i, env) in envs.iter().enumerate() {
        let path = format!("spec.envs[{i}]");
        if let Err(message) = check_env_name(&env.name) {
            problems.add(format!("{path}.name"), message);
        } else {
            seen.add(&env.name, i);
        }
        if env.value.as_deref().is_some_and(|v| v.contains('\0')) {
            problems.add(format!("{path}.value"), "must not contain a NUL character");
        }
        if let Some(from) = &env.value_from {
            if env.value.is_some() {
                problems.add(
                    format!("{path}.value_from"),
                    "must be left out when a value is given: a variable has either a value or a secret reference, not both",
                );
            } else if from.secret_name_ref.as_deref().is_none_or(|s| s.trim().is_empty()) {
                problems.add(format!("{path}.value_from.secret_name_ref"), "must name a secret");
            }
        }
    }
    for (i, name, first) in seen.repeats() {
        problems.add(format!("spec.envs[{i}].name"), format!("'{name}' is already set by spec.envs[{first}]"));
    }
}
