//! `GET /openapi.json`: the OpenAPI 3.1 document of the API.
//!
//! Its schemas are derived from the wire types themselves (utoipa's
//! `ToSchema`, behind jobdeck-api's `openapi` feature, which only the server
//! turns on), so they say exactly what the server reads and writes: every
//! field, which ones are required, the enums, and `additionalProperties:
//! false` where the contract refuses unknown fields. The operations are
//! written by hand next to docs/api.md (`openapi_paths.json`) and refer to
//! those schemas. When served, the document is completed with the rules that
//! live elsewhere: the contract's ranges and name pattern (`jobdeck_api`),
//! and this server's shapes, node groups, priority classes and job-name
//! limit. Fuzzers and generated clients so see the rules the server applies.
//! `tests/openapi.rs` checks that the document lists exactly the routes the
//! router serves (`crate::api_routes`), with exactly their methods, and that
//! every schema it refers to is there.

use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use jobdeck_api::logs::{LogQueryResult, LogRange, LogSearch, MergedLog, MergedMatch, MergedSearch};
use jobdeck_api::metrics::{JobMetrics, ReplicaMetrics};
use jobdeck_api::notifications::{
    CreatedWebhook, EmailChange, NotificationCreate, NotificationInfo, WebhookCreate, WebhookDelivery, WebhookInfo,
};
use jobdeck_api::stream::{StreamEnd, StreamEvents, StreamJobRef, StreamLog, StreamReplicas};
use jobdeck_api::{
    ApiError, AuditList, ConvertedJob, CreatedInvitation, CreatedToken, FailureAnalysis, ImagePullSecret,
    InvitationCreate, InvitationInfo, InvitationList, InvitationPreview, InvitationRedeem, JobEvent, JobList,
    LeptonJob, LogRetentionSetting, LogUsage, NewSession, Node, NodeGroup, QueueList, Quota, QuotaLimits, QuotaList,
    RedeemedInvitation, RemovedUser, Replica, RoleChange, Secret, Shape, SignInMethods, StoragePermission, Template,
    TokenCreate, TokenInfo, UsageHistory, UsageNow, UserList, UserRemoval, WorkspaceInfo,
};
use serde_json::{json, Value};
use utoipa::OpenApi;

use crate::{AppState, Route};
use jobdeck_core::config::Config;

/// The operations, written by hand; `components.schemas` comes from
/// [`WireTypes`].
pub const OPENAPI_PATHS_JSON: &str = include_str!("openapi_paths.json");

/// The wire types the operations answer and accept; utoipa adds every type
/// they are made of.
#[derive(OpenApi)]
#[openapi(components(schemas(
    ApiError,
    LeptonJob,
    JobList,
    Replica,
    JobEvent,
    Shape,
    NodeGroup,
    Node,
    Secret,
    ImagePullSecret,
    StoragePermission,
    WorkspaceInfo,
    LogRetentionSetting,
    LogRange,
    LogSearch,
    MergedLog,
    MergedMatch,
    MergedSearch,
    StreamJobRef,
    StreamReplicas,
    StreamEvents,
    StreamLog,
    StreamEnd,
    LogQueryResult,
    FailureAnalysis,
    ReplicaMetrics,
    JobMetrics,
    TokenInfo,
    TokenCreate,
    CreatedToken,
    NewSession,
    UserList,
    RoleChange,
    SignInMethods,
    InvitationCreate,
    InvitationInfo,
    InvitationList,
    CreatedInvitation,
    InvitationRedeem,
    InvitationPreview,
    RedeemedInvitation,
    UserRemoval,
    RemovedUser,
    AuditList,
    QuotaList,
    QuotaLimits,
    Quota,
    UsageNow,
    UsageHistory,
    LogUsage,
    Template,
    ConvertedJob,
    WebhookCreate,
    WebhookInfo,
    CreatedWebhook,
    WebhookDelivery,
    NotificationCreate,
    NotificationInfo,
    EmailChange,
    QueueList,
)))]
struct WireTypes;

pub fn routes() -> Vec<Route> {
    vec![("/openapi.json", get(openapi))]
}

/// The document as derived and written, before this server's rules.
pub fn base_document() -> Value {
    let mut doc: Value =
        serde_json::from_str(OPENAPI_PATHS_JSON).expect("openapi_paths.json is JSON (tests/openapi.rs reads it)");
    let components = WireTypes::openapi().components.expect("WireTypes names schemas");
    doc["components"]["schemas"] = serde_json::to_value(&components.schemas).expect("schemas serialize");
    doc
}

