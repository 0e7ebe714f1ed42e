//! The "All ranks" tab: every replica's log on one timeline
//! (`GET /jobs/{id}/merged-log`), each line marked with its replica's label
//! and colour; filtered by replica and by text (on the server), following a
//! running job, with a permalink for every line (`#<replica>:L<n>`) and a
//! download of the merged text.
//!
//! The tab holds a window of at most `MAX_LINES` lines and asks for the
//! page before or after it when the user scrolls near either end, so the
//! ranks of a job with millions of lines each open on their newest page and
//! scroll without loading everything. The replicas and the text are in the
//! address (`?replicas=a,b&q=…`), so a filtered view is a link. A search
//! over every rank steps from match to match (`search.rs`). Drawn
//! straight into the DOM (`components/dom.rs`), its state in one
//! `dom::Part`.

mod search;

use std::collections::VecDeque;
use std::rc::Rc;

use jobdeck_api::{MergedLine, MergedLog};
use leptos::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlElement, HtmlInputElement};

use super::{ansi, use_job};
use crate::api::{self, ApiFailure};
use crate::components::api_error::use_sign_in_again;
use crate::components::dom::{self, Part};
use crate::components::live::sleep;
use crate::components::time::format_time_millis;
use crate::router::{use_navigate_replace, use_url};
use crate::routes::{self, encode_component};

/// Lines a request asks for.
const PAGE: usize = 300;
/// The most lines the tab keeps; the farthest from where the user reads go.
const MAX_LINES: usize = 3_000;
/// How near an end of the scroll box the next page is asked for.
const NEAR_END_PX: i32 = 400;
/// How often the tab looks whether it should follow (no request is made
/// while it should not), and how long it waits after a failed follow.
const FOLLOW_MS: i32 = 1_000;
/// How long the server holds a follow's request for a new line.
const FOLLOW_WAIT_SECONDS: u32 = 25;
/// Replica colours, reused in turn: the themed terminal colours
/// (`.ansi-fg*` in main.css), so the tab brings no style sheet of its own;
/// red (1) is left to errors.
const COLOURS: [u8; 8] = [4, 5, 6, 2, 3, 12, 13, 14];

/// Where a request reads.
#[derive(Clone, Debug, PartialEq)]
enum At {
    Newest,
    Before(String),
    After(String),
    Around(String, u64),
}

impl At {
    fn query(&self) -> String {
        match self {
            At::Newest => String::new(),
            At::Before(place) => format!("&before={}", encode_component(place)),
            At::After(place) => format!("&after={}", encode_component(place)),
            At::Around(replica, line) => format!("&around={}", encode_component(&format!("{replica}:{line}"))),
        }
    }
}

/// A line's place, as `before` and `after` take it.
fn place(line: &MergedLine) -> String {
    format!("{}:{}", line.time, line.replica)
}

/// The state of the tab.
struct Core {
    job: String,
    /// Every replica merged so far, in the server's order: its position
    /// gives its colour, so a replica keeps its colour through filtering.
    replicas: Vec<String>,
    /// The replicas chosen; empty for all (the latest attempt of each index).
    chosen: Vec<String>,
    text: String,
    lines: VecDeque<MergedLine>,
    more_before: bool,
    more_after: bool,
    running: bool,
    approximate: bool,
    /// A request is under way: one at a time.
    busy: bool,
    /// Counts new filters: an answer asked for under an older one is dropped.
    generation: u32,
    follow: bool,
    selected: Option<(String, u64)>,
    status: String,
    /// The search made, and what it found.
    search: Option<search::Found>,
    search_status: String,
    parts: Option<Parts>,
    /// Puts an address in the location bar without a new history entry.
    replace_address: Rc<dyn Fn(&str)>,
    sign_in_again: Rc<dyn Fn()>,
}

/// The tab's elements, made once.
struct Parts {
    picker: Element,
    filter: HtmlInputElement,
    follow: HtmlInputElement,
    status: Element,
    search: search::SearchRow,
    scroll: HtmlElement,
    body: Element,
}

