//! The log viewer: one attempt's log, of any length, drawn one screen at a
//! time.
//!
//! The viewer never holds the whole log. It asks the server for the total
//! line count and for the line ranges that are on screen (`from`/`to`),
//! keeps a bounded cache of lines around the view, and draws only the rows
//! that fit in the viewport, so a log of millions of lines opens as fast as
//! a short one and the page holds a few hundred DOM nodes whatever the
//! length.
//!
//! Layout: a scroll box holds a sticky window the size of the viewport and a
//! spacer that makes the scroll height what the whole log would be. Past
//! `MAX_SCROLL_PX` (browsers cap element heights) the scroll height is
//! scaled down and a scroll position maps to a line proportionally, so there
//! is no limit on the number of lines.
//!
//! The whole viewer is drawn directly into the DOM (as the other live
//! displays are, see `dom.rs`) and its state lives in `Core`, outside the
//! reactive graph: the rows are drawn from the scroll handler itself (a
//! scroll must repaint within the same frame), the controls from the same
//! state after every change. Line text goes in as text nodes
//! (`ansi::render_into`).
//!
//! Line numbers are links: a click selects a line, a shift-click a range,
//! and the address becomes `…#L120-L140`, which opens the same lines
//! highlighted for whoever receives it.

mod controls;
mod events;
mod fetch;
mod geometry;
mod rows;
mod search;

use std::rc::Rc;

use jobdeck_api::LogLine;
use leptos::prelude::*;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlElement};

use crate::api::{self, ApiFailure};
use crate::components::api_error::use_sign_in_again;
use crate::components::dom::{self, Keyed};
use crate::router::{use_navigate_replace, use_url};
use controls::{Controls, LogState, Search, Shown};
use events::on_event;
use fetch::{follow_log, refresh};
use geometry::parse_selection;

/// The height of one unwrapped row in pixels; the stylesheet's `.log-line`
/// uses the same.
pub const LINE_PX: f64 = 20.0;
/// The tallest scroll area the viewer makes; longer logs are scaled.
pub const MAX_SCROLL_PX: f64 = 8_000_000.0;
/// Lines per range request: the unit of fetching and caching.
pub const CHUNK: u64 = 500;
/// The most lines kept in memory; the farthest from the view go first.
const MAX_CACHED_LINES: usize = 40 * CHUNK as usize;
/// Range requests under way at once while scrolling.
const MAX_IN_FLIGHT: usize = 2;
/// Seconds one follow request waits for new lines.
const FOLLOW_WAIT_SECONDS: u64 = 25;
/// Where a line scrolled to is placed: a third down the viewport.
const JUMP_PLACE: f64 = 1.0 / 3.0;

/// One drawn row: what it shows, compared to skip rows that did not change.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    line: u64,
    /// `None` while the line is being fetched.
    text: Option<String>,
    time: i64,
    class: String,
    timestamps: bool,
    href: String,
}

/// A search as the viewer keeps it.
#[derive(Clone, Default)]
struct Matches {
    lines: Vec<u64>,
    current: Option<usize>,
}

