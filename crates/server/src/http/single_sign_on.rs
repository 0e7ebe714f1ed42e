//! Sign-in through an OpenID Connect provider (`[auth.oidc]`): the
//! authorization code flow with PKCE, by the `openidconnect` crate.
//!
//! `GET /auth/oidc/start?next=PATH` sends the browser to the provider with a
//! fresh state, nonce and PKCE challenge, remembered here for ten minutes;
//! the provider sends it back to `GET /auth/oidc/callback`, which takes the
//! state (once: a replay finds nothing), trades the code for tokens with the
//! PKCE verifier, and has the crate verify the ID token (the provider's
//! signature, issuer, audience, expiry and the nonce). The user is found by
//! the provider's issuer and subject, never by a name, and may be refused
//! by the allowed domains or groups. The browser then goes to the console's
//! sign-in page with a single-sign-on token in the fragment, which the
//! console trades for a session once (`POST /sessions`) and which does
//! nothing else. The provider's discovery document is read at each start
//! and callback, so a key it rotates is picked up at once.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Json;
use base64::Engine;
use jobdeck_api::invitations::{is_user_name_char, USER_NAME_MAX_LEN};
use jobdeck_api::{AuditOutcome, Role, SignInMethods, SignInProblem, SingleSignOnMethod, TokenKind};
use jobdeck_core::config::OidcConfig;
use jobdeck_store::{AuditRecord, Claimant, NewIdentityUser, Redemption, RoleChanged, UserRow};
use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata};
use openidconnect::{
    AccessTokenHash, AuthorizationCode, ClientId, ClientSecret, CsrfToken, IssuerUrl, Nonce, OAuth2TokenResponse,
    PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope, TokenResponse,
};
use serde::Deserialize;
use serde_json::Value;

use crate::http::audit::Peer;
use crate::http::auth::{self, TokenRequest};
use crate::http::error::{ApiQuery, AppError, AppResult};
use crate::{now_millis, AppState, Route};

pub fn routes() -> Vec<Route> {
    vec![
        ("/auth/methods", get(methods)),
        (jobdeck_api::tokens::SINGLE_SIGN_ON_START, get(start)),
        (jobdeck_api::tokens::SINGLE_SIGN_ON_CALLBACK, get(callback)),
    ]
}

/// How long a sign-in started here may take at the provider.
const PENDING_LIFETIME: Duration = Duration::from_secs(600);
/// The most sign-ins in progress at once; more are refused rather than
/// let an anonymous caller grow the server's memory.
const MAX_PENDING: usize = 10_000;
/// How long the token handed to the console lives: it is traded at once.
const HAND_OVER_LIFETIME: Duration = Duration::from_secs(120);
/// How long a call to the provider may take.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(15);

/// Why a sign-in through the provider failed.
#[derive(Debug, thiserror::Error)]
pub enum SignOnError {
    /// The provider could not be reached or answered what cannot be used.
    #[error("the identity provider cannot be used: {0}")]
    Provider(String),
    /// The person may not sign in here, or the answer does not prove who
    /// they are: the sign-in page is told which, the log says the details.
    #[error("{code}: {1}", code = .0.code())]
    Refused(SignInProblem, String),
}

/// What a sign-in in progress remembers between start and callback.
struct Pending {
    nonce: Nonce,
    verifier: PkceCodeVerifier,
    next: String,
    /// The hash of the invitation code the sign-in came with, if any.
    invitation: Option<String>,
    started: Instant,
}

/// The provider's settings as the server uses them, and the sign-ins in
/// progress, keyed by the SHA-256 of their state (compared as a hash, so
/// the lookup's timing says nothing of the secret).
pub struct SingleSignOn {
    config: OidcConfig,
    secret: Option<String>,
    public_url: String,
    http: openidconnect::reqwest::Client,
    pending: Mutex<HashMap<String, Pending>>,
}

impl SingleSignOn {
    /// The button the sign-in and invitation pages show.
    pub fn method(&self) -> SingleSignOnMethod {
        SingleSignOnMethod {
            name: self.config.display_name.clone(),
            start: format!("{}{}", jobdeck_api::API_BASE, jobdeck_api::tokens::SINGLE_SIGN_ON_START),
        }
    }

