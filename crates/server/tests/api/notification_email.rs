//! Email notifications delivered through a real SMTP server on loopback
//! (Python's aiosmtpd, `scripts/setup.sh --smtp`, writing what it receives
//! to a maildir the test reads), only to the address on record for the
//! endpoint's owner, which only an admin sets.

use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::http::{Method, StatusCode};
use jobdeck_core::config::{EmailConfig, SmtpTls};
use serde_json::{json, Value};

use crate::common::{sh_job, small_cluster, TestApp};

/// aiosmtpd on a free loopback port, stopped when dropped.
struct SmtpServer {
    port: u16,
    maildir: PathBuf,
    _child: tokio::process::Child,
    _dir: tempfile::TempDir,
}

impl SmtpServer {
    async fn start() -> SmtpServer {
        let venv = std::env::var_os("JOBDECK_SMTP_VENV")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/.smtp-venv"));
        let program = venv.join("bin/aiosmtpd");
        assert!(program.exists(), "{} is missing: run scripts/setup.sh --smtp", program.display());
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = tempfile::tempdir().unwrap();
        let maildir = dir.path().join("mail");
        let child = tokio::process::Command::new(program)
            .args(["-n", "-l", &format!("127.0.0.1:{port}"), "-c", "aiosmtpd.handlers.Mailbox"])
            .arg(&maildir)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        // Ready once it accepts a connection.
        let deadline = std::time::Instant::now() + crate::common::PATIENCE;
        while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
            assert!(std::time::Instant::now() < deadline, "aiosmtpd did not start listening");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        SmtpServer { port, maildir, _child: child, _dir: dir }
    }

    /// The messages received so far, as their text.
    fn messages(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.maildir.join("new")) else { return Vec::new() };
        entries.map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap()).collect()
    }
}

fn mailing(port: u16) -> impl FnOnce(&mut jobdeck_core::Config) {
    move |config: &mut jobdeck_core::Config| {
        small_cluster(4.0)(config);
        config.notifications.email = Some(EmailConfig {
            smtp_server: "127.0.0.1".into(),
            smtp_port: Some(port),
            tls: SmtpTls::None,
            from: "Jobdeck <jobdeck@example.com>".into(),
            username: None,
            password_file: None,
        });
        config.auth.public_url = Some("https://jobs.example.com".into());
    }
}

async fn put_email(app: &TestApp, token: &str, user: &str, email: &str) -> crate::common::TestResponse {
    app.call(Method::PUT, &format!("/api/v2/users/{user}/email"), token, Some(&json!({"email": email}))).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_is_mailed_to_the_owners_address_on_record() {
    let smtp = SmtpServer::start().await;
    let app = TestApp::with_config(mailing(smtp.port)).await;
    let alice = app.token_for("alice").await;
    let create = |body: Value| {
        let app = &app;
        let alice = alice.clone();
        async move { app.post_json("/api/v2/webhooks", &alice, &body).await }
    };

    let res = create(json!({"name": "mail", "kind": "email"})).await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", res.text());
    assert!(res.json()["fields"]["kind"][0].as_str().unwrap().contains("no email address on record"), "{}", res.text());

    // Only an admin sets the address, and only to one address.
    assert_eq!(put_email(&app, &alice, "alice", "alice@example.com").await.status, StatusCode::FORBIDDEN);
    let res = put_email(&app, &app.admin_token, "alice", "alice@example.com\r\nBcc: eve@example.com").await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", res.text());
    assert_eq!(put_email(&app, &app.admin_token, "nobody", "n@example.com").await.status, StatusCode::NOT_FOUND);
    let res = put_email(&app, &app.admin_token, "alice", "alice@example.com").await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());

    let res = create(json!({"name": "mail", "kind": "email", "url": "mailto:eve@example.com"})).await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "a rule names no address: {}", res.text());
    let res = create(json!({"name": "mail", "kind": "email"})).await;
    assert_eq!(res.status, StatusCode::CREATED, "{}", res.text());
    let created = res.json();
    assert_eq!(created["webhook"]["destination"], "mailto:alice@example.com");
    assert!(created.get("secret").is_none());
    let hook = created["webhook"]["id"].as_i64().unwrap();
    let rule = json!({"on": ["failed"], "webhook": hook});
    assert_eq!(app.post_json("/api/v2/notifications", &alice, &rule).await.status, StatusCode::CREATED);

    let mut job = sh_job("mail-fails", "echo broken; exit 3");
    job["spec"]["backoff_limit"] = json!(0);
    let id = app.create_job(&alice, &job).await;
    app.wait_until("the mail", || async { !smtp.messages().is_empty() }).await;
    let message = smtp.messages().remove(0);
    assert!(message.contains("To: alice@example.com"), "{message}");
    assert!(message.contains("From: Jobdeck <jobdeck@example.com>"), "{message}");
    assert!(message.contains("Subject: [jobdeck] mail-fails failed"), "{message}");
    assert!(message.contains(&format!("https://jobs.example.com/jobs/{id}/failure")), "{message}");
    assert!(message.contains("of alice failed: it is Failed"), "{message}");
    app.wait_until("the delivery recorded", || async {
        let history = app.call(Method::GET, &format!("/api/v2/webhooks/{hook}/deliveries"), &alice, None).await;
        history.json()[0]["state"] == "delivered" && history.json()[0]["last_status"] == 250
    })
    .await;
    assert_eq!(smtp.messages().len(), 1);
    let audit = app.get("/api/v2/audit?action=user.email").await.json();
    assert_eq!(audit["items"][0]["target"], "alice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_smtp_takes_no_email_endpoint() {
    let app = TestApp::with_config(small_cluster(1.0)).await;
    let alice = app.token_for("alice").await;
    assert_eq!(put_email(&app, &app.admin_token, "alice", "alice@example.com").await.status, StatusCode::OK);
    let res = app.post_json("/api/v2/webhooks", &alice, &json!({"name": "mail", "kind": "email"})).await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", res.text());
    assert!(res.text().contains("this server sends no email"), "{}", res.text());
}
