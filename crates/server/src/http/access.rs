//! The authorization table: which role each route of the API needs, in one
//! place, and the layer that enforces it before any handler runs.
//!
//! A role is the most a user may do; the handlers then narrow it to the
//! resource (a member changes only their own jobs, an admin also every
//! public one: `jobdeck_api::may_change_job`; another user's private things
//! are answered as missing). Every route the router serves must have a
//! row: a route without one answers an opaque 500 and is refused by
//! `tests/api/authorization.rs`, which walks every route, in both the
//! direct and the gateway form, for every role.

use axum::extract::{FromRequestParts, RawPathParams, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use jobdeck_api::{Role, TokenKind};

use crate::http::audit;
use crate::http::auth::CurrentUser;
use crate::http::error::AppError;
use crate::AppState;

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone, signed in or not: only what describes the API itself, how
    /// to sign in, and accepting an invitation (whose code is the
    /// credential).
    Anyone,
    /// A signed-in user whose role is at least this one.
    AtLeast(Role),
}

use Access::{Anyone, AtLeast};
const VIEWER: Access = AtLeast(Role::Viewer);
const MEMBER: Access = AtLeast(Role::Member);
const ADMIN: Access = AtLeast(Role::Admin);

/// Every route and method the API serves, with the least role it needs.
/// Reading is for every role, changing a workspace resource for members,
/// and managing people for admins; a user's own sign-ins and tokens are
/// theirs to manage whatever their role.
pub const RULES: &[(&str, &str, Access)] = &[
    // The API's own description, and how to sign in.
    ("GET", "/openapi.json", Anyone),
    ("GET", "/auth/methods", Anyone),
    ("GET", "/auth/oidc/start", Anyone),
    ("GET", "/auth/oidc/callback", Anyone),
    // Who and what this workspace is.
    ("GET", "/", VIEWER),
    ("GET", "/workspace", VIEWER),
    ("PUT", "/workspace/log-retention", ADMIN),
    ("DELETE", "/workspace/log-retention", ADMIN),
    ("GET", "/shapes", VIEWER),
    ("GET", "/dedicated-node-groups", VIEWER),
    ("GET", "/dedicated-node-groups/{id}", VIEWER),
    ("GET", "/dedicated-node-groups/{id}/nodes", VIEWER),
    ("GET", "/storage-permission/{volume}", VIEWER),
    // Jobs and what they report.
    ("GET", "/jobs", VIEWER),
    ("POST", "/jobs", MEMBER),
    ("GET", "/jobs/{id}", VIEWER),
    ("PATCH", "/jobs/{id}", MEMBER),
    ("DELETE", "/jobs/{id}", MEMBER),
    ("POST", "/jobs/{id}/rerun", MEMBER),
    ("GET", "/jobs/{id}/replicas", VIEWER),
    ("GET", "/jobs/{id}/events", VIEWER),
    ("GET", "/jobs/{id}/replicas/{replica}/log", VIEWER),
    ("GET", "/jobs/{id}/merged-log", VIEWER),
    ("GET", "/jobs/{id}/failure-analysis", VIEWER),
    ("GET", "/jobs/{id}/metrics", VIEWER),
    ("GET", "/jobs/{id}/replicas/{replica}/metrics", VIEWER),
    ("GET", "/logs", VIEWER),
    // The event stream: what the caller may read, as it changes.
    ("GET", "/stream", VIEWER),
    ("GET", "/queue", VIEWER),
    // Templates: every role reads and renders them (rendering creates
    // nothing); keeping one's own is a member's, as creating jobs is.
    ("POST", "/jobs/convert", VIEWER),
    ("GET", "/templates/public", VIEWER),
    ("GET", "/templates/public/{id}", VIEWER),
    ("POST", "/templates/public/{id}/render", VIEWER),
    ("GET", "/templates/private", VIEWER),
    ("POST", "/templates/private", MEMBER),
    ("GET", "/templates/private/{id}", VIEWER),
    ("DELETE", "/templates/private/{id}", MEMBER),
    ("POST", "/templates/private/{id}/render", VIEWER),
    // One's own notification endpoints and rules: personal settings, as
    // tokens are, so every role keeps them (each user sees only theirs).
    ("GET", "/webhooks", VIEWER),
    ("POST", "/webhooks", VIEWER),
    ("DELETE", "/webhooks/{id}", VIEWER),
    ("POST", "/webhooks/{id}/enable", VIEWER),
    ("GET", "/webhooks/{id}/deliveries", VIEWER),
    ("GET", "/notifications", VIEWER),
    ("POST", "/notifications", VIEWER),
    ("DELETE", "/notifications/{id}", VIEWER),
    // Secrets and registry credentials: names and owners are read by every
    // role (values never leave the server); writing is a member's.
    ("GET", "/usersecrets", VIEWER),
    ("POST", "/usersecrets", MEMBER),
    ("DELETE", "/usersecrets/{name}", MEMBER),
    ("GET", "/imagepullsecrets", VIEWER),
    ("POST", "/imagepullsecrets", MEMBER),
    ("DELETE", "/imagepullsecrets/{name}", MEMBER),
    // One's own sign-ins and tokens (an admin also sees and revokes
    // everyone's: `sessions.rs`).
    ("POST", "/sessions", VIEWER),
    ("DELETE", "/sessions", VIEWER),
    ("DELETE", "/sessions/current", VIEWER),
    ("GET", "/tokens", VIEWER),
    ("POST", "/tokens", VIEWER),
    ("DELETE", "/tokens/{id}", VIEWER),
    // People.
    ("GET", "/users", ADMIN),
    ("PATCH", "/users/{name}", ADMIN),
    ("DELETE", "/users/{name}", ADMIN),
    ("GET", "/users/{name}/removal", ADMIN),
    ("PUT", "/users/{name}/email", ADMIN),
    ("GET", "/invitations", ADMIN),
    ("POST", "/invitations", ADMIN),
    ("DELETE", "/invitations/{id}", ADMIN),
    // The audit log.
    ("GET", "/audit", ADMIN),
    // Quotas and usage.
    ("GET", "/quotas", ADMIN),
    ("PUT", "/quotas/{scope}/{name}", ADMIN),
    ("DELETE", "/quotas/{scope}/{name}", ADMIN),
    ("GET", "/usage", ADMIN),
    ("GET", "/usage/history", ADMIN),
    ("GET", "/usage/logs", ADMIN),
    // Accepting an invitation: its code is the credential.
    ("POST", "/invitations/check", Anyone),
    ("POST", "/invitations/redeem", Anyone),
];

