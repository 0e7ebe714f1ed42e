//! The job page's actions: stop, start, delete (after a confirmation),
//! clone, save as template, copy link, and "Notify me" (the notifications
//! page's rule form for this job). A button is enabled only when its action
//! makes sense in the job's current state and the signed-in user may take
//! it; the server checks both again.

use std::rc::Rc;

use jobdeck_api::{JobState, LeptonJob, Role};
use leptos::prelude::*;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::{Element, HtmlDialogElement};

use crate::api::{self, ApiFailure, JobJson};
use crate::components::api_error::use_sign_in_again;
use crate::components::dom;
use crate::router::use_navigate;
use crate::routes;

/// Which state-changing actions a job's state allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Possible {
    pub stop: bool,
    pub start: bool,
    pub delete: bool,
}

/// The rule behind the buttons. `stopped` is the job's `spec.stopped`: once
/// a stop was asked for, stopping again makes no sense even before the state
/// catches up.
pub fn possible_actions(state: Option<JobState>, stopped: bool) -> Possible {
    use JobState::*;
    let state = state.unwrap_or(Unknown);
    Possible {
        stop: !stopped
            && matches!(state, Queueing | Awaiting | Starting | Running | Restarting | PendingRetry | Unknown),
        start: state == Stopped,
        delete: !matches!(state, Deleting | Deleted),
    }
}

/// Whether the signed-in user (name and role) may stop, start or delete
/// `job`: the contract's rule, which the server applies.
pub fn may_act(user: Option<(&str, Role)>, job: &LeptonJob) -> bool {
    let (Some((user, role)), Some(creator)) = (user, job.metadata.created_by.as_deref()) else { return false };
    jobdeck_api::may_change_job(user, role, creator, job.metadata.visibility.unwrap_or_default())
}

/// What a button asks of the server.
#[derive(Clone, Copy)]
enum Command {
    SetStopped(bool),
    Delete,
}

/// What the actions show of the job and the signed-in user.
#[derive(Clone, Default, PartialEq)]
struct Facts {
    id: String,
    name: String,
    owner: Option<String>,
    allowed: bool,
    /// Whether the signed-in user is a viewer, whom the note tells why.
    viewer: bool,
    possible: Possible,
}

impl Facts {
    fn of(job: Option<&LeptonJob>, user: Option<(&str, Role)>) -> Facts {
        let Some(job) = job else { return Facts::default() };
        Facts {
            id: job.id().to_string(),
            name: job.metadata.name.clone().unwrap_or_else(|| job.id().to_string()),
            owner: job.metadata.created_by.clone(),
            allowed: may_act(user, job),
            viewer: user.is_some_and(|(_, role)| role == Role::Viewer),
            possible: possible_actions(job.state(), job.spec.stopped == Some(true)),
        }
    }
}

/// The elements the actions change.
struct Parts {
    host: Element,
    stop: Element,
    start: Element,
    delete: Element,
    clone: Element,
    /// The clone's link that opens the form at "Save as a template".
    template: Element,
    notify: Element,
    note: Element,
    problem: Element,
    dialog: HtmlDialogElement,
    title: Element,
    confirm: Element,
}

impl Parts {
    /// Makes the buttons, the note under them, the failure banner and the
    /// delete confirmation in `host`.
    fn build(host: &Element) -> Parts {
        let row = dom::child(host, "div", "actions", "");
        dom::set(&row, "role", "group");
        dom::set(&row, "aria-label", "Job actions");
        let button = |parent: &Element, class: &str, words: &str| {
            let button = dom::child(parent, "button", class, words);
            dom::set(&button, "type", "button");
            button
        };
        let stop = button(&row, "stop", "Stop");
        let start = button(&row, "start", "Start");
        let delete = button(&row, "delete danger", "Delete…");
        // A viewer creates no jobs: the style sheet hides the clone for them.
        let clone = dom::child(&row, "a", "button clone needs-member", "Clone");
        let template = dom::child(&row, "a", "button save-template needs-member", "Save as template");
        button(&row, "copy-link", "Copy link");
        // The bell: a rule for this job's transitions, on the notifications
        // page (`?job=` fills the rule's job).
        let notify = dom::child(&row, "a", "button notify", "Notify me…");
        let note = dom::child(host, "p", "action-note", "");
        dom::set(&note, "role", "status");
        let problem = dom::child(host, "div", "banner error", "");
        dom::set(&problem, "role", "alert");
        let dialog = dom::child(host, "dialog", "confirm", "");
        dom::set(&dialog, "aria-labelledby", "delete-title");
        let title = dom::child(&dialog, "h2", "", "");
        dom::set(&title, "id", "delete-title");
        dom::child(
            &dialog,
            "p",
            "",
            "This stops its replicas and removes the job with its logs and events. It cannot be undone.",
        );
        let buttons = dom::child(&dialog, "div", "dialog-buttons", "");
        dom::set(&button(&buttons, "cancel", "Cancel"), "autofocus", "");
        let confirm = button(&buttons, "danger confirm-delete", "Delete job");
        Parts {
            host: host.clone(),
            stop,
            start,
            delete,
            clone,
            template,
            notify,
            note,
            problem,
            dialog: dialog.unchecked_into(),
            title,
            confirm,
        }
    }
}

