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

use std::collections::BTreeMap;

use jobdeck_api::{LogLine, LogRange};
use leptos::prelude::*;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlElement, HtmlInputElement};

use crate::api::{self, ApiFailure};
use crate::components::api_error::use_sign_in_again;
use crate::components::dom::{self, Keyed};
use crate::components::live::sleep;
use crate::components::time;
use crate::pages::job::ansi;
use crate::pages::job::numbers::within;
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
    listener: Option<Closure<dyn FnMut(web_sys::Event)>>,
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
            lines: BTreeMap::new(),
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
        }
    }

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
                // From the first missing line to the end of its chunk: an
                // answer the server cut at its byte bound is then followed
                // by one for the lines after it, never the same one again.
                let to = (line - 1) / CHUNK * CHUNK + CHUNK;
                let asked = self.in_flight.iter().any(|(a, b)| *a <= line && line <= *b);
                if !asked && !wanted.contains(&(line, to)) {
                    wanted.push((line, to));
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
enum LogState {
    Loading,
    Live,
    Ended,
    Failed(String),
}

/// The viewer's controls, kept to show the state in them.
struct Controls {
    root: Element,
    follow: HtmlInputElement,
    timestamps: HtmlInputElement,
    wrap: HtmlInputElement,
    copy_link: Element,
    search_text: HtmlInputElement,
    search_regex: HtmlInputElement,
    search_case: HtmlInputElement,
    previous: Element,
    next: Element,
    search_status: Element,
    state: Element,
}

/// What the controls and the status line show: `copy_link` is `None` while
/// no lines are selected, else whether the link was copied.
#[derive(PartialEq)]
struct Shown {
    follow: bool,
    can_follow: bool,
    wrap: bool,
    copy_link: Option<bool>,
    can_step: bool,
    search_status: String,
    state: String,
}

/// A search as asked: the text, whether it is a regular expression, whether
/// case is ignored.
type Search = (String, bool, bool);

impl Controls {
    /// Makes the viewer's elements in `root`: the controls, the search row,
    /// the status line and the scroll box with its rows.
    fn build(root: &Element) -> (Controls, [HtmlElement; 4], Element) {
        let row = dom::child(root, "div", "log-controls", "");
        let check = |parent: &Element, id: &str, words: &str| {
            let label = dom::child(parent, "label", "check", "");
            let input = dom::child(&label, "input", "", "");
            dom::set(&input, "type", "checkbox");
            dom::set(&input, "id", id);
            let _ = label.append_with_str_1(words);
            input.unchecked_into::<HtmlInputElement>()
        };
        let button = |parent: &Element, id: &str, words: &str| {
            let button = dom::child(parent, "button", "", words);
            dom::set(&button, "type", "button");
            dom::set(&button, "id", id);
            button
        };
        let follow = check(&row, "log-follow", "Follow");
        let timestamps = check(&row, "log-timestamps", "Timestamps");
        let wrap = check(&row, "log-wrap", "Wrap lines");
        button(&row, "log-download", "Download");
        let copy_link = button(&row, "log-copy-link", "");

        let search = dom::child(root, "div", "log-search", "");
        dom::set(&search, "role", "search");
        dom::set(&dom::child(&search, "label", "", "Search the log"), "for", "log-search-text");
        let search_text = dom::child(&search, "input", "", "");
        dom::set(&search_text, "type", "search");
        dom::set(&search_text, "id", "log-search-text");
        dom::set(&search_text, "placeholder", "text, or a pattern with Regex");
        let search_regex = check(&search, "log-search-regex", "Regex");
        let search_case = check(&search, "log-search-case", "Ignore case");
        button(&search, "log-search-go", "Find");
        let previous = button(&search, "log-search-prev", "↑");
        dom::set(&previous, "aria-label", "Previous match");
        let next = button(&search, "log-search-next", "↓");
        dom::set(&next, "aria-label", "Next match");
        let search_status = dom::child(&search, "span", "log-search-status", "");
        dom::set(&search_status, "role", "status");

        let status = dom::child(root, "p", "log-status", "");
        dom::set(&status, "role", "status");
        let state = dom::child(&status, "span", "", "");
        let _ = status.append_with_str_1(" ");
        let position = dom::child(&status, "span", "log-position", "");

        let scroller = dom::child(root, "div", "log-scroller", "");
        dom::set(&scroller, "tabindex", "0");
        dom::set(&scroller, "aria-label", "Log lines");
        let window = dom::child(&scroller, "div", "log-window", "");
        let rows = dom::child(&window, "div", "log-rows", "");
        let spacer = dom::child(&scroller, "div", "log-spacer", "");
        let controls = Controls {
            root: root.clone(),
            follow,
            timestamps,
            wrap,
            copy_link,
            search_text: search_text.unchecked_into(),
            search_regex,
            search_case,
            previous,
            next,
            search_status,
            state,
        };
        let boxes = [scroller, window, rows, spacer].map(|e| e.unchecked_into::<HtmlElement>());
        (controls, boxes, position)
    }

    /// The search the inputs ask for now.
    fn search(&self) -> Search {
        (self.search_text.value(), self.search_regex.checked(), self.search_case.checked())
    }
}

impl Core {
    /// What the controls and the status line would show now.
    fn controls_shown(&self) -> Shown {
        let state = match &self.state {
            LogState::Loading => "Loading the log…",
            LogState::Live if self.total == 0 => "No output yet; new lines appear as they are written.",
            LogState::Live if self.follow => "Following: new lines appear as they are written.",
            LogState::Live => "The attempt is running. Scroll to the end, or tick Follow, to follow new lines.",
            LogState::Ended if self.total == 0 => "This attempt wrote no output.",
            LogState::Ended => "The attempt has ended; this is its whole log.",
            LogState::Failed(why) => why,
        };
        Shown {
            follow: self.follow,
            can_follow: self.state == LogState::Live,
            wrap: self.wrap,
            copy_link: self.selection.map(|_| self.copied),
            can_step: !self.matches.lines.is_empty(),
            search_status: self.search_status.clone(),
            state: state.to_string(),
        }
    }

    /// Shows the viewer's state in its controls and status line. Every
    /// redraw asks (a scroll, at every frame), so only a change is written.
    fn show_controls(&mut self) {
        let Some(c) = &self.controls else { return };
        let shown = self.controls_shown();
        if self.shown.as_ref() == Some(&shown) {
            return;
        }
        c.follow.set_checked(shown.follow);
        c.follow.set_disabled(!shown.can_follow);
        let _ = c.root.class_list().toggle_with_force("wrap", shown.wrap);
        let _ = c.copy_link.toggle_attribute_with_force("hidden", shown.copy_link.is_none());
        let copied = shown.copy_link == Some(true);
        c.copy_link.set_text_content(Some(if copied { "Link copied" } else { "Copy link to selected lines" }));
        for button in [&c.previous, &c.next] {
            let _ = button.toggle_attribute_with_force("disabled", !shown.can_step);
        }
        c.search_status.set_text_content(Some(&shown.search_status));
        c.state.set_text_content(Some(&shown.state));
        self.shown = Some(shown);
    }

    /// A new state of the log, shown.
    fn set_state(&mut self, state: LogState) {
        self.state = state;
        self.show_controls();
    }
}

type Stored = StoredValue<Core, LocalStorage>;

/// The events the viewer's one listener hears from its controls and rows
/// (and `scroll`, from the scroll box itself).
const LISTENED: [&str; 4] = ["click", "change", "input", "keydown"];

/// The viewer for one attempt's log. `job` and `replica` are fixed: the page
/// makes a new viewer for another attempt.
///
/// Its elements are drawn straight into the page (`components/dom.rs`) and
/// its state lives in `Core`, outside the reactive graph: one listener on
/// the viewer serves every control, and the only reactive input is the line
/// selection in the address. As typed views with a signal per control it
/// was a third of the logs tab's download (docs/measurements.md, "The job
/// page's parts drawn").
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
    let core = StoredValue::new_local(Core::new(job, replica, selection_in_address.get_untracked(), base_href));
    let host = NodeRef::<leptos::html::Div>::new();

    on_cleanup(move || {
        core.try_update_value(|c| {
            if let Some(abort) = c.abort.take() {
                abort.abort();
            }
            if let Some((observer, _)) = c.resize.take() {
                observer.disconnect();
            }
            // The listener goes with the viewer: nothing may call it after.
            if let (Some(listener), Some(controls), Some(scroller)) = (&c.listener, &c.controls, &c.scroller) {
                let function = listener.as_ref().unchecked_ref();
                for kind in LISTENED {
                    let _ = controls.root.remove_event_listener_with_callback(kind, function);
                }
                let _ = scroller.remove_event_listener_with_callback("scroll", function);
            }
        });
    });

    // The first run draws the viewer and loads the first screen: the
    // selected lines when the address names some, else the end of the log;
    // then, while the attempt runs, it follows it. Later runs come from a
    // selection arriving through the address (a link opened, back and
    // forward), which scrolls to it; one made by clicking is already on
    // screen.
    Effect::new(move |_| {
        let wanted = selection_in_address.get();
        let Some(host) = host.get() else { return };
        if core.with_value(|c| c.controls.is_none()) {
            let on_event = {
                let navigate_replace = navigate_replace.clone();
                Closure::<dyn FnMut(web_sys::Event)>::new(move |ev| on_event(core, &navigate_replace, ev))
            };
            start(core, &host, on_event, sign_in_again.clone());
            return;
        }
        let moved = core.try_update_value(|c| {
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
            refresh(core);
        }
    });

    view! { <div class="log-viewer" node_ref=host></div> }
}

/// Draws the viewer into `root`, listens to it, and loads its first screen.
fn start(
    core: Stored,
    root: &Element,
    on_event: Closure<dyn FnMut(web_sys::Event)>,
    sign_in_again: impl Fn() + 'static,
) {
    let (controls, [scroller, window, rows, spacer], position) = Controls::build(root);
    for kind in LISTENED {
        let _ = root.add_event_listener_with_callback(kind, on_event.as_ref().unchecked_ref());
    }
    // A scroll does not bubble up to the viewer.
    let _ = scroller.add_event_listener_with_callback("scroll", on_event.as_ref().unchecked_ref());
    let on_resize = Closure::<dyn FnMut()>::new(move || {
        let placed = core.try_update_value(|c| {
            if c.geometry().viewport > 0.0 {
                if let Some(line) = c.first_place.take() {
                    c.place_first_screen(line);
                }
            }
        });
        if placed.is_some() {
            refresh(core);
        }
    });
    let observer = web_sys::ResizeObserver::new(on_resize.as_ref().unchecked_ref()).ok();
    if let Some(observer) = &observer {
        observer.observe(&scroller);
    }
    core.update_value(|c| {
        c.resize = observer.map(|o| (o, on_resize));
        c.scroller = Some(scroller);
        c.window = Some(window);
        c.rows = Some(rows);
        c.spacer = Some(spacer);
        c.position = Some(position);
        c.controls = Some(controls);
        c.listener = Some(on_event);
        c.show_controls();
    });
    leptos::task::spawn_local(async move {
        let Some((job, replica, selection, signal)) = core
            .try_with_value(|c| (c.job.clone(), c.replica.clone(), c.selection, c.abort.as_ref().map(|a| a.signal())))
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
                core.try_update_value(|c| {
                    c.absorb(range);
                    c.state = if ended { LogState::Ended } else { LogState::Live };
                })
                .map(|_| None)
            }
            Err(ApiFailure::Unauthorized) => return sign_in_again(),
            Err(ApiFailure::NotFound(message)) => Some(Some(message)),
            Err(failure) => Some(Some(failure.to_string())),
        };
        match failed {
            None => return,
            Some(Some(why)) => {
                core.try_update_value(|c| c.set_state(LogState::Failed(why)));
                return;
            }
            Some(None) => {}
        }
        // Size the spacer first, so the scroll position can be set.
        refresh(core);
        core.update_value(|c| {
            c.place_first_screen(selection.map(|(from, _)| from));
            c.follow = selection.is_none() && !c.ended;
        });
        refresh(core);
        follow_log(core, signal).await;
    });
}

