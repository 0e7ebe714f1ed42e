//! The logs tab: one replica attempt's log (`?replica=<id>` in the address),
//! followed live while the replica runs. A simple view: the text as it comes,
//! the newest part kept when the log grows large.

use std::collections::VecDeque;
use std::sync::Arc;

use jobdeck_api::{Replica, ReplicaPhase};
use leptos::prelude::*;

use super::replicas::{in_order, load_replicas};
use super::use_job;
use crate::api::{self, ApiFailure};
use crate::components::api_error::{use_sign_in_again, LiveNote};
use crate::components::loaded::{Data, Loaded};
use crate::components::live::{poll, set_if_changed, take_answer, POLL_INTERVAL_MS};
use crate::components::state_badge::replica_outcome;
use crate::router::{use_navigate, use_navigate_replace, use_url};
use crate::routes;

/// The most text this view keeps; older text is dropped from the top.
const MAX_LOG_BYTES: usize = 2 * 1024 * 1024;

/// The attempt to show when the address names none: a running one, else the
/// latest failed one (the one people come to read), else the latest.
pub fn default_replica(replicas: &[Replica]) -> Option<String> {
    let latest = |phase: ReplicaPhase| {
        replicas
            .iter()
            .filter(|r| r.status.phase == phase)
            .max_by_key(|r| r.status.start_time.unwrap_or(0))
    };
    latest(ReplicaPhase::Running)
        .or_else(|| latest(ReplicaPhase::Failed))
        .or_else(|| replicas.iter().max_by_key(|r| (r.status.start_time.unwrap_or(0), r.status.attempt)))
        .map(|r| r.id.clone())
}

/// What the replica picker says about an attempt.
pub fn replica_choice(replica: &Replica) -> String {
    format!(
        "Replica {} · attempt {} · {}",
        replica.status.completion_index,
        replica.status.attempt + 1,
        replica_outcome(&replica.status).1
    )
}

/// Removes terminal escape sequences (colours, cursor moves), which this
/// simple view cannot show. Text is otherwise kept as it is.
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('[') => {
                chars.next();
                // Parameters and intermediates, then one final byte.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(_) => {
                chars.next();
            }
            None => {}
        }
    }
    out
}

#[component]
pub fn LogsTab() -> impl IntoView {
    let render = Arc::new(|data| match data {
        Data::Replicas(list) => view! { <LiveLogs initial=list/> }.into_any(),
        _ => ().into_any(),
    });
    view! { <Loaded fetch=load_replicas(use_job()) render loading="Loading replicas…"/> }
}

#[component]
fn LiveLogs(initial: Vec<Replica>) -> impl IntoView {
    let context = use_job();
    let url = use_url();
    let navigate = use_navigate();
    let navigate_replace = use_navigate_replace();
    let replicas = RwSignal::new(initial);
    let problem = RwSignal::new(None::<String>);
    let sign_in_again = use_sign_in_again();
    poll(
        POLL_INTERVAL_MS,
        move || {
            let id = context.id.get_untracked();
            async move { api::job_replicas(&id).await }
        },
        move |answer| {
            if let Some(list) = take_answer(answer, problem, &sign_in_again) {
                set_if_changed(replicas, in_order(list));
            }
        },
    );
    let wanted = Memo::new(move |_| url.with(|u| u.param("replica")));
    // Without a replica in the address, pick one and put it there, so the
    // address names what is on screen.
    Effect::new(move |_| {
        if wanted.get().is_none() {
            if let Some(choice) = replicas.with(|r| default_replica(r)) {
                navigate_replace(&routes::job_logs(&context.id.get_untracked(), Some(&choice)));
            }
        }
    });
    let follow = RwSignal::new(true);
    let on_pick = move |ev: leptos::ev::Event| {
        let id = event_target_value(&ev);
        navigate(&routes::job_logs(&context.id.get_untracked(), Some(&id)));
    };
    let options = move || {
        let current = wanted.get();
        replicas.with(|list| {
            let mut options: Vec<_> = list
                .iter()
                .map(|r| {
                    let selected = current.as_deref() == Some(r.id.as_str());
                    view! { <option value=r.id.clone() prop:selected=selected>{replica_choice(r)}</option> }.into_any()
                })
                .collect();
            // A replica named by the address but not (or no longer) listed.
            if let Some(id) = current.filter(|id| !list.iter().any(|r| &r.id == id)) {
                options.push(view! { <option value=id.clone() prop:selected=true>{id.clone()}</option> }.into_any());
            }
            options
        })
    };
    view! {
        <LiveNote problem/>
        <h2>"Logs"</h2>
        <Show
            when=move || wanted.with(Option::is_some) || replicas.with(|r| !r.is_empty())
            fallback=|| view! { <p class="empty">"No replica has started yet, so there is no log."</p> }
        >
            <div class="log-controls">
                <label for="log-replica">"Replica"</label>
                <select id="log-replica" on:change=on_pick.clone()>{options}</select>
                <label class="check">
                    <input type="checkbox" id="log-follow" bind:checked=follow/>
                    "Follow"
                </label>
            </div>
            <LogText job_id=context.id.get_untracked() replica=wanted follow/>
        </Show>
    }
}

