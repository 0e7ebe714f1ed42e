//! The viewer's controls and status line: built once, then shown from the
//! viewer's state after every change.

use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlElement, HtmlInputElement};

use super::Core;
use crate::components::dom;

/// What the viewer says about the log as a whole.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum LogState {
    Loading,
    Live,
    Ended,
    Failed(String),
}

/// The viewer's controls, kept to show the state in them.
pub(super) struct Controls {
    pub(super) root: Element,
    pub(super) follow: HtmlInputElement,
    pub(super) timestamps: HtmlInputElement,
    pub(super) wrap: HtmlInputElement,
    pub(super) copy_link: Element,
    pub(super) search_text: HtmlInputElement,
    pub(super) search_regex: HtmlInputElement,
    pub(super) search_case: HtmlInputElement,
    pub(super) previous: Element,
    pub(super) next: Element,
    pub(super) search_status: Element,
    pub(super) state: Element,
}

/// What the controls and the status line show: `copy_link` is `None` while
/// no lines are selected, else whether the link was copied.
#[derive(PartialEq)]
pub(super) struct Shown {
    pub(super) follow: bool,
    pub(super) can_follow: bool,
    pub(super) wrap: bool,
    pub(super) copy_link: Option<bool>,
    pub(super) can_step: bool,
    pub(super) search_status: String,
    pub(super) state: String,
}

/// A search as asked: the text, whether it is a regular expression, whether
/// case is ignored.
pub(super) type Search = (String, bool, bool);

impl Controls {
    /// Makes the viewer's elements in `root`: the controls, the search row,
    /// the status line and the scroll box with its rows.
    pub(super) fn build(root: &Element) -> (Controls, [HtmlElement; 4], Element) {
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
    pub(super) fn search(&self) -> Search {
        (self.search_text.value(), self.search_regex.checked(), self.search_case.checked())
    }
}

impl Core {
    /// What the controls and the status line would show now.
    pub(super) fn controls_shown(&self) -> Shown {
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
    pub(super) fn show_controls(&mut self) {
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
    pub(super) fn set_state(&mut self, state: LogState) {
        self.state = state;
        self.show_controls();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pages::job::log_viewer::Matches;
    use wasm_bindgen_test::wasm_bindgen_test;

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
}
