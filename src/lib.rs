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

/// Talc allocates for the whole console: it is about 4 KB of code smaller
/// than Rust's default dlmalloc, in the module every page loads first. The
/// console runs on the browser's one thread (no `atomics`).
#[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

use crate::components::lazy_view::{lazy_switch, load, split_view, SplitLoaderError};
use crate::components::top_bar::TopBar;
use crate::pages::{
    account::AccountPage, audit::AuditPage, invite::InvitePage, job::JobPage, jobs_list::JobsListPage,
    login::LoginPage, new_job::NewJobPage, not_found::NotFoundPage, notifications::NotificationsPage,
    people::PeoplePage, queue::QueuePage, storage::StoragePage,
};
use crate::routes::Route;
use crate::session::Session;

/// The `T` an ancestor provided; its absence is a bug in the console.
///
/// Not Leptos's `expect_context`: its panic message prints the type's name
/// with `{:?}`, which brings Rust's string escaping and Unicode tables into
/// the core that every page downloads.
pub fn provided<T: Clone + 'static>() -> T {
    use_context::<T>().expect("a component used outside the context it needs")
}

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
    // The job page's tab comes from the address as it is now: a link to a
    // job's logs asks for the page's and the tab's modules at once.
    let preload_page = move |route: Route| {
        let tab = match Route::parse(&url.with_untracked(|u| u.path.clone())) {
            Route::Job { tab, .. } => tab,
            _ => String::new(),
        };
        async move { preload(&route, tab).await }
    };
    view! {
        <TopBar/>
        <main id="main">{lazy_switch(route, preload_page, page)}</main>
    }
}

/// Downloads the module of a route's page (once; later calls return at
/// once). A job page's module is asked for together with its tab's, in the
/// same task, so the loader can send both in one pack
/// (scripts/pack-console.mjs).
#[cfg(not(test))]
async fn preload(route: &Route, tab: String) -> Result<(), SplitLoaderError> {
    match route {
        Route::Login => download_login_page().await,
        Route::Jobs => download_jobs_list_page().await,
        Route::NewJob => download_new_job_page().await,
        Route::Job { .. } => both(download_job_page(), pages::job::preload_tab(tab)).await,
        Route::Invite | Route::Account | Route::Storage | Route::Audit => download_team_page().await,
        Route::People => download_people_page().await,
        Route::Notifications | Route::Queue => download_notifications_page().await,
        Route::NotFound => Ok(()),
    }
}
#[cfg(test)]
async fn preload(_: &Route, _: String) -> Result<(), SplitLoaderError> {
    Ok(())
}

/// Runs two downloads to their end, polling both in every poll: the first
/// poll starts both in the same task. The first failure is the answer.
#[cfg(not(test))]
async fn both(
    first: impl std::future::Future<Output = Result<(), SplitLoaderError>>,
    second: impl std::future::Future<Output = Result<(), SplitLoaderError>>,
) -> Result<(), SplitLoaderError> {
    use std::task::Poll;
    let (mut first, mut second) = (std::pin::pin!(first), std::pin::pin!(second));
    let (mut first_done, mut second_done) = (None, None);
    std::future::poll_fn(|cx| {
        if first_done.is_none() {
            first_done = match first.as_mut().poll(cx) {
                Poll::Ready(done) => Some(done),
                Poll::Pending => None,
            };
        }
        if second_done.is_none() {
            second_done = match second.as_mut().poll(cx) {
                Poll::Ready(done) => Some(done),
                Poll::Pending => None,
            };
        }
        match (first_done.take(), second_done.take()) {
            (Some(first), Some(second)) => Poll::Ready(first.and(second)),
            (first, second) => {
                (first_done, second_done) = (first, second);
                Poll::Pending
            }
        }
    })
    .await
}

/// The page for a route. Each page's code is a split point of the console's
/// WebAssembly (`split_view!`): the browser downloads the shared core and the
/// first page it shows, and every other page the first time it is opened,
/// so the first load carries only what the first page needs. See
/// docs/architecture.md, "The console's download".
async fn page(route: Route) -> Result<AnyView, SplitLoaderError> {
    match route {
        Route::Login => load!(login_page()),
        Route::Jobs => load!(jobs_list_page()),
        Route::NewJob => load!(new_job_page()),
        Route::Job { id, .. } => load!(job_page(id)),
        Route::Invite | Route::Account | Route::Storage | Route::Audit => load!(team_page(route)),
        Route::People => load!(people_page()),
        Route::Notifications | Route::Queue => load!(notifications_page(route)),
        Route::NotFound => Ok(view! { <NotFoundPage/> }.into_any()),
    }
}

split_view!(fn login_page(), preload download_login_page, { view! { <LoginPage/> } });
split_view!(fn jobs_list_page(), preload download_jobs_list_page, { view! { <JobsListPage/> } });
split_view!(fn new_job_page(), preload download_new_job_page, { view! { <NewJobPage/> } });
split_view!(fn job_page(id: String), preload download_job_page, { view! { <JobPage id/> } });
// A newcomer's invitation, one's own account, the admins' storage page and
// their audit log share one module: they are small, seldom opened, and each
// split point costs every page's first download a little (its loader). The
// people page is another, which has no room for the others' code; the
// notifications page a third, which did not fit in this one
// (docs/measurements.md), with the queue, which has room there.
split_view!(fn team_page(route: Route), preload download_team_page, {
    match route {
        Route::Invite => view! { <InvitePage/> }.into_any(),
        Route::Storage => view! { <StoragePage/> }.into_any(),
        Route::Audit => view! { <AuditPage/> }.into_any(),
        _ => view! { <AccountPage/> }.into_any(),
    }
});
split_view!(fn people_page(), preload download_people_page, { view! { <PeoplePage/> } });
split_view!(fn notifications_page(route: Route), preload download_notifications_page, {
    match route {
        Route::Queue => view! { <QueuePage/> }.into_any(),
        _ => view! { <NotificationsPage/> }.into_any(),
    }
});

#[cfg(test)]
wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_browser);
