//! A test harness: the real router over a real SQLite file in a temporary
//! directory, called in-process with `tower::ServiceExt::oneshot`.

#![allow(dead_code)]

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use http_body_util::BodyExt;
use jobdeck_server::{app, auth, AppState, Config, Store};
use serde_json::Value;
use tower::ServiceExt;

pub struct TestApp {
    pub router: axum::Router,
    pub store: Store,
    pub admin_token: String,
    _dir: tempfile::TempDir,
}

pub struct TestResponse {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: Vec<u8>,
}

impl TestResponse {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!("body is not JSON ({e}): {}", String::from_utf8_lossy(&self.body))
        })
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
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("jobdeck.db")).unwrap();
        let mut config = Config::for_data_dir(dir.path());
        adjust(&mut config);
        let admin_token = auth::issue_token(&store, "admin").await.unwrap();
        let router = app(AppState::new(store.clone(), config));
        TestApp {
            router,
            store,
            admin_token,
            _dir: dir,
        }
    }

    pub async fn token_for(&self, user: &str) -> String {
        auth::issue_token(&self.store, user).await.unwrap()
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
            Some((content_type, bytes)) => builder
                .header(header::CONTENT_TYPE, content_type)
                .body(Body::from(bytes))
                .unwrap(),
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
        self.request(
            Method::POST,
            uri,
            Some(token),
            Some(("application/json", serde_json::to_vec(body).unwrap())),
        )
        .await
    }
}
