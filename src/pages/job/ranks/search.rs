//! The "All ranks" tab's search: the lines of every rank shown that match
//! a text or a pattern, found on the server (`merged-log?search=`), marked
//! in the window and stepped through in the merged order. A match outside
//! the window opens the window around it, so each one is read with every
//! rank's lines of that moment beside it; the current match is the
//! selected line, so the address is its permalink.

use jobdeck_api::{MergedLine, MergedMatch};
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlElement, HtmlInputElement};

use super::{load, At, Core, Ranks};
use crate::api::{self, ApiFailure};
use crate::components::dom;
use crate::routes::encode_component;

/// A search as asked: the text, whether it is a regular expression,
/// whether it ignores case.
pub(super) type Wanted = (String, bool, bool);

/// A search and what it found.
pub(super) struct Found {
    pub(super) wanted: Wanted,
    /// Counts searches: an answer to an older one is dropped.
    asked: u32,
    /// Oldest first, as the server orders them.
    matches: Vec<MergedMatch>,
    current: Option<usize>,
    truncated: bool,
}

/// The search row's inputs.
pub(super) struct SearchRow {
    text: HtmlInputElement,
    regex: HtmlInputElement,
    ignore_case: HtmlInputElement,
    status: Element,
}

impl SearchRow {
    /// Makes the row in `host`, as the log viewer's search row looks.
    pub(super) fn build(host: &Element) -> SearchRow {
        let row = dom::child(host, "div", "log-search", "");
        dom::set(&row, "role", "search");
        dom::set(&dom::child(&row, "label", "", "Search every rank"), "for", "ranks-search-text");
        let text = input(&row, "search", "ranks-search-text");
        dom::set(&text, "id", "ranks-search-text");
        dom::set(&text, "placeholder", "text, or a pattern with Regex");
        let regex = check(&row, "ranks-search-regex", "Regex");
        let ignore_case = check(&row, "ranks-search-case", "Ignore case");
        for (class, text, label) in [
            ("ranks-search-go", "Find", "Find"),
            ("ranks-search-prev", "↑", "Previous match"),
            ("ranks-search-next", "↓", "Next match"),
        ] {
            let button = dom::child(&row, "button", &format!("button {class}"), text);
            dom::set(&button, "type", "button");
            dom::set(&button, "aria-label", label);
        }
        let status = dom::child(&row, "span", "log-search-status", "");
        dom::set(&status, "role", "status");
        SearchRow { text, regex, ignore_case, status }
    }

    /// The search the inputs ask for now.
    fn wanted(&self) -> Wanted {
        (self.text.value(), self.regex.checked(), self.ignore_case.checked())
    }

    pub(super) fn show(&self, status: &str) {
        self.status.set_text_content(Some(status));
    }
}

fn input(row: &Element, kind: &str, class: &str) -> HtmlInputElement {
    let input: HtmlInputElement = dom::child(row, "input", class, "").unchecked_into();
    dom::set(&input, "type", kind);
    input
}

fn check(row: &Element, class: &str, text: &str) -> HtmlInputElement {
    let label = dom::child(row, "label", "check", "");
    let check = input(&label, "checkbox", class);
    let _ = label.append_with_str_1(&format!(" {text}"));
    check
}

/// Orders places as the server does: by time (decimal nanoseconds, so a
/// longer number is later), then by replica.
fn place_key<'a>(time: &'a str, replica: &'a str) -> (usize, &'a str, &'a str) {
    (time.len(), time, replica)
}

/// The match to show first: the first at or after the window's first line,
/// else the first (a search wraps around, as the log viewer's does).
fn first_from(matches: &[MergedMatch], first_line: Option<&MergedLine>) -> usize {
    let Some(first) = first_line else { return 0 };
    let from = place_key(&first.time, &first.replica);
    let at = matches.partition_point(|m| place_key(&m.time, &m.replica) < from);
    if at == matches.len() {
        0
    } else {
        at
    }
}

