//! Sign-in: through the workspace's identity provider when it has one (a
//! link to the server's `/auth/oidc/start`, which comes back here with a
//! token in the fragment, or with `?problem=` saying why not), or with the
//! token from a sign-in link's fragment (`#token=…`) or the paste box. The
//! token is traded for a console session (`POST /sessions`), the browser
//! keeps the session, and the user returns to the page they asked for
//! (`?next=`).

use leptos::prelude::*;

use crate::api::{self, ApiFailure};
use crate::router::{use_navigate_replace, use_url};
use crate::routes;
use crate::session::{start_session_with, use_session};

/// The token in a fragment such as `#token=jd_…`, if any.
pub fn token_from_fragment(fragment: &str) -> Option<String> {
    fragment
        .trim_start_matches('#')
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
        .map(routes::decode_component)
        .filter(|t| !t.is_empty())
}

/// Removes the fragment from the address bar so the token does not linger in
/// the browser history.
fn forget_fragment() {
    let Some(window) = web_sys::window() else { return };
    let location = window.location();
    let path = format!("{}{}", location.pathname().unwrap_or_default(), location.search().unwrap_or_default());
    if let Ok(history) = window.history() {
        let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&path));
    }
}

#[component]
pub fn LoginPage() -> impl IntoView {
    let session = use_session();
    let url = use_url();
    let navigate = use_navigate_replace();
    let pasted = RwSignal::new(String::new());
    // Why the identity provider's sign-in did not work, when the server sent
    // the person back here with a code. Only a known code is shown: anyone
    // can make a link to this page, so its words must be Jobdeck's.
    let problem = url.get_untracked().param("problem");
    let error = RwSignal::new(
        problem.as_deref().and_then(jobdeck_api::SignInProblem::from_code).map(|p| p.sentence().to_string()),
    );
    let provider = RwSignal::new(None::<jobdeck_api::SingleSignOnMethod>);
    leptos::task::spawn_local(async move {
        if let Ok(methods) = api::sign_in_methods().await {
            provider.set(methods.single_sign_on);
        }
    });
    // The provider's sign-in lands on the page asked for, as a token does.
    let next = routes::safe_next(url.get_untracked().param("next").as_deref());
    let provider_link = move || {
        provider.get().map(|method| {
            let href = format!("{}?next={}", method.start, routes::encode_component(&next));
            view! {
                <p>
                    <a class="button primary single-sign-on" href=href rel="external">
                        {format!("Sign in with {}", method.name)}
                    </a>
                </p>
            }
        })
    };
    let busy = RwSignal::new(false);

    let try_token = move |token: String| {
        let navigate = navigate.clone();
        busy.set(true);
        error.set(None);
        leptos::task::spawn_local(async move {
            // The browser keeps a session made from the token, never the
            // token itself: a sign-in link's token expires within a day,
            // and signing out revokes only the session.
            match start_session_with(session, &token).await {
                Ok(_) => {
                    let next = routes::safe_next(url.get_untracked().param("next").as_deref());
                    navigate(&next);
                }
                Err(failure) => {
                    error.set(Some(match failure {
                        ApiFailure::Unauthorized => {
                            "This token is not valid, or has expired or been revoked. Ask for a new one, or create one with `jobdeck token create --user <name>`.".to_string()
                        }
                        other => other.to_string(),
                    }));
                }
            }
            busy.set(false);
        });
    };

    // A sign-in link carries the token in the fragment, which never reaches
    // the server's logs.
    let from_link = web_sys::window().and_then(|w| w.location().hash().ok()).and_then(|h| token_from_fragment(&h));
    if let Some(token) = from_link {
        forget_fragment();
        try_token(token);
    }

    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let token = pasted.get_untracked().trim().to_string();
        if token.is_empty() {
            error.set(Some("Paste your API token first.".into()));
            return;
        }
        try_token(token);
    };

    view! {
        <section class="page narrow">
            <h1>"Sign in to Jobdeck"</h1>
            {provider_link}
            <p class="help">
                "Open the sign-in link the server printed, or paste an API token below."
            </p>
            <form class="card" on:submit=on_submit>
                <label for="token">"API token"</label>
                <input
                    id="token"
                    type="password"
                    autocomplete="off"
                    spellcheck="false"
                    aria-describedby="token-error"
                    bind:value=pasted
                />
                <p id="token-error" class="field-error" role="alert">{move || error.get()}</p>
                <button type="submit" class="primary" disabled=move || busy.get()>
                    {move || if busy.get() { "Signing in…" } else { "Sign in" }}
                </button>
            </form>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn fragment_tokens() {
        assert_eq!(token_from_fragment("#token=jd_abc"), Some("jd_abc".into()));
        assert_eq!(token_from_fragment("#x=1&token=jd_abc"), Some("jd_abc".into()));
        assert_eq!(token_from_fragment("#token="), None);
        assert_eq!(token_from_fragment(""), None);
        assert_eq!(token_from_fragment("#L10-L20"), None);
    }
}
