//! Job templates, as Lepton's template API serves them (`GET
//! /templates/public`, `/templates/private`, `…/{id}`, `POST
//! …/{id}/render`): a job whose strings may hold `{{name}}` placeholders,
//! and a JSON schema of the parameters that fill them. `lep job create
//! --template torchrun --run "python train.py"` renders one and creates
//! the job from what comes back.

use serde::{Deserialize, Serialize};

use crate::job::Metadata;

/// A template (Lepton's `LeptonTemplate`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Template {
    /// `id` names it in the paths; `name` is what people read; `owner`
    /// made a private one (built-in public ones have none).
    #[serde(default)]
    pub metadata: Metadata,
    #[serde(default)]
    pub spec: TemplateSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TemplateStatus>,
}

/// What a template holds.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TemplateSpec {
    /// A job (`LeptonJob`: `metadata` and `spec`) whose strings may hold
    /// `{{name}}` placeholders; a string that is one placeholder alone
    /// becomes the parameter's value with its type (a number stays a
    /// number).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub content: serde_json::Value,
    /// The parameters: `{"type": "object", "properties": {name: {"type":
    /// "string" | "integer" | "number" | "boolean", "title"?,
    /// "description"?, "default"?}}, "required"?: [name, …]}`.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub json_schema: serde_json::Value,
    /// `job`: the only kind Jobdeck serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_type: Option<String>,
}

/// Lepton's template status; Jobdeck's templates are always `Ready`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TemplateStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

/// The most bytes a private template's content and schema may take
/// together, as JSON.
pub const TEMPLATE_BYTES_MAX: usize = 256 * 1024;

/// The most private templates one user may keep.
pub const TEMPLATES_PER_USER_MAX: usize = 200;
