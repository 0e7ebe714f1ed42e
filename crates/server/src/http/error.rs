//! One error type for every handler, mapped to a status code and the JSON
//! body `{code, message, fields?}` of the wire contract.
//!
//! Internal failures answer an opaque 500; their cause is logged, never sent.

use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{FromRequest, FromRequestParts, OriginalUri, Request};
use axum::http::{request::Parts, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use jobdeck_api::{ApiError, FieldErrors, JsonError};
use serde::de::DeserializeOwned;
use serde::Serialize;

use jobdeck_core::error_chain as chain;
use jobdeck_core::scheduler::SchedulerError;
use jobdeck_store::StoreError;

#[derive(Debug)]
pub enum AppError {
    /// No token, or a token that matches no one.
    Unauthorized,
    /// A token that was good once: revoked or expired, said in a sentence
    /// so its holder knows to ask for a new one.
    TokenEnded(String),
    /// The resource does not exist or the caller may not see it; the two are
    /// deliberately indistinguishable so private names do not leak.
    NotFound(String),
    /// Like `NotFound`, with a more specific code (`log_collection_disabled`).
    NotFoundCode(&'static str, String),
    /// The caller may see the resource but not do this to it.
    Forbidden(String),
    /// The body or query cannot be read.
    BadRequest(String),
    /// The body was read but breaks the contract's rules.
    Validation(FieldErrors),
    /// The request conflicts with what is stored (a duplicate name, …).
    Conflict(String),
    /// 410: what was asked for existed and was removed by a rule (a
    /// finished job's logs, by the log retention), with a code naming it.
    Gone(&'static str, String),
    /// The body is larger than [`MAX_BODY_BYTES`].
    PayloadTooLarge,
    /// The data directory's disk is full: nothing was stored.
    StorageFull,
    /// The caller holds as many requests or log follows as one user may
    /// (`[limits]`); the sentence names the bound.
    TooManyRequests(String),
    /// The caller's quota refuses one more job in the queue; the sentence
    /// names the quota.
    QuotaExceeded(String),
    /// The answer did not start within `limits.request_timeout`.
    TimedOut(std::time::Duration),
    /// Anything else; the cause, with the chain of its sources, is logged
    /// and the caller sees a bare 500.
    Internal(Box<dyn std::error::Error + Send + Sync>),
}

impl AppError {
    /// An internal error keeping `cause` (and its sources) for the log.
    pub fn internal(cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        AppError::Internal(cause.into())
    }
}

/// What the error says to a person; an internal error says what its cause
/// says, for the log (the caller never sees it).
impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AppError::Unauthorized => f.write_str("no valid token"),
            AppError::TokenEnded(what)
            | AppError::NotFound(what)
            | AppError::NotFoundCode(_, what)
            | AppError::Forbidden(what)
            | AppError::BadRequest(what)
            | AppError::Conflict(what)
            | AppError::Gone(_, what)
            | AppError::TooManyRequests(what)
            | AppError::QuotaExceeded(what) => f.write_str(what),
            AppError::TimedOut(limit) => write!(f, "the request took longer than {} s", limit.as_secs()),
            AppError::Validation(fields) => write!(f, "{} invalid fields", fields.len()),
            AppError::PayloadTooLarge => write!(f, "the body is over {MAX_BODY_BYTES} bytes"),
            AppError::StorageFull => f.write_str("the data directory's disk is full"),
            AppError::Internal(_) => f.write_str("internal error"),
        }
    }
}

impl std::error::Error for AppError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AppError::Internal(cause) => Some(cause.as_ref()),
            _ => None,
        }
    }
}

