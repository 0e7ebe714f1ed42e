//! The control plane's REST API, as the console calls it.
//!
//! Every non-2xx answer becomes an `ApiFailure` carrying the server's own
//! `{code, message, fields}` body, so pages can show the exact message next to
//! the exact field.

use gloo_net::http::{Request, RequestBuilder, Response};
use jobdeck_api::{
    ApiError, Decode, FailureAnalysis, FieldErrors, JobEvent, JobList, LeptonJob, LogRange, LogSearch, NodeGroupChoice,
    Replica, ShapeChoice, API_BASE,
};
use wasm_bindgen::JsCast;

pub mod convert;
mod form_context;
mod from_js;
pub mod notifications;
pub mod people;
pub mod templates;
mod to_js;

pub use form_context::{SecretChoice, Workspace};
use from_js::from_js;
pub use to_js::{to_json, to_pretty_json};

use crate::routes::encode_component;
use crate::session::stored_token;

/// Why an API call failed.
#[derive(Clone, PartialEq)]
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

/// Written by hand: a derived `Debug` quotes the messages with Rust's
/// string escaping (and its Unicode tables), and the error boundary's
/// `dyn Error` of every page's loader would bring that in.
impl std::fmt::Debug for ApiFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApiFailure({self})")
    }
}

impl std::error::Error for ApiFailure {}

impl ApiFailure {
    /// The failure in words, naming the first field the server refused
    /// (`log_pattern: not a regular expression …`) where it named one:
    /// for a form that shows one message for all its fields.
    pub fn naming_the_field(&self) -> String {
        match self {
            ApiFailure::Invalid { message, fields } => fields
                .iter()
                .next()
                .map(|(path, messages)| format!("{path}: {}", messages.join("; ")))
                .unwrap_or_else(|| message.clone()),
            other => other.to_string(),
        }
    }
}

pub type ApiResult<T> = Result<T, ApiFailure>;

fn url(path: &str) -> String {
    format!("{API_BASE}{path}")
}

fn authorized(builder: RequestBuilder) -> ApiResult<RequestBuilder> {
    let token = stored_token().ok_or(ApiFailure::Unauthorized)?;
    Ok(builder.header("Authorization", &format!("Bearer {token}")))
}

/// Turns a response into `T`, or its error body into an `ApiFailure`.
async fn decode<T: Decode>(response: Response) -> ApiResult<T> {
    from_js(answer_value(response).await?).map_err(unreadable)
}

/// A 2xx response's JSON as the browser parsed it, or the failure. Not
/// generic, so the request's code is in the download once rather than once
/// per type read (the create-job form reads four).
async fn answer_value(response: Response) -> ApiResult<wasm_bindgen::JsValue> {
    let response = check(response).await?;
    read_value(response).await.map_err(|e| ApiFailure::Network(format!("unreadable answer: {e}")))
}

/// Reads a JSON answer into `T`: the browser parses the text
/// (`Response.json()`), `from_js` reads the parsed value.
async fn read_json<T: Decode>(response: Response) -> Result<T, String> {
    from_js(read_value(response).await?).map_err(|e| e.to_string())
}

/// A JSON answer as the browser parsed it.
async fn read_value(response: Response) -> Result<wasm_bindgen::JsValue, String> {
    let raw = web_sys::Response::from(response);
    let promise = raw.json().map_err(|e| format!("{e:?}"))?;
    wasm_bindgen_futures::JsFuture::from(promise).await.map_err(|e| format!("{e:?}"))
}

/// A job answer as the browser parsed it, read in two parts by the job page:
/// `summary` is what its header, actions and tabs use, `whole` the whole job
/// (the overview shows the specification). The specification's reader is
/// the largest part of the job's, so a link to a job's logs or metrics does
/// not download it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobJson(wasm_bindgen::JsValue);

impl JobJson {
    /// The job with, of its specification, only `stopped`, `completions`
    /// and `workers`.
    pub fn summary(&self) -> ApiResult<LeptonJob> {
        let summary: summary::Job = from_js(self.0.clone()).map_err(unreadable)?;
        Ok(summary.into())
    }

