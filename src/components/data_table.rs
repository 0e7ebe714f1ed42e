//! One table component for every live table (jobs, replicas, events).
//!
//! Pages turn their data into rows of `Cell`s; this module is the only one
//! that draws them (through `dom`, see there why). Rows are keyed and a cell
//! is redrawn only when its own value changed, so live updates leave the rest
//! of the table, and the user's focus, alone.

use leptos::prelude::*;

use web_sys::Element;

use crate::components::dom::{self, Keyed};

/// One cell's content.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Plain text; `class` styles it (`""`, `"mono"`, `"issue"`).
    Text { text: String, class: &'static str },
    /// A coloured badge (`tone` as `state_tone`) with an optional note under it.
    Badge { tone: &'static str, text: String, note: String },
    /// A link; `label` is its accessible name when the text alone is vague.
    Link { href: String, text: String, label: Option<String> },
    /// Replica counts: succeeded / running / failed of completions.
    Counts([i64; 4]),
}

impl Cell {
    pub fn text(text: impl Into<String>) -> Cell {
        Cell::Text { text: text.into(), class: "" }
    }

    pub fn mono(text: impl Into<String>) -> Cell {
        Cell::Text { text: text.into(), class: "mono" }
    }
}

/// A column header; `sort` makes it a link that sorts by the column, with
/// the column's current order (`ascending`/`descending`) when sorted by it.
#[derive(Debug, Clone, PartialEq)]
pub struct Head {
    pub label: &'static str,
    pub sort: Option<(String, Option<&'static str>)>,
    /// A longer explanation of the column, shown on hover.
    pub title: Option<&'static str>,
}

impl Head {
    pub const fn plain(label: &'static str) -> Head {
        Head { label, sort: None, title: None }
    }
}

/// The rows of a table: (key, cells in column order); the first cell is the
/// row's header.
pub type Rows = RwSignal<Vec<(String, Vec<Cell>)>>;

#[component]
pub fn DataTable(class: &'static str, caption: &'static str, head: Vec<Head>, rows: Rows) -> impl IntoView {
    let labels: Vec<&'static str> = head.iter().map(|h| h.label).collect();
    let body = NodeRef::<leptos::html::Tbody>::new();
    let keyed = StoredValue::new_local(Keyed::<Vec<Cell>>::default());
    Effect::new(move |_| {
        let Some(body) = body.get() else { return };
        rows.with(|rows| {
            keyed.update_value(|keyed| {
                keyed.sync(
                    &body,
                    rows,
                    || dom::element("tr"),
                    |tr, cells, previous| update_row(tr, &labels, cells, previous),
                )
            })
        });
    });
    view! {
        <table class=class>
            <caption class="sr-only">{caption}</caption>
            <thead>
                <tr>{head.into_iter().map(head_cell).collect_view()}</tr>
            </thead>
            <tbody node_ref=body></tbody>
        </table>
    }
}

/// Redraws the cells of one row that differ from what it showed before.
fn update_row(tr: &Element, labels: &[&'static str], cells: &[Cell], previous: Option<&Vec<Cell>>) {
    for (i, cell) in cells.iter().enumerate() {
        if previous.and_then(|p| p.get(i)) == Some(cell) {
            continue;
        }
        let slot = match tr.children().item(i as u32) {
            Some(slot) => slot,
            None => {
                let slot = dom::child(tr, if i == 0 { "th" } else { "td" }, "", "");
                if i == 0 {
                    dom::set(&slot, "scope", "row");
                }
                dom::set(&slot, "data-label", labels.get(i).copied().unwrap_or(""));
                slot
            }
        };
        dom::clear(&slot);
        // One box per cell, so the narrow layout's label-and-value grid
        // always has exactly two items.
        draw_cell(&dom::child(&slot, "div", "", ""), cell);
    }
}

fn draw_cell(slot: &Element, cell: &Cell) {
    match cell {
        Cell::Text { text, class } => {
            dom::child(slot, "span", class, text);
        }
        Cell::Badge { tone, text, note } => {
            dom::child(slot, "span", &format!("badge {tone}"), text);
            if !note.is_empty() {
                dom::child(slot, "span", "reason", note);
            }
        }
        Cell::Link { href, text, label } => {
            let a = dom::child(slot, "a", "", text);
            dom::set(&a, "href", href);
            if let Some(label) = label {
                dom::set(&a, "aria-label", label);
            }
        }
        Cell::Counts([succeeded, running, failed, of]) => {
            dom::child(
                slot,
                "span",
                "sr-only",
                &format!("{succeeded} succeeded, {running} running, {failed} failed of {of}"),
            );
            let counts = dom::child(slot, "span", "counts", "");
            dom::set(&counts, "aria-hidden", "true");
            for (class, text) in [
                ("ok", succeeded.to_string()),
                ("", " / ".into()),
                ("active", running.to_string()),
                ("", " / ".into()),
                ("bad", failed.to_string()),
                ("of", format!(" of {of}")),
            ] {
                dom::child(&counts, "span", class, &text);
            }
        }
    }
}

fn head_cell(head: Head) -> impl IntoView {
    let Head { label, sort, title } = head;
    let text = match title {
        Some(title) => view! { <abbr title=title>{label}</abbr> }.into_any(),
        None => label.into_any(),
    };
    match sort {
        None => view! { <th scope="col">{text}</th> }.into_any(),
        Some((href, order)) => {
            let arrow = match order {
                Some("ascending") => " ▲",
                Some(_) => " ▼",
                None => "",
            };
            view! {
                <th scope="col" aria-sort=order>
                    <a href=href class="sort">{text}<span aria-hidden="true">{arrow}</span></a>
                </th>
            }
            .into_any()
        }
    }
}