/// Everything the viewer's controls and rows do, from one listener.
fn on_event(core: Stored, navigate_replace: &impl Fn(&str), ev: web_sys::Event) {
    let kind = ev.type_();
    let id = ev.target().and_then(|t| t.dyn_into::<Element>().ok()).map(|t| t.id()).unwrap_or_default();
    match (kind.as_str(), id.as_str()) {
        ("scroll", _) => {
            core.update_value(|c| {
                let at_bottom = c.at_bottom() && !c.ended;
                c.follow = at_bottom;
            });
            refresh(core);
        }
        ("change", "log-follow") => {
            core.update_value(|c| {
                c.follow = c.controls.as_ref().is_some_and(|controls| controls.follow.checked());
                if c.follow {
                    c.scroll_to_end();
                }
            });
            refresh(core);
        }
        ("change", "log-timestamps" | "log-wrap") => {
            core.update_value(|c| {
                if let Some(controls) = &c.controls {
                    (c.timestamps, c.wrap) = (controls.timestamps.checked(), controls.wrap.checked());
                }
            });
            refresh(core);
        }
        // A new search text, pattern mode or case rule clears the old
        // matches.
        ("input" | "change", "log-search-text" | "log-search-regex" | "log-search-case") => {
            let changed = core.try_update_value(|c| {
                let now = c.controls.as_ref().map(Controls::search);
                if c.searched.is_none() || c.searched == now {
                    return false;
                }
                c.searched = None;
                c.search_status.clear();
                c.matches = Matches::default();
                true
            });
            if changed == Some(true) {
                refresh(core);
            }
        }
        ("keydown", "log-search-text") => {
            let Some(key) = ev.dyn_ref::<web_sys::KeyboardEvent>() else { return };
            if key.key() == "Enter" {
                ev.prevent_default();
                if key.shift_key() && core.with_value(|c| c.searched.is_some()) {
                    step_match(core, -1);
                } else {
                    run_search(core);
                }
            }
        }
        ("click", "log-search-go") => run_search(core),
        ("click", "log-search-prev") => step_match(core, -1),
        ("click", "log-search-next") => step_match(core, 1),
        ("click", "log-download") => {
            let Some((job, replica, stamps)) =
                core.try_with_value(|c| (c.job.clone(), c.replica.clone(), c.timestamps))
            else {
                return;
            };
            leptos::task::spawn_local(async move {
                if let Err(failure) = api::download_log(&job, &replica, stamps).await {
                    core.try_update_value(|c| {
                        c.search_status = format!("Download failed: {failure}");
                        c.show_controls();
                    });
                }
            });
        }
        ("click", "log-copy-link") => {
            let Some(window) = web_sys::window() else { return };
            let href = window.location().href().unwrap_or_default();
            let _ = window.navigator().clipboard().write_text(&href);
            core.update_value(|c| {
                c.copied = true;
                c.show_controls();
            });
        }
        // A click on a line number selects that line, a shift-click the
        // range from the line selected before; the address follows.
        ("click", _) => {
            let Some(line) = dom::closest_attribute(&ev, "data-ln").and_then(|n| n.parse::<u64>().ok()) else {
                return;
            };
            ev.prevent_default();
            let shift = ev.dyn_ref::<web_sys::MouseEvent>().is_some_and(|m| m.shift_key());
            let Some((selection, base)) = core.try_update_value(|c| {
                let selection = match (shift, c.selection) {
                    (true, Some((a, b))) => {
                        let anchor = if line < a { b } else { a };
                        (anchor.min(line), anchor.max(line))
                    }
                    _ => (line, line),
                };
                c.selection = Some(selection);
                c.copied = false;
                (selection, c.base_href.clone())
            }) else {
                return;
            };
            refresh(core);
            navigate_replace(&format!("{base}#{}", selection_fragment(selection.0, selection.1)));
        }
        _ => {}
    }
}