    /// The provider of `[auth.oidc]`, its client secret read now (a secret
    /// that cannot be read stops the start, saying where it looked).
    pub fn from_config(config: &OidcConfig, public_url: &str) -> Result<SingleSignOn, String> {
        let secret = match (&config.client_secret_file, &config.client_secret_env) {
            (Some(path), _) => Some(
                std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read auth.oidc.client_secret_file {}: {e}", path.display()))?
                    .trim()
                    .to_string(),
            ),
            (None, Some(name)) => Some(std::env::var(name).map_err(|_| {
                format!("auth.oidc.client_secret_env names {name}, which is not set in the server's environment")
            })?),
            (None, None) => None,
        };
        // Following a redirect from the provider's endpoints would let it
        // point the server at any address (server-side request forgery).
        let http = openidconnect::reqwest::ClientBuilder::new()
            .redirect(openidconnect::reqwest::redirect::Policy::none())
            .timeout(PROVIDER_TIMEOUT)
            .build()
            .map_err(|e| format!("cannot make the identity provider's HTTP client: {e}"))?;
        Ok(SingleSignOn {
            config: config.clone(),
            secret,
            public_url: public_url.trim_end_matches('/').to_string(),
            http,
            pending: Mutex::new(HashMap::new()),
        })
    }

    fn redirect_uri(&self) -> String {
        format!("{}{}{}", self.public_url, jobdeck_api::API_BASE, jobdeck_api::tokens::SINGLE_SIGN_ON_CALLBACK)
    }

    /// The provider's discovery document.
    async fn metadata(&self) -> Result<CoreProviderMetadata, SignOnError> {
        let issuer = IssuerUrl::new(self.config.issuer.clone()).map_err(|e| SignOnError::Provider(e.to_string()))?;
        CoreProviderMetadata::discover_async(issuer, &self.http)
            .await
            .map_err(|e| SignOnError::Provider(format!("discovery at {} failed: {}", self.config.issuer, chain(&e))))
    }

    /// Remembers a sign-in in progress; `false` when too many are.
    fn remember(&self, state: &str, pending: Pending) -> bool {
        let mut all = self.pending.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        all.retain(|_, p| p.started.elapsed() < PENDING_LIFETIME);
        if all.len() >= MAX_PENDING {
            return false;
        }
        all.insert(auth::hash_token(state), pending);
        true
    }

    /// Takes the sign-in `state` started, once.
    fn take(&self, state: &str) -> Option<Pending> {
        let mut all = self.pending.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        all.remove(&auth::hash_token(state)).filter(|p| p.started.elapsed() < PENDING_LIFETIME)
    }
}

/// `GET /auth/methods`: whether the sign-in page offers the provider.
async fn methods(State(state): State<AppState>) -> Json<SignInMethods> {
    Json(SignInMethods { single_sign_on: state.single_sign_on.as_ref().map(|sso| sso.method()) })
}

fn configured(state: &AppState) -> AppResult<&SingleSignOn> {
    state.single_sign_on.as_deref().ok_or_else(|| AppError::NotFound("single sign-on is not configured here".into()))
}

/// A 303 to the console's sign-in page, which says what `problem` means.
fn back_to_sign_in(sso: &SingleSignOn, problem: SignInProblem) -> Response {
    see_other(&format!("{}/login?problem={}", sso.public_url, problem.code()))
}

/// A 303 to `location`.
fn see_other(location: &str) -> Response {
    (StatusCode::SEE_OTHER, [(header::LOCATION, location.to_string()), (header::CACHE_CONTROL, "no-store".into())])
        .into_response()
}

#[derive(Debug, Deserialize)]
struct StartQuery {
    next: Option<String>,
    /// An invitation's code: the identity that comes back accepts it.
    invitation: Option<String>,
}

