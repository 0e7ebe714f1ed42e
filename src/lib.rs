//! The Jobdeck console: a Leptos client-side app.
//!
//! `routes` holds every path in one place, `api` talks to the control plane,
//! `session` keeps the sign-in token, `pages` has one module per page and
//! `components` the pieces they share.

pub mod api;
pub mod components;
#[cfg(test)]
pub mod fixtures;
pub mod pages;
pub mod router;
pub mod routes;
pub mod session;

use leptos::prelude::*;

use crate::components::top_bar::TopBar;
use crate::pages::{job::JobPage, jobs_list::JobsListPage, login::LoginPage, new_job::NewJobPage, not_found::NotFoundPage};
use crate::routes::Route;
use crate::session::Session;

/// The whole console.
#[component]
pub fn App() -> impl IntoView {
    provide_context(Session::from_storage());
    router::provide_router();
    let url = router::use_url();
    // Only a change of route re-renders the page; a page reads the query and
    // its own path parameters from `use_url` and `Route` as it needs.
    let route = Memo::new(move |_| match Route::parse(&url.with(|u| u.path.clone())) {
        Route::Job { id, .. } => Route::Job { id, tab: String::new() },
        other => other,
    });
    view! {
        <TopBar/>
        <main id="main">
            {move || match route.get() {
                Route::Login => view! { <LoginPage/> }.into_any(),
                Route::Jobs => view! { <JobsListPage/> }.into_any(),
                Route::NewJob => view! { <NewJobPage/> }.into_any(),
                Route::Job { id, .. } => view! { <JobPage id/> }.into_any(),
                Route::NotFound => view! { <NotFoundPage/> }.into_any(),
            }}
        </main>
    }
}

#[cfg(test)]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);
