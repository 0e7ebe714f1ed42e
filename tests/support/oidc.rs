//! A real OpenID Connect provider for the tests (`tests/oidc/provider.mjs`:
//! npm's oidc-provider on loopback), and a person's way through it without
//! a browser: its sign-in and consent pages are plain forms.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::{workspace_root, Server};

/// The client the server is registered as at the provider.
pub const CLIENT_ID: &str = "jobdeck";
pub const CLIENT_SECRET: &str = "jobdeck-tests-client-secret";

/// The provider, running until dropped.
pub struct Provider {
    child: Child,
    /// Its issuer, `http://127.0.0.1:PORT`.
    pub issuer: String,
    _settings: tempfile::TempDir,
}

impl Provider {
    /// Starts the provider with `accounts` (`{"ann": {"email": …,
    /// "email_verified": true, "groups": […]}}`) and the client whose
    /// sign-ins come back to `public_url`.
    pub fn start(accounts: Value, public_url: &str) -> Provider {
        Provider::start_tampering(accounts, json!({}), public_url)
    }

    /// [`Provider::start`], the provider changing the ID token of each
    /// account `tamper` names after making it (`{"mallory": "audience"}`;
    /// `tests/oidc/provider.mjs` lists the ways).
    pub fn start_tampering(accounts: Value, tamper: Value, public_url: &str) -> Provider {
        let script = workspace_root().join("tests/oidc/provider.mjs");
        assert!(
            workspace_root().join("tests/oidc/node_modules/oidc-provider").is_dir(),
            "the test provider is not installed: scripts/setup.sh --oidc (npm ci in tests/oidc)"
        );
        let dir = tempfile::tempdir().unwrap();
        let settings = dir.path().join("settings.json");
        let redirect = format!("{public_url}/api/v2/auth/oidc/callback");
        let clients = json!([{"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "redirect_uris": [redirect]}]);
        let all = json!({"clients": clients, "accounts": accounts, "tamper": tamper});
        std::fs::write(&settings, all.to_string()).unwrap();
        let mut child = Command::new("node")
            .arg(script)
            .arg(&settings)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs the test provider");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        // Read to the end: the provider writes notices to its standard
        // output, and a closed pipe would stop it.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        // Bounds a failure only: the provider says its issuer once it answers.
        let line = rx.recv_timeout(Duration::from_secs(60)).expect("the test provider printed its issuer");
        let issuer = line.strip_prefix("issuer ").unwrap_or_else(|| panic!("unexpected line {line:?}")).to_string();
        Provider { child, issuer, _settings: dir }
    }

    /// The `[auth]` section of a server that signs in through this provider
    /// at `public_url`, with `extra` lines of `[auth.oidc]`.
    pub fn server_config(&self, public_url: &str, extra: &str) -> String {
        format!(
            "[auth]\npublic_url = \"{public_url}\"\n[auth.oidc]\nissuer = \"{}\"\nclient_id = \"{CLIENT_ID}\"\n\
             client_secret_env = \"JOBDECK_TEST_OIDC_SECRET\"\ndisplay_name = \"Test IdP\"\n\
             scopes = [\"profile\", \"email\", \"groups\"]\n{extra}",
            self.issuer
        )
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free port on 127.0.0.1 for a server whose address must be known
/// before it starts (the provider sends people back to it).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A server started with `config` on `port`, with the client secret in its
/// environment, and the built console when `console`.
pub fn start_server(port: u16, config: &str, console: bool) -> Server {
    let secret = [("JOBDECK_TEST_OIDC_SECRET", CLIENT_SECRET)];
    Server::start_on(&format!("127.0.0.1:{port}"), config, &secret, console)
}

/// A person's browser, as far as the provider cares: it keeps cookies and
/// follows no redirect by itself.
pub struct Person {
    agent: ureq::Agent,
}

/// What a request answered: its status, `Location` and body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub location: Option<String>,
    pub body: String,
}

impl Default for Person {
    fn default() -> Self {
        Self::new()
    }
}

impl Person {
    pub fn new() -> Person {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            // A connection per request: the provider (Node's HTTP server)
            // resets one kept after some of its answers.
            .max_idle_connections_per_host(0)
            .build()
            .into();
        Person { agent }
    }

    pub fn get(&self, url: &str) -> Answer {
        let response = self.agent.get(url).call().unwrap_or_else(|e| panic!("GET {url}: {e}"));
        answer(response)
    }

    fn post_form(&self, url: &str, fields: &[(&str, &str)]) -> Answer {
        let response =
            self.agent.post(url).send_form(fields.iter().copied()).unwrap_or_else(|e| panic!("POST {url}: {e}"));
        answer(response)
    }

    /// From `url` on, follows redirects, signs in as `login` on the
    /// provider's page and consents, until an address outside the provider
    /// (`issuer`) is reached: returns it (the server's callback with code
    /// and state, or an error).
    pub fn through_provider(&self, url: &str, issuer: &str, login: &str) -> String {
        let mut next = url.to_string();
        for _ in 0..12 {
            if !next.starts_with(issuer) {
                return next;
            }
            let got = self.get(&next);
            if let Some(location) = got.location {
                next = absolute(issuer, &location);
                continue;
            }
            assert_eq!(got.status, 200, "{next}: {}", got.body);
            let action = form_action(&got.body).unwrap_or_else(|| panic!("no form at {next}: {}", got.body));
            let action = absolute(issuer, &action);
            let submitted = if got.body.contains("name=\"login\"") {
                self.post_form(&action, &[("prompt", "login"), ("login", login), ("password", "any")])
            } else {
                self.post_form(&action, &[("prompt", "consent")])
            };
            next = absolute(issuer, &submitted.location.unwrap_or_else(|| panic!("{action}: {}", submitted.body)));
        }
        panic!("the provider did not send {login} back within 12 steps (at {next})");
    }
}

fn answer(response: ureq::http::Response<ureq::Body>) -> Answer {
    let status = response.status().as_u16();
    let location = response.headers().get("location").and_then(|v| v.to_str().ok()).map(String::from);
    let body = response.into_body().read_to_string().unwrap_or_default();
    Answer { status, location, body }
}

/// A redirect target as an absolute address; a relative one is the
/// provider's own.
fn absolute(issuer: &str, location: &str) -> String {
    if location.starts_with("http://") || location.starts_with("https://") {
        location.to_string()
    } else {
        assert!(location.starts_with('/'), "{location}");
        format!("{issuer}{location}")
    }
}

/// The `action` of the first form of an HTML page, unescaped.
fn form_action(html: &str) -> Option<String> {
    let start = html.find("<form")?;
    let rest = &html[start..];
    let value = rest.split("action=\"").nth(1)?.split('"').next()?;
    Some(value.replace("&amp;", "&").replace("&#x2F;", "/").replace("&#47;", "/"))
}