/// `GET /auth/oidc/start?next=PATH[&invitation=CODE]`: to the provider. An
/// invitation that lets nobody in is said before the provider is asked.
/// (The request log writes routes without their queries, so the code is
/// not kept there.)
async fn start(State(state): State<AppState>, ApiQuery(query): ApiQuery<StartQuery>) -> AppResult<Response> {
    let sso = configured(&state)?;
    let next = match query.next {
        Some(next) if jobdeck_api::tokens::is_same_site_path(&next) => next,
        Some(_) => return Err(AppError::BadRequest("next must be a path on this site, such as /jobs".into())),
        None => "/jobs".into(),
    };
    let invitation = match query.invitation {
        Some(code) => {
            let hash = auth::hash_token(&code);
            if state.store.open_invitation(&hash, now_millis()).await?.is_none() {
                return Ok(back_to_sign_in(sso, SignInProblem::InvitationUnusable));
            }
            Some(hash)
        }
        None => None,
    };
    let metadata = match sso.metadata().await {
        Ok(metadata) => metadata,
        Err(failed) => {
            tracing::warn!("single sign-on cannot start: {failed}");
            return Ok(back_to_sign_in(sso, SignInProblem::Unreachable));
        }
    };
    let client = CoreClient::from_provider_metadata(
        metadata,
        ClientId::new(sso.config.client_id.clone()),
        sso.secret.clone().map(ClientSecret::new),
    )
    .set_redirect_uri(RedirectUrl::new(sso.redirect_uri()).map_err(AppError::internal)?);
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request =
        client.authorize_url(CoreAuthenticationFlow::AuthorizationCode, CsrfToken::new_random, Nonce::new_random);
    for scope in &sso.config.scopes {
        request = request.add_scope(Scope::new(scope.clone()));
    }
    let (url, csrf, nonce) = request.set_pkce_challenge(challenge).url();
    let pending = Pending { nonce, verifier, next, invitation, started: Instant::now() };
    if !sso.remember(csrf.secret(), pending) {
        return Err(AppError::TooManyRequests("too many sign-ins are in progress; try again in a minute".into()));
    }
    Ok(see_other(url.as_str()))
}

#[derive(Debug, Deserialize)]
struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    /// RFC 9207: the issuer of the answer, when the provider says it.
    iss: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// `GET /auth/oidc/callback`: back from the provider. Every outcome sends
/// the browser to the sign-in page: signed in with a token to trade, or
/// with a sentence saying why not.
async fn callback(
    State(state): State<AppState>,
    Peer(source): Peer,
    ApiQuery(query): ApiQuery<CallbackQuery>,
) -> AppResult<Response> {
    let sso = configured(&state)?;
    // Every way out is a sign-in or a failed one in the audit log, with
    // the reason (`problem: why`).
    let failed = |problem: SignInProblem, why: String| {
        let record = AuditRecord {
            time: now_millis(),
            action: "sign_in.failed".into(),
            outcome: AuditOutcome::Refused.as_str().into(),
            detail: format!("{}: {why}", problem.code()),
            source: source.clone(),
            ..AuditRecord::default()
        };
        state.audit.append(record);
        async move { back_to_sign_in(sso, problem) }
    };
    let Some(pending) = query.state.as_deref().and_then(|s| sso.take(s)) else {
        tracing::info!("single sign-on refused: an unknown, expired or already used state");
        return Ok(failed(SignInProblem::Expired, "an unknown, expired or already used state".into()).await);
    };
    if let Some(error) = query.error {
        let said = query.error_description.unwrap_or_default();
        tracing::info!(error, said, "single sign-on: the provider refused");
        return Ok(failed(SignInProblem::ProviderRefused, format!("{error}: {said}")).await);
    }
    if query.iss.as_deref().is_some_and(|iss| iss != sso.config.issuer) {
        tracing::info!(iss = query.iss, "single sign-on refused: an answer from another issuer");
        let why = format!("an answer from the issuer {}", query.iss.unwrap_or_default());
        return Ok(failed(SignInProblem::OtherIssuer, why).await);
    }
    let Some(code) = query.code else {
        tracing::info!("single sign-on refused: the provider sent no code");
        return Ok(failed(SignInProblem::InvalidAnswer, "the provider sent no code".into()).await);
    };
    let answer = ProviderAnswer { code, nonce: pending.nonce, verifier: pending.verifier };
    match sign_on(&state, sso, answer, pending.invitation).await {
        Ok(user) => {
            let request = TokenRequest {
                kind: TokenKind::SingleSignOn,
                name: "single sign-on".into(),
                lifetime: Some(HAND_OVER_LIFETIME),
                origin_id: None,
            };
            let issued = auth::issue_token(&state.store, &user.name, request).await?;
            tracing::info!(user = user.name, "signed in through the identity provider");
            let record = AuditRecord {
                time: now_millis(),
                actor: user.name.clone(),
                action: "sign_in".into(),
                target: user.name.clone(),
                outcome: AuditOutcome::Ok.as_str().into(),
                detail: format!("through the identity provider, as a {}", user.role.as_str()),
                source: source.clone(),
            };
            state.audit.append(record);
            let next: String = form_urlencoded::byte_serialize(pending.next.as_bytes()).collect();
            Ok(see_other(&format!("{}/login?next={next}#token={}", sso.public_url, issued.secret)))
        }
        Err(SignOnError::Refused(problem, why)) => {
            tracing::info!(problem = problem.code(), why, "single sign-on refused");
            Ok(failed(problem, why).await)
        }
        Err(provider @ SignOnError::Provider(_)) => {
            tracing::warn!("single sign-on failed: {provider}");
            Ok(failed(SignInProblem::Unreachable, provider.to_string()).await)
        }
    }
}