type Ranks = Part<Core>;

impl Core {
    /// The tab of job `job`, before its first page: every replica, no
    /// text, following.
    fn new(job: String, replace_address: Rc<dyn Fn(&str)>, sign_in_again: Rc<dyn Fn()>) -> Core {
        Core {
            job,
            replicas: Vec::new(),
            chosen: Vec::new(),
            text: String::new(),
            lines: VecDeque::new(),
            more_before: false,
            more_after: false,
            running: false,
            approximate: false,
            busy: false,
            generation: 0,
            follow: true,
            selected: None,
            status: String::new(),
            search: None,
            search_status: String::new(),
            parts: None,
            replace_address,
            sign_in_again,
        }
    }

    /// A replica's short label: its id without the job's (`3-0`).
    fn label<'a>(&self, replica: &'a str) -> &'a str {
        replica.strip_prefix(self.job.as_str()).and_then(|r| r.strip_prefix('-')).unwrap_or(replica)
    }

    /// A replica's colour class.
    fn colour(&self, replica: &str) -> String {
        let at = self.replicas.iter().position(|r| r == replica).unwrap_or(0);
        format!("ansi-fg{}", COLOURS[at % COLOURS.len()])
    }

    /// The address of what is on screen: the filters, and the selected line.
    fn address(&self) -> String {
        let mut query = Vec::new();
        if !self.chosen.is_empty() {
            query.push(format!("replicas={}", encode_component(&self.chosen.join(","))));
        }
        if !self.text.is_empty() {
            query.push(format!("q={}", encode_component(&self.text)));
        }
        let mut address = routes::job_tab(&self.job, "ranks");
        if !query.is_empty() {
            address = format!("{address}?{}", query.join("&"));
        }
        if let Some((replica, line)) = &self.selected {
            address = format!("{address}#{replica}:L{line}");
        }
        address
    }

    /// The request for a page at `at` under the current filters.
    fn request(&self, at: &At) -> String {
        let mut query = format!("limit={PAGE}{}", at.query());
        if !self.chosen.is_empty() {
            query.push_str(&format!("&replicas={}", encode_component(&self.chosen.join(","))));
        }
        if !self.text.is_empty() {
            query.push_str(&format!("&q={}", encode_component(&self.text)));
        }
        query
    }

    /// Takes a page: a new window for `Newest` and `Around`, else added at
    /// its end; the window is then cut to `MAX_LINES` from the other end.
    fn absorb(&mut self, at: &At, page: MergedLog) {
        for replica in &page.replicas {
            if !self.replicas.contains(replica) {
                self.replicas.push(replica.clone());
            }
        }
        self.running = page.running;
        self.approximate = page.approximate_order;
        match at {
            At::Newest | At::Around(..) => {
                self.lines = page.lines.into();
                self.more_before = page.more_before;
                self.more_after = page.more_after;
            }
            At::Before(_) => {
                for line in page.lines.into_iter().rev() {
                    self.lines.push_front(line);
                }
                self.more_before = page.more_before;
                while self.lines.len() > MAX_LINES {
                    self.lines.pop_back();
                    self.more_after = true;
                }
            }
            At::After(_) => {
                self.lines.extend(page.lines);
                self.more_after = page.more_after;
                while self.lines.len() > MAX_LINES {
                    self.lines.pop_front();
                    self.more_before = true;
                }
            }
        }
    }

    /// What the status line says.
    fn summary(&self) -> String {
        let ranks = if self.chosen.is_empty() { self.replicas.len() } else { self.chosen.len() };
        let mut said = format!("{} lines of {ranks} replicas, in the order they were written", self.lines.len());
        if self.lines.is_empty() && !self.busy {
            said = if self.text.is_empty() { "No lines yet.".into() } else { "No line holds that text.".into() };
        }
        if self.approximate {
            said.push_str(". Slurm's lines carry the time they were copied, so their order across replicas is right only to the copy interval");
        }
        if self.running && self.follow {
            said.push_str(". Following new lines");
        }
        said
    }
}

