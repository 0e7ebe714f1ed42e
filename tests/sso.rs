//! Single sign-on against a real OpenID Connect provider (npm's
//! oidc-provider on loopback, `tests/oidc/`): the real server, the
//! provider's own sign-in and consent pages, and the console in Chromium.

use jobdeck_api::SignInProblem;
use jobdeck_e2e::oidc::{self, Person, Provider};
use jobdeck_e2e::{Browser, Server};
use serde_json::{json, Value};

/// The provider's people: ann is in the ML team and its admins, bob in the
/// team only, eve in no group, and "admin" is a provider account whose
/// name is the first admin's here.
fn accounts() -> Value {
    json!({
        "ann": {"email": "ann@example.com", "email_verified": true, "groups": ["ml", "ml-admins"]},
        "bob": {"email": "bob@example.com", "email_verified": true, "groups": ["ml"]},
        "eve": {"email": "eve@example.com", "email_verified": true, "groups": []},
        "admin": {"email": "admin@example.com", "email_verified": true, "groups": ["ml"]},
        "mallory": {"email": "mallory@example.com", "email_verified": true, "groups": ["ml", "ml-admins"]},
    })
}

/// What the ML team's workspace says of the provider's groups.
const TEAM: &str = "allowed_groups = [\"ml\"]\n[auth.oidc.roles]\nml = \"member\"\nml-admins = \"admin\"\n";

struct World {
    provider: Provider,
    server: Server,
    public_url: String,
}

fn world(console: bool) -> World {
    world_tampering(console, json!({}))
}

/// A world whose provider changes the ID tokens of the accounts `tamper`
/// names after making them.
fn world_tampering(console: bool, tamper: Value) -> World {
    world_of(console, tamper, TEAM)
}

/// A world whose workspace says `workspace` of the provider (keys of
/// `[auth.oidc]`).
fn world_of(console: bool, tamper: Value, workspace: &str) -> World {
    let port = oidc::free_port();
    let public_url = format!("http://127.0.0.1:{port}");
    let provider = Provider::start_tampering(accounts(), tamper, &public_url);
    let server = oidc::start_server(port, &provider.server_config(&public_url, workspace), console);
    World { provider, server, public_url }
}

impl World {
    /// Signs `login` in through the provider from `next`; returns the
    /// address the server's callback sent the browser to.
    fn sign_in(&self, person: &Person, login: &str, next: &str) -> String {
        self.sign_in_from(person, login, &format!("/api/v2/auth/oidc/start?next={}", encode(next)))
    }

    /// Signs `login` in through the provider from the start address
    /// `start` (a path on the server).
    fn sign_in_from(&self, person: &Person, login: &str, start: &str) -> String {
        let start = format!("{}{start}", self.public_url);
        let to_provider = person.get(&start);
        assert_eq!(to_provider.status, 303, "{}", to_provider.body);
        let callback = person.through_provider(&to_provider.location.unwrap(), &self.provider.issuer, login);
        assert!(callback.starts_with(&format!("{}/api/v2/auth/oidc/callback?", self.public_url)), "{callback}");
        self.callback(person, &callback)
    }

