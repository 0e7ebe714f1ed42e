//! The API of one's notifications, as the notifications page calls it: endpoints
//! (`/webhooks`), their delivery history, and rules (`/notifications`).
//! Only that page uses these calls, so their code is in its download alone.

use gloo_net::http::Request;
use jobdeck_api::{CreatedWebhook, NotificationCreate, NotificationInfo, WebhookCreate, WebhookDelivery, WebhookInfo};

use super::people::send;
use super::{authorized, check, decode, fetch, get, url, ApiResult};

/// `GET /webhooks`: the caller's endpoints.
pub async fn webhooks() -> ApiResult<Vec<WebhookInfo>> {
    get("/webhooks").await
}

/// `POST /webhooks`: a JSON endpoint's signing secret is in this answer only.
pub async fn create_webhook(body: &WebhookCreate) -> ApiResult<CreatedWebhook> {
    send(authorized(Request::post(&url("/webhooks")))?, body).await
}

/// `DELETE /webhooks/{id}`, with its rules and history.
pub async fn delete_webhook(id: i64) -> ApiResult<()> {
    check(fetch(Request::delete(&url(&format!("/webhooks/{id}")))).await?).await.map(|_| ())
}

/// `POST /webhooks/{id}/enable`, after the server disabled it.
pub async fn enable_webhook(id: i64) -> ApiResult<WebhookInfo> {
    decode(fetch(Request::post(&url(&format!("/webhooks/{id}/enable")))).await?).await
}

/// `GET /webhooks/{id}/deliveries`: the newest first.
pub async fn deliveries(id: i64) -> ApiResult<Vec<WebhookDelivery>> {
    get(&format!("/webhooks/{id}/deliveries")).await
}

/// `GET /notifications`: the caller's rules.
pub async fn notifications() -> ApiResult<Vec<NotificationInfo>> {
    get("/notifications").await
}

/// `POST /notifications`.
pub async fn create_notification(body: &NotificationCreate) -> ApiResult<NotificationInfo> {
    send(authorized(Request::post(&url("/notifications")))?, body).await
}

/// `DELETE /notifications/{id}`.
pub async fn delete_notification(id: i64) -> ApiResult<()> {
    check(fetch(Request::delete(&url(&format!("/notifications/{id}")))).await?).await.map(|_| ())
}
