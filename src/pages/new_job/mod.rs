//! The create-job form: `/jobs/new`, `/jobs/new?clone=<id>` (filled from an
//! existing job) and `/jobs/new#draft=…` (a shared, unsubmitted draft).
//!
//! The form validates with the contract (`validate_job_in`) on every change.
//! A field shows its problem once the user has left it or tried to submit,
//! and the problem goes away as soon as the field is valid. The server's 422
//! lands on the same inputs through the same path table (`form::target_of`).

pub mod export;
pub mod form;
#[cfg(test)]
mod tests;

use jobdeck_api::{
    shared_memory_default_mib, validate_job, validate_job_in, JobSpec, LeptonJob, ValidationContext, Visibility,
};
use leptos::prelude::*;
use wasm_bindgen::JsCast;

use crate::api::{self, ApiFailure};
use crate::components::api_error::failure_view;
use crate::components::field::{field, Control, FieldProps, Options};
use crate::components::list_editor::{focus, list_editor, ListProps};
use crate::router::{use_navigate, use_url};
use crate::routes;
use crate::session::require_sign_in;

use form::*;

/// The id of the list of problems that have no input of their own.
const OTHER_PROBLEMS_ID: &str = "form-problems";
/// The id of the datalist of secret names.
const SECRET_LIST_ID: &str = "secret-names";

/// The form's reactive state. `Copy`, so every handler can hold it.
#[derive(Clone, Copy)]
pub struct JobForm {
    pub state: RwSignal<FormState>,
    /// The server's shapes, node groups and secret names, once loaded.
    pub context: RwSignal<Option<ValidationContext>>,
    /// The workspace's log collection setting, once loaded.
    pub log_default: RwSignal<Option<bool>>,
    /// The secrets a variable may reference, each with who may see it.
    pub secret_labels: RwSignal<Vec<(String, String)>>,
    /// Inputs the user has left: their problems show.
    pub touched: RwSignal<Vec<String>>,
    /// Every problem shows: after a submit attempt, an import or a draft.
    pub show_all: RwSignal<bool>,
    /// The server's last 422, placed on inputs; an entry goes when its input
    /// is edited.
    pub server: RwSignal<Placed>,
    /// The contract's and the conversion's problems, placed on inputs.
    pub problems: Memo<Placed>,
    /// An error that is about no field (the server is down, …).
    pub banner: RwSignal<Option<ApiFailure>>,
    /// Where the form's content came from ("Cloned from …").
    pub notice: RwSignal<Option<String>>,
    /// Creating the job: `POST /jobs` as a Leptos action (its `pending` is
    /// the busy state, its `value` the answer).
    pub create: Action<LeptonJob, Result<LeptonJob, ApiFailure>>,
    /// A copied command, spec or link, shown as well as copied.
    pub output: RwSignal<Option<(&'static str, String)>>,
}

impl Default for JobForm {
    fn default() -> Self {
        Self::new()
    }
}

impl JobForm {
    pub fn new() -> JobForm {
        let state = RwSignal::new(FormState::default());
        let context = RwSignal::new(None::<ValidationContext>);
        let problems = Memo::new(move |_| {
            state.with(|s| {
                let (job, mut found) = s.to_job();
                let rules = context.with(|c| match c {
                    Some(c) => validate_job_in(&job, c),
                    None => validate_job(&job),
                });
                for (path, messages) in rules {
                    found.entry(path).or_insert(messages);
                }
                Placed::place(&found, s)
            })
        });
        JobForm {
            state,
            context,
            log_default: RwSignal::new(None),
            secret_labels: RwSignal::new(Vec::new()),
            touched: RwSignal::new(Vec::new()),
            show_all: RwSignal::new(false),
            server: RwSignal::new(Placed::default()),
            problems,
            banner: RwSignal::new(None),
            notice: RwSignal::new(None),
            create: Action::new_local(|job: &LeptonJob| {
                let job = job.clone();
                async move { api::create_job(&job).await }
            }),
            output: RwSignal::new(None),
        }
    }

