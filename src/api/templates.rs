//! The job templates as the create-job form calls them (Lepton's template
//! API, docs/api.md "Templates"): the built-in and the caller's own, listed;
//! one rendered into a job; the form's job saved as one; one deleted. Only
//! the form's template part (`pages/new_job/templates.rs`, a split point of
//! its own) calls these, so their code is in that part's download alone.
//!
//! Answers are read field by field out of what the browser parsed, as the
//! form's context is (`form_context.rs` says why): a template's `content`
//! is any job, which the form reads only once rendered.

use gloo_net::http::{Request, RequestBuilder};
use wasm_bindgen::{JsCast, JsValue};

use super::form_context::{field, items, text};
use super::{answer_value, authorized, check, fetch, get_value, url, ApiFailure, ApiResult};
use crate::routes::encode_component;

/// A template as the form offers it.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateChoice {
    pub id: String,
    pub name: String,
    pub description: String,
    /// The caller's own (`/templates/private`), which the caller may delete.
    pub private: bool,
    pub params: Vec<TemplateParam>,
}

/// One parameter of a template, from its JSON schema.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateParam {
    pub name: String,
    /// The schema's `title`, else the name.
    pub title: String,
    pub description: String,
    pub kind: ParamKind,
    /// The default as the input shows it; empty when there is none.
    pub default: String,
    pub required: bool,
}

/// A parameter's JSON type: what its input's text is sent as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    Text,
    Integer,
    Number,
    Boolean,
}

impl ParamKind {
    fn parse(kind: &str) -> ParamKind {
        match kind {
            "integer" => ParamKind::Integer,
            "number" => ParamKind::Number,
            "boolean" => ParamKind::Boolean,
            _ => ParamKind::Text,
        }
    }
}

/// A template of an answer; `None` when it has no id.
pub fn template_of(value: &JsValue, private: bool) -> Option<TemplateChoice> {
    let metadata = field(value, "metadata");
    let id = text(&metadata, "id")?;
    let schema = field(&field(value, "spec"), "json_schema");
    let required: Vec<String> =
        items(&field(&schema, "required")).unwrap_or_default().iter().filter_map(JsValue::as_string).collect();
    let properties = field(&schema, "properties");
    let names: Vec<String> = if properties.is_object() {
        js_sys::Object::keys(properties.unchecked_ref::<js_sys::Object>())
            .iter()
            .filter_map(|k| k.as_string())
            .collect()
    } else {
        Vec::new()
    };
    let params = names
        .into_iter()
        .map(|name| {
            let property = field(&properties, &name);
            let default = field(&property, "default");
            TemplateParam {
                title: text(&property, "title").unwrap_or_else(|| name.clone()),
                description: text(&property, "description").unwrap_or_default(),
                kind: ParamKind::parse(&text(&property, "type").unwrap_or_default()),
                // A number or true/false as JSON writes it.
                default: match default.as_string() {
                    Some(text) => text,
                    None if default.is_undefined() || default.is_null() => String::new(),
                    None => json_text(&default).unwrap_or_default(),
                },
                required: required.contains(&name),
                name,
            }
        })
        .collect();
    Some(TemplateChoice {
        name: text(&metadata, "name").unwrap_or_else(|| id.clone()),
        description: text(&field(&metadata, "annotations"), "description").unwrap_or_default(),
        id,
        private,
        params,
    })
}

/// `GET /templates/public` then `GET /templates/private`: the built-in
/// templates, then the caller's own.
pub async fn templates() -> ApiResult<Vec<TemplateChoice>> {
    let mut all = Vec::new();
    for (path, private) in [("/templates/public", false), ("/templates/private", true)] {
        let answer = get_value(path).await?;
        let list = items(&answer).ok_or_else(|| ApiFailure::Network(format!("unreadable answer to GET {path}")))?;
        all.extend(list.iter().filter_map(|value| template_of(value, private)));
    }
    Ok(all)
}

