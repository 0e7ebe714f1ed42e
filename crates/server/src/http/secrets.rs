//! Secrets: `/usersecrets`. Values are write-only: they are stored, handed
//! to replicas as environment variables, and never returned or logged.

use axum::extract::{Path, State};
use axum::routing::{delete, get};
use axum::Json;
use jobdeck_api::{FieldErrors, Secret};
use serde::{Deserialize, Serialize};

use crate::http::audit;
use crate::http::auth::CurrentUser;
use crate::http::error::{ApiJsonOneOrList, AppError, AppResult};
use crate::{now_millis, AppState, Route};
use axum::response::Response;
use jobdeck_store::SecretRow;

pub fn routes() -> Vec<Route> {
    vec![("/usersecrets", get(list_secrets).post(create_secrets)), ("/usersecrets/{name}", delete(delete_secret))]
}

/// The longest secret name and value accepted (the OpenAPI document says
/// so too).
pub const MAX_NAME: usize = 253;
pub const MAX_VALUE: usize = 1024 * 1024;

/// A `POST /usersecrets` body: one secret or a list (as `lep` sends).
#[derive(Deserialize, Serialize)]
#[serde(untagged)]
enum SecretsBody {
    Many(Vec<Secret>),
    One(Secret),
}

fn secret_view(row: SecretRow) -> Secret {
    Secret {
        name: row.name,
        value: None,
        tags: Some(row.tags),
        owner: Some(row.owner),
        visibility: Some(row.visibility),
    }
}

/// Pins every secret reference of `spec` to an owner (`value_from.
/// secret_owner`), so that a secret someone makes later under the same name
/// never replaces the one the job was created with: the owner the client
/// named, else the creator's own secret, else the one public secret of that
/// name. `visible` are the secrets `user` may read. A reference the
/// contract already refused (no such name) is left to its message.
pub fn pin_secret_owners(spec: &mut jobdeck_api::JobSpec, user: &str, visible: &[SecretRow]) -> FieldErrors {
    let mut errors = FieldErrors::new();
    for (i, env) in spec.envs.iter_mut().flatten().enumerate() {
        let Some(from) = env.value_from.as_mut() else { continue };
        let Some(name) = from.secret_name_ref.clone().filter(|n| !n.is_empty()) else { continue };
        let named = |owner: &str| visible.iter().any(|s| s.name == name && s.owner == owner);
        match from.secret_owner.as_deref() {
            Some(owner) if named(owner) => {}
            Some(owner) => {
                errors
                    .entry(format!("spec.envs[{i}].value_from.secret_owner"))
                    .or_default()
                    .push(format!("{owner} has no secret named '{name}' that you may use"));
            }
            None if named(user) => from.secret_owner = Some(user.to_string()),
            None => {
                let public: Vec<&str> =
                    visible.iter().filter(|s| s.name == name && s.owner != user).map(|s| s.owner.as_str()).collect();
                match public.as_slice() {
                    [] => {}
                    [owner] => from.secret_owner = Some(owner.to_string()),
                    owners => {
                        errors.entry(format!("spec.envs[{i}].value_from.secret_name_ref")).or_default().push(format!(
                            "several public secrets are named '{name}' ({}): choose one with value_from.secret_owner",
                            owners.join(", ")
                        ))
                    }
                }
            }
        }
    }
    errors
}

/// The rules of a secret; messages by field path (`[1].name`).
fn check(secrets: &[Secret]) -> FieldErrors {
    let mut errors = FieldErrors::new();
    let mut push = |path: String, message: String| errors.entry(path).or_default().push(message);
    let mut seen = std::collections::BTreeSet::new();
    for (i, secret) in secrets.iter().enumerate() {
        let name = &secret.name;
        let valid_name = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && name.len() <= MAX_NAME;
        if !valid_name {
            push(
                format!("[{i}].name"),
                format!("must be 1 to {MAX_NAME} letters, digits and underscores, not starting with a digit"),
            );
        } else if !seen.insert(name.clone()) {
            push(format!("[{i}].name"), format!("'{name}' appears twice in this request"));
        }
        match secret.value.as_deref() {
            None | Some("") => push(format!("[{i}].value"), "is required".into()),
            Some(v) if v.len() > MAX_VALUE => push(format!("[{i}].value"), "must be at most 1 MiB".into()),
            // An environment variable cannot hold a NUL: every replica that
            // used the secret would fail to start.
            Some(v) if v.contains('\0') => push(
                format!("[{i}].value"),
                "must not contain a NUL character: no environment variable can hold one".into(),
            ),
            Some(_) => {}
        }
    }
    if secrets.is_empty() {
        push("[0]".into(), "at least one secret is required".into());
    }
    errors
}

async fn list_secrets(State(state): State<AppState>, user: CurrentUser) -> AppResult<Json<Vec<Secret>>> {
    let rows = state.store.secrets_visible_to(user.name).await?;
    Ok(Json(rows.into_iter().map(secret_view).collect()))
}