    /// The problem to show at input `id` now, if any.
    pub fn error_for(self, id: &str) -> Option<String> {
        if let Some(message) = self.server.with(|s| s.by_input.get(id).cloned()) {
            return Some(message);
        }
        let shown = self.show_all.get() || self.touched.with(|t| t.iter().any(|t| t == id));
        if !shown {
            return None;
        }
        self.problems.with(|p| p.by_input.get(id).cloned())
    }

    /// Every problem, the server's and the form's, once per input.
    pub fn problem_count(self) -> usize {
        let problems = self.problems.get();
        let server = self.server.get();
        let only_server = server.by_input.keys().filter(|id| !problems.by_input.contains_key(*id)).count();
        problems.by_input.len() + only_server + problems.other.len() + server.other.len()
    }

    /// Changes the form as the user did at input `id`.
    pub fn edit(self, id: &str, change: impl FnOnce(&mut FormState)) {
        self.state.update(change);
        if self.server.with_untracked(|s| s.by_input.contains_key(id)) {
            self.server.update(|s| {
                s.by_input.remove(id);
            });
        }
    }

    fn touch(self, id: &str) {
        if !self.touched.with_untracked(|t| t.iter().any(|t| t == id)) {
            self.touched.update(|t| t.push(id.to_string()));
        }
    }

    /// Replaces what the form holds (a clone, an import, a draft).
    pub fn load(self, state: FormState) {
        self.state.set(state);
        self.server.set(Placed::default());
        self.fill_default_shape();
    }

    /// An empty shape becomes the workspace's first, which is what the server
    /// would run the job with.
    fn fill_default_shape(self) {
        let first = self
            .context
            .with_untracked(|c| c.as_ref().and_then(|c| c.shapes.first()).and_then(|s| s.metadata.id.clone()));
        if let Some(first) = first {
            if self.state.with_untracked(|s| s.v[SHAPE].is_empty()) {
                self.state.update(|s| s.v[SHAPE] = first);
            }
        }
    }

    /// Takes in the server's data for the rules and the defaults.
    pub fn set_context(self, context: ValidationContext, log_default: Option<bool>) {
        self.context.set(Some(context));
        self.log_default.set(log_default);
        self.fill_default_shape();
    }

    /// Shows a failed create: a 422 on its fields, anything else in a banner;
    /// either way the form keeps what was typed.
    pub fn show_failure(self, failure: ApiFailure) {
        match failure {
            ApiFailure::Invalid { message, fields } => {
                let placed = self.state.with_untracked(|s| Placed::place(&fields, s));
                if placed.count() == 0 {
                    self.banner.set(Some(ApiFailure::Invalid { message, fields }));
                }
                self.server.set(placed);
                self.show_all.set(true);
                self.focus_first_problem();
            }
            ApiFailure::Unauthorized => {
                // Signing in again must not lose the form: it travels in the
                // address the sign-in page returns to.
                let link = self.draft_link();
                if let Ok(history) = web_sys::window().expect("a window").history() {
                    let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&link));
                }
                self.banner.set(Some(ApiFailure::Unauthorized));
            }
            other => self.banner.set(Some(other)),
        }
    }

    /// Moves the focus to the first problem in the order the form shows.
    pub fn focus_first_problem(self) {
        let form = self;
        request_animation_frame(move || {
            let (other, first) = form.state.with_untracked(|s| {
                let other = form.problems.with_untracked(|p| !p.other.is_empty())
                    || form.server.with_untracked(|p| !p.other.is_empty());
                let has = |id: &String| {
                    form.server.with_untracked(|p| p.by_input.contains_key(id))
                        || form.problems.with_untracked(|p| p.by_input.contains_key(id))
                };
                (other, input_order(s).into_iter().find(has))
            });
            match (other, first) {
                (true, _) | (false, None) => focus(OTHER_PROBLEMS_ID),
                (false, Some(id)) => focus(&id),
            }
        });
    }

    /// A link to this form as it is now, without the registry password.
    pub fn draft_link(self) -> String {
        let job = self.state.with_untracked(FormState::shareable_job);
        routes::draft(&api::to_json(&job).unwrap_or_default())
    }

    /// Fills the form from a JSON job or job spec; every problem shows.
    pub fn import(self, text: &str) -> Result<(), String> {
        let job = parse_job(text)?;
        self.load(FormState::from_job(&job));
        self.show_all.set(true);
        Ok(())
    }

    /// Checks the form and, when it is valid, creates the job and goes to
    /// its page.
    /// Sends the job if the form holds no problem; otherwise shows them all
    /// and moves to the first. The answer arrives through `create`.
    pub fn submit(self) {
        self.show_all.set(true);
        self.banner.set(None);
        self.server.update(|s| s.other.clear());
        if self.problem_count() > 0 {
            self.focus_first_problem();
            return;
        }
        let job = self.state.with_untracked(|s| s.to_job().0);
        self.create.dispatch_local(job);
    }

    /// Whether the job is being created.
    pub fn busy(self) -> bool {
        self.create.pending().get()
    }
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

