//! What `PATCH /jobs/{id}` may change after creation: `spec.stopped` (stop
//! or start, as Lepton clients send it) and the secrets the job's variables
//! reference (`spec.envs` with other `value_from`s, seed 004's secrets that
//! "can be updated on a running task"). Every other field answers "cannot be
//! changed after creation".

use jobdeck_api::{EnvVar, FieldErrors};
use serde_json::Value;

use crate::http::error::{AppError, AppResult};

/// A checked `PATCH /jobs/{id}` body.
#[derive(Debug, Default, PartialEq)]
pub struct JobPatch {
    pub stopped: Option<bool>,
    /// The job's variables, whose secret references may differ from the
    /// stored ones ([`check_envs_change`]).
    pub envs: Option<Vec<EnvVar>>,
}

fn push(errors: &mut FieldErrors, path: impl Into<String>, message: impl Into<String>) {
    errors.entry(path.into()).or_default().push(message.into());
}

/// Reads the body: `{"spec": {"stopped": bool, "envs": [...]}}`, either or
/// both, and nothing else.
pub fn parse_patch(body: &Value) -> AppResult<JobPatch> {
    let mut errors = FieldErrors::new();
    let mut patch = JobPatch::default();
    let Some(top) = body.as_object() else {
        return Err(AppError::BadRequest(
            "the body must be a JSON object such as {\"spec\": {\"stopped\": true}}".into(),
        ));
    };
    for (key, value) in top {
        if key != "spec" {
            push(&mut errors, key.clone(), "cannot be changed after creation");
            continue;
        }
        let Some(spec) = value.as_object() else {
            push(&mut errors, "spec", "must be an object");
            continue;
        };
        for (field, value) in spec {
            let path = format!("spec.{field}");
            match field.as_str() {
                "stopped" => match value.as_bool() {
                    Some(flag) => patch.stopped = Some(flag),
                    None => push(&mut errors, path, "must be true or false"),
                },
                // Read as any body is, so a mistyped or unknown field, or an
                // array where a variable's object belongs, is named by its path.
                "envs" => match jobdeck_api::from_json::<Vec<EnvVar>>(value.to_string().as_bytes()) {
                    Ok(envs) => patch.envs = Some(envs),
                    Err(jobdeck_api::JsonError::Fields(fields)) => {
                        for (inner, messages) in fields {
                            let at = match inner.as_str() {
                                "body" => path.clone(),
                                inner if inner.starts_with('[') => format!("{path}{inner}"),
                                inner => format!("{path}.{inner}"),
                            };
                            errors.entry(at).or_default().extend(messages);
                        }
                    }
                    Err(jobdeck_api::JsonError::Syntax(e)) => push(&mut errors, path, e),
                },
                _ => push(&mut errors, path, "cannot be changed after creation"),
            }
        }
    }
    if patch == JobPatch::default() && errors.is_empty() {
        push(
            &mut errors,
            "spec.stopped",
            "is required: true stops the job, false starts it (or give spec.envs to replace the secrets its variables reference)",
        );
    }
    if errors.is_empty() {
        Ok(patch)
    } else {
        Err(AppError::Validation(errors))
    }
}

