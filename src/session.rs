//! The signed-in session: the API token, kept in the browser's local storage
//! so a reload or a new tab stays signed in.

use leptos::prelude::*;

const TOKEN_KEY: &str = "jobdeck.token";

/// The session, provided as context at the app's root.
#[derive(Clone, Copy)]
pub struct Session {
    /// The token, or `None` when signed out.
    pub token: RwSignal<Option<String>>,
    /// The signed-in user's name, once the server has confirmed it.
    pub user: RwSignal<Option<String>>,
    /// That user's role, known with the name: the console offers only what
    /// the role may do (the server enforces it either way).
    pub role: RwSignal<Option<jobdeck_api::Role>>,
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok()?
}

/// The token kept in the browser, if any.
pub fn stored_token() -> Option<String> {
    storage()?.get_item(TOKEN_KEY).ok()?.filter(|t| !t.is_empty())
}

impl Session {
    pub fn from_storage() -> Self {
        Self { token: RwSignal::new(stored_token()), user: RwSignal::new(None), role: RwSignal::new(None) }
    }

    pub fn sign_in(&self, token: &str) {
        if let Some(s) = storage() {
            let _ = s.set_item(TOKEN_KEY, token);
        }
        self.token.set(Some(token.to_string()));
    }

    pub fn sign_out(&self) {
        if let Some(s) = storage() {
            let _ = s.remove_item(TOKEN_KEY);
        }
        self.token.set(None);
        self.user.set(None);
        self.role.set(None);
        set_root_role(None);
    }

    /// Records who the server says the token belongs to, and puts the role
    /// on the page's root element (`data-role`), where the style sheet hides
    /// what the role may not use: an element only members and admins may
    /// use has the class `needs-member`. One attribute costs the console
    /// less than a reactive condition on each such element.
    pub fn confirm(&self, me: &crate::api::Me) {
        self.user.set(Some(me.current_user.clone()));
        self.role.set(Some(me.current_user_role));
        set_root_role(Some(me.current_user_role));
    }
}

/// Sets or removes `data-role` on the document's root element.
fn set_root_role(role: Option<jobdeck_api::Role>) {
    let Some(root) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.document_element()) else { return };
    let _ = match role {
        Some(role) => root.set_attribute("data-role", role.as_str()),
        None => root.remove_attribute("data-role"),
    };
}

/// Signs in with `token`: trades it for a console session (`POST
/// /sessions`), which the browser keeps instead of the token, and records
/// who the session is. On failure the browser is left signed out.
pub async fn start_session_with(session: Session, token: &str) -> crate::api::ApiResult<crate::api::Me> {
    session.sign_in(token);
    let signed_in = match crate::api::start_session().await {
        Ok(started) => {
            session.sign_in(&started.token);
            crate::api::me().await
        }
        Err(failure) => Err(failure),
    };
    match signed_in {
        Ok(me) => {
            session.confirm(&me);
            Ok(me)
        }
        Err(failure) => {
            session.sign_out();
            Err(failure)
        }
    }
}

/// The session from context.
pub fn use_session() -> Session {
    crate::provided::<Session>()
}

/// The current page as a path with its query and fragment, to come back to
/// after signing in.
pub fn current_page() -> String {
    let Some(location) = web_sys::window().map(|w| w.location()) else {
        return String::from("/");
    };
    format!(
        "{}{}{}",
        location.pathname().unwrap_or_default(),
        location.search().unwrap_or_default(),
        location.hash().unwrap_or_default()
    )
}

/// Sends a signed-out visitor through sign-in, to come back to this page.
/// Returns whether the visitor is signed in.
pub fn require_sign_in() -> bool {
    let session = use_session();
    if session.token.get_untracked().is_some() {
        return true;
    }
    crate::router::navigate_replace(&crate::routes::login_then(&current_page()));
    false
}