/// The page.
#[component]
pub fn NewJobPage() -> impl IntoView {
    let signed_in = require_sign_in();
    let form = JobForm::new();
    if signed_in {
        leptos::task::spawn_local(load_context(form));
        // A clone or a draft fills the form; following another draft link
        // from this page changes only the fragment, so this follows the URL.
        let url = use_url();
        let source = Memo::new(move |_| url.with(|u| (u.param("clone"), u.hash.clone())));
        Effect::new(move |_| match source.get() {
            (Some(id), _) => leptos::task::spawn_local(clone_into(form, id)),
            (None, hash) => {
                if let Some(draft) = hash.strip_prefix(routes::DRAFT_FRAGMENT) {
                    open_draft(form, &routes::decode_component(draft));
                }
            }
        });
    }
    let navigate = use_navigate();
    view! { <section class="page form-page">{job_form(form, navigate)}</section> }
}

/// Fills the form from job `id`.
async fn clone_into(form: JobForm, id: String) {
    form.notice.set(Some(format!("Loading job {id} to clone…")));
    match api::job(&id).await {
        Ok(job) => {
            form.load(FormState::for_clone(&job));
            form.notice.set(Some(format!(
                "Cloned from {id}. Secret values and the registry password are never copied: type the password again if the image needs one."
            )));
        }
        Err(failure) => {
            form.notice.set(None);
            form.banner.set(Some(failure));
        }
    }
}

/// Fills the form from a shared draft's JSON.
fn open_draft(form: JobForm, json: &str) {
    form.notice.set(Some(match form.import(json) {
        Ok(()) => "This form was shared as a draft: review every field, then create the job. Registry passwords are never shared.".into(),
        Err(message) => format!("The draft link is damaged, so the form starts empty. {message}"),
    }));
}

/// Loads what the rules and defaults need from the server.
async fn load_context(form: JobForm) {
    let shapes = api::shapes().await;
    let node_groups = api::node_groups().await;
    // Without the secrets list, references cannot be checked here; the
    // server still checks them.
    let secrets = api::secrets().await.unwrap_or_default();
    let me = api::me().await.ok();
    let user = me.as_ref().map(|w| w.current_user.clone()).unwrap_or_default();
    // Who may see each secret, next to its name in the list: a public one is
    // a choice its owner made, and worth seeing before using it.
    form.secret_labels.set(
        secrets
            .iter()
            .map(|s| {
                let label = match s.visibility {
                    Some(Visibility::Public) if s.owner != user => format!("public, {}'s", s.owner),
                    Some(Visibility::Public) => "public".to_string(),
                    _ => "private".to_string(),
                };
                (s.name.clone(), label)
            })
            .collect(),
    );
    let mut secret_names: Vec<String> = secrets.into_iter().map(|s| s.name).collect();
    secret_names.dedup();
    let log_default = me.as_ref().map(|w| w.log_collection_default);
    // What the executor needs (a command in process mode, …): checked here
    // as the server checks it, so the form never sends what it refuses.
    let requirements = me.map(|w| w.job_requirements).unwrap_or_default();
    match (shapes, node_groups) {
        (Ok(shapes), Ok(node_groups)) => {
            // Image pull secret names are checked by the server, whose 422
            // lands on the field; the form does not load them.
            let context =
                ValidationContext { shapes, node_groups, secret_names, requirements, image_pull_secret_names: None };
            form.set_context(context, log_default)
        }
        (Err(failure), _) | (_, Err(failure)) => form.banner.set(Some(failure)),
    }
}

