//! A test harness: the real router over a real SQLite file in a temporary
//! directory, called in-process with `tower::ServiceExt::oneshot`.

#![allow(dead_code)]

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use http_body_util::BodyExt;
use jobdeck_core::Config;
use jobdeck_server::http::auth;
use jobdeck_server::{app, AppState};
use jobdeck_store::Store;
use serde_json::Value;
use tower::ServiceExt;

pub struct TestApp {
    pub router: axum::Router,
    pub store: Store,
    pub admin_token: String,
    /// The samples the executor took last, shared with the server: a test
    /// adds GPU readings here, as no GPU is on this machine.
    pub metrics_now: jobdeck_core::metrics::Now,
    /// The server's scheduler: a test hands it a time of its own (the
    /// removal of finished jobs' logs), as no test waits days.
    pub scheduler: jobdeck_core::scheduler::SchedulerHandle,
    _dir: tempfile::TempDir,
}

pub struct TestResponse {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: Vec<u8>,
}

impl TestResponse {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

impl TestApp {
    pub async fn new() -> TestApp {
        Self::with_config(|_| {}).await
    }

    pub async fn with_config(adjust: impl FnOnce(&mut Config)) -> TestApp {
        Self::with_stored_jobs(adjust, vec![]).await
    }

    /// A server whose store already holds `jobs` when it starts, as after a
    /// restart (or an upgrade: rows written by an older version).
    pub async fn with_stored_jobs(adjust: impl FnOnce(&mut Config), jobs: Vec<jobdeck_store::JobRow>) -> TestApp {
        Self::with_stored_jobs_changed_by(adjust, jobs, "").await
    }

    /// A server whose store holds `jobs`, changed by the SQL `damage` before
    /// the server starts, as a damaged disk or another release would leave
    /// them.
    pub async fn with_stored_jobs_changed_by(
        adjust: impl FnOnce(&mut Config),
        jobs: Vec<jobdeck_store::JobRow>,
        damage: &str,
    ) -> TestApp {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("jobdeck.db")).unwrap();
        // Secret values are sealed as `jobdeck serve` seals them.
        let key = jobdeck_store::sealing::new_key_text().unwrap();
        store.use_keys(jobdeck_store::sealing::SealingKeys::from_hex(&key, &[]).unwrap());
        for job in jobs {
            store.insert_job(job, vec![]).await.unwrap();
        }
        if !damage.is_empty() {
            change_database(&store, damage);
        }
        let mut config = Config::for_data_dir(dir.path());
        config.supervisor_bin = Some(env!("CARGO_BIN_EXE_jobdeck").into());
        // The API tests run shell commands as processes (container mode has
        // its own tests, `container_mode.rs`) and retry failed replicas at
        // once (the back-off has its own test).
        config.executor.local.mode = jobdeck_core::config::LocalMode::Process;
        config.executor.local.retry_backoff_seconds = 0;
        adjust(&mut config);
        // The admin is made as `jobdeck serve` makes the first one.
        store.ensure_user(auth::FIRST_ADMIN, jobdeck_api::Role::Admin, jobdeck_server::now_millis()).await.unwrap();
        let admin_token = auth::issue_token(&store, auth::FIRST_ADMIN, auth::TokenRequest::api()).await.unwrap().secret;
        let state = AppState::start(store.clone(), config).await.unwrap();
        let metrics_now = state.metrics_now.clone();
        let scheduler = state.scheduler.clone();
        let router = app(state);
        TestApp { router, store, admin_token, metrics_now, scheduler, _dir: dir }
    }

    /// A token for `user`, made a member if new.
    pub async fn token_for(&self, user: &str) -> String {
        auth::issue_token(&self.store, user, auth::TokenRequest::api()).await.unwrap().secret
    }

    /// A token for `user`, who has `role` (made or changed to it).
    pub async fn token_with_role(&self, user: &str, role: jobdeck_api::Role) -> String {
        let token = self.token_for(user).await;
        let changed = self.store.set_user_role(user, role).await.unwrap();
        assert!(matches!(changed, jobdeck_store::RoleChanged::Changed(_)), "{changed:?}");
        token
    }

