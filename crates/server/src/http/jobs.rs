//! The job resource: `/jobs` and `/jobs/{id}`.
//!
//! Handlers parse, authorize and respond; lifecycle changes go through the
//! scheduler and storage is `Store`'s business.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;
use jobdeck_api::{
    FieldErrors, JobList, JobState, JobStatus, LeptonJob, LogRetention, Metadata, Role, ValidationContext,
};

use crate::http::audit::AuditNote;
use crate::http::auth::CurrentUser;
use crate::http::error::{ApiJson, AppError, AppResult};
use crate::http::job_patch::{check_envs_change, parse_patch};
use crate::{now_millis, AppState, Route};
use jobdeck_core::scheduler::{Command, NewJob};
use jobdeck_core::spec::ResolvedSpec;
use jobdeck_core::topology::{node_group_views, shape_view};
use jobdeck_store::{JobFilter, JobRow, JobRuntime, QueryMode, SecretRow, SortKey, StoredMetadata};

pub fn routes() -> Vec<Route> {
    vec![
        ("/jobs", get(list_jobs).post(create_job)),
        ("/jobs/{id}", get(get_job).patch(patch_job).delete(delete_job)),
        ("/jobs/{id}/rerun", axum::routing::post(crate::http::rerun::rerun_job)),
    ]
}

pub const DEFAULT_PAGE_SIZE: i64 = 50;
pub const MAX_PAGE_SIZE: i64 = 500;

