//! The event stream behind the live views (`GET /stream`, docs/api.md "Live
//! changes"): one request per tab, for what the views on screen follow
//! (`follow`). A message says that something a view shows changed; the
//! views then ask again with their own GETs (`live::poll` waits on
//! `next_round`), so what they show always comes from the same answers
//! whether the stream is up or not, and a message seen twice or a cut costs
//! one more request, never a wrong view.
//!
//! While the stream is up the views ask only when a message comes, or once
//! in `QUIET_POLL_MS` in case one was lost; when it cannot be opened they ask
//! every second, as before there was a stream, and the top bar says which
//! (`body[data-live]`, styled in main.css). A hidden tab closes its stream:
//! a browser keeps six connections per server over HTTP/1.1, and seven tabs
//! each holding one would leave the seventh without any.

use std::cell::RefCell;

use wasm_bindgen::{closure::Closure, JsCast};

use jobdeck_api::StreamMessage;

use crate::api;
use crate::components::live::sleep;

/// How long views wait for a message before asking anyway while the stream
/// is up: a message lost on the way shows at most this late.
pub const QUIET_POLL_MS: i32 = 30_000;

/// How long after a failed or closed stream the next one is tried.
const RETRY_MS: i32 = 5_000;

#[derive(Default)]
struct Shared {
    /// The query parameters the views on screen follow (`jobs=true`,
    /// `job=<id>`), once for each view that follows it.
    topics: Vec<String>,
    /// A stream is open and answering.
    up: bool,
    /// The loop that keeps a stream open is running.
    running: bool,
    /// Aborts the open request: the topics changed, or the tab was hidden.
    abort: Option<web_sys::AbortController>,
    /// What resolves the waits of `next_round` in progress, with the
    /// messages each waits for.
    waiters: Vec<(&'static [StreamMessage], js_sys::Function)>,
    /// The visibility listener is installed (once per tab).
    watching_visibility: bool,
}

thread_local! {
    static SHARED: RefCell<Shared> = RefCell::new(Shared::default());
}

fn with<T>(f: impl FnOnce(&mut Shared) -> T) -> T {
    SHARED.with(|shared| f(&mut shared.borrow_mut()))
}

/// Follows `parameter` (`jobs=true`, `job=<encoded id>`) for as long as
/// the calling view lives: its changes wake the views' next rounds.
pub fn follow(parameter: String) {
    with(|s| s.topics.push(parameter.clone()));
    leptos::prelude::on_cleanup(move || {
        with(|s| {
            if let Some(at) = s.topics.iter().position(|topic| *topic == parameter) {
                s.topics.swap_remove(at);
            }
        });
        topics_changed();
    });
    topics_changed();
}

/// The stream's query: each followed topic once.
fn query() -> String {
    with(|s| {
        let mut query = String::new();
        for (at, topic) in s.topics.iter().enumerate() {
            if !s.topics[..at].contains(topic) {
                if !query.is_empty() {
                    query.push('&');
                }
                query.push_str(topic);
            }
        }
        query
    })
}

/// Waits until a view should ask again: one of the messages `wakes` names
/// (those that change what the view shows), a new stream, or the clock
/// (`poll_ms` without a stream, `QUIET_POLL_MS` with one).
pub async fn next_round(poll_ms: i32, wakes: &'static [StreamMessage]) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        let ms = with(|s| {
            s.waiters.push((wakes, resolve.clone()));
            if s.up {
                QUIET_POLL_MS
            } else {
                poll_ms
            }
        });
        if let Some(window) = web_sys::window() {
            let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// Ends the waits of `next_round` that `message` concerns, or all of them
/// (`None`): a stream opened (what happened before it is unknown) or went
/// down (the waits' clocks differ).
fn wake(message: Option<StreamMessage>) {
    let everything = matches!(message, None | Some(StreamMessage::Open | StreamMessage::Resync));
    for (wakes, resolve) in with(|s| std::mem::take(&mut s.waiters)) {
        if everything || message.is_some_and(|m| wakes.contains(&m)) {
            let _ = resolve.call0(&wasm_bindgen::JsValue::NULL);
        } else {
            with(|s| s.waiters.push((wakes, resolve)));
        }
    }
}

fn set_up(up: bool) {
    if with(|s| std::mem::replace(&mut s.up, up)) != up {
        wake(None);
    }
    show_state();
}

/// What the top bar says: `stream` while messages come, `poll` while the
/// views followed ask every second, nothing where nothing is followed.
fn show_state() {
    let (followed, up) = with(|s| (!s.topics.is_empty(), s.up));
    let Some(body) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.body()) else { return };
    let _ = match (followed, up) {
        (false, _) => body.remove_attribute("data-live"),
        (true, true) => body.set_attribute("data-live", "stream"),
        (true, false) => body.set_attribute("data-live", "poll"),
    };
}

fn page_hidden() -> bool {
    web_sys::window().and_then(|w| w.document()).is_some_and(|d| d.hidden())
}

/// The topics or the tab's visibility changed: the open request (for the
/// old topics) ends, and the loop opens one for the new ones if any.
fn topics_changed() {
    watch_visibility();
    show_state();
    let start = with(|s| {
        if let Some(abort) = s.abort.take() {
            abort.abort();
        }
        !s.running && !s.topics.is_empty() && !page_hidden() && {
            s.running = true;
            true
        }
    });
    if start {
        leptos::task::spawn_local(keep_open());
    }
}

