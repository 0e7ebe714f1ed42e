//! Log lines with their terminal colours, shown as text.
//!
//! Programs colour their output with ANSI "select graphic rendition"
//! sequences (`ESC [ 31 m`). `segments` cuts a line into runs of text that
//! share a style; `render_into` draws each run as a `<span>` whose text is a
//! text node, so nothing in a log line is ever read as HTML. The sixteen
//! basic colours are classes (the themes choose readable shades); the 256
//! palette and 24-bit colours are set through the element's style object,
//! which the strict Content-Security-Policy allows (it forbids only style
//! attributes and inline style sheets).

use wasm_bindgen::JsCast;

use crate::components::dom;

/// A colour a program asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Colour {
    /// One of the 256 palette entries; 0–15 are the themed basic colours.
    Palette(u8),
    /// A 24-bit colour.
    Rgb(u8, u8, u8),
}

impl Colour {
    /// The class of a basic colour, or the CSS colour of any other.
    fn css(self, layer: &str) -> (Option<String>, Option<String>) {
        match self {
            Colour::Palette(n) if n < 16 => (Some(format!("ansi-{layer}{n}")), None),
            Colour::Palette(n) => {
                let (r, g, b) = palette_rgb(n);
                (None, Some(hex(r, g, b)))
            }
            Colour::Rgb(r, g, b) => (None, Some(hex(r, g, b))),
        }
    }
}

/// The xterm colours of palette entries 16–255: a 6×6×6 cube, then 24 greys.
fn palette_rgb(n: u8) -> (u8, u8, u8) {
    const LEVELS: [u8; 6] = [0, 95, 135, 175, 215, 255];
    if n >= 232 {
        let grey = 8 + 10 * (n - 232);
        return (grey, grey, grey);
    }
    let cube = n.saturating_sub(16);
    (LEVELS[(cube / 36) as usize], LEVELS[(cube / 6 % 6) as usize], LEVELS[(cube % 6) as usize])
}

fn hex(r: u8, g: u8, b: u8) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// How a run of text looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Style {
    pub fg: Option<Colour>,
    pub bg: Option<Colour>,
    pub bold: bool,
    pub dim: bool,
    pub italic: bool,
    pub underline: bool,
    pub inverse: bool,
}

impl Style {
    /// Applies one SGR parameter list (`1;31`, `38;5;208`, empty = reset).
    fn apply(&mut self, params: &str) {
        let mut numbers = params.split([';', ':']).map(|p| p.parse::<u16>().unwrap_or(0));
        while let Some(n) = numbers.next() {
            match n {
                0 => *self = Style::default(),
                1 => self.bold = true,
                2 => self.dim = true,
                3 => self.italic = true,
                4 => self.underline = true,
                7 => self.inverse = true,
                22 => {
                    self.bold = false;
                    self.dim = false
                }
                23 => self.italic = false,
                24 => self.underline = false,
                27 => self.inverse = false,
                30..=37 => self.fg = Some(Colour::Palette((n - 30) as u8)),
                90..=97 => self.fg = Some(Colour::Palette((n - 90 + 8) as u8)),
                40..=47 => self.bg = Some(Colour::Palette((n - 40) as u8)),
                100..=107 => self.bg = Some(Colour::Palette((n - 100 + 8) as u8)),
                39 => self.fg = None,
                49 => self.bg = None,
                38 | 48 => {
                    let colour = match numbers.next() {
                        Some(5) => numbers.next().map(|c| Colour::Palette(c.min(255) as u8)),
                        Some(2) => {
                            let mut channel = || numbers.next().unwrap_or(0).min(255) as u8;
                            Some(Colour::Rgb(channel(), channel(), channel()))
                        }
                        _ => None,
                    };
                    if n == 38 {
                        self.fg = colour;
                    } else {
                        self.bg = colour;
                    }
                }
                _ => {}
            }
        }
    }

    /// The classes and inline colours of a run in this style.
    pub fn classes(&self) -> String {
        let (fg, bg) = if self.inverse { (self.bg, self.fg) } else { (self.fg, self.bg) };
        let mut classes = Vec::new();
        if let Some(class) = fg.and_then(|c| c.css("fg").0) {
            classes.push(class);
        }
        if let Some(class) = bg.and_then(|c| c.css("bg").0) {
            classes.push(class);
        }
        if self.inverse {
            classes.push("ansi-inverse".into());
        }
        for (on, class) in [
            (self.bold, "ansi-bold"),
            (self.dim, "ansi-dim"),
            (self.italic, "ansi-italic"),
            (self.underline, "ansi-underline"),
        ] {
            if on {
                classes.push(class.into());
            }
        }
        classes.join(" ")
    }

    /// The colours that are not one of the sixteen classes: (text, background).
    pub fn inline_colours(&self) -> (Option<String>, Option<String>) {
        let (fg, bg) = if self.inverse { (self.bg, self.fg) } else { (self.fg, self.bg) };
        (fg.and_then(|c| c.css("fg").1), bg.and_then(|c| c.css("bg").1))
    }
}

/// A run of text in one style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub text: String,
    pub style: Style,
}

