//! Switching between views whose code is downloaded on first use.
//!
//! The console's pages and the job page's tabs are split points of its
//! WebAssembly (`#[lazy]`, see scripts/split-console.sh). A switch waits
//! until the next view's module is in and then changes synchronously, so the
//! old view stays whole on screen while the module downloads. (Changing at
//! once under a `Suspense` would dispose the old view's signals while its
//! effects still ran: a panic.)

use std::future::Future;

use leptos::prelude::*;

use crate::router::{shown_url, use_url, ShownUrl};

/// Shows `show(key)` for the current `key`, once `preload(key)` (the module
/// download, instant after the first time) has finished.
pub fn lazy_switch<K, Preload, Loading, Show, Shown>(key: Memo<K>, preload: Preload, show: Show) -> impl IntoView
where
    K: Clone + PartialEq + Send + Sync + 'static,
    Preload: Fn(K) -> Loading + Send + Sync + 'static,
    Loading: Future<Output = ()> + 'static,
    Show: Fn(K) -> Shown + Send + Sync + 'static,
    Shown: Future<Output = AnyView> + Send + 'static,
{
    let shown = RwSignal::new(None::<K>);
    let url = use_url();
    Effect::new(move |_| {
        let next = key.get();
        let loading = preload(next.clone());
        leptos::task::spawn_local(async move {
            loading.await;
            if key.try_get_untracked().as_ref() == Some(&next) {
                shown.set(Some(next));
            }
        });
    });
    let loading = || view! { <p class="loading" role="status">"Loading…"</p> };
    view! {
        <Suspense fallback=loading>
            {move || {
                let view = shown.get().map(|shown_key| {
                    // The view sees the address it was shown for until the
                    // switch moves on (router::ShownUrl says why).
                    let own_key = shown_key.clone();
                    provide_context(ShownUrl(shown_url(url, move || key.with(|k| *k == own_key))));
                    show(shown_key)
                });
                Suspend::new(async move {
                    match view {
                        Some(view) => view.await,
                        None => loading().into_any(),
                    }
                })
            }}
        </Suspense>
    }
}

/// Calls a `#[lazy]` view function: awaited where it is a split point,
/// directly in the component tests, whose WebAssembly is not split (there the
/// functions are plain ones, see `#[cfg_attr(not(test), lazy)]`).
#[cfg(not(test))]
macro_rules! load {
    ($call:expr) => {
        $call.await
    };
}
#[cfg(test)]
macro_rules! load {
    ($call:expr) => {
        $call
    };
}
pub(crate) use load;
