//! The Jobdeck control plane.
//!
//! `app(state)` builds the whole HTTP surface (the `/api/v2` REST API and the
//! console's static files); tests call it directly. Handlers live in one module
//! per resource, storage in `store`, and every failure goes through
//! `http::error::AppError`, which maps to a status code and a JSON body.

pub mod cli;
pub mod http;
pub mod notify;

use std::sync::Arc;

use axum::Router;

use jobdeck_core::retention::LogRetentionRule;
use jobdeck_core::{config, executor, metrics, scheduler, Config};
use jobdeck_executors::{kubernetes, local, slurm};
use jobdeck_store::logs::LogStore;
use jobdeck_store::Store;

/// Everything a request handler may need, cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub config: Arc<Config>,
    pub logs: LogStore,
    pub executor: Arc<dyn executor::Executor>,
    pub scheduler: scheduler::SchedulerHandle,
    /// Each running job's newest GPU use, for the list.
    pub metrics_now: metrics::Now,
    /// When each token's last use was last written.
    pub tokens_used: http::auth::LastUsed,
    /// The requests and log follows each user holds now.
    pub user_limits: http::request_limits::UserLimits,
    /// Sign-in through the identity provider, when `[auth.oidc]` is set.
    pub single_sign_on: Option<Arc<http::single_sign_on::SingleSignOn>>,
    /// The audit log's writer.
    pub audit: http::audit::AuditLog,
    /// When finished jobs' logs go, as the scheduler last set it.
    pub log_retention: tokio::sync::watch::Receiver<LogRetentionRule>,
}

impl AppState {
    /// Builds the executor the config names, resumes the jobs the store
    /// holds and starts the scheduler. Must run inside a tokio runtime.
    pub async fn start(store: Store, config: Config) -> Result<Self, StartError> {
        let config = Arc::new(config);
        let single_sign_on = match (&config.auth.oidc, &config.auth.public_url) {
            (Some(oidc), Some(public_url)) => Some(Arc::new(
                http::single_sign_on::SingleSignOn::from_config(oidc, public_url).map_err(StartError::SingleSignOn)?,
            )),
            _ => None,
        };
        let logs = LogStore::new(&config.data_dir);
        let (host_tx, host_rx) = tokio::sync::mpsc::unbounded_channel();
        let metrics_now = metrics::Now::default();
        let host = executor::ExecutorHost::new(store.clone(), logs.clone(), host_tx).with_metrics(metrics_now.clone());
        // The executor the config names: the one place that knows them all.
        let executor: Arc<dyn executor::Executor> = match config.executor.kind {
            config::ExecutorKind::Local => Arc::new(local::LocalExecutor::new(host, &config)),
            config::ExecutorKind::Kubernetes => {
                Arc::new(kubernetes::KubernetesExecutor::connect(config.clone(), host).await?)
            }
            config::ExecutorKind::Slurm => Arc::new(slurm::SlurmExecutor::from_config(&config, host)?),
        };
        for note in executor.notes() {
            tracing::info!("executor: {note}");
        }
        if let Some(warning) = executor.isolation_warning() {
            tracing::warn!("{warning}");
        }
        let upgraded_at = store.logs_removal_upgraded_at().await.map_err(StartError::Store)?;
        let console_minimum = store.console_minimum_retention().await.map_err(StartError::Store)?;
        let log_retention = LogRetentionRule::new(&config.logs, upgraded_at, console_minimum);
        let retimed = store
            .use_log_retention(log_retention.minimum_ms, log_retention.maximum_ms)
            .await
            .map_err(StartError::Store)?;
        if retimed > 0 {
            tracing::info!(jobs = retimed, "finished jobs' logs timed by the log retention in [logs]");
        }
        if let Some(until) = log_retention.paused_until.filter(|until| *until > jobdeck_store::now_millis()) {
            tracing::warn!(
                paused_until_unix_ms = until,
                "this data directory was made by a release that kept logs forever: no job's logs are removed \
                 before the grace period ends ([logs] upgrade_grace; GET /workspace shows when)"
            );
        }
        let (log_retention_published, log_retention) = tokio::sync::watch::channel(log_retention);
        let scheduler = scheduler::start(
            store.clone(),
            config.clone(),
            executor.clone(),
            logs.clone(),
            host_rx,
            log_retention_published,
        )
        .await
        .map_err(StartError::Resume)?;
        let user_limits = http::request_limits::UserLimits::new(&config.limits);
        http::audit::spawn_pruning(store.clone(), config.audit.retention);
        let audit = http::audit::AuditLog::start(store.clone(), config.audit.anonymous_per_minute);
        notify::spawn(store.clone(), logs.clone(), metrics_now.clone(), config.clone());
        Ok(Self {
            store,
            config,
            logs,
            executor,
            scheduler,
            metrics_now,
            tokens_used: http::auth::LastUsed::default(),
            user_limits,
            single_sign_on,
            audit,
            log_retention,
        })
    }

