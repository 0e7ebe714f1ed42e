//! Image pull secrets: `/imagepullsecrets`, Lepton's registry credentials.
//! A job names them in `spec.image_pull_secrets`; the executor pulls the
//! job's image with them. Passwords are write-only, and the secrets follow
//! the visibility of user secrets: their owner's alone unless made public.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, get};
use axum::Json;
use jobdeck_api::defaults::SECRET_VISIBILITY;
use jobdeck_api::{FieldErrors, ImagePullSecret, ImagePullSecretSpec, Metadata};

use crate::http::audit;
use crate::http::auth::CurrentUser;
use crate::http::error::{ApiJson, AppError, AppResult};
use crate::{now_millis, AppState, Route};
use axum::response::Response;
use jobdeck_store::ImagePullSecretRow;

pub fn routes() -> Vec<Route> {
    vec![("/imagepullsecrets", get(list).post(create)), ("/imagepullsecrets/{name}", delete(remove))]
}

/// The longest password accepted (registry tokens are a few KiB at most).
const MAX_PASSWORD: usize = 64 * 1024;

fn view(row: ImagePullSecretRow) -> ImagePullSecret {
    ImagePullSecret {
        metadata: Metadata {
            id: Some(row.name.clone()),
            name: Some(row.name),
            owner: Some(row.owner.clone()),
            created_by: Some(row.owner),
            created_at: Some(row.created_at),
            last_modified_at: Some(row.updated_at),
            visibility: Some(row.visibility),
            ..Metadata::default()
        },
        spec: ImagePullSecretSpec {
            registry_server: row.registry_server,
            username: row.username,
            password: None,
            email: Some(row.email).filter(|e| !e.is_empty()),
        },
    }
}

/// A text with no white space or control character, as registry addresses
/// and user names are.
fn is_token(text: &str) -> bool {
    !text.is_empty() && !text.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// The rules of an image pull secret, by field path. Names follow the
/// Kubernetes Secret name rule (the Kubernetes executor creates one of it).
fn check(secret: &ImagePullSecret) -> FieldErrors {
    let mut errors = FieldErrors::new();
    let mut push = |path: &str, message: &str| errors.entry(path.into()).or_default().push(message.into());
    let name = secret.metadata.name.as_deref().or(secret.metadata.id.as_deref()).unwrap_or("");
    let valid_name = !name.is_empty()
        && name.len() <= 63
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if !valid_name {
        push(
            "metadata.name",
            "must be 1 to 63 lowercase letters, digits and '-', starting and ending with a letter or digit",
        );
    }
    if let (Some(name), Some(id)) = (&secret.metadata.name, &secret.metadata.id) {
        if name != id {
            push("metadata.id", "must equal metadata.name when both are given");
        }
    }
    let spec = &secret.spec;
    if !is_token(&spec.registry_server) {
        push("spec.registry_server", "is required: the registry's address, such as https://nvcr.io");
    }
    if !is_token(&spec.username) {
        push("spec.username", "is required and must not contain spaces or control characters");
    }
    match spec.password.as_deref() {
        None | Some("") => push("spec.password", "is required"),
        Some(p) if p.len() > MAX_PASSWORD => push("spec.password", "must be at most 64 KiB"),
        Some(p) if p.chars().any(char::is_control) => push("spec.password", "must not contain control characters"),
        Some(_) => {}
    }
    if spec.email.as_deref().is_some_and(|e| e.chars().any(|c| c.is_whitespace() || c.is_control())) {
        push("spec.email", "must not contain spaces or control characters");
    }
    errors
}

async fn list(State(state): State<AppState>, user: CurrentUser) -> AppResult<Json<Vec<ImagePullSecret>>> {
    let rows = state.store.image_pull_secrets_visible_to(user.name).await?;
    Ok(Json(rows.into_iter().map(view).collect()))
}

/// `201 Created`, as Lepton answers (the TAO SDK checks for exactly that).
async fn create(
    State(state): State<AppState>,
    user: CurrentUser,
    ApiJson(secret): ApiJson<ImagePullSecret>,
) -> AppResult<Response> {
    let errors = check(&secret);
    if !errors.is_empty() {
        return Err(AppError::Validation(errors));
    }
    let now = now_millis();
    let row = ImagePullSecretRow {
        owner: user.name,
        name: secret.metadata.name.or(secret.metadata.id).unwrap_or_default(),
        registry_server: secret.spec.registry_server,
        username: secret.spec.username,
        password: secret.spec.password.unwrap_or_default(),
        email: secret.spec.email.unwrap_or_default(),
        visibility: secret.metadata.visibility.unwrap_or(SECRET_VISIBILITY),
        created_at: now,
        updated_at: now,
    };
    state.store.put_image_pull_secret(row.clone()).await?;
    let name = row.name.clone();
    Ok(audit::noted((StatusCode::CREATED, Json(view(row))), name, None))
}

async fn remove(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(name): Path<String>,
) -> AppResult<Json<serde_json::Value>> {
    if state.store.delete_image_pull_secret(user.name, name.clone()).await? {
        Ok(Json(serde_json::json!({ "name": name })))
    } else {
        Err(AppError::NotFound(format!("you have no image pull secret named '{name}'")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(name: &str, server: &str, user: &str, password: Option<&str>) -> ImagePullSecret {
        ImagePullSecret {
            metadata: Metadata { name: Some(name.into()), ..Metadata::default() },
            spec: ImagePullSecretSpec {
                registry_server: server.into(),
                username: user.into(),
                password: password.map(String::from),
                email: None,
            },
        }
    }

    #[test]
    fn image_pull_secret_rules_name_the_field() {
        let cases = [
            (secret("Tao", "https://nvcr.io", "$oauthtoken", Some("k")), "metadata.name", "must be 1 to 63"),
            (secret("tao-", "https://nvcr.io", "$oauthtoken", Some("k")), "metadata.name", "must be 1 to 63"),
            (secret("tao", "", "$oauthtoken", Some("k")), "spec.registry_server", "is required"),
            (secret("tao", "nvcr.io", "a b", Some("k")), "spec.username", "is required and must not"),
            (secret("tao", "nvcr.io", "u", None), "spec.password", "is required"),
            (secret("tao", "nvcr.io", "u", Some("a\u{0}b")), "spec.password", "must not contain control"),
        ];
        for (secret, path, message) in cases {
            let errors = check(&secret);
            assert!(errors.get(path).is_some_and(|m| m[0].starts_with(message)), "{path}: {errors:?}");
        }
        assert!(check(&secret("tao-image-pull-secret", "https://nvcr.io", "$oauthtoken", Some("key"))).is_empty());
    }
}
