//! The job page's actions: stop, start, delete (after a confirmation),
//! clone and copy link. A button is enabled only when its action makes sense
//! in the job's current state and the signed-in user may take it; the server
//! checks both again.

use jobdeck_api::{JobState, LeptonJob, Visibility};
use leptos::prelude::*;

use crate::api::{self, ApiFailure};
use crate::components::api_error::use_sign_in_again;
use crate::router::use_navigate;
use crate::routes;

/// Which state-changing actions a job's state allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// The workspace administrator `jobdeck serve` creates.
pub const ADMIN_USER: &str = "admin";

/// Whether `user` may stop, start or delete `job`, as the server rules: its
/// creator, and the administrator for public jobs.
pub fn may_act(user: Option<&str>, job: &LeptonJob) -> bool {
    let Some(user) = user else { return false };
    job.metadata.created_by.as_deref() == Some(user)
        || (user == ADMIN_USER && job.metadata.visibility == Some(Visibility::Public))
}

/// What a button asks of the server.
#[derive(Clone, Copy)]
enum Command {
    SetStopped(bool),
    Delete,
}

#[component]
pub fn JobActions(
    /// The job as last read (`None` before it is).
    #[prop(into)]
    job: Signal<Option<LeptonJob>>,
    #[prop(into)] user: Signal<Option<String>>,
    /// Called with the job as the server answered an action.
    #[prop(into)]
    on_update: Callback<LeptonJob>,
) -> impl IntoView {
    // Stop, start and delete are one Leptos action: its `pending` is the
    // busy state, its answers arrive through `value` (one action and one
    // effect instead of two of each: less code in the job page's download).
    let command = Action::new_local(|(id, command): &(String, Command)| {
        let (id, command) = (id.clone(), *command);
        async move {
            match command {
                Command::SetStopped(stopped) => api::set_job_stopped(&id, stopped).await.map(Some),
                Command::Delete => api::delete_job(&id).await.map(|()| None),
            }
        }
    });
    let busy = move || command.pending().get();
    let problem = RwSignal::new(None::<String>);
    let notice = RwSignal::new(String::new());
    let dialog = NodeRef::<leptos::html::Dialog>::new();
    let sign_in_again = use_sign_in_again();
    let navigate = use_navigate();

    // The job is read where it is kept, never copied (a derived signal
    // copied the whole job for each of these reads, at every change).
    let id = move || job.with(|j| j.as_ref().map(|j| j.id().to_string()).unwrap_or_default());
    let owner = move || job.with(|j| j.as_ref().and_then(|j| j.metadata.created_by.clone()));
    let allowed = move || job.with(|j| j.as_ref().is_some_and(|j| may_act(user.get().as_deref(), j)));
    let possible = move || {
        job.with(|j| {
            let j = j.as_ref();
            possible_actions(j.and_then(LeptonJob::state), j.is_some_and(|j| j.spec.stopped == Some(true)))
        })
    };
    let shown_failure = {
        let sign_in_again = sign_in_again.clone();
        move |failure: ApiFailure| match failure {
            ApiFailure::Unauthorized => sign_in_again(),
            other => problem.set(Some(other.to_string())),
        }
    };

    Effect::new(move |_| match command.value().get() {
        Some(Ok(Some(updated))) => on_update.run(updated),
        // Deleted: the job is gone, and so is its page.
        Some(Ok(None)) => navigate(routes::JOBS),
        Some(Err(failure)) => {
            if let Some(d) = dialog.get_untracked() {
                d.close();
            }
            shown_failure(failure);
        }
        None => {}
    });
    let send_stopped = move |stopped: bool| {
        problem.set(None);
        command.dispatch_local((id(), Command::SetStopped(stopped)));
    };
    let stop = move |_| send_stopped(true);
    let start = move |_| send_stopped(false);

    let open_dialog = move |_| {
        problem.set(None);
        if let Some(d) = dialog.get() {
            let _ = d.show_modal();
        }
    };
    let close_dialog = move |_| {
        if let Some(d) = dialog.get() {
            d.close();
        }
    };
    let confirm_delete = move |_| {
        command.dispatch_local((id(), Command::Delete));
    };

    let copy_link = move |_| {
        let Some(window) = web_sys::window() else { return };
        let href = window.location().href().unwrap_or_default();
        let navigator = window.navigator();
        // Outside a secure context the browser offers no clipboard at all.
        let has_clipboard =
            js_sys::Reflect::get(&navigator, &"clipboard".into()).map(|c| !c.is_undefined()).unwrap_or(false);
        if !has_clipboard {
            notice.set(format!("Copying is not allowed here; the link is {href}"));
            return;
        }
        let promise = navigator.clipboard().write_text(&href);
        leptos::task::spawn_local(async move {
            match wasm_bindgen_futures::JsFuture::from(promise).await {
                Ok(_) => notice.set("Link copied.".into()),
                Err(_) => notice.set(format!("Copying is not allowed here; the link is {href}")),
            }
        });
    };

    let name = move || {
        job.with(|j| j.as_ref().map(|j| j.metadata.name.clone().unwrap_or_else(|| j.id().to_string())))
            .unwrap_or_default()
    };
    view! {
        <div class="actions" role="group" aria-label="Job actions">
            <button
                type="button"
                class="stop"
                on:click=stop
                disabled=move || busy() || !allowed() || !possible().stop
            >
                "Stop"
            </button>
            <button
                type="button"
                class="start"
                on:click=start
                disabled=move || busy() || !allowed() || !possible().start
            >
                "Start"
            </button>
            <button
                type="button"
                class="delete danger"
                on:click=open_dialog
                disabled=move || busy() || !allowed() || !possible().delete
            >
                "Delete…"
            </button>
            <a class="button clone" href=move || routes::clone_job(&id())>"Clone"</a>
            <button type="button" class="copy-link" on:click=copy_link>"Copy link"</button>
        </div>
        <p class="action-note" role="status">
            {move || {
                if allowed() {
                    String::new()
                } else {
                    match owner() {
                        Some(o) => format!("Only {o} can stop, start or delete this job."),
                        None => "You cannot stop, start or delete this job.".to_string(),
                    }
                }
            }}
            " "
            {move || notice.get()}
        </p>
        {move || problem.get().map(|p| view! { <div class="banner error" role="alert"><p>{p}</p></div> })}
        <dialog node_ref=dialog class="confirm" aria-labelledby="delete-title">
            <h2 id="delete-title">{move || format!("Delete {}?", name())}</h2>
            <p>"This stops its replicas and removes the job with its logs and events. It cannot be undone."</p>
            <div class="dialog-buttons">
                <button type="button" class="cancel" autofocus on:click=close_dialog>"Cancel"</button>
                <button type="button" class="danger confirm-delete" on:click=confirm_delete disabled=busy>
                    "Delete job"
                </button>
            </div>
        </dialog>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{job, mount, ME};

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
    fn the_creator_may_act_and_the_admin_on_public_jobs() {
        let mut private = job("a-1", "a", "alice", JobState::Running);
        private.metadata.visibility = Some(Visibility::Private);
        let mut public = private.clone();
        public.metadata.visibility = Some(Visibility::Public);
        // (user, job, may act)
        let table = [
            (Some("alice"), &private, true),
            (Some("alice"), &public, true),
            (Some("bob"), &public, false),
            (Some(ADMIN_USER), &public, true),
            (Some(ADMIN_USER), &private, false),
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
            move || view! { <JobActions job=current user=Signal::stored(Some(ME.to_string())) on_update=|_| ()/> },
        );
        assert_eq!(enabled(&host), ["stop", "delete"]);
        let clone = host.query_selector("a.clone").unwrap().unwrap();
        assert_eq!(clone.get_attribute("href").as_deref(), Some("/jobs/new?clone=train-1"));

        current.update(|j| {
            let j = j.as_mut().unwrap();
            j.spec.stopped = Some(true);
            j.status.as_mut().unwrap().state = Some(JobState::Stopped);
        });
        crate::components::live::sleep(0).await;
        assert_eq!(enabled(&host), ["start", "delete"]);

        let theirs = job("eval-1", "eval", "bob", JobState::Running);
        let host = mount(
            move || view! { <JobActions job=Signal::stored(Some(theirs.clone())) user=Signal::stored(Some(ME.to_string())) on_update=|_| ()/> },
        );
        assert!(enabled(&host).is_empty());
        assert!(host.text_content().unwrap().contains("Only bob can stop, start or delete this job."));
        let copy = host.query_selector("button.copy-link").unwrap().unwrap();
        assert!(!copy.has_attribute("disabled"), "anyone who sees the job can share it");
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn delete_asks_first() {
        let current = job("train-2", "train", ME, JobState::Failed);
        let host = mount(
            move || view! { <JobActions job=Signal::stored(Some(current.clone())) user=Signal::stored(Some(ME.to_string())) on_update=|_| ()/> },
        );
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