/// Runs the search the inputs ask for, or moves to the next match of the
/// same search.
fn run_search(core: Stored) {
    let Some(Some((wanted, again, job, replica))) = core.try_update_value(|c| {
        let wanted = c.controls.as_ref().map(Controls::search)?;
        if wanted.0.is_empty() {
            return None;
        }
        let again = c.searched.as_ref() == Some(&wanted);
        if !again {
            c.searched = Some(wanted.clone());
            c.search_status = "Searching…".into();
            c.show_controls();
        }
        Some((wanted, again, c.job.clone(), c.replica.clone()))
    }) else {
        return;
    };
    if again {
        return step_match(core, 1);
    }
    leptos::task::spawn_local(async move {
        let answer = api::log_search(&job, &replica, &wanted.0, wanted.1, wanted.2).await;
        let current = core.try_update_value(|c| {
            if c.searched.as_ref() != Some(&wanted) {
                return None;
            }
            match answer {
                Ok(found) => {
                    let current = first_match_from(&found.matches, c.visible().0);
                    c.matches = Matches { lines: found.matches, current };
                    c.search_status = if current.is_some() { String::new() } else { "No matching line".into() };
                    Some((current.is_some(), found.truncated))
                }
                Err(failure) => {
                    c.searched = None;
                    c.search_status = failure.to_string();
                    c.show_controls();
                    None
                }
            }
        });
        let Some(Some((found, truncated))) = current else { return };
        if found {
            step_match(core, 0);
        } else {
            refresh(core);
        }
        if truncated {
            core.update_value(|c| {
                c.search_status.push_str(" (only the first matches are listed)");
                c.show_controls();
            });
        }
    });
}

