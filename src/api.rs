//! The control plane's REST API, as the console calls it.
//!
//! Every non-2xx answer becomes an `ApiFailure` carrying the server's own
//! `{code, message, fields}` body, so pages can show the exact message next to
//! the exact field.

use gloo_net::http::{Request, RequestBuilder, Response};
use jobdeck_api::{ApiError, FieldErrors, JobList, LeptonJob, WorkspaceInfo, API_BASE};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::routes::encode_component;
use crate::session::stored_token;

/// Why an API call failed.
#[derive(Debug, Clone, PartialEq)]
pub enum ApiFailure {
    /// No token, or the server no longer accepts it: the user must sign in.
    Unauthorized,
    /// The resource does not exist or is not visible to this user.
    NotFound(String),
    /// The server rejected the input; messages per field path.
    Invalid { message: String, fields: FieldErrors },
    /// Any other error answer.
    Server { status: u16, message: String },
    /// The request did not reach the server or the answer was unreadable.
    Network(String),
}

impl std::fmt::Display for ApiFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiFailure::Unauthorized => f.write_str("you are not signed in"),
            ApiFailure::NotFound(message) => f.write_str(message),
            ApiFailure::Invalid { message, .. } => f.write_str(message),
            ApiFailure::Server { status, message } => write!(f, "{message} (HTTP {status})"),
            ApiFailure::Network(message) => write!(f, "cannot reach the server: {message}"),
        }
    }
}

impl std::error::Error for ApiFailure {}

pub type ApiResult<T> = Result<T, ApiFailure>;

fn url(path: &str) -> String {
    format!("{API_BASE}{path}")
}

fn authorized(builder: RequestBuilder) -> ApiResult<RequestBuilder> {
    let token = stored_token().ok_or(ApiFailure::Unauthorized)?;
    Ok(builder.header("Authorization", &format!("Bearer {token}")))
}

/// Turns a response into `T`, or its error body into an `ApiFailure`.
async fn decode<T: DeserializeOwned>(response: Response) -> ApiResult<T> {
    let status = response.status();
    if (200..300).contains(&status) {
        return response
            .json::<T>()
            .await
            .map_err(|e| ApiFailure::Network(format!("unreadable answer: {e}")));
    }
    let body = response.json::<ApiError>().await.ok();
    let message = body
        .as_ref()
        .map(|b| b.message.clone())
        .unwrap_or_else(|| response.status_text());
    Err(match status {
        401 => ApiFailure::Unauthorized,
        404 => ApiFailure::NotFound(message),
        422 => ApiFailure::Invalid {
            message,
            fields: body.and_then(|b| b.fields).unwrap_or_default(),
        },
        _ => ApiFailure::Server { status, message },
    })
}

async fn get<T: DeserializeOwned>(path: &str) -> ApiResult<T> {
    let response = authorized(Request::get(&url(path)))?
        .send()
        .await
        .map_err(|e| ApiFailure::Network(e.to_string()))?;
    decode(response).await
}

async fn send<B: Serialize, T: DeserializeOwned>(
    builder: RequestBuilder,
    body: &B,
) -> ApiResult<T> {
    let response = authorized(builder)?
        .json(body)
        .map_err(|e| ApiFailure::Network(e.to_string()))?
        .send()
        .await
        .map_err(|e| ApiFailure::Network(e.to_string()))?;
    decode(response).await
}

/// `GET /workspace`: also proves the token works.
pub async fn workspace() -> ApiResult<WorkspaceInfo> {
    get("/workspace").await
}

/// `GET /jobs` with a query string already encoded (may be empty).
pub async fn list_jobs(query: &str) -> ApiResult<JobList> {
    if query.is_empty() {
        get("/jobs").await
    } else {
        get(&format!("/jobs?{query}")).await
    }
}

/// `GET /jobs/{id}`.
pub async fn job(id: &str) -> ApiResult<LeptonJob> {
    get(&format!("/jobs/{}", encode_component(id))).await
}

/// `POST /jobs`.
pub async fn create_job(job: &LeptonJob) -> ApiResult<LeptonJob> {
    send(Request::post(&url("/jobs")), job).await
}
