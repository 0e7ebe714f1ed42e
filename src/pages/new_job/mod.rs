//! The create-job form: `/jobs/new`, `/jobs/new?clone=<id>` (filled from an
//! existing job) and `/jobs/new#draft=…` (a shared, unsubmitted draft).
//!
//! The form validates with the contract (`validate_job_in`) on every change,
//! once it is used: the contract's rules are a split point of their own
//! (`job_rules`), fetched at the first focus, value, click or submit in the
//! form, or a fill, rather than with the page (nothing on screen needs them
//! before).
//! A field shows its problem once the user has left it or tried to submit,
//! and the problem goes away as soon as the field is valid. The server's 422
//! lands on the same inputs through the same path table (`form::target_of`).
//!
//! The form is drawn straight into the page (`components/dom.rs`,
//! `FieldParts`, `ListParts`) from one state (`Core`), with one listener for
//! every input, button and submit, and drawn again after each change: as a
//! Leptos view of signals, memos, callbacks and an action it was most of
//! the page's download (docs/measurements.md, "The create-job form drawn").

pub mod export;
pub mod field;
pub mod form;
pub mod list_editor;
#[cfg(test)]
mod tests;

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use jobdeck_api::{
    shared_memory_default_mib, validate_job, validate_job_in, FieldErrors, JobSpec, LeptonJob, ValidationContext,
    Visibility,
};
use leptos::prelude::*;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::Element;

use crate::api::{self, ApiFailure};
use crate::components::api_error::use_sign_in_again;
use crate::components::dom;
use crate::components::lazy_view::load;
use crate::pages::new_job::field::{event_value, toggle_choice, Control, FieldParts, FieldSpec, FieldView, Options};
use crate::pages::new_job::list_editor::{focus, CellView, ListParts, ListSpec};
use crate::router::{use_navigate, use_url};
use crate::routes;
use crate::session::require_sign_in;

use form::*;

/// The id of the list of problems that have no input of their own.
const OTHER_PROBLEMS_ID: &str = "form-problems";
/// The id of the datalist of secret names.
const SECRET_LIST_ID: &str = "secret-names";

/// Everything the form knows, outside the reactive graph.
#[derive(Default)]
pub struct Core {
    pub state: FormState,
    /// The server's shapes, node groups and secret names, once loaded.
    context: Option<ValidationContext>,
    /// The contract's rules, once fetched (`job_rules`); until then only
    /// what the conversion finds is a problem.
    rules: Option<Rules>,
    /// The rules have been asked for (and their download has not failed).
    rules_asked: bool,
    /// The workspace's log collection setting, once loaded.
    log_default: Option<bool>,
    /// The secrets a variable may reference, each with who may see it.
    secret_labels: Vec<(String, String)>,
    /// Inputs the user has left: their problems show.
    touched: Vec<String>,
    /// Every problem shows: after a submit attempt, an import or a draft.
    show_all: bool,
    /// The server's last 422, placed on inputs; an entry goes when its input
    /// is edited.
    server: Placed,
    /// The contract's and the conversion's problems, placed on inputs: made
    /// again after every change of the state or the context.
    problems: Placed,
    /// An error that is about no field (the server is down, …).
    banner: Option<String>,
    /// Where the form's content came from ("Cloned from …").
    notice: Option<String>,
    /// The job is being created.
    busy: bool,
    /// A copied command, spec or link, shown as well as copied.
    output: Option<(&'static str, String)>,
    /// Why the last import failed.
    import_error: Option<String>,
    /// The drawn page, once mounted.
    parts: Option<Parts>,
    /// Opens a created job's page.
    navigate: Option<Rc<dyn Fn(&str)>>,
    /// Signs the user out and sends them through sign-in back here
    /// (`api_error::use_sign_in_again`). Taken where the page is made:
    /// requests answer in tasks outside the page's reactive owner, where the
    /// session and the router cannot be looked up.
    sign_in_again: Option<Rc<dyn Fn()>>,
}

impl Core {
    /// The problem to show at input `id` now, if any.
    pub fn error_for(&self, id: &str) -> Option<String> {
        if let Some(message) = self.server.by_input.get(id) {
            return Some(message.clone());
        }
        let shown = self.show_all || self.touched.iter().any(|t| t == id);
        if !shown {
            return None;
        }
        self.problems.by_input.get(id).cloned()
    }

    /// Every problem, the server's and the form's, once per input.
    pub fn problem_count(&self) -> usize {
        let (problems, server) = (&self.problems, &self.server);
        let only_server = server.by_input.keys().filter(|id| !problems.by_input.contains_key(id)).count();
        problems.by_input.len() + only_server + problems.other.len() + server.other.len()
    }