/// Cuts a line into styled runs. Colour and emphasis sequences set the
/// style; every other escape sequence (cursor moves, erasing, window titles,
/// hyperlinks) is dropped, since a log is not a terminal. A carriage return
/// rewinds the line as a terminal would: what a progress bar drew last is
/// what shows.
pub fn segments(line: &str) -> Vec<Segment> {
    let line = last_redraw(line);
    let mut out: Vec<Segment> = Vec::new();
    let mut style = Style::default();
    let mut text = String::new();
    let mut chars = line.char_indices().peekable();
    let flush = |text: &mut String, style: Style, out: &mut Vec<Segment>| {
        if !text.is_empty() {
            out.push(Segment { text: std::mem::take(text), style });
        }
    };
    while let Some((_, c)) = chars.next() {
        if c != '\u{1b}' {
            text.push(c);
            continue;
        }
        match chars.peek().map(|(_, c)| *c) {
            // Control sequence: parameters, then one final character.
            Some('[') => {
                chars.next();
                let mut params = String::new();
                let mut last = None;
                for (_, c) in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        last = Some(c);
                        break;
                    }
                    params.push(c);
                }
                if last == Some('m') {
                    flush(&mut text, style, &mut out);
                    style.apply(&params);
                }
            }
            // Operating system command: up to BEL or ESC \.
            Some(']') => {
                chars.next();
                while let Some((_, c)) = chars.next() {
                    if c == '\u{7}' {
                        break;
                    }
                    if c == '\u{1b}' {
                        chars.next();
                        break;
                    }
                }
            }
            Some(_) => {
                chars.next();
            }
            None => {}
        }
    }
    flush(&mut text, style, &mut out);
    out
}

/// The part of a line after its last carriage return (a trailing one does
/// not count: `text\r` is `text`).
fn last_redraw(line: &str) -> &str {
    let trimmed = line.trim_end_matches('\r');
    // `rsplit_once`, not slicing at an index: a slice's failure message
    // would bring Rust's string escaping into the log tab's download.
    trimmed.rsplit_once('\r').map_or(trimmed, |(_, after)| after)
}

/// The line's text without any escape sequence, as a search sees it.
pub fn plain_text(line: &str) -> String {
    segments(line).into_iter().map(|s| s.text).collect()
}

/// Appends one log line's text to `parent`, coloured: a text node per
/// unstyled run and a `<span>` per styled one. Text goes in as text nodes,
/// never as markup.
pub fn render_into(parent: &web_sys::Element, line: &str) {
    for segment in segments(line) {
        if segment.style == Style::default() {
            let _ = parent.append_with_str_1(&segment.text);
            continue;
        }
        let span = dom::child(parent, "span", &segment.style.classes(), &segment.text);
        let (fg, bg) = segment.style.inline_colours();
        if fg.is_some() || bg.is_some() {
            let style = span.unchecked_into::<web_sys::HtmlElement>().style();
            if let Some(fg) = fg {
                let _ = style.set_property("color", &fg);
            }
            if let Some(bg) = bg {
                let _ = style.set_property("background-color", &bg);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    fn styled(fg: Option<Colour>, bold: bool) -> Style {
        Style { fg, bold, ..Style::default() }
    }

    #[wasm_bindgen_test]
    fn colour_sequences_become_styled_runs() {
        let cases: Vec<(&str, Vec<(&str, Style)>)> = vec![
            ("plain", vec![("plain", Style::default())]),
            (
                "\u{1b}[31mred\u{1b}[0m plain",
                vec![("red", styled(Some(Colour::Palette(1)), false)), (" plain", Style::default())],
            ),
            ("\u{1b}[1;92mok\u{1b}[m", vec![("ok", styled(Some(Colour::Palette(10)), true))]),
            ("\u{1b}[38;5;208mo", vec![("o", styled(Some(Colour::Palette(208)), false))]),
            ("\u{1b}[38;2;1;2;3mrgb", vec![("rgb", styled(Some(Colour::Rgb(1, 2, 3)), false))]),
            // Cursor movement and erasing are dropped, not shown.
            ("a\u{1b}[2Kb\u{1b}[1Ac", vec![("abc", Style::default())]),
            // A hyperlink's address is not text.
            ("\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{1b}\\", vec![("link", Style::default())]),
            // A progress bar shows its last drawing.
            ("10%\r50%\r100%\r", vec![("100%", Style::default())]),
            ("", vec![]),
            ("dangling\u{1b}", vec![("dangling", Style::default())]),
        ];
        for (line, expected) in cases {
            let got: Vec<(String, Style)> = segments(line).into_iter().map(|s| (s.text, s.style)).collect();
            let expected: Vec<(String, Style)> = expected.into_iter().map(|(t, s)| (t.to_string(), s)).collect();
            assert_eq!(got, expected, "{line:?}");
        }
    }

    #[wasm_bindgen_test]
    fn styles_become_classes_and_colours() {
        let mut style = Style::default();
        style.apply("1;31;44");
        assert_eq!(style.classes(), "ansi-fg1 ansi-bg4 ansi-bold");
        assert_eq!(style.inline_colours(), (None, None));
        style.apply("22;38;5;196");
        assert_eq!(style.classes(), "ansi-bg4");
        assert_eq!(style.inline_colours(), (Some("#ff0000".into()), None));
        style.apply("0;38;5;244");
        assert_eq!(style.inline_colours(), (Some("#808080".into()), None));
        style.apply("7");
        assert_eq!(style.inline_colours(), (None, Some("#808080".into())));
    }

    #[wasm_bindgen_test]
    fn markup_in_a_line_stays_text() {
        let host = dom::element("div");
        render_into(&host, "<script>alert(1)</script> \u{1b}[31m<b>red</b> \u{1b}[38;2;0;128;255mblue");
        assert_eq!(host.text_content().unwrap(), "<script>alert(1)</script> <b>red</b> blue");
        assert!(host.query_selector("script").unwrap().is_none());
        assert!(host.query_selector("b").unwrap().is_none());
        let red = host.query_selector("span.ansi-fg1").unwrap().unwrap();
        assert_eq!(red.text_content().unwrap(), "<b>red</b> ");
        let blue: web_sys::HtmlElement = host.query_selector("span:last-child").unwrap().unwrap().unchecked_into();
        assert_eq!(blue.style().get_property_value("color").unwrap(), "rgb(0, 128, 255)");
    }
}
