//! What the form's one listener does with an event: a value typed or
//! chosen, an input left, a list's or a tool's button, the submit.

use super::*;

/// What an event in the form does: a value typed or chosen, an input left,
/// a button, the submit.
pub(super) fn on_event(form: &dom::Part<Core>, ev: web_sys::Event) {
    let form = JobForm(form.clone());
    let Some(target) = ev.target().and_then(|t| t.dyn_into::<Element>().ok()) else { return };
    form.want_rules();
    match ev.type_().as_str() {
        "focus" => {}
        "submit" => {
            ev.prevent_default();
            form.submit();
        }
        "blur" => {
            // A check box of a `Choices` field speaks for its fieldset.
            let input = target.closest("fieldset.choices").ok().flatten().unwrap_or(target);
            let id = input.id();
            // An input that drawing removed (a list's row) blurs on its way
            // out; its id may name another row by now, so it touches nothing.
            if !id.is_empty() && input.is_connected() && input.closest("form").ok().flatten().is_some() {
                form.change(|c| c.touch(&id));
            }
        }
        "click" => {
            if let Some(button) = target.closest("button").ok().flatten() {
                on_button(&form, &button);
            }
        }
        _ => on_value(&form, &target, &ev),
    }
}

/// A whole number from an attribute of `element` or an element above it.
pub(super) fn number_above(element: &Element, attribute: &str) -> Option<usize> {
    element.closest(&format!("[{attribute}]")).ok()??.get_attribute(attribute)?.parse().ok()
}

/// A value typed or chosen in a field, a check box of a `Choices` field or a
/// list's cell, or a file chosen to import.
pub(super) fn on_value(form: &JobForm, target: &Element, ev: &web_sys::Event) {
    let value = event_value(ev);
    let id = target.id();
    if let Some(index) = FieldId::all().find(|i| i.def().id == id) {
        form.change(|c| {
            c.edit(&id, |s| {
                s.v[index] = value;
                // Once typed into, the field is the user's: emptied, it
                // stays empty and the job leaves the size to the shape's
                // default.
                if index == SHARED_MEMORY {
                    s.shared_memory_typed = true;
                }
            })
        });
    } else if let Some(fieldset) = target.closest("fieldset.choices").ok().flatten() {
        let (id, key) = (fieldset.id(), target.get_attribute("value").unwrap_or_default());
        let Some(index) = FieldId::all().find(|i| i.def().id == id) else { return };
        form.change(|c| {
            let keys = toggle_choice(&c.state.v[index], &key, value == "1");
            c.edit(&id, |s| s.v[index] = keys);
        });
    } else if let (Some(l), Some(row), Some(col)) = (
        number_above(target, "data-list").and_then(ListId::from_index),
        number_above(target, "data-row"),
        number_above(target, "data-col"),
    ) {
        form.change(|c| {
            c.edit(&id, |s| {
                if let Some(cells) = s.lists[l].get_mut(row) {
                    cells[col] = value;
                }
            })
        });
    } else if ev.type_() == "change" && target.get_attribute("type").as_deref() == Some("file") {
        import_file(form, target);
    }
}

/// What a button of a list or of the tools does.
pub(super) fn on_button(form: &JobForm, button: &Element) {
    if let Some(l) = number_above(button, "data-list").and_then(ListId::from_index) {
        let id = l.def().id;
        // What the server said about the list's rows no longer applies once
        // rows come or go.
        let prefix = format!("{id}-");
        if let Some(row) = number_above(button, "data-row") {
            form.change(|c| {
                if row < c.state.lists[l].len() {
                    c.state.lists[l].remove(row);
                }
                // Rows after the removed one moved up: their ids now name
                // other rows, so what was touched no longer applies either.
                c.touched.retain(|t| !t.starts_with(&prefix));
                c.server.by_input.remove_under(&prefix);
                c.check();
            });
            let add = Target::List(l).input_id();
            request_animation_frame(move || focus(&add));
        } else if let Some(row) = form.change(|c| {
            c.state.add_row(l);
            c.server.by_input.remove_under(&prefix);
            c.check();
            c.state.lists[l].len() - 1
        }) {
            request_animation_frame(move || focus(&Target::Cell(l, row, 0).input_id()));
        }
        return;
    }
    let Some(tool) = button.get_attribute("data-tool") else { return };
    let form = form.clone();
    if tool.starts_with("template") {
        let button = button.clone();
        leptos::task::spawn_local(async move {
            if let Err(PartFailed(message)) =
                load!(read_job(Reading::Template(form.clone(), TemplateAction::Button(button))))
            {
                form.change(|c| c.banner = Some(message));
            }
        });
        return;
    }
    leptos::task::spawn_local(async move {
        let copied = match tool.as_str() {
            "lep" | "json" => {
                let (title, text) = match tool.as_str() {
                    "lep" => ("lep command", JobText::LepCommand),
                    _ => ("JSON spec", JobText::PrettyJson),
                };
                form.shared_text(text, |_| {}).await.map(|text| (title, text))
            }
            "share" => {
                let origin = web_sys::window().and_then(|w| w.location().origin().ok()).unwrap_or_default();
                form.draft_link().await.map(|link| ("Draft link", format!("{origin}{link}")))
            }
            "import" => {
                let text =
                    form.0.read(|c| c.parts.as_ref().map(|p| p.import_text.value())).flatten().unwrap_or_default();
                run_import(&form, text, None).await;
                return;
            }
            _ => return,
        };
        match copied {
            Ok((title, text)) => copy_out(&form, title, text),
            Err(PartFailed(message)) => {
                form.change(|c| c.banner = Some(message));
            }
        }
    });
}

/// Copies `text` to the clipboard and shows it under `title`.
pub(super) fn copy_out(form: &JobForm, title: &'static str, text: String) {
    if let Some(window) = web_sys::window() {
        let _ = window.navigator().clipboard().write_text(&text);
    }
    form.change(|c| c.output = Some((title, text)));
}

/// Imports a job file (`imports.rs`, in the reader's split point), or says
/// why its part could not be downloaded.
pub(super) async fn run_import(form: &JobForm, text: String, file_name: Option<String>) {
    let file = ImportFile { text, file_name };
    if let Err(PartFailed(message)) = load!(read_job(Reading::Import(form.clone(), file))) {
        form.change(|c| c.import_error = Some(message));
    }
}

/// Reads the file chosen in `input` into the import box and imports it.
pub(super) fn import_file(form: &JobForm, input: &Element) {
    let Some(file) = input.dyn_ref::<web_sys::HtmlInputElement>().and_then(|i| i.files()).and_then(|f| f.get(0)) else {
        return;
    };
    let form = form.clone();
    leptos::task::spawn_local(async move {
        match wasm_bindgen_futures::JsFuture::from(file.text()).await {
            Ok(text) => {
                let text = text.as_string().unwrap_or_default();
                form.0.read(|c| c.parts.as_ref().map(|parts| parts.import_text.set_value(&text)));
                // Read as a property: `File.name` would be one more import
                // of the console's core, in every page's download.
                let name = js_sys::Reflect::get(&file, &"name".into()).ok().and_then(|n| n.as_string());
                run_import(&form, text, name).await;
            }
            Err(_) => {
                form.change(|c| c.import_error = Some("The file could not be read.".into()));
            }
        }
    });
}
