//! `/templates` (Lepton's template API): the built-in public templates,
//! each user's private ones, and rendering either into a job
//! specification. Rendering creates nothing: the job it makes goes through
//! `POST /jobs` like any other (docs/api.md, "Templates").

use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Json;
use jobdeck_api::{Metadata, Template, TemplateSpec, TemplateStatus, TEMPLATES_PER_USER_MAX};
use jobdeck_core::templates::{self, TemplateError};
use jobdeck_store::{SavedTemplate, TemplateRow};
use serde_json::Value;

use crate::http::audit;
use crate::http::auth::CurrentUser;
use crate::http::error::{ApiJson, AppError, AppResult};
use crate::{now_millis, AppState, Route};

pub fn routes() -> Vec<Route> {
    vec![
        ("/templates/public", get(list_public)),
        ("/templates/public/{id}", get(get_public)),
        ("/templates/public/{id}/render", post(render_public)),
        ("/templates/private", get(list_private).post(save_private)),
        ("/templates/private/{id}", get(get_private).delete(delete_private)),
        ("/templates/private/{id}/render", post(render_private)),
    ]
}

impl From<TemplateError> for AppError {
    fn from(error: TemplateError) -> Self {
        AppError::Validation([(error.field, vec![error.message])].into())
    }
}

fn public(id: &str) -> AppResult<Template> {
    templates::builtins()
        .into_iter()
        .find(|t| t.metadata.id.as_deref() == Some(id))
        .ok_or_else(|| AppError::NotFound(format!("no public template '{id}'")))
}

/// A stored template as the wire has it. Its JSON was checked when it was
/// saved; text that no longer reads is an internal error.
fn template_of(row: TemplateRow) -> AppResult<Template> {
    let content: Value = serde_json::from_str(&row.content).map_err(AppError::internal)?;
    let json_schema: Value = serde_json::from_str(&row.json_schema).map_err(AppError::internal)?;
    Ok(Template {
        metadata: Metadata {
            id: Some(row.id),
            name: Some(row.name),
            created_at: Some(row.created_at),
            created_by: Some(row.owner.clone()),
            owner: Some(row.owner),
            ..Metadata::default()
        },
        spec: TemplateSpec { content, json_schema, workload_type: Some("job".into()) },
        status: Some(TemplateStatus { state: Some("Ready".into()) }),
    })
}

async fn private(state: &AppState, user: &CurrentUser, id: &str) -> AppResult<Template> {
    let row = state.store.template(user.name.clone(), id.to_string()).await?;
    template_of(row.ok_or_else(|| AppError::NotFound(format!("you have no template '{id}'")))?)
}

/// `GET /templates/public`: the templates every workspace has.
async fn list_public(_user: CurrentUser) -> Json<Vec<Template>> {
    Json(templates::builtins())
}

async fn get_public(_user: CurrentUser, Path(id): Path<String>) -> AppResult<Json<Template>> {
    public(&id).map(Json)
}

/// `POST /templates/public/{id}/render`: the job the template makes with
/// the body's parameters.
async fn render_public(
    _user: CurrentUser,
    Path(id): Path<String>,
    ApiJson(payload): ApiJson<Value>,
) -> AppResult<Response> {
    let job = templates::render(&public(&id)?, &payload)?;
    Ok(audit::noted(Json(job), id, None))
}

/// `GET /templates/private`: the caller's own templates.
async fn list_private(State(state): State<AppState>, user: CurrentUser) -> AppResult<Json<Vec<Template>>> {
    let rows = state.store.templates_of(user.name.clone()).await?;
    rows.into_iter().map(template_of).collect::<AppResult<Vec<_>>>().map(Json)
}

async fn get_private(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> AppResult<Json<Template>> {
    private(&state, &user, &id).await.map(Json)
}

async fn render_private(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
    ApiJson(payload): ApiJson<Value>,
) -> AppResult<Response> {
    let job = templates::render(&private(&state, &user, &id).await?, &payload)?;
    Ok(audit::noted(Json(job), id, None))
}

/// The id a template is saved under: the one given, else its name in
/// lowercase with every run of other characters made one `-`.
fn id_for(template: &Template) -> AppResult<String> {
    if let Some(id) = template.metadata.id.as_deref().filter(|id| !id.is_empty()) {
        let valid = id.len() <= 64
            && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !id.starts_with('-');
        return if valid {
            Ok(id.to_string())
        } else {
            Err(TemplateError {
                field: "metadata.id".into(),
                message: "1 to 64 lowercase letters, digits and '-', not starting with '-'".into(),
            }
            .into())
        };
    }
    let name = template.metadata.name.as_deref().unwrap_or_default().to_ascii_lowercase();
    let words: Vec<&str> = name.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let id = words.join("-");
    if id.is_empty() {
        return Err(
            TemplateError { field: "metadata.name".into(), message: "must hold a letter or a digit".into() }.into()
        );
    }
    Ok(id)
}

/// `POST /templates/private`: saves a template of the caller's, checked
/// (its schema, its placeholders, that it makes a job).
async fn save_private(
    State(state): State<AppState>,
    user: CurrentUser,
    ApiJson(template): ApiJson<Template>,
) -> AppResult<Response> {
    templates::check_saved(&template)?;
    let id = id_for(&template)?;
    // `lep job create -t <id>` renders a public template when one has the
    // id, so a private one of the same id could never be used from it.
    if templates::builtins().iter().any(|t| t.metadata.id.as_deref() == Some(id.as_str())) {
        let field = if template.metadata.id.is_some() { "metadata.id" } else { "metadata.name" };
        return Err(TemplateError {
            field: field.into(),
            message: format!("'{id}' is a built-in template's id (lep -t would use the built-in): choose another"),
        }
        .into());
    }
    let row = TemplateRow {
        owner: user.name.clone(),
        id: id.clone(),
        name: template.metadata.name.clone().unwrap_or_default(),
        content: template.spec.content.to_string(),
        json_schema: template.spec.json_schema.to_string(),
        created_at: now_millis(),
    };
    match state.store.save_template(row, TEMPLATES_PER_USER_MAX).await? {
        SavedTemplate::Saved => {}
        SavedTemplate::Taken => {
            return Err(AppError::Conflict(format!(
                "you already have a template '{id}': delete it first, or give this one another name"
            )))
        }
        SavedTemplate::Full => {
            return Err(AppError::Conflict(format!(
                "you have {TEMPLATES_PER_USER_MAX} templates, as many as one user may keep: delete one first"
            )))
        }
    }
    let saved = private(&state, &user, &id).await?;
    Ok(audit::noted(Json(saved), id, None))
}

async fn delete_private(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
) -> AppResult<Response> {
    let template = private(&state, &user, &id).await?;
    state.store.delete_template(user.name.clone(), id.clone()).await?;
    Ok(audit::noted(Json(template), id, None))
}