/// The tab.
#[component]
pub fn RanksTab() -> impl IntoView {
    let context = use_job();
    let url = use_url().get_untracked();
    let sign_in_again = use_sign_in_again();
    let chosen: Vec<String> = url
        .param("replicas")
        .map(|r| r.split(',').filter(|r| !r.is_empty()).map(String::from).collect())
        .unwrap_or_default();
    let selected = parse_permalink(&url.hash);
    let mut core = Core::new(context.id.get_untracked(), Rc::new(use_navigate_replace()), Rc::new(sign_in_again));
    core.chosen = chosen;
    core.text = url.param("q").unwrap_or_default();
    // A permalink is read where it points, not followed away from.
    core.follow = selected.is_none();
    core.selected = selected.clone();
    let ranks = Part::new(core);
    ranks.end_with_owner();
    let first = match selected {
        Some((replica, line)) => At::Around(replica, line),
        None => At::Newest,
    };
    // Drawn when the host is made, by a directive, as the form is.
    // The log viewer's classes, wrapping long lines (`wrap`): the tab brings
    // no style of its own.
    view! { <div class="ranks log-viewer wrap" use:mount_ranks=(ranks, first)></div> }
}

/// Builds the tab in its host and asks for the first page (`RanksTab`'s
/// directive).
fn mount_ranks(host: Element, (ranks, first): (Ranks, At)) {
    if ranks.read(|c| c.parts.is_some()) != Some(false) {
        return;
    }
    let listener = ranks.listener(on_event);
    ranks.change(|c| c.parts = Some(Parts::build(&host, listener.as_ref().unchecked_ref())));
    // The listener lives as long as the elements it is on.
    listener.forget();
    leptos::task::spawn_local(load(ranks.clone(), first));
    leptos::task::spawn_local(follow(ranks));
}

/// `#<replica>:L<n>`, a line's permalink.
fn parse_permalink(hash: &str) -> Option<(String, u64)> {
    let (replica, line) = hash.rsplit_once(":L")?;
    Some((replica.to_string(), line.parse().ok().filter(|n| *n > 0)?))
}

impl Parts {
    fn build(host: &Element, listener: &js_sys::Function) -> Parts {
        dom::child(host, "h2", "", "All ranks");
        let row = dom::child(host, "div", "log-controls", "");
        let picker = dom::child(&row, "div", "log-controls", "");
        dom::set(&picker, "role", "group");
        dom::set(&picker, "aria-label", "Replicas shown");
        let filter: HtmlInputElement = dom::child(&row, "input", "ranks-filter", "").unchecked_into();
        dom::set(&filter, "type", "search");
        dom::set(&filter, "placeholder", "Lines holding…");
        dom::set(&filter, "aria-label", "Show only lines holding this text");
        let label = dom::child(&row, "label", "check", "");
        let follow: HtmlInputElement = dom::child(&label, "input", "ranks-follow", "").unchecked_into();
        dom::set(&follow, "type", "checkbox");
        let _ = label.append_with_str_1(" Follow");
        let download = dom::child(&row, "button", "button ranks-download", "Download");
        dom::set(&download, "type", "button");
        let search = search::SearchRow::build(host);
        let status = dom::child(host, "p", "log-status", "");
        dom::set(&status, "role", "status");
        let scroll: HtmlElement = dom::child(host, "div", "log-scroller", "").unchecked_into();
        dom::set(&scroll, "tabindex", "0");
        let body = dom::child(&scroll, "div", "", "");
        for kind in ["click", "change", "input", "keydown"] {
            let _ = host.add_event_listener_with_callback(kind, listener);
        }
        // A scroll does not bubble: the box gets the listener itself.
        let _ = scroll.add_event_listener_with_callback("scroll", listener);
        Parts { picker, filter, follow, status, search, scroll, body }
    }
}

