//! Templates in the form: "Start from a template" lists the built-in
//! templates and the user's own, each with its parameters, and fills the
//! form with the job one renders; "Save as a template" keeps the form as a
//! template of the user's, whose `{{name}}` placeholders become its
//! parameters. `/jobs/new?template=<id>` opens the list at that template.
//!
//! The form's listener hands every `template…` button here
//! (`events::on_button`), through the split point of the job's reader
//! (`on_demand::read_job`), which a template's use needs anyway: a form
//! that never fills from elsewhere does not download either.

use wasm_bindgen::JsValue;

use super::*;
use crate::api::templates::{
    delete_template, json_text, render_template, save_template, templates, ParamKind, TemplateChoice,
};

/// What the template part is asked to do.
pub enum TemplateAction {
    /// A button of the template part: its `data-tool` says which.
    Button(Element),
    /// Show the list, at the template with this id if one is given
    /// (`?template=<id>`).
    Open(Option<String>),
}

/// Does `action`, in the background. Part of the form's reading split point
/// (`on_demand::read_job`).
pub(super) fn template_tool(form: JobForm, action: TemplateAction) {
    leptos::task::spawn_local(async move {
        match action {
            TemplateAction::Open(chosen) => open(&form, chosen.as_deref()).await,
            TemplateAction::Button(button) => match button.get_attribute("data-tool").as_deref() {
                Some("templates") => {
                    if button.get_attribute("aria-expanded").as_deref() == Some("true") {
                        close();
                    } else {
                        open(&form, None).await;
                    }
                }
                Some("template-use") => use_template(&form, &button).await,
                Some("template-delete") => delete(&form, &button).await,
                Some("template-save") => save(&form).await,
                _ => {}
            },
        }
    });
}

/// The button that shows and hides the list.
fn toggle() -> Option<Element> {
    by_id(TEMPLATE_PICKER_ID)?.parent_element()?.query_selector("[data-tool=templates]").ok()?
}

fn close() {
    if let (Some(picker), Some(toggle)) = (by_id(TEMPLATE_PICKER_ID), toggle()) {
        dom::clear(&picker);
        dom::set(&toggle, "aria-expanded", "false");
    }
}

/// Loads the templates and lists them; `chosen` is brought into view with
/// the focus on its first input.
async fn open(form: &JobForm, chosen: Option<&str>) {
    let (Some(picker), Some(toggle)) = (by_id(TEMPLATE_PICKER_ID), toggle()) else { return };
    dom::set(&toggle, "aria-expanded", "true");
    dom::clear(&picker);
    dom::set(&dom::child(&picker, "p", "loading", "Loading templates…"), "role", "status");
    let listed = match templates().await {
        Ok(listed) => listed,
        Err(ApiFailure::Unauthorized) => return form.fail(ApiFailure::Unauthorized),
        Err(failure) => {
            dom::clear(&picker);
            let note =
                dom::child(&picker, "p", "field-error", &format!("The templates could not be loaded: {failure}"));
            dom::set(&note, "role", "alert");
            return;
        }
    };
    dom::clear(&picker);
    if let Some(chosen) = chosen.filter(|id| !listed.iter().any(|t| t.id == *id)) {
        let note = dom::child(
            &picker,
            "p",
            "field-error",
            &format!("There is no template '{chosen}' that you may use; choose one below."),
        );
        dom::set(&note, "role", "alert");
    }
    dom::child(
        &picker,
        "p",
        "help",
        "Using a template replaces what the form holds; review every field, then create the job. Your own templates are saved with Save as a template, below the form.",
    );
    for (index, template) in listed.iter().enumerate() {
        let article = draw_template(&picker, index, template);
        if chosen == Some(template.id.as_str()) {
            dom::set(&article, "class", "template-choice chosen");
            article.scroll_into_view_with_bool(true);
            if let Some(input) = article.query_selector("[data-param], button").ok().flatten() {
                let _ = input.unchecked_into::<web_sys::HtmlElement>().focus();
            }
        }
    }
}

