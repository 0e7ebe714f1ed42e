//! One labelled form field: its input, a one-line help text with the default,
//! and its error, tied to the input for screen readers.
//!
//! Every field of every form is drawn by `FieldParts`, whatever its control,
//! so the console carries the code for a field once. The control is chosen
//! at run time from `Control` rather than by type, for the same reason. The
//! field is drawn straight into the page (`components/dom.rs`): the form
//! that owns it listens for its events and tells it what to show.

use wasm_bindgen::JsCast;
use web_sys::Element;

use crate::components::dom;

/// What kind of input a field has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// One line of text.
    Text,
    /// A whole number typed as text (`inputmode=numeric`), so whatever is
    /// typed reaches the form and a wrong entry gets a message rather than
    /// being dropped by the browser.
    Number,
    /// Several lines of text.
    Area,
    /// A write-only secret: never autocompleted, never echoed.
    Password,
    /// On or off: the value is `"1"` or empty.
    Check,
    /// One of `options`.
    Select,
    /// Any number of `options`, as check boxes: the value is the chosen keys
    /// joined with commas.
    Choices,
}

/// Options of a `Select` or `Choices` field: `(value, label)`.
pub type Options = Vec<(String, String)>;

/// The value of the input or select an event came from (`"1"`/`""` for a
/// check box).
pub fn event_value(ev: &web_sys::Event) -> String {
    let Some(target) = ev.target() else { return String::new() };
    if let Some(input) = target.dyn_ref::<web_sys::HtmlInputElement>() {
        if input.type_() == "checkbox" {
            return if input.checked() { "1".into() } else { String::new() };
        }
        return input.value();
    }
    if let Some(area) = target.dyn_ref::<web_sys::HtmlTextAreaElement>() {
        return area.value();
    }
    target.dyn_ref::<web_sys::HtmlSelectElement>().map(|s| s.value()).unwrap_or_default()
}

/// Whether `key` is one of the comma-joined `keys`.
pub fn has_choice(keys: &str, key: &str) -> bool {
    keys.split(',').any(|k| k == key)
}

/// `keys` with `key` added or removed, order kept.
pub fn toggle_choice(keys: &str, key: &str, on: bool) -> String {
    let mut list: Vec<&str> = keys.split(',').filter(|k| !k.is_empty() && *k != key).collect();
    if on {
        list.push(key);
    }
    list.join(",")
}

/// A message about a field as a sentence that names it: "Job name must not
/// be empty", "Resource shape: no resource shape named 'x'".
pub fn sentence(label: &str, message: &str) -> String {
    let predicate = ["must", "may", "is ", "needs", "has "].iter().any(|p| message.starts_with(p));
    if predicate {
        format!("{label} {message}")
    } else {
        format!("{label}: {message}")
    }
}

/// What one field is: fixed once it is drawn.
pub struct FieldSpec {
    /// The input's id; the help and error get `<id>-help` and `<id>-error`.
    pub id: &'static str,
    pub label: &'static str,
    pub help: &'static str,
    pub control: Control,
    pub placeholder: &'static str,
}

/// What a field shows now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldView {
    pub value: String,
    /// The default as people read it, shown after the help text.
    pub default: String,
    /// The choices of a `Select` or `Choices` field.
    pub options: Options,
    pub disabled: bool,
    /// The problem to show now, if any.
    pub error: Option<String>,
}

/// A drawn field: the elements it changes, and what they show.
pub struct FieldParts {
    label: &'static str,
    control: Control,
    input: Element,
    default: Element,
    error: Element,
    shown: FieldView,
}

