//! The API of people and their access, as the team pages call it: users
//! and roles, invitations, personal tokens and sessions, and the storage
//! the workspace's logs take. Only those pages use these calls, so their
//! code is in those pages' download alone.

use gloo_net::http::{Request, RequestBuilder};
use jobdeck_api::{
    AuditList, CreatedInvitation, CreatedToken, Decode, InvitationCreate, InvitationInfo, InvitationList,
    InvitationPreview, InvitationRedeem, LogRetentionSetting, LogUsage, Quota, QuotaLimits, QuotaList, QuotaScope,
    RedeemedInvitation, RemovedUser, Role, RoleChange, TokenCreate, TokenInfo, UsageGrouping, UsageNow, UserInfo,
    UserList, UserRemoval, WorkspaceLogRetention,
};
use serde::Serialize;

use super::{authorized, check, decode, fetch, get, to_json, url, ApiFailure, ApiResult};
use crate::routes::encode_component;

/// Sends `body` as JSON with `builder` and reads the answer as `T`.
pub(super) async fn send<T: Decode>(builder: RequestBuilder, body: &impl Serialize) -> ApiResult<T> {
    let text = to_json(body).map_err(|e| ApiFailure::Network(e.to_string()))?;
    let request = builder.header("Content-Type", "application/json").body(text);
    let request = request.map_err(|e| ApiFailure::Network(e.to_string()))?;
    decode(request.send().await.map_err(|e| ApiFailure::Network(e.to_string()))?).await
}

/// The workspace's id, for the `lep` lines next to a new token.
#[derive(Debug, Clone, PartialEq, Decode)]
pub struct WorkspaceId {
    pub id: String,
}

/// `GET /workspace`, read for its id.
pub async fn workspace_id() -> ApiResult<WorkspaceId> {
    get("/workspace").await
}

/// What the storage page reads of `GET /workspace`: the log retention's
/// rules, the logs' use and the disk budget.
#[derive(Debug, Clone, PartialEq, Decode)]
pub struct WorkspaceStorage {
    #[serde(default)]
    pub log_retention: Option<WorkspaceLogRetention>,
}

/// `GET /workspace`, read for its log retention.
pub async fn workspace_storage() -> ApiResult<WorkspaceStorage> {
    get("/workspace").await
}

/// `GET /usage/logs?limit=` (admins): the jobs whose logs take the most.
pub async fn log_usage(limit: i64) -> ApiResult<LogUsage> {
    get(&format!("/usage/logs?limit={limit}")).await
}

/// `PUT /workspace/log-retention` (admins): the console's minimum log
/// retention, over the config's.
pub async fn set_minimum_retention(setting: &LogRetentionSetting) -> ApiResult<WorkspaceLogRetention> {
    send(authorized(Request::put(&url(LOG_RETENTION)))?, setting).await
}

/// `DELETE /workspace/log-retention` (admins): the config's minimum applies
/// again.
pub async fn withdraw_minimum_retention() -> ApiResult<WorkspaceLogRetention> {
    decode(fetch(Request::delete(&url(LOG_RETENTION))).await?).await
}

const LOG_RETENTION: &str = "/workspace/log-retention";

/// `GET /users` (admins).
pub async fn users() -> ApiResult<UserList> {
    get("/users").await
}

/// `PATCH /users/{name}`: another role (admins).
pub async fn set_role(name: &str, role: Role) -> ApiResult<UserInfo> {
    let path = url(&format!("/users/{}", encode_component(name)));
    send(authorized(Request::patch(&path))?, &RoleChange { role }).await
}

/// `GET /users/{name}/removal` (admins): what removing the user touches.
pub async fn removal(name: &str) -> ApiResult<UserRemoval> {
    get(&format!("/users/{}/removal", encode_component(name))).await
}

