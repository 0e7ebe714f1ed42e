//! Switching between views whose code is downloaded on first use.
//!
//! The console's pages and the job page's tabs are split points of its
//! WebAssembly (`split_view!`, see scripts/split-console.sh). A switch waits
//! until the next view's module is in and then changes synchronously, so the
//! old view stays whole on screen while the module downloads. (Changing at
//! once under a `Suspense` would dispose the old view's signals while its
//! effects still ran: a panic.) When a download fails, a note says so where
//! the view would be, with a button that asks for it again.

use std::future::Future;

use leptos::prelude::*;
pub use leptos::wasm_split::SplitLoaderError;

use crate::router::{shown_url, use_url, ShownUrl};

/// Where a switch stands with the view for the current key.
#[derive(Clone, PartialEq)]
enum Switched<K> {
    /// The view for this key is shown.
    Shown(K),
    /// This key's module could not be downloaded.
    Failed,
}

/// Shows `show(key)` for the current `key`, once `preload(key)` (the module
/// download, instant after the first time) has finished. When the download
/// fails, a note and a "Try again" button show instead; a failed download is
/// not remembered, so trying again downloads again.
pub fn lazy_switch<K, Preload, Loading, Show, Shown, Failure>(
    key: Memo<K>,
    preload: Preload,
    show: Show,
) -> impl IntoView
where
    K: Clone + PartialEq + Send + Sync + 'static,
    Preload: Fn(K) -> Loading + Send + Sync + 'static,
    Loading: Future<Output = Result<(), Failure>> + 'static,
    Show: Fn(K) -> Shown + Send + Sync + 'static,
    Shown: Future<Output = Result<AnyView, Failure>> + Send + 'static,
{
    let switched = RwSignal::new(None::<Switched<K>>);
    let attempt = Trigger::new();
    let url = use_url();
    Effect::new(move |_| {
        attempt.track();
        let next = key.get();
        // A failed view gives way to "Loading…" while the next try runs.
        if switched.with_untracked(|s| matches!(s, Some(Switched::Failed))) {
            switched.set(None);
        }
        let loading = preload(next.clone());
        leptos::task::spawn_local(async move {
            let loaded = loading.await;
            if key.try_get_untracked().as_ref() == Some(&next) {
                switched.set(Some(match loaded {
                    Ok(()) => Switched::Shown(next),
                    Err(_) => Switched::Failed,
                }));
            }
        });
    });
    view! {
        <Suspense fallback=loading_view>
            {move || {
                let view = switched.get().map(|switched| match switched {
                    Switched::Shown(shown_key) => {
                        // The view sees the address it was shown for until
                        // the switch moves on (router::ShownUrl says why).
                        let own_key = shown_key.clone();
                        provide_context(ShownUrl(shown_url(url, move || key.with(|k| *k == own_key))));
                        Some(show(shown_key))
                    }
                    Switched::Failed => None,
                });
                Suspend::new(async move {
                    match view {
                        Some(Some(view)) => view.await.unwrap_or_else(|_| not_downloaded(attempt)),
                        Some(None) => not_downloaded(attempt),
                        None => loading_view(),
                    }
                })
            }}
        </Suspense>
    }
}

// The two views below are functions of their own, not closures inside
// `lazy_switch`, so the console carries them once rather than once per kind
// of switch (the pages', the job page's tabs').

fn loading_view() -> AnyView {
    view! { <p class="loading" role="status">"Loading…"</p> }.into_any()
}

/// The note shown where a view whose download failed would be; "Try again"
/// asks for it again through the switch's `attempt`.
fn not_downloaded(attempt: Trigger) -> AnyView {
    view! {
        <div class="banner error" role="alert">
            <p>"This part of the console could not be downloaded."</p>
            <button type="button" on:click=move |_| attempt.notify()>"Try again"</button>
        </div>
    }
    .into_any()
}

/// Declares a view function as a split point of the console's WebAssembly:
/// its code is a module of its own (named as the function), downloaded the
/// first time the view is shown or `$preload` (an `async fn() ->
/// Result<(), SplitLoaderError>`) is awaited. The module is `fallible`
/// (Leptos's `#[lazy]` has no such option): a failed download is an `Err`
/// that `lazy_switch` shows, rather than a panic that stops the console. In
/// the component tests, whose WebAssembly is not split, it is a plain
/// function.
macro_rules! split_view {
    ($(#[$attr:meta])* fn $name:ident($($arg:ident: $arg_type:ty),*), preload $preload:ident, $body:block) => {
        $(#[$attr])*
        #[cfg_attr(
            not(test),
            leptos::wasm_split::wasm_split(
                $name,
                wasm_split_path = ::leptos::wasm_split,
                preload($preload),
                fallible
            )
        )]
        fn $name($($arg: $arg_type),*) -> Result<AnyView, $crate::components::lazy_view::SplitLoaderError> {
            Ok($body.into_any())
        }
    };
}
pub(crate) use split_view;

/// Calls a split view function: awaited where it is a split point,
/// directly in the component tests, whose WebAssembly is not split.
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use wasm_bindgen_test::wasm_bindgen_test;

    use super::*;
    use crate::fixtures::{click, mount, text_of, wait_for};

    #[wasm_bindgen_test]
    async fn a_view_whose_download_failed_is_asked_for_again() {
        let attempts = Arc::new(AtomicUsize::new(0));
        let counted = attempts.clone();
        let host = mount(move || {
            let counted = counted.clone();
            // The first download fails, the next one succeeds.
            let preload = move |_: String| {
                let attempt = counted.fetch_add(1, Ordering::SeqCst);
                std::future::ready(if attempt == 0 { Err(()) } else { Ok(()) })
            };
            let show = |key: String| async move { Ok(view! { <p class="shown">"view " {key}</p> }.into_any()) };
            lazy_switch(Memo::new(|_| "a".to_string()), preload, show)
        });
        wait_for("the failure's note", || host.query_selector("[role=alert] button").unwrap().is_some()).await;
        assert!(text_of(&host).contains("could not be downloaded"), "{}", text_of(&host));
        assert!(host.query_selector(".shown").unwrap().is_none());

        click(&host, "[role=alert] button");
        wait_for("the view", || host.query_selector(".shown").unwrap().is_some()).await;
        assert_eq!(text_of(&host.query_selector(".shown").unwrap().unwrap()), "view a");
        assert!(host.query_selector("[role=alert]").unwrap().is_none());
        assert_eq!(attempts.load(Ordering::SeqCst), 2);
    }
}