/// The pairs of a query string, decoded.
pub fn query_pairs(raw: Option<&str>) -> Vec<(String, String)> {
    form_urlencoded::parse(raw.unwrap_or("").as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
}

fn parse_int(name: &str, value: &str) -> AppResult<i64> {
    value.trim().parse().map_err(|_| AppError::BadRequest(format!("{name} must be a whole number, not '{value}'")))
}

/// Reads `job_query_mode`.
pub fn parse_query_mode(value: &str) -> AppResult<QueryMode> {
    match value {
        "alive_only" => Ok(QueryMode::AliveOnly),
        "archive_only" => Ok(QueryMode::ArchiveOnly),
        "alive_and_archive" => Ok(QueryMode::AliveAndArchive),
        other => Err(AppError::BadRequest(format!(
            "job_query_mode must be alive_only, archive_only or alive_and_archive, not '{other}'"
        ))),
    }
}

/// The states a `status` value names: every state whose name starts with it,
/// ignoring case (`run` is `Running`, as `lep job list -s run` expects).
fn matching_states(value: &str) -> AppResult<Vec<JobState>> {
    let wanted = value.trim().to_ascii_lowercase();
    let states: Vec<JobState> = JobState::ALL
        .into_iter()
        .filter(|s| *s != JobState::Unknown && s.as_str().to_ascii_lowercase().starts_with(&wanted))
        .collect();
    if wanted.is_empty() || states.is_empty() {
        let known: Vec<&str> = JobState::ALL.iter().filter(|s| **s != JobState::Unknown).map(|s| s.as_str()).collect();
        return Err(AppError::BadRequest(format!(
            "status '{value}' matches no job state; the states are {}",
            known.join(", ")
        )));
    }
    Ok(states)
}

/// A search parameter without control characters: no job name or label
/// holds one, and SQLite's full-text query syntax ends a string at a NUL.
fn printable(name: &str, value: String) -> AppResult<String> {
    if value.chars().any(char::is_control) {
        return Err(AppError::BadRequest(format!("{name} must not contain control characters")));
    }
    Ok(value)
}

/// Builds the listing filter from the query string of `GET /jobs`.
pub fn parse_list_query(viewer: String, raw: Option<&str>) -> AppResult<JobFilter> {
    let mut filter = JobFilter { viewer, page: 1, page_size: DEFAULT_PAGE_SIZE, ..JobFilter::default() };
    for (key, value) in query_pairs(raw) {
        match key.as_str() {
            "q" => filter.q = Some(printable("q", value)?).filter(|v| !v.is_empty()),
            "query" => filter.labels.extend(
                jobdeck_api::parse_label_selector(&printable("query", value)?)
                    .map_err(|why| AppError::BadRequest(format!("query: {why}")))?,
            ),
            "status" => {
                for part in value.split(',').filter(|p| !p.trim().is_empty()) {
                    for state in matching_states(part)? {
                        if !filter.states.contains(&state) {
                            filter.states.push(state);
                        }
                    }
                }
            }
            // Lepton's parameters match as `lep job list` documents them:
            // `node_groups` by a part of the name, `created_by` by its
            // beginning, both ignoring case. The console's own filters use
            // Jobdeck's exact `node_group` and `creator`, so "mine" is
            // exactly the user's jobs.
            "node_groups" => filter.node_group_patterns.extend(list_values(&value)),
            "node_group" => filter.node_groups.extend(list_values(&value)),
            "created_by" => filter.created_by_prefixes.extend(list_values(&value)),
            "creator" => filter.created_by.extend(list_values(&value)),
            "job_query_mode" => filter.mode = parse_query_mode(&value)?,
            "page" => filter.page = parse_int("page", &value)?,
            "page_size" => filter.page_size = parse_int("page_size", &value)?,
            "sort" => {
                filter.sort = match value.as_str() {
                    "created_at" => SortKey::CreatedAt,
                    "name" => SortKey::Name,
                    "state" => SortKey::State,
                    other => {
                        return Err(AppError::BadRequest(format!(
                            "sort must be created_at, name or state, not '{other}'"
                        )))
                    }
                }
            }
            "order" => {
                filter.ascending = match value.as_str() {
                    "asc" => true,
                    "desc" => false,
                    other => return Err(AppError::BadRequest(format!("order must be asc or desc, not '{other}'"))),
                }
            }
            // Other parameters (Lepton clients send a few more) change nothing.
            _ => {}
        }
    }
    if filter.page < 1 {
        return Err(AppError::BadRequest("page must be 1 or more".into()));
    }
    if !(1..=MAX_PAGE_SIZE).contains(&filter.page_size) {
        return Err(AppError::BadRequest(format!("page_size must be between 1 and {MAX_PAGE_SIZE}")));
    }
    Ok(filter)
}

/// The values of a list parameter: comma-separated, trimmed, none empty.
fn list_values(value: &str) -> impl Iterator<Item = String> + '_ {
    value.split(',').map(str::trim).filter(|v| !v.is_empty()).map(String::from)
}

async fn list_jobs(
    State(state): State<AppState>,
    user: CurrentUser,
    RawQuery(raw): RawQuery,
) -> AppResult<Json<JobList>> {
    let mut filter = parse_list_query(user.name, raw.as_deref())?;
    // A job that allows every node group may run in any group this server
    // has, so it belongs in a listing of such a group (not of a name that is
    // no group at all).
    filter.any_group_matches = filter.node_groups.iter().any(|g| state.config.node_group(g).is_some());
    filter.any_group_pattern_matches = filter.node_group_patterns.iter().any(|pattern| {
        let pattern = pattern.to_lowercase();
        state.config.node_groups.iter().any(|g| g.name.to_lowercase().contains(&pattern))
    });
    let (page, page_size) = (filter.page, filter.page_size);
    let listed = state.store.list_jobs(filter).await?;
    let (total, total_capped) = (listed.total, listed.total_capped);
    let mut jobs: Vec<LeptonJob> = listed.rows.into_iter().map(job_view).collect();
    for job in &mut jobs {
        add_gpu_now(&state, job);
    }
    Ok(Json(JobList { jobs, total, total_capped, page, page_size }))
}