/// `DELETE /users/{name}` (admins): their running jobs stop, or go to
/// `heir` when one is named.
pub async fn remove_user(name: &str, heir: Option<&str>) -> ApiResult<RemovedUser> {
    let mut path = format!("/users/{}", encode_component(name));
    if let Some(heir) = heir {
        path.push_str(&format!("?jobs=hand-over&to={}", encode_component(heir)));
    }
    decode(fetch(Request::delete(&url(&path))).await?).await
}

/// `GET /audit?<query>` (admins): a page of the audit log.
pub async fn audit(query: &str) -> ApiResult<AuditList> {
    get(&format!("/audit?{query}")).await
}

/// `GET /quotas` (admins): every quota in force.
pub async fn quotas() -> ApiResult<QuotaList> {
    get("/quotas").await
}

fn quota_path(scope: QuotaScope, name: &str) -> String {
    url(&format!("/quotas/{}/{}", scope.as_str(), encode_component(name)))
}

/// `PUT /quotas/{scope}/{name}` (admins).
pub async fn set_quota(scope: QuotaScope, name: &str, limits: &QuotaLimits) -> ApiResult<Quota> {
    send(authorized(Request::put(&quota_path(scope, name)))?, limits).await
}

/// `DELETE /quotas/{scope}/{name}` (admins): the config's applies again.
pub async fn delete_quota(scope: QuotaScope, name: &str) -> ApiResult<()> {
    check(fetch(Request::delete(&quota_path(scope, name))).await?).await.map(|_| ())
}

/// `GET /usage` (admins): every user's use now.
pub async fn usage_now() -> ApiResult<UsageNow> {
    get("/usage").await
}

/// Saves `GET /usage/history?by=…&format=csv` (the last 30 days) as a file.
pub async fn download_usage(by: UsageGrouping) -> ApiResult<()> {
    let path = format!("/usage/history?by={}&format=csv", by.as_str());
    super::save_download(&path, &format!("jobdeck-usage-by-{}.csv", by.as_str())).await
}

/// `GET /invitations` (admins).
pub async fn invitations() -> ApiResult<InvitationList> {
    get("/invitations").await
}

/// `POST /invitations` (admins): the code and link are in this answer only.
pub async fn invite(body: &InvitationCreate) -> ApiResult<CreatedInvitation> {
    send(authorized(Request::post(&url("/invitations")))?, body).await
}

/// `DELETE /invitations/{id}` (admins).
pub async fn withdraw_invitation(id: i64) -> ApiResult<InvitationInfo> {
    decode(fetch(Request::delete(&url(&format!("/invitations/{id}")))).await?).await
}

/// `POST /invitations/check` (no token): what the invitation offers.
pub async fn check_invitation(code: &str) -> ApiResult<InvitationPreview> {
    let body = InvitationRedeem { code: code.into(), name: String::new() };
    send(Request::post(&url("/invitations/check")), &body).await
}

/// `POST /invitations/redeem` (no token): a local account and its token.
pub async fn redeem_invitation(code: &str, name: &str) -> ApiResult<RedeemedInvitation> {
    let body = InvitationRedeem { code: code.into(), name: name.into() };
    send(Request::post(&url("/invitations/redeem")), &body).await
}

/// `GET /tokens`: the caller's tokens and sessions that still sign in.
pub async fn my_tokens() -> ApiResult<Vec<TokenInfo>> {
    get("/tokens").await
}

/// `POST /tokens`: a personal token, shown this once.
pub async fn create_token(body: &TokenCreate) -> ApiResult<CreatedToken> {
    send(authorized(Request::post(&url("/tokens")))?, body).await
}

/// `DELETE /tokens/{id}`: the token and every session made from it.
pub async fn revoke_token(id: i64) -> ApiResult<()> {
    check(fetch(Request::delete(&url(&format!("/tokens/{id}")))).await?).await.map(|_| ())
}

/// `DELETE /sessions`: every console session of the caller ends.
pub async fn end_every_session() -> ApiResult<()> {
    check(fetch(Request::delete(&url("/sessions"))).await?).await.map(|_| ())
}