impl Core {
    /// The classes a line's row carries for the search: a match, and the
    /// current one.
    pub(super) fn match_classes(&self, line: &MergedLine) -> &'static str {
        let Some(found) = &self.search else { return "" };
        let key = place_key(&line.time, &line.replica);
        match found.matches.binary_search_by(|m| place_key(&m.time, &m.replica).cmp(&key)) {
            Ok(at) if found.current == Some(at) => " match current-match",
            Ok(_) => " match",
            Err(_) => "",
        }
    }

    /// The request for the search `wanted` under the current filters.
    fn search_request(&self, wanted: &Wanted) -> String {
        let (text, regex, ignore_case) = wanted;
        let query = format!("search={}&regex={regex}&ignore_case={ignore_case}", encode_component(text));
        // The page's own filters, without its place and size.
        let filters = self.request(&At::Newest);
        let filters = filters.split_once('&').map_or("", |(_, rest)| rest);
        if filters.is_empty() {
            query
        } else {
            format!("{query}&{filters}")
        }
    }

    /// Forgets the search (a filter or the inputs changed).
    pub(super) fn clear_search(&mut self) {
        self.search = None;
        self.search_status.clear();
    }
}

/// Sets every drawn row's classes again: the selected line and the matches.
/// The rows are the window's lines in order.
pub(super) fn mark_rows(c: &Core) {
    let Some(p) = &c.parts else { return };
    let rows = p.body.children();
    for (at, line) in c.lines.iter().enumerate() {
        let Some(row) = rows.item(at as u32) else { break };
        dom::set(&row, "class", &c.row_class(line));
    }
}

/// Finds what the inputs ask for, or steps to the next match when it is
/// the search already made.
pub(super) fn run_search(ranks: &Ranks) {
    enum Next {
        Step,
        Ask(String, String, u32),
    }
    let next = ranks.change(|c| {
        let wanted = c.parts.as_ref()?.search.wanted();
        if wanted.0.is_empty() {
            c.clear_search();
            mark_rows(c);
            super::draw_controls(c);
            return None;
        }
        if c.search.as_ref().is_some_and(|s| s.wanted == wanted) {
            return Some(Next::Step);
        }
        let asked = c.search.as_ref().map_or(0, |s| s.asked.wrapping_add(1));
        let query = c.search_request(&wanted);
        c.search = Some(Found { wanted, asked, matches: Vec::new(), current: None, truncated: false });
        c.search_status = "Searching every rank…".into();
        mark_rows(c);
        super::draw_controls(c);
        Some(Next::Ask(c.job.clone(), query, asked))
    });
    let (job, query, asked) = match next {
        Some(Some(Next::Step)) => return step(ranks, 1),
        Some(Some(Next::Ask(job, query, asked))) => (job, query, asked),
        _ => return,
    };
    let ranks = ranks.clone();
    leptos::task::spawn_local(async move {
        let answer = api::merged_search(&job, &query).await;
        let found = ranks.change(|c| {
            if c.search.as_ref().map(|s| s.asked) != Some(asked) {
                return false;
            }
            let any = match answer {
                Ok(answer) => {
                    let first = first_from(&answer.matches, c.lines.front());
                    let Some(found) = c.search.as_mut() else { return false };
                    found.matches = answer.matches;
                    found.truncated = answer.truncated;
                    let any = !found.matches.is_empty();
                    found.current = any.then_some(first);
                    c.search_status = if any { String::new() } else { "No line matches".into() };
                    any
                }
                Err(ApiFailure::Unauthorized) => {
                    (c.sign_in_again)();
                    false
                }
                Err(failure) => {
                    c.clear_search();
                    c.search_status = failure.to_string();
                    false
                }
            };
            mark_rows(c);
            super::draw_controls(c);
            any
        });
        if found == Some(true) {
            step(&ranks, 0);
        }
    });
}

