//! What a page shows when an API call failed: the server's message, or a
//! trip through sign-in when the token is missing or no longer accepted.

use leptos::prelude::*;

use crate::api::ApiFailure;
use crate::router::use_navigate_replace;
use crate::routes;
use crate::session::{current_page, use_session};

/// The fallback of an `ErrorBoundary` around API-backed content.
#[component]
pub fn ApiErrorView(errors: ArcRwSignal<Errors>) -> impl IntoView {
    let session = use_session();
    let navigate = use_navigate_replace();
    move || {
        let failures: Vec<String> = errors
            .get()
            .into_iter()
            .map(|(_, e)| match e.downcast_ref::<ApiFailure>() {
                Some(failure) => failure.clone(),
                None => ApiFailure::Network(e.to_string()),
            })
            .map(|failure| {
                if failure == ApiFailure::Unauthorized {
                    session.sign_out();
                    navigate(&routes::login_then(&current_page()));
                }
                failure.to_string()
            })
            .collect();
        view! {
            <div class="banner error" role="alert">
                {failures.into_iter().map(|m| view! { <p>{m}</p> }).collect_view()}
            </div>
        }
    }
}

/// Signs the user out and sends them through sign-in back to this page: for
/// a token the server stopped accepting while a view was updating itself.
pub fn use_sign_in_again() -> impl Fn() + Clone + 'static {
    let session = use_session();
    let navigate = use_navigate_replace();
    move || {
        session.sign_out();
        navigate(&routes::login_then(&current_page()));
    }
}

/// A line saying live updates are paused, shown while polling fails; the
/// data already on screen stays.
#[component]
pub fn LiveNote(problem: RwSignal<Option<String>>) -> impl IntoView {
    view! {
        <p class="live-note" role="status">
            {move || problem.get().map(|p| format!("Live updates paused ({p}); retrying."))}
        </p>
    }
}
