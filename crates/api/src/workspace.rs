//! Workspace-level resources: the workspace itself, shapes and node groups.

use serde::{Deserialize, Serialize};

/// The body of `GET /workspace`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct WorkspaceInfo {
    pub id: String,
    pub name: String,
    /// The server's version (`jobdeck` crate version).
    pub build_version: String,
    /// Extension: the executor kind, `local` or `kubernetes`.
    pub executor: String,
    /// Extension: the user the request's token belongs to.
    pub current_user: String,
    /// Extension: whether logs are collected when a job does not say.
    #[serde(default)]
    pub log_collection_default: bool,
}
