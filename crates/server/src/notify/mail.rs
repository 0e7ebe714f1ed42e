//! Email deliveries: one plain-text message to the endpoint owner's own
//! address (the one their sign-in gave, or an admin set: never one a rule
//! names), through the SMTP server of `[notifications.email]`.

use jobdeck_core::config::{EmailConfig, SmtpTls};
use jobdeck_store::DeliveryRow;
use lettre::message::{header::ContentType, Mailbox, Message};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::extension::ClientId;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};

use super::payload::link_of;
use super::send::Outcome;

/// The message for `delivery`, to `to`.
pub fn message(
    config: &EmailConfig,
    workspace: &str,
    public_url: Option<&str>,
    to: &str,
    delivery: &DeliveryRow,
) -> Result<Message, String> {
    let from: Mailbox = config.from.parse().map_err(|e| format!("notifications.email.from: {e}"))?;
    let to: Mailbox = to.parse().map_err(|e| format!("the address on record, '{to}', is not one: {e}"))?;
    let mut text = format!(
        "Job {} ({}) of {} {}: it is {}",
        delivery.job_name, delivery.job_id, delivery.job_owner, delivery.event, delivery.to_state
    );
    if let Some(reason) = delivery.reason.as_deref().filter(|r| !r.is_empty()) {
        text.push_str(&format!(" ({reason})"));
    }
    text.push_str(".\n");
    if let Some(message) = delivery.message.as_deref().filter(|m| !m.is_empty()) {
        text.push_str(&format!("{message}\n"));
    }
    text.push_str(&format!(
        "\n{}\n\nA notification rule of yours sent this (delivery {}); GET /api/v2/notifications lists them.\n",
        link_of(delivery, public_url),
        delivery.id
    ));
    // Job names are lowercase letters, digits and '-', so the subject needs
    // no encoding and cannot carry a header of its own.
    let subject = format!("[{workspace}] {} {}", delivery.job_name, delivery.event);
    Message::builder()
        .from(from)
        .to(to)
        .subject(subject)
        .header(ContentType::TEXT_PLAIN)
        .body(text)
        .map_err(|e| format!("cannot build the message: {e}"))
}

/// Sends `message` through the configured server once.
pub async fn send(config: &EmailConfig, timeout: std::time::Duration, message: Message) -> Outcome {
    let builder = match config.tls {
        SmtpTls::None => Ok(AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(config.smtp_server.as_str())),
        SmtpTls::Starttls => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&config.smtp_server),
        SmtpTls::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(&config.smtp_server),
    };
    let mut builder = match builder {
        Ok(builder) => {
            builder.port(config.port()).timeout(Some(timeout)).hello_name(ClientId::Domain("jobdeck".into()))
        }
        Err(e) => return Outcome::Failed(format!("the SMTP server's name: {e}")),
    };
    if let (Some(username), Some(file)) = (&config.username, &config.password_file) {
        // Read at each send, so a rotated password needs no restart.
        match std::fs::read_to_string(file) {
            Ok(password) => builder = builder.credentials(Credentials::new(username.clone(), password.trim().into())),
            Err(e) => return Outcome::Failed(format!("cannot read notifications.email.password_file: {e}")),
        }
    }
    match builder.build().send(message).await {
        Ok(answer) => Outcome::Delivered(answer.code().into()),
        Err(e) => Outcome::Failed(format!("the SMTP server: {e}")),
    }
}
