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
//! The rows are drawn directly into the DOM (as the other live displays are,
//! see `dom.rs`) from the scroll handler itself: a scroll must repaint within
//! the same frame. Line text goes in as text nodes (`ansi::render_into`).
//!
//! Line numbers are links: a click selects a line, a shift-click a range,
//! and the address becomes `…#L120-L140`, which opens the same lines
//! highlighted for whoever receives it.

use std::collections::BTreeMap;

use jobdeck_api::{LogLine, LogRange};
use leptos::prelude::*;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlElement};

use crate::api::{self, ApiFailure};
use crate::components::api_error::use_sign_in_again;
use crate::components::dom::{self, Keyed};
use crate::components::live::sleep;
use crate::components::numbers::within;
use crate::components::{ansi, time};
use crate::router::{use_navigate_replace, use_url};

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

/// Where the viewport is over a log of `total` lines.
#[derive(Clone, Copy, PartialEq)]
pub struct Geometry {
    pub total: u64,
    /// The viewport's height in pixels.
    pub viewport: f64,
}

impl Geometry {
    /// The height the whole log would have.
    fn content_px(&self) -> f64 {
        self.total as f64 * LINE_PX
    }

    /// The scroll area's height: the content's, capped, never below the
    /// viewport.
    pub fn scroll_px(&self) -> f64 {
        self.content_px().min(MAX_SCROLL_PX).max(self.viewport)
    }

    /// Rows to draw: enough to fill the viewport with a partly shown row at
    /// each end.
    pub fn rows(&self) -> u64 {
        (self.viewport / LINE_PX).ceil() as u64 + 1
    }

    /// The position in the whole log's height (pixels from its top) that a
    /// scroll position stands for.
    pub fn content_at(&self, scroll_top: f64) -> f64 {
        let content_range = self.content_px() - self.viewport;
        let scroll_range = self.scroll_px() - self.viewport;
        if content_range <= 0.0 || scroll_range <= 0.0 {
            return 0.0;
        }
        within(scroll_top, 0.0, scroll_range) * content_range / scroll_range
    }

    /// The first line on screen (0-based) and how many pixels of it are
    /// scrolled out of view, for a position in the whole log's height.
    pub fn window_at(&self, content: f64) -> (u64, f64) {
        let content = within(content, 0.0, (self.content_px() - self.viewport).max(0.0));
        let first = (content / LINE_PX).floor();
        (first as u64, content - first * LINE_PX)
    }

    /// The first line on screen and its hidden pixels, for a scroll position.
    pub fn window(&self, scroll_top: f64) -> (u64, f64) {
        self.window_at(self.content_at(scroll_top))
    }

    /// The position in the whole log's height that puts line `index`
    /// (0-based) at `place` (a fraction of the viewport from its top).
    pub fn content_for(&self, index: u64, place: f64) -> f64 {
        within(index as f64 * LINE_PX - place * self.viewport, 0.0, (self.content_px() - self.viewport).max(0.0))
    }

    /// The scroll position for a position in the whole log's height.
    pub fn scroll_top_at(&self, content: f64) -> f64 {
        let content_range = self.content_px() - self.viewport;
        let scroll_range = self.scroll_px() - self.viewport;
        if content_range <= 0.0 || scroll_range <= 0.0 {
            return 0.0;
        }
        content * scroll_range / content_range
    }

    /// The scroll position that puts line `index` (0-based) at `place`.
    pub fn scroll_top_for(&self, index: u64, place: f64) -> f64 {
        self.scroll_top_at(self.content_for(index, place))
    }
}

/// The selected lines from an address fragment: `L120` or `L120-L140` (in
/// either order).
pub fn parse_selection(hash: &str) -> Option<(u64, u64)> {
    let line = |s: &str| s.strip_prefix('L').and_then(|n| n.parse::<u64>().ok()).filter(|n| *n >= 1);
    let (a, b) = match hash.split_once('-') {
        Some((a, b)) => (line(a)?, line(b)?),
        None => {
            let a = line(hash)?;
            (a, a)
        }
    };
    Some((a.min(b), a.max(b)))
}

/// The fragment that selects lines `from..=to`.
pub fn selection_fragment(from: u64, to: u64) -> String {
    if from == to {
        format!("L{from}")
    } else {
        format!("L{from}-L{to}")
    }
}

