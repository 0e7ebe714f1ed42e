//! The create-job form: `/jobs/new`, `/jobs/new?clone=<id>` (filled from an
//! existing job; `&save=template` then opens "Save as a template"),
//! `/jobs/new?template=<id>` (the templates' list open at one,
//! `templates.rs`) and `/jobs/new#draft=…` (a shared, unsubmitted
//! draft).
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

mod clone;
mod events;
pub mod export;
pub mod field;
pub mod form;
mod imports;
pub mod list_editor;
mod on_demand;
mod parts;
mod state;
mod templates;
#[cfg(test)]
mod tests;

use std::rc::Rc;

use jobdeck_api::{
    choice_words, chosen_offer, offers, requirement_words, shared_memory_default_mib, validate_job, validate_job_in,
    FieldErrors, JobSpec, LeptonJob, ResourceRequirements, ValidationContext, Visibility,
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

use clone::{clone_tool, CloneRequest, ClonedFrom};
use events::on_event;
use form::*;
use imports::{import_tool, ImportFile, IMPORT_FORMATS, IMPORT_FORMAT_ID};
use on_demand::{job_rules, read_job, write_job, Reading, Rules};
pub use on_demand::{parse_job, JobSource, JobText, PartFailed};
use parts::{Parts, Shown};
use state::Core;
use templates::{template_tool, TemplateAction};

/// The id of the list of problems that have no input of their own.
const OTHER_PROBLEMS_ID: &str = "form-problems";
/// The id of the datalist of secret names.
const SECRET_LIST_ID: &str = "secret-names";
/// The ids of what the template part (`templates.rs`) draws into and reads:
/// the templates' list, and the name and the outcome of a save.
const TEMPLATE_PICKER_ID: &str = "template-picker";
const TEMPLATE_NAME_ID: &str = "template-name";
const TEMPLATE_SAVE_STATUS_ID: &str = "template-save-status";

/// The element of the page with `id`: what the template and import parts
/// draw into, found when they are used.
fn by_id(id: &str) -> Option<Element> {
    web_sys::window()?.document()?.get_element_by_id(id)
}

/// The form: its state and drawing, shared by the page, its listener and
/// its requests (`dom::Part`).
#[derive(Clone)]
pub struct JobForm(dom::Part<Core>);

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
        JobForm(dom::Part::new(core))
    }

    /// Changes the form and draws the result. An event the drawing itself
    /// causes (a removed row's focused button blurs) is handled after it.
    fn change<R>(&self, change: impl FnOnce(&mut Core) -> R) -> Option<R> {
        self.0.change(|core| {
            let result = change(core);
            core.draw();
            result
        })
    }

    /// Reads what the form holds.
    pub fn with_state<R: Default>(&self, read: impl FnOnce(&FormState) -> R) -> R {
        self.0.read(|core| read(&core.state)).unwrap_or_default()
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
    fn take_context(&self, answers: api::FormAnswers) {
        let me = answers.workspace.ok();
        let secrets = answers.secrets.unwrap_or_default();
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
        if me.as_ref().is_some_and(|w| w.current_user_role == jobdeck_api::Role::Viewer) {
            self.change(|c| {
                c.notice = Some(
                    "You are a viewer in this workspace: you can read jobs, not create them. Ask an admin for the member role."
                        .into(),
                )
            });
        }
        // What the executor needs (a command in process mode, …): checked
        // here as the server checks it, so the form never sends what it
        // refuses.
        let requirements = me.map(|w| w.job_requirements).unwrap_or_default();
        match (answers.shapes, answers.node_groups) {
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
        let sign_in_again = self.0.read(|c| c.sign_in_again.clone()).flatten();
        if let Some(sign_in_again) = sign_in_again {
            sign_in_again();
        }
    }

    /// What to do when the server no longer takes the token.
    pub fn when_signed_out(&self, sign_in_again: impl Fn() + 'static) {
        self.0.change(|c| c.sign_in_again = Some(Rc::new(sign_in_again)));
    }

    /// Moves the focus to the first problem in the order the form shows.
    pub fn focus_first_problem(&self) {
        let form = self.clone();
        request_animation_frame(move || {
            let Some((other, first)) = form.0.read(|c| {
                let other = !c.problems.other.is_empty() || !c.server.other.is_empty();
                let has = |id: &String| c.server.by_input.contains_key(id) || c.problems.by_input.contains_key(id);
                (other, input_order(&c.state).into_iter().find(has))
            }) else {
                return;
            };
            match (other, first) {
                (false, Some(id)) => focus(&id),
                _ => focus(OTHER_PROBLEMS_ID),
            }
        });
    }

    /// A link to this form as it is now, without the registry password.
    pub async fn draft_link(&self) -> Result<String, PartFailed> {
        Ok(routes::draft(&self.shared_text(JobText::Json, |_| {}).await?))
    }

    /// The form's job as a teammate may see it (without the registry
    /// password), changed by `prepare`, written as `text`: a draft link, a
    /// copy, a template. The rules, which carry the conversion, are fetched
    /// first if they are not in yet.
    pub(crate) async fn shared_text(
        &self,
        text: JobText,
        prepare: impl FnOnce(&mut LeptonJob),
    ) -> Result<String, PartFailed> {
        self.rules_in().await;
        let mut job = self.0.read(|c| c.job(true)).flatten().ok_or_else(PartFailed::not_downloaded)?;
        prepare(&mut job);
        load!(write_job(job, text))
    }

    /// Fills the form from a job: a clone, or JSON text (an import or a
    /// draft), after which every problem shows.
    pub async fn fill(&self, source: JobSource) -> Result<(), String> {
        let show_all = matches!(source, JobSource::Text(_) | JobSource::Converted(_));
        self.rules_in().await;
        let state = load!(read_job(Reading::Job(source))).map_err(|failed| failed.0)?.unwrap_or_default();
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
            // Without the rules (their download failed) there is no job to
            // send; the next submit fetches them again.
            let Some(job) = c.job(false) else {
                c.banner = Some(PartFailed::not_downloaded().0);
                return Submit::Wait;
            };
            c.busy = true;
            Submit::Send(Box::new(job))
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
                    let navigate = form.0.read(Core::navigate_here).flatten();
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
        self.0.read(|c| c.rules.is_some()) == Some(true)
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
        let asked = self.0.change(|c| std::mem::replace(&mut c.rules_asked, true));
        if asked == Some(false) {
            let form = self.clone();
            leptos::task::spawn_local(async move { form.rules_in().await });
        }
    }

    /// Draws the form into `host` and listens to it there.
    fn mount(&self, host: &Element) {
        let listener = self.0.listener(on_event);
        self.change(|c| c.parts = Some(Parts::build(host, listener)));
    }
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
        type Source = (Option<String>, Option<String>, String, String);
        let seen: std::cell::RefCell<Option<Source>> = Default::default();
        let follow = RenderEffect::new(move |_| {
            let source = url.with(|u| (u.param("clone"), u.param("template"), u.hash.clone(), u.query.clone()));
            if seen.borrow().as_ref() == Some(&source) {
                return;
            }
            *seen.borrow_mut() = Some(source.clone());
            match source {
                (Some(id), _, _, query) => {
                    leptos::task::spawn_local(open_clone(filled.clone(), CloneRequest { id, query }))
                }
                (None, Some(id), _, _) => leptos::task::spawn_local(open_template(filled.clone(), id)),
                (None, None, hash, _) => {
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
    form.0.change(|c| c.navigate = Some(Rc::new(navigate)));
    // Drawn when the host is made, by a directive: a node reference and an
    // effect that waits for it were 2 KB more of the form's code.
    view! { <div class="page form-page" use:mount_form=form></div> }
}

/// Draws the form into its host (`job_form`'s directive).
fn mount_form(host: Element, form: JobForm) {
    if form.0.read(|c| c.parts.is_none()) == Some(true) {
        form.mount(&host);
    }
}

/// Fills the form from a job (`clone.rs`, in the job reader's split
/// point).
async fn open_clone(form: JobForm, request: CloneRequest) {
    if let Err(PartFailed(message)) = load!(read_job(Reading::Clone(form.clone(), request))) {
        form.change(|c| c.banner = Some(message));
    }
}

/// Opens the templates' list at template `id` (`?template=<id>`).
async fn open_template(form: JobForm, id: String) {
    if let Err(PartFailed(message)) = load!(read_job(Reading::Template(form.clone(), TemplateAction::Open(Some(id))))) {
        form.change(|c| c.banner = Some(message));
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
    form.take_context(api::form_answers().await);
}