impl FieldParts {
    /// Draws the field, empty, at the end of `parent`.
    pub fn build(parent: &Element, spec: &FieldSpec) -> FieldParts {
        let FieldSpec { id, label, help, control, placeholder } = *spec;
        let class = match control {
            Control::Check => "field check",
            Control::Area | Control::Choices => "field wide",
            _ => "field",
        };
        let wrap = dom::child(parent, "div", class, "");
        // A fieldset names itself through its legend; other controls
        // through a label pointing at them.
        if control == Control::Choices {
            dom::set(&dom::child(&wrap, "span", "label", label), "aria-hidden", "true");
        } else {
            dom::set(&dom::child(&wrap, "label", "", label), "for", id);
        }
        let (tag, class) = match control {
            Control::Area => ("textarea", ""),
            Control::Select => ("select", ""),
            Control::Choices => ("fieldset", "choices"),
            _ => ("input", ""),
        };
        let input = dom::child(&wrap, tag, class, "");
        dom::set(&input, "id", id);
        dom::set(&input, "aria-describedby", &format!("{id}-help {id}-error"));
        let (kind, mode, auto) = match control {
            Control::Check => ("checkbox", "", ""),
            Control::Password => ("password", "", "new-password"),
            Control::Number => ("text", "numeric", "off"),
            _ => ("text", "", "off"),
        };
        match control {
            Control::Select => {}
            Control::Choices => {
                dom::set(&input, "tabindex", "-1");
                dom::child(&input, "legend", "sr-only", label);
            }
            _ => {
                if control == Control::Area {
                    dom::set(&input, "rows", "4");
                } else {
                    dom::set(&input, "type", kind);
                }
                for (name, value) in [("inputmode", mode), ("autocomplete", auto), ("placeholder", placeholder)] {
                    if !value.is_empty() {
                        dom::set(&input, name, value);
                    }
                }
                dom::set(&input, "spellcheck", "false");
            }
        }
        let help_line = dom::child(&wrap, "p", "help", &format!("{help} "));
        dom::set(&help_line, "id", &format!("{id}-help"));
        let default = dom::child(&help_line, "span", "default", "");
        let error = dom::child(&wrap, "p", "field-error", "");
        dom::set(&error, "id", &format!("{id}-error"));
        let parts = FieldParts { label, control, input, default, error, shown: FieldView::default() };
        // Until there are choices, a `Choices` field says there are none.
        parts.draw_options(&Vec::new());
        parts
    }

    /// Shows `view`, writing only what changed. A typed value is compared
    /// with the input's own, so what the user is typing is never rewritten.
    pub fn show(&mut self, view: FieldView) {
        let input = &self.input;
        if view.options != self.shown.options {
            self.draw_options(&view.options);
        }
        match self.control {
            Control::Check => {
                let input: &web_sys::HtmlInputElement = input.unchecked_ref();
                input.set_checked(!view.value.is_empty());
            }
            Control::Choices => {
                let boxes = input.get_elements_by_tag_name("input");
                for index in 0..boxes.length() {
                    let Some(choice) = boxes.item(index).and_then(|b| b.dyn_into::<web_sys::HtmlInputElement>().ok())
                    else {
                        continue;
                    };
                    choice.set_checked(has_choice(&view.value, &choice.value()));
                }
            }
            Control::Select => {
                let select: &web_sys::HtmlSelectElement = input.unchecked_ref();
                if select.value() != view.value {
                    select.set_value(&view.value);
                }
            }
            Control::Area => {
                let area: &web_sys::HtmlTextAreaElement = input.unchecked_ref();
                if area.value() != view.value {
                    area.set_value(&view.value);
                }
            }
            _ => {
                let text: &web_sys::HtmlInputElement = input.unchecked_ref();
                if text.value() != view.value {
                    text.set_value(&view.value);
                }
            }
        }
        if view.default != self.shown.default {
            self.default.set_text_content(Some(&format!("Default: {}.", view.default)));
        }
        if view.disabled != self.shown.disabled {
            let _ = input.toggle_attribute_with_force("disabled", view.disabled);
        }
        if view.error != self.shown.error {
            self.error.set_text_content(view.error.as_deref().map(|m| sentence(self.label, m)).as_deref());
            match view.error {
                Some(_) => dom::set(input, "aria-invalid", "true"),
                None => {
                    let _ = input.remove_attribute("aria-invalid");
                }
            }
        }
        self.shown = view;
    }

    /// The choices of a select (options) or of a `Choices` field (check
    /// boxes), made again.
    fn draw_options(&self, options: &Options) {
        let input = &self.input;
        if self.control == Control::Choices {
            // Everything after the legend.
            while let Some(last) = input.last_element_child().filter(|e| e.tag_name() != "LEGEND") {
                last.remove();
            }
            if options.is_empty() {
                dom::child(input, "p", "help", "None to choose from.");
            }
            for (key, text) in options {
                let choice = dom::child(input, "label", "choice", "");
                let check = dom::child(&choice, "input", "", "");
                dom::set(&check, "type", "checkbox");
                dom::set(&check, "value", key);
                dom::child(&choice, "span", "", text);
            }
        } else if self.control == Control::Select {
            dom::clear(input);
            for (key, text) in options {
                dom::set(&dom::child(input, "option", "", text), "value", key);
            }
        }
    }
}
