//! `GET /openapi.json`: the OpenAPI 3 document of the API, written by hand
//! next to docs/api.md. A test checks that it lists exactly the routes the
//! router serves.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::AppState;

/// The document.
pub const OPENAPI_JSON: &str = include_str!("openapi.json");

pub fn routes() -> Router<AppState> {
    Router::new().route("/openapi.json", get(openapi))
}

async fn openapi() -> Response {
    let mut response = OPENAPI_JSON.into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}