    /// Checks the state with the contract's rules (and the workspace's, once
    /// known), once the rules are in.
    fn check(&mut self) {
        let (job, mut found) = self.state.to_job();
        if let Some(rules) = self.rules {
            for (path, messages) in rules(&job, self.context.as_ref()) {
                found.entry(path).or_insert(messages);
            }
        }
        self.problems = Placed::place(&found, &self.state);
    }

    /// Changes the form as the user did at input `id`.
    fn edit(&mut self, id: &str, change: impl FnOnce(&mut FormState)) {
        change(&mut self.state);
        self.server.by_input.remove(id);
        self.check();
    }

    fn touch(&mut self, id: &str) {
        if !self.touched.iter().any(|t| t == id) {
            self.touched.push(id.to_string());
        }
    }

    /// Replaces what the form holds (a clone, an import, a draft).
    fn load(&mut self, state: FormState) {
        self.state = state;
        self.server = Placed::default();
        self.fill_default_shape();
        self.check();
    }

    /// An empty shape becomes the workspace's first, which is what the server
    /// would run the job with.
    fn fill_default_shape(&mut self) {
        let first = self.first_shape();
        if let Some(first) = first {
            if self.state.v[SHAPE].is_empty() {
                self.state.v[SHAPE] = first;
            }
        }
    }

    fn first_shape(&self) -> Option<String> {
        self.context.as_ref().and_then(|c| c.shapes.first()).and_then(|s| s.id.clone())
    }

    /// The shape the form has chosen, with its memory in MiB.
    fn chosen_shape(&self) -> Option<(String, i64)> {
        let shape = &self.state.v[SHAPE];
        let c = self.context.as_ref()?;
        let found = c.shapes.iter().find(|s| s.id.as_deref() == Some(shape.as_str()))?;
        Some((shape.clone(), found.memory_in_mb?))
    }

    /// Whether more than one worker is asked for: completions and
    /// parallelism then follow the workers.
    fn many_workers(&self) -> bool {
        self.state.v[WORKERS].trim().parse::<i64>().is_ok_and(|w| w > 1)
    }

    /// What field `index` shows now.
    fn field_view(&self, index: FieldId) -> FieldView {
        let def = index.def();
        let many_workers = self.many_workers();
        let value = match index {
            SHARED_MEMORY if !self.state.shared_memory_typed => {
                self.chosen_shape().map(|(_, memory)| shared_memory_default_mib(memory).to_string()).unwrap_or_default()
            }
            COMPLETIONS | PARALLELISM if many_workers => self.state.v[WORKERS].trim().to_string(),
            _ => self.state.v[index].clone(),
        };
        let image_ignored = self.context.as_ref().is_some_and(|c| c.requirements.image_ignored);
        let default = match index {
            SHAPE => self
                .first_shape()
                .map(|first| format!("{first}, the workspace's first shape"))
                .unwrap_or_else(|| "the workspace's first shape".into()),
            SHARED_MEMORY => match self.chosen_shape() {
                Some((shape, memory)) => format!(
                    "{} for {shape} ({} of memory); an emptied field uses the default",
                    mib_text(shared_memory_default_mib(memory)),
                    gib_text(memory)
                ),
                None => "from the memory of the resource shape".into(),
            },
            LOG_COLLECTION => self.log_default_text().into(),
            // In process mode the server runs the command on its own
            // machine: say so where the image is typed, not after the job
            // failed to use it.
            IMAGE if image_ignored => "not used on this server: it runs the command as a process on its own \
                                       machine, without the image, its ports or its storage mounts"
                .into(),
            COMPLETIONS | PARALLELISM if many_workers => "the number of workers".into(),
            _ => def.default.to_string(),
        };
        FieldView {
            value,
            default,
            options: self.options_for(index),
            disabled: matches!(index, COMPLETIONS | PARALLELISM) && many_workers,
            error: self.error_for(def.id),
        }
    }

    /// What list `l`'s rows show now.
    fn rows_view(&self, l: ListId) -> Vec<Vec<CellView>> {
        let columns = l.def().columns.len();
        self.state.lists[l]
            .iter()
            .enumerate()
            .map(|(row, cells)| {
                // An environment variable's value names a secret when its
                // source says so.
                let secret = l == ENVS && cells[1] == "secret";
                (0..columns)
                    .map(|col| CellView {
                        value: cells[col].clone(),
                        label: (secret && col == 2).then_some("Secret"),
                        list: (secret && col == 2).then_some(SECRET_LIST_ID),
                        error: self.error_for(&Target::Cell(l, row, col).input_id()),
                    })
                    .collect()
            })
            .collect()
    }