/// Shows the match `by` places from the current one (wrapping around): in
/// the window when it is there, else in a new window around it.
pub(super) fn step(ranks: &Ranks, by: i64) {
    let around = ranks.change(|c| {
        let found = c.search.as_mut()?;
        if found.matches.is_empty() {
            return None;
        }
        let count = found.matches.len() as i64;
        let at = (found.current.unwrap_or(0) as i64 + by).rem_euclid(count) as usize;
        found.current = Some(at);
        let shown = found.matches[at].clone();
        let more = if found.truncated { " (only the first matches are listed)" } else { "" };
        c.search_status = format!("{} of {count} · {}:L{}{more}", at + 1, c.label(&shown.replica), shown.line);
        c.selected = Some((shown.replica.clone(), shown.line));
        c.follow = false;
        (c.replace_address)(&c.address());
        let row = c.lines.iter().position(|l| l.replica == shown.replica && l.line == shown.line);
        mark_rows(c);
        super::draw_controls(c);
        match (row, &c.parts) {
            (Some(row), Some(p)) => {
                if let Some(row) = p.body.children().item(row as u32) {
                    let row: HtmlElement = row.unchecked_into();
                    p.scroll.set_scroll_top(row.offset_top() - p.scroll.client_height() / 3);
                }
                None
            }
            _ => Some(At::Around(shown.replica, shown.line)),
        }
    });
    if let Some(Some(at)) = around {
        leptos::task::spawn_local(load(ranks.clone(), at));
    }
}

/// A change of the search's inputs: the matches of another search are
/// forgotten until Find is pressed.
pub(super) fn inputs_changed(ranks: &Ranks) {
    ranks.change(|c| {
        let now = c.parts.as_ref().map(|p| p.search.wanted());
        if c.search.is_none() || c.search.as_ref().map(|s| &s.wanted) == now.as_ref() {
            return;
        }
        c.clear_search();
        mark_rows(c);
        super::draw_controls(c);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(replica: &str, time: &str) -> MergedMatch {
        MergedMatch { replica: replica.into(), line: 1, time: time.into() }
    }

    fn line(replica: &str, time: &str) -> MergedLine {
        MergedLine { replica: replica.into(), line: 1, time: time.into(), stderr: false, text: String::new() }
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn a_search_starts_at_the_window_and_wraps_around() {
        let matches = [found("j-1-0", "990"), found("j-0-0", "1000"), found("j-1-0", "1000"), found("j-0-0", "2000")];
        assert_eq!(first_from(&matches, None), 0);
        // A longer time is later, whatever its digits.
        assert_eq!(first_from(&matches, Some(&line("j-0-0", "995"))), 1);
        assert_eq!(first_from(&matches, Some(&line("j-0-0", "1000"))), 1);
        assert_eq!(first_from(&matches, Some(&line("j-0-1", "1000"))), 2, "then by replica");
        assert_eq!(first_from(&matches, Some(&line("j-0-0", "2001"))), 0, "past the last: the first");
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn a_search_asks_under_the_pages_filters() {
        let mut c = super::super::tests::core();
        let wanted: Wanted = ("NCCL & timeout".into(), true, false);
        assert_eq!(c.search_request(&wanted), "search=NCCL%20%26%20timeout&regex=true&ignore_case=false");
        c.chosen = vec!["job-1-0".into()];
        c.text = "rank".into();
        assert_eq!(
            c.search_request(&wanted),
            "search=NCCL%20%26%20timeout&regex=true&ignore_case=false&replicas=job-1-0&q=rank"
        );
        c.search = Some(Found {
            wanted,
            asked: 0,
            matches: vec![found("job-1-0", "1000"), found("job-1-0", "2000")],
            current: Some(1),
            truncated: false,
        });
        assert_eq!(c.match_classes(&line("job-1-0", "1000")), " match");
        assert_eq!(c.match_classes(&line("job-1-0", "2000")), " match current-match");
        assert_eq!(c.match_classes(&line("job-0-0", "2000")), "");
    }
}
