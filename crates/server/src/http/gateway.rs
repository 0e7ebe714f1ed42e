//! Lepton's gateway form of the API: `/api/v2/workspaces/{workspace_id}/…`.
//!
//! Lepton serves every workspace behind one gateway, so programs built on it
//! (the TAO SDK's own HTTP calls) put the workspace id in the path. Jobdeck is
//! one workspace: a request that names it is answered exactly as the same
//! request without the prefix; one that names another workspace gets 404.
//! The path is rewritten before routing, so every route (present and future)
//! has its gateway form and handlers never see the prefix.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::Uri;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::http::error::AppError;

const GATEWAY_PREFIX: &str = "/api/v2/workspaces/";

/// The path a gateway path stands for: `Some(Ok(path))` for this workspace,
/// `Some(Err(id))` for another one, `None` when `path` is no gateway path.
fn direct_path<'a>(path: &'a str, workspace: &str) -> Option<Result<String, &'a str>> {
    let rest = path.strip_prefix(GATEWAY_PREFIX)?;
    let (id, tail) = match rest.find('/') {
        Some(slash) => (&rest[..slash], &rest[slash..]),
        None => (rest, ""),
    };
    Some(if id == workspace { Ok(format!("{}{tail}", jobdeck_api::API_BASE)) } else { Err(id) })
}

/// Middleware: rewrites a gateway path of this workspace to its direct form.
pub async fn workspace_gateway(State(workspace): State<Arc<str>>, mut request: Request, next: Next) -> Response {
    let rewritten = match direct_path(request.uri().path(), &workspace) {
        None => return next.run(request).await,
        Some(Err(other)) => {
            return AppError::NotFound(format!("no workspace '{other}' here; this server is workspace '{workspace}'"))
                .into_response()
        }
        Some(Ok(path)) => path,
    };
    let path_and_query = match request.uri().query() {
        Some(query) => format!("{rewritten}?{query}"),
        None => rewritten,
    };
    let mut parts = request.uri().clone().into_parts();
    parts.path_and_query = match path_and_query.parse() {
        Ok(p) => Some(p),
        Err(_) => return AppError::BadRequest("the request path is not valid".into()).into_response(),
    };
    *request.uri_mut() = match Uri::from_parts(parts) {
        Ok(uri) => uri,
        Err(_) => return AppError::BadRequest("the request path is not valid".into()).into_response(),
    };
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::direct_path;

    #[test]
    fn gateway_paths_map_to_direct_ones_for_this_workspace_only() {
        let cases: [(&str, Option<Result<&str, &str>>); 7] = [
            ("/api/v2/workspaces/ws/jobs", Some(Ok("/api/v2/jobs"))),
            ("/api/v2/workspaces/ws/jobs/a-1/replicas", Some(Ok("/api/v2/jobs/a-1/replicas"))),
            ("/api/v2/workspaces/ws", Some(Ok("/api/v2"))),
            ("/api/v2/workspaces/ws/", Some(Ok("/api/v2/"))),
            ("/api/v2/workspaces/other/jobs", Some(Err("other"))),
            ("/api/v2/workspaces/wsx/jobs", Some(Err("wsx"))),
            ("/api/v2/jobs", None),
        ];
        for (path, expected) in cases {
            let got = direct_path(path, "ws");
            assert_eq!(got.as_ref().map(|r| r.as_ref().map(String::as_str).map_err(|e| *e)), expected, "{path}");
        }
    }
}