    /// Shows the state: every part writes only what changed.
    fn draw(&mut self) {
        let Some(mut parts) = self.parts.take() else { return };
        for (index, field) in parts.fields.iter_mut() {
            field.show(self.field_view(*index));
        }
        for (l, list) in parts.lists.iter_mut() {
            let l = *l;
            list.show(self.rows_view(l), self.error_for(&Target::List(l).input_id()).as_deref());
        }
        let count = self.problem_count();
        let summary = self.show_all && count > 0;
        let mut other = self.problems.other.clone();
        other.extend(self.server.other.iter().cloned());
        let status = match (self.show_all, count) {
            (_, 0) => String::new(),
            (false, n) => format!("{n} required or invalid {}", if n == 1 { "field" } else { "fields" }),
            (true, 1) => "1 problem remains".to_string(),
            (true, n) => format!("{n} problems remain"),
        };
        let shown = Shown {
            notice: self.notice.clone(),
            banner: self.banner.clone(),
            summary: summary
                .then(|| (format!("{count} {} to fix before the job can be created.", plural(count)), other)),
            busy: self.busy,
            status,
            output: self.output.clone(),
            import_error: self.import_error.clone(),
            secrets: self.secret_labels.clone(),
        };
        parts.show(shown);
        self.parts = Some(parts);
    }

    /// Where a created job's page is opened, while the form is on screen.
    fn navigate_here(&self) -> Option<Rc<dyn Fn(&str)>> {
        self.parts.as_ref().filter(|p| p.host.is_connected())?;
        self.navigate.clone()
    }

    fn log_default_text(&self) -> &'static str {
        match self.log_default {
            Some(true) => "the workspace setting (on)",
            Some(false) => "the workspace setting (off)",
            None => "the workspace setting",
        }
    }

    /// The choices of a select or check-box field; a value the form holds
    /// that is not among them (from a clone or an import) is kept, so its
    /// problem can show.
    fn options_for(&self, index: FieldId) -> Options {
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        let shapes = self.context.iter().flat_map(|c| &c.shapes);
        let groups = self.context.iter().flat_map(|c| &c.node_groups);
        let mut options: Options = match index {
            PRIORITY => priority_options(),
            LOG_COLLECTION => vec![
                (String::new(), format!("Follow {}", self.log_default_text())),
                pair("on", "On"),
                pair("off", "Off"),
            ],
            VISIBILITY => vec![pair("public", "Public"), pair("private", "Private")],
            SHAPE => shapes
                .filter_map(|s| {
                    let id = s.id.clone()?;
                    let text = match &s.description {
                        Some(d) => format!("{id} — {d}"),
                        None => id.clone(),
                    };
                    Some((id, text))
                })
                .collect(),
            NODE_GROUPS => groups
                .filter_map(|g| {
                    let id = g.id.clone()?;
                    let cap = &g.capacity;
                    let text = format!(
                        "{id} — {} CPU, {} memory, {} GPU; {} queued",
                        cpu_text(cap.cpu),
                        gib_text(cap.memory_in_mb),
                        cap.gpu,
                        g.queued_jobs
                    );
                    Some((id, text))
                })
                .collect(),
            NODES => {
                let chosen = split_names(&self.state.v[NODE_GROUPS]);
                groups
                    .filter(|g| chosen.is_empty() || g.id.as_ref().is_some_and(|id| chosen.contains(id)))
                    .flat_map(|g| &g.nodes)
                    .map(|n| (n.name.clone(), n.name.clone()))
                    .collect()
            }
            _ => Vec::new(),
        };
        let held = &self.state.v[index];
        let held: Vec<String> =
            if index.def().control == Control::Choices { split_names(held) } else { vec![held.clone()] };
        for value in held {
            if !value.is_empty() && !options.iter().any(|(k, _)| *k == value) {
                options.push((value.clone(), format!("{value} (not in this workspace)")));
            }
        }
        options
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        "problem"
    } else {
        "problems"
    }
}

/// Where a job to fill the form from comes from.
pub enum JobSource {
    /// A job as the server answered it, to clone.
    Clone(api::JobJson),
    /// JSON text: an import or a draft.
    Text(String),
}

/// What went wrong in a part of the form downloaded on first use (the
/// job's reader and writer, the rules), as the user reads it: the part's own
/// failure, or its download's. The three are declared with `wasm_split`'s
/// `fallible` (Leptos's `#[lazy]` has no such option), so a failed download
/// is this answer rather than a panic that would stop the console; the next
/// call downloads again.
#[derive(Debug)]
pub struct PartFailed(pub String);

impl From<leptos::wasm_split::SplitLoaderError> for PartFailed {
    fn from(_: leptos::wasm_split::SplitLoaderError) -> Self {
        PartFailed("a part of the console could not be downloaded; try again".into())
    }
}

impl From<String> for PartFailed {
    fn from(message: String) -> Self {
        PartFailed(message)
    }
}