fn template_path(id: &str, private: bool) -> String {
    let kind = if private { "private" } else { "public" };
    format!("/templates/{kind}/{}", encode_component(id))
}

/// Sends `body` (JSON) with `builder` and answers what the server answered,
/// as the browser parsed it.
async fn send(builder: RequestBuilder, body: String) -> ApiResult<JsValue> {
    let request = authorized(builder)?.header("Content-Type", "application/json").body(body);
    let request = request.map_err(|e| ApiFailure::Network(e.to_string()))?;
    answer_value(request.send().await.map_err(|e| ApiFailure::Network(e.to_string()))?).await
}

/// `POST /templates/{public|private}/{id}/render` with the parameters'
/// values (`payload`, a JSON object): the job it makes, as JSON text.
pub async fn render_template(id: &str, private: bool, payload: String) -> ApiResult<String> {
    let path = url(&format!("{}/render", template_path(id, private)));
    let job = send(Request::post(&path), payload).await?;
    json_text(&job).ok_or_else(|| ApiFailure::Network("unreadable answer to the render".into()))
}

/// `value` as JSON text, written by the browser. (The same call as the
/// console's other JSON writer, `to_js.rs`: every browser function the
/// console calls is an import of its core, in every page's download.)
pub fn json_text(value: &JsValue) -> Option<String> {
    js_sys::JSON::stringify_with_replacer_and_space(value, &JsValue::NULL, &JsValue::UNDEFINED).ok().map(String::from)
}

/// `POST /templates/private` with a template (`body`, JSON): answers the
/// saved template.
pub async fn save_template(body: String) -> ApiResult<TemplateChoice> {
    let saved = send(Request::post(&url("/templates/private")), body).await?;
    template_of(&saved, true).ok_or_else(|| ApiFailure::Network("unreadable answer to the save".into()))
}

/// `DELETE /templates/private/{id}`.
pub async fn delete_template(id: &str) -> ApiResult<()> {
    check(fetch(Request::delete(&url(&template_path(id, true)))).await?).await.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use jobdeck_api::{Metadata, Template, TemplateSpec};
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn a_template_reads_as_the_server_writes_it() {
        let template = Template {
            metadata: Metadata {
                id: Some("torchrun".into()),
                name: Some("Torchrun".into()),
                annotations: Some([("description".to_string(), "PyTorch distributed".to_string())].into()),
                ..Metadata::default()
            },
            spec: TemplateSpec {
                content: serde_json::json!({"spec": {"completions": "{{workers}}"}}),
                json_schema: serde_json::json!({"type": "object", "required": ["run"], "properties": {
                    "run": {"type": "string", "title": "Command", "description": "runs on every worker", "default": "python train.py"},
                    "workers": {"type": "integer", "default": 2},
                    "fast": {"type": "boolean"}}}),
                workload_type: Some("job".into()),
            },
            status: None,
        };
        let parsed = js_sys::JSON::parse(&serde_json::to_string(&template).unwrap()).unwrap();
        let read = template_of(&parsed, false).unwrap();
        assert_eq!(
            (read.id.as_str(), read.name.as_str(), read.description.as_str()),
            ("torchrun", "Torchrun", "PyTorch distributed")
        );
        assert!(!read.private);
        let run = read.params.iter().find(|p| p.name == "run").unwrap();
        assert_eq!(
            (run.title.as_str(), run.kind, run.default.as_str(), run.required),
            ("Command", ParamKind::Text, "python train.py", true)
        );
        let workers = read.params.iter().find(|p| p.name == "workers").unwrap();
        assert_eq!(
            (workers.title.as_str(), workers.kind, workers.default.as_str(), workers.required),
            ("workers", ParamKind::Integer, "2", false)
        );
        let fast = read.params.iter().find(|p| p.name == "fast").unwrap();
        assert_eq!((fast.kind, fast.default.as_str()), (ParamKind::Boolean, ""));
        assert_eq!(template_of(&js_sys::JSON::parse(r#"{"metadata": {}}"#).unwrap(), true), None, "no id, no template");
    }
}