/// Draws everything but the lines (which `draw_lines` adds and removes at
/// the window's ends).
fn draw_controls(c: &Core) {
    let Some(p) = &c.parts else { return };
    if p.picker.child_element_count() as usize != c.replicas.len() {
        dom::clear(&p.picker);
        for replica in &c.replicas {
            let label = dom::child(&p.picker, "label", &format!("check {}", c.colour(replica)), "");
            let check: HtmlInputElement = dom::child(&label, "input", "", "").unchecked_into();
            dom::set(&check, "type", "checkbox");
            dom::set(&check, "data-replica", replica);
            let _ = label.append_with_str_1(&format!(" {}", c.label(replica)));
        }
    }
    for check in checks(&p.picker) {
        let replica = check.get_attribute("data-replica").unwrap_or_default();
        check.set_checked(c.chosen.is_empty() || c.chosen.contains(&replica));
    }
    if p.filter.value() != c.text {
        p.filter.set_value(&c.text);
    }
    p.follow.set_checked(c.follow && c.running);
    p.follow.set_disabled(!c.running);
    let status = if c.status.is_empty() { c.summary() } else { c.status.clone() };
    p.status.set_text_content(Some(&status));
    p.search.show(&c.search_status);
    // What a reader (and a test) can wait on: a request under way, and on
    // which sides lines lie past the window.
    dom::set(&p.scroll, "aria-busy", if c.busy { "true" } else { "false" });
    dom::set(&p.scroll, "data-more-before", if c.more_before { "true" } else { "false" });
    dom::set(&p.scroll, "data-more-after", if c.more_after { "true" } else { "false" });
}

/// The picker's checkboxes, one in each of its labels.
fn checks(picker: &Element) -> impl Iterator<Item = HtmlInputElement> {
    let labels = picker.children();
    (0..labels.length())
        .filter_map(move |at| labels.item(at)?.first_element_child())
        .map(|check| check.unchecked_into::<HtmlInputElement>())
}

impl Core {
    /// A line's row's classes: standard error, the selected line, a match.
    fn row_class(&self, line: &MergedLine) -> String {
        let mut class = "log-line".to_string();
        if line.stderr {
            class.push_str(" stderr");
        }
        if self.selected.as_ref().is_some_and(|(r, n)| *r == line.replica && *n == line.line) {
            class.push_str(" selected");
        }
        class.push_str(self.match_classes(line));
        class
    }
}

/// One line's row: its replica's label (the permalink), time and text.
fn line_row(c: &Core, line: &MergedLine) -> Element {
    let row = dom::element("div");
    dom::set(&row, "class", &c.row_class(line));
    // The colour is on the mark's text: the log viewer's `.ln` greys the
    // link itself.
    let tag = dom::child(&row, "a", "ln", "");
    dom::child(&tag, "span", &c.colour(&line.replica), &format!("{}:{}", c.label(&line.replica), line.line));
    dom::set(&tag, "href", &format!("#{}:L{}", line.replica, line.line));
    dom::set(&tag, "data-line", &format!("{}:L{}", line.replica, line.line));
    dom::set(&tag, "title", &format!("Line {} of replica {}: a link to this line", line.line, line.replica));
    let millis = line.time.get(..line.time.len().saturating_sub(6)).and_then(|ms| ms.parse().ok()).unwrap_or(0);
    dom::child(&row, "span", "ts", &format_time_millis(millis));
    ansi::render_into(&dom::child(&row, "span", "lt", ""), &line.text);
    row
}

