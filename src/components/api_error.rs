//! What a page shows when an API call failed: the server's message, or a
//! trip through sign-in when the token is missing or no longer accepted.

use leptos::prelude::*;

use crate::router::use_navigate_replace;
use crate::routes;
use crate::session::{current_page, use_session};

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