fn watch_visibility() {
    if with(|s| std::mem::replace(&mut s.watching_visibility, true)) {
        return;
    }
    let Some(document) = web_sys::window().and_then(|w| w.document()) else { return };
    let changed = Closure::<dyn Fn()>::new(topics_changed);
    let _ = document.add_event_listener_with_callback("visibilitychange", changed.as_ref().unchecked_ref());
    // The listener lives as long as the tab.
    changed.forget();
}

/// Keeps a stream open for the followed topics while there are any and the
/// tab is visible; reopens at once when they change, and after `RETRY_MS`
/// when the stream failed or the server closed it.
async fn keep_open() {
    loop {
        let query = query();
        if query.is_empty() || page_hidden() {
            break;
        }
        let Ok(abort) = web_sys::AbortController::new() else { break };
        let signal = abort.signal();
        with(|s| s.abort = Some(abort));
        read(&query, &signal).await;
        // Aborted for new topics, the next stream opens at once and says
        // `open`; the views wait on as if it had never closed.
        if !signal.aborted() {
            set_up(false);
            sleep(RETRY_MS).await;
        }
    }
    with(|s| {
        s.running = false;
        s.abort = None;
    });
    set_up(false);
}

/// Reads one stream until it ends, fails, or is aborted, waking the views
/// that each message concerns.
async fn read(query: &str, signal: &web_sys::AbortSignal) {
    let Ok(body) = api::open_stream(query, signal).await else { return };
    let reader: web_sys::ReadableStreamDefaultReader = body.get_reader().unchecked_into();
    set_up(true);
    let mut messages = MessageNames::default();
    loop {
        let Ok(chunk) = wasm_bindgen_futures::JsFuture::from(reader.read()).await else { break };
        // A read's answer is `{done, value}`, an iterator's step.
        let chunk: js_sys::IteratorNext = chunk.unchecked_into();
        if chunk.done() {
            break;
        }
        let bytes = js_sys::Uint8Array::new(&chunk.value()).to_vec();
        for message in messages.feed(&bytes) {
            if message == StreamMessage::End {
                // The token was revoked or expired: the views' own
                // requests now say so and lead to sign-in.
                return cancel(&reader).await;
            }
            wake(Some(message));
        }
    }
    cancel(&reader).await;
}

/// Lets go of the body. Awaited: a cancel the browser refuses (the request
/// was aborted) is a rejected promise, which must not go unhandled.
async fn cancel(reader: &web_sys::ReadableStreamDefaultReader) {
    let _ = wasm_bindgen_futures::JsFuture::from(reader.cancel()).await;
}

/// Reads the names of whole messages out of the stream's bytes, however
/// the network cut them: a message ends at an empty line, and its name is
/// its `event:` field. Comments (keep-alives), id-only beats and names this
/// console does not know have none.
#[derive(Default)]
pub struct MessageNames {
    line: Vec<u8>,
    name: Option<StreamMessage>,
}

impl MessageNames {
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<StreamMessage> {
        let mut done = Vec::new();
        for &byte in bytes {
            if byte != b'\n' {
                // Only the start of a line can matter: the longest `event:`
                // line is shorter than this, and a `data:` line may be long.
                if self.line.len() < 32 {
                    self.line.push(byte);
                }
                continue;
            }
            let line = std::mem::take(&mut self.line);
            let line = line.strip_suffix(b"\r").unwrap_or(&line);
            if line.is_empty() {
                done.extend(self.name.take());
            } else if let Some(name) = line.strip_prefix(b"event:") {
                let name = name.strip_prefix(b" ").unwrap_or(name);
                self.name = StreamMessage::ALL.into_iter().find(|m| m.as_str().as_bytes() == name);
            }
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;

    use jobdeck_api::StreamMessage;

    use super::{next_round, wake, MessageNames};
    use crate::components::live::sleep;

    /// A message ends only the waits of the views it concerns; a new
    /// stream ends them all.
    #[wasm_bindgen_test::wasm_bindgen_test]
    async fn a_message_wakes_the_views_that_wait_for_it_and_open_wakes_every_view() {
        let waiting = |wakes: &'static [StreamMessage]| {
            let done = Rc::new(Cell::new(false));
            let flag = done.clone();
            wasm_bindgen_futures::spawn_local(async move {
                next_round(60_000, wakes).await;
                flag.set(true);
            });
            done
        };
        let list = waiting(&[StreamMessage::Job, StreamMessage::JobDeleted]);
        let replicas = waiting(&[StreamMessage::Replicas]);
        sleep(0).await;
        wake(Some(StreamMessage::Metrics));
        sleep(0).await;
        assert!(!list.get() && !replicas.get(), "nobody waits for metrics");
        wake(Some(StreamMessage::JobDeleted));
        sleep(0).await;
        assert!(list.get() && !replicas.get(), "only the list waits for a deletion");
        wake(Some(StreamMessage::Open));
        sleep(0).await;
        assert!(replicas.get(), "a new stream wakes every view");
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn message_names_come_whole_however_the_bytes_are_cut() {
        let stream = b"event: open\ndata: {}\n\n: keep-alive\n\nid: a-1\n\nevent: job\r\ndata: {\"metadata\":{}}\r\nid: a-2\r\n\r\n";
        for cut in 0..stream.len() {
            let mut names = MessageNames::default();
            let mut seen = names.feed(&stream[..cut]);
            seen.extend(names.feed(&stream[cut..]));
            assert_eq!(seen, [StreamMessage::Open, StreamMessage::Job], "cut at {cut}");
        }
    }
}
