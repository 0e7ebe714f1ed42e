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

use crate::components::lazy_view::{lazy_switch, load};
use crate::components::top_bar::TopBar;
use crate::pages::{
    job::JobPage, jobs_list::JobsListPage, login::LoginPage, new_job::NewJobPage, not_found::NotFoundPage,
};
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
        <main id="main">{lazy_switch(route, |route| async move { preload(&route).await }, page)}</main>
    }
}

/// Downloads the module of a route's page (once; later calls return at
/// once).
#[cfg(not(test))]
async fn preload(route: &Route) {
    match route {
        Route::Login => __preload_login_page().await,
        Route::Jobs => __preload_jobs_list_page().await,
        Route::NewJob => __preload_new_job_page().await,
        Route::Job { .. } => __preload_job_page().await,
        Route::NotFound => {}
    }
}
#[cfg(test)]
async fn preload(_: &Route) {}

/// The page for a route. Each page's code is a split point of the console's
/// WebAssembly (`#[lazy]`): the browser downloads the shared core and the
/// first page it shows, and every other page the first time it is opened,
/// so the first load carries only what the first page needs. See
/// docs/architecture.md, "The console's download".
async fn page(route: Route) -> AnyView {
    match route {
        Route::Login => load!(login_page()),
        Route::Jobs => load!(jobs_list_page()),
        Route::NewJob => load!(new_job_page()),
        Route::Job { id, .. } => load!(job_page(id)),
        Route::NotFound => view! { <NotFoundPage/> }.into_any(),
    }
}

#[cfg_attr(not(test), lazy)]
fn login_page() -> AnyView {
    view! { <LoginPage/> }.into_any()
}

#[cfg_attr(not(test), lazy)]
fn jobs_list_page() -> AnyView {
    view! { <JobsListPage/> }.into_any()
}

#[cfg_attr(not(test), lazy)]
fn new_job_page() -> AnyView {
    view! { <NewJobPage/> }.into_any()
}

#[cfg_attr(not(test), lazy)]
fn job_page(id: String) -> AnyView {
    view! { <JobPage id/> }.into_any()
}

#[cfg(test)]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);
