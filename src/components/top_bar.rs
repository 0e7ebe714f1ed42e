//! The bar on every page: where you are, who you are, a way out, and a
//! standing notice when jobs run without isolation, and for admins one when
//! the logs near the disk budget, which leads to the storage page.

use leptos::prelude::*;

use crate::api;
use crate::router::{use_navigate, use_url};
use crate::routes;
use crate::session::use_session;

#[component]
pub fn TopBar() -> impl IntoView {
    let session = use_session();
    // A standing notice while jobs run without isolation from the server's
    // user (process mode, Slurm beside the server): never silent.
    let notice = RwSignal::new(None::<String>);
    // An admin's, when the logs near the workspace's disk budget.
    let storage_notice = RwSignal::new(None::<String>);
    // Asks the server who the token belongs to whenever the token changes.
    Effect::new(move |_| {
        if session.token.get().is_some() {
            leptos::task::spawn_local(async move {
                if let Ok(info) = api::me().await {
                    session.confirm(&info);
                    notice.set(info.isolation_warning);
                    storage_notice.set(info.log_retention.and_then(|r| r.warning));
                }
            });
        }
    });
    let navigate = use_navigate();
    let sign_out = move |_| {
        let navigate = navigate.clone();
        leptos::task::spawn_local(async move {
            // The server revokes the session first; the browser forgets it
            // either way (a server that cannot be reached does not keep
            // anyone signed in here).
            let _ = api::end_session().await;
            session.sign_out();
            navigate(routes::LOGIN);
        });
    };
    let url = use_url();
    // The nav link of the section the user is in is marked for screen readers
    // and styled as current.
    let current = move |section: &'static str| {
        url.with(|u| {
            let in_section = match section {
                routes::NEW_JOB | routes::QUEUE => u.path == section,
                _ => u.path != routes::NEW_JOB && (u.path == "/" || u.path.starts_with(routes::JOBS)),
            };
            in_section.then_some("page")
        })
    };
    view! {
        <header class="top-bar">
            <a class="skip-link" href="#main">"Skip to content"</a>
            <a href=routes::JOBS class="brand">"Jobdeck"</a>
            <nav aria-label="Main">
                <a href=routes::JOBS aria-current=move || current(routes::JOBS)>"Deployments"</a>
                <a href=routes::NEW_JOB class="needs-member" aria-current=move || current(routes::NEW_JOB)>
                    "New job"
                </a>
                <a href=routes::QUEUE aria-current=move || current(routes::QUEUE)>"Queue"</a>
                <a href=routes::PEOPLE class="needs-admin">"People"</a>
            </nav>
            <div class="who">
                // Whether this page's changes come through the event stream
                // or are asked for every second: `body[data-live]`, set by
                // `event_stream.rs`, shows one of main.css's two words.
                <span class="live-state" role="status"></span>
                <Show when=move || session.token.get().is_some()>
                    <a class="user" href=routes::ACCOUNT title="Your account: tokens and sessions">
                        {move || session.user.get().unwrap_or_default()}
                    </a>
                    <button type="button" class="link" on:click=sign_out.clone()>"Sign out"</button>
                </Show>
            </div>
        </header>
        <Show when=move || notice.with(Option::is_some)>
            <p class="banner error standing-notice" role="status">{move || notice.get()}</p>
        </Show>
        <Show when=move || storage_notice.with(Option::is_some)>
            <p class="banner note standing-notice" role="status">
                <a href=routes::STORAGE>{move || storage_notice.get()}</a>
            </p>
        </Show>
    }
}
