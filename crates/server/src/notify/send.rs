//! One attempt at one delivery: the destination checked against the
//! admin's allow-list (the URL's host, then every address a name resolves
//! to, at the moment of sending), one POST, redirects not followed.

use std::net::SocketAddr;
use std::sync::Arc;

use jobdeck_api::notifications::{DELIVERY_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER};
use jobdeck_api::WebhookKind;
use jobdeck_core::config::NotificationsConfig;
use jobdeck_store::{DeliveryRow, WebhookTarget};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::payload;

/// How an attempt went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The endpoint answered 2xx.
    Delivered(u16),
    /// It answered something else.
    Refused(u16),
    /// No answer: the destination is not allowed, or the connection failed.
    Failed(String),
}

/// The client every delivery is sent with.
pub fn client(config: &NotificationsConfig) -> reqwest::Client {
    reqwest::Client::builder()
        // A redirect would send the body, and the server, wherever the
        // endpoint's answer says: past the allow-list.
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(config.timeout)
        .connect_timeout(config.timeout)
        .user_agent(concat!("Jobdeck/", env!("CARGO_PKG_VERSION")))
        .dns_resolver(Arc::new(AllowedAddresses { config: Arc::new(config.clone()) }))
        .build()
        .expect("the TLS roots load")
}

/// Resolves a name and keeps the addresses the allow-list admits, so a
/// name listed by an admin cannot later be pointed at this machine or the
/// network behind it.
struct AllowedAddresses {
    config: Arc<NotificationsConfig>,
}

impl Resolve for AllowedAddresses {
    fn resolve(&self, name: Name) -> Resolving {
        let config = self.config.clone();
        Box::pin(async move {
            let host = name.as_str().to_string();
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = found.iter().copied().filter(|a| config.allows_address(a.ip())).collect();
            if allowed.is_empty() {
                let error: Box<dyn std::error::Error + Send + Sync> = format!(
                    "{host} resolves only to addresses the allow-list does not admit (this machine, private or \
                     link-local ranges): list the range in notifications.allow to send there"
                )
                .into();
                return Err(error);
            }
            let addrs: Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

/// Why a URL cannot be an endpoint's, naming what is wrong with it; its
/// scheme, host and port (what lists show) when it can.
pub fn check_url(config: &NotificationsConfig, url: &str) -> Result<String, String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "https" | "http") {
        return Err("must start with https:// (or http://)".into());
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("must not hold a user name or password".into());
    }
    let Some(host) = parsed.host_str() else { return Err("has no host".into()) };
    if config.allow.is_empty() {
        return Err("webhooks are off on this server: its notifications.allow lists no destination".into());
    }
    if !config.allows_host(host) {
        return Err(format!(
            "{host} is not a destination this server may send to (ask an admin to add it to notifications.allow)"
        ));
    }
    let port = parsed.port().map(|p| format!(":{p}")).unwrap_or_default();
    Ok(format!("{}://{host}{port}", parsed.scheme()))
}

/// Sends `delivery` to `target` once.
pub async fn attempt(
    client: &reqwest::Client,
    config: &NotificationsConfig,
    public_url: Option<&str>,
    target: &WebhookTarget,
    delivery: &DeliveryRow,
) -> Outcome {
    // Checked again at each attempt: the allow-list may have changed.
    if let Err(why) = check_url(config, &target.url) {
        return Outcome::Failed(why);
    }
    let body = match target.kind {
        WebhookKind::Slack => payload::slack_body(delivery, public_url),
        WebhookKind::Json | WebhookKind::Email => payload::json_body(delivery, public_url),
    };
    let body = body.to_string().into_bytes();
    let mut request = client
        .post(&target.url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(DELIVERY_HEADER, delivery.id.to_string());
    if target.kind == WebhookKind::Json {
        let timestamp = jobdeck_store::now_millis() / 1000;
        request = request
            .header(TIMESTAMP_HEADER, timestamp.to_string())
            .header(SIGNATURE_HEADER, payload::signature(&target.secret, timestamp, &body));
    }
    match request.body(body).send().await {
        Ok(answer) if answer.status().is_success() => Outcome::Delivered(answer.status().as_u16()),
        Ok(answer) => Outcome::Refused(answer.status().as_u16()),
        // Without the URL: it is write-only, and the error is shown.
        Err(error) => Outcome::Failed(error_words(&error.without_url())),
    }
}

/// An error and its causes, joined.
fn error_words(error: &(dyn std::error::Error + 'static)) -> String {
    let mut words = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        words.push_str(": ");
        words.push_str(&cause.to_string());
        source = cause.source();
    }
    words
}