/// The document with this server's rules filled in.
pub fn document(config: &Config) -> Value {
    let mut doc = base_document();
    let schemas = &mut doc["components"]["schemas"];
    for (kind, field, min, max) in jobdeck_api::PART_RANGES {
        let property = &mut schemas[kind]["properties"][field];
        property["minimum"] = json!(min);
        property["maximum"] = json!(max);
    }
    schemas["EnvVar"]["properties"]["name"]["pattern"] = json!(jobdeck_api::ENV_NAME_PATTERN);
    let secret = &mut schemas["Secret"]["properties"];
    secret["name"]["pattern"] = json!(jobdeck_api::ENV_NAME_PATTERN);
    secret["name"]["maxLength"] = json!(crate::http::secrets::MAX_NAME);
    secret["value"]["minLength"] = json!(1);
    secret["value"]["maxLength"] = json!(crate::http::secrets::MAX_VALUE);
    let port_name = &mut schemas["ContainerPort"]["properties"]["name"];
    port_name["minLength"] = json!(1);
    port_name["maxLength"] = json!(jobdeck_api::PORT_NAME_MAX_LEN);
    let spec = &mut schemas["JobSpec"]["properties"];
    for (field, min, max) in jobdeck_api::SPEC_RANGES {
        spec[field]["minimum"] = json!(min);
        spec[field]["maximum"] = json!(max);
    }
    // An optional field may be null (read as absent), so its enum has null
    // too.
    let mut shapes: Vec<Value> = config.shapes.iter().map(|s| json!(s.name)).collect();
    shapes.push(Value::Null);
    spec["resource_shape"]["enum"] = json!(shapes);
    let mut classes: Vec<Value> = jobdeck_api::PRIORITY_CLASSES.iter().map(|c| json!(c)).collect();
    classes.push(Value::Null);
    schemas["QueueConfig"]["properties"]["priority_class"]["enum"] = json!(classes);
    let groups: Vec<&str> = config.node_groups.iter().map(|g| g.name.as_str()).collect();
    schemas["Affinity"]["properties"]["allowed_dedicated_node_groups"]["items"]["enum"] = json!(groups);
    // A new job's name; stored jobs (in answers) keep the names they were
    // given, so the rule is on the request alone.
    let name = json!({
        "type": "string",
        "minLength": 1,
        "maxLength": config.job_name_max_length,
        "pattern": jobdeck_api::JOB_NAME_PATTERN,
    });
    doc["paths"]["/jobs"]["post"]["requestBody"]["content"]["application/json"]["schema"] = json!({
        "allOf": [
            {"$ref": "#/components/schemas/LeptonJob"},
            {"type": "object", "properties": {"metadata": {"type": "object", "properties": {"name": name, "id": name}}}}
        ]
    });
    doc
}