/// Draws the window again whole (a new window), or adds what `at` brought
/// at its end and removes what the window dropped at the other.
fn draw_lines(c: &Core, at: &At, added: usize) {
    let Some(p) = &c.parts else { return };
    match at {
        At::Newest | At::Around(..) => {
            dom::clear(&p.body);
            for line in &c.lines {
                let _ = p.body.append_child(&line_row(c, line));
            }
            match at {
                At::Around(..) => {
                    if let Ok(Some(row)) = p.body.query_selector(".selected") {
                        let row: HtmlElement = row.unchecked_into();
                        p.scroll.set_scroll_top(row.offset_top() - p.scroll.client_height() / 3);
                    }
                }
                _ => p.scroll.set_scroll_top(p.scroll.scroll_height()),
            }
        }
        At::Before(_) => {
            // Rows added above move what the user reads down by their
            // height (measured before the window's far end is cut, which
            // does not move it), so the view is put back there.
            let height = p.scroll.scroll_height();
            let first = p.body.first_child();
            for line in c.lines.iter().take(added) {
                let _ = p.body.insert_before(&line_row(c, line), first.as_ref());
            }
            let added_px = p.scroll.scroll_height() - height;
            while p.body.child_element_count() as usize > c.lines.len() {
                if let Some(last) = p.body.last_element_child() {
                    last.remove();
                }
            }
            p.scroll.set_scroll_top(p.scroll.scroll_top() + added_px);
        }
        At::After(_) => {
            for line in c.lines.iter().skip(c.lines.len() - added.min(c.lines.len())) {
                let _ = p.body.append_child(&line_row(c, line));
            }
            // Rows cut above move what the user reads up by their height.
            let height = p.scroll.scroll_height();
            while p.body.child_element_count() as usize > c.lines.len() {
                if let Some(first) = p.body.first_element_child() {
                    first.remove();
                }
            }
            p.scroll.set_scroll_top(p.scroll.scroll_top() - (height - p.scroll.scroll_height()));
            if c.follow {
                p.scroll.set_scroll_top(p.scroll.scroll_height());
            }
        }
    }
}

/// Asks for the page at `at` and draws it, unless a request is under way
/// (a new window, `Newest` or `Around`, waits for none: it starts a new
/// generation, and the older answer is dropped).
async fn load(ranks: Ranks, at: At) {
    let fresh = matches!(at, At::Newest | At::Around(..));
    let Some(Some((job, query, generation))) = ranks.change(|c| {
        if c.busy && !fresh {
            return None;
        }
        if fresh {
            c.generation += 1;
        }
        c.busy = true;
        draw_controls(c);
        Some((c.job.clone(), c.request(&at), c.generation))
    }) else {
        return;
    };
    let answer = api::merged_log(&job, &query).await;
    ranks.change(|c| {
        if c.generation != generation {
            return;
        }
        c.busy = false;
        match answer {
            Ok(page) => {
                let added = page.lines.len();
                c.status.clear();
                c.absorb(&at, page);
                draw_lines(c, &at, added);
            }
            Err(ApiFailure::Unauthorized) => (c.sign_in_again)(),
            Err(ApiFailure::NotFound(_)) if matches!(at, At::Around(..)) => {
                c.status = "That line is not in this job's logs; showing the newest lines.".into();
                c.selected = None;
                leptos::task::spawn_local(load(ranks.clone(), At::Newest));
            }
            Err(failure) => c.status = format!("The lines could not be read: {failure}"),
        }
        draw_controls(c);
    });
}

/// Follows a running job while the user does, for as long as the tab is
/// shown: a request for the lines after the last one that the server holds
/// until one is written (`wait`, a long poll, as the log viewer's follow),
/// then the next. It is not the one request at a time that scrolling makes
/// (`busy`), so the user can scroll up meanwhile; its answer is taken only
/// if the window still ends at the line it asked after. While the user
/// does not follow, it looks again every `FOLLOW_MS`, asking nothing.
async fn follow(ranks: Ranks) {
    loop {
        let Some(next) = ranks.read(|c| {
            if !c.follow || !c.running || c.busy || c.more_after {
                return None;
            }
            // Nothing written yet: the newest page, asked again each time.
            let Some(last) = c.lines.back().map(place) else { return Some(None) };
            let query = format!("{}&wait={FOLLOW_WAIT_SECONDS}", c.request(&At::After(last.clone())));
            Some(Some((c.job.clone(), query, c.generation, last)))
        }) else {
            return;
        };
        let (job, query, generation, last) = match next {
            Some(Some(after)) => after,
            Some(None) => {
                load(ranks.clone(), At::Newest).await;
                sleep(FOLLOW_MS).await;
                continue;
            }
            None => {
                sleep(FOLLOW_MS).await;
                continue;
            }
        };
        let answer = api::merged_log(&job, &query).await;
        let taken = ranks.change(|c| {
            let still = c.generation == generation && !c.busy && c.lines.back().map(place) == Some(last.clone());
            match answer {
                Ok(page) if still => {
                    let at = At::After(last);
                    let added = page.lines.len();
                    c.absorb(&at, page);
                    draw_lines(c, &at, added);
                    draw_controls(c);
                    true
                }
                Ok(_) => true,
                Err(ApiFailure::Unauthorized) => {
                    (c.sign_in_again)();
                    false
                }
                Err(_) => false,
            }
        });
        match taken {
            None => return,
            // A failed request is asked again a second later, not at once.
            Some(false) => sleep(FOLLOW_MS).await,
            Some(true) => {}
        }
    }
}

