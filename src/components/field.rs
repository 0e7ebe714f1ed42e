//! One labelled form field: its input, a one-line help text with the default,
//! and its error, tied to the input for screen readers.
//!
//! Every field of every form renders through `field`, whatever its control,
//! so the console carries the code for a field once. The control is chosen
//! at run time from `Control` rather than by type, for the same reason.

use leptos::prelude::*;
use wasm_bindgen::JsCast;

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

/// Everything one field needs.
pub struct FieldProps {
    /// The input's id; the help and error get `<id>-help` and `<id>-error`.
    pub id: &'static str,
    pub label: &'static str,
    pub help: &'static str,
    /// The default as people read it, shown after the help text.
    pub default: Signal<String>,
    pub control: Control,
    pub options: Signal<Options>,
    pub value: Signal<String>,
    pub set: Callback<String>,
    /// Called when the input loses focus: its error may show from then on.
    pub touch: Callback<()>,
    /// The error to show now, if any.
    pub error: Signal<Option<String>>,
    pub disabled: Signal<bool>,
    pub placeholder: &'static str,
}

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

/// Renders one field.
pub fn field(p: FieldProps) -> AnyView {
    let FieldProps { id, label, help, default, control, options, value, set, touch, error, disabled, placeholder } = p;
    let help_id = format!("{id}-help");
    let error_id = format!("{id}-error");
    let described = format!("{help_id} {error_id}");
    let invalid = move || error.with(|e| e.is_some()).then_some("true");
    let on_input = move |ev: web_sys::Event| set.run(event_value(&ev));
    let on_blur = move |_| touch.run(());
    let control_view = match control {
        Control::Area => view! {
            <textarea id=id rows="4" spellcheck="false" placeholder=placeholder
                aria-describedby=described aria-invalid=invalid disabled=move || disabled.get()
                prop:value=move || value.get() on:input=on_input on:blur=on_blur></textarea>
        }
        .into_any(),
        Control::Select => view! {
            <select id=id aria-describedby=described aria-invalid=invalid disabled=move || disabled.get()
                on:change=on_input on:blur=on_blur>
                {move || {
                    let current = value.get();
                    options
                        .get()
                        .into_iter()
                        .map(|(key, text)| {
                            let selected = key == current;
                            view! { <option value=key selected=selected>{text}</option> }
                        })
                        .collect_view()
                }}
            </select>
        }
        .into_any(),
        Control::Choices => view! {
            <fieldset id=id class="choices" tabindex="-1" aria-describedby=described aria-invalid=invalid
                disabled=move || disabled.get() on:focusout=on_blur>
                <legend class="sr-only">{label}</legend>
                {move || {
                    let options = options.get();
                    if options.is_empty() {
                        return view! { <p class="help">"None to choose from."</p> }.into_any();
                    }
                    options
                        .into_iter()
                        .map(|(key, text)| {
                            let k = key.clone();
                            let checked = move || value.with(|v| has_choice(v, &k));
                            let key_for_toggle = key.clone();
                            let on_change = move |ev: web_sys::Event| {
                                let on = event_value(&ev) == "1";
                                set.run(toggle_choice(&value.get_untracked(), &key_for_toggle, on));
                            };
                            view! {
                                <label class="choice">
                                    <input type="checkbox" value=key prop:checked=checked on:change=on_change/>
                                    <span>{text}</span>
                                </label>
                            }
                        })
                        .collect_view()
                        .into_any()
                }}
            </fieldset>
        }
        .into_any(),
        _ => {
            let (kind, mode, auto) = match control {
                Control::Check => ("checkbox", None, None),
                Control::Password => ("password", None, Some("new-password")),
                Control::Number => ("text", Some("numeric"), Some("off")),
                _ => ("text", None, Some("off")),
            };
            view! {
                <input id=id type=kind inputmode=mode autocomplete=auto spellcheck="false" placeholder=placeholder
                    aria-describedby=described aria-invalid=invalid disabled=move || disabled.get()
                    prop:value=move || if control == Control::Check { String::new() } else { value.get() }
                    prop:checked=move || control == Control::Check && !value.with(String::is_empty)
                    on:input=on_input on:blur=on_blur/>
            }
            .into_any()
        }
    };
    let class = match control {
        Control::Check => "field check",
        Control::Area | Control::Choices => "field wide",
        _ => "field",
    };
    // A fieldset names itself through its legend; other controls through a
    // label pointing at them.
    let label_view = if control == Control::Choices {
        view! { <span class="label" aria-hidden="true">{label}</span> }.into_any()
    } else {
        view! { <label for=id>{label}</label> }.into_any()
    };
    view! {
        <div class=class>
            {label_view}
            {control_view}
            <p id=help_id class="help">{help}" "<span class="default">"Default: "{move || default.get()}"."</span></p>
            <p id=error_id class="field-error">{move || error.get().map(|m| sentence(label, &m))}</p>
        </div>
    }
    .into_any()
}