    pub async fn request(
        &self,
        method: Method,
        uri: &str,
        token: Option<&str>,
        body: Option<(&str, Vec<u8>)>,
    ) -> TestResponse {
        let mut builder = Request::builder().method(method).uri(uri);
        if let Some(token) = token {
            builder = builder.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = match body {
            Some((content_type, bytes)) => {
                builder.header(header::CONTENT_TYPE, content_type).body(Body::from(bytes)).unwrap()
            }
            None => builder.body(Body::empty()).unwrap(),
        };
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.into_body().collect().await.unwrap().to_bytes().to_vec();
        TestResponse { status, headers, body }
    }

    pub async fn get(&self, uri: &str) -> TestResponse {
        self.request(Method::GET, uri, Some(&self.admin_token), None).await
    }

    pub async fn post_json(&self, uri: &str, token: &str, body: &Value) -> TestResponse {
        self.request(Method::POST, uri, Some(token), Some(("application/json", serde_json::to_vec(body).unwrap())))
            .await
    }
}

/// The longest any test waits for a job to reach a state: generous, since
/// the machine running the tests may be busy.
pub const PATIENCE: std::time::Duration = std::time::Duration::from_secs(90);

impl TestApp {
    pub fn data_dir(&self) -> &std::path::Path {
        self._dir.path()
    }

    /// A gate a replica's script waits at until the test opens it: returns
    /// the shell words that wait and the file whose creation opens it. Tests
    /// hold a replica in a state this way instead of betting on a `sleep`.
    pub fn gate(&self, name: &str) -> (String, std::path::PathBuf) {
        let file = self.data_dir().join(format!("gate-{name}"));
        // A gate the test never opened ends with its data directory (the
        // test is over), so no replica outlives its test.
        let waiting = format!(
            "while [ ! -e '{}' ]; do [ -d '{}' ] || exit 3; sleep 0.05; done",
            file.display(),
            self.data_dir().display()
        );
        (waiting, file)
    }

    pub async fn call(&self, method: Method, uri: &str, token: &str, body: Option<&Value>) -> TestResponse {
        let body = body.map(|b| ("application/json", serde_json::to_vec(b).unwrap()));
        self.request(method, uri, Some(token), body).await
    }

    /// Creates a job as `token`'s user; returns its id.
    pub async fn create_job(&self, token: &str, job: &Value) -> String {
        let res = self.post_json("/api/v2/jobs", token, job).await;
        assert_eq!(res.status, StatusCode::OK, "create failed: {}", res.text());
        res.json()["metadata"]["id"].as_str().unwrap().to_string()
    }

    pub async fn job(&self, id: &str) -> Value {
        let token = self.admin_token.clone();
        self.job_as(&token, id).await
    }

    /// The job as `token`'s user sees it.
    pub async fn job_as(&self, token: &str, id: &str) -> Value {
        let res = self.request(Method::GET, &format!("/api/v2/jobs/{id}"), Some(token), None).await;
        assert_eq!(res.status, StatusCode::OK, "{}", res.text());
        res.json()
    }

    /// Every attempt of the job's replicas (`?attempts=all`).
    pub async fn replicas(&self, id: &str) -> Vec<Value> {
        let res = self.get(&format!("/api/v2/jobs/{id}/replicas?attempts=all")).await;
        assert_eq!(res.status, StatusCode::OK, "{}", res.text());
        res.json().as_array().unwrap().clone()
    }

    pub async fn events(&self, id: &str) -> Vec<Value> {
        self.get(&format!("/api/v2/jobs/{id}/events")).await.json().as_array().unwrap().clone()
    }

    /// The log as it is now: `follow=false`, because a plain request follows
    /// a running attempt to its end (as Lepton's does) and tests poll with this.
    pub async fn log(&self, id: &str, replica: &str) -> String {
        let res = self.get(&format!("/api/v2/jobs/{id}/replicas/{replica}/log?follow=false")).await;
        assert_eq!(res.status, StatusCode::OK, "{}", res.text());
        res.text()
    }

    /// Polls the job until `done` holds for it, failing after [`PATIENCE`]
    /// with the last state seen.
    pub async fn wait_job(&self, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let token = self.admin_token.clone();
        self.wait_job_as(&token, id, what, done).await
    }

