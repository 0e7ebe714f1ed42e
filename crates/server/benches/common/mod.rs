//! What the server's benchmarks share: the real router over a real SQLite
//! file in a temporary directory (process mode, no sampling), a token, and
//! timed requests. Each benchmark uses what it needs of it.

#![allow(dead_code)]

use std::time::Duration;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use http_body_util::BodyExt;
use jobdeck_core::Config;
use jobdeck_server::http::auth;
use jobdeck_server::{app, AppState};
use jobdeck_store::Store;
use tower::ServiceExt;

pub struct Bench {
    pub dir: tempfile::TempDir,
    pub store: Store,
    pub token: String,
    pub router: axum::Router,
    pub scheduler: jobdeck_core::scheduler::SchedulerHandle,
}

impl Bench {
    pub async fn start() -> Bench {
        Bench::start_with(|_| {}).await
    }

    /// [`Bench::start`] with the config changed by `adjust` first.
    pub async fn start_with(adjust: impl FnOnce(&mut Config)) -> Bench {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("jobdeck.db")).unwrap();
        let mut config = Config::for_data_dir(dir.path());
        config.executor.local.mode = jobdeck_core::config::LocalMode::Process;
        config.executor.local.metrics_interval_ms = 0;
        config.supervisor_bin = std::env::var_os("JOBDECK_BIN").map(Into::into);
        adjust(&mut config);
        let token = auth::issue_token(&store, "admin", auth::TokenRequest::api()).await.unwrap().secret;
        let state = AppState::start(store.clone(), config).await.unwrap();
        let scheduler = state.scheduler.clone();
        let router = app(state);
        Bench { dir, store, token, router, scheduler }
    }

    /// `GET uri` as the admin: the status and the body.
    pub async fn get(&self, uri: &str) -> (StatusCode, Vec<u8>) {
        self.send(Method::GET, uri).await
    }

    /// `POST uri` with no body as the admin: the status and the body.
    pub async fn post(&self, uri: &str) -> (StatusCode, Vec<u8>) {
        self.send(Method::POST, uri).await
    }

    async fn send(&self, method: Method, uri: &str) -> (StatusCode, Vec<u8>) {
        let request = Request::builder()
            .method(method)
            .uri(uri)
            .header(header::AUTHORIZATION, format!("Bearer {}", self.token))
            .body(Body::empty())
            .unwrap();
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        (status, response.into_body().collect().await.unwrap().to_bytes().to_vec())
    }

    /// `GET uri` `rounds` times, each answered 200: the median and 99th
    /// percentile, and the last answer.
    pub async fn timed_get(&self, uri: &str, rounds: usize) -> (Duration, Duration, serde_json::Value) {
        let mut took = Vec::with_capacity(rounds);
        let mut last = serde_json::Value::Null;
        for _ in 0..rounds {
            let at = std::time::Instant::now();
            let (status, body) = self.get(uri).await;
            took.push(at.elapsed());
            assert_eq!(status, StatusCode::OK);
            last = serde_json::from_slice(&body).unwrap();
        }
        (percentile(took.clone(), 0.5), percentile(took, 0.99), last)
    }

    /// Creates `job` as the admin; its id.
    pub async fn create_job(&self, job: &serde_json::Value) -> String {
        let request = Request::builder()
            .method(Method::POST)
            .uri("/api/v2/jobs")
            .header(header::AUTHORIZATION, format!("Bearer {}", self.token))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(job.to_string()))
            .unwrap();
        let created = self.router.clone().oneshot(request).await.unwrap().into_body().collect().await.unwrap();
        let created: serde_json::Value = serde_json::from_slice(&created.to_bytes()).unwrap();
        created["metadata"]["id"].as_str().unwrap_or_else(|| panic!("the job was not created: {created}")).to_string()
    }
}

pub fn percentile(mut values: Vec<Duration>, p: f64) -> Duration {
    values.sort();
    values[((values.len() as f64 - 1.0) * p).round() as usize]
}