/// Where the log stands, said in the status line.
#[derive(Debug, Clone, PartialEq)]
enum LogStatus {
    Loading,
    Following,
    Loaded,
    Ended,
    Failed(String),
}

/// The text of one replica's log, fetched whole or followed as it grows. It
/// goes into the page as text nodes: nothing in a log is ever read as HTML.
#[component]
fn LogText(job_id: String, #[prop(into)] replica: Signal<Option<String>>, #[prop(into)] follow: Signal<bool>) -> impl IntoView {
    let pre = NodeRef::<leptos::html::Pre>::new();
    let status = RwSignal::new(LogStatus::Loading);
    let trimmed = RwSignal::new(false);
    let controller = StoredValue::new_local(None::<web_sys::AbortController>);
    let chunks = StoredValue::new_local(VecDeque::<usize>::new());
    let generation = StoredValue::new(0u32);
    let sign_in_again = use_sign_in_again();

    let stop_following = move || {
        controller.update_value(|c| {
            if let Some(c) = c.take() {
                c.abort();
            }
        });
    };
    on_cleanup(stop_following);

    Effect::new(move |_| {
        let replica = replica.get();
        let follow = follow.get();
        let Some(element) = pre.get() else { return };
        stop_following();
        let round = generation.get_value() + 1;
        generation.set_value(round);
        element.set_text_content(None);
        chunks.update_value(VecDeque::clear);
        trimmed.set(false);
        let Some(replica) = replica else { return };
        status.set(LogStatus::Loading);
        let job_id = job_id.clone();
        let sign_in_again = sign_in_again.clone();
        let append = move |text: &str| {
            if generation.try_get_value() != Some(round) {
                return;
            }
            let text = strip_ansi(text);
            let at_bottom = element.scroll_top() + element.client_height() >= element.scroll_height() - 4;
            let _ = element.append_with_str_1(&text);
            chunks.update_value(|c| c.push_back(text.len()));
            while chunks.with_value(|c| c.iter().sum::<usize>() > MAX_LOG_BYTES && c.len() > 1) {
                if let Some(first) = element.first_child() {
                    let _ = element.remove_child(&first);
                }
                chunks.update_value(|c| {
                    c.pop_front();
                });
                trimmed.set(true);
            }
            if at_bottom {
                element.set_scroll_top(element.scroll_height());
            }
        };
        leptos::task::spawn_local(async move {
            let outcome = if follow {
                let Ok(abort) = web_sys::AbortController::new() else { return };
                let signal = abort.signal();
                controller.set_value(Some(abort));
                status.set(LogStatus::Following);
                api::follow_replica_log(&job_id, &replica, &signal, append).await.map(|_| LogStatus::Ended)
            } else {
                api::replica_log(&job_id, &replica).await.map(|text| {
                    append(&text);
                    LogStatus::Loaded
                })
            };
            if generation.try_get_value() != Some(round) {
                return;
            }
            match outcome {
                Ok(done) => status.set(done),
                Err(ApiFailure::Unauthorized) => sign_in_again(),
                Err(ApiFailure::NotFound(_)) => status.set(LogStatus::Failed("This replica has no log.".into())),
                Err(other) => status.set(LogStatus::Failed(other.to_string())),
            }
        });
    });

    view! {
        <p class="log-status" role="status">
            {move || match status.get() {
                LogStatus::Loading => "Loading the log…".to_string(),
                LogStatus::Following => "Following the log as it grows.".to_string(),
                LogStatus::Loaded => "The log as it was when loaded.".to_string(),
                LogStatus::Ended => "End of the log: the replica is no longer running.".to_string(),
                LogStatus::Failed(why) => why,
            }}
            {move || trimmed.get().then_some(" Only the newest 2 MiB are shown.")}
        </p>
        <pre class="log" node_ref=pre tabindex="0" aria-label="Log text"></pre>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::replica;
    use ReplicaPhase::*;

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn the_default_replica_is_the_one_worth_reading() {
        let done = replica(0, 0, Succeeded, Some(0), Some(5));
        let failed = replica(1, 0, Failed, Some(1), Some(3));
        let running = replica(1, 1, Running, Some(4), None);
        assert_eq!(default_replica(&[done.clone(), failed.clone(), running.clone()]).as_deref(), Some("job-1-1-1"));
        assert_eq!(default_replica(&[done.clone(), failed]).as_deref(), Some("job-1-1-0"));
        assert_eq!(default_replica(&[done]).as_deref(), Some("job-1-0-0"));
        assert_eq!(default_replica(&[]), None);
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn choices_and_escapes() {
        assert_eq!(replica_choice(&replica(2, 1, Failed, None, None)), "Replica 2 · attempt 2 · Failed");
        assert_eq!(strip_ansi("\u{1b}[31mred\u{1b}[0m plain"), "red plain");
        assert_eq!(strip_ansi("<b>not html</b>"), "<b>not html</b>");
        assert_eq!(strip_ansi("tail\u{1b}"), "tail");
    }
}