/// Moves to the next (`step` 1), previous (-1) or current (0) match and
/// scrolls it into view.
fn step_match(core: Stored, step: i64) {
    let found = core.try_update_value(|c| {
        let count = c.matches.lines.len() as i64;
        if count == 0 {
            return false;
        }
        let current = c.matches.current.map(|i| i as i64).unwrap_or(0);
        let next = (current + step).rem_euclid(count) as usize;
        c.matches.current = Some(next);
        let line = c.matches.lines[next];
        c.scroll_to_line(line, JUMP_PLACE);
        c.follow = false;
        c.search_status = format!("{} of {} · line {}", grouped(next as u64 + 1), grouped(count as u64), grouped(line));
        true
    });
    if found == Some(true) {
        refresh(core);
    }
}

/// Follows a running attempt: each request waits for lines after the last
/// one known and answers with them and the new total. While the user reads
/// elsewhere in the log only the total is asked for, so a fast-growing log
/// does not stream lines nobody looks at.
async fn follow_log(core: Stored, signal: Option<web_sys::AbortSignal>) {
    loop {
        let Some((job, replica, known, ended, following)) =
            core.try_with_value(|c| (c.job.clone(), c.replica.clone(), c.total, c.ended, c.follow))
        else {
            return;
        };
        if ended {
            core.update_value(|c| {
                c.follow = false;
                c.set_state(LogState::Ended);
            });
            return;
        }
        let to = if following { known + CHUNK } else { known + 1 };
        let answer = api::log_range_waiting(&job, &replica, known + 1, to, FOLLOW_WAIT_SECONDS, signal.as_ref()).await;
        if signal.as_ref().is_some_and(|s| s.aborted()) {
            return;
        }
        match answer {
            Ok(range) => {
                let alive = core.try_update_value(|c| {
                    c.absorb(range);
                    if c.follow {
                        c.draw();
                        c.scroll_to_end();
                    }
                });
                if alive.is_none() {
                    return;
                }
                refresh(core);
            }
            Err(ApiFailure::Unauthorized) => {
                let why = "Your session has ended; sign in again to follow the log.";
                core.try_update_value(|c| c.set_state(LogState::Failed(why.into())));
                return;
            }
            Err(failure) => {
                core.try_update_value(|c| c.set_state(LogState::Failed(format!("{failure}; trying again…"))));
                sleep(2000).await;
                if core.try_update_value(|c| c.set_state(LogState::Live)).is_none() {
                    return;
                }
            }
        }
    }
}

