//! A small client-side router.
//!
//! The console's routes are few and flat (see `routes.rs`), so instead of a
//! general nested router it keeps the current URL in one signal, follows the
//! browser's history, and turns clicks on same-origin links into history
//! pushes. This costs a fraction of a general router's code size, which
//! matters for the console's first-load budget.

use leptos::prelude::*;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;

use crate::routes::{decode_component, encode_component};

/// The parts of the current address the app routes on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Url {
    /// The path, such as `/jobs/abc/replicas`.
    pub path: String,
    /// The query string without its `?`.
    pub query: String,
    /// The fragment without its `#`.
    pub hash: String,
}

impl Url {
    /// Splits `/path?query#hash`.
    pub fn parse(href: &str) -> Url {
        let (rest, hash) = href.split_once('#').unwrap_or((href, ""));
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        Url { path: if path.is_empty() { "/".into() } else { path.into() }, query: query.into(), hash: hash.into() }
    }

    /// The first value of query parameter `name`, decoded.
    pub fn param(&self, name: &str) -> Option<String> {
        self.params(name).into_iter().next()
    }

    /// Every value of query parameter `name`, decoded, in order.
    pub fn params(&self, name: &str) -> Vec<String> {
        self.query
            .split('&')
            .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
            .filter(|(key, _)| decode_component(key) == name)
            .map(|(_, value)| decode_component(value))
            .collect()
    }

    /// The path with its query and fragment, as a link.
    pub fn href(&self) -> String {
        let mut out = self.path.clone();
        if !self.query.is_empty() {
            out.push('?');
            out.push_str(&self.query);
        }
        if !self.hash.is_empty() {
            out.push('#');
            out.push_str(&self.hash);
        }
        out
    }
}

/// Builds a query string from pairs, leaving out empty values.
pub fn query_string<'a>(pairs: impl IntoIterator<Item = (&'a str, String)>) -> String {
    pairs
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{}={}", encode_component(k), encode_component(&v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The router's state, provided as context at the root.
#[derive(Clone, Copy)]
struct RouterState {
    url: RwSignal<Url>,
    /// `url` as a memo, the type every view reads the address through.
    shown: Memo<Url>,
}

fn browser_url() -> Url {
    let Some(location) = web_sys::window().map(|w| w.location()) else {
        return Url::default();
    };
    Url {
        path: location.pathname().unwrap_or_else(|_| "/".into()),
        query: location.search().unwrap_or_default().trim_start_matches('?').into(),
        hash: location.hash().unwrap_or_default().trim_start_matches('#').into(),
    }
}

/// Starts routing: follows back/forward and intercepts same-origin link
/// clicks. Call once, at the root.
pub fn provide_router() {
    let url = RwSignal::new(browser_url());
    let state = RouterState { url, shown: Memo::new(move |_| url.get()) };
    provide_context(state);
    let Some(window) = web_sys::window() else { return };

    // Back and forward, and a fragment changed by a link to it (a log line
    // range): the address is read again, unchanged parts compare equal.
    let on_popstate = Closure::<dyn Fn()>::new(move || {
        let url = browser_url();
        if state.url.with_untracked(|u| *u != url) {
            state.url.set(url);
        }
    });
    for event in ["popstate", "hashchange"] {
        let _ = window.add_event_listener_with_callback(event, on_popstate.as_ref().unchecked_ref());
    }
    on_popstate.forget();

    let on_click = Closure::<dyn Fn(web_sys::MouseEvent)>::new(move |ev: web_sys::MouseEvent| {
        if let Some(href) = link_to_follow(&ev) {
            ev.prevent_default();
            go(state, &href, false);
        }
    });
    if let Some(document) = window.document() {
        let _ = document.add_event_listener_with_callback("click", on_click.as_ref().unchecked_ref());
    }
    on_click.forget();
}

/// The same-origin link a plain left click should follow inside the app, if
/// this click is one.
fn link_to_follow(ev: &web_sys::MouseEvent) -> Option<String> {
    if ev.default_prevented() || ev.button() != 0 || ev.meta_key() || ev.ctrl_key() || ev.shift_key() || ev.alt_key() {
        return None;
    }
    let target: web_sys::Element = ev.target()?.dyn_into().ok()?;
    let anchor: web_sys::HtmlAnchorElement = target.closest("a[href]").ok()??.dyn_into().ok()?;
    if !anchor.target().is_empty()
        || anchor.has_attribute("download")
        || anchor.get_attribute("rel").as_deref() == Some("external")
    {
        return None;
    }
    let location = web_sys::window()?.location();
    if anchor.origin() != location.origin().ok()? {
        return None;
    }
    // A link to the same page's fragment is left to the browser (skip links).
    let href = format!("{}{}{}", anchor.pathname(), anchor.search(), anchor.hash());
    if anchor.pathname() == location.pathname().ok()?
        && anchor.search() == location.search().ok()?
        && !anchor.hash().is_empty()
    {
        return None;
    }
    Some(href)
}

fn go(state: RouterState, href: &str, replace: bool) {
    let Some(window) = web_sys::window() else { return };
    if let Ok(history) = window.history() {
        let null = wasm_bindgen::JsValue::NULL;
        let _ = if replace {
            history.replace_state_with_url(&null, "", Some(href))
        } else {
            history.push_state_with_url(&null, "", Some(href))
        };
    }
    let next = Url::parse(href);
    let path_changed = state.url.with_untracked(|u| u.path != next.path);
    state.url.set(next);
    if path_changed {
        window.scroll_to_with_x_and_y(0.0, 0.0);
    }
}

/// The URL as the view asking sees it: the browser's, or, under a
/// `lazy_switch` (a page, a job tab), the one that view was shown for.
pub fn use_url() -> Memo<Url> {
    match use_context::<ShownUrl>() {
        Some(ShownUrl(url)) => url,
        None => crate::provided::<RouterState>().shown,
    }
}

/// The URL of a view shown by a `lazy_switch`, provided to that view.
///
/// A link to another page changes the address before the next page's module
/// has arrived, and the old page stays on screen until it has. Through this,
/// the old page keeps seeing its own address in that time instead of acting
/// on the next page's (a tab putting its own address back, a list fetching
/// with another page's query).
#[derive(Clone, Copy)]
pub struct ShownUrl(pub Memo<Url>);

/// A URL that follows `url` while `still_shown` holds, and keeps its last
/// value once it does not.
pub fn shown_url(url: Memo<Url>, still_shown: impl Fn() -> bool + Send + Sync + 'static) -> Memo<Url> {
    // `still_shown` is read on every run, the first included, so the memo
    // always depends on it and not only on the address.
    Memo::new(move |last: Option<&Url>| {
        let shown = still_shown();
        match last {
            Some(last) if !shown => last.clone(),
            _ => url.get(),
        }
    })
}

/// Goes to `href` (a path on this site), adding a history entry.
pub fn navigate(href: &str) {
    go(crate::provided::<RouterState>(), href, false);
}

/// Goes to `href`, replacing the current history entry (redirects, filter
/// changes that should not pile up in history).
pub fn navigate_replace(href: &str) {
    go(crate::provided::<RouterState>(), href, true);
}

/// A `navigate` that can be moved into event handlers and async blocks.
pub fn use_navigate() -> impl Fn(&str) + Clone + 'static {
    let state = crate::provided::<RouterState>();
    move |href: &str| go(state, href, false)
}