/// A running job's GPU use now, from the executor's newest samples (a
/// sample older than three sampling periods is not "now"), as the list
/// shows it (and the event stream's list messages).
pub fn add_gpu_now(state: &AppState, job: &mut LeptonJob) {
    let id = job.id().to_string();
    if let Some(status) = job.status.as_mut().filter(|s| s.state == Some(jobdeck_api::JobState::Running)) {
        if let Some((utilization, idle)) = state.metrics_now.gpu_utilization(&id, crate::now_millis(), 30_000) {
            status.gpu_utilization = Some(utilization);
            status.gpu_idle = idle;
        }
    }
}

/// What the job rules need to know about this server: its shapes, its node
/// groups with their nodes (what is in use does not matter to a rule, so the
/// active jobs are not read: that read grew with the queue and slowed every
/// creation), the secrets `user` may reference (read by the caller) and what
/// a user of `role` may ask for.
async fn validation_context_with(
    state: &AppState,
    user: &str,
    role: Role,
    secrets: &[SecretRow],
) -> AppResult<ValidationContext> {
    let mut secret_names: Vec<String> = secrets.iter().map(|s| s.name.clone()).collect();
    secret_names.dedup();
    // The stored ones the user may use, and on Kubernetes the namespace's
    // Secrets the config allows: never any Secret of the namespace, which
    // would include the registry Secrets of other users' jobs.
    let mut image_pull_secret_names: Vec<String> =
        state.store.image_pull_secrets_visible_to(user.to_string()).await?.into_iter().map(|s| s.name).collect();
    image_pull_secret_names.extend(state.executor.cluster_pull_secrets());
    let image_pull_secret_names = Some(image_pull_secret_names);
    Ok(ValidationContext {
        shapes: state.config.shapes.iter().map(|shape| (&shape_view(shape)).into()).collect(),
        node_groups: node_group_views(&state.config, &[], &[]).iter().map(Into::into).collect(),
        secret_names,
        requirements: state.job_requirements(role),
        image_pull_secret_names,
    })
}

fn merge(into: &mut FieldErrors, more: FieldErrors) {
    for (path, messages) in more {
        // The contract gives one message per field, and the contract's own
        // wins, also over a message about a list whose items it already named.
        let covered =
            into.keys().any(|p| p == &path || p.starts_with(&format!("{path}[")) || p.starts_with(&format!("{path}.")));
        if covered {
            continue;
        }
        let entry = into.entry(path).or_default();
        for message in messages {
            if !entry.contains(&message) {
                entry.push(message);
            }
        }
    }
}

async fn create_job(
    State(state): State<AppState>,
    user: CurrentUser,
    ApiJson(job): ApiJson<LeptonJob>,
) -> AppResult<Response> {
    let row = create_as(&state, &user, job, None).await?;
    let note = AuditNote { target: Some(row.id.clone()), ..AuditNote::default() };
    Ok(note.on((StatusCode::OK, Json(job_view(row))).into_response()))
}