/// The form filled from a job. The job's reader (the contract's `Decode` of
/// a whole job and the form's `from_job`, a fifth of the form's code) is
/// needed only here, so this is a split point of its own: opening the form
/// leaves it out, and a clone, an import or a draft fetches it the first
/// time (docs/measurements.md, "The create-job form drawn").
#[cfg_attr(
    not(test),
    leptos::wasm_split::wasm_split(read_job, wasm_split_path = ::leptos::wasm_split, fallible)
)]
fn read_job(source: JobSource) -> Result<FormState, PartFailed> {
    let state = match source {
        JobSource::Clone(json) => json.whole().map(|job| FormState::for_clone(&job)).map_err(|e| e.to_string()),
        JobSource::Text(text) => parse_job(&text).map(|job| FormState::from_job(&job)),
    };
    Ok(state?)
}

/// The contract's rules as the form runs them: the job-only ones, and the
/// server's once its data is loaded.
type Rules = fn(&LeptonJob, Option<&ValidationContext>) -> FieldErrors;

/// The contract's rules (`validate_job`, `validate_job_in`), 14 KB brotli of
/// the form's download, are needed only once the form is used: until then
/// no problem shows and the status says nothing. So they are a split point
/// of their own, fetched at the first focus, value, click or submit in the
/// form or the first fill (`JobForm::rules_in`), while the user reads and
/// types (docs/measurements.md, "The contract's rules on first use").
/// When their download fails the form goes on without them (`PartFailed`).
#[cfg_attr(
    not(test),
    leptos::wasm_split::wasm_split(job_rules, wasm_split_path = ::leptos::wasm_split, fallible)
)]
fn job_rules() -> Result<Rules, PartFailed> {
    Ok(|job, context| match context {
        Some(context) => validate_job_in(job, context),
        None => validate_job(job),
    })
}

/// How the form writes its job as text.
pub enum JobText {
    /// JSON, as `POST /jobs` and a draft link take it.
    Json,
    /// JSON for people: the "Copy JSON spec" tool.
    PrettyJson,
    /// The `lep job create` command line.
    LepCommand,
}

/// The form's job as text. The job's writer (the contract's `Serialize` of a
/// whole job as JSON, 10 KB of code) and the lep command are needed only
/// when the job leaves the form (created, copied, shared), so they are a
/// split point of their own, fetched the first time (docs/measurements.md,
/// "The create-job form drawn").
#[cfg_attr(
    not(test),
    leptos::wasm_split::wasm_split(write_job, wasm_split_path = ::leptos::wasm_split, fallible)
)]
fn write_job(job: LeptonJob, text: JobText) -> Result<String, PartFailed> {
    let written = match text {
        JobText::Json => api::to_json(&job).map_err(|e| e.to_string()),
        JobText::PrettyJson => api::to_pretty_json(&job).map_err(|e| e.to_string()),
        JobText::LepCommand => Ok(export::lep_command(&job)),
    };
    Ok(written?)
}

/// A job in JSON: `{metadata, spec}` as the API takes it, or a bare spec as
/// `lep job create -f` takes it.
pub fn parse_job(text: &str) -> Result<LeptonJob, String> {
    let whole_job = text.contains("\"spec\"") || text.contains("\"metadata\"");
    if whole_job {
        api::parse_json(text).map_err(|e| format!("This is not a job in JSON: {e}"))
    } else {
        let spec: JobSpec = api::parse_json(text).map_err(|e| format!("This is not a job spec in JSON: {e}"))?;
        Ok(LeptonJob { spec, ..Default::default() })
    }
}

/// A CPU count with at most one decimal, without the cost of float
/// formatting in the console.
fn cpu_text(cpu: f64) -> String {
    let tenths = (cpu * 10.0).round() as i64;
    if tenths % 10 == 0 {
        (tenths / 10).to_string()
    } else {
        format!("{}.{}", tenths / 10, tenths % 10)
    }
}

/// MiB in GiB with at most one decimal: `23.5 GiB`.
fn gib_text(mib: i64) -> String {
    let tenths = (mib * 10 + 512) / 1024;
    if tenths % 10 == 0 {
        format!("{} GiB", tenths / 10)
    } else {
        format!("{}.{} GiB", tenths / 10, tenths % 10)
    }
}

/// MiB as people read them: `2048 MiB (2 GiB)`.
fn mib_text(mib: i64) -> String {
    if mib >= 1024 && mib % 1024 == 0 {
        format!("{mib} MiB ({} GiB)", mib / 1024)
    } else {
        format!("{mib} MiB")
    }
}