async fn create_secrets(
    State(state): State<AppState>,
    user: CurrentUser,
    ApiJsonOneOrList(body): ApiJsonOneOrList<SecretsBody>,
) -> AppResult<Response> {
    let secrets = match body {
        SecretsBody::Many(list) => list,
        SecretsBody::One(one) => vec![one],
    };
    let errors = check(&secrets);
    if !errors.is_empty() {
        return Err(AppError::Validation(errors));
    }
    let now = now_millis();
    let rows: Vec<SecretRow> = secrets
        .into_iter()
        .map(|s| SecretRow {
            visibility: s.visibility(),
            owner: user.name.clone(),
            name: s.name,
            value: s.value.unwrap_or_default(),
            tags: s.tags.unwrap_or_default(),
            created_at: now,
            updated_at: now,
        })
        .collect();
    // A public name belongs to one owner: another user's public secret of
    // the same name would otherwise be a way to hand a teammate's jobs a
    // value of one's own choosing.
    if let Some(taken) = state.store.put_secrets(rows.clone()).await? {
        return Err(AppError::Conflict(format!(
            "a public secret named '{}' already exists ({}'s): choose another name, or make yours private",
            taken.name, taken.owner
        )));
    }
    // The names only: a value never reaches the audit log.
    let names = rows.iter().map(|r| r.name.as_str()).collect::<Vec<_>>().join(", ");
    let answer: Vec<Secret> = rows.into_iter().map(secret_view).collect();
    Ok(audit::noted(Json(answer), names, None))
}

async fn delete_secret(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(name): Path<String>,
) -> AppResult<Json<serde_json::Value>> {
    if state.store.delete_secret(user.name, name.clone()).await? {
        Ok(Json(serde_json::json!({ "name": name })))
    } else {
        Err(AppError::NotFound(format!("you have no secret named '{name}'")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(name: &str, value: Option<&str>) -> Secret {
        Secret { name: name.into(), value: value.map(String::from), ..Secret::default() }
    }

    fn stored(owner: &str, name: &str, public: bool) -> SecretRow {
        SecretRow {
            owner: owner.into(),
            name: name.into(),
            value: String::new(),
            visibility: if public { jobdeck_api::Visibility::Public } else { jobdeck_api::Visibility::Private },
            tags: vec![],
            created_at: 0,
            updated_at: 0,
        }
    }

    fn spec_with(refs: &[(&str, Option<&str>)]) -> jobdeck_api::JobSpec {
        let envs = refs
            .iter()
            .enumerate()
            .map(|(i, (name, owner))| jobdeck_api::EnvVar {
                name: format!("V{i}"),
                value: None,
                value_from: Some(jobdeck_api::EnvValue {
                    secret_name_ref: Some(name.to_string()),
                    secret_owner: owner.map(String::from),
                }),
            })
            .collect();
        jobdeck_api::JobSpec { envs: Some(envs), ..Default::default() }
    }

    fn owners(spec: &jobdeck_api::JobSpec) -> Vec<Option<String>> {
        spec.envs().iter().map(|e| e.value_from.as_ref().and_then(|v| v.secret_owner.clone())).collect()
    }

    /// Own first, then the one public secret; a named owner is kept when
    /// that secret may be used; several public ones of a name must be
    /// chosen among.
    #[test]
    fn secret_references_are_pinned_to_an_owner() {
        let visible = [stored("bob", "OWN", false), stored("alice", "HF", true), stored("bob", "HF", true)];
        let mut spec = spec_with(&[("OWN", None), ("HF", None), ("HF", Some("alice")), ("GONE", None)]);
        assert!(pin_secret_owners(&mut spec, "bob", &visible).is_empty());
        assert_eq!(owners(&spec), [Some("bob".into()), Some("bob".into()), Some("alice".into()), None]);

        let mut spec = spec_with(&[("HF", None)]);
        assert!(pin_secret_owners(&mut spec, "carol", &visible[..2]).is_empty());
        assert_eq!(owners(&spec), [Some("alice".into())]);

        let mut spec = spec_with(&[("HF", None), ("HF", Some("mallory"))]);
        let errors = pin_secret_owners(&mut spec, "carol", &visible);
        assert_eq!(
            errors["spec.envs[0].value_from.secret_name_ref"],
            ["several public secrets are named 'HF' (alice, bob): choose one with value_from.secret_owner"]
        );
        assert_eq!(
            errors["spec.envs[1].value_from.secret_owner"],
            ["mallory has no secret named 'HF' that you may use"]
        );
    }

    #[test]
    fn secret_rules_name_the_field() {
        let cases: Vec<(Vec<Secret>, &str, &str)> = vec![
            (vec![secret("1ABC", Some("v"))], "[0].name", "must be 1 to 253 letters"),
            (vec![secret("A-B", Some("v"))], "[0].name", "must be 1 to 253 letters"),
            (vec![secret("A", None)], "[0].value", "is required"),
            (vec![secret("A", Some("a\0b"))], "[0].value", "must not contain a NUL character"),
            (vec![secret("A", Some("v")), secret("A", Some("w"))], "[1].name", "'A' appears twice"),
            (vec![], "[0]", "at least one secret is required"),
        ];
        for (secrets, path, message) in cases {
            let errors = check(&secrets);
            assert!(errors.get(path).is_some_and(|m| m[0].starts_with(message)), "{errors:?}");
        }
        assert!(check(&[secret("HF_TOKEN", Some("x"))]).is_empty());
    }

    /// A secret's name has the form of an environment variable's name, so
    /// the OpenAPI document gives it the contract's `ENV_NAME_PATTERN`.
    #[test]
    fn secret_names_are_what_the_env_name_pattern_matches() {
        let pattern = regex::Regex::new(jobdeck_api::ENV_NAME_PATTERN).unwrap();
        for name in ["A", "_", "HF_TOKEN", "a1", "LEPTON_X", "", "1A", "A-B", "A B", "É", "A.B"] {
            let valid = check(&[secret(name, Some("v"))]).is_empty();
            assert_eq!(pattern.is_match(name), valid, "{name:?}");
        }
    }
}