/// Creates `job` as `user` would with `POST /jobs`: named, checked against
/// every rule with the user's secrets and role, and handed to the
/// scheduler. `rerun_of`: the job whose failed indexes this one reruns.
pub async fn create_as(
    state: &AppState,
    user: &CurrentUser,
    mut job: LeptonJob,
    rerun_of: Option<String>,
) -> AppResult<JobRow> {
    // Lepton clients send the name as the id only; accept either. A job
    // given neither gets a readable name here, the one place names are made
    // (the form shows it on the job's page).
    if job.metadata.name.is_none() {
        job.metadata.name = job.metadata.id.clone();
    }
    if job.metadata.name.is_none() {
        let name = jobdeck_core::naming::random_readable_name(state.config.job_name_max_length)
            .ok_or_else(|| AppError::internal("the system's random source cannot be read"))?;
        job.metadata.name = Some(name);
    }
    jobdeck_core::spec::apply_workspace_defaults(&mut job.spec, &state.config);
    let secrets = state.store.secrets_visible_to(user.name.clone()).await?;
    let context = validation_context_with(state, &user.name, user.role, &secrets).await?;
    let mut errors = jobdeck_api::validate_job_in(&job, &context);
    // The status is the server's: what a client sends there is ignored, but
    // a state no job can be in is a body that does not follow the schema
    // (the wire type reads unknown states as `UNK` only so that old clients
    // survive new states in answers).
    if job.state() == Some(JobState::Unknown) {
        merge(
            &mut errors,
            FieldErrors::from([(
                "status.state".to_string(),
                vec!["is not a job state; the server sets a job's status, so leave it out".to_string()],
            )]),
        );
    }
    merge(&mut errors, crate::http::secrets::pin_secret_owners(&mut job.spec, &user.name, &secrets));
    merge(&mut errors, state.executor.check_spec(&job.spec));
    // Whether the job can ever fit this server is a question about a valid
    // job: asked of an out-of-range count it would only add a second message
    // about the number the user must change anyway.
    // A job that gives requirements instead of a shape gets the shape they
    // choose now, written into its spec, so a later change of the
    // configuration does not move it.
    let mut shape_choice = None;
    if errors.is_empty() {
        if let Some((name, why)) = jobdeck_core::spec::shape_chosen_by_requirements(&job.spec, &state.config) {
            job.spec.resource_shape = Some(name);
            shape_choice = Some(why);
        }
    }
    let resolved = if errors.is_empty() {
        match ResolvedSpec::resolve(&job.spec, &state.config) {
            Ok(resolved) => Some(resolved),
            Err(more) => {
                merge(&mut errors, more);
                None
            }
        }
    } else {
        None
    };
    let Some(resolved) = resolved.filter(|_| errors.is_empty()) else {
        return Err(AppError::Validation(errors));
    };
    let name = job.metadata.name.clone().unwrap_or_default();
    let allowed_groups = job.spec.node_groups().to_vec();
    let row = JobRow {
        // The scheduler draws the id's suffix.
        id: String::new(),
        name,
        created_by: user.name.clone(),
        visibility: job.visibility(),
        created_at: now_millis(),
        metadata: StoredMetadata::from(&job.metadata),
        spec: job.spec,
        priority: resolved.priority,
        node_groups: allowed_groups,
        rerun_of,
        // The scheduler gives the job its first state.
        runtime: JobRuntime::default(),
        logs: Default::default(),
    };
    Ok(state.scheduler.create(NewJob { row, resolved, shape_choice }, &user.name).await?)
}

/// A job `user` may see, by its id or, as Lepton clients also address jobs,
/// by its name when exactly one job of that name is visible to them (409
/// naming the candidates when several are); the same not-found for missing
/// and hidden.
pub async fn visible_job(state: &AppState, user: &CurrentUser, id_or_name: &str) -> AppResult<JobRow> {
    if let Some(row) = state.store.job_visible_to(id_or_name.to_string(), user.name.clone()).await? {
        return Ok(row);
    }
    const CANDIDATES_SHOWN: i64 = 10;
    let mut named =
        state.store.jobs_named_visible_to(id_or_name.to_string(), user.name.clone(), CANDIDATES_SHOWN + 1).await?;
    match named.len() {
        0 => Err(AppError::NotFound(format!("job '{id_or_name}' not found"))),
        1 => Ok(named.remove(0)),
        n => {
            let ids: Vec<&str> = named.iter().take(CANDIDATES_SHOWN as usize).map(|r| r.id.as_str()).collect();
            let more = if n as i64 > CANDIDATES_SHOWN { ", …" } else { "" };
            Err(AppError::Conflict(format!(
                "several jobs are named '{id_or_name}'; use one of their ids: {}{more}",
                ids.join(", ")
            )))
        }
    }
}