/// Draws the rows on screen and the controls, then fetches whatever the
/// rows lack; each answer draws again. Fetches are few at a time, so
/// dragging the scroll bar across a long log asks only for where it stops.
fn refresh(core: Stored) {
    let Some(wanted) = core.try_update_value(|c| {
        c.show_controls();
        c.draw()
    }) else {
        return;
    };
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
                Ok(_) => refresh(core),
                Err(failure) => {
                    core.try_update_value(|c| c.set_state(LogState::Failed(failure.to_string())));
                }
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

    /// The server cuts a range at its byte bound: the viewer then asks for
    /// the lines after the last one it got, not for the same range again.
    #[wasm_bindgen_test]
    fn an_answer_cut_short_is_followed_by_one_for_the_lines_after_it() {
        let mut core = Core::new("job".into(), "job-0-0".into(), None, "/jobs/job/logs".into());
        assert_eq!(core.missing(1, 40), vec![(1, CHUNK)]);
        let line = |n: u64| LogLine { line: n, time: 0, stderr: false, text: "x".repeat(65_536) };
        core.absorb(LogRange { total_lines: 2 * CHUNK, ended: true, lines: (1..=32).map(line).collect() });
        assert_eq!(core.missing(1, 40), vec![(33, CHUNK)]);
        assert_eq!(core.missing(1, CHUNK + 1), vec![(33, CHUNK), (CHUNK + 1, 2 * CHUNK)]);
    }

    #[wasm_bindgen_test]
    fn the_controls_and_the_status_line_say_what_the_log_is_doing() {
        use LogState::*;
        let cases = [
            (Loading, 0, false, "Loading the log…", false),
            (Live, 0, false, "No output yet; new lines appear as they are written.", true),
            (Live, 12, true, "Following: new lines appear as they are written.", true),
            (Live, 12, false, "The attempt is running. Scroll to the end, or tick Follow, to follow new lines.", true),
            (Ended, 0, false, "This attempt wrote no output.", false),
            (Ended, 12, false, "The attempt has ended; this is its whole log.", false),
            (Failed("No such replica".into()), 0, false, "No such replica", false),
        ];
        for (state, total, follow, says, can_follow) in cases {
            let root = dom::element("div");
            let mut core = Core::new("job".into(), "job-0-0".into(), None, "/jobs/job/logs".into());
            core.controls = Some(Controls::build(&root).0);
            (core.state, core.total, core.follow) = (state.clone(), total, follow);
            core.show_controls();
            let text = |selector: &str| root.query_selector(selector).unwrap().unwrap().text_content().unwrap();
            assert_eq!(text(".log-status"), format!("{says} "), "{state:?}");
            let controls = core.controls.as_ref().unwrap();
            assert_eq!((controls.follow.checked(), !controls.follow.disabled()), (follow, can_follow), "{state:?}");
        }
    }

    #[wasm_bindgen_test]
    fn the_copy_link_and_the_match_steps_show_when_there_is_something_to_do() {
        let root = dom::element("div");
        let mut core = Core::new("job".into(), "job-0-0".into(), None, "/jobs/job/logs".into());
        core.controls = Some(Controls::build(&root).0);
        core.show_controls();
        let controls = core.controls.as_ref().unwrap();
        assert!(controls.copy_link.has_attribute("hidden"));
        assert!(controls.previous.has_attribute("disabled") && controls.next.has_attribute("disabled"));

        core.selection = Some((4, 9));
        core.matches = Matches { lines: vec![3, 7], current: Some(0) };
        core.search_status = "1 of 2 · line 3".into();
        core.show_controls();
        let controls = core.controls.as_ref().unwrap();
        assert!(!controls.copy_link.has_attribute("hidden"));
        assert_eq!(controls.copy_link.text_content().unwrap(), "Copy link to selected lines");
        assert!(!controls.previous.has_attribute("disabled") && !controls.next.has_attribute("disabled"));
        assert_eq!(controls.search_status.text_content().unwrap(), "1 of 2 · line 3");
        core.copied = true;
        core.show_controls();
        assert_eq!(core.controls.as_ref().unwrap().copy_link.text_content().unwrap(), "Link copied");

        // Nothing changed, nothing is written (a scroll asks at every frame).
        let status = core.controls.as_ref().unwrap().search_status.clone();
        status.set_text_content(Some("left alone"));
        core.show_controls();
        assert_eq!(status.text_content().unwrap(), "left alone");
        core.search_status = "2 of 2 · line 7".into();
        core.show_controls();
        assert_eq!(status.text_content().unwrap(), "2 of 2 · line 7");
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
