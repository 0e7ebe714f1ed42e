//! The workspace's users as admins see and change them (`/users`, Jobdeck
//! extensions).

use serde::{Deserialize, Serialize};

use crate::decode::Decode;
use crate::Role;

/// One user as `GET /users` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UserInfo {
    pub name: String,
    pub role: Role,
    /// Unix milliseconds.
    pub created_at: i64,
    /// Tokens and console sessions that still sign in.
    pub live_tokens: i64,
    /// Unix milliseconds, to within a minute: the latest use of any of the
    /// user's tokens; `None`: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_seen_at: Option<i64>,
}

/// `GET /users`: every user by name.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UserList {
    pub users: Vec<UserInfo>,
}

/// `PATCH /users/{name}`: the user's new role.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RoleChange {
    pub role: Role,
}

/// A job as a removal names it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobBrief {
    pub id: String,
    pub name: String,
    pub created_by: String,
    pub state: crate::JobState,
}

/// Another user's job that reads one of the removed user's public secrets.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SecretUse {
    pub secret: String,
    pub job: JobBrief,
}

/// `GET /users/{name}/removal`: what removing the user touches, said
/// before it is done.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UserRemoval {
    pub name: String,
    /// Their jobs that hold or wait for resources: stopped by the removal.
    pub active_jobs: Vec<JobBrief>,
    /// Their secrets and pull secrets: deleted by the removal.
    pub secrets: Vec<String>,
    pub image_pull_secrets: Vec<String>,
    /// Other users' jobs that read one of those secrets: they will not
    /// start again without it.
    pub secret_uses: Vec<SecretUse>,
}

/// What becomes of a removed user's jobs that hold or wait for resources
/// (`DELETE /users/{name}?jobs=…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum RemovedUsersJobs {
    /// They are stopped.
    #[default]
    Stop,
    /// They go on, as jobs of the user named by `to`.
    #[serde(rename = "hand-over")]
    HandOver,
}

/// `DELETE /users/{name}`'s answer: what the removal did.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RemovedUser {
    pub name: String,
    /// The ids of the jobs that were asked to stop.
    pub stopped_jobs: Vec<String>,
    /// The ids of the jobs handed over, and to whom.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handed_over_jobs: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handed_to: Option<String>,
    pub revoked_tokens: i64,
    pub deleted_secrets: i64,
    pub deleted_image_pull_secrets: i64,
    /// Other users' jobs that read a deleted secret, as the preview said.
    pub secret_uses: Vec<SecretUse>,
}