/// A count with thousands separators: `1,000,000`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The line a search should show first: the first match at or after the
/// first line on screen, else the first match (searches wrap around).
pub fn first_match_from(matches: &[u64], line: u64) -> Option<usize> {
    if matches.is_empty() {
        return None;
    }
    let at = matches.partition_point(|m| *m < line);
    Some(if at == matches.len() { 0 } else { at })
}

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
    lines: BTreeMap<u64, LogLine>,
    in_flight: Vec<(u64, u64)>,
    scroller: Option<HtmlElement>,
    window: Option<HtmlElement>,
    rows: Option<HtmlElement>,
    spacer: Option<HtmlElement>,
    position: Option<Element>,
    spacer_px: i64,
    keyed: Keyed<Row>,
    selection: Option<(u64, u64)>,
    matches: Matches,
    timestamps: bool,
    wrap: bool,
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
}

impl Core {
    fn geometry(&self) -> Geometry {
        let viewport = self.scroller.as_ref().map(|s| s.client_height() as f64).unwrap_or(0.0);
        Geometry { total: self.total, viewport }
    }

    fn scroll_top(&self) -> f64 {
        self.scroller.as_ref().map(|s| s.scroll_top() as f64).unwrap_or(0.0)
    }

    fn at_bottom(&self) -> bool {
        self.scroller.as_ref().map(|s| s.scroll_top() + s.client_height() >= s.scroll_height() - 2).unwrap_or(true)
    }

    /// Lines `first..=last` (1-based) to draw for the current scroll.
    fn visible(&self) -> (u64, u64, f64) {
        let geometry = self.geometry();
        let rows = geometry.rows();
        let content = match self.anchor {
            Some((top, content)) if self.scroller.as_ref().is_some_and(|s| s.scroll_top() == top) => content,
            _ => geometry.content_at(self.scroll_top()),
        };
        let (first, offset) = geometry.window_at(content);
        let (first, offset) = if self.wrap && self.at_bottom() {
            // Wrapped rows are taller than one line: at the end, the last
            // lines are drawn from the bottom up so the last one shows.
            (self.total.saturating_sub(rows), 0.0)
        } else if self.wrap {
            (first, 0.0)
        } else {
            (first, offset)
        };
        (first + 1, (first + rows).min(self.total), offset)
    }

    fn absorb(&mut self, range: LogRange) {
        self.total = self.total.max(range.total_lines);
        self.ended = range.ended;
        for line in range.lines {
            self.lines.insert(line.line, line);
        }
        self.evict();
    }

    /// Keeps the cache bounded, dropping the lines farthest from the view.
    fn evict(&mut self) {
        if self.lines.len() <= MAX_CACHED_LINES {
            return;
        }
        let (first, _, _) = self.visible();
        let keep_from = first.saturating_sub(MAX_CACHED_LINES as u64 / 2);
        let mut kept = self.lines.split_off(&keep_from);
        let tail_from = keep_from + MAX_CACHED_LINES as u64;
        kept.split_off(&tail_from);
        self.lines = kept;
    }

    /// The chunk-aligned ranges on screen that are neither cached nor asked
    /// for yet.
    fn missing(&self, first: u64, last: u64) -> Vec<(u64, u64)> {
        let mut wanted = Vec::new();
        let mut line = first;
        while line <= last {
            if !self.lines.contains_key(&line) {
                let from = (line - 1) / CHUNK * CHUNK + 1;
                let to = from + CHUNK - 1;
                let asked = self.in_flight.iter().any(|(a, b)| *a <= line && line <= *b);
                if !asked && !wanted.contains(&(from, to)) {
                    wanted.push((from, to));
                }
                line = to + 1;
                continue;
            }
            line += 1;
        }
        wanted
    }

    fn row_class(&self, line: u64, stderr: bool) -> String {
        let mut class = String::from("log-line");
        if stderr {
            class.push_str(" stderr");
        }
        if self.selection.is_some_and(|(a, b)| a <= line && line <= b) {
            class.push_str(" selected");
        }
        if self.matches.lines.binary_search(&line).is_ok() {
            class.push_str(" match");
            let current = self.matches.current.and_then(|i| self.matches.lines.get(i));
            if current == Some(&line) {
                class.push_str(" current-match");
            }
        }
        class
    }