/// The viewer's state outside the reactive graph: the scroll handler reads
/// and draws it directly.
struct Core {
    job: String,
    replica: String,
    total: u64,
    ended: bool,
    /// The lines fetched, in the order of their numbers, with gaps where
    /// none were: a sorted vector rather than a map, since answers come as
    /// runs of lines in order (`absorb`), and a map's code was a twelfth of
    /// the logs tab's download (docs/measurements.md, "The console back
    /// within its budgets").
    lines: Vec<LogLine>,
    in_flight: Vec<(u64, u64)>,
    scroller: Option<HtmlElement>,
    window: Option<HtmlElement>,
    rows: Option<HtmlElement>,
    spacer: Option<HtmlElement>,
    position: Option<Element>,
    controls: Option<Controls>,
    /// What the controls show, once drawn.
    shown: Option<Shown>,
    spacer_px: i64,
    keyed: Keyed<Row>,
    selection: Option<(u64, u64)>,
    matches: Matches,
    timestamps: bool,
    wrap: bool,
    state: LogState,
    follow: bool,
    /// The search whose matches are shown.
    searched: Option<Search>,
    search_status: String,
    /// Whether the link to the selected lines was copied since they were
    /// selected.
    copied: bool,
    /// The address of this log without a fragment, for line links.
    base_href: String,
    abort: Option<web_sys::AbortController>,
    /// After a jump to a line: the scroll position it set and the exact
    /// position in the log it stands for. In a scaled log one pixel of
    /// scrolling is many lines, so while the user has not scrolled since,
    /// the exact position is what is drawn.
    anchor: Option<(i32, f64)>,
    /// Where the first screen goes (the selected lines, or the end with
    /// `None`), while the scroll box is not laid out yet: the page may keep
    /// the viewer out of the document until its other parts have loaded,
    /// and a box of no height can neither be scrolled nor filled.
    first_place: Option<Option<u64>>,
    /// Redraws when the scroll box changes size (laid out, window resized).
    resize: Option<(web_sys::ResizeObserver, Closure<dyn FnMut()>)>,
    /// The one listener of the viewer's controls, rows and scroll box.
    listener: Option<Closure<dyn Fn(web_sys::Event)>>,
    /// Changes the address's fragment (a selected line) without a new
    /// history entry.
    navigate_replace: Option<Rc<dyn Fn(&str)>>,
    /// Sends the user to sign in again (the server no longer takes the
    /// token).
    sign_in_again: Option<Rc<dyn Fn()>>,
}

impl Core {
    /// A viewer of `job`'s attempt `replica` that has drawn nothing yet, with
    /// lines `selection` selected; `base_href` is the log's address.
    fn new(job: String, replica: String, selection: Option<(u64, u64)>, base_href: String) -> Core {
        Core {
            job,
            replica,
            total: 0,
            ended: false,
            lines: Vec::new(),
            in_flight: Vec::new(),
            scroller: None,
            window: None,
            rows: None,
            spacer: None,
            position: None,
            controls: None,
            shown: None,
            spacer_px: -1,
            keyed: Keyed::default(),
            selection,
            matches: Matches::default(),
            timestamps: false,
            wrap: false,
            state: LogState::Loading,
            follow: false,
            searched: None,
            search_status: String::new(),
            copied: false,
            base_href,
            abort: web_sys::AbortController::new().ok(),
            anchor: None,
            first_place: None,
            resize: None,
            listener: None,
            navigate_replace: None,
            sign_in_again: None,
        }
    }
}

/// The viewer's state, shared by its listener, its requests and the page
/// (`dom::Part`).
type Viewer = dom::Part<Core>;

/// The events the viewer's one listener hears from its controls and rows
/// (and `scroll`, from the scroll box itself).
const LISTENED: [&str; 4] = ["click", "change", "input", "keydown"];

impl Drop for Core {
    /// The viewer is gone: its requests stop, and nothing may call its
    /// listener or resize observer after.
    fn drop(&mut self) {
        if let Some(abort) = self.abort.take() {
            abort.abort();
        }
        if let Some((observer, _)) = self.resize.take() {
            observer.disconnect();
        }
        if let (Some(listener), Some(controls), Some(scroller)) = (&self.listener, &self.controls, &self.scroller) {
            let function = listener.as_ref().unchecked_ref();
            for kind in LISTENED {
                let _ = controls.root.remove_event_listener_with_callback(kind, function);
            }
            let _ = scroller.remove_event_listener_with_callback("scroll", function);
        }
    }
}

