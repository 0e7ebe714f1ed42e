//! An editable list of rows (environment variables, ports, mounts, labels):
//! add, edit and remove rows, each cell labelled, each row with its errors.
//!
//! Every list of every form renders through `list_editor`. Rows are
//! addressed by index and cells by column; what the cells mean is up to the
//! caller's callbacks, so one piece of code serves every list.

use leptos::prelude::*;

use crate::components::field::{event_value, sentence, Control};

/// One column of a list.
#[derive(Debug)]
pub struct Column {
    pub label: &'static str,
    /// `Text`, `Number` or `Select` (with `options`).
    pub control: Control,
    pub options: &'static [(&'static str, &'static str)],
    pub placeholder: &'static str,
}

/// Everything one list needs.
pub struct ListProps {
    /// The prefix of every id in the list: cells are `<id>-<row>-<col>`, the
    /// add button `<id>-add`.
    pub id: &'static str,
    pub label: &'static str,
    pub help: &'static str,
    pub default: &'static str,
    /// The label of the add button ("Add variable").
    pub add_label: &'static str,
    pub columns: &'static [Column],
    /// How many rows there are; the rows are rebuilt only when it changes.
    pub len: Memo<usize>,
    /// The text of a cell.
    pub cell: Callback<(usize, usize), String>,
    /// The label of a cell when it depends on the row (an environment
    /// variable's "Value" or "Secret"); `None` keeps the column's.
    pub cell_label: Callback<(usize, usize), Option<&'static str>>,
    /// The `datalist` a cell suggests from, if any.
    pub cell_list: Callback<(usize, usize), Option<&'static str>>,
    pub set: Callback<(usize, usize, String)>,
    pub add: Callback<()>,
    pub remove: Callback<usize>,
    pub touch: Callback<(usize, usize)>,
    /// The error of a cell to show now, if any.
    pub error: Callback<(usize, usize), Option<String>>,
    /// An error about the list as a whole.
    pub list_error: Signal<Option<String>>,
}

/// The id of a cell's input.
pub fn cell_id(list: &str, row: usize, col: usize) -> String {
    format!("{list}-{row}-{col}")
}

/// Focuses the element with `id`, if it exists.
pub fn focus(id: &str) {
    use wasm_bindgen::JsCast;
    let element = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(id))
        .and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok());
    if let Some(element) = element {
        let _ = element.focus();
    }
}

/// Renders one list.
pub fn list_editor(p: ListProps) -> AnyView {
    let ListProps {
        id,
        label,
        help,
        default,
        add_label,
        columns,
        len,
        cell,
        cell_label,
        cell_list,
        set,
        add,
        remove,
        touch,
        error,
        list_error,
    } = p;
    let help_id = format!("{id}-help");
    let add_id = format!("{id}-add");
    let on_add = move |_| {
        add.run(());
        let row = len.get_untracked().saturating_sub(1);
        // The new row exists once the list re-rendered.
        request_animation_frame(move || focus(&cell_id(id, row, 0)));
    };
    let add_id_for_remove = add_id.clone();
    let row_view = move |row: usize| {
        let row_error_id = format!("{id}-{row}-error");
        let messages = move || {
            let found: Vec<String> = (0..columns.len())
                .filter_map(|col| {
                    let message = error.run((row, col))?;
                    Some(sentence(cell_label.run((row, col)).unwrap_or(columns[col].label), &message))
                })
                .collect();
            found.join(" ")
        };
        let cells = columns
            .iter()
            .enumerate()
            .map(|(col, column)| {
                let input_id = cell_id(id, row, col);
                let text = move || cell_label.run((row, col)).unwrap_or(column.label);
                let invalid = move || error.run((row, col)).is_some().then_some("true");
                let on_input = move |ev: web_sys::Event| set.run((row, col, event_value(&ev)));
                let on_blur = move |_| touch.run((row, col));
                let described = row_error_id.clone();
                let input = if column.control == Control::Select {
                    let options = column.options;
                    view! {
                        <select id=input_id.clone() aria-describedby=described aria-invalid=invalid
                            on:change=on_input on:blur=on_blur>
                            {move || {
                                let current = cell.run((row, col));
                                options
                                    .iter()
                                    .map(|(key, text)| view! { <option value=*key selected=current == *key>{*text}</option> })
                                    .collect_view()
                            }}
                        </select>
                    }
                    .into_any()
                } else {
                    let mode = (column.control == Control::Number).then_some("numeric");
                    view! {
                        <input id=input_id.clone() type="text" inputmode=mode autocomplete="off" spellcheck="false"
                            placeholder=column.placeholder list=move || cell_list.run((row, col))
                            aria-describedby=described aria-invalid=invalid
                            prop:value=move || cell.run((row, col)) on:input=on_input on:blur=on_blur/>
                    }
                    .into_any()
                };
                view! {
                    <div class="cell">
                        <label for=input_id>{text}</label>
                        {input}
                    </div>
                }
            })
            .collect_view();
        let add_id = add_id_for_remove.clone();
        let on_remove = move |_| {
            remove.run(row);
            let add_id = add_id.clone();
            request_animation_frame(move || focus(&add_id));
        };
        view! {
            <li class="row">
                <div class="cells">
                    {cells}
                    <button type="button" class="remove" on:click=on_remove>
                        "Remove" <span class="sr-only">{format!(" {label} row {}", row + 1)}</span>
                    </button>
                </div>
                <p id=row_error_id class="field-error">{messages}</p>
            </li>
        }
    };
    let described = help_id.clone();
    view! {
        <div class="field wide list" role="group" aria-labelledby=format!("{id}-label") aria-describedby=described>
            <span id=format!("{id}-label") class="label">{label}</span>
            <p id=help_id class="help">{help}" "<span class="default">"Default: "{default}"."</span></p>
            <ol class="rows">{move || (0..len.get()).map(row_view.clone()).collect_view()}</ol>
            <p class="field-error">{move || list_error.get()}</p>
            <button type="button" id=add_id on:click=on_add>{add_label}</button>
        </div>
    }
    .into_any()
}