/// The actions' state outside the reactive graph, drawn after each change.
#[derive(Default)]
struct Local {
    facts: Facts,
    busy: bool,
    problem: Option<String>,
    notice: String,
    parts: Option<Parts>,
    /// The one listener of the buttons, kept for as long as they are.
    listener: Option<Closure<dyn Fn(web_sys::Event)>>,
    /// Called with the job as the server answered an action.
    on_update: Option<Callback<JobJson>>,
    /// Opens another page (the list, after a delete).
    navigate: Option<Rc<dyn Fn(&str)>>,
    /// Sends the user to sign in again.
    sign_in_again: Option<Rc<dyn Fn()>>,
}

impl Local {
    fn show(&self) {
        let Some(p) = &self.parts else { return };
        let f = &self.facts;
        for (button, possible) in
            [(&p.stop, f.possible.stop), (&p.start, f.possible.start), (&p.delete, f.possible.delete)]
        {
            let _ = button.toggle_attribute_with_force("disabled", self.busy || !f.allowed || !possible);
        }
        let _ = p.confirm.toggle_attribute_with_force("disabled", self.busy);
        dom::set(&p.clone, "href", &routes::clone_job(&f.id));
        dom::set(&p.template, "href", &routes::save_as_template(&f.id));
        dom::set(&p.notify, "href", &routes::notify_about(&f.id));
        let who = match (&f.owner, f.allowed, f.viewer) {
            (_, true, _) => String::new(),
            (_, false, true) => "Viewers cannot stop, start, delete or clone jobs.".to_string(),
            (Some(owner), false, false) => format!("Only {owner} can stop, start or delete this job."),
            (None, false, false) => "You cannot stop, start or delete this job.".to_string(),
        };
        p.note.set_text_content(Some(&format!("{who} {}", self.notice)));
        let _ = p.problem.toggle_attribute_with_force("hidden", self.problem.is_none());
        p.problem.set_text_content(self.problem.as_deref());
        p.title.set_text_content(Some(&format!("Delete {}?", f.name)));
    }
}

impl Drop for Local {
    /// The buttons are gone: nothing may call their listener after.
    fn drop(&mut self) {
        if let (Some(listener), Some(parts)) = (&self.listener, &self.parts) {
            let _ = parts.host.remove_event_listener_with_callback("click", listener.as_ref().unchecked_ref());
        }
    }
}

/// The actions' state, shared by their listener and their requests
/// (`dom::Part`).
type Actions = dom::Part<Local>;

/// The buttons, drawn straight into the page (`components/dom.rs`), with
/// one listener for all of them: as typed views with a Leptos action they
/// were the largest part of the job page's own code (docs/measurements.md,
/// "The job page's parts drawn").
#[component]
pub fn JobActions(
    /// The job as last read (`None` before it is).
    #[prop(into)]
    job: Signal<Option<LeptonJob>>,
    /// The signed-in user's name and role, once the server has said.
    #[prop(into)]
    user: Signal<Option<(String, Role)>>,
    /// Called with the job as the server answered an action.
    #[prop(into)]
    on_update: Callback<JobJson>,
) -> impl IntoView {
    let mut local = Local::default();
    local.on_update = Some(on_update);
    local.navigate = Some(Rc::new(use_navigate()));
    local.sign_in_again = Some(Rc::new(use_sign_in_again()));
    let actions = Actions::new(local);
    actions.end_with_owner();
    let host = NodeRef::<leptos::html::Div>::new();
    dom::draw_into(
        host,
        Box::new(move |host| {
            let facts = job.with(|j| Facts::of(j.as_ref(), user.read().as_ref().map(|(n, r)| (n.as_str(), *r))));
            actions.change(|l| {
                if l.parts.is_none() {
                    let listener = actions.listener(on_click);
                    let _ = host.add_event_listener_with_callback("click", listener.as_ref().unchecked_ref());
                    l.parts = Some(Parts::build(host));
                    l.listener = Some(listener);
                }
                l.facts = facts;
                l.show();
            });
        }),
    );
    view! { <div node_ref=host></div> }
}

