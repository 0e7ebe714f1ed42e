//! Live updates: a view loads its data once, then asks the server again
//! whenever the event stream says something it follows changed (every
//! second when there is no stream, `event_stream.rs`) and changes only what
//! changed, so a user's focus, selection and scroll position survive every
//! update.

use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use leptos::prelude::*;

/// How often live views ask again without an event stream: a state change
/// shows within two seconds even with a slow answer.
pub const POLL_INTERVAL_MS: i32 = 1000;

/// Resolves after `ms` milliseconds.
pub async fn sleep(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(window) = web_sys::window() {
            let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// Whether the browser tab is in the background, where nobody reads updates.
fn page_hidden() -> bool {
    web_sys::window().and_then(|w| w.document()).map(|d| d.hidden()).unwrap_or(false)
}

/// The event stream's messages that change what a view shows: each one
/// that comes starts the view's next round at once (`event_stream.rs`).
pub type Wakes = &'static [jobdeck_api::StreamMessage];

/// What a polling round hands back: the change to make, applied only if the
/// view is still there.
type Apply = Box<dyn FnOnce()>;
type Tick = Box<dyn Fn() -> Pin<Box<dyn Future<Output = Apply>>>>;

/// Calls `fetch` whenever one of the messages `wakes` names comes through
/// the event stream (every `interval_ms` without a stream) and hands its
/// answer to `apply`, until the view that called `poll` goes away. Each round waits for the previous
/// answer, so a slow server never gets a pile of requests, and answers are
/// applied in the order they were asked for, so an older one never replaces
/// a newer one; rounds are skipped while the tab is hidden. `apply` never
/// runs after the view is gone, so it may use the view's signals freely.
pub fn poll<T, F, Fut, A>(interval_ms: i32, wakes: Wakes, fetch: F, apply: A)
where
    T: 'static,
    F: Fn() -> Fut + 'static,
    Fut: Future<Output = T> + 'static,
    A: Fn(T) + 'static,
{
    poll_boxed(interval_ms, interval_ms, wakes, boxed(fetch, apply));
}

/// `poll`, with its first round at once: the view's first load and its
/// refreshes are one sequence, so the first answer cannot arrive after (and
/// replace) a refresh that was asked for later.
pub fn load_and_poll<T, F, Fut, A>(interval_ms: i32, wakes: Wakes, fetch: F, apply: A)
where
    T: 'static,
    F: Fn() -> Fut + 'static,
    Fut: Future<Output = T> + 'static,
    A: Fn(T) + 'static,
{
    poll_boxed(0, interval_ms, wakes, boxed(fetch, apply));
}

fn boxed<T, F, Fut, A>(fetch: F, apply: A) -> Tick
where
    T: 'static,
    F: Fn() -> Fut + 'static,
    Fut: Future<Output = T> + 'static,
    A: Fn(T) + 'static,
{
    let apply = Rc::new(apply);
    Box::new(move || {
        let answer = fetch();
        let apply = apply.clone();
        Box::pin(async move {
            let answer = answer.await;
            Box::new(move || apply(answer)) as Apply
        })
    })
}

/// The loop behind `poll`, one copy for every caller.
fn poll_boxed(first_delay_ms: i32, interval_ms: i32, wakes: Wakes, tick: Tick) {
    let alive = Arc::new(AtomicBool::new(true));
    let flag = alive.clone();
    on_cleanup(move || flag.store(false, Ordering::Relaxed));
    leptos::task::spawn_local(async move {
        let mut delay = first_delay_ms;
        loop {
            // A first load at once happens in a background tab too; only
            // refreshes wait for someone to look.
            let refresh = delay > 0;
            if refresh {
                super::event_stream::next_round(delay, wakes).await;
            }
            delay = interval_ms;
            if !alive.load(Ordering::Relaxed) {
                break;
            }
            if refresh && page_hidden() {
                continue;
            }
            let apply = tick().await;
            if !alive.load(Ordering::Relaxed) {
                break;
            }
            apply();
        }
    });
}

/// Calls `tick` every second while the calling view lives and the tab is
/// shown, without asking the server: what counts time on screen (how long
/// a job has run) goes on counting between the stream's messages.
pub fn every_second(tick: impl Fn() + 'static) {
    let alive = Arc::new(AtomicBool::new(true));
    let flag = alive.clone();
    on_cleanup(move || flag.store(false, Ordering::Relaxed));
    leptos::task::spawn_local(async move {
        loop {
            sleep(1000).await;
            if !alive.load(Ordering::Relaxed) {
                break;
            }
            if !page_hidden() {
                tick();
            }
        }
    });
}

/// Sorts out one polled answer: the value when it came, nothing otherwise. A
/// failure is shown through `problem` (cleared again by the next success);
/// a token the server no longer accepts sends the user through sign-in.
pub fn take_answer<T>(
    answer: crate::api::ApiResult<T>,
    problem: RwSignal<Option<String>>,
    sign_in_again: &impl Fn(),
) -> Option<T> {
    match answer {
        Ok(value) => {
            set_if_changed(problem, None);
            Some(value)
        }
        Err(crate::api::ApiFailure::Unauthorized) => {
            sign_in_again();
            None
        }
        Err(failure) => {
            set_if_changed(problem, Some(failure.to_string()));
            None
        }
    }
}

/// Sets `signal` only when the value differs, so views that read it do not
/// re-render for nothing.
pub fn set_if_changed<T: PartialEq + Send + Sync + 'static>(signal: RwSignal<T>, value: T) {
    if signal.with_untracked(|current| current != &value) {
        signal.set(value);
    }
}
