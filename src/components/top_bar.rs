//! The bar on every page: where you are, who you are, and a way out.

use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::use_navigate;

use crate::api;
use crate::routes;
use crate::session::use_session;

#[component]
pub fn TopBar() -> impl IntoView {
    let session = use_session();
    // Asks the server who the token belongs to whenever the token changes.
    Effect::new(move |_| {
        if session.token.get().is_some() {
            leptos::task::spawn_local(async move {
                if let Ok(info) = api::workspace().await {
                    session.user.set(Some(info.current_user));
                }
            });
        }
    });
    let navigate = use_navigate();
    let sign_out = move |_| {
        session.sign_out();
        navigate(routes::LOGIN, Default::default());
    };
    view! {
        <header class="top-bar">
            <a class="skip-link" href="#main">"Skip to content"</a>
            <A href=routes::JOBS attr:class="brand">"Jobdeck"</A>
            <nav aria-label="Main">
                <A href=routes::JOBS>"Deployments"</A>
                <A href=routes::NEW_JOB>"New job"</A>
            </nav>
            <div class="who">
                <Show when=move || session.token.get().is_some()>
                    <span class="user" title="Signed in as">
                        {move || session.user.get().unwrap_or_default()}
                    </span>
                    <button type="button" class="link" on:click=sign_out.clone()>"Sign out"</button>
                </Show>
            </div>
        </header>
    }
}