/// What a click on one of the buttons does.
fn on_click(actions: &Actions, ev: web_sys::Event) {
    let Some(button) = ev.target().and_then(|t| t.dyn_into::<Element>().ok()).and_then(|t| t.closest("button").ok()?)
    else {
        return;
    };
    let is = |class: &str| button.class_list().contains(class);
    let command = if is("stop") {
        Command::SetStopped(true)
    } else if is("start") {
        Command::SetStopped(false)
    } else if is("confirm-delete") {
        Command::Delete
    } else if is("copy-link") {
        return copy_link(actions);
    } else {
        actions.change(|l| {
            let Some(parts) = &l.parts else { return };
            if is("delete") {
                l.problem = None;
                let _ = parts.dialog.show_modal();
            } else if is("cancel") {
                parts.dialog.close();
            }
            l.show();
        });
        return;
    };
    let Some(id) = actions.change(|l| {
        l.problem = None;
        l.busy = true;
        l.show();
        l.facts.id.clone()
    }) else {
        return;
    };
    let actions = actions.clone();
    leptos::task::spawn_local(async move {
        let answer = match command {
            Command::SetStopped(stopped) => api::set_job_stopped(&id, stopped).await.map(Some),
            Command::Delete => api::delete_job(&id).await.map(|()| None),
        };
        // The page may have gone while the server answered.
        let Some((on_update, navigate, sign_in_again)) = actions.change(|l| {
            l.busy = false;
            (l.on_update, l.navigate.clone(), l.sign_in_again.clone())
        }) else {
            return;
        };
        match answer {
            Ok(Some(updated)) => {
                if let Some(on_update) = on_update {
                    on_update.run(updated);
                }
            }
            // Deleted: the job is gone, and so is its page.
            Ok(None) => {
                if let Some(navigate) = navigate {
                    navigate(routes::JOBS);
                }
            }
            Err(ApiFailure::Unauthorized) => {
                if let Some(sign_in_again) = sign_in_again {
                    sign_in_again();
                }
            }
            Err(failure) => {
                actions.change(|l| {
                    if let Some(parts) = &l.parts {
                        parts.dialog.close();
                    }
                    l.problem = Some(failure.to_string());
                });
            }
        }
        actions.change(|l| l.show());
    });
}

