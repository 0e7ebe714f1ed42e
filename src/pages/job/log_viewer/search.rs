//! A search's request and its answer: a split point of its own
//! (`log_search`), downloaded the first time a user searches a log, so the
//! logs tab's first load does not carry it.

use super::controls::Search;
use super::events::step_match;
use super::fetch::refresh;
use super::geometry::first_match_from;
use super::{Matches, Viewer};
use crate::api;
use crate::components::lazy_view::SplitLoaderError;

/// Asks the server for the lines that match `wanted` and shows the first
/// one from the view on, unless another search was asked for meanwhile.
#[cfg_attr(
    not(test),
    leptos::wasm_split::wasm_split(log_search, wasm_split_path = ::leptos::wasm_split, fallible)
)]
pub(super) fn search_log(viewer: Viewer, wanted: Search, job: String, replica: String) -> Result<(), SplitLoaderError> {
    leptos::task::spawn_local(async move {
        let answer = api::log_search(&job, &replica, &wanted.0, wanted.1, wanted.2).await;
        let current = viewer.change(|c| {
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
            step_match(&viewer, 0);
        } else {
            refresh(&viewer);
        }
        if truncated {
            viewer.change(|c| {
                c.search_status.push_str(" (only the first matches are listed)");
                c.show_controls();
            });
        }
    });
    Ok(())
}