    /// The job's id, as `LeptonJob::id` has it (the name where the answer
    /// has no id), read without the job's reader.
    pub fn id(&self) -> String {
        let metadata = js_sys::Reflect::get(&self.0, &"metadata".into()).unwrap_or_default();
        let text = |key: &str| js_sys::Reflect::get(&metadata, &key.into()).ok().and_then(|v| v.as_string());
        text("id").or_else(|| text("name")).unwrap_or_default()
    }

    /// The whole job.
    pub fn whole(&self) -> ApiResult<LeptonJob> {
        from_js(self.0.clone()).map_err(unreadable)
    }

    /// What would let the queued job start (`status.start_suggestions`),
    /// read apart from the job: the console's `JobStatus` leaves them out
    /// (every page holds jobs, only the overview shows these). None when
    /// unreadable.
    pub fn start_suggestions(&self) -> Vec<jobdeck_api::StartSuggestion> {
        self.status_field("start_suggestions").unwrap_or_default()
    }

    /// When the queued job may start (`status.start_estimate`), read apart
    /// from the job as `start_suggestions` are.
    pub fn start_estimate(&self) -> Option<jobdeck_api::StartEstimate> {
        self.status_field("start_estimate")
    }

    /// The status field `name` read on its own; `None` when absent or
    /// unreadable.
    fn status_field<T: jobdeck_api::Decode>(&self, name: &str) -> Option<T> {
        self.field("status", name)
    }

    /// Field `name` of the answer's part `part` (`spec`, `status`) read on
    /// its own, for what the console's job type leaves out; `None` when
    /// absent or unreadable.
    pub fn field<T: jobdeck_api::Decode>(&self, part: &str, name: &str) -> Option<T> {
        let part = js_sys::Reflect::get(&self.0, &part.into()).unwrap_or_default();
        let value = js_sys::Reflect::get(&part, &name.into()).unwrap_or_default();
        (!value.is_undefined()).then(|| from_js(value).ok()).flatten()
    }

    /// Whether the answer's status has any of `names`, read without
    /// decoding them.
    pub fn has_status(&self, names: &[&str]) -> bool {
        let status = js_sys::Reflect::get(&self.0, &"status".into()).unwrap_or_default();
        names.iter().any(|name| js_sys::Reflect::has(&status, &(*name).into()).unwrap_or(false))
    }

    /// A job as the server would answer it, for tests.
    #[cfg(test)]
    pub fn of(job: &LeptonJob) -> JobJson {
        JobJson::parse(&to_json(job).unwrap())
    }

    /// A job's JSON text as the server would answer it, for tests.
    #[cfg(test)]
    pub fn parse(text: &str) -> JobJson {
        JobJson(js_sys::JSON::parse(text).unwrap())
    }
}

fn unreadable(error: jobdeck_api::DecodeError) -> ApiFailure {
    ApiFailure::Network(format!("unreadable answer: {error}"))
}

/// What `JobJson::summary` reads. Unknown fields are skipped (these types
/// only read).
mod summary {
    use jobdeck_api::{Decode, JobSpec, JobStatus, LeptonJob, Metadata};

    #[derive(Decode)]
    pub struct Job {
        metadata: Metadata,
        #[serde(default)]
        spec: Spec,
        #[serde(default)]
        status: Option<JobStatus>,
    }

    #[derive(Decode, Default)]
    struct Spec {
        #[serde(default)]
        stopped: Option<bool>,
        #[serde(default)]
        completions: Option<i64>,
        #[serde(default)]
        workers: Option<i64>,
    }

    impl From<Job> for LeptonJob {
        fn from(job: Job) -> LeptonJob {
            let Spec { stopped, completions, workers } = job.spec;
            let spec = JobSpec { stopped, completions, workers, ..Default::default() };
            LeptonJob { metadata: job.metadata, spec, status: job.status }
        }
    }
}

/// Reads JSON text the user gave (an imported job, a key in an error path):
/// parsed by the browser, then by the contract's reader (`Decode`), refusing
/// keys where the server's serde refuses them (`from_js_checked`).
pub fn parse_json<T: Decode>(text: &str) -> Result<T, String> {
    let value = js_sys::JSON::parse(text)
        .map_err(|e| e.dyn_into::<js_sys::Error>().map(|e| String::from(e.message())).unwrap_or_default())?;
    from_js::from_js_checked(value).map_err(|e| e.to_string())
}

