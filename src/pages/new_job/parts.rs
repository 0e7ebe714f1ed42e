//! The drawn page: the elements that change, made once (`Parts::build`) and
//! brought up to date from the form's state (`Parts::show`).

use super::*;

/// What the page shows around the fields.
#[derive(Clone, Default, PartialEq)]
pub(super) struct Shown {
    pub(super) notice: Option<String>,
    pub(super) banner: Option<String>,
    /// After a submit attempt: the count and the problems that have no
    /// input of their own.
    pub(super) summary: Option<(String, Vec<String>)>,
    pub(super) busy: bool,
    pub(super) status: String,
    pub(super) output: Option<(&'static str, String)>,
    pub(super) import_error: Option<String>,
    pub(super) secrets: Vec<(String, String)>,
}

/// The drawn page: the elements that change.
pub(super) struct Parts {
    pub(super) host: Element,
    pub(super) fields: Vec<(FieldId, FieldParts)>,
    pub(super) lists: Vec<(ListId, ListParts)>,
    /// The notice and the banner shown now, before `problems`.
    pub(super) notes: Vec<Element>,
    pub(super) problems: Element,
    pub(super) submit: Element,
    pub(super) status: Element,
    /// A clone's differences from its source, above Create (drawn by
    /// `ClonedFrom::show`).
    pub(super) changes: Element,
    /// The import box: a copied text shows before it.
    pub(super) import: Element,
    /// "Save as a template", opened by a job's link to it.
    pub(super) save_template: Element,
    pub(super) output: Option<Element>,
    pub(super) import_text: web_sys::HtmlTextAreaElement,
    pub(super) import_error: Element,
    pub(super) secrets: Element,
    pub(super) shown: Shown,
    /// The one listener of the whole form (`dom::Part::listener`), kept for
    /// as long as the form is.
    pub(super) listener: Closure<dyn Fn(web_sys::Event)>,
}

/// Every event the form listens to; `blur` and `focus` on their way down.
pub(super) const EVENTS: [(&str, bool); 6] =
    [("input", false), ("change", false), ("click", false), ("submit", false), ("blur", true), ("focus", true)];

impl Drop for Parts {
    /// The host may still be in the page (and its focused element fire a
    /// blur on the way out) after the form is gone.
    fn drop(&mut self) {
        let function = self.listener.as_ref().unchecked_ref();
        for (kind, capture) in EVENTS {
            let _ = self.host.remove_event_listener_with_callback_and_bool(kind, function, capture);
        }
    }
}

impl Parts {
    /// Draws the page into `host`, its inputs empty, and listens there.
    pub(super) fn build(host: &Element, listener: Closure<dyn Fn(web_sys::Event)>) -> Parts {
        let function = listener.as_ref().unchecked_ref();
        // A blur does not bubble: the form hears it on its way down.
        for (kind, capture) in EVENTS {
            let _ = host.add_event_listener_with_callback_and_bool(kind, function, capture);
        }
        let head = dom::child(host, "div", "page-head", "");
        dom::child(&head, "h1", "", "New job");
        // The templates' list is drawn by the form's template part
        // (`templates.rs`) when it is first asked for.
        let templates = dom::child(host, "section", "card templates", "");
        dom::set(&templates, "aria-label", "Templates");
        let open = dom::child(&templates, "button", "", "Start from a template");
        dom::set(&open, "type", "button");
        dom::set(&open, "data-tool", "templates");
        dom::set(&open, "aria-expanded", "false");
        dom::set(&open, "aria-controls", TEMPLATE_PICKER_ID);
        dom::set(&dom::child(&templates, "div", "template-picker", ""), "id", TEMPLATE_PICKER_ID);
        let problems = dom::child(host, "div", "problems", "");
        dom::set(&problems, "id", OTHER_PROBLEMS_ID);
        dom::set(&problems, "tabindex", "-1");
        dom::set(&problems, "role", "alert");
        let form = dom::child(host, "form", "job-form", "");
        dom::set(&form, "novalidate", "");
        let (mut fields, mut lists) = (Vec::new(), Vec::new());
        for section in LAYOUT.iter() {
            let card = dom::child(&form, "section", "card form-section", "");
            let heading = format!("{}-heading", section.id);
            dom::set(&card, "aria-labelledby", &heading);
            dom::set(&dom::child(&card, "h2", "", section.title), "id", &heading);
            dom::child(&card, "p", "help", section.intro);
            let items = dom::child(&card, "div", "fields", "");
            for item in section.items {
                match *item {
                    Item::Field(i) => {
                        let def = i.def();
                        let spec = FieldSpec {
                            id: def.id,
                            label: def.label,
                            help: def.help,
                            control: def.control,
                            placeholder: def.placeholder,
                        };
                        fields.push((i, FieldParts::build(&items, &spec)));
                    }
                    Item::List(l) => {
                        let def = l.def();
                        let spec = ListSpec {
                            id: def.id,
                            key: l.index(),
                            label: def.label,
                            help: def.help,
                            default: "none",
                            add_label: def.add_label,
                            columns: def.columns,
                        };
                        lists.push((l, ListParts::build(&items, &spec)));
                    }
                }
            }
        }
        let changes = dom::child(&form, "section", "card clone-diff", "");
        dom::set(&changes, "aria-live", "polite");
        dom::show(&changes, false);
        let actions = dom::child(&form, "div", "form-actions", "");
        let submit = dom::child(&actions, "button", "primary", "Create job");
        dom::set(&submit, "type", "submit");
        let status = dom::child(&actions, "span", "status", "");
        dom::set(&status, "aria-live", "polite");

        let tools = dom::child(host, "section", "card tools", "");
        dom::set(&tools, "aria-labelledby", "tools-heading");
        dom::set(&dom::child(&tools, "h2", "", "Copy, share or import"), "id", "tools-heading");
        dom::child(&tools, "p", "help", "Copies leave out the registry password.");
        let buttons = dom::child(&tools, "div", "tool-buttons", "");
        let button = |parent: &Element, tool: &str, words: &str| {
            let button = dom::child(parent, "button", "", words);
            dom::set(&button, "type", "button");
            dom::set(&button, "data-tool", tool);
        };
        button(&buttons, "lep", "Copy as lep command");
        button(&buttons, "json", "Copy JSON spec");
        button(&buttons, "share", "Share draft link");
        let import = dom::child(&tools, "details", "import", "");
        dom::child(&import, "summary", "", "Import a job file");
        dom::set(&dom::child(&import, "label", "", "Format"), "for", IMPORT_FORMAT_ID);
        let format = dom::child(&import, "select", "", "");
        dom::set(&format, "id", IMPORT_FORMAT_ID);
        for (value, words) in IMPORT_FORMATS {
            dom::set(&dom::child(&format, "option", "", words), "value", value);
        }
        dom::set(&dom::child(&import, "label", "", "Job file"), "for", "import-text");
        let import_text = dom::child(&import, "textarea", "mono", "");
        for (name, value) in [
            ("id", "import-text"),
            ("rows", "6"),
            ("spellcheck", "false"),
            ("aria-describedby", "import-help import-error"),
            ("placeholder", r#"{"metadata": {"name": "train"}, "spec": {…}}"#),
        ] {
            dom::set(&import_text, name, value);
        }
        let help = dom::child(
            &import,
            "p",
            "help",
            "Paste a job as the API or the JSON spec copy has it, a spec as lep job create -f takes it, an NVCF \
             task.json, a Kubernetes Job or a .dstack.yml task, or choose a file.",
        );
        dom::set(&help, "id", "import-help");
        let import_error = dom::child(&import, "p", "field-error", "");
        dom::set(&import_error, "id", "import-error");
        dom::set(&import_error, "role", "alert");
        let buttons = dom::child(&import, "div", "tool-buttons", "");
        button(&buttons, "import", "Import");
        let file = dom::child(&dom::child(&buttons, "label", "file", "Choose a file"), "input", "", "");
        dom::set(&file, "type", "file");
        dom::set(&file, "accept", ".json,.yaml,.yml,application/json");
        let save = dom::child(&tools, "details", "import", "");
        dom::child(&save, "summary", "", "Save as a template");
        dom::set(&dom::child(&save, "label", "", "Template name"), "for", TEMPLATE_NAME_ID);
        let name = dom::child(&save, "input", "", "");
        for (attribute, value) in
            [("id", TEMPLATE_NAME_ID), ("aria-describedby", "template-save-help template-save-status")]
        {
            dom::set(&name, attribute, value);
        }
        let help = dom::child(
            &save,
            "p",
            "help",
            "Saves the form as it is, without the job's name and the registry password. Type {{name}} into a text \
             field to make it a parameter people fill in when they use the template.",
        );
        dom::set(&help, "id", "template-save-help");
        let buttons = dom::child(&save, "div", "tool-buttons", "");
        button(&buttons, "template-save", "Save template");
        let saved = dom::child(&save, "p", "", "");
        dom::set(&saved, "id", TEMPLATE_SAVE_STATUS_ID);
        dom::set(&saved, "role", "status");
        let secrets = dom::child(host, "datalist", "", "");
        dom::set(&secrets, "id", SECRET_LIST_ID);
        Parts {
            host: host.clone(),
            fields,
            lists,
            notes: Vec::new(),
            problems,
            submit,
            status,
            changes,
            import,
            save_template: save,
            output: None,
            import_text: import_text.unchecked_into(),
            import_error,
            secrets,
            shown: Shown::default(),
            listener,
        }
    }

    /// Shows what is around the fields, writing only what changed.
    pub(super) fn show(&mut self, new: Shown) {
        let old = std::mem::take(&mut self.shown);
        if (&new.notice, &new.banner) != (&old.notice, &old.banner) {
            for note in self.notes.drain(..) {
                note.remove();
            }
            if let Some(notice) = &new.notice {
                let note = dom::element("p");
                dom::set(&note, "class", "banner note");
                dom::set(&note, "role", "status");
                note.set_text_content(Some(notice));
                self.notes.push(note);
            }
            if let Some(banner) = &new.banner {
                let note = dom::element("div");
                dom::set(&note, "class", "banner error");
                dom::set(&note, "role", "alert");
                dom::child(&note, "p", "", banner);
                self.notes.push(note);
            }
            for note in &self.notes {
                let _ = self.host.insert_before(note, Some(&self.problems));
            }
            // A failure usually follows a button far below the banner (Create
            // is at the bottom): the banner is brought into view.
            if new.banner.is_some() {
                if let Some(banner) = self.notes.last() {
                    banner.scroll_into_view_with_bool(true);
                }
            }
        }
        if new.summary != old.summary {
            dom::clear(&self.problems);
            if let Some((title, other)) = &new.summary {
                let banner = dom::child(&self.problems, "div", "banner error", "");
                dom::child(&banner, "p", "", title);
                let list = dom::child(&banner, "ul", "", "");
                for message in other {
                    dom::child(&list, "li", "mono", message);
                }
            }
        }
        if new.busy != old.busy {
            let _ = self.submit.toggle_attribute_with_force("disabled", new.busy);
            self.submit.set_text_content(Some(if new.busy { "Creating…" } else { "Create job" }));
        }
        if new.status != old.status {
            self.status.set_text_content(Some(&new.status));
        }
        if new.output != old.output {
            if let Some(output) = self.output.take() {
                output.remove();
            }
            if let Some((title, text)) = &new.output {
                let output = dom::element("div");
                dom::set(&output, "class", "output");
                let label = dom::child(&output, "label", "", &format!("{title} (copied to the clipboard)"));
                dom::set(&label, "for", "output-text");
                let area = dom::child(&output, "textarea", "mono", "");
                for (name, value) in [("id", "output-text"), ("readonly", ""), ("rows", "8")] {
                    dom::set(&area, name, value);
                }
                area.unchecked_ref::<web_sys::HtmlTextAreaElement>().set_value(text);
                if let Some(tools) = self.import.parent_element() {
                    let _ = tools.insert_before(&output, Some(&self.import));
                }
                self.output = Some(output);
            }
        }
        if new.import_error != old.import_error {
            self.import_error.set_text_content(new.import_error.as_deref());
        }
        if new.secrets != old.secrets {
            dom::clear(&self.secrets);
            for (name, label) in &new.secrets {
                let option = dom::child(&self.secrets, "option", "", "");
                dom::set(&option, "value", name);
                dom::set(&option, "label", label);
            }
        }
        self.shown = new;
    }
}
