//! An editable list of rows (environment variables, ports, mounts, labels):
//! add, edit and remove rows, each cell labelled, each row with its errors.
//!
//! Every list of every form is drawn by `ListParts`. Rows are addressed by
//! index and cells by column; what the cells mean is up to the form that
//! owns the list, which listens for its events (each cell and remove button
//! carries `data-row`, each cell `data-col`, the list `data-list`) and tells
//! it what to show, so one piece of code serves every list.

use wasm_bindgen::JsCast;
use web_sys::Element;

use crate::components::dom;
use crate::pages::new_job::field::{sentence, Control};

/// One column of a list.
#[derive(Debug)]
pub struct Column {
    pub label: &'static str,
    /// `Text`, `Number` or `Select` (with `options`).
    pub control: Control,
    pub options: &'static [(&'static str, &'static str)],
    pub placeholder: &'static str,
}

/// The id of a cell's input.
pub fn cell_id(list: &str, row: usize, col: usize) -> String {
    format!("{list}-{row}-{col}")
}

/// Focuses the element with `id`, if it exists.
pub fn focus(id: &str) {
    let element = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(id))
        .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok());
    if let Some(element) = element {
        let _ = element.focus();
    }
}

/// What one list is: fixed once it is drawn.
pub struct ListSpec {
    /// The prefix of every id in the list: cells are `<id>-<row>-<col>`, the
    /// add button `<id>-add`.
    pub id: &'static str,
    /// What the form calls the list in its events' `data-list`.
    pub key: usize,
    pub label: &'static str,
    pub help: &'static str,
    pub default: &'static str,
    /// The label of the add button ("Add variable").
    pub add_label: &'static str,
    pub columns: &'static [Column],
}

/// What a cell shows now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CellView {
    pub value: String,
    /// The cell's label when it depends on the row (an environment
    /// variable's "Value" or "Secret"); `None` keeps the column's.
    pub label: Option<&'static str>,
    /// The `datalist` the cell suggests from, if any.
    pub list: Option<&'static str>,
    /// The problem to show now, if any.
    pub error: Option<String>,
}

/// A drawn row: each cell's label and input, and the row's error line.
struct RowParts {
    cells: Vec<(Element, Element)>,
    error: Element,
    shown: Vec<CellView>,
}

/// A drawn list: the elements it changes.
pub struct ListParts {
    id: &'static str,
    label: &'static str,
    columns: &'static [Column],
    rows_host: Element,
    rows: Vec<RowParts>,
    list_error: Element,
}

impl ListParts {
    /// Draws the list, without rows, at the end of `parent`.
    pub fn build(parent: &Element, spec: &ListSpec) -> ListParts {
        let ListSpec { id, key, label, help, default, add_label, columns } = *spec;
        let wrap = dom::child(parent, "div", "field wide list", "");
        dom::set(&wrap, "role", "group");
        dom::set(&wrap, "aria-labelledby", &format!("{id}-label"));
        dom::set(&wrap, "aria-describedby", &format!("{id}-help"));
        dom::set(&wrap, "data-list", &key.to_string());
        dom::set(&dom::child(&wrap, "span", "label", label), "id", &format!("{id}-label"));
        let help_line = dom::child(&wrap, "p", "help", &format!("{help} "));
        dom::set(&help_line, "id", &format!("{id}-help"));
        dom::child(&help_line, "span", "default", &format!("Default: {default}."));
        let rows_host = dom::child(&wrap, "ol", "rows", "");
        let list_error = dom::child(&wrap, "p", "field-error", "");
        let add = dom::child(&wrap, "button", "", add_label);
        dom::set(&add, "type", "button");
        dom::set(&add, "id", &format!("{id}-add"));
        ListParts { id, label, columns, rows_host, rows: Vec::new(), list_error }
    }

