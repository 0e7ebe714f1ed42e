//! Where the viewport is over a log of any length, and the words and
//! links around a line: the viewer's arithmetic, apart from the DOM.

use crate::pages::job::log_viewer::{LINE_PX, MAX_SCROLL_PX};
use crate::pages::job::numbers::within;

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

    /// The first line on screen and its hidden pixels, for a scroll position
    /// (the viewer itself goes through `content_at`, to keep an anchor).
    #[cfg(test)]
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
    #[cfg(test)]
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pages::job::log_viewer::JUMP_PLACE;
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