    /// What every job must satisfy on this server beyond the contract's own
    /// rules: the executor's needs, the workspace's name limit and where a
    /// user of `role` may run privileged containers. Published in `GET
    /// /workspace`, so the console checks what the server checks.
    pub fn job_requirements(&self, role: jobdeck_api::Role) -> jobdeck_api::JobRequirements {
        let privileged_node_groups = if self.executor.runs_privileged_containers() {
            let groups = self.config.node_groups.iter();
            groups.filter(|g| g.privileged_roles.contains(&role)).map(|g| g.name.clone()).collect()
        } else {
            Vec::new()
        };
        jobdeck_api::JobRequirements {
            job_name_max_length: Some(self.config.job_name_max_length),
            privileged_node_groups,
            ..self.executor.requirements()
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The Slurm executor's settings.
    #[error(transparent)]
    Settings(#[from] config::ConfigError),
    /// The Kubernetes executor's settings or cluster.
    #[error(transparent)]
    Kubernetes(#[from] kubernetes::ConnectError),
    /// `[auth.oidc]` names a client secret that cannot be read.
    #[error("{0}")]
    SingleSignOn(String),
    /// The store could not be read back into the scheduler.
    #[error("cannot resume the jobs")]
    Resume(#[source] scheduler::SchedulerError),
    /// The store could not be read.
    #[error("cannot read the store")]
    Store(#[source] jobdeck_store::StoreError),
}

/// One API route: its path under `/api/v2` and its handlers by method.
pub type Route = (&'static str, axum::routing::MethodRouter<AppState>);

/// Every route of the API, from every resource module. The router is built
/// from this list and nothing else, so a test can hold the OpenAPI document
/// against it.
pub fn api_routes() -> Vec<Route> {
    [
        http::workspace::routes(),
        http::cluster::routes(),
        http::convert::routes(),
        http::jobs::routes(),
        http::replicas::routes(),
        http::queue::routes(),
        http::stream::routes(),
        http::lepton_logs::routes(),
        http::merged_log::routes(),
        http::failure_analysis::routes(),
        http::metrics::routes(),
        http::secrets::routes(),
        http::image_pull_secrets::routes(),
        http::sessions::routes(),
        http::users::routes(),
        http::invitations::routes(),
        http::quotas::routes(),
        http::templates::routes(),
        http::notifications::routes(),
        http::audit::routes(),
        http::single_sign_on::routes(),
        http::openapi::routes(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The paths of [`api_routes`], as written there (`/jobs/{id}`).
pub fn api_paths() -> Vec<&'static str> {
    api_routes().into_iter().map(|(path, _)| path).collect()
}

/// The whole application: the API under `/api/v2` and, when a console
/// directory is configured, the console everywhere else.
pub fn app(state: AppState) -> Router {
    // Each route answers only the roles the authorization table lets in
    // (`http/access.rs`); a method a route lacks still gets the JSON 405.
    let guarded = |path: &'static str, handlers: axum::routing::MethodRouter<AppState>| {
        let guard = http::access::Guard { state: state.clone(), path };
        handlers.route_layer(axum::middleware::from_fn_with_state(guard, http::access::authorize))
    };
    let api = api_routes()
        .into_iter()
        .fold(Router::new(), |router, (path, handlers)| router.route(path, guarded(path, handlers)))
        .fallback(http::error::api_route_not_found)
        .method_not_allowed_fallback(http::error::api_method_not_allowed)
        .layer(axum::extract::DefaultBodyLimit::max(http::error::MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn(http::error::refuse_oversized_bodies))
        // Outside the body checks, so it runs before them: who sent a body
        // of unknown length is asked before the layer above reads it, and
        // every request counts against its user's bounds.
        .layer(axum::middleware::from_fn_with_state(state.clone(), http::request_limits::bound_request))
        // Outside every bound, so a request they refuse is logged too.
        .layer(http::request_log::layer());

    // `/api/v2/` with its slash is the API's root too: nesting matches the
    // root only without it, and clients write either.
    let root_with_slash = guarded("/", axum::routing::get(http::workspace::workspace_record))
        .fallback(http::error::api_method_not_allowed);
    let router =
        Router::new().nest(jobdeck_api::API_BASE, api).route(&format!("{}/", jobdeck_api::API_BASE), root_with_slash);
    let router = match state.config.console_dir.clone() {
        Some(dir) => http::console::serve(router, &dir),
        None => router,
    };
    let workspace: Arc<str> = state.config.workspace_name.as_str().into();
    let router = router.layer(tower_http::compression::CompressionLayer::new().br(true).gzip(true)).with_state(state);
    // The gateway form is rewritten before the router above sees the path,
    // so this outer router routes nothing itself.
    Router::new()
        .fallback_service(router)
        .layer(axum::middleware::from_fn_with_state(workspace, http::gateway::workspace_gateway))
}

/// Milliseconds since the Unix epoch, the store's clock: every stamp the
/// server writes is in it.
pub use jobdeck_store::now_millis;