/// One template: its name, whose it is, what it does, an input per
/// parameter, and its buttons.
fn draw_template(picker: &Element, index: usize, template: &TemplateChoice) -> Element {
    let article = dom::child(picker, "article", "template-choice", "");
    let params: Vec<&str> = template.params.iter().map(|p| p.name.as_str()).collect();
    for (attribute, value) in
        [("data-template", template.id.as_str()), ("data-name", &template.name), ("data-params", &params.join(" "))]
    {
        dom::set(&article, attribute, value);
    }
    if template.private {
        dom::set(&article, "data-private", "");
    }
    let heading = format!("template-{index}-name");
    dom::set(&article, "aria-labelledby", &heading);
    let title = dom::child(&article, "h3", "", &template.name);
    dom::set(&title, "id", &heading);
    dom::child(&title, "span", "badge", if template.private { "yours" } else { "built-in" });
    dom::child(&article, "p", "help", &template.description);
    for param in &template.params {
        let id = format!("tp-{index}-{}", param.name);
        let field = dom::child(&article, "div", "field wide", "");
        dom::set(&dom::child(&field, "label", "", &param.title), "for", &id);
        let input = match param.kind {
            ParamKind::Text => {
                let area = dom::child(&field, "textarea", "mono template-param", "");
                dom::set(&area, "rows", "2");
                area.unchecked_ref::<web_sys::HtmlTextAreaElement>().set_value(&param.default);
                area
            }
            ParamKind::Boolean => {
                let check = dom::child(&field, "input", "template-param", "");
                dom::set(&check, "type", "checkbox");
                if param.default == "true" {
                    dom::set(&check, "checked", "");
                }
                check
            }
            ParamKind::Integer | ParamKind::Number => {
                let number = dom::child(&field, "input", "template-param", "");
                dom::set(&number, "inputmode", "decimal");
                number.unchecked_ref::<web_sys::HtmlInputElement>().set_value(&param.default);
                number
            }
        };
        let kind = match param.kind {
            ParamKind::Text => "string",
            ParamKind::Integer => "integer",
            ParamKind::Number => "number",
            ParamKind::Boolean => "boolean",
        };
        for (attribute, value) in
            [("id", id.as_str()), ("data-param", &param.name), ("data-kind", kind), ("spellcheck", "false")]
        {
            dom::set(&input, attribute, value);
        }
        if param.required {
            dom::set(&input, "required", "");
        }
        let mut help = param.description.clone();
        if param.required {
            help.push_str(if help.is_empty() { "Required." } else { " Required." });
        }
        let help_element = dom::child(&field, "p", "help", &help);
        dom::set(&help_element, "id", &format!("{id}-help"));
        let error = dom::child(&field, "p", "field-error", "");
        dom::set(&error, "id", &format!("{id}-error"));
        dom::set(&input, "aria-describedby", &format!("{id}-help {id}-error"));
    }
    let problem = dom::child(&article, "p", "field-error template-problem", "");
    dom::set(&problem, "role", "alert");
    let buttons = dom::child(&article, "div", "tool-buttons", "");
    let button = |tool: &str, words: &str| {
        let button = dom::child(&buttons, "button", "", words);
        dom::set(&button, "type", "button");
        dom::set(&button, "data-tool", tool);
        dom::set(&button, "aria-label", &format!("{words}: {}", template.name));
    };
    button("template-use", "Use template");
    if template.private {
        button("template-delete", "Delete");
    }
    article
}

/// A parameter's typed text as JSON, or why it is not one. Numbers are
/// read by the browser's JSON reader: Rust's float parser, or another
/// browser function, would be in every page's download.
pub fn param_value(kind: &str, text: &str, checked: bool) -> Result<JsValue, &'static str> {
    match kind {
        "boolean" => Ok(JsValue::from_bool(checked)),
        "integer" | "number" => {
            let number = js_sys::JSON::parse(text).ok().and_then(|value| value.as_f64()).ok_or("must be a number")?;
            if kind == "integer" && number.fract() != 0.0 {
                return Err("must be a whole number");
            }
            Ok(JsValue::from_f64(number))
        }
        _ => Ok(JsValue::from_str(text)),
    }
}

