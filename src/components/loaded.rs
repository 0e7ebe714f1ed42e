//! The one loading path of every page: fetch, show "Loading…" the first
//! time, the data once it is there (keeping the old view while a new address
//! loads), or the failure.
//!
//! The pages that use it go through this single `Transition` +
//! `ErrorBoundary` with a single data type (`Data`), instead of one generic
//! copy per page: the console is a download, and each copy of that machinery
//! costs kilobytes. The job page and its logs tab load without it (the first
//! round of their polling is the load), so a cold link to a job does not
//! download it at all.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use jobdeck_api::{JobEvent, JobList, Replica};
use leptos::prelude::*;

use crate::api::ApiResult;
use crate::components::api_error::ApiErrorView;
use crate::routes::ListQuery;

/// What a page loads.
#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    List(ListQuery, JobList),
    Replicas(Vec<Replica>),
    Events(Vec<JobEvent>),
}

/// A boxed fetch, so every page shares one copy of the loading machinery.
pub type Fetch = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = ApiResult<Data>>>> + Send + Sync>;
/// Turns loaded data into the page's view.
pub type Render = Arc<dyn Fn(Data) -> AnyView + Send + Sync>;

/// Boxes a fetch for `Loaded`.
pub fn fetch<F, Fut>(f: F) -> Fetch
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ApiResult<Data>> + 'static,
{
    Arc::new(move || Box::pin(f()))
}

/// Loads with `fetch` (again whenever a signal it reads changes) and shows
/// `render(data)`. `pending` is true while a new load runs behind the old
/// view.
#[component]
pub fn Loaded(
    fetch: Fetch,
    render: Render,
    loading: &'static str,
    #[prop(optional)] pending: Option<RwSignal<bool>>,
) -> impl IntoView {
    let data = LocalResource::new(move || fetch());
    let pending = pending.unwrap_or_else(|| RwSignal::new(false));
    view! {
        <Transition fallback=move || view! { <p class="loading" role="status">{loading}</p> } set_pending=pending>
            <ErrorBoundary fallback=|errors| view! { <ApiErrorView errors/> }>
                {move || {
                    let render = render.clone();
                    Suspend::new(async move { data.await.map(|d| render(d)) })
                }}
            </ErrorBoundary>
        </Transition>
    }
}