    /// Shows `rows` (each a cell per column) and the list's own error,
    /// writing only what changed. Rows are added or taken away at the end:
    /// a row is its index, so after a removal the rows below show the values
    /// that moved up.
    pub fn show(&mut self, rows: Vec<Vec<CellView>>, list_error: Option<&str>) {
        while self.rows.len() > rows.len() {
            if let Some(row) = self.rows.pop() {
                if let Some(item) = row.error.parent_element() {
                    item.remove();
                }
            }
        }
        while self.rows.len() < rows.len() {
            let row = self.build_row(self.rows.len());
            self.rows.push(row);
        }
        for (row, cells) in self.rows.iter_mut().zip(rows) {
            if row.shown == cells {
                continue;
            }
            let mut messages = Vec::new();
            for (col, cell) in cells.iter().enumerate() {
                let Some((label, input)) = row.cells.get(col) else { continue };
                let name = cell.label.unwrap_or(self.columns[col].label);
                if label.text_content().as_deref() != Some(name) {
                    label.set_text_content(Some(name));
                }
                if let Some(select) = input.dyn_ref::<web_sys::HtmlSelectElement>() {
                    if select.value() != cell.value {
                        select.set_value(&cell.value);
                    }
                } else {
                    let text: &web_sys::HtmlInputElement = input.unchecked_ref();
                    if text.value() != cell.value {
                        text.set_value(&cell.value);
                    }
                }
                match cell.list {
                    Some(list) => dom::set(input, "list", list),
                    None => {
                        let _ = input.remove_attribute("list");
                    }
                }
                match &cell.error {
                    Some(message) => {
                        dom::set(input, "aria-invalid", "true");
                        messages.push(sentence(name, message));
                    }
                    None => {
                        let _ = input.remove_attribute("aria-invalid");
                    }
                }
            }
            row.error.set_text_content(Some(&messages.join(" ")));
            row.shown = cells;
        }
        if self.list_error.text_content().as_deref().unwrap_or("") != list_error.unwrap_or("") {
            self.list_error.set_text_content(list_error);
        }
    }

    /// Draws row `row`, empty, at the end of the list.
    fn build_row(&self, row: usize) -> RowParts {
        let id = self.id;
        let item = dom::child(&self.rows_host, "li", "row", "");
        let cells_line = dom::child(&item, "div", "cells", "");
        let error_id = format!("{id}-{row}-error");
        let row_text = row.to_string();
        let cells = self
            .columns
            .iter()
            .enumerate()
            .map(|(col, column)| {
                let cell = dom::child(&cells_line, "div", "cell", "");
                let input_id = cell_id(id, row, col);
                let label = dom::child(&cell, "label", "", column.label);
                dom::set(&label, "for", &input_id);
                let select = column.control == Control::Select;
                let input = dom::child(&cell, if select { "select" } else { "input" }, "", "");
                if select {
                    for (key, text) in column.options {
                        dom::set(&dom::child(&input, "option", "", text), "value", key);
                    }
                } else {
                    dom::set(&input, "type", "text");
                    if column.control == Control::Number {
                        dom::set(&input, "inputmode", "numeric");
                    }
                    dom::set(&input, "autocomplete", "off");
                    dom::set(&input, "spellcheck", "false");
                    if !column.placeholder.is_empty() {
                        dom::set(&input, "placeholder", column.placeholder);
                    }
                }
                dom::set(&input, "id", &input_id);
                dom::set(&input, "aria-describedby", &error_id);
                dom::set(&input, "data-row", &row_text);
                dom::set(&input, "data-col", &col.to_string());
                (label, input)
            })
            .collect();
        let remove = dom::child(&cells_line, "button", "remove", "Remove");
        dom::set(&remove, "type", "button");
        dom::set(&remove, "data-row", &row_text);
        dom::child(&remove, "span", "sr-only", &format!(" {} row {}", self.label, row + 1));
        let error = dom::child(&item, "p", "field-error", "");
        dom::set(&error, "id", &error_id);
        RowParts { cells, error, shown: Vec::new() }
    }
}