/// What the page shows around the fields.
#[derive(Clone, Default, PartialEq)]
struct Shown {
    notice: Option<String>,
    banner: Option<String>,
    /// After a submit attempt: the count and the problems that have no
    /// input of their own.
    summary: Option<(String, Vec<String>)>,
    busy: bool,
    status: String,
    output: Option<(&'static str, String)>,
    import_error: Option<String>,
    secrets: Vec<(String, String)>,
}

/// The drawn page: the elements that change.
struct Parts {
    host: Element,
    fields: Vec<(FieldId, FieldParts)>,
    lists: Vec<(ListId, ListParts)>,
    /// The notice and the banner shown now, before `problems`.
    notes: Vec<Element>,
    problems: Element,
    submit: Element,
    status: Element,
    /// The import box: a copied text shows before it.
    import: Element,
    output: Option<Element>,
    import_text: web_sys::HtmlTextAreaElement,
    import_error: Element,
    secrets: Element,
    shown: Shown,
    /// The one listener of the whole form, kept for as long as it is. It is
    /// a `Fn`: drawing can remove a focused element, whose blur then calls
    /// it again while it runs (and is ignored, see `JobForm::change`).
    listener: Closure<dyn Fn(web_sys::Event)>,
}

/// Every event the form listens to; `blur` and `focus` on their way down.
const EVENTS: [(&str, bool); 6] =
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
    fn build(host: &Element, listener: Closure<dyn Fn(web_sys::Event)>) -> Parts {
        let function = listener.as_ref().unchecked_ref();
        // A blur does not bubble: the form hears it on its way down.
        for (kind, capture) in EVENTS {
            let _ = host.add_event_listener_with_callback_and_bool(kind, function, capture);
        }
        let head = dom::child(host, "div", "page-head", "");
        dom::child(&head, "h1", "", "New job");
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
        dom::child(&import, "summary", "", "Import a JSON spec");
        dom::set(&dom::child(&import, "label", "", "JSON spec"), "for", "import-text");
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
            "Paste a job as the API or the JSON spec copy has it, or a spec as lep job create -f takes it, or choose a file.",
        );
        dom::set(&help, "id", "import-help");
        let import_error = dom::child(&import, "p", "field-error", "");
        dom::set(&import_error, "id", "import-error");
        dom::set(&import_error, "role", "alert");
        let buttons = dom::child(&import, "div", "tool-buttons", "");
        button(&buttons, "import", "Import");
        let file = dom::child(&dom::child(&buttons, "label", "file", "Choose a file"), "input", "", "");
        dom::set(&file, "type", "file");
        dom::set(&file, "accept", ".json,application/json");
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
            import,
            output: None,
            import_text: import_text.unchecked_into(),
            import_error,
            secrets,
            shown: Shown::default(),
            listener,
        }
    }

    /// Shows what is around the fields, writing only what changed.
    fn show(&mut self, new: Shown) {
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

/// The form: its state and drawing, shared by the page, its listener and
/// its requests.
#[derive(Clone)]
pub struct JobForm(Rc<RefCell<Core>>);

impl Default for JobForm {
    fn default() -> Self {
        Self::new()
    }
}

/// What a submit leads to.
enum Submit {
    /// A job is being created already.
    Wait,
    /// Problems remain.
    Fix,
    Send(Box<LeptonJob>),
}

impl JobForm {
    pub fn new() -> JobForm {
        let mut core = Core::default();
        core.check();
        JobForm(Rc::new(RefCell::new(core)))
    }

    /// Changes the form and draws the result; `None` (and nothing changed)
    /// while the form is already changing: an event the drawing itself
    /// caused.
    fn change<R>(&self, change: impl FnOnce(&mut Core) -> R) -> Option<R> {
        let mut core = self.0.try_borrow_mut().ok()?;
        let result = change(&mut core);
        core.draw();
        Some(result)
    }

    /// Reads what the form holds.
    pub fn with_state<R>(&self, read: impl FnOnce(&FormState) -> R) -> R {
        read(&self.0.borrow().state)
    }

    /// Replaces what the form holds (a clone, an import, a draft).
    pub fn load(&self, state: FormState) {
        self.change(|c| c.load(state));
    }

    /// Takes in the server's data for the rules and the defaults.
    pub fn set_context(&self, context: ValidationContext, log_default: Option<bool>) {
        self.change(|c| {
            c.context = Some(context);
            c.log_default = log_default;
            c.fill_default_shape();
            c.check();
        });
    }

    /// Reads the form's context out of the server's answers: shapes and
    /// node groups are needed (the form says why it cannot go on without
    /// them); without the secrets, references are not checked here (the
    /// server still checks them); without the workspace, its defaults and
    /// requirements are not known here.
    fn take_context(&self, answers: &api::FormAnswers) {
        let me = answers.workspace().ok();
        let secrets = answers.secrets().unwrap_or_default();
        let user = me.as_ref().map(|w| w.current_user.as_str()).unwrap_or_default();
        // Who may see each secret, next to its name in the list: a public one
        // is a choice its owner made, and worth seeing before using it.
        let secret_labels: Vec<(String, String)> = secrets
            .iter()
            .map(|s| {
                let label = match s.visibility {
                    Some(Visibility::Public) if s.owner != user => format!("public, {}'s", s.owner),
                    Some(Visibility::Public) => "public".to_string(),
                    _ => "private".to_string(),
                };
                (s.name.clone(), label)
            })
            .collect();
        self.change(|c| c.secret_labels = secret_labels);
        let mut secret_names: Vec<String> = secrets.into_iter().map(|s| s.name).collect();
        secret_names.dedup();
        let log_default = me.as_ref().map(|w| w.log_collection_default);
        // What the executor needs (a command in process mode, …): checked
        // here as the server checks it, so the form never sends what it
        // refuses.
        let requirements = me.map(|w| w.job_requirements).unwrap_or_default();
        match (answers.shapes(), answers.node_groups()) {
            (Ok(shapes), Ok(node_groups)) => {
                // Image pull secret names are checked by the server, whose
                // 422 lands on the field; the form does not load them.
                let context = ValidationContext {
                    shapes,
                    node_groups,
                    secret_names,
                    requirements,
                    image_pull_secret_names: None,
                };
                self.set_context(context, log_default)
            }
            (Err(failure), _) | (_, Err(failure)) => self.fail(failure),
        }
    }

    /// Shows a failed create: a 422 on its fields, anything else in a banner;
    /// either way the form keeps what was typed.
    pub fn show_failure(&self, failure: ApiFailure) {
        match failure {
            ApiFailure::Invalid { message, fields } => {
                self.change(|c| {
                    let placed = Placed::place(&fields, &c.state);
                    if placed.count() == 0 {
                        c.banner = Some(message);
                    }
                    c.server = placed;
                    c.show_all = true;
                });
                self.focus_first_problem();
            }
            ApiFailure::Unauthorized => {
                // Signing in again must not lose the form: it travels in the
                // address the sign-in page returns to.
                let form = self.clone();
                leptos::task::spawn_local(async move {
                    let link = form.draft_link().await.unwrap_or_else(|_| routes::NEW_JOB.into());
                    if let Some(history) = web_sys::window().and_then(|w| w.history().ok()) {
                        let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&link));
                    }
                    form.sign_in_again();
                });
            }
            other => self.fail(other),
        }
    }

    /// Shows a failure that is about no field: a banner, or a trip through
    /// sign-in back to this page.
    fn fail(&self, failure: ApiFailure) {
        match failure {
            ApiFailure::Unauthorized => self.sign_in_again(),
            other => {
                self.change(|c| c.banner = Some(other.to_string()));
            }
        }
    }

    fn sign_in_again(&self) {
        let sign_in_again = self.0.try_borrow().ok().and_then(|c| c.sign_in_again.clone());
        if let Some(sign_in_again) = sign_in_again {
            sign_in_again();
        }
    }

    /// What to do when the server no longer takes the token.
    pub fn when_signed_out(&self, sign_in_again: impl Fn() + 'static) {
        self.0.borrow_mut().sign_in_again = Some(Rc::new(sign_in_again));
    }

    /// Moves the focus to the first problem in the order the form shows.
    pub fn focus_first_problem(&self) {
        let form = self.clone();
        request_animation_frame(move || {
            let Ok(c) = form.0.try_borrow() else { return };
            let other = !c.problems.other.is_empty() || !c.server.other.is_empty();
            let has = |id: &String| c.server.by_input.contains_key(id) || c.problems.by_input.contains_key(id);
            let first = input_order(&c.state).into_iter().find(has);
            drop(c);
            match (other, first) {
                (false, Some(id)) => focus(&id),
                _ => focus(OTHER_PROBLEMS_ID),
            }
        });
    }

    /// A link to this form as it is now, without the registry password.
    pub async fn draft_link(&self) -> Result<String, PartFailed> {
        let job = self.with_state(FormState::shareable_job);
        Ok(routes::draft(&load!(write_job(job, JobText::Json))?))
    }

    /// Fills the form from a job: a clone, or JSON text (an import or a
    /// draft), after which every problem shows.
    pub async fn fill(&self, source: JobSource) -> Result<(), String> {
        let show_all = matches!(source, JobSource::Text(_));
        self.rules_in().await;
        let state = load!(read_job(source)).map_err(|failed| failed.0)?;
        self.change(|c| {
            c.load(state);
            c.show_all |= show_all;
        });
        Ok(())
    }

    /// Fills the form from a JSON job or job spec; every problem shows.
    pub async fn import(&self, text: &str) -> Result<(), String> {
        self.fill(JobSource::Text(text.to_string())).await
    }

    /// Sends the job if the form holds no problem; otherwise shows them all
    /// and moves to the first. A created job's page is shown next. The rules
    /// are fetched first if they are not in yet.
    pub fn submit(&self) {
        let form = self.clone();
        leptos::task::spawn_local(async move {
            form.rules_in().await;
            form.send();
        });
    }

    /// `submit`, once the rules are in (or could not be fetched: then the
    /// server's answer is the check).
    fn send(&self) {
        let next = self.change(|c| {
            if c.busy {
                return Submit::Wait;
            }
            c.show_all = true;
            c.banner = None;
            c.server.other.clear();
            if c.problem_count() > 0 {
                return Submit::Fix;
            }
            c.busy = true;
            Submit::Send(Box::new(c.state.to_job().0))
        });
        let job = match next {
            Some(Submit::Send(job)) => job,
            Some(Submit::Fix) => return self.focus_first_problem(),
            _ => return,
        };
        let form = self.clone();
        leptos::task::spawn_local(async move {
            let answer = match load!(write_job(*job, JobText::Json)) {
                Ok(body) => api::create_job(body).await,
                Err(PartFailed(message)) => Err(ApiFailure::Network(message)),
            };
            form.change(|c| c.busy = false);
            match answer {
                Ok(created) => {
                    // Only while the form is still on screen: the user may
                    // have gone elsewhere while the server answered.
                    let navigate = form.0.borrow().navigate_here();
                    if let Some(navigate) = navigate {
                        navigate(&routes::job(&created.id()));
                    }
                }
                Err(failure) => form.show_failure(failure),
            }
        });
    }

    /// Whether the contract's rules are in (`job_rules`).
    pub(crate) fn has_rules(&self) -> bool {
        self.0.try_borrow().is_ok_and(|c| c.rules.is_some())
    }

    /// Fetches the contract's rules (`job_rules`) and checks the form with
    /// them; at once when they are in already.
    async fn rules_in(&self) {
        if !self.has_rules() {
            self.take_rules(load!(job_rules()));
        }
    }

    /// Checks the form with the rules just fetched. Without them the form
    /// goes on (the server checks every create with the same rules, and its
    /// 422 lands on the fields) and asks again at its next use.
    pub(crate) fn take_rules(&self, fetched: Result<Rules, PartFailed>) {
        self.change(|c| match fetched {
            Ok(rules) => {
                c.rules = Some(rules);
                c.check();
            }
            Err(_) => c.rules_asked = false,
        });
    }

    /// Starts fetching the rules the first time the form is used.
    fn want_rules(&self) {
        let asked = self.0.try_borrow_mut().map(|mut c| std::mem::replace(&mut c.rules_asked, true)).ok();
        if asked == Some(false) {
            let form = self.clone();
            leptos::task::spawn_local(async move { form.rules_in().await });
        }
    }

    /// Draws the form into `host` and listens to it there.
    fn mount(&self, host: &Element) {
        let weak = Rc::downgrade(&self.0);
        let listener = Closure::<dyn Fn(web_sys::Event)>::new(move |ev| on_event(&weak, ev));
        self.change(|c| c.parts = Some(Parts::build(host, listener)));
    }
}