/// The form, with everything it shows around it.
pub fn job_form(form: JobForm, navigate: impl Fn(&str) + Clone + 'static) -> AnyView {
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        form.submit();
    };
    // The answer: the new job's page, or the failure on the form.
    Effect::new(move |_| match form.create.value().get() {
        Some(Ok(created)) => navigate(&routes::job(created.id())),
        Some(Err(failure)) => form.show_failure(failure),
        None => {}
    });
    let sections = LAYOUT.iter().map(|section| section_view(form, section)).collect_view();
    let count = move || form.problem_count();
    let other = move || {
        let mut other = form.problems.with(|p| p.other.clone());
        other.extend(form.server.with(|p| p.other.clone()));
        other
    };
    let secret_options = move || {
        form.secret_labels.with(|secrets| {
            secrets
                .iter()
                .map(|(name, label)| view! { <option value=name.clone() label=label.clone()></option> })
                .collect_view()
        })
    };
    view! {
        <div class="page-head">
            <h1>"New job"</h1>
        </div>
        {move || form.notice.get().map(|n| view! { <p class="banner note" role="status">{n}</p> })}
        {move || form.banner.get().map(failure_view)}
        <div id=OTHER_PROBLEMS_ID tabindex="-1" class="problems" role="alert">
            {move || {
                (form.show_all.get() && count() > 0).then(|| {
                    let n = count();
                    view! {
                        <div class="banner error">
                            <p>{format!("{n} {} to fix before the job can be created.", if n == 1 { "problem" } else { "problems" })}</p>
                            <ul>{other().into_iter().map(|m| view! { <li class="mono">{m}</li> }).collect_view()}</ul>
                        </div>
                    }
                })
            }}
        </div>
        <form class="job-form" novalidate on:submit=on_submit>
            {sections}
            <div class="form-actions">
                <button type="submit" class="primary" disabled=move || form.busy()>
                    {move || if form.busy() { "Creating…" } else { "Create job" }}
                </button>
                <span class="status" aria-live="polite">
                    {move || {
                        let n = count();
                        match (form.show_all.get(), n) {
                            (_, 0) => String::new(),
                            (false, _) => format!("{n} required or invalid {}", if n == 1 { "field" } else { "fields" }),
                            (true, 1) => "1 problem remains".to_string(),
                            (true, _) => format!("{n} problems remain"),
                        }
                    }}
                </span>
            </div>
        </form>
        {tools(form)}
        <datalist id=SECRET_LIST_ID>{secret_options}</datalist>
    }
    .into_any()
}

fn section_view(form: JobForm, section: &'static Section) -> impl IntoView {
    let heading = format!("{}-heading", section.id);
    let items = section
        .items
        .iter()
        .map(|item| match *item {
            Item::Field(i) => field_view(form, i),
            Item::List(l) => list_view(form, l),
        })
        .collect_view();
    let labelled_by = heading.clone();
    view! {
        <section class="card form-section" aria-labelledby=labelled_by>
            <h2 id=heading>{section.title}</h2>
            <p class="help">{section.intro}</p>
            <div class="fields">{items}</div>
        </section>
    }
}