/// The tab's one listener: scrolling near an end, the filters, following,
/// a line's permalink, the search, the download.
fn on_event(ranks: &Ranks, event: web_sys::Event) {
    let target: Option<Element> = event.target().and_then(|t| t.dyn_into().ok());
    let class = target.as_ref().map(|t| t.class_name()).unwrap_or_default();
    // A line's mark (its text is a span inside the link).
    let permalink = dom::closest_attribute(&event, "data-line");
    match event.type_().as_str() {
        "scroll" => {
            let next = ranks.change(|c| {
                let p = c.parts.as_ref()?;
                let below = p.scroll.scroll_height() - p.scroll.scroll_top() - p.scroll.client_height();
                // Reading elsewhere than the end stops following.
                c.follow = below < 8 && c.running;
                draw_controls(c);
                if c.busy {
                    return None;
                }
                if p.scroll.scroll_top() < NEAR_END_PX && c.more_before {
                    return c.lines.front().map(|first| At::Before(place(first)));
                }
                (below < NEAR_END_PX && c.more_after).then(|| c.lines.back().map(|last| At::After(place(last))))?
            });
            if let Some(Some(at)) = next {
                leptos::task::spawn_local(load(ranks.clone(), at));
            }
        }
        "keydown" if class == "ranks-search-text" => {
            let Some(key) = event.dyn_ref::<web_sys::KeyboardEvent>() else { return };
            if key.key() == "Enter" {
                event.prevent_default();
                if key.shift_key() && ranks.read(|c| c.search.is_some()) == Some(true) {
                    search::step(ranks, -1);
                } else {
                    search::run_search(ranks);
                }
            }
        }
        "input" | "change" if class.starts_with("ranks-search") => search::inputs_changed(ranks),
        "click" if class.contains("ranks-search-go") => search::run_search(ranks),
        "click" if class.contains("ranks-search-prev") => search::step(ranks, -1),
        "click" if class.contains("ranks-search-next") => search::step(ranks, 1),
        "change" if class == "ranks-follow" => {
            ranks.change(|c| {
                c.follow = c.parts.as_ref().is_some_and(|p| p.follow.checked());
                if c.follow {
                    if let Some(p) = &c.parts {
                        p.scroll.set_scroll_top(p.scroll.scroll_height());
                    }
                }
                draw_controls(c);
            });
        }
        "change" => {
            // A replica ticked or unticked, or the text changed: a new
            // window of the newest lines under the new filters, and the
            // search made again under them.
            let searching = ranks.change(|c| {
                let searching = c.search.is_some();
                c.clear_search();
                let Some(p) = &c.parts else { return false };
                c.text = p.filter.value().trim().to_string();
                let chosen: Vec<String> =
                    checks(&p.picker).filter(|c| c.checked()).filter_map(|c| c.get_attribute("data-replica")).collect();
                // Every replica ticked is the same as none chosen.
                c.chosen = if chosen.len() == c.replicas.len() { Vec::new() } else { chosen };
                c.selected = None;
                c.follow = true;
                (c.replace_address)(&c.address());
                searching
            });
            leptos::task::spawn_local(load(ranks.clone(), At::Newest));
            if searching == Some(true) {
                search::run_search(ranks);
            }
        }
        "click" if permalink.is_some() => {
            event.prevent_default();
            let Some(line) = permalink else { return };
            ranks.change(|c| {
                c.selected = parse_permalink(&line);
                c.follow = false;
                if let Some(p) = &c.parts {
                    if let Ok(Some(old)) = p.body.query_selector(".selected") {
                        let _ = old.class_list().remove_1("selected");
                    }
                    if let Some(row) = target.and_then(|t| t.closest(".log-line").ok().flatten()) {
                        let _ = row.class_list().add_1("selected");
                    }
                }
                (c.replace_address)(&c.address());
                draw_controls(c);
            });
        }
        "click" if class.contains("ranks-download") => {
            let Some((path, name)) = ranks.read(|c| {
                let mut query = c.request(&At::Newest).replacen(&format!("limit={PAGE}"), "download=true", 1);
                query = query.trim_start_matches('&').to_string();
                (format!("/jobs/{}/merged-log?{query}", encode_component(&c.job)), format!("{}-merged.log", c.job))
            }) else {
                return;
            };
            leptos::task::spawn_local(async move {
                let _ = api::save_download(&path, &name).await;
            });
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(replica: &str, number: u64, time: &str) -> MergedLine {
        MergedLine {
            replica: replica.into(),
            line: number,
            time: time.into(),
            stderr: false,
            text: format!("{replica} {number}"),
        }
    }

    pub(super) fn core() -> Core {
        Core::new("job".into(), Rc::new(|_| {}), Rc::new(|| {}))
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn permalinks_name_a_replica_and_a_line() {
        assert_eq!(parse_permalink("job-3-0:L120"), Some(("job-3-0".into(), 120)));
        assert_eq!(parse_permalink("L120"), None);
        assert_eq!(parse_permalink("job-3-0:L0"), None);
        let mut c = core();
        c.chosen = vec!["job-1-0".into(), "job-3-0".into()];
        c.text = "NCCL WARN".into();
        c.selected = Some(("job-3-0".into(), 120));
        assert_eq!(c.address(), "/jobs/job/ranks?replicas=job-1-0%2Cjob-3-0&q=NCCL%20WARN#job-3-0:L120");
        assert_eq!(
            c.request(&At::Before("17:job-1-0".into())),
            "limit=300&before=17%3Ajob-1-0&replicas=job-1-0%2Cjob-3-0&q=NCCL%20WARN"
        );
        assert_eq!(c.label("job-3-0"), "3-0");
    }

    /// Pages added at either end keep the window in order and within
    /// `MAX_LINES`, and what was cut is known to be there.
    #[wasm_bindgen_test::wasm_bindgen_test]
    fn the_window_grows_at_either_end_and_is_cut_at_the_other() {
        let mut c = core();
        let page = |lines: Vec<MergedLine>, before, after| MergedLog {
            replicas: vec!["job-0-0".into(), "job-1-0".into()],
            lines,
            more_before: before,
            more_after: after,
            running: true,
            approximate_order: false,
        };
        let newest: Vec<MergedLine> =
            (0..MAX_LINES as u64).map(|n| line("job-0-0", n + 1, &format!("{}", 1000 + n))).collect();
        c.absorb(&At::Newest, page(newest, true, false));
        assert_eq!((c.lines.len(), c.more_before, c.more_after, c.running), (MAX_LINES, true, false, true));
        c.absorb(&At::Before("1000:job-0-0".into()), page(vec![line("job-1-0", 7, "999")], true, true));
        assert_eq!(c.lines.front().map(|l| l.line), Some(7));
        assert_eq!((c.lines.len(), c.more_after), (MAX_LINES, true), "the newest line was cut");
        c.more_after = false;
        c.absorb(&At::After("x".into()), page(vec![line("job-1-0", 8, "5000")], true, false));
        assert_eq!((c.lines.back().map(|l| l.line), c.lines.front().map(|l| l.line)), (Some(8), Some(1)));
        assert!(c.more_before, "the oldest line was cut");
        assert_eq!(c.colour("job-1-0"), "ansi-fg5");
    }
}