    /// Redraws the rows on screen and returns the ranges to fetch.
    fn draw(&mut self) -> Vec<(u64, u64)> {
        let (Some(rows_element), Some(window)) = (self.rows.clone(), self.window.clone()) else {
            return Vec::new();
        };
        let geometry = self.geometry();
        let spacer_px = (geometry.scroll_px() - geometry.viewport).max(0.0) as i64;
        if spacer_px != self.spacer_px {
            if let Some(spacer) = &self.spacer {
                let _ = spacer.style().set_property("height", &format!("{spacer_px}px"));
            }
            self.spacer_px = spacer_px;
        }
        let (first, last, offset) = self.visible();
        let _ = rows_element.style().set_property("transform", &format!("translateY(-{}px)", offset as i64));
        let _ = window.class_list().toggle_with_force("at-end", self.wrap && self.at_bottom());
        let items: Vec<(String, Row)> = (first..=last)
            .filter(|_| self.total > 0)
            .map(|line| {
                let cached = self.lines.get(&line);
                let row = Row {
                    line,
                    text: cached.map(|l| l.text.clone()),
                    time: cached.map(|l| l.time).unwrap_or(0),
                    class: self.row_class(line, cached.is_some_and(|l| l.stderr)),
                    timestamps: self.timestamps,
                    href: format!("{}#L{line}", self.base_href),
                };
                (line.to_string(), row)
            })
            .collect();
        self.keyed.sync(rows_element.unchecked_ref(), &items, new_row, fill_row);
        if let Some(position) = &self.position {
            let text = if self.total == 0 {
                String::new()
            } else {
                format!("Lines {}–{} of {}", grouped(first), grouped(last), grouped(self.total))
            };
            position.set_text_content(Some(&text));
        }
        self.missing(first, last)
    }

    fn scroll_to_line(&mut self, line: u64, place: f64) {
        let geometry = self.geometry();
        let content = geometry.content_for(line.saturating_sub(1), place);
        if let Some(scroller) = &self.scroller {
            scroller.set_scroll_top(geometry.scroll_top_at(content).round() as i32);
            self.anchor = Some((scroller.scroll_top(), content));
        }
    }

    /// Scrolls the page (not the log) so the whole viewer is on screen: a
    /// link to lines shows them without a further scroll.
    fn bring_into_view(&self) {
        if let Some(scroller) = &self.scroller {
            scroller.scroll_into_view_with_bool(false);
        }
    }

    /// Puts the first screen at `line` (a third down, and the viewer in
    /// view), or at the end; later if the box has no height yet.
    fn place_first_screen(&mut self, line: Option<u64>) {
        if self.geometry().viewport <= 0.0 {
            self.first_place = Some(line);
            return;
        }
        match line {
            Some(line) => {
                self.scroll_to_line(line, JUMP_PLACE);
                self.bring_into_view();
            }
            None => self.scroll_to_end(),
        }
    }

    fn scroll_to_end(&mut self) {
        self.anchor = None;
        if let Some(scroller) = &self.scroller {
            scroller.set_scroll_top(scroller.scroll_height());
        }
    }
}

/// A new, empty row: line-number link, time, text.
fn new_row() -> Element {
    let row = dom::element("div");
    dom::child(&row, "a", "ln", "");
    dom::child(&row, "span", "ts", "");
    dom::child(&row, "span", "lt", "");
    row
}

/// Fills a row for its line.
fn fill_row(row: &Element, item: &Row, previous: Option<&Row>) {
    dom::set(row, "class", &item.class);
    let children = row.children();
    let (Some(number), Some(time), Some(text)) = (children.item(0), children.item(1), children.item(2)) else {
        return;
    };
    if previous.map(|p| (p.line, &p.href)) != Some((item.line, &item.href)) {
        number.set_text_content(Some(&item.line.to_string()));
        dom::set(&number, "href", &item.href);
        dom::set(&number, "data-ln", &item.line.to_string());
    }
    let stamp =
        if item.timestamps && item.text.is_some() { time::format_time_millis(item.time) } else { String::new() };
    time.set_text_content(Some(&stamp));
    if previous.map(|p| &p.text) != Some(&item.text) {
        dom::clear(&text);
        match &item.text {
            Some(line) => ansi::render_into(&text, line),
            None => text.set_text_content(Some("…")),
        }
    }
}

