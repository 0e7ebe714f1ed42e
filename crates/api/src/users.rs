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
