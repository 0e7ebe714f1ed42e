//! The Jobdeck console: a Leptos client-side app.
//!
//! `routes` holds every path in one place, `api` talks to the control plane,
//! `session` keeps the sign-in token, `pages` has one module per page and
//! `components` the pieces they share.

pub mod api;
pub mod components;
pub mod pages;
pub mod routes;
pub mod session;

use leptos::prelude::*;
use leptos_router::components::{Route, Router, Routes};
use leptos_router::path;

use crate::components::top_bar::TopBar;
use crate::pages::{job::JobPage, jobs_list::JobsListPage, login::LoginPage, new_job::NewJobPage, not_found::NotFoundPage};
use crate::session::Session;

/// The whole console.
#[component]
pub fn App() -> impl IntoView {
    provide_context(Session::from_storage());
    view! {
        <Router>
            <TopBar/>
            <main id="main">
                <Routes fallback=NotFoundPage>
                    <Route path=path!("/") view=JobsListPage/>
                    <Route path=path!("/login") view=LoginPage/>
                    <Route path=path!("/jobs") view=JobsListPage/>
                    <Route path=path!("/jobs/new") view=NewJobPage/>
                    <Route path=path!("/jobs/:id") view=JobPage/>
                    <Route path=path!("/jobs/:id/:tab") view=JobPage/>
                </Routes>
            </main>
        </Router>
    }
}

#[cfg(test)]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);