/// What the viewer says about the log as a whole.
#[derive(Debug, Clone, PartialEq)]
pub enum LogState {
    Loading,
    Live,
    Ended,
    Failed(String),
}

/// The viewer for one attempt's log. `job` and `replica` are fixed: the page
/// makes a new viewer for another attempt.
#[component]
pub fn LogViewer(job: String, replica: String) -> impl IntoView {
    let url = use_url();
    let navigate_replace = use_navigate_replace();
    let sign_in_again = use_sign_in_again();
    let base_href = url.with_untracked(|u| {
        let mut base = u.clone();
        base.hash.clear();
        base.href()
    });
    let selection_in_address = Memo::new(move |_| url.with(|u| parse_selection(&u.hash)));
    let core = StoredValue::new_local(Core {
        job,
        replica,
        total: 0,
        ended: false,
        lines: BTreeMap::new(),
        in_flight: Vec::new(),
        scroller: None,
        window: None,
        rows: None,
        spacer: None,
        position: None,
        spacer_px: -1,
        keyed: Keyed::default(),
        selection: selection_in_address.get_untracked(),
        matches: Matches::default(),
        timestamps: false,
        wrap: false,
        base_href,
        abort: web_sys::AbortController::new().ok(),
        anchor: None,
        first_place: None,
        resize: None,
    });
    let state = RwSignal::new(LogState::Loading);
    let total = RwSignal::new(0u64);
    let follow = RwSignal::new(false);
    let timestamps = RwSignal::new(false);
    let wrap = RwSignal::new(false);
    let search_text = RwSignal::new(String::new());
    let search_regex = RwSignal::new(false);
    let search_case = RwSignal::new(false);
    let search_status = RwSignal::new(String::new());
    let searched = RwSignal::new(None::<(String, bool, bool)>);
    let copied = RwSignal::new(false);

    let scroller_ref = NodeRef::<leptos::html::Div>::new();
    let window_ref = NodeRef::<leptos::html::Div>::new();
    let rows_ref = NodeRef::<leptos::html::Div>::new();
    let spacer_ref = NodeRef::<leptos::html::Div>::new();
    let position_ref = NodeRef::<leptos::html::Span>::new();

    on_cleanup(move || {
        core.try_update_value(|c| {
            if let Some(abort) = c.abort.take() {
                abort.abort();
            }
            if let Some((observer, _)) = c.resize.take() {
                observer.disconnect();
            }
        });
    });

    // The first screen: the selected lines when the address names some,
    // else the end of the log. Then, while the attempt runs, follow it.
    Effect::new(move |done: Option<bool>| {
        if done == Some(true) {
            return true;
        }
        let (Some(scroller), Some(window), Some(rows), Some(spacer), Some(position)) =
            (scroller_ref.get(), window_ref.get(), rows_ref.get(), spacer_ref.get(), position_ref.get())
        else {
            return false;
        };
        let on_resize = Closure::<dyn FnMut()>::new(move || {
            let placed = core.try_update_value(|c| {
                if c.geometry().viewport > 0.0 {
                    if let Some(line) = c.first_place.take() {
                        c.place_first_screen(line);
                    }
                }
            });
            if placed.is_some() {
                refresh(core, state);
            }
        });
        let observer = web_sys::ResizeObserver::new(on_resize.as_ref().unchecked_ref()).ok();
        if let Some(observer) = &observer {
            observer.observe(&scroller);
        }
        core.update_value(|c| {
            c.resize = observer.map(|o| (o, on_resize));
            c.scroller = Some(scroller.unchecked_into());
            c.window = Some(window.unchecked_into());
            c.rows = Some(rows.unchecked_into());
            c.spacer = Some(spacer.unchecked_into());
            c.position = Some(position.unchecked_into());
        });
        let sign_in_again = sign_in_again.clone();
        leptos::task::spawn_local(async move {
            let Some((job, replica, selection, signal)) = core.try_with_value(|c| {
                (c.job.clone(), c.replica.clone(), c.selection, c.abort.as_ref().map(|a| a.signal()))
            }) else {
                return;
            };
            let first = match selection {
                Some((from, _)) => {
                    let start = (from - 1) / CHUNK * CHUNK + 1;
                    api::log_range(&job, &replica, start, start + CHUNK - 1, signal.as_ref()).await
                }
                None => api::log_tail(&job, &replica, CHUNK, signal.as_ref()).await,
            };
            let range = match first {
                Ok(range) => range,
                Err(ApiFailure::Unauthorized) => return sign_in_again(),
                Err(ApiFailure::NotFound(message)) => return state.set(LogState::Failed(message)),
                Err(failure) => return state.set(LogState::Failed(failure.to_string())),
            };
            let ended = range.ended;
            let count = range.total_lines;
            if core.try_update_value(|c| c.absorb(range)).is_none() {
                return;
            }
            total.set(count);
            state.set(if ended { LogState::Ended } else { LogState::Live });
            // Size the spacer first, so the scroll position can be set.
            refresh(core, state);
            core.update_value(|c| c.place_first_screen(selection.map(|(from, _)| from)));
            follow.set(selection.is_none() && !ended);
            refresh(core, state);
            follow_log(core, state, total, follow, signal).await;
        });
        true
    });

    // A selection arriving through the address (a link opened, back and
    // forward) scrolls to it; one made by clicking is already on screen.
    Effect::new(move |_| {
        let wanted = selection_in_address.get();
        let moved = core.try_update_value(|c| {
            if c.selection == wanted {
                return false;
            }
            c.selection = wanted;
            if let Some((from, _)) = wanted {
                c.scroll_to_line(from, JUMP_PLACE);
                c.bring_into_view();
            }
            true
        });
        if moved == Some(true) {
            if wanted.is_some() {
                follow.set(false);
            }
            refresh(core, state);
        }
    });

    Effect::new(move |_| {
        let (stamps, wrapped) = (timestamps.get(), wrap.get());
        core.update_value(|c| {
            c.timestamps = stamps;
            c.wrap = wrapped;
        });
        refresh(core, state);
    });

    let on_scroll = move |_| {
        let at_bottom = core.with_value(|c| c.at_bottom() && !c.ended);
        if follow.get_untracked() != at_bottom {
            follow.set(at_bottom);
        }
        refresh(core, state);
    };

    let on_follow = move |ev: leptos::ev::Event| {
        let on = event_target_checked(&ev);
        follow.set(on);
        if on {
            core.update_value(Core::scroll_to_end);
            refresh(core, state);
        }
    };

    // A click on a line number selects that line, a shift-click the range
    // from the line selected before; the address follows.
    let on_rows_click = {
        let navigate_replace = navigate_replace.clone();
        move |ev: leptos::ev::MouseEvent| {
            let Some(line) = dom::closest_attribute(&ev, "data-ln").and_then(|n| n.parse::<u64>().ok()) else {
                return;
            };
            ev.prevent_default();
            let Some((selection, base)) = core.try_update_value(|c| {
                let selection = match (ev.shift_key(), c.selection) {
                    (true, Some((a, b))) => {
                        let anchor = if line < a { b } else { a };
                        (anchor.min(line), anchor.max(line))
                    }
                    _ => (line, line),
                };
                c.selection = Some(selection);
                (selection, c.base_href.clone())
            }) else {
                return;
            };
            copied.set(false);
            refresh(core, state);
            navigate_replace(&format!("{base}#{}", selection_fragment(selection.0, selection.1)));
        }
    };

    let run_search = move || {
        let text = search_text.get_untracked();
        if text.is_empty() {
            return;
        }
        let wanted = (text.clone(), search_regex.get_untracked(), search_case.get_untracked());
        if searched.get_untracked().as_ref() == Some(&wanted) {
            return step_match(core, state, follow, search_status, 1);
        }
        searched.set(Some(wanted.clone()));
        search_status.set("Searching…".into());
        let Some((job, replica)) = core.try_with_value(|c| (c.job.clone(), c.replica.clone())) else { return };
        leptos::task::spawn_local(async move {
            let answer = api::log_search(&job, &replica, &wanted.0, wanted.1, wanted.2).await;
            if searched.try_get_untracked().flatten().as_ref() != Some(&wanted) {
                return;
            }
            match answer {
                Ok(found) => {
                    let first_line = core.with_value(|c| c.visible().0);
                    let current = first_match_from(&found.matches, first_line);
                    let truncated = found.truncated;
                    core.update_value(|c| c.matches = Matches { lines: found.matches, current });
                    if current.is_some() {
                        step_match(core, state, follow, search_status, 0);
                    } else {
                        search_status.set("No matching line".into());
                        refresh(core, state);
                    }
                    if truncated {
                        search_status.update(|s| s.push_str(" (only the first matches are listed)"));
                    }
                }
                Err(failure) => {
                    searched.set(None);
                    search_status.set(failure.to_string());
                }
            }
        });
    };
    // A new search text, pattern mode or case rule clears the old matches.
    Effect::new(move |_| {
        let now = (search_text.get(), search_regex.get(), search_case.get());
        if searched.get_untracked().is_some_and(|done| done != now) {
            searched.set(None);
            search_status.set(String::new());
            core.update_value(|c| c.matches = Matches::default());
            refresh(core, state);
        }
    });

    let on_search_key = move |ev: leptos::ev::KeyboardEvent| {
        if ev.key() == "Enter" {
            ev.prevent_default();
            if ev.shift_key() && searched.get_untracked().is_some() {
                step_match(core, state, follow, search_status, -1);
            } else {
                run_search();
            }
        }
    };

    let on_download = move |_| {
        let Some((job, replica)) = core.try_with_value(|c| (c.job.clone(), c.replica.clone())) else { return };
        let stamps = timestamps.get_untracked();
        leptos::task::spawn_local(async move {
            if let Err(failure) = api::download_log(&job, &replica, stamps).await {
                search_status.set(format!("Download failed: {failure}"));
            }
        });
    };

    let on_copy_link = move |_| {
        let Some(window) = web_sys::window() else { return };
        let href = window.location().href().unwrap_or_default();
        let _ = window.navigator().clipboard().write_text(&href);
        copied.set(true);
    };

    let state_text = move || match state.get() {
        LogState::Loading => "Loading the log…".to_string(),
        LogState::Live if total.get() == 0 => "No output yet; new lines appear as they are written.".into(),
        LogState::Live if follow.get() => "Following: new lines appear as they are written.".into(),
        LogState::Live => "The attempt is running. Scroll to the end, or tick Follow, to follow new lines.".into(),
        LogState::Ended if total.get() == 0 => "This attempt wrote no output.".into(),
        LogState::Ended => "The attempt has ended; this is its whole log.".into(),
        LogState::Failed(why) => why,
    };

    view! {
        <div class="log-viewer" class:wrap=move || wrap.get()>
            <div class="log-controls">
                <label class="check">
                    <input type="checkbox" id="log-follow" prop:checked=move || follow.get() on:change=on_follow
                        prop:disabled=move || state.get() != LogState::Live/>
                    "Follow"
                </label>
                <label class="check"><input type="checkbox" id="log-timestamps" bind:checked=timestamps/>"Timestamps"</label>
                <label class="check"><input type="checkbox" id="log-wrap" bind:checked=wrap/>"Wrap lines"</label>
                <button type="button" id="log-download" on:click=on_download>"Download"</button>
                <Show when=move || selection_in_address.with(Option::is_some)>
                    <button type="button" id="log-copy-link" on:click=on_copy_link>
                        {move || if copied.get() { "Link copied" } else { "Copy link to selected lines" }}
                    </button>
                </Show>
            </div>
            <div class="log-search" role="search">
                <label for="log-search-text">"Search the log"</label>
                <input type="search" id="log-search-text" bind:value=search_text on:keydown=on_search_key
                    placeholder="text, or a pattern with Regex"/>
                <label class="check"><input type="checkbox" id="log-search-regex" bind:checked=search_regex/>"Regex"</label>
                <label class="check"><input type="checkbox" id="log-search-case" bind:checked=search_case/>"Ignore case"</label>
                <button type="button" id="log-search-go" on:click=move |_| run_search()>"Find"</button>
                <button type="button" id="log-search-prev" aria-label="Previous match"
                    prop:disabled=move || search_status.with(|_| core.with_value(|c| c.matches.lines.is_empty()))
                    on:click=move |_| step_match(core, state, follow, search_status, -1)>"↑"</button>
                <button type="button" id="log-search-next" aria-label="Next match"
                    prop:disabled=move || search_status.with(|_| core.with_value(|c| c.matches.lines.is_empty()))
                    on:click=move |_| step_match(core, state, follow, search_status, 1)>"↓"</button>
                <span class="log-search-status" role="status">{move || search_status.get()}</span>
            </div>
            <p class="log-status" role="status">
                {state_text} " " <span class="log-position" node_ref=position_ref></span>
            </p>
            <div class="log-scroller" node_ref=scroller_ref tabindex="0" aria-label="Log lines" on:scroll=on_scroll>
                <div class="log-window" node_ref=window_ref>
                    <div class="log-rows" node_ref=rows_ref on:click=on_rows_click></div>
                </div>
                <div class="log-spacer" node_ref=spacer_ref></div>
            </div>
        </div>
    }
}