/// The shape the form has chosen, with its memory in MiB.
fn chosen_shape(form: JobForm) -> Option<(String, i64)> {
    let shape = form.state.with(|s| s.v[SHAPE].clone());
    form.context.with(|c| {
        let c = c.as_ref()?;
        let found = c.shapes.iter().find(|s| s.metadata.id.as_deref() == Some(shape.as_str()))?;
        Some((shape.clone(), found.spec.memory_in_mb?))
    })
}

fn field_view(form: JobForm, index: FieldId) -> AnyView {
    let def = index.def();
    let id = def.id;
    let many_workers = move || form.state.with(|s| s.v[WORKERS].trim().parse::<i64>().is_ok_and(|w| w > 1));
    let value = Signal::derive(move || match index {
        SHARED_MEMORY if !form.state.with(|s| s.shared_memory_typed) => {
            chosen_shape(form).map(|(_, memory)| shared_memory_default_mib(memory).to_string()).unwrap_or_default()
        }
        COMPLETIONS | PARALLELISM if many_workers() => form.state.with(|s| s.v[WORKERS].trim().to_string()),
        _ => form.state.with(|s| s.v[index].clone()),
    });
    let default = Signal::derive(move || match index {
        SHAPE => form
            .context
            .with(|c| c.as_ref().and_then(|c| c.shapes.first()).and_then(|s| s.metadata.id.clone()))
            .map(|first| format!("{first}, the workspace's first shape"))
            .unwrap_or_else(|| "the workspace's first shape".into()),
        SHARED_MEMORY => match chosen_shape(form) {
            Some((shape, memory)) => format!(
                "{} for {shape} ({} of memory); an emptied field uses the default",
                mib_text(shared_memory_default_mib(memory)),
                gib_text(memory)
            ),
            None => "from the memory of the resource shape".into(),
        },
        LOG_COLLECTION => log_default_text(form),
        // In process mode the server runs the command on its own machine:
        // say so where the image is typed, not after the job failed to use it.
        IMAGE if form.context.with(|c| c.as_ref().is_some_and(|c| c.requirements.image_ignored)) => {
            "not used on this server: it runs the command as a process on its own machine, without the image, \
             its ports or its storage mounts"
                .into()
        }
        COMPLETIONS | PARALLELISM if many_workers() => "the number of workers".into(),
        _ => def.default.to_string(),
    });
    let options = Signal::derive(move || options_for(form, index));
    let set = Callback::new(move |text: String| {
        form.edit(id, |s| {
            s.v[index] = text;
            // Once typed into, the field is the user's: emptied, it stays
            // empty and the job leaves the size to the shape's default.
            if index == SHARED_MEMORY {
                s.shared_memory_typed = true;
            }
        })
    });
    let disabled = Signal::derive(move || matches!(index, COMPLETIONS | PARALLELISM) && many_workers());
    field(FieldProps {
        id,
        label: def.label,
        help: def.help,
        default,
        control: def.control,
        options,
        value,
        set,
        touch: Callback::new(move |_| form.touch(id)),
        error: Signal::derive(move || form.error_for(id)),
        disabled,
        placeholder: def.placeholder,
    })
}

fn log_default_text(form: JobForm) -> String {
    match form.log_default.get() {
        Some(true) => "the workspace setting (on)".into(),
        Some(false) => "the workspace setting (off)".into(),
        None => "the workspace setting".into(),
    }
}