    fn callback(&self, person: &Person, callback: &str) -> String {
        let back = person.get(callback);
        assert_eq!(back.status, 303, "{}", back.body);
        back.location.unwrap()
    }
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"/-_.".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The single-sign-on token in the sign-in page's fragment.
fn handed_over(location: &str) -> String {
    location.split_once("#token=").map(|(_, t)| t.to_string()).unwrap_or_else(|| panic!("no token: {location}"))
}

/// The problem the sign-in page is sent to show.
fn problem(location: &str) -> SignInProblem {
    let code = location.split_once("?problem=").map(|(_, q)| q).unwrap_or_else(|| panic!("no problem: {location}"));
    SignInProblem::from_code(code).unwrap_or_else(|| panic!("an unknown problem: {location}"))
}

/// A teammate signs in through the provider and lands where they were
/// going; they are known by the provider's issuer and subject, their role
/// comes from their groups, and what the provider's sign-in hands the
/// console starts one session and does nothing else.
#[test]
fn a_provider_user_signs_in_once_lands_on_the_page_and_gets_the_role_of_their_groups() {
    let world = world(false);
    let methods = world.server.call("GET", "/auth/methods", "", None).1;
    assert_eq!(methods["single_sign_on"]["name"], "Test IdP", "{methods}");

    let person = Person::new();
    let landed = world.sign_in(&person, "ann", "/jobs/train-1/logs?replica=r#L12");
    let (page, _) = landed.split_once('#').unwrap();
    assert_eq!(
        page,
        format!("{}/login?next=%2Fjobs%2Ftrain-1%2Flogs%3Freplica%3Dr%23L12", world.public_url),
        "the sign-in page, then the linked page"
    );
    let token = handed_over(&landed);

    // It starts a session, once; it reads nothing by itself.
    let (status, body) = world.server.call("GET", "/jobs", &token, None);
    assert_eq!(status, 401, "{body}");
    assert!(body["message"].as_str().unwrap().contains("only starts a console session"), "{body}");
    let (status, session) = world.server.call("POST", "/sessions", &token, Some(&json!({})));
    assert_eq!(status, 200, "{session}");
    let session = session["token"].as_str().unwrap().to_string();
    let (status, again) = world.server.call("POST", "/sessions", &token, Some(&json!({})));
    assert_eq!(status, 401, "a second trade of the same sign-in: {again}");

    let (_, me) = world.server.call("GET", "/workspace", &session, None);
    assert_eq!((me["current_user"].as_str(), me["current_user_role"].as_str()), (Some("ann"), Some("admin")));
    // Signing in again is the same user, not a second one.
    let again = handed_over(&world.sign_in(&Person::new(), "ann", "/jobs"));
    let (_, second) = world.server.call("POST", "/sessions", &again, Some(&json!({})));
    let (_, me) = world.server.call("GET", "/workspace", second["token"].as_str().unwrap(), None);
    assert_eq!(me["current_user"], "ann");
    let (_, users) = world.server.call("GET", "/users", &session, None);
    let names: Vec<&str> = users["users"].as_array().unwrap().iter().map(|u| u["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["admin", "ann"], "{users}");
}

/// The provider's account called "admin" is not this workspace's admin:
/// it gets a name of its own and the role its groups give (member).
#[test]
fn a_provider_account_named_admin_is_not_the_admin() {
    let world = world(false);
    let token = handed_over(&world.sign_in(&Person::new(), "admin", "/jobs"));
    let (_, session) = world.server.call("POST", "/sessions", &token, Some(&json!({})));
    let session = session["token"].as_str().unwrap().to_string();
    let (_, me) = world.server.call("GET", "/workspace", &session, None);
    assert_eq!((me["current_user"].as_str(), me["current_user_role"].as_str()), (Some("admin-2"), Some("member")));
    assert_eq!(world.server.call("GET", "/users", &session, None).0, 403);
    let (_, first) = world.server.call("GET", "/workspace", &world.server.admin_token, None);
    assert_eq!((first["current_user"].as_str(), first["current_user_role"].as_str()), (Some("admin"), Some("admin")));
}

/// A sign-in's answer is used once: the same callback address again (a
/// replayed state and code) is refused, as is a made-up state, and someone
/// outside the allowed groups is told why.
#[test]
fn a_replayed_or_unknown_state_and_a_user_outside_the_groups_are_refused() {
    let world = world(false);
    let person = Person::new();
    let start = format!("{}/api/v2/auth/oidc/start?next=/jobs", world.public_url);
    let to_provider = person.get(&start).location.unwrap();
    let callback = person.through_provider(&to_provider, &world.provider.issuer, "bob");
    let first = world.callback(&person, &callback);
    handed_over(&first);
    let replayed = world.callback(&Person::new(), &callback);
    assert_eq!(problem(&replayed), SignInProblem::Expired, "{replayed}");
    let made_up = callback.replace("state=", "state=x");
    assert_eq!(problem(&world.callback(&person, &made_up)), SignInProblem::Expired);

    let refused = world.sign_in(&Person::new(), "eve", "/jobs");
    assert_eq!(problem(&refused), SignInProblem::NotAdmitted, "{refused}");

    // A next that leaves the site is refused before the provider is asked.
    for hostile in ["//evil.example/x", "https://evil.example/", "/\t/evil.example"] {
        let url = format!("{}/api/v2/auth/oidc/start?next={}", world.public_url, encode(hostile));
        assert_eq!(person.get(&url).status, 400, "{hostile:?}");
    }
}

/// A shared link opened by a signed-out teammate goes through the provider
/// (its own sign-in page, in Chromium) and lands on the linked job.
#[test]
fn a_shared_link_opened_signed_out_goes_through_the_provider_and_lands_on_the_job() {
    let world = world(true);
    let job = json!({"metadata": {"name": "shared"}, "spec": {"container": {"command": ["sh", "-c", "echo hi"]}}});
    let id = world.server.create_job(&world.server.admin_token, &job);

    let browser = Browser::start();
    browser.goto(&format!("{}/jobs/{id}", world.public_url));
    let button = browser.find("a.single-sign-on");
    assert!(browser.text(&button).contains("Sign in with Test IdP"));
    browser.screenshot(&jobdeck_e2e::screenshot_path("sso-sign-in-page"));
    browser.click(&button);
    let login = browser.find("input[name=login]");
    browser.type_text(&login, "bob");
    browser.type_text(&browser.find("input[name=password]"), "any");
    browser.click(&browser.find("button[type=submit]"));
    // The provider's consent page, then back.
    browser.find("input[name=prompt][value=consent]");
    browser.click(&browser.find("button[type=submit]"));
    browser
        .wait_until("the linked job's page", || browser.current_url().ends_with(&format!("/jobs/{id}")).then_some(()));
    browser.wait_for_text("shared");
    browser.wait_for_text("bob");
    browser.screenshot(&jobdeck_e2e::screenshot_path("sso-landed-on-shared-job"));

    // The admin's audit page shows the sign-in through the provider.
    let admin = Browser::start();
    admin.sign_in(&world.server, &world.server.admin_token);
    admin.goto(&format!("{}/audit", world.server.base_url));
    admin.wait_until("bob's sign-in on the audit page", || {
        admin.audit_rows().iter().any(|r| r.starts_with("bob|sign_in|") && r.contains("|ok|")).then_some(())
    });
}

/// ID tokens the real provider made, then changed, are refused and nobody
/// is signed in or made a user: one whose claim was changed under the
/// provider's signature, and ones the provider's own key signed again for
/// another audience, already expired, with another sign-in's nonce, or from
/// another issuer. The sign-in page is told only that the answer failed a
/// check; which check is in the server's log.
#[test]
fn id_tokens_changed_after_the_provider_made_them_are_refused() {
    for how in ["signature", "audience", "expired", "nonce", "issuer"] {
        let world = world_tampering(false, json!({ "mallory": how }));
        let landed = world.sign_in(&Person::new(), "mallory", "/jobs");
        assert_eq!(problem(&landed), SignInProblem::InvalidAnswer, "{how}: {landed}");
        let (_, users) = world.server.call("GET", "/users", &world.server.admin_token, None);
        assert_eq!(users["users"].as_array().map(Vec::len), Some(1), "{how}: only the admin: {users}");
        // The audit log says which check refused it, and from where.
        let (_, log) = world.server.call("GET", "/audit?action=sign_in.failed", &world.server.admin_token, None);
        let entry = &log["items"][0];
        let detail = entry["detail"].as_str().unwrap_or_default();
        assert!(detail.starts_with("invalid-answer: the ID token is not valid: "), "{how}: {log}");
        let named = match how {
            "signature" => "Signature verification failed",
            "audience" => "Invalid audiences",
            "expired" => "Expired",
            "nonce" => "Invalid nonce",
            _ => "Invalid issuer",
        };
        assert!(detail.contains(named), "{how}: the reason is {detail:?}");
        assert_eq!(entry["source"], "127.0.0.1", "{log}");
    }
}

/// Where new people need an invitation: someone the provider vouches for
/// without one is turned away; with one, they come in once with its role
/// (no groups map roles here), and the invitation lets nobody in again;
/// someone outside the allowed groups is refused even with one, which
/// stays open for the person it was meant for. A removed user is turned
/// away until another invitation.
#[test]
fn with_invitations_required_only_the_invited_come_in_once_with_the_invitations_role() {
    let world = world_of(false, json!({}), "allowed_groups = [\"ml\"]\ninvitation_required = true\n");
    let admin = world.server.admin_token.clone();
    assert_eq!(problem(&world.sign_in(&Person::new(), "bob", "/jobs")), SignInProblem::NotInvited);

    let invite = |role: &str| {
        let (status, made) = world.server.call("POST", "/invitations", &admin, Some(&json!({ "role": role })));
        assert_eq!(status, 200, "{made}");
        made["code"].as_str().unwrap().to_string()
    };
    let start = |code: &str| format!("/api/v2/auth/oidc/start?next=/jobs&invitation={code}");
    let code = invite("viewer");
    let landed = world.sign_in_from(&Person::new(), "bob", &start(&code));
    let (_, session) = world.server.call("POST", "/sessions", &handed_over(&landed), Some(&json!({})));
    let (_, me) = world.server.call("GET", "/workspace", session["token"].as_str().unwrap(), None);
    assert_eq!((me["current_user"].as_str(), me["current_user_role"].as_str()), (Some("bob"), Some("viewer")));

    let used = Person::new().get(&format!("{}{}", world.public_url, start(&code)));
    assert_eq!(problem(&used.location.unwrap()), SignInProblem::InvitationUnusable, "once only");
    handed_over(&world.sign_in(&Person::new(), "bob", "/jobs"));

    let for_someone_else = invite("member");
    let refused = world.sign_in_from(&Person::new(), "eve", &start(&for_someone_else));
    assert_eq!(problem(&refused), SignInProblem::NotAdmitted, "the allowed groups still hold");
    let (_, listed) = world.server.call("GET", "/invitations", &admin, None);
    assert_eq!(listed["invitations"][0]["state"], "open", "{listed}");
    let (_, users) = world.server.call("GET", "/users", &admin, None);
    let names: Vec<&str> = users["users"].as_array().unwrap().iter().map(|u| u["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["admin", "bob"], "{users}");

    // Removed, bob is turned away by the provider's sign-in too; an
    // invitation lets him back, as the same user.
    assert_eq!(world.server.call("DELETE", "/users/bob", &admin, None).0, 200);
    assert_eq!(problem(&world.sign_in(&Person::new(), "bob", "/jobs")), SignInProblem::Removed);
    let back = invite("member");
    handed_over(&world.sign_in_from(&Person::new(), "bob", &start(&back)));
    let (_, users) = world.server.call("GET", "/users", &admin, None);
    assert_eq!(users["users"][1]["name"], "bob", "{users}");
}