async fn openapi(State(state): State<AppState>) -> Response {
    let mut response = document(&state.config).to_string().into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The environment variable pattern says what `check_env_name` says,
    /// except for the names Jobdeck reserves (which a pattern cannot list).
    #[test]
    fn the_env_name_pattern_agrees_with_the_contracts_env_rule() {
        let pattern = regex::Regex::new(jobdeck_api::ENV_NAME_PATTERN).unwrap();
        for name in ["A", "_", "_A1", "cuda_visible", "PATH", "", "1A", "A-B", "A B", "É", "A.B", "A\0"] {
            let contract = jobdeck_api::check_env_name(name).is_ok();
            assert_eq!(pattern.is_match(name), contract, "{name:?}");
        }
        for reserved in ["JOB_COMPLETION_INDEX", "LEPTON_X"] {
            assert!(pattern.is_match(reserved) && jobdeck_api::check_env_name(reserved).is_err());
        }
    }

    /// The pattern says what `check_job_name` says, on the rule's own table.
    #[test]
    fn the_name_pattern_agrees_with_the_contracts_name_rule() {
        let pattern = regex::Regex::new(jobdeck_api::JOB_NAME_PATTERN).unwrap();
        for name in ["a", "train-01", "tao-job-0c1f", "a-b-c", "A", "1a", "-a", "a-", "a_b", "a.b", "", "a b", "aé"] {
            let contract = jobdeck_api::check_job_name(name, 36).is_ok();
            assert_eq!(pattern.is_match(name), contract, "{name:?}");
        }
    }

    #[test]
    fn the_served_document_carries_the_servers_rules() {
        let config = Config::for_data_dir("/tmp");
        let doc = document(&config);
        let spec = &doc["components"]["schemas"]["JobSpec"]["properties"];
        assert_eq!(spec["completions"]["minimum"], 1);
        assert_eq!(spec["completions"]["maximum"], jobdeck_api::REPLICAS_MAX);
        let port = &doc["components"]["schemas"]["ContainerPort"]["properties"];
        assert_eq!(
            (&port["container_port"]["minimum"], &port["container_port"]["maximum"]),
            (&json!(1), &json!(65535))
        );
        assert_eq!(port["name"]["maxLength"], jobdeck_api::PORT_NAME_MAX_LEN);
        let env_name = &doc["components"]["schemas"]["EnvVar"]["properties"]["name"];
        assert_eq!(env_name["pattern"], jobdeck_api::ENV_NAME_PATTERN);
        assert_eq!(spec["resource_shape"]["enum"][0], config.shapes[0].name.as_str());
        let classes = &doc["components"]["schemas"]["QueueConfig"]["properties"]["priority_class"]["enum"];
        assert_eq!(classes[0], jobdeck_api::PRIORITY_CLASSES[0]);
        let groups = &doc["components"]["schemas"]["Affinity"]["properties"]["allowed_dedicated_node_groups"];
        assert_eq!(groups["items"]["enum"][0], config.node_groups[0].name.as_str());
        let body = &doc["paths"]["/jobs"]["post"]["requestBody"]["content"]["application/json"]["schema"];
        assert_eq!(body["allOf"][1]["properties"]["metadata"]["properties"]["name"]["maxLength"], 36);
    }

    /// Every `$ref` of the document, where it is.
    fn references<'a>(value: &'a Value, found: &mut Vec<&'a str>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(target)) = map.get("$ref") {
                    found.push(target);
                }
                map.values().for_each(|v| references(v, found));
            }
            Value::Array(items) => items.iter().for_each(|v| references(v, found)),
            _ => {}
        }
    }

    /// The operations written by hand name schemas the types derive, and
    /// the derived schemas name each other: nothing points nowhere.
    #[test]
    fn every_reference_names_a_schema_of_the_document() {
        let doc = base_document();
        let mut found = Vec::new();
        references(&doc, &mut found);
        assert!(found.len() > 50, "only {} references", found.len());
        for target in found {
            let pointer = target.strip_prefix('#').unwrap_or_else(|| panic!("{target} is not local"));
            assert!(doc.pointer(pointer).is_some_and(Value::is_object), "{target} names nothing");
        }
    }

    /// The schemas are the types': a field the contract refuses to guess is
    /// refused by the schema too, and what only travels one way says so.
    #[test]
    fn the_schemas_say_what_the_types_do() {
        let doc = base_document();
        let schemas = &doc["components"]["schemas"];
        // `deny_unknown_fields` on what clients send.
        for name in ["LeptonJob", "Metadata", "JobSpec", "Container", "EnvVar", "Mount"] {
            assert_eq!(schemas[name]["additionalProperties"], false, "{name}");
        }
        // Fields without a default are required; `Option`s and defaults are not.
        assert_eq!(schemas["LeptonJob"]["required"], json!(["metadata"]));
        assert_eq!(schemas["EnvVar"]["required"], json!(["name"]));
        // Secrets are written, never read back.
        assert_eq!(schemas["Secret"]["properties"]["value"]["writeOnly"], true);
        assert_eq!(schemas["Container"]["properties"]["registry_password"]["writeOnly"], true);
        assert_eq!(schemas["ImagePullSecretSpec"]["properties"]["password"]["writeOnly"], true);
        // Enums list the names on the wire.
        let states: Vec<&str> = jobdeck_api::JobState::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(schemas["JobState"]["enum"], json!(states));
        assert_eq!(schemas["ReplicaPhase"]["enum"], json!(["pending", "running", "succeeded", "failed"]));
        // Every field of a job's spec is described, extensions included.
        let spec = serde_json::to_value(jobdeck_api::JobSpec {
            workers: Some(2),
            backoff_limit: Some(1),
            disable_retry_on_program_error: Some(true),
            resources: Some(Default::default()),
            ..Default::default()
        })
        .unwrap();
        for field in spec.as_object().unwrap().keys() {
            assert!(schemas["JobSpec"]["properties"].get(field).is_some(), "JobSpec.{field}");
        }
    }
}