/// The rule of a new `spec.envs`: the job's variables as they are, in order,
/// where only a variable that references a secret may reference another.
/// A plain value, a name, or which variables there are never change after
/// creation: a running program was started with them.
pub fn check_envs_change(stored: &[EnvVar], given: &[EnvVar]) -> FieldErrors {
    let mut errors = FieldErrors::new();
    if stored.len() != given.len() {
        push(
            &mut errors,
            "spec.envs",
            format!(
                "must list the job's {} variables as they are, in order; only the secrets they reference (value_from) may change",
                stored.len()
            ),
        );
        return errors;
    }
    for (i, (old, new)) in stored.iter().zip(given).enumerate() {
        let secret = |var: &EnvVar| var.value_from.as_ref().and_then(|v| v.secret_name_ref.clone());
        if old.name != new.name {
            push(&mut errors, format!("spec.envs[{i}].name"), "cannot be changed after creation");
        } else if old.value != new.value {
            push(
                &mut errors,
                format!("spec.envs[{i}].value"),
                "cannot be changed after creation; only a secret reference (value_from) can",
            );
        } else if secret(old).is_none() && new.value_from.is_some() {
            push(
                &mut errors,
                format!("spec.envs[{i}].value_from"),
                "cannot be added after creation: only a variable that references a secret may reference another",
            );
        } else if secret(old).is_some() && secret(new).is_none() {
            push(
                &mut errors,
                format!("spec.envs[{i}].value_from.secret_name_ref"),
                "must name a secret: a variable that references one keeps referencing one",
            );
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use jobdeck_api::EnvValue;
    use serde_json::json;

    fn var(name: &str, secret: Option<&str>, value: Option<&str>) -> EnvVar {
        EnvVar {
            name: name.into(),
            value: value.map(String::from),
            value_from: secret.map(|s| EnvValue { secret_name_ref: Some(s.into()), secret_owner: None }),
        }
    }

    #[test]
    fn a_patch_stops_starts_or_replaces_secrets_and_nothing_else() {
        assert_eq!(parse_patch(&json!({"spec": {"stopped": true}})).unwrap().stopped, Some(true));
        let envs = parse_patch(&json!({"spec": {"envs": [{"name": "A", "value_from": {"secret_name_ref": "s"}}]}}));
        assert_eq!(envs.unwrap().envs, Some(vec![var("A", Some("s"), None)]));
        let refused = |body: Value| match parse_patch(&body) {
            Err(AppError::Validation(fields)) => fields,
            other => panic!("{body}: {other:?}"),
        };
        assert!(refused(json!({"spec": {"completions": 2}}))["spec.completions"][0].contains("cannot be changed"));
        assert!(refused(json!({"metadata": {}}))["metadata"][0].contains("cannot be changed"));
        assert!(refused(json!({"spec": {"envs": "A=1"}})).contains_key("spec.envs"));
        let positional = refused(json!({"spec": {"envs": [["A", "1", null]]}}));
        assert_eq!(positional["spec.envs[0]"], ["must be a JSON object, not an array"], "{positional:?}");
        assert!(refused(json!({"spec": {"envs": [{"name": "A", "colour": 1}]}})).keys().any(|k| k.contains("colour")));
        assert!(refused(json!({"spec": {}}))["spec.stopped"][0].contains("is required"));
        assert_eq!(refused(json!({"spec": {"stopped": "yes"}}))["spec.stopped"], ["must be true or false"]);
        let both = parse_patch(&json!({"spec": {"stopped": false, "envs": []}})).unwrap();
        assert_eq!((both.stopped, both.envs), (Some(false), Some(vec![])));
    }

    #[test]
    fn only_secret_references_may_change() {
        let stored = [var("A", None, Some("1")), var("HF", Some("hf"), None)];
        assert!(check_envs_change(&stored, &[var("A", None, Some("1")), var("HF", Some("hf2"), None)]).is_empty());
        let cases = [
            (vec![var("A", None, Some("1"))], "spec.envs"),
            (vec![var("A", None, Some("2")), var("HF", Some("hf2"), None)], "spec.envs[0].value"),
            (vec![var("B", None, Some("1")), var("HF", Some("hf"), None)], "spec.envs[0].name"),
            (vec![var("A", Some("s"), Some("1")), var("HF", Some("hf"), None)], "spec.envs[0].value_from"),
            (vec![var("A", None, Some("1")), var("HF", None, None)], "spec.envs[1].value_from.secret_name_ref"),
        ];
        for (given, path) in cases {
            let errors = check_envs_change(&stored, &given);
            assert!(errors.contains_key(path), "{given:?}: {errors:?}");
        }
    }
}