    /// [`TestApp::wait_job`] as `token`'s user (for private jobs).
    pub async fn wait_job_as(&self, token: &str, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = std::time::Instant::now() + PATIENCE;
        loop {
            let job = self.job_as(token, id).await;
            if done(&job) {
                return job;
            }
            if std::time::Instant::now() > deadline {
                let events =
                    self.request(Method::GET, &format!("/api/v2/jobs/{id}/events"), Some(token), None).await.text();
                panic!("job {id} never became {what}; last seen: {}\nevents: {events}", job["status"]);
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    /// Polls the job until its state is `state`.
    pub async fn wait_state(&self, id: &str, state: &str) -> Value {
        self.wait_job(id, state, |j| j["status"]["state"] == state).await
    }

    /// [`TestApp::wait_state`] as `token`'s user (for private jobs).
    pub async fn wait_state_as(&self, token: &str, id: &str, state: &str) -> Value {
        self.wait_job_as(token, id, state, |j| j["status"]["state"] == state).await
    }

    /// Polls any condition with the same patience.
    pub async fn wait_until<F, Fut>(&self, what: &str, mut check: F)
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let deadline = std::time::Instant::now() + PATIENCE;
        while !check().await {
            assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
}

/// A stored job that completed at `completed_at` (Unix ms), as an older
/// release left it.
pub fn finished_row(id: &str, completed_at: i64) -> jobdeck_store::JobRow {
    let mut row = jobdeck_store::JobRow {
        id: id.into(),
        name: id.split('-').next().unwrap_or(id).into(),
        created_by: jobdeck_server::http::auth::FIRST_ADMIN.into(),
        created_at: completed_at - 60_000,
        ..Default::default()
    };
    row.runtime.state = jobdeck_api::JobState::Completed;
    row.runtime.completed_at = Some(completed_at);
    row
}

/// A job running `script` under /bin/sh.
pub fn sh_job(name: &str, script: &str) -> Value {
    serde_json::json!({
        "metadata": {"name": name},
        "spec": {
            "resource_shape": "cpu.small",
            "container": {"image": "busybox", "command": ["/bin/sh", "-c", script]}
        }
    })
}

/// A config with one node group `local` of `cpus` CPUs and 16 GiB, the
/// shape `cpu.small` (1 CPU, 1 GiB) and a short grace period.
pub fn small_cluster(cpus: f64) -> impl FnOnce(&mut jobdeck_core::Config) {
    move |config: &mut jobdeck_core::Config| {
        config.node_groups = vec![jobdeck_core::config::NodeGroupConfig {
            name: "local".into(),
            cpu: cpus,
            memory_mb: 16384,
            gpus: 0,
            gpu_product: None,
            nodes: None,
            node_names: Some(vec!["node-a".into()]),
            node_selector: Default::default(),
            privileged_roles: Vec::new(),
        }];
        config.shapes = vec![jobdeck_core::config::ShapeConfig {
            name: "cpu.small".into(),
            cpu: 1.0,
            memory_mb: 1024,
            gpus: 0,
            accelerator_type: None,
            accelerator_memory_mb: None,
            compute_capability: None,
            ephemeral_storage_gb: None,
            description: None,
        }];
        config.executor.local.grace_period_seconds = 2;
    }
}

/// Runs `sql` on the store's database file through a connection of its own,
/// as a damaged disk or another release would change it: the store's API
/// writes only rows it can read back.
fn change_database(store: &Store, sql: &str) {
    let connection = rusqlite::Connection::open(store.path()).unwrap();
    connection.execute_batch(sql).unwrap();
}

/// A public job of the admin's, `<name>-aaaaa`, created `age_s` seconds ago
/// and stored as queued with `spec`, as a server that stopped with it
/// waiting leaves it.
pub fn stored_queued_job(name: &str, spec: Value, age_s: i64) -> jobdeck_store::JobRow {
    let now = jobdeck_server::now_millis();
    jobdeck_store::JobRow {
        id: format!("{name}-aaaaa"),
        name: name.into(),
        created_by: "admin".into(),
        visibility: jobdeck_api::Visibility::Public,
        created_at: now - age_s * 1000,
        metadata: Default::default(),
        spec: serde_json::from_value(spec).unwrap(),
        priority: 4000,
        node_groups: Vec::new(),
        rerun_of: None,
        runtime: jobdeck_store::JobRuntime {
            state: jobdeck_api::JobState::Queueing,
            reason: Some("Queued".into()),
            queued_at: Some(now),
            ..jobdeck_store::JobRuntime::default()
        },
        logs: Default::default(),
    }
}

/// The validation context the console builds from `GET /shapes` and `GET
/// /dedicated-node-groups` (the rest left empty), as the admin sees them.
pub async fn console_context(app: &TestApp) -> jobdeck_api::ValidationContext {
    let get = |path: &'static str| async move { app.call(Method::GET, path, &app.admin_token, None).await.json() };
    jobdeck_api::ValidationContext {
        shapes: serde_json::from_value::<Vec<jobdeck_api::Shape>>(get("/api/v2/shapes").await)
            .unwrap()
            .iter()
            .map(Into::into)
            .collect(),
        node_groups: serde_json::from_value::<Vec<jobdeck_api::NodeGroup>>(get("/api/v2/dedicated-node-groups").await)
            .unwrap()
            .iter()
            .map(Into::into)
            .collect(),
        ..Default::default()
    }
}
