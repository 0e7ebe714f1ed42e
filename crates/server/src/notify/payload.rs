//! What a delivery says: Jobdeck's JSON for a JSON endpoint, a message for a
//! Slack one, and the signature a JSON endpoint checks (docs/api.md,
//! "Notifications").

use hmac::{Hmac, Mac};
use jobdeck_store::DeliveryRow;
use serde_json::{json, Value};
use sha2::Sha256;

/// The console's address of a job's page, or of one of its tabs: relative
/// when the server does not know its public address (`[auth] public_url`).
/// The paths are the console's (`src/routes.rs`, `job_tab`); job ids need
/// no escaping (lowercase letters, digits and `-`).
pub fn job_link(public_url: Option<&str>, job_id: &str, tab: Option<&str>) -> String {
    let base = public_url.unwrap_or("").trim_end_matches('/');
    match tab {
        Some(tab) => format!("{base}/jobs/{job_id}/{tab}"),
        None => format!("{base}/jobs/{job_id}"),
    }
}

/// The page a person wants from this delivery: a failure's analysis for a
/// failed or preempted job, the matching line for a log match (the log
/// viewer's `?replica=…#L<n>` permalink), the metrics for a resource
/// condition, the job's overview otherwise.
pub fn link_of(delivery: &DeliveryRow, public_url: Option<&str>) -> String {
    match (delivery.event.as_str(), &delivery.replica, delivery.line) {
        ("log_match", Some(replica), Some(line)) => {
            // Replica ids are the job's id and two numbers: nothing to escape.
            format!("{}?replica={replica}#L{line}", job_link(public_url, &delivery.job_id, Some("logs")))
        }
        ("failed" | "preempted", _, _) => job_link(public_url, &delivery.job_id, Some("failure")),
        ("gpu_idle" | "memory_near_limit", _, _) => job_link(public_url, &delivery.job_id, Some("metrics")),
        _ => job_link(public_url, &delivery.job_id, None),
    }
}

/// A JSON endpoint's body.
pub fn json_body(delivery: &DeliveryRow, public_url: Option<&str>) -> Value {
    let mut body = json!({
        "event": delivery.event,
        "delivery": delivery.id,
        "time": delivery.time,
        "job": {
            "id": delivery.job_id,
            "name": delivery.job_name,
            "owner": delivery.job_owner,
            "state": delivery.to_state,
            "previous_state": delivery.from_state,
            "reason": delivery.reason,
            "message": delivery.message,
        },
        "links": {
            "job": job_link(public_url, &delivery.job_id, None),
            "page": link_of(delivery, public_url),
        },
    });
    // A condition met on one replica names it, and a log match its line.
    if let Some(replica) = &delivery.replica {
        body["replica"] = json!(replica);
    }
    if let Some(line) = delivery.line {
        body["line"] = json!(line);
    }
    body
}

/// A Slack incoming webhook's body: one `text`, in Slack's markup, whose
/// link is `<url|label>`; Slack's reserved `&`, `<` and `>` are escaped in
/// what the job's owner wrote (its name, the reason's message).
pub fn slack_body(delivery: &DeliveryRow, public_url: Option<&str>) -> Value {
    let escape = |text: &str| text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let mut text = format!(
        "Job <{}|{}> {}: {}",
        link_of(delivery, public_url),
        escape(&delivery.job_name),
        delivery.event,
        escape(&delivery.to_state)
    );
    if let Some(reason) = delivery.reason.as_deref().filter(|r| !r.is_empty()) {
        text.push_str(&format!(" ({})", escape(reason)));
    }
    if let Some(message) = delivery.message.as_deref().filter(|m| !m.is_empty()) {
        text.push_str(&format!("\n{}", escape(message)));
    }
    json!({ "text": text })
}

/// `sha256=<hex>`: the HMAC-SHA256 under `secret` of `<timestamp>.<body>`,
/// so a receiver can tell the body and its time were not changed, and
/// refuse an old one replayed.
pub fn signature(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let bytes = mac.finalize().into_bytes();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256={hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed() -> DeliveryRow {
        DeliveryRow {
            id: 7,
            event: "failed".into(),
            job_id: "train-ab12c".into(),
            job_name: "train <a&b>".into(),
            job_owner: "alice".into(),
            from_state: "Running".into(),
            to_state: "Failed".into(),
            reason: Some("Error".into()),
            message: Some("replica 2 exited with code 1".into()),
            time: 1_700_000_000_000,
            ..DeliveryRow::default()
        }
    }

    #[test]
    fn a_json_body_links_the_failure_analysis() {
        let body = json_body(&failed(), Some("https://jobs.example.com/"));
        assert_eq!(body["event"], "failed");
        assert_eq!(body["job"]["state"], "Failed");
        assert_eq!(body["job"]["previous_state"], "Running");
        assert_eq!(body["links"]["job"], "https://jobs.example.com/jobs/train-ab12c");
        assert_eq!(body["links"]["page"], "https://jobs.example.com/jobs/train-ab12c/failure");
    }

    #[test]
    fn a_log_match_links_its_line_and_a_resource_condition_the_metrics() {
        let matched = DeliveryRow {
            event: "log_match".into(),
            replica: Some("train-ab12c-3-0".into()),
            line: Some(1042),
            from_state: "Running".into(),
            to_state: "Running".into(),
            ..failed()
        };
        let body = json_body(&matched, Some("https://jobs.example.com"));
        assert_eq!(
            body["links"]["page"],
            "https://jobs.example.com/jobs/train-ab12c/logs?replica=train-ab12c-3-0#L1042"
        );
        assert_eq!((&body["replica"], &body["line"]), (&json!("train-ab12c-3-0"), &json!(1042)));
        let idle = DeliveryRow { event: "gpu_idle".into(), ..failed() };
        assert_eq!(link_of(&idle, None), "/jobs/train-ab12c/metrics");
        assert!(json_body(&idle, None).get("line").is_none());
    }

    #[test]
    fn a_slack_text_escapes_what_the_owner_wrote() {
        let body = slack_body(&failed(), None);
        let text = body["text"].as_str().unwrap();
        assert!(
            text.starts_with("Job </jobs/train-ab12c/failure|train &lt;a&amp;b&gt;> failed: Failed (Error)"),
            "{text}"
        );
        assert!(text.ends_with("\nreplica 2 exited with code 1"), "{text}");
        assert_eq!(body.as_object().unwrap().len(), 1, "Slack's simplest message is one text");
    }

    #[test]
    fn the_signature_is_hmac_sha256_of_time_and_body() {
        // Computed apart, with Python's hmac module.
        assert_eq!(
            signature("Jefe", 12, b"what do ya want for nothing?"),
            "sha256=884f387af4fab053210fff358c2ae1ceb946a70c677f05c2b731ca65c7769498"
        );
    }
}