/// Renders the template of `button`'s article with its inputs' values and
/// fills the form with the job; a refused value shows at its input.
async fn use_template(form: &JobForm, button: &Element) {
    let Some(article) = button.closest("[data-template]").ok().flatten() else { return };
    let id = article.get_attribute("data-template").unwrap_or_default();
    let private = article.get_attribute("data-private").is_some();
    let name = article.get_attribute("data-name").unwrap_or_else(|| id.clone());
    let problem_of =
        |param: &str| article.query_selector(&format!("[data-param=\"{param}\"] ~ .field-error")).ok().flatten();
    let payload = js_sys::Object::new();
    let mut refused = false;
    let params = article.get_attribute("data-params").unwrap_or_default();
    for param in params.split(' ').filter(|p| !p.is_empty()) {
        let Some(input) = article.query_selector(&format!("[data-param=\"{param}\"]")).ok().flatten() else {
            continue;
        };
        let (text, checked) = match input.dyn_ref::<web_sys::HtmlInputElement>() {
            Some(field) => (field.value(), field.checked()),
            None => (input.unchecked_ref::<web_sys::HtmlTextAreaElement>().value(), false),
        };
        let kind = input.get_attribute("data-kind").unwrap_or_default();
        let error = problem_of(param);
        let value = if input.get_attribute("required").is_some() && kind != "boolean" && text.trim().is_empty() {
            Err("is required")
        } else {
            param_value(&kind, &text, checked)
        };
        match value {
            Ok(value) => {
                let _ = js_sys::Reflect::set(&payload, &JsValue::from_str(param), &value);
                if let Some(error) = error {
                    error.set_text_content(None);
                }
            }
            Err(message) => {
                refused = true;
                if let Some(error) = error {
                    error.set_text_content(Some(message));
                }
            }
        }
    }
    let problem = article.query_selector(".template-problem").ok().flatten();
    let say = |message: &str| {
        if let Some(problem) = &problem {
            problem.set_text_content(Some(message));
        }
    };
    say("");
    if refused {
        return;
    }
    let payload = json_text(&payload).unwrap_or_default();
    let job = match render_template(&id, private, payload).await {
        Ok(job) => job,
        Err(ApiFailure::Invalid { message, fields }) => {
            for (path, messages) in fields.iter() {
                let text = messages.join("; ");
                match path.strip_prefix("payload.").and_then(&problem_of) {
                    Some(error) => error.set_text_content(Some(&text)),
                    None => say(&format!("{path}: {text}")),
                }
            }
            if fields.is_empty() {
                say(&message);
            }
            return;
        }
        Err(ApiFailure::Unauthorized) => return form.fail(ApiFailure::Unauthorized),
        Err(failure) => return say(&failure.to_string()),
    };
    match form.import(&job).await {
        Ok(()) => {
            close();
            form.change(|c| {
                c.import_error = None;
                c.notice = Some(format!("Filled from the template {name}: review every field, then create the job."));
            });
            form.focus_first_problem();
        }
        Err(message) => say(&message),
    }
}

/// Deletes the user's template of `button`'s article at the second click:
/// the first turns the button into "Delete for good". (The browser's
/// `confirm` would be one more browser function in every page's download.)
async fn delete(form: &JobForm, button: &Element) {
    let Some(article) = button.closest("[data-template]").ok().flatten() else { return };
    if button.get_attribute("data-armed").is_none() {
        dom::set(button, "data-armed", "");
        button.set_text_content(Some("Delete for good"));
        return;
    }
    let id = article.get_attribute("data-template").unwrap_or_default();
    match delete_template(&id).await {
        Ok(()) => article.remove(),
        Err(ApiFailure::Unauthorized) => form.fail(ApiFailure::Unauthorized),
        Err(failure) => {
            if let Some(problem) = article.query_selector(".template-problem").ok().flatten() {
                problem.set_text_content(Some(&failure.to_string()));
            }
        }
    }
}

/// The names of the `{{name}}` placeholders in `text`, each once, in the
/// order they first appear: a name is letters, digits and `_`, with spaces
/// allowed inside the braces (as the server reads them). Read byte by byte:
/// string searching and slicing shared with the form would move into every
/// page's download (docs/measurements.md, "The form's templates").
pub fn placeholder_names(text: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let bytes = text.as_bytes();
    let mut at = 0;
    while at + 1 < bytes.len() {
        if bytes[at] != b'{' || bytes[at + 1] != b'{' {
            at += 1;
            continue;
        }
        // Inside the braces: spaces, a name, spaces, then `}}`.
        let mut end = at + 2;
        let mut name = String::new();
        let mut spaced = false;
        let mut valid = true;
        while end < bytes.len() && bytes[end] != b'}' {
            match bytes[end] {
                b' ' => spaced = !name.is_empty(),
                b if (b.is_ascii_alphanumeric() || b == b'_') && !spaced => name.push(b as char),
                _ => valid = false,
            }
            end += 1;
        }
        let closed = end + 1 < bytes.len() && bytes[end + 1] == b'}';
        if closed && valid && !name.is_empty() {
            if !names.contains(&name) {
                names.push(name);
            }
            at = end + 2;
        } else {
            at += 2;
        }
    }
    names
}