/// What the provider sent back, with what the start kept to check it.
struct ProviderAnswer {
    code: String,
    nonce: Nonce,
    verifier: PkceCodeVerifier,
}

/// Finds who the answer proves signed in, applies the allowed domains and
/// groups, and finds or makes the user, with the invitation when there is
/// one.
async fn sign_on(
    state: &AppState,
    sso: &SingleSignOn,
    answer: ProviderAnswer,
    invitation: Option<String>,
) -> Result<UserRow, SignOnError> {
    let identity = verified_identity(sso, answer).await?;
    admit(&sso.config, &identity)?;
    let issuer = sso.config.issuer.clone();
    let mapped = mapped_role(&sso.config, &identity.groups);
    let new = NewIdentityUser {
        name: identity.name.clone(),
        issuer: issuer.clone(),
        subject: identity.subject.clone(),
        // Kept only when the provider vouches for it: email notifications
        // go to it (docs/teams.md, "Email addresses").
        email: identity.email.clone().filter(|_| identity.email_verified),
        role: mapped.unwrap_or(sso.config.default_role),
        now: now_millis(),
    };
    let user = match invitation {
        // The invitation binds to this identity, once, in one transaction
        // with making the user.
        Some(hash) => match state.store.redeem_invitation(&hash, Claimant::Identity(new), now_millis()).await {
            Ok(Redemption::Admitted(user)) => {
                tracing::info!(user = user.name, role = user.role.as_str(), "joined with an invitation");
                user
            }
            Ok(_) => return Err(SignOnError::Refused(SignInProblem::InvitationUnusable, "used meanwhile".into())),
            Err(e) => return Err(store_failed(e)),
        },
        None if state.store.identity_removed(&issuer, &identity.subject).await.map_err(store_failed)? => {
            return Err(SignOnError::Refused(SignInProblem::Removed, format!("{} was removed", new.name)));
        }
        None => match state.store.user_by_identity(&issuer, &identity.subject).await.map_err(store_failed)? {
            Some(user) => user,
            None if sso.config.invitation_required => {
                return Err(SignOnError::Refused(SignInProblem::NotInvited, format!("{} has no invitation", new.name)))
            }
            None => state.store.create_identity_user(new).await.map_err(store_failed)?,
        },
    };
    // With groups mapped to roles, the provider says who is what, at every
    // sign-in (an invitation's role too); the workspace's only admin stays
    // one until another exists.
    match mapped {
        Some(role) if role != user.role => match state.store.set_user_role(&user.name, role).await {
            Ok(RoleChanged::Changed(changed)) => Ok(changed),
            Ok(_) => Ok(user),
            Err(e) => Err(store_failed(e)),
        },
        _ => Ok(user),
    }
}