/// The choices of a select or check-box field; a value the form holds that
/// is not among them (from a clone or an import) is kept, so its problem can
/// show.
fn options_for(form: JobForm, index: FieldId) -> Options {
    let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
    let mut options: Options = match index {
        PRIORITY => priority_options(),
        LOG_COLLECTION => {
            vec![(String::new(), format!("Follow {}", log_default_text(form))), pair("on", "On"), pair("off", "Off")]
        }
        VISIBILITY => vec![pair("public", "Public"), pair("private", "Private")],
        SHAPE => form.context.with(|c| {
            c.iter()
                .flat_map(|c| &c.shapes)
                .filter_map(|s| {
                    let id = s.metadata.id.clone()?;
                    let text = match &s.spec.description {
                        Some(d) => format!("{id} — {d}"),
                        None => id.clone(),
                    };
                    Some((id, text))
                })
                .collect()
        }),
        NODE_GROUPS => form.context.with(|c| {
            c.iter()
                .flat_map(|c| &c.node_groups)
                .filter_map(|g| {
                    let id = g.metadata.id.clone()?;
                    let cap = &g.spec.capacity;
                    let text = format!(
                        "{id} — {} CPU, {} memory, {} GPU; {} queued",
                        cpu_text(cap.cpu),
                        gib_text(cap.memory_in_mb),
                        cap.gpu,
                        g.status.queued_jobs
                    );
                    Some((id, text))
                })
                .collect()
        }),
        NODES => {
            let groups = form.state.with(|s| split_names(&s.v[NODE_GROUPS]));
            form.context.with(|c| {
                c.iter()
                    .flat_map(|c| &c.node_groups)
                    .filter(|g| groups.is_empty() || g.metadata.id.as_ref().is_some_and(|id| groups.contains(id)))
                    .flat_map(|g| &g.spec.nodes)
                    .map(|n| (n.name.clone(), n.name.clone()))
                    .collect()
            })
        }
        _ => Vec::new(),
    };
    let held = form.state.with(|s| s.v[index].clone());
    let held: Vec<String> = if def_is_choices(index) { split_names(&held) } else { vec![held] };
    for value in held {
        if !value.is_empty() && !options.iter().any(|(k, _)| *k == value) {
            options.push((value.clone(), format!("{value} (not in this workspace)")));
        }
    }
    options
}

fn def_is_choices(index: FieldId) -> bool {
    index.def().control == Control::Choices
}

fn list_view(form: JobForm, l: ListId) -> AnyView {
    let def = l.def();
    let prefix = format!("{}-", def.id);
    let clear_server = move |form: JobForm| {
        let prefix = prefix.clone();
        form.server.update(|s| s.by_input.retain(|id, _| !id.starts_with(&prefix)));
    };
    let clear_on_add = clear_server.clone();
    list_editor(ListProps {
        id: def.id,
        label: def.label,
        help: def.help,
        default: "none",
        add_label: def.add_label,
        columns: def.columns,
        len: Memo::new(move |_| form.state.with(|s| s.lists[l].len())),
        cell: Callback::new(move |(row, col): (usize, usize)| {
            form.state.with(|s| s.lists[l].get(row).map(|r| r[col].clone()).unwrap_or_default())
        }),
        cell_label: Callback::new(move |(row, col): (usize, usize)| {
            (l == ENVS && col == 2 && form.state.with(|s| s.lists[l].get(row).is_some_and(|r| r[1] == "secret")))
                .then_some("Secret")
        }),
        cell_list: Callback::new(move |(row, col): (usize, usize)| {
            (l == ENVS && col == 2 && form.state.with(|s| s.lists[l].get(row).is_some_and(|r| r[1] == "secret")))
                .then_some(SECRET_LIST_ID)
        }),
        set: Callback::new(move |(row, col, text): (usize, usize, String)| {
            let id = Target::Cell(l, row, col).input_id();
            form.edit(&id, |s| {
                if let Some(r) = s.lists[l].get_mut(row) {
                    r[col] = text;
                }
            });
        }),
        add: Callback::new(move |_| {
            form.state.update(|s| s.add_row(l));
            clear_on_add(form);
        }),
        remove: Callback::new(move |row: usize| {
            form.state.update(|s| {
                if row < s.lists[l].len() {
                    s.lists[l].remove(row);
                }
            });
            // Rows after the removed one moved up: their ids now name other
            // rows, so what was touched and what the server said no longer
            // applies to them.
            let prefix = format!("{}-", l.def().id);
            form.touched.update(|t| t.retain(|id| !id.starts_with(&prefix)));
            clear_server(form);
        }),
        touch: Callback::new(move |(row, col): (usize, usize)| form.touch(&Target::Cell(l, row, col).input_id())),
        error: Callback::new(move |(row, col): (usize, usize)| form.error_for(&Target::Cell(l, row, col).input_id())),
        list_error: Signal::derive(move || form.error_for(&Target::List(l).input_id())),
    })
}