impl AppError {
    fn status_and_body(self) -> (StatusCode, ApiError) {
        match self {
            AppError::Unauthorized => (
                StatusCode::UNAUTHORIZED,
                ApiError::new(
                    "unauthorized",
                    "a valid token is required: send 'Authorization: Bearer <token>'",
                ),
            ),
            AppError::TokenEnded(what) => (
                StatusCode::UNAUTHORIZED,
                ApiError::new("unauthorized", format!("{what}: sign in again, or ask for a new token")),
            ),
            AppError::NotFound(what) => (StatusCode::NOT_FOUND, ApiError::new("not_found", what)),
            AppError::NotFoundCode(code, what) => (StatusCode::NOT_FOUND, ApiError::new(code, what)),
            AppError::Forbidden(what) => (StatusCode::FORBIDDEN, ApiError::new("forbidden", what)),
            AppError::BadRequest(what) => {
                (StatusCode::BAD_REQUEST, ApiError::new("bad_request", what))
            }
            AppError::Validation(fields) => {
                (StatusCode::UNPROCESSABLE_ENTITY, ApiError::validation(fields))
            }
            AppError::Conflict(what) => (StatusCode::CONFLICT, ApiError::new("conflict", what)),
            AppError::Gone(code, what) => (StatusCode::GONE, ApiError::new(code, what)),
            AppError::TooManyRequests(what) => {
                (StatusCode::TOO_MANY_REQUESTS, ApiError::new("too_many_requests", what))
            }
            AppError::QuotaExceeded(what) => {
                (StatusCode::TOO_MANY_REQUESTS, ApiError::new("quota_exceeded", what))
            }
            AppError::TimedOut(limit) => (
                StatusCode::SERVICE_UNAVAILABLE,
                ApiError::new(
                    "timeout",
                    format!("the request took longer than {} s (limits.request_timeout); try again", limit.as_secs()),
                ),
            ),
            AppError::StorageFull => (
                StatusCode::INSUFFICIENT_STORAGE,
                ApiError::new(
                    "storage_full",
                    "the server's disk is full, so nothing was stored; what was stored before is kept and readable. Ask the administrator to free space in the data directory",
                ),
            ),
            AppError::PayloadTooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                ApiError::new("payload_too_large", format!("the body must be at most {MAX_BODY_BYTES} bytes")),
            ),
            AppError::Internal(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                ApiError::new("internal", "internal server error"),
            ),
        }
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        // The cause of an internal error rides with the answer to the
        // request log (request_log.rs), which writes it on the request's
        // own line; the body says nothing of it.
        let cause = match &self {
            AppError::Internal(cause) => Some(InternalCause(chain(cause.as_ref()))),
            _ => None,
        };
        let (status, body) = self.status_and_body();
        let mut response = (status, Json(body)).into_response();
        if let Some(cause) = cause {
            response.extensions_mut().insert(cause);
        }
        response
    }
}

/// The cause chain of an internal error, in the extensions of the 500 it
/// answered, for the request log.
#[derive(Clone, Debug)]
pub struct InternalCause(pub String);

impl From<StoreError> for AppError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::DiskFull(_) => {
                tracing::error!(error = %chain(&e), "nothing was stored");
                AppError::StorageFull
            }
            StoreError::DuplicateJob(_) => AppError::Conflict(e.to_string()),
            other => AppError::Internal(Box::new(other)),
        }
    }
}

/// What the scheduler met, as the caller's answer: a refused command is a
/// conflict with the job's state.
impl From<SchedulerError> for AppError {
    fn from(e: SchedulerError) -> Self {
        match e {
            SchedulerError::NotFound(what) => AppError::NotFound(what),
            SchedulerError::Refused(why) => AppError::Conflict(why),
            SchedulerError::OverQuota { field: Some(field), message } => {
                AppError::Validation([(field.to_string(), vec![message])].into())
            }
            SchedulerError::OverQuota { field: None, message } => AppError::QuotaExceeded(message),
            SchedulerError::Store(e) => AppError::from(e),
            SchedulerError::Internal(cause) => AppError::Internal(cause),
        }
    }
}

pub type AppResult<T> = Result<T, AppError>;

/// The largest request body the API reads: room for a job spec with many
/// environment variables, or a few secrets of up to 1 MiB each.
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// How much of an oversized body is read and thrown away after the 413 is
/// sent. A client that writes its whole body before reading the answer (most
/// do) would otherwise meet a reset connection instead of the 413; past this
/// the connection is closed anyway, so nobody can keep the server reading.
const DISCARD_AT_MOST: u64 = 64 * 1024 * 1024;

/// Middleware: answers 413 to a request whose body is over
/// [`MAX_BODY_BYTES`]: from its `Content-Length` without reading the body,
/// or, for a body sent without a length (chunked), once that much has
/// arrived. Either way the rest is read and thrown away in the background
/// (up to [`DISCARD_AT_MOST`]) so the client can finish sending and read the
/// answer. A body without a length is read here, so its sender's token is
/// checked before this runs (`request_limits::bound_request`).
pub async fn refuse_oversized_bodies(request: Request, next: axum::middleware::Next) -> Response {
    use futures_util::StreamExt;
    let headers = request.headers();
    let declared = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let chunked = declared.is_none() && headers.contains_key(axum::http::header::TRANSFER_ENCODING);
    if let Some(declared) = declared {
        if declared <= MAX_BODY_BYTES as u64 {
            return next.run(request).await;
        }
        let body = request.into_body().into_data_stream();
        if declared <= DISCARD_AT_MOST {
            tokio::spawn(discard(body, DISCARD_AT_MOST));
        }
        return too_large();
    }
    if !chunked {
        return next.run(request).await;
    }
    // Read a body of unknown length up to the limit; past it, refuse.
    let (parts, body) = request.into_parts();
    let mut stream = body.into_data_stream();
    let mut buffer = Vec::new();
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else {
            return AppError::BadRequest("the request body could not be read".into()).into_response();
        };
        buffer.extend_from_slice(&chunk);
        if buffer.len() > MAX_BODY_BYTES {
            tokio::spawn(discard(stream, DISCARD_AT_MOST - buffer.len() as u64));
            return too_large();
        }
    }
    next.run(Request::from_parts(parts, axum::body::Body::from(buffer))).await
}