/// Passes a 2xx response through; turns any other into an `ApiFailure`.
async fn check(response: Response) -> ApiResult<Response> {
    let status = response.status();
    if (200..300).contains(&status) {
        return Ok(response);
    }
    let status_text = response.status_text();
    let body = read_json::<ApiError>(response).await.ok();
    let message = body.as_ref().map(|b| b.message.clone()).unwrap_or(status_text);
    Err(match status {
        401 => ApiFailure::Unauthorized,
        404 => ApiFailure::NotFound(message),
        422 => ApiFailure::Invalid { message, fields: body.and_then(|b| b.fields).unwrap_or_default() },
        _ => ApiFailure::Server { status, message },
    })
}

async fn get<T: Decode>(path: &str) -> ApiResult<T> {
    from_js(get_value(path).await?).map_err(unreadable)
}

/// `GET path`'s JSON as the browser parsed it (see `answer_value`).
async fn get_value(path: &str) -> ApiResult<wasm_bindgen::JsValue> {
    answer_value(fetch(Request::get(&url(path))).await?).await
}

async fn fetch(builder: RequestBuilder) -> ApiResult<Response> {
    authorized(builder)?.send().await.map_err(|e| ApiFailure::Network(e.to_string()))
}

/// What every page reads of `GET /workspace`: who the token belongs to,
/// with what role, and whether jobs run unisolated. (The whole answer
/// describes shapes, quotas and usage, and the form reads what it needs of
/// it by hand, `api/form_context.rs`; decoding more here would put all of
/// that into every page's first download.) Also proves the token works.
#[derive(Debug, Clone, PartialEq, Decode)]
pub struct Me {
    pub current_user: String,
    #[serde(default)]
    pub current_user_role: jobdeck_api::Role,
    /// Set when jobs run without isolation from the server's user: the top
    /// bar shows it on every page.
    #[serde(default)]
    pub isolation_warning: Option<String>,
    /// The workspace's log retention, of which only its `warning` is read:
    /// the server gives it to admins once the logs near the disk budget, and
    /// the top bar shows it to them on every page.
    #[serde(default)]
    pub log_retention: Option<LogRetentionNotice>,
}

/// What the top bar reads of `GET /workspace`'s `log_retention`.
#[derive(Debug, Clone, PartialEq, Decode)]
pub struct LogRetentionNotice {
    #[serde(default)]
    pub warning: Option<String>,
}

/// `POST /sessions`: trades the stored token (a sign-in link's or a pasted
/// one) for a console session, which the browser keeps instead; the
/// answer's token is the session's.
pub async fn start_session() -> ApiResult<jobdeck_api::NewSession> {
    decode(fetch(Request::post(&url("/sessions"))).await?).await
}

/// `DELETE /sessions/current`: signing out revokes the stored session on the
/// server, so a copy of it left in the browser no longer signs in.
pub async fn end_session() -> ApiResult<()> {
    check(fetch(Request::delete(&url("/sessions/current"))).await?).await.map(|_| ())
}

/// `GET /auth/methods` (no token needed): whether the sign-in page offers
/// the identity provider.
pub async fn sign_in_methods() -> ApiResult<jobdeck_api::SignInMethods> {
    let response = Request::get(&url("/auth/methods")).send().await.map_err(|e| ApiFailure::Network(e.to_string()))?;
    decode(response).await
}

/// `GET /workspace`, read as `Me`.
pub async fn me() -> ApiResult<Me> {
    get("/workspace").await
}

/// `GET /jobs` with a query string already encoded (may be empty).
///
/// The list reads only the fields its columns show (`listed::Jobs`), then
/// fills them into the contract's types with every other field at its
/// default: decoding every field of every job would put the whole job
/// decoder into the list page's download.
pub async fn list_jobs(query: &str) -> ApiResult<JobList> {
    let page: listed::Jobs =
        if query.is_empty() { get("/jobs").await? } else { get(&format!("/jobs?{query}")).await? };
    Ok(page.into())
}

