//! What the viewer's controls and rows do: its one listener, the search
//! and the steps between matches.

use wasm_bindgen::JsCast;
use web_sys::Element;

use super::controls::Controls;
use super::fetch::refresh;
use super::geometry::{grouped, selection_fragment};
use super::search::search_log;
use super::{Matches, Viewer, JUMP_PLACE};
use crate::api;
use crate::components::dom;
use crate::components::lazy_view::load;

/// Everything the viewer's controls and rows do, from one listener.
pub(super) fn on_event(viewer: &Viewer, ev: web_sys::Event) {
    let kind = ev.type_();
    let id = ev.target().and_then(|t| t.dyn_into::<Element>().ok()).map(|t| t.id()).unwrap_or_default();
    match (kind.as_str(), id.as_str()) {
        ("scroll", _) => {
            viewer.change(|c| {
                let at_bottom = c.at_bottom() && !c.ended;
                c.follow = at_bottom;
            });
            refresh(viewer);
        }
        ("change", "log-follow") => {
            viewer.change(|c| {
                c.follow = c.controls.as_ref().is_some_and(|controls| controls.follow.checked());
                if c.follow {
                    c.scroll_to_end();
                }
            });
            refresh(viewer);
        }
        ("change", "log-timestamps" | "log-wrap") => {
            viewer.change(|c| {
                if let Some(controls) = &c.controls {
                    (c.timestamps, c.wrap) = (controls.timestamps.checked(), controls.wrap.checked());
                }
            });
            refresh(viewer);
        }
        // A new search text, pattern mode or case rule clears the old
        // matches.
        ("input" | "change", "log-search-text" | "log-search-regex" | "log-search-case") => {
            let changed = viewer.change(|c| {
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
                refresh(viewer);
            }
        }
        ("keydown", "log-search-text") => {
            let Some(key) = ev.dyn_ref::<web_sys::KeyboardEvent>() else { return };
            if key.key() == "Enter" {
                ev.prevent_default();
                if key.shift_key() && viewer.read(|c| c.searched.is_some()) == Some(true) {
                    step_match(viewer, -1);
                } else {
                    run_search(viewer);
                }
            }
        }
        ("click", "log-search-go") => run_search(viewer),
        ("click", "log-search-prev") => step_match(viewer, -1),
        ("click", "log-search-next") => step_match(viewer, 1),
        ("click", "log-download") => {
            let Some((job, replica, stamps)) = viewer.read(|c| (c.job.clone(), c.replica.clone(), c.timestamps)) else {
                return;
            };
            let viewer = viewer.clone();
            leptos::task::spawn_local(async move {
                if let Err(failure) = api::download_log(&job, &replica, stamps).await {
                    viewer.change(|c| {
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
            viewer.change(|c| {
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
            let Some((selection, base, navigate_replace)) = viewer.change(|c| {
                let selection = match (shift, c.selection) {
                    (true, Some((a, b))) => {
                        let anchor = if line < a { b } else { a };
                        (anchor.min(line), anchor.max(line))
                    }
                    _ => (line, line),
                };
                c.selection = Some(selection);
                c.copied = false;
                (selection, c.base_href.clone(), c.navigate_replace.clone())
            }) else {
                return;
            };
            refresh(viewer);
            if let Some(navigate_replace) = navigate_replace {
                navigate_replace(&format!("{base}#{}", selection_fragment(selection.0, selection.1)));
            }
        }
        _ => {}
    }
}

/// Runs the search the inputs ask for, or moves to the next match of the
/// same search.
pub(super) fn run_search(viewer: &Viewer) {
    let Some(Some((wanted, again, job, replica))) = viewer.change(|c| {
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
        return step_match(viewer, 1);
    }
    // The search's request and answer are a split point of their own
    // (`search.rs`): the logs tab's first load does not carry them.
    let viewer = viewer.clone();
    leptos::task::spawn_local(async move {
        if load!(search_log(viewer.clone(), wanted, job, replica)).is_err() {
            viewer.change(|c| {
                c.searched = None;
                c.search_status = "The search could not be downloaded; try again.".into();
                c.show_controls();
            });
        }
    });
}

/// Moves to the next (`step` 1), previous (-1) or current (0) match and
/// scrolls it into view.
pub(super) fn step_match(viewer: &Viewer, step: i64) {
    let found = viewer.change(|c| {
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
        refresh(viewer);
    }
}
