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

/// A table drawn straight into the DOM: its caption and header made once,
/// its rows kept in step with the rows it is given. With an `empty`
/// sentence, a table without rows shows that sentence instead.
pub struct Table {
    /// The element drawn into.
    host: Element,
    table: Element,
    body: Element,
    empty: Option<Element>,
    labels: Vec<&'static str>,
    rows: Keyed<Vec<Cell>>,
}

impl Table {
    pub fn new(host: &Element, class: &str, caption: &str, head: &[Head], empty: &str) -> Table {
        let empty = (!empty.is_empty()).then(|| dom::child(host, "p", "empty", empty));
        let table = dom::child(host, "table", class, "");
        dom::child(&table, "caption", "sr-only", caption);
        let header = dom::child(&dom::child(&table, "thead", "", ""), "tr", "", "");
        for column in head {
            head_cell(&header, column);
        }
        let body = dom::child(&table, "tbody", "", "");
        let labels = head.iter().map(|h| h.label).collect();
        Table { host: host.clone(), table, body, empty, labels, rows: Keyed::default() }
    }

    /// Shows `rows`: (key, cells in column order), the first cell the row's
    /// header.
    pub fn draw(&mut self, rows: &[(String, Vec<Cell>)]) {
        if let Some(empty) = &self.empty {
            dom::show(empty, rows.is_empty());
            dom::show(&self.table, !rows.is_empty());
        }
        let labels = &self.labels;
        self.rows.sync(
            &self.body,
            rows,
            || dom::element("tr"),
            |tr, cells, previous| update_row(tr, labels, cells, previous),
        )
    }
}

/// A live table, a drawn part (`dom::draw_into`) around a [`Table`].
#[component]
pub fn DataTable(
    class: &'static str,
    caption: &'static str,
    head: Vec<Head>,
    rows: Rows,
    #[prop(optional)] empty: &'static str,
) -> impl IntoView {
    let host = NodeRef::<leptos::html::Div>::new();
    let mut table: Option<Table> = None;
    dom::draw_into(
        host,
        Box::new(move |host| {
            if table.as_ref().is_none_or(|t| &t.host != host) {
                table = Some(Table::new(host, class, caption, &head, empty));
            }
            if let Some(table) = table.as_mut() {
                rows.with(|rows| table.draw(rows));
            }
        }),
    );
    view! { <div node_ref=host></div> }
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

/// One column's header: its label (with its explanation on hover), and for
/// a sortable column a link that sorts by it, with the current order.
fn head_cell(header: &Element, head: &Head) {
    let cell = dom::child(header, "th", "", "");
    dom::set(&cell, "scope", "col");
    let holder = match &head.sort {
        None => cell,
        Some((href, order)) => {
            if let Some(order) = order {
                dom::set(&cell, "aria-sort", order);
            }
            let link = dom::child(&cell, "a", "sort", "");
            dom::set(&link, "href", href);
            link
        }
    };
    match head.title {
        Some(title) => dom::set(&dom::child(&holder, "abbr", "", head.label), "title", title),
        None => {
            let _ = holder.append_with_str_1(head.label);
        }
    }
    if let Some((_, order)) = &head.sort {
        let arrow = match order {
            Some("ascending") => " ▲",
            Some(_) => " ▼",
            None => "",
        };
        dom::set(&dom::child(&holder, "span", "", arrow), "aria-hidden", "true");
    }
}