/// The body of `POST /templates/private` that saves `job_json` (the form's
/// job as JSON) as the template `name`: each placeholder in it a required
/// text parameter.
pub fn template_body(name: &str, job_json: &str) -> String {
    let params = placeholder_names(job_json);
    let properties: Vec<String> =
        params.iter().map(|p| format!(r#""{p}":{{"type":"string","title":"{p}"}}"#)).collect();
    let required: Vec<String> = params.iter().map(|p| format!(r#""{p}""#)).collect();
    let name = json_text(&JsValue::from_str(name)).unwrap_or_default();
    format!(
        r#"{{"metadata":{{"name":{name}}},"spec":{{"workload_type":"job","json_schema":{{"type":"object","properties":{{{}}},"required":[{}]}},"content":{job_json}}}}}"#,
        properties.join(","),
        required.join(",")
    )
}

/// Saves the form as a template of the user's, named as the name input
/// says, and lists it if the list is open.
async fn save(form: &JobForm) {
    let (Some(input), Some(status)) = (by_id(TEMPLATE_NAME_ID), by_id(TEMPLATE_SAVE_STATUS_ID)) else { return };
    let name = input.unchecked_ref::<web_sys::HtmlInputElement>().value().trim().to_string();
    let say = |message: &str| status.set_text_content(Some(message));
    if name.is_empty() {
        say("Give the template a name first.");
        return;
    }
    // Jobs made from the template get names of their own.
    let written = form.shared_text(JobText::Json, |job| {
        job.metadata.name = None;
        job.metadata.id = None;
    });
    let body = match written.await {
        Ok(json) => template_body(&name, &json),
        Err(PartFailed(message)) => return say(&message),
    };
    say("Saving…");
    match save_template(body).await {
        Ok(saved) => {
            let params = saved.params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ");
            let asks = if params.is_empty() { String::new() } else { format!(" It asks for {params}.") };
            say(&format!(
                "Saved as your template {} (id {}).{asks} Start from a template lists it, and lep job create -t {} uses it.",
                saved.name, saved.id, saved.id
            ));
            if toggle().and_then(|t| t.get_attribute("aria-expanded")).as_deref() == Some("true") {
                open(form, Some(&saved.id)).await;
            }
        }
        Err(ApiFailure::Unauthorized) => form.fail(ApiFailure::Unauthorized),
        Err(failure) => say(&format!("Not saved: {}", failure.naming_the_field())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn placeholders_become_required_text_parameters_of_the_saved_template() {
        assert_eq!(placeholder_names("a {{run}} b {{ epochs }} {{run}} {{not a name}} {{}} {{x"), ["run", "epochs"]);
        let body =
            template_body("Train \"big\"", r#"{"metadata":{},"spec":{"container":{"command":["sh","-c","{{run}}"]}}}"#);
        let parsed: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(parsed["metadata"]["name"], "Train \"big\"", "the name is JSON-escaped: {body}");
        assert_eq!(parsed["spec"]["json_schema"]["properties"]["run"]["type"], "string");
        assert_eq!(parsed["spec"]["json_schema"]["required"], serde_json::json!(["run"]));
        assert_eq!(parsed["spec"]["content"]["spec"]["container"]["command"][2], "{{run}}");
        let plain: serde_json::Value = serde_json::from_str(&template_body("t", r#"{"spec":{}}"#)).unwrap();
        assert_eq!(
            plain["spec"]["json_schema"],
            serde_json::json!({"type": "object", "properties": {}, "required": []})
        );
    }

    #[wasm_bindgen_test]
    fn a_parameter_is_sent_with_its_type_or_refused_at_its_input() {
        assert_eq!(param_value("integer", " 4 ", false).unwrap().as_f64(), Some(4.0));
        assert_eq!(param_value("integer", "2.5", false).unwrap_err(), "must be a whole number");
        assert_eq!(param_value("number", "2.5", false).unwrap().as_f64(), Some(2.5));
        assert_eq!(param_value("number", "four", false).unwrap_err(), "must be a number");
        assert_eq!(param_value("boolean", "", true).unwrap().as_bool(), Some(true));
        assert_eq!(
            param_value("string", "python train.py", false).unwrap().as_string().as_deref(),
            Some("python train.py")
        );
    }
}
