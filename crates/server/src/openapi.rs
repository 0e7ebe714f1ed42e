//! `GET /openapi.json`: the OpenAPI 3 document of the API, written by hand
//! next to docs/api.md. `tests/openapi.rs` checks that it lists exactly the
//! routes the router serves (`crate::api_routes`), with exactly their
//! methods.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::Route;

/// The document.
pub const OPENAPI_JSON: &str = include_str!("openapi.json");

pub fn routes() -> Vec<Route> {
    vec![("/openapi.json", get(openapi))]
}

async fn openapi() -> Response {
    let mut response = OPENAPI_JSON.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}