/// What an event in the form does: a value typed or chosen, an input left,
/// a button, the submit.
fn on_event(form: &Weak<RefCell<Core>>, ev: web_sys::Event) {
    let Some(form) = form.upgrade().map(JobForm) else { return };
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
            if !id.is_empty() && input.closest("form").ok().flatten().is_some() {
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
fn number_above(element: &Element, attribute: &str) -> Option<usize> {
    element.closest(&format!("[{attribute}]")).ok()??.get_attribute(attribute)?.parse().ok()
}

/// A value typed or chosen in a field, a check box of a `Choices` field or a
/// list's cell, or a file chosen to import.
fn on_value(form: &JobForm, target: &Element, ev: &web_sys::Event) {
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
fn on_button(form: &JobForm, button: &Element) {
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
    leptos::task::spawn_local(async move {
        let job = || form.with_state(FormState::shareable_job);
        let copied = match tool.as_str() {
            "lep" => load!(write_job(job(), JobText::LepCommand)).map(|text| ("lep command", text)),
            "json" => load!(write_job(job(), JobText::PrettyJson)).map(|text| ("JSON spec", text)),
            "share" => {
                let origin = web_sys::window().and_then(|w| w.location().origin().ok()).unwrap_or_default();
                form.draft_link().await.map(|link| ("Draft link", format!("{origin}{link}")))
            }
            "import" => {
                let text = form.0.borrow().parts.as_ref().map(|p| p.import_text.value()).unwrap_or_default();
                run_import(&form, &text).await;
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
fn copy_out(form: &JobForm, title: &'static str, text: String) {
    if let Some(window) = web_sys::window() {
        let _ = window.navigator().clipboard().write_text(&text);
    }
    form.change(|c| c.output = Some((title, text)));
}

/// Fills the form from an imported JSON spec, or says why it cannot.
async fn run_import(form: &JobForm, text: &str) {
    match form.import(text).await {
        Ok(()) => {
            form.change(|c| {
                c.import_error = None;
                c.notice = Some("Imported the JSON spec: every problem in it is marked below.".into());
            });
            form.focus_first_problem();
        }
        Err(message) => {
            form.change(|c| c.import_error = Some(message));
        }
    }
}

/// Reads the file chosen in `input` into the import box and imports it.
fn import_file(form: &JobForm, input: &Element) {
    let Some(file) = input.dyn_ref::<web_sys::HtmlInputElement>().and_then(|i| i.files()).and_then(|f| f.get(0)) else {
        return;
    };
    let form = form.clone();
    leptos::task::spawn_local(async move {
        match wasm_bindgen_futures::JsFuture::from(file.text()).await {
            Ok(text) => {
                let text = text.as_string().unwrap_or_default();
                if let Some(parts) = &form.0.borrow().parts {
                    parts.import_text.set_value(&text);
                }
                run_import(&form, &text).await;
            }
            Err(_) => {
                form.change(|c| c.import_error = Some("The file could not be read.".into()));
            }
        }
    });
}

/// The page.
#[component]
pub fn NewJobPage() -> impl IntoView {
    let signed_in = require_sign_in();
    let form = JobForm::new();
    form.when_signed_out(use_sign_in_again());
    if signed_in {
        leptos::task::spawn_local(load_context(form.clone()));
        // A clone or a draft fills the form; following another draft link
        // from this page changes only the fragment, so this follows the URL.
        // One render effect that remembers what it filled from: a memo and
        // an effect were 2.5 KB of the form's code for the same.
        let url = use_url();
        let filled = form.clone();
        let seen: std::cell::RefCell<Option<(Option<String>, String)>> = Default::default();
        let follow = RenderEffect::new(move |_| {
            let source = url.with(|u| (u.param("clone"), u.hash.clone()));
            if seen.borrow().as_ref() == Some(&source) {
                return;
            }
            *seen.borrow_mut() = Some(source.clone());
            match source {
                (Some(id), _) => leptos::task::spawn_local(clone_into(filled.clone(), id)),
                (None, hash) => {
                    if let Some(draft) = hash.strip_prefix(routes::DRAFT_FRAGMENT) {
                        leptos::task::spawn_local(open_draft(filled.clone(), routes::decode_component(draft)));
                    }
                }
            }
        });
        on_cleanup(move || drop(follow));
    }
    job_form(form, use_navigate())
}

/// The form, with everything it shows around it, drawn once its host is in
/// the page; `navigate` opens a created job's page.
pub fn job_form(form: JobForm, navigate: impl Fn(&str) + 'static) -> impl IntoView {
    form.0.borrow_mut().navigate = Some(Rc::new(navigate));
    // Drawn when the host is made, by a directive: a node reference and an
    // effect that waits for it were 2 KB more of the form's code.
    view! { <div class="page form-page" use:mount_form=form></div> }
}

/// Draws the form into its host (`job_form`'s directive).
fn mount_form(host: Element, form: JobForm) {
    if form.0.borrow().parts.is_none() {
        form.mount(&host);
    }
}

/// Fills the form from job `id`.
async fn clone_into(form: JobForm, id: String) {
    form.change(|c| c.notice = Some(format!("Loading job {id} to clone…")));
    let filled = match api::job_json(&id).await {
        Ok(job) => form.fill(JobSource::Clone(job)).await.map_err(ApiFailure::Network),
        Err(failure) => Err(failure),
    };
    match filled {
        Ok(()) => {
            form.change(|c| {
                c.notice = Some(format!(
                    "Cloned from {id}. Secret values and the registry password are never copied: type the password again if the image needs one."
                ))
            });
        }
        Err(failure) => {
            form.change(|c| c.notice = None);
            form.fail(failure);
        }
    }
}

/// Fills the form from a shared draft's JSON.
async fn open_draft(form: JobForm, json: String) {
    let notice = match form.import(&json).await {
        Ok(()) => "This form was shared as a draft: review every field, then create the job. Registry passwords are never shared.".into(),
        Err(message) => format!("The draft link is damaged, so the form starts empty. {message}"),
    };
    form.change(|c| c.notice = Some(notice));
}

/// Loads what the rules and defaults need from the server.
async fn load_context(form: JobForm) {
    let answers = api::form_answers().await;
    form.take_context(&answers);
}