async fn get_job(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> AppResult<Json<LeptonJob>> {
    let mut mode = QueryMode::AliveAndArchive;
    for (key, value) in query_pairs(raw.as_deref()) {
        if key == "job_query_mode" {
            mode = parse_query_mode(&value)?;
        }
    }
    let row = visible_job(&state, &user, &id).await?;
    let archived = row.runtime.state == JobState::Archived;
    let hidden = match mode {
        QueryMode::AliveOnly => archived,
        QueryMode::ArchiveOnly => !archived,
        QueryMode::AliveAndArchive => false,
    };
    if hidden {
        return Err(AppError::NotFound(format!("job '{id}' not found")));
    }
    let reruns = crate::http::rerun::RerunLinks::of(&state, &user, &row).await?;
    let log_retention = log_retention(&state, &row);
    let mut job = job_view(row);
    add_queue_standing(&state, &mut job).await?;
    reruns.add_to(&mut job);
    if let Some(status) = job.status.as_mut() {
        status.log_retention = log_retention;
    }
    Ok(Json(job))
}

/// When a finished job's logs go, or went, and by which rule
/// (`status.log_retention`); `None` while it has not finished.
pub fn log_retention(state: &AppState, row: &JobRow) -> Option<LogRetention> {
    let seconds = |ms: i64| ms.div_euclid(1000);
    if let Some(removed_at) = row.logs.removed_at {
        let policy = row.logs.removed_by.unwrap_or_default();
        return Some(LogRetention { policy, remove_at: None, removed_at: Some(seconds(removed_at)) });
    }
    let (finished, expire_at) = (row.runtime.completed_at?, row.logs.expire_at?);
    let rule = *state.log_retention.borrow();
    let (at, policy) = rule.removal(finished, expire_at);
    Some(LogRetention { policy, remove_at: Some(seconds(at)), removed_at: None })
}

/// Where a queued job stands, from the scheduler — its place in the queue
/// and what would let it start — as `GET /jobs/{id}` shows it (and the
/// event stream's messages of a followed job).
pub async fn add_queue_standing(state: &AppState, job: &mut LeptonJob) -> AppResult<()> {
    let id = job.id().to_string();
    if let Some(status) = job.status.as_mut().filter(|s| s.state == Some(JobState::Queueing)) {
        if let Some(standing) = state.scheduler.queue_standing(&id).await? {
            status.queue_position = Some(standing.position);
            status.start_suggestions = standing.suggestions;
            status.start_estimate = standing.estimate;
        }
    }
    Ok(())
}

/// Whether `user` may stop, start or delete `row`: the contract's one rule
/// (its creator, and an admin for public jobs; a viewer never).
pub fn may_change(user: &CurrentUser, row: &JobRow) -> bool {
    jobdeck_api::may_change_job(&user.name, user.role, &row.created_by, row.visibility)
}

/// A job the caller may see and change: 404 when hidden, 403 when visible
/// but someone else's.
pub async fn changeable_job(state: &AppState, user: &CurrentUser, id: &str) -> AppResult<JobRow> {
    let row = visible_job(state, user, id).await?;
    if !may_change(user, &row) {
        return Err(AppError::Forbidden(format!(
            "job '{id}' belongs to {}; only its creator, or an admin when it is public, can change it",
            row.created_by
        )));
    }
    Ok(row)
}

async fn patch_job(
    State(state): State<AppState>,
    user: CurrentUser,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<serde_json::Value>,
) -> AppResult<Response> {
    let patch = parse_patch(&body)?;
    let mut row = changeable_job(&state, &user, &id).await?;
    let mut action = "job.update";
    if let Some(envs) = patch.envs {
        row = replace_secret_refs(&state, &user, row, envs).await?;
        action = "job.secrets";
    }
    if let Some(stopped) = patch.stopped {
        let (command, stop_or_start) =
            if stopped { (Command::Stop, "job.stop") } else { (Command::Start, "job.start") };
        row = state.scheduler.command(&row.id, command, &user.name).await?;
        action = stop_or_start;
    }
    let note = AuditNote { action: Some(action), target: Some(row.id.clone()), ..AuditNote::default() };
    Ok(note.on(Json(job_view(row)).into_response()))
}

/// Points the job's variables at other secrets: only their references may
/// change (`check_envs_change`), and the secrets must be ones the job's
/// creator may use, as when it was created (its secrets resolve as theirs).
async fn replace_secret_refs(
    state: &AppState,
    user: &CurrentUser,
    row: JobRow,
    envs: Vec<jobdeck_api::EnvVar>,
) -> AppResult<JobRow> {
    let mut errors = check_envs_change(row.spec.envs(), &envs);
    if !errors.is_empty() {
        return Err(AppError::Validation(errors));
    }
    let creator = row.created_by.clone();
    let secrets = state.store.secrets_visible_to(creator.clone()).await?;
    // Only the variables' rules are kept below, which no role changes.
    let context = validation_context_with(state, &creator, Role::Viewer, &secrets).await?;
    // A client that read the job and changed a reference may have left the
    // old secret's owner beside the new name: that owner is dropped, so the
    // new name is pinned by the usual rule.
    let mut envs = envs;
    for (new, old) in envs.iter_mut().zip(row.spec.envs()) {
        let (Some(to), Some(from)) = (new.value_from.as_mut(), old.value_from.as_ref()) else { continue };
        if to.secret_name_ref != from.secret_name_ref && to.secret_owner == from.secret_owner {
            to.secret_owner = None;
        }
    }
    let mut job = job_view(row.clone());
    job.spec.envs = Some(envs);
    // Only the variables' rules: a rule added since the job was created
    // must not refuse a change of its secrets.
    errors = jobdeck_api::validate_job_in(&job, &context);
    errors.retain(|path, _| path.starts_with("spec.envs"));
    merge(&mut errors, crate::http::secrets::pin_secret_owners(&mut job.spec, &creator, &secrets));
    // An admin changing someone's public job may point it only at secrets
    // they may use as well: the job's logs, which they can read, could show
    // the value of any secret of the creator's.
    if errors.is_empty() && user.name != creator {
        let callers = state.store.secrets_visible_to(user.name.clone()).await?;
        for (i, (new, old)) in job.spec.envs().iter().zip(row.spec.envs()).enumerate() {
            let Some(to) = new.value_from.as_ref().filter(|_| new.value_from != old.value_from) else { continue };
            let usable = callers
                .iter()
                .any(|s| Some(&s.name) == to.secret_name_ref.as_ref() && Some(&s.owner) == to.secret_owner.as_ref());
            if !usable {
                errors.entry(format!("spec.envs[{i}].value_from.secret_name_ref")).or_default().push(format!(
                    "must be a secret you may use as well as {creator}: the job's logs could show its value"
                ));
            }
        }
    }
    if !errors.is_empty() {
        return Err(AppError::Validation(errors));
    }
    let envs = job.spec.envs.unwrap_or_default();
    Ok(state.scheduler.replace_secret_refs(&row.id, envs, &user.name).await?)
}

async fn delete_job(State(state): State<AppState>, user: CurrentUser, Path(id): Path<String>) -> AppResult<Response> {
    let job = changeable_job(&state, &user, &id).await?;
    let row = state.scheduler.command(&job.id, Command::Delete, &user.name).await?;
    let note = AuditNote { target: Some(job.id), ..AuditNote::default() };
    Ok(note.on(Json(job_view(row)).into_response()))
}

/// The wire form of a stored job. Write-only fields (the registry password)
/// are left out.
pub fn job_view(row: JobRow) -> LeptonJob {
    let stored = row.metadata;
    let mut spec = row.spec;
    spec.container.registry_password = None;
    let visibility = row.visibility;
    let r = row.runtime;
    let job_name = row.id.clone();
    LeptonJob {
        metadata: Metadata {
            id: Some(row.id),
            name: Some(row.name),
            created_at: Some(row.created_at),
            created_by: Some(row.created_by.clone()),
            owner: Some(row.created_by),
            visibility: Some(visibility),
            labels: stored.labels,
            annotations: stored.annotations,
            ..Metadata::default()
        },
        spec,
        status: Some(JobStatus {
            // Lepton puts the job's id (its name and a random suffix) here,
            // and its clients address the job's sub-resources with it.
            job_name: Some(job_name),
            state: Some(r.state),
            ready: r.ready,
            active: r.active,
            failed: r.failed,
            succeeded: r.succeeded,
            creation_time: Some(row.created_at / 1000),
            // The first whole second after the job completed: Lepton's
            // clients ask for a finished job's logs from its creation second
            // to this one, end excluded, so even a job that ran within one
            // second has a range that holds every line it wrote.
            completion_time: r.completed_at.map(|t| t / 1000 + 1),
            reason: r.reason,
            message: r.message,
            gpu_utilization: None,
            gpu_idle: false,
            queue_position: None,
            start_suggestions: Vec::new(),
            start_estimate: None,
            // Set where the caller's sight of the original is known
            // (`rerun::add_reruns`).
            rerun_of: None,
            reruns: Vec::new(),
            rerun_indexes: Vec::new(),
            // Set where the config is at hand (`log_retention`).
            log_retention: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_queries_are_parsed() {
        let f = parse_list_query(
            "me".into(),
            Some("q=train&status=run&status=Queueing&node_groups=gpu&created_by=al&node_group=a,b&creator=bob&job_query_mode=alive_and_archive&page=2&page_size=500&sort=name&order=asc&query=team%3Dnlp,x"),
        )
        .unwrap();
        assert_eq!(f.q.as_deref(), Some("train"));
        assert_eq!(f.states, [JobState::Running, JobState::Queueing]);
        assert_eq!(f.node_group_patterns, ["gpu"]);
        assert_eq!(f.created_by_prefixes, ["al"]);
        assert_eq!(f.node_groups, ["a", "b"]);
        assert_eq!(f.created_by, ["bob"]);
        assert_eq!(f.mode, QueryMode::AliveAndArchive);
        assert_eq!((f.page, f.page_size), (2, 500));
        assert_eq!((f.sort, f.ascending), (SortKey::Name, true));
        use jobdeck_api::LabelCondition;
        assert_eq!(f.labels, [LabelCondition::Equals("team".into(), "nlp".into()), LabelCondition::Exists("x".into())]);
    }

    #[test]
    fn bad_list_queries_name_the_parameter() {
        let cases = [
            ("page=0", "page must be 1 or more"),
            ("page_size=501", "page_size must be between 1 and 500"),
            ("page=x", "page must be a whole number, not 'x'"),
            ("status=exploding", "status 'exploding' matches no job state"),
            ("job_query_mode=all", "job_query_mode must be alive_only, archive_only or alive_and_archive, not 'all'"),
            ("sort=size", "sort must be created_at, name or state, not 'size'"),
            ("order=up", "order must be asc or desc, not 'up'"),
            ("query=a%22b", "query: 'a\"b' is not a valid label condition"),
            ("q=a%00b", "q must not contain control characters"),
            ("q=%1b%5b31m", "q must not contain control characters"),
            ("query=a%00b", "query must not contain control characters"),
            ("query=team%3Da%00", "query must not contain control characters"),
        ];
        for (query, expected) in cases {
            match parse_list_query("me".into(), Some(query)) {
                Err(AppError::BadRequest(message)) => assert!(message.starts_with(expected), "{query}: {message}"),
                other => panic!("{query}: {other:?}"),
            }
        }
    }

    #[test]
    fn status_prefixes_match_every_state_they_start() {
        assert_eq!(matching_states("s").unwrap(), [JobState::Starting, JobState::Stopped, JobState::Stopping]);
        assert_eq!(matching_states("COMPLETED").unwrap(), [JobState::Completed]);
    }
}