/// What the deployments list reads of `GET /jobs`. Unknown fields are
/// skipped (these types only read). `Decode`'s derive reads serde's
/// attributes, so `#[serde(default)]` means here what it means on the
/// contract's types.
mod listed {
    use jobdeck_api::{Affinity, Decode, JobList, JobSpec, JobStatus, LeptonJob, Metadata};

    #[derive(Decode)]
    pub struct Jobs {
        jobs: Vec<Job>,
        #[serde(default)]
        total: i64,
        #[serde(default)]
        total_capped: bool,
        #[serde(default)]
        page: i64,
        #[serde(default)]
        page_size: i64,
    }

    #[derive(Decode)]
    struct Job {
        metadata: JobMetadata,
        #[serde(default)]
        spec: Spec,
        #[serde(default)]
        status: Option<JobStatus>,
    }

    #[derive(Decode, Default)]
    struct JobMetadata {
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        created_by: Option<String>,
        #[serde(default)]
        created_at: Option<i64>,
    }

    #[derive(Decode, Default)]
    struct Spec {
        #[serde(default)]
        completions: Option<i64>,
        #[serde(default)]
        workers: Option<i64>,
        #[serde(default)]
        resource_shape: Option<String>,
        #[serde(default)]
        affinity: Option<Groups>,
    }

    #[derive(Decode)]
    struct Groups {
        #[serde(default)]
        allowed_dedicated_node_groups: Option<Vec<String>>,
    }