/// Copies `text` to the clipboard and shows it under `title`.
fn copy_out(form: JobForm, title: &'static str, text: String) {
    form.output.set(Some((title, text.clone())));
    if let Some(window) = web_sys::window() {
        let _ = window.navigator().clipboard().write_text(&text);
    }
}

/// Copy as, share and import.
fn tools(form: JobForm) -> impl IntoView {
    let copy_lep = move |_| {
        let job = form.state.with_untracked(FormState::shareable_job);
        copy_out(form, "lep command", export::lep_command(&job));
    };
    let copy_json = move |_| {
        let job = form.state.with_untracked(FormState::shareable_job);
        let json = api::to_pretty_json(&job).unwrap_or_default();
        copy_out(form, "JSON spec", json);
    };
    let share = move |_| {
        let origin = web_sys::window().and_then(|w| w.location().origin().ok()).unwrap_or_default();
        copy_out(form, "Draft link", format!("{origin}{}", form.draft_link()));
    };
    let import_text = RwSignal::new(String::new());
    let import_error = RwSignal::new(None::<String>);
    let run_import = move |text: String| match form.import(&text) {
        Ok(()) => {
            import_error.set(None);
            form.notice.set(Some("Imported the JSON spec: every problem in it is marked below.".into()));
            form.focus_first_problem();
        }
        Err(message) => import_error.set(Some(message)),
    };
    let on_import = move |_| run_import(import_text.get_untracked());
    let on_file = move |ev: web_sys::Event| {
        let file = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok())
            .and_then(|input| input.files())
            .and_then(|files| files.get(0));
        if let Some(file) = file {
            leptos::task::spawn_local(async move {
                match wasm_bindgen_futures::JsFuture::from(file.text()).await {
                    Ok(text) => {
                        let text = text.as_string().unwrap_or_default();
                        import_text.set(text.clone());
                        run_import(text);
                    }
                    Err(_) => import_error.set(Some("The file could not be read.".into())),
                }
            });
        }
    };
    view! {
        <section class="card tools" aria-labelledby="tools-heading">
            <h2 id="tools-heading">"Copy, share or import"</h2>
            <p class="help">"Copies leave out the registry password."</p>
            <div class="tool-buttons">
                <button type="button" on:click=copy_lep>"Copy as lep command"</button>
                <button type="button" on:click=copy_json>"Copy JSON spec"</button>
                <button type="button" on:click=share>"Share draft link"</button>
            </div>
            {move || form.output.get().map(|(title, text)| view! {
                <div class="output">
                    <label for="output-text">{title}" (copied to the clipboard)"</label>
                    <textarea id="output-text" class="mono" readonly rows="8" prop:value=text></textarea>
                </div>
            })}
            <details class="import">
                <summary>"Import a JSON spec"</summary>
                <label for="import-text">"JSON spec"</label>
                <textarea id="import-text" class="mono" rows="6" spellcheck="false"
                    aria-describedby="import-help import-error"
                    placeholder=r#"{"metadata": {"name": "train"}, "spec": {…}}"#
                    prop:value=move || import_text.get()
                    on:input=move |ev| import_text.set(crate::components::field::event_value(&ev))></textarea>
                <p id="import-help" class="help">
                    "Paste a job as the API or the JSON spec copy has it, or a spec as lep job create -f takes it, or choose a file."
                </p>
                <p id="import-error" class="field-error" role="alert">{move || import_error.get()}</p>
                <div class="tool-buttons">
                    <button type="button" on:click=on_import>"Import"</button>
                    <label class="file">
                        "Choose a file" <input type="file" accept=".json,application/json" on:change=on_file/>
                    </label>
                </div>
            </details>
        </section>
    }
}
