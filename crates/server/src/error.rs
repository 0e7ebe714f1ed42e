//! One error type for every handler, mapped to a status code and the JSON
//! body `{code, message, fields?}` of the wire contract.
//!
//! Internal failures answer an opaque 500; their cause is logged, never sent.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, OriginalUri, Request};
use axum::http::{request::Parts, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use jobdeck_api::{ApiError, FieldErrors};
use serde::de::DeserializeOwned;

#[derive(Debug)]
pub enum AppError {
    /// No token, or a token that matches no one.
    Unauthorized,
    /// The resource does not exist or the caller may not see it; the two are
    /// deliberately indistinguishable so private names do not leak.
    NotFound(String),
    /// The caller may see the resource but not do this to it.
    Forbidden(String),
    /// The body or query cannot be read.
    BadRequest(String),
    /// The body was read but breaks the contract's rules.
    Validation(FieldErrors),
    /// The request conflicts with what is stored (a duplicate name, …).
    Conflict(String),
    /// Anything else; the cause is logged and the caller sees a bare 500.
    Internal(String),
}

impl AppError {
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        AppError::Internal(cause.to_string())
    }

    fn status_and_body(self) -> (StatusCode, ApiError) {
        match self {
            AppError::Unauthorized => (
                StatusCode::UNAUTHORIZED,
                ApiError::new(
                    "unauthorized",
                    "a valid token is required: send 'Authorization: Bearer <token>'",
                ),
            ),
            AppError::NotFound(what) => (StatusCode::NOT_FOUND, ApiError::new("not_found", what)),
            AppError::Forbidden(what) => (StatusCode::FORBIDDEN, ApiError::new("forbidden", what)),
            AppError::BadRequest(what) => {
                (StatusCode::BAD_REQUEST, ApiError::new("bad_request", what))
            }
            AppError::Validation(fields) => {
                (StatusCode::UNPROCESSABLE_ENTITY, ApiError::validation(fields))
            }
            AppError::Conflict(what) => (StatusCode::CONFLICT, ApiError::new("conflict", what)),
            AppError::Internal(cause) => {
                tracing::error!(%cause, "internal error");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    ApiError::new("internal", "internal server error"),
                )
            }
        }
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let (status, body) = self.status_and_body();
        (status, Json(body)).into_response()
    }
}

impl From<rusqlite::Error> for AppError {
    fn from(e: rusqlite::Error) -> Self {
        AppError::internal(format!("database: {e}"))
    }
}

pub type AppResult<T> = Result<T, AppError>;

/// A JSON body whose rejections become `AppError`s, so a malformed body or a
/// wrong content type answers with the contract's JSON error, not plain text.
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(value)) => Ok(ApiJson(value)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

fn json_rejection(rejection: JsonRejection) -> AppError {
    match rejection {
        JsonRejection::MissingJsonContentType(_) => AppError::BadRequest(
            "expected a JSON body: set 'Content-Type: application/json'".into(),
        ),
        JsonRejection::JsonSyntaxError(e) => {
            AppError::BadRequest(format!("the body is not valid JSON: {}", e.body_text()))
        }
        JsonRejection::JsonDataError(e) => AppError::BadRequest(format!(
            "the body does not have the expected shape: {}",
            e.body_text()
        )),
        other => AppError::BadRequest(other.body_text()),
    }
}

/// A query string whose rejections become `AppError`s.
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(value)) => Ok(ApiQuery(value)),
            Err(QueryRejection::FailedToDeserializeQueryString(e)) => Err(AppError::BadRequest(
                format!("invalid query string: {}", e.body_text()),
            )),
            Err(other) => Err(AppError::BadRequest(other.body_text())),
        }
    }
}

/// The answer to any path under `/api/` that no route matches.
pub async fn api_route_not_found(OriginalUri(uri): OriginalUri) -> AppError {
    AppError::NotFound(format!("no API route for {}", uri.path()))
}

/// The answer to a known API path called with the wrong method.
pub async fn api_method_not_allowed(
    method: axum::http::Method,
    OriginalUri(uri): OriginalUri,
) -> Response {
    let body = ApiError::new(
        "method_not_allowed",
        format!("{method} is not allowed on {}", uri.path()),
    );
    (StatusCode::METHOD_NOT_ALLOWED, Json(body)).into_response()
}