/// Moves to the next (`step` 1), previous (-1) or current (0) match and
/// scrolls it into view.
fn step_match(
    core: StoredValue<Core, LocalStorage>,
    state: RwSignal<LogState>,
    follow: RwSignal<bool>,
    status: RwSignal<String>,
    step: i64,
) {
    let found = core.try_update_value(|c| {
        let count = c.matches.lines.len() as i64;
        if count == 0 {
            return None;
        }
        let current = c.matches.current.map(|i| i as i64).unwrap_or(0);
        let next = (current + step).rem_euclid(count) as usize;
        c.matches.current = Some(next);
        let line = c.matches.lines[next];
        c.scroll_to_line(line, JUMP_PLACE);
        Some((next + 1, count as u64, line))
    });
    if let Some(Some((at, count, line))) = found {
        follow.set(false);
        status.set(format!("{} of {} · line {}", grouped(at as u64), grouped(count), grouped(line)));
        refresh(core, state);
    }
}

/// Follows a running attempt: each request waits for lines after the last
/// one known and answers with them and the new total. While the user reads
/// elsewhere in the log only the total is asked for, so a fast-growing log
/// does not stream lines nobody looks at.
async fn follow_log(
    core: StoredValue<Core, LocalStorage>,
    state: RwSignal<LogState>,
    total: RwSignal<u64>,
    follow: RwSignal<bool>,
    signal: Option<web_sys::AbortSignal>,
) {
    loop {
        let Some((job, replica, known, ended)) =
            core.try_with_value(|c| (c.job.clone(), c.replica.clone(), c.total, c.ended))
        else {
            return;
        };
        if ended {
            state.set(LogState::Ended);
            follow.set(false);
            return;
        }
        let following = follow.try_get_untracked().unwrap_or(false);
        let to = if following { known + CHUNK } else { known + 1 };
        let answer = api::log_range_waiting(&job, &replica, known + 1, to, FOLLOW_WAIT_SECONDS, signal.as_ref()).await;
        if signal.as_ref().is_some_and(|s| s.aborted()) {
            return;
        }
        match answer {
            Ok(range) => {
                let count = range.total_lines;
                if core.try_update_value(|c| c.absorb(range)).is_none() {
                    return;
                }
                if total.try_get_untracked() != Some(count) {
                    total.set(count);
                }
                let stick = follow.try_get_untracked().unwrap_or(false);
                if stick {
                    core.update_value(|c| {
                        c.draw();
                        c.scroll_to_end();
                    });
                }
                refresh(core, state);
            }
            Err(ApiFailure::Unauthorized) => {
                state.set(LogState::Failed("Your session has ended; sign in again to follow the log.".into()));
                return;
            }
            Err(failure) => {
                state.set(LogState::Failed(format!("{failure}; trying again…")));
                sleep(2000).await;
                if core.try_with_value(|_| ()).is_none() {
                    return;
                }
                state.set(LogState::Live);
            }
        }
    }
}