/// Trades the code for tokens and verifies the ID token (and the access
/// token's hash, and userinfo when the claims needed are not in the ID
/// token): who the provider says signed in.
async fn verified_identity(sso: &SingleSignOn, answer: ProviderAnswer) -> Result<Identity, SignOnError> {
    let ProviderAnswer { code, nonce, verifier } = answer;
    let metadata = sso.metadata().await?;
    let userinfo_url = metadata.userinfo_endpoint().map(|u| u.url().clone());
    let client = CoreClient::from_provider_metadata(
        metadata,
        ClientId::new(sso.config.client_id.clone()),
        sso.secret.clone().map(ClientSecret::new),
    )
    .set_redirect_uri(RedirectUrl::new(sso.redirect_uri()).map_err(|e| SignOnError::Provider(e.to_string()))?);
    let response = client
        .exchange_code(AuthorizationCode::new(code))
        .map_err(|e| SignOnError::Provider(e.to_string()))?
        .set_pkce_verifier(verifier)
        .request_async(&sso.http)
        .await
        .map_err(|e| {
            SignOnError::Refused(SignInProblem::ProviderRefused, format!("the code was not traded: {}", chain(&e)))
        })?;
    let id_token = response.id_token().ok_or_else(|| SignOnError::Provider("no ID token in its answer".into()))?;
    let verifier = client.id_token_verifier();
    let claims =
        id_token.claims(&verifier, &nonce).map_err(|e| invalid(format!("the ID token is not valid: {}", chain(&e))))?;
    if let Some(expected) = claims.access_token_hash() {
        let refused = |e: &dyn std::error::Error| invalid(format!("the access token is not valid: {e}"));
        let algorithm = id_token.signing_alg().map_err(|e| refused(&e))?;
        let key = id_token.signing_key(&verifier).map_err(|e| refused(&e))?;
        let actual = AccessTokenHash::from_token(response.access_token(), algorithm, key).map_err(|e| refused(&e))?;
        if actual != *expected {
            return Err(invalid("the access token does not belong to the ID token".into()));
        }
    }
    let subject = claims.subject().as_str().to_string();
    // The verified token's claims as JSON, for the claims the config names
    // (a username claim, groups), which the crate's types do not carry.
    let mut facts = token_payload(&id_token.to_string())?;
    let wanted = [sso.config.username_claim.as_str(), sso.config.groups_claim.as_str(), "email", "email_verified"];
    if wanted.iter().any(|claim| !facts.contains_key(*claim)) {
        if let Some(url) = userinfo_url {
            let more = userinfo(sso, url, response.access_token().secret()).await?;
            // The userinfo answer must be about the same person (OIDC Core 5.3.2).
            if more.get("sub").and_then(Value::as_str) != Some(subject.as_str()) {
                return Err(invalid("the userinfo answer is about someone else".into()));
            }
            for (claim, value) in more.as_object().into_iter().flatten() {
                facts.entry(claim.clone()).or_insert(value.clone());
            }
        }
    }
    Identity::read(&sso.config, &facts, subject)
}

/// An answer that failed a check; `why` goes to the log.
fn invalid(why: String) -> SignOnError {
    SignOnError::Refused(SignInProblem::InvalidAnswer, why)
}

fn store_failed(e: jobdeck_store::StoreError) -> SignOnError {
    SignOnError::Provider(format!("the store failed: {e}"))
}

/// The claims part of a compact JWT, as JSON. Only called on a token whose
/// signature and claims were verified.
fn token_payload(jwt: &str) -> Result<serde_json::Map<String, Value>, SignOnError> {
    let part = jwt.split('.').nth(1).ok_or_else(|| invalid("the ID token is not a JWT".into()))?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part.trim_end_matches('='))
        .map_err(|_| invalid("the ID token's claims are not base64url".into()))?;
    serde_json::from_slice(&bytes).map_err(|_| invalid("the ID token's claims are not JSON".into()))
}

/// The provider's userinfo answer for an access token.
async fn userinfo(sso: &SingleSignOn, url: openidconnect::url::Url, access_token: &str) -> Result<Value, SignOnError> {
    let answer = sso
        .http
        .get(url)
        .bearer_auth(access_token)
        .header(header::ACCEPT, "application/json")
        .send()
        .await
        .and_then(|r| r.error_for_status())
        .map_err(|e| SignOnError::Provider(format!("userinfo: {}", chain(&e))))?;
    let bytes = answer.bytes().await.map_err(|e| SignOnError::Provider(format!("userinfo: {}", chain(&e))))?;
    serde_json::from_slice(&bytes).map_err(|e| SignOnError::Provider(format!("userinfo is not JSON: {e}")))
}

/// Who the provider says signed in.
#[derive(Debug, Clone, PartialEq)]
struct Identity {
    subject: String,
    /// The name here, cleaned from the username claim.
    name: String,
    email: Option<String>,
    email_verified: bool,
    groups: Vec<String>,
}

impl Identity {
    fn read(config: &OidcConfig, facts: &serde_json::Map<String, Value>, subject: String) -> Result<Self, SignOnError> {
        let text = |claim: &str| facts.get(claim).and_then(Value::as_str).map(str::to_string);
        let suggested = text(&config.username_claim).ok_or_else(|| {
            SignOnError::Refused(
                SignInProblem::NoUsername,
                format!("no claim {} (auth.oidc.username_claim)", config.username_claim),
            )
        })?;
        let groups = match facts.get(&config.groups_claim) {
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_string).collect(),
            Some(Value::String(one)) => vec![one.clone()],
            _ => Vec::new(),
        };
        Ok(Identity {
            subject,
            name: clean_name(&suggested),
            email: text("email"),
            email_verified: facts.get("email_verified").and_then(Value::as_bool) == Some(true),
            groups,
        })
    }
}