    impl From<Jobs> for JobList {
        fn from(page: Jobs) -> JobList {
            let jobs = page
                .jobs
                .into_iter()
                .map(|job| LeptonJob {
                    metadata: Metadata {
                        id: job.metadata.id,
                        name: job.metadata.name,
                        created_by: job.metadata.created_by,
                        created_at: job.metadata.created_at,
                        ..Default::default()
                    },
                    spec: JobSpec {
                        completions: job.spec.completions,
                        workers: job.spec.workers,
                        resource_shape: job.spec.resource_shape,
                        affinity: job.spec.affinity.map(|groups| Affinity {
                            allowed_dedicated_node_groups: groups.allowed_dedicated_node_groups,
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                    status: job.status,
                })
                .collect();
            JobList {
                jobs,
                total: page.total,
                total_capped: page.total_capped,
                page: page.page,
                page_size: page.page_size,
            }
        }
    }
}

/// `POST /jobs` with the job as JSON text (the form writes it, see
/// `pages/new_job`'s `write_job`). Answers the created job as the browser
/// parsed it: the form only reads its id (`JobJson::id`), without the job's
/// reader.
pub async fn create_job(body: String) -> ApiResult<JobJson> {
    let builder = authorized(Request::post(&url("/jobs")))?.header("Content-Type", "application/json");
    let request = builder.body(body).map_err(|e| ApiFailure::Network(e.to_string()))?;
    let response = request.send().await.map_err(|e| ApiFailure::Network(e.to_string()))?;
    job_answer(response).await
}

/// `PATCH /jobs/{id}` with `{"spec":{"stopped":…}}`: stops a job, or starts a
/// stopped one again. Answers the job as it is now.
/// `POST /jobs/{id}/rerun?only=failed`: a new job that runs only the job's
/// indexes that did not succeed. Answers the new job.
pub async fn rerun_failed(id: &str) -> ApiResult<JobJson> {
    let path = format!("{}/rerun?only=failed", job_path(id));
    job_answer(fetch(Request::post(&url(&path))).await?).await
}

pub async fn set_job_stopped(id: &str, stopped: bool) -> ApiResult<JobJson> {
    // A fixed body: building it from a JSON value would bring a JSON value
    // type into the download for one line.
    let body = if stopped { r#"{"spec":{"stopped":true}}"# } else { r#"{"spec":{"stopped":false}}"# };
    let builder = authorized(Request::patch(&url(&job_path(id))))?.header("Content-Type", "application/json");
    let request = builder.body(body).map_err(|e| ApiFailure::Network(e.to_string()))?;
    let response = request.send().await.map_err(|e| ApiFailure::Network(e.to_string()))?;
    job_answer(response).await
}

/// `GET /jobs/{id}`, for the job page (`JobJson`).
pub async fn job_json(id: &str) -> ApiResult<JobJson> {
    job_answer(fetch(Request::get(&url(&job_path(id)))).await?).await
}

async fn job_answer(response: Response) -> ApiResult<JobJson> {
    answer_value(response).await.map(JobJson)
}

/// `DELETE /jobs/{id}`.
pub async fn delete_job(id: &str) -> ApiResult<()> {
    check(fetch(Request::delete(&url(&job_path(id)))).await?).await.map(|_| ())
}

/// `GET /jobs/{id}/replicas?attempts=all`: one entry per attempt of every
/// replica.
pub async fn job_replicas(id: &str) -> ApiResult<Vec<Replica>> {
    get(&format!("{}/replicas?attempts=all", job_path(id))).await
}

/// `GET /jobs/{id}/events`, newest first.
pub async fn job_events(id: &str) -> ApiResult<Vec<JobEvent>> {
    get(&format!("{}/events", job_path(id))).await
}

/// `GET /queue`: the queued jobs in their admission order, those of one
/// node group when `node_group` is not empty.
pub async fn queue(node_group: &str) -> ApiResult<jobdeck_api::QueueList> {
    match node_group {
        "" => get("/queue").await,
        group => get(&format!("/queue?node_group={}", crate::routes::encode_component(group))).await,
    }
}

/// The ids of the node groups (`GET /dedicated-node-groups`), for the list's
/// filter. Only the ids are read: a smaller decoder than the whole group.
pub async fn node_group_names() -> ApiResult<Vec<String>> {
    #[derive(Decode)]
    struct Named {
        metadata: Id,
    }
    #[derive(Decode, Default)]
    struct Id {
        id: String,
    }
    let groups: Vec<Named> = get("/dedicated-node-groups").await?;
    Ok(groups.into_iter().map(|g| g.metadata.id).collect())
}

/// What the create-job form loads its context from (`GET /shapes`,
/// `/dedicated-node-groups`, `/usersecrets` and `/workspace`), each read
/// with the form's own readers (`api/form_context.rs`, which says why not
/// with `Decode`), or why it could not be. Taken by value: a failure is
/// moved to where it is shown, never copied.
pub struct FormAnswers {
    /// The resource shapes a job may run on.
    pub shapes: ApiResult<Vec<ShapeChoice>>,
    /// The node groups with their nodes, capacity and queue.
    pub node_groups: ApiResult<Vec<NodeGroupChoice>>,
    /// The secrets an environment variable may reference: the caller's own
    /// and public ones.
    pub secrets: ApiResult<Vec<SecretChoice>>,
    /// Who the caller is, and what the workspace asks of a job.
    pub workspace: ApiResult<Workspace>,
}

const SHAPES: &str = "/shapes";
const NODE_GROUPS: &str = "/dedicated-node-groups";
const SECRETS: &str = "/usersecrets";
const WORKSPACE: &str = "/workspace";

/// Fetches and reads the create-job form's answers, one after another.
pub async fn form_answers() -> FormAnswers {
    FormAnswers {
        shapes: read_answer(get_value(SHAPES).await, SHAPES, form_context::shapes),
        node_groups: read_answer(get_value(NODE_GROUPS).await, NODE_GROUPS, form_context::node_groups),
        secrets: read_answer(get_value(SECRETS).await, SECRETS, form_context::secrets),
        workspace: read_answer(get_value(WORKSPACE).await, WORKSPACE, form_context::workspace),
    }
}

/// `answer` read, or a failure naming the request whose answer was not what
/// the form reads.
fn read_answer<T>(
    answer: ApiResult<wasm_bindgen::JsValue>,
    path: &str,
    read: fn(&wasm_bindgen::JsValue) -> Option<T>,
) -> ApiResult<T> {
    read(&answer?).ok_or_else(|| ApiFailure::Network(format!("unreadable answer to GET {API_BASE}{path}")))
}

fn log_path(job: &str, replica: &str) -> String {
    format!("{}/replicas/{}/log", job_path(job), encode_component(replica))
}

/// A structured log request (`from`/`to`/`tail`/`wait`, or `search`): JSON
/// back. `abort` cancels it when the viewer goes away.
async fn log_json<T: Decode>(
    job: &str,
    replica: &str,
    query: &str,
    abort: Option<&web_sys::AbortSignal>,
) -> ApiResult<T> {
    let builder = Request::get(&url(&format!("{}?{query}", log_path(job, replica)))).abort_signal(abort);
    decode(fetch(builder).await?).await
}

/// `GET …/log?from=&to=`: lines `from..=to` of one attempt, with the log's
/// total line count.
pub async fn log_range(
    job: &str,
    replica: &str,
    from: u64,
    to: u64,
    abort: Option<&web_sys::AbortSignal>,
) -> ApiResult<LogRange> {
    log_json(job, replica, &format!("from={from}&to={to}"), abort).await
}

/// Like `log_range`, but while line `from` does not exist yet and the
/// attempt runs, the server holds the answer up to `wait` seconds.
pub async fn log_range_waiting(
    job: &str,
    replica: &str,
    from: u64,
    to: u64,
    wait: u64,
    abort: Option<&web_sys::AbortSignal>,
) -> ApiResult<LogRange> {
    log_json(job, replica, &format!("from={from}&to={to}&wait={wait}"), abort).await
}

/// `GET …/log?tail=n`: the last `n` lines, with the total.
pub async fn log_tail(job: &str, replica: &str, n: u64, abort: Option<&web_sys::AbortSignal>) -> ApiResult<LogRange> {
    log_json(job, replica, &format!("tail={n}"), abort).await
}

/// `GET …/log?search=`: the numbers of the lines that match, over the whole
/// log.
pub async fn log_search(job: &str, replica: &str, text: &str, regex: bool, ignore_case: bool) -> ApiResult<LogSearch> {
    let query = format!("search={}&regex={regex}&ignore_case={ignore_case}", encode_component(text));
    log_json(job, replica, &query, None).await
}

/// Downloads the whole log as a file (`download=true`); the file name is
/// the replica id.
pub async fn download_log(job: &str, replica: &str, timestamps: bool) -> ApiResult<()> {
    let path = format!("{}?download=true&timestamps={timestamps}", log_path(job, replica));
    save_download(&path, &format!("{replica}.log")).await
}

/// Saves the answer to `GET path` as the file `file_name`. The request
/// needs the token, so it goes through `fetch` and the browser saves the
/// answer as a blob.
pub async fn save_download(path: &str, file_name: &str) -> ApiResult<()> {
    let response = check(fetch(Request::get(&url(path))).await?).await?;
    let unreadable = |e: wasm_bindgen::JsValue| ApiFailure::Network(format!("{e:?}"));
    let raw = web_sys::Response::from(response);
    let blob = wasm_bindgen_futures::JsFuture::from(raw.blob().map_err(unreadable)?).await.map_err(unreadable)?;
    let href = web_sys::Url::create_object_url_with_blob(blob.unchecked_ref()).map_err(unreadable)?;
    let link: web_sys::HtmlAnchorElement = crate::components::dom::element("a").unchecked_into();
    link.set_href(&href);
    link.set_download(file_name);
    link.click();
    // The browser has taken the file once the click is handled.
    crate::components::live::sleep(1000).await;
    let _ = web_sys::Url::revoke_object_url(&href);
    Ok(())
}

/// `GET /stream?{query}`: the event stream's body, read as it comes
/// (`components/event_stream.rs`). A `fetch`, not an `EventSource`, so the
/// token goes in the `Authorization` header and never in a URL.
pub async fn open_stream(query: &str, abort: &web_sys::AbortSignal) -> ApiResult<web_sys::ReadableStream> {
    let request = Request::get(&url(&format!("/stream?{query}"))).abort_signal(Some(abort));
    let response = check(fetch(request).await?).await?;
    response.body().ok_or_else(|| ApiFailure::Network("the stream has no body".into()))
}

/// `GET /jobs/{id}/merged-log?{query}`: a page of every rank's lines on one
/// timeline (the "All ranks" tab).
pub async fn merged_log(id: &str, query: &str) -> ApiResult<jobdeck_api::MergedLog> {
    get(&format!("{}/merged-log?{query}", job_path(id))).await
}

/// `GET /jobs/{id}/merged-log?search=…`: the lines of every rank that
/// match, in the merged order (the "All ranks" tab's search).
pub async fn merged_search(id: &str, query: &str) -> ApiResult<jobdeck_api::MergedSearch> {
    get(&format!("{}/merged-log?{query}", job_path(id))).await
}

/// `GET /jobs/{id}/metrics`: each attempt's use now and at its peak.
pub async fn job_metrics(id: &str) -> ApiResult<jobdeck_api::metrics::JobMetrics> {
    get(&format!("{}/metrics", job_path(id))).await
}

/// `GET /jobs/{id}/replicas/{replica}/metrics`: an attempt's series.
pub async fn replica_metrics(id: &str, replica: &str) -> ApiResult<jobdeck_api::metrics::ReplicaMetrics> {
    get(&format!("{}/replicas/{}/metrics", job_path(id), encode_component(replica))).await
}

/// `GET /jobs/{id}/failure-analysis`.
pub async fn failure_analysis(id: &str) -> ApiResult<FailureAnalysis> {
    get(&format!("{}/failure-analysis", job_path(id))).await
}

/// Where the failure analysis found the first error in one attempt's log:
/// its line and what was found there (`Python traceback`), if it found one.
/// Only that is read of the analysis: the logs tab's jump to the error needs
/// no more, and the whole analysis's decoder belongs to the failure tab.
pub async fn first_error(id: &str, replica: &str) -> ApiResult<Option<(i64, String)>> {
    #[derive(Decode)]
    struct Analysis {
        #[serde(default)]
        log_streams: Vec<Stream>,
    }
    #[derive(Decode, Default)]
    struct Stream {
        replica_id: String,
        error_line: i64,
        pattern: String,
    }
    let analysis: Analysis = get(&format!("{}/failure-analysis", job_path(id))).await?;
    let stream = analysis.log_streams.into_iter().find(|s| s.replica_id == replica);
    Ok(stream.map(|s| (s.error_line, s.pattern)))
}

fn job_path(id: &str) -> String {
    format!("/jobs/{}", encode_component(id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use jobdeck_api::{EnvVar, JobState};

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn a_job_answer_reads_whole_or_as_the_page_header_needs_it() {
        let mut job = crate::fixtures::job("train-1", "train", "alice", JobState::Running);
        job.spec.container.image = Some("busybox".into());
        job.spec.envs = Some(vec![EnvVar { name: "MODE".into(), value: Some("fast".into()), value_from: None }]);
        job.spec.stopped = Some(true);
        job.spec.completions = Some(4);
        job.spec.workers = Some(2);
        let json = JobJson::of(&job);
        assert_eq!(json.whole().unwrap(), job);
        let summary = json.summary().unwrap();
        assert_eq!((summary.metadata.clone(), summary.status.clone()), (job.metadata.clone(), job.status.clone()));
        let spec = &summary.spec;
        assert_eq!((spec.stopped, spec.completions, spec.workers), (Some(true), Some(4), Some(2)));
        assert_eq!(
            (spec.container.image.as_deref(), spec.envs.as_ref()),
            (None, None),
            "the rest is left to the overview"
        );
        // An answer the page cannot read says so, as any other.
        let broken = JobJson(js_sys::JSON::parse(r#"{"metadata": 7}"#).unwrap());
        assert!(
            matches!(broken.summary(), Err(ApiFailure::Network(m)) if m.starts_with("unreadable answer: metadata"))
        );
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn an_unreadable_form_answer_names_its_request() {
        let parsed = |json: &str| Ok(js_sys::JSON::parse(json).unwrap());
        assert_eq!(
            read_answer(parsed(r#"{"shapes": []}"#), SHAPES, form_context::shapes),
            Err(ApiFailure::Network(format!("unreadable answer to GET {API_BASE}/shapes")))
        );
        assert_eq!(read_answer(parsed("[]"), NODE_GROUPS, form_context::node_groups), Ok(vec![]));
        assert_eq!(
            read_answer(Err(ApiFailure::Unauthorized), SECRETS, form_context::secrets),
            Err(ApiFailure::Unauthorized),
            "a failed request stays what it was"
        );
        assert_eq!(
            read_answer(parsed(r#"{"current_user": "ann"}"#), WORKSPACE, form_context::workspace)
                .map(|w| w.current_user),
            Ok("ann".to_string())
        );
    }
}