/// Draws the rows on screen, then fetches whatever they lack; each answer
/// draws again. Fetches are few at a time, so dragging the scroll bar across
/// a long log asks only for where it stops.
fn refresh(core: StoredValue<Core, LocalStorage>, state: RwSignal<LogState>) {
    let Some(wanted) = core.try_update_value(|c| c.draw()) else { return };
    for (from, to) in wanted {
        let Some(Some((job, replica, signal))) = core.try_update_value(|c| {
            if c.in_flight.len() >= MAX_IN_FLIGHT {
                return None;
            }
            c.in_flight.push((from, to));
            Some((c.job.clone(), c.replica.clone(), c.abort.as_ref().map(|a| a.signal())))
        }) else {
            return;
        };
        leptos::task::spawn_local(async move {
            let answer = api::log_range(&job, &replica, from, to, signal.as_ref()).await;
            let alive = core.try_update_value(|c| {
                c.in_flight.retain(|r| *r != (from, to));
                if let Ok(range) = &answer {
                    c.absorb(range.clone());
                }
            });
            if alive.is_none() || signal.as_ref().is_some_and(|s| s.aborted()) {
                return;
            }
            match answer {
                Ok(_) => refresh(core, state),
                Err(failure) => state.set(LogState::Failed(failure.to_string())),
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn a_short_log_scrolls_one_pixel_per_pixel() {
        let g = Geometry { total: 1_000, viewport: 400.0 };
        assert_eq!(g.scroll_px(), 20_000.0);
        assert_eq!(g.rows(), 21);
        assert_eq!(g.window(0.0), (0, 0.0));
        assert_eq!(g.window(130.0), (6, 10.0));
        // The last screen shows the last line at the bottom.
        let (first, offset) = g.window(20_000.0 - 400.0);
        assert_eq!((first, offset), (980, 0.0));
        assert_eq!(g.scroll_top_for(500, 0.0), 10_000.0);
        assert_eq!(g.scroll_top_for(0, JUMP_PLACE), 0.0);
    }

    #[wasm_bindgen_test]
    fn a_huge_log_is_scaled_into_the_scroll_area_and_every_line_is_reachable() {
        let g = Geometry { total: 100_000_000, viewport: 600.0 };
        assert_eq!(g.scroll_px(), MAX_SCROLL_PX);
        let bottom = MAX_SCROLL_PX - 600.0;
        let (first, _) = g.window(bottom);
        assert_eq!(first + g.rows() - 1, 100_000_000, "the last line is on the last screen");
        for line in [0, 1, 12_345_678, 99_999_969] {
            let (first, _) = g.window(g.scroll_top_for(line, 0.0));
            assert!(first.abs_diff(line) <= 13, "line {line} scrolls to {first}");
        }
    }

    #[wasm_bindgen_test]
    fn a_log_shorter_than_the_viewport_does_not_scroll() {
        let g = Geometry { total: 3, viewport: 400.0 };
        assert_eq!(g.scroll_px(), 400.0);
        assert_eq!(g.window(50.0), (0, 0.0));
        assert_eq!(g.scroll_top_for(2, 0.0), 0.0);
        assert_eq!(Geometry { total: 0, viewport: 400.0 }.window(0.0), (0, 0.0));
    }

    #[wasm_bindgen_test]
    fn selections_read_from_the_fragment() {
        let cases = [
            ("L120", Some((120, 120))),
            ("L120-L140", Some((120, 140))),
            ("L140-L120", Some((120, 140))),
            ("L0", None),
            ("L12x", None),
            ("120", None),
            ("L1-", None),
            ("", None),
            ("token=abc", None),
        ];
        for (hash, expected) in cases {
            assert_eq!(parse_selection(hash), expected, "{hash}");
        }
        assert_eq!(selection_fragment(5, 5), "L5");
        assert_eq!(selection_fragment(5, 9), "L5-L9");
        assert_eq!(parse_selection(&selection_fragment(7, 70)), Some((7, 70)));
    }

    #[wasm_bindgen_test]
    fn counts_and_matches() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_000), "1,000");
        assert_eq!(grouped(1_234_567), "1,234,567");
        let matches = [10, 20, 30];
        assert_eq!(first_match_from(&matches, 1), Some(0));
        assert_eq!(first_match_from(&matches, 20), Some(1));
        assert_eq!(first_match_from(&matches, 21), Some(2));
        assert_eq!(first_match_from(&matches, 31), Some(0), "searches wrap around");
        assert_eq!(first_match_from(&[], 1), None);
    }
}