/// The viewer for one attempt's log. `job` and `replica` are fixed: the page
/// makes a new viewer for another attempt.
///
/// Its elements are drawn straight into the page and its state is a
/// `dom::Part` (`components/dom.rs`), outside the reactive graph: one
/// listener on the viewer serves every control, and the only reactive input
/// is the line selection in the address. As typed views with a signal per
/// control it was a third of the logs tab's download (docs/measurements.md,
/// "The job page's parts drawn").
#[component]
pub fn LogViewer(job: String, replica: String) -> impl IntoView {
    let url = use_url();
    let base_href = url.with_untracked(|u| {
        let mut base = u.clone();
        base.hash.clear();
        base.href()
    });
    let selection_in_address = Memo::new(move |_| url.with(|u| parse_selection(&u.hash)));
    let mut core = Core::new(job, replica, selection_in_address.get_untracked(), base_href);
    core.navigate_replace = Some(Rc::new(use_navigate_replace()));
    core.sign_in_again = Some(Rc::new(use_sign_in_again()));
    let viewer = Viewer::new(core);
    viewer.end_with_owner();
    let host = NodeRef::<leptos::html::Div>::new();

    // The first run draws the viewer and loads the first screen: the
    // selected lines when the address names some, else the end of the log;
    // then, while the attempt runs, it follows it. Later runs come from a
    // selection arriving through the address (a link opened, back and
    // forward), which scrolls to it; one made by clicking is already on
    // screen.
    let drawn = viewer.clone();
    dom::draw_into(
        host,
        Box::new(move |host| {
            let wanted = selection_in_address.get();
            if drawn.read(|c| c.controls.is_none()) == Some(true) {
                return start(&drawn, host);
            }
            let moved = drawn.change(|c| {
                if c.selection == wanted {
                    return false;
                }
                c.selection = wanted;
                if let Some((from, _)) = wanted {
                    c.follow = false;
                    c.scroll_to_line(from, JUMP_PLACE);
                    c.bring_into_view();
                }
                true
            });
            if moved == Some(true) {
                refresh(&drawn);
            }
        }),
    );

    view! { <div class="log-viewer" node_ref=host></div> }
}

/// Draws the viewer into `root`, listens to it, and loads its first screen.
fn start(viewer: &Viewer, root: &Element) {
    let (controls, [scroller, window, rows, spacer], position) = Controls::build(root);
    let listener = viewer.listener(on_event);
    for kind in LISTENED {
        let _ = root.add_event_listener_with_callback(kind, listener.as_ref().unchecked_ref());
    }
    // A scroll does not bubble up to the viewer.
    let _ = scroller.add_event_listener_with_callback("scroll", listener.as_ref().unchecked_ref());
    let resized = viewer.clone();
    let on_resize = Closure::<dyn FnMut()>::new(move || {
        let placed = resized.change(|c| {
            if c.geometry().viewport > 0.0 {
                if let Some(line) = c.first_place.take() {
                    c.place_first_screen(line);
                }
            }
        });
        if placed.is_some() {
            refresh(&resized);
        }
    });
    let observer = web_sys::ResizeObserver::new(on_resize.as_ref().unchecked_ref()).ok();
    if let Some(observer) = &observer {
        observer.observe(&scroller);
    }
    viewer.change(|c| {
        c.resize = observer.map(|o| (o, on_resize));
        c.scroller = Some(scroller);
        c.window = Some(window);
        c.rows = Some(rows);
        c.spacer = Some(spacer);
        c.position = Some(position);
        c.controls = Some(controls);
        c.listener = Some(listener);
        c.show_controls();
    });
    let viewer = viewer.clone();
    leptos::task::spawn_local(async move {
        let Some((job, replica, selection, signal)) =
            viewer.read(|c| (c.job.clone(), c.replica.clone(), c.selection, c.abort.as_ref().map(|a| a.signal())))
        else {
            return;
        };
        let first = match selection {
            Some((from, _)) => {
                let start = (from - 1) / CHUNK * CHUNK + 1;
                api::log_range(&job, &replica, start, start + CHUNK - 1, signal.as_ref()).await
            }
            None => api::log_tail(&job, &replica, CHUNK, signal.as_ref()).await,
        };
        let failed = match first {
            Ok(range) => {
                let ended = range.ended;
                viewer
                    .change(|c| {
                        c.absorb(range);
                        c.state = if ended { LogState::Ended } else { LogState::Live };
                    })
                    .map(|_| None)
            }
            Err(ApiFailure::Unauthorized) => {
                if let Some(sign_in_again) = viewer.read(|c| c.sign_in_again.clone()).flatten() {
                    sign_in_again();
                }
                return;
            }
            Err(ApiFailure::NotFound(message)) => Some(Some(message)),
            Err(failure) => Some(Some(failure.to_string())),
        };
        match failed {
            None => return,
            Some(Some(why)) => {
                viewer.change(|c| c.set_state(LogState::Failed(why)));
                return;
            }
            Some(None) => {}
        }
        // Size the spacer first, so the scroll position can be set.
        refresh(&viewer);
        viewer.change(|c| {
            c.place_first_screen(selection.map(|(from, _)| from));
            c.follow = selection.is_none() && !c.ended;
        });
        refresh(&viewer);
        follow_log(&viewer, signal).await;
    });
}