/// Reads and drops up to `at_most` more bytes of a refused body.
async fn discard(mut body: axum::body::BodyDataStream, at_most: u64) {
    use futures_util::StreamExt;
    let mut read = 0u64;
    while let Some(Ok(chunk)) = body.next().await {
        read += chunk.len() as u64;
        if read > at_most {
            break;
        }
    }
}

/// The 413 answer, closing the connection after it.
fn too_large() -> Response {
    let mut response = AppError::PayloadTooLarge.into_response();
    response.headers_mut().insert(axum::http::header::CONNECTION, axum::http::HeaderValue::from_static("close"));
    response
}

/// A JSON body whose rejections become `AppError`s, so a malformed body or a
/// wrong content type answers with the contract's JSON error, not plain text.
///
/// The body is read with `jobdeck_api::from_json`: JSON that is well formed
/// but does not fit the type (a wrong type, a missing or unknown field)
/// answers 422 with the offending field's path, like any broken rule; only
/// text that is not JSON at all answers 400. The body must be one JSON
/// object (`jobdeck_api::from_json_object`); [`ApiJsonOneOrList`] is for
/// the one route that also takes a list.
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned + Serialize,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        read_json(req, state, jobdeck_api::from_json_object).await.map(ApiJson)
    }
}

/// [`ApiJson`] for a body that is one object or a list of them
/// (`POST /usersecrets`, as Lepton takes it).
pub struct ApiJsonOneOrList<T>(pub T);

impl<T, S> FromRequest<S> for ApiJsonOneOrList<T>
where
    T: DeserializeOwned + Serialize,
    S: Send + Sync,
{
    type Rejection = AppError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        read_json(req, state, jobdeck_api::from_json).await.map(ApiJsonOneOrList)
    }
}

/// Reads a JSON body with `reader`, answering the contract's errors.
async fn read_json<T, S: Send + Sync>(
    req: Request,
    state: &S,
    reader: fn(&[u8]) -> Result<T, JsonError>,
) -> Result<T, AppError> {
    if !has_json_content_type(req.headers()) {
        return Err(AppError::BadRequest("expected a JSON body: set 'Content-Type: application/json'".into()));
    }
    let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            AppError::PayloadTooLarge
        } else {
            AppError::BadRequest(rejection.body_text())
        }
    })?;
    match reader(&bytes) {
        Ok(value) => Ok(value),
        Err(JsonError::Fields(fields)) => Err(AppError::Validation(fields)),
        Err(JsonError::Syntax(e)) => Err(AppError::BadRequest(format!("the body is not valid JSON: {e}"))),
    }
}

/// `application/json` or any `application/*+json`, as axum's `Json` accepts.
fn has_json_content_type(headers: &axum::http::HeaderMap) -> bool {
    let Some(value) = headers.get(axum::http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
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
            Err(QueryRejection::FailedToDeserializeQueryString(e)) => {
                Err(AppError::BadRequest(format!("invalid query string: {}", e.body_text())))
            }
            Err(other) => Err(AppError::BadRequest(other.body_text())),
        }
    }
}

/// The answer to any path under `/api/` that no route matches.
pub async fn api_route_not_found(OriginalUri(uri): OriginalUri) -> AppError {
    AppError::NotFound(format!("no API route for {}", uri.path()))
}

/// The answer to a known API path called with the wrong method.
pub async fn api_method_not_allowed(method: axum::http::Method, OriginalUri(uri): OriginalUri) -> Response {
    let body = ApiError::new("method_not_allowed", format!("{method} is not allowed on {}", uri.path()));
    (StatusCode::METHOD_NOT_ALLOWED, Json(body)).into_response()
}

#[cfg(test)]
mod chain_tests {
    use super::*;

    #[derive(Debug)]
    struct Outer(std::io::Error);

    impl std::fmt::Display for Outer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("cannot store the job")
        }
    }

    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn internal_errors_keep_their_causes_for_the_log_and_tell_the_caller_nothing() {
        let error = AppError::internal(Outer(std::io::Error::other("disk quota exceeded")));
        let AppError::Internal(cause) = &error else { panic!() };
        assert_eq!(chain(cause.as_ref()), "cannot store the job: disk quota exceeded");
        let (status, body) = error.status_and_body();
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(body.message, "internal server error");
    }

    /// An error whose message already ends with its source's (as kube's
    /// do) is not followed by that source again, and a trailing newline in
    /// a message (as TOML's have) does not break the line.
    #[derive(Debug)]
    struct Repeats(std::io::Error);

    impl std::fmt::Display for Repeats {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            writeln!(f, "failed to read kubeconfig: {}", self.0)
        }
    }

    impl std::error::Error for Repeats {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_already_said_is_not_said_twice() {
        let error = Outer(std::io::Error::other("x"));
        assert_eq!(chain(&error), "cannot store the job: x");
        let error = Repeats(std::io::Error::other("No such file or directory"));
        assert_eq!(chain(&error), "failed to read kubeconfig: No such file or directory");
    }
}