/// A provider's suggested name as a name here, by the rules of names made
/// any other way (`jobdeck_api::invitations::user_name_problems`): letters,
/// digits and `._@+-` kept, anything else a `-`, starting with a letter or
/// a digit, at most 64 characters; never empty.
fn clean_name(suggested: &str) -> String {
    let cleaned: String = suggested
        .trim()
        .chars()
        .map(|c| if is_user_name_char(c) { c } else { '-' })
        .skip_while(|c| !c.is_ascii_alphanumeric())
        .take(USER_NAME_MAX_LEN)
        .collect();
    if cleaned.trim_matches('-').is_empty() {
        "user".into()
    } else {
        cleaned
    }
}

/// Whether the allowed domains and groups let `identity` in.
fn admit(config: &OidcConfig, identity: &Identity) -> Result<(), SignOnError> {
    if !config.allowed_domains.is_empty() {
        let domain = identity.email.as_deref().and_then(|e| e.rsplit_once('@')).map(|(_, d)| d.to_ascii_lowercase());
        let allowed =
            domain.as_deref().is_some_and(|d| config.allowed_domains.iter().any(|a| a.eq_ignore_ascii_case(d)));
        if !allowed || !identity.email_verified {
            return Err(SignOnError::Refused(
                SignInProblem::NotAdmitted,
                format!("only verified e-mail addresses of {} may sign in", config.allowed_domains.join(", ")),
            ));
        }
    }
    if !config.allowed_groups.is_empty() && !identity.groups.iter().any(|g| config.allowed_groups.contains(g)) {
        return Err(SignOnError::Refused(
            SignInProblem::NotAdmitted,
            format!("only members of {} may sign in", config.allowed_groups.join(", ")),
        ));
    }
    Ok(())
}

/// The role the groups give, when groups map to roles: the strongest one,
/// or the default role for a user in no mapped group.
fn mapped_role(config: &OidcConfig, groups: &[String]) -> Option<Role> {
    if config.roles.is_empty() {
        return None;
    }
    let strongest: Option<Role> = groups.iter().filter_map(|g| config.roles.get(g).copied()).max();
    Some(strongest.unwrap_or(config.default_role))
}

/// An error and its sources in one line.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra: &str) -> OidcConfig {
        toml::from_str(&format!("issuer = 'https://id.example'\nclient_id = 'c'\n{extra}")).unwrap()
    }

    fn identity(email: Option<&str>, verified: bool, groups: &[&str]) -> Identity {
        Identity {
            subject: "s".into(),
            name: "ann".into(),
            email: email.map(String::from),
            email_verified: verified,
            groups: groups.iter().map(|g| g.to_string()).collect(),
        }
    }

    #[test]
    fn names_are_cleaned_and_never_empty() {
        assert_eq!(clean_name("ann.lee@example.com"), "ann.lee@example.com");
        assert_eq!(clean_name("Ann Lee/../x"), "Ann-Lee-..-x");
        assert_eq!(clean_name("  "), "user");
        assert_eq!(clean_name("\u{202e}"), "user");
        assert_eq!(clean_name("../root"), "root", "a name starts with a letter or a digit");
        assert!(jobdeck_api::invitations::user_name_problems(&clean_name("@@x y")).is_empty());
        assert_eq!(clean_name(&"x".repeat(100)).len(), 64);
    }

    #[test]
    fn domains_need_a_verified_address_and_groups_a_membership() {
        let domains = config("allowed_domains = ['example.com']");
        assert!(admit(&domains, &identity(Some("ann@Example.COM"), true, &[])).is_ok());
        assert!(admit(&domains, &identity(Some("ann@example.com"), false, &[])).is_err(), "unverified");
        assert!(admit(&domains, &identity(Some("ann@example.com.evil"), true, &[])).is_err());
        assert!(admit(&domains, &identity(None, true, &[])).is_err());
        let groups = config("allowed_groups = ['ml']");
        assert!(admit(&groups, &identity(None, false, &["ml", "x"])).is_ok());
        assert!(admit(&groups, &identity(None, false, &["mlx"])).is_err());
    }

    #[test]
    fn groups_give_the_strongest_mapped_role_or_the_default() {
        let mapped = config("default_role = 'viewer'\n[roles]\nml = 'member'\nml-admins = 'admin'");
        let groups = |g: &[&str]| g.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(mapped_role(&mapped, &groups(&["ml", "ml-admins"])), Some(Role::Admin));
        assert_eq!(mapped_role(&mapped, &groups(&["other"])), Some(Role::Viewer));
        assert_eq!(mapped_role(&config(""), &groups(&["ml-admins"])), None, "no mapping: admins set roles");
    }
}