/// The rule for `method` on the route `path` (as the router writes it,
/// `/jobs/{id}`); `HEAD` is answered as `GET` is.
pub fn rule(method: &Method, path: &str) -> Option<Access> {
    let method = if method == Method::HEAD { "GET" } else { method.as_str() };
    RULES.iter().find(|(m, p, _)| *m == method && *p == path).map(|(_, _, access)| *access)
}

/// What the layer of one route needs: the state (to read the token) and
/// the route's path as the router writes it.
#[derive(Clone)]
pub struct Guard {
    pub state: AppState,
    pub path: &'static str,
}

/// Middleware on every route (not on the answers for methods a route lacks,
/// which stay 405): answers 401 without a token that signs in, 403 when the
/// caller's role is below the route's rule, and an opaque 500 for a route
/// the table forgot, before the handler runs.
pub async fn authorize(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    let Some(action) = audit::action(request.method(), guard.path) else {
        return admit(&guard, request, next).await.1;
    };
    // A request that may change something is recorded once answered,
    // refused or not (`audit.rs`).
    let (mut parts, body) = request.into_parts();
    let target = match RawPathParams::from_request_parts(&mut parts, &()).await {
        Ok(params) => params.iter().map(|(_, value)| value).collect::<Vec<_>>().join("/"),
        Err(_) => String::new(),
    };
    let source = audit::peer_of(&parts.extensions);
    let (actor, response) = admit(&guard, Request::from_parts(parts, body), next).await;
    let attempt = audit::Attempt { action, actor: actor.unwrap_or_default(), target, source };
    audit::record_answer(&guard.state.audit, attempt, response).await
}

/// The authorization itself: the answer, and who asked when the token
/// said so.
async fn admit(guard: &Guard, request: Request, next: Next) -> (Option<String>, Response) {
    let method = request.method().clone();
    let Some(access) = rule(&method, guard.path) else {
        let cause = format!("the authorization table has no rule for {method} {}", guard.path);
        return (None, AppError::internal(cause).into_response());
    };
    let AtLeast(needed) = access else { return (None, next.run(request).await) };
    let (mut parts, body) = request.into_parts();
    let user = match CurrentUser::from_request_parts(&mut parts, &guard.state).await {
        Ok(user) => user,
        Err(refused) => return (None, refused.into_response()),
    };
    let name = Some(user.name.clone());
    // What the identity provider's sign-in hands the console starts a
    // session and nothing else.
    if user.token_kind == TokenKind::SingleSignOn && !(method == Method::POST && guard.path == "/sessions") {
        let refused = AppError::TokenEnded("this token only starts a console session (POST /sessions)".into());
        return (name, refused.into_response());
    }
    if user.role < needed {
        let refused = format!(
            "{} is a {} here; {method} {}{} needs the {} role",
            user.name,
            user.role.as_str(),
            jobdeck_api::API_BASE,
            guard.path,
            needed.as_str()
        );
        return (name, AppError::Forbidden(refused).into_response());
    }
    parts.extensions.insert(user);
    (name, next.run(Request::from_parts(parts, body)).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_route_and_method_has_one_rule() {
        for (index, (method, path, _)) in RULES.iter().enumerate() {
            let again = RULES.iter().skip(index + 1).any(|(m, p, _)| m == method && p == path);
            assert!(!again, "{method} {path} has two rules");
        }
        assert_eq!(rule(&Method::HEAD, "/jobs"), Some(VIEWER), "HEAD reads as GET");
        assert_eq!(rule(&Method::PUT, "/jobs"), None);
    }

    /// A viewer changes nothing of the workspace: every rule a viewer
    /// passes reads, except the caller's own sign-ins, tokens and
    /// notification settings, and rendering a template (which stores
    /// nothing).
    #[test]
    fn a_viewer_may_only_read_and_manage_their_own_sign_ins() {
        for (method, path, access) in RULES {
            if *method != "GET" && *access == VIEWER {
                let own = ["/sessions", "/tokens", "/webhooks", "/notifications"].iter().any(|p| path.starts_with(p));
                // Rendering a template and converting a file create nothing.
                let creates_nothing = path.ends_with("/render") || *path == "/jobs/convert";
                assert!(own || creates_nothing, "a viewer may {method} {path}");
            }
        }
    }
}