/// Opens pages from code that runs outside any component (a listener, a
/// task), where the router cannot be looked up; a named type, so a split
/// point's function can take it.
#[derive(Clone, Copy)]
pub struct Navigator(RouterState);

impl Navigator {
    /// Goes to `href`, adding a history entry.
    pub fn go(self, href: &str) {
        go(self.0, href, false);
    }
}

pub fn use_navigator() -> Navigator {
    Navigator(crate::provided::<RouterState>())
}

/// A `navigate_replace` that can be moved into event handlers and async
/// blocks.
pub fn use_navigate_replace() -> impl Fn(&str) + Clone + 'static {
    let state = crate::provided::<RouterState>();
    move |href: &str| go(state, href, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn urls_split_and_join() {
        let url = Url::parse("/jobs?state=Failed&state=Running&q=a%20b#L3");
        assert_eq!(url.path, "/jobs");
        assert_eq!(url.params("state"), vec!["Failed", "Running"]);
        assert_eq!(url.param("q").as_deref(), Some("a b"));
        assert_eq!(url.param("missing"), None);
        assert_eq!(url.hash, "L3");
        assert_eq!(url.href(), "/jobs?state=Failed&state=Running&q=a%20b#L3");
        assert_eq!(Url::parse("").path, "/");
    }

    #[wasm_bindgen_test]
    fn query_strings_leave_out_empty_values() {
        let q = query_string([("q", "a b".to_string()), ("state", String::new()), ("page", "2".into())]);
        assert_eq!(q, "q=a%20b&page=2");
    }

    #[wasm_bindgen_test]
    fn clicking_a_link_changes_the_url_without_a_reload() {
        let document = web_sys::window().unwrap().document().unwrap();
        let host: web_sys::HtmlElement = document.create_element("div").unwrap().unchecked_into();
        document.body().unwrap().append_child(&host).unwrap();
        let seen = RwSignal::new(String::new());
        leptos::mount::mount_to(host.clone(), move || {
            provide_router();
            let url = use_url();
            Effect::new(move |_| seen.set(url.get().href()));
            view! { <a id="go" href="/jobs/x-1/events?y=1">"go"</a> }
        })
        .forget();
        let link: web_sys::HtmlElement = host.query_selector("#go").unwrap().unwrap().unchecked_into();
        link.click();
        let location = web_sys::window().unwrap().location();
        assert_eq!(location.pathname().unwrap(), "/jobs/x-1/events");
        assert_eq!(location.search().unwrap(), "?y=1");
    }
}
