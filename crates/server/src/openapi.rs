//! `GET /openapi.json`: the OpenAPI 3 document of the API, written by hand
//! next to docs/api.md (`openapi.json`) and completed when served with the
//! rules that live elsewhere: the contract's ranges and name pattern
//! (`jobdeck_api`), and this server's shapes, node groups, priority classes
//! and job-name limit. Fuzzers and generated clients so see the rules the
//! server applies. `tests/openapi.rs` checks that the document lists exactly
//! the routes the router serves (`crate::api_routes`), with exactly their
//! methods.

use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{json, Value};

use crate::config::Config;
use crate::{AppState, Route};

/// The document as written.
pub const OPENAPI_JSON: &str = include_str!("openapi.json");

pub fn routes() -> Vec<Route> {
    vec![("/openapi.json", get(openapi))]
}

/// The document with this server's rules filled in.
pub fn document(config: &Config) -> Value {
    let mut doc: Value = serde_json::from_str(OPENAPI_JSON).expect("openapi.json is JSON (tests/openapi.rs reads it)");
    let spec = &mut doc["components"]["schemas"]["JobSpec"]["properties"];
    for (field, min, max) in jobdeck_api::SPEC_RANGES {
        spec[field]["minimum"] = json!(min);
        spec[field]["maximum"] = json!(max);
    }
    let shapes: Vec<&str> = config.shapes.iter().map(|s| s.name.as_str()).collect();
    spec["resource_shape"]["enum"] = json!(shapes);
    spec["queue_config"]["properties"]["priority_class"]["enum"] = json!(jobdeck_api::PRIORITY_CLASSES);
    let groups: Vec<&str> = config.node_groups.iter().map(|g| g.name.as_str()).collect();
    spec["affinity"]["properties"]["allowed_dedicated_node_groups"]["items"]["enum"] = json!(groups);
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
        assert_eq!(spec["resource_shape"]["enum"][0], config.shapes[0].name.as_str());
        let body = &doc["paths"]["/jobs"]["post"]["requestBody"]["content"]["application/json"]["schema"];
        assert_eq!(body["allOf"][1]["properties"]["metadata"]["properties"]["name"]["maxLength"], 36);
    }
}
