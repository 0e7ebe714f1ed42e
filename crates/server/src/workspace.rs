//! `GET /workspace`: who and what this server is.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use jobdeck_api::WorkspaceInfo;

use crate::auth::CurrentUser;
use crate::AppState;

pub fn routes() -> Router<AppState> {
    Router::new().route("/workspace", get(workspace))
}

async fn workspace(State(state): State<AppState>, user: CurrentUser) -> Json<WorkspaceInfo> {
    Json(WorkspaceInfo {
        id: state.config.workspace_name.clone(),
        name: state.config.workspace_name.clone(),
        build_version: env!("CARGO_PKG_VERSION").to_string(),
        executor: state.config.executor.clone(),
        current_user: user.name,
        log_collection_default: state.config.log_collection_default,
    })
}