/// Copies the page's address, or says where copying is not allowed.
fn copy_link(actions: &Actions) {
    let Some(window) = web_sys::window() else { return };
    let href = window.location().href().unwrap_or_default();
    let navigator = window.navigator();
    let refused = format!("Copying is not allowed here; the link is {href}");
    // Outside a secure context the browser offers no clipboard at all.
    let has_clipboard =
        js_sys::Reflect::get(&navigator, &"clipboard".into()).map(|c| !c.is_undefined()).unwrap_or(false);
    if !has_clipboard {
        actions.change(|l| {
            l.notice = refused;
            l.show();
        });
        return;
    }
    let promise = navigator.clipboard().write_text(&href);
    let actions = actions.clone();
    leptos::task::spawn_local(async move {
        let notice = match wasm_bindgen_futures::JsFuture::from(promise).await {
            Ok(_) => "Link copied.".to_string(),
            Err(_) => refused,
        };
        actions.change(|l| {
            l.notice = notice;
            l.show();
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{job, mount, ME};
    use jobdeck_api::Visibility;

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn the_state_decides_what_is_possible() {
        use JobState::*;
        // (state, stop asked for, stop, start, delete)
        let table = [
            (Queueing, false, true, false, true),
            (Starting, false, true, false, true),
            (Running, false, true, false, true),
            (Running, true, false, false, true),
            (PendingRetry, false, true, false, true),
            (Stopping, true, false, false, true),
            (Stopped, true, false, true, true),
            (Completed, false, false, false, true),
            (Failed, false, false, false, true),
            (Deleting, false, false, false, false),
        ];
        for (state, stopped, stop, start, delete) in table {
            assert_eq!(
                possible_actions(Some(state), stopped),
                Possible { stop, start, delete },
                "{state:?} stopped={stopped}"
            );
        }
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn the_creator_may_act_and_an_admin_on_public_jobs_and_a_viewer_never() {
        let mut private = job("a-1", "a", "alice", JobState::Running);
        private.metadata.visibility = Some(Visibility::Private);
        let mut public = private.clone();
        public.metadata.visibility = Some(Visibility::Public);
        // (user, job, may act)
        let table = [
            (Some(("alice", Role::Member)), &private, true),
            (Some(("alice", Role::Member)), &public, true),
            (Some(("alice", Role::Viewer)), &public, false),
            (Some(("bob", Role::Member)), &public, false),
            (Some(("root", Role::Admin)), &public, true),
            (Some(("root", Role::Admin)), &private, false),
            // A name is no role: a member called "admin" is a member.
            (Some(("admin", Role::Member)), &public, false),
            (None, &public, false),
        ];
        for (user, job, expected) in table {
            assert_eq!(may_act(user, job), expected, "{user:?} on {:?}", job.metadata.visibility);
        }
    }

    fn enabled(host: &web_sys::Element) -> Vec<String> {
        ["stop", "start", "delete"]
            .into_iter()
            .filter(|class| {
                let button = host.query_selector(&format!("button.{class}")).unwrap().unwrap();
                !button.has_attribute("disabled")
            })
            .map(String::from)
            .collect()
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    async fn the_buttons_follow_the_state_and_the_user() {
        let current = RwSignal::new(Some(job("train-1", "train", ME, JobState::Running)));
        let host = mount(
            move || view! { <JobActions job=current user=Signal::stored(Some((ME.to_string(), Role::Member))) on_update=|_| ()/> },
        );
        crate::components::live::sleep(0).await;
        assert_eq!(enabled(&host), ["stop", "delete"]);
        let clone = host.query_selector("a.clone").unwrap().unwrap();
        assert_eq!(clone.get_attribute("href").as_deref(), Some("/jobs/new?clone=train-1"));
        let template = host.query_selector("a.save-template").unwrap().unwrap();
        assert_eq!(template.get_attribute("href").as_deref(), Some("/jobs/new?clone=train-1&save=template"));

        current.update(|j| {
            let j = j.as_mut().unwrap();
            j.spec.stopped = Some(true);
            j.status.as_mut().unwrap().state = Some(JobState::Stopped);
        });
        crate::components::live::sleep(0).await;
        assert_eq!(enabled(&host), ["start", "delete"]);

        let theirs = job("eval-1", "eval", "bob", JobState::Running);
        let host = mount(
            move || view! { <JobActions job=Signal::stored(Some(theirs.clone())) user=Signal::stored(Some((ME.to_string(), Role::Member))) on_update=|_| ()/> },
        );
        crate::components::live::sleep(0).await;
        assert!(enabled(&host).is_empty());
        assert!(host.text_content().unwrap().contains("Only bob can stop, start or delete this job."));
        let copy = host.query_selector("button.copy-link").unwrap().unwrap();
        assert!(!copy.has_attribute("disabled"), "anyone who sees the job can share it");

        // A viewer's own name on a job changes nothing: no action, no clone.
        let seen = job("eval-2", "eval", ME, JobState::Running);
        let viewer = Signal::stored(Some((ME.to_string(), Role::Viewer)));
        let host =
            mount(move || view! { <JobActions job=Signal::stored(Some(seen.clone())) user=viewer on_update=|_| ()/> });
        crate::components::live::sleep(0).await;
        assert!(enabled(&host).is_empty());
        assert!(host.text_content().unwrap().contains("Viewers cannot stop, start, delete or clone jobs."));
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    async fn delete_asks_first() {
        let current = job("train-2", "train", ME, JobState::Failed);
        let host = mount(
            move || view! { <JobActions job=Signal::stored(Some(current.clone())) user=Signal::stored(Some((ME.to_string(), Role::Member))) on_update=|_| ()/> },
        );
        crate::components::live::sleep(0).await;
        let dialog: web_sys::HtmlDialogElement =
            wasm_bindgen::JsCast::unchecked_into(host.query_selector("dialog").unwrap().unwrap());
        assert!(!dialog.open());
        crate::fixtures::click(&host, "button.delete");
        assert!(dialog.open(), "the confirmation opens");
        assert!(dialog.text_content().unwrap().contains("Delete train?"));
        crate::fixtures::click(&host, "dialog button.cancel");
        assert!(!dialog.open(), "cancel closes it and nothing is deleted");
    }
}
