//! The rows on screen: which lines they are, drawing them, and what to
//! fetch for them; scrolling to a line.

use jobdeck_api::{LogLine, LogRange};
use wasm_bindgen::JsCast;
use web_sys::Element;

use super::geometry::{grouped, Geometry};
use super::{Core, Row, CHUNK, JUMP_PLACE, MAX_CACHED_LINES};
use crate::components::{dom, time};
use crate::pages::job::ansi;

impl Core {
    pub(super) fn geometry(&self) -> Geometry {
        let viewport = self.scroller.as_ref().map(|s| s.client_height() as f64).unwrap_or(0.0);
        Geometry { total: self.total, viewport }
    }

    pub(super) fn scroll_top(&self) -> f64 {
        self.scroller.as_ref().map(|s| s.scroll_top() as f64).unwrap_or(0.0)
    }

    pub(super) fn at_bottom(&self) -> bool {
        self.scroller.as_ref().map(|s| s.scroll_top() + s.client_height() >= s.scroll_height() - 2).unwrap_or(true)
    }

    /// Lines `first..=last` (1-based) to draw for the current scroll.
    pub(super) fn visible(&self) -> (u64, u64, f64) {
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

    /// Takes in an answer's lines, a run in the order of their numbers (as
    /// the server sends a range, and follow its new lines): they replace
    /// whatever the cache held from the run's first line to its last.
    pub(super) fn absorb(&mut self, range: LogRange) {
        self.total = self.total.max(range.total_lines);
        self.ended = range.ended;
        if let (Some(first), Some(last)) = (range.lines.first(), range.lines.last()) {
            let (first, last) = (first.line, last.line);
            let from = self.lines.partition_point(|l| l.line < first);
            let after = self.lines.split_off(self.lines.partition_point(|l| l.line <= last));
            self.lines.truncate(from);
            self.lines.extend(range.lines);
            self.lines.extend(after);
        }
        self.evict();
    }

    /// The cached line numbered `line`.
    pub(super) fn cached(&self, line: u64) -> Option<&LogLine> {
        self.lines.binary_search_by_key(&line, |l| l.line).ok().map(|i| &self.lines[i])
    }

    /// Keeps the cache bounded, dropping the lines farthest from the view.
    pub(super) fn evict(&mut self) {
        if self.lines.len() <= MAX_CACHED_LINES {
            return;
        }
        let (first, _, _) = self.visible();
        let keep_from = first.saturating_sub(MAX_CACHED_LINES as u64 / 2);
        let tail_from = keep_from + MAX_CACHED_LINES as u64;
        self.lines.retain(|l| keep_from <= l.line && l.line < tail_from);
    }

    /// The chunk-aligned ranges on screen that are neither cached nor asked
    /// for yet.
    pub(super) fn missing(&self, first: u64, last: u64) -> Vec<(u64, u64)> {
        let mut wanted = Vec::new();
        let mut line = first;
        while line <= last {
            if self.cached(line).is_none() {
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

    pub(super) fn row_class(&self, line: u64, stderr: bool) -> String {
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
    pub(super) fn draw(&mut self) -> Vec<(u64, u64)> {
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
                let cached = self.cached(line);
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

    pub(super) fn scroll_to_line(&mut self, line: u64, place: f64) {
        let geometry = self.geometry();
        let content = geometry.content_for(line.saturating_sub(1), place);
        if let Some(scroller) = &self.scroller {
            scroller.set_scroll_top(geometry.scroll_top_at(content).round() as i32);
            self.anchor = Some((scroller.scroll_top(), content));
        }
    }

    /// Scrolls the page (not the log) so the whole viewer is on screen: a
    /// link to lines shows them without a further scroll.
    pub(super) fn bring_into_view(&self) {
        if let Some(scroller) = &self.scroller {
            scroller.scroll_into_view_with_bool(false);
        }
    }

    /// Puts the first screen at `line` (a third down, and the viewer in
    /// view), or at the end; later if the box has no height yet.
    pub(super) fn place_first_screen(&mut self, line: Option<u64>) {
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

    pub(super) fn scroll_to_end(&mut self) {
        self.anchor = None;
        if let Some(scroller) = &self.scroller {
            scroller.set_scroll_top(scroller.scroll_height());
        }
    }
}

/// A new, empty row: line-number link, time, text.
pub(super) fn new_row() -> Element {
    let row = dom::element("div");
    dom::child(&row, "a", "ln", "");
    dom::child(&row, "span", "ts", "");
    dom::child(&row, "span", "lt", "");
    row
}

/// Fills a row for its line.
pub(super) fn fill_row(row: &Element, item: &Row, previous: Option<&Row>) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

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

    /// An answer holding lines `from..=to`, each saying which `fetch` it came
    /// from.
    fn answer(from: u64, to: u64, fetch: &str) -> LogRange {
        let lines = (from..=to).map(|line| LogLine { line, time: 0, stderr: false, text: format!("{fetch} {line}") });
        LogRange { total_lines: 100_000, ended: false, lines: lines.collect() }
    }

    fn viewer() -> Core {
        Core::new("job".into(), "replica".into(), None, "/jobs/job/logs".into())
    }

    fn text(core: &Core, line: u64) -> Option<&str> {
        core.cached(line).map(|l| l.text.as_str())
    }

    /// Answers arrive in any order and may overlap (a follow's new lines, a
    /// range asked for again): each line is cached once, in order, the
    /// latest answer's copy, and the lines between runs stay missing.
    #[wasm_bindgen_test]
    fn answers_in_any_order_are_cached_once_each_in_order() {
        let mut core = viewer();
        core.absorb(answer(501, 1000, "second"));
        core.absorb(answer(1, 500, "first"));
        core.absorb(answer(2001, 2100, "far"));
        core.absorb(answer(990, 1010, "again"));
        core.absorb(LogRange { total_lines: 100_000, ended: true, lines: Vec::new() });
        assert!(core.ended);
        assert!(core.lines.windows(2).all(|w| w[0].line < w[1].line), "in order, once each");
        assert_eq!(core.lines.len(), 1010 + 100);
        assert_eq!(text(&core, 1), Some("first 1"));
        assert_eq!(text(&core, 989), Some("second 989"));
        assert_eq!(text(&core, 990), Some("again 990"));
        assert_eq!(text(&core, 1010), Some("again 1010"));
        assert_eq!(text(&core, 1011), None);
        assert_eq!(text(&core, 2000), None);
        assert_eq!(text(&core, 2100), Some("far 2100"));
        assert_eq!(core.missing(1001, 2001), [(1011, 1500), (1501, 2000)]);
    }

    /// The cache stays bounded: past its size, the lines farthest after the
    /// view go (the view is at the top here, with no scroll box).
    #[wasm_bindgen_test]
    fn the_cache_keeps_the_lines_nearest_the_view() {
        let mut core = viewer();
        let chunks = MAX_CACHED_LINES as u64 / CHUNK + 4;
        for chunk in (0..chunks).rev() {
            core.absorb(answer(chunk * CHUNK + 1, (chunk + 1) * CHUNK, "chunk"));
        }
        let kept = MAX_CACHED_LINES as u64 - 1;
        assert!(core.lines.len() <= MAX_CACHED_LINES);
        assert!(core.lines.windows(2).all(|w| w[1].line == w[0].line + 1), "from the top, without a gap");
        assert_eq!(core.lines.first().map(|l| l.line), Some(1));
        assert_eq!(text(&core, kept), Some(format!("chunk {kept}").as_str()));
        assert_eq!(text(&core, MAX_CACHED_LINES as u64 + 1), None);
    }
}
