//! The logs tab: one attempt's log (`?replica=<id>` in the address, a line
//! range in the fragment), in the viewer that draws only what is on screen,
//! with pickers for the replica and its attempt and, for a failed attempt, a
//! jump to the first error the failure analysis found in it.

use std::sync::Arc;

use jobdeck_api::{Replica, ReplicaPhase};
use leptos::prelude::*;

use super::replicas::load_replicas;
use super::use_job;
use crate::api;
use crate::components::api_error::{use_sign_in_again, LiveNote};
use crate::components::live::{poll, set_if_changed, take_answer, POLL_INTERVAL_MS};
use crate::components::loaded::{Data, Loaded};
use crate::components::log_viewer::LogViewer;
use crate::components::state_badge::replica_outcome;
use crate::components::timeline::{in_order, into_order};
use crate::router::{use_navigate, use_navigate_replace, use_url};
use crate::routes;

/// The attempt to show when the address names none: a running one, else the
/// latest failed one (the one people come to read), else the latest.
pub fn default_replica(replicas: &[Replica]) -> Option<String> {
    let latest = |phase: ReplicaPhase| {
        replicas.iter().filter(|r| r.status.phase == phase).max_by_key(|r| r.status.start_time.unwrap_or(0))
    };
    latest(ReplicaPhase::Running)
        .or_else(|| latest(ReplicaPhase::Failed))
        .or_else(|| replicas.iter().max_by_key(|r| (r.status.start_time.unwrap_or(0), r.status.attempt)))
        .map(|r| r.id.clone())
}

/// The replica picker's choices: each completion index once, with the
/// outcome of its latest attempt, and the id of that attempt.
pub fn replica_choices(replicas: &[Replica]) -> Vec<(String, String)> {
    let mut latest: Vec<&Replica> = Vec::new();
    for replica in replicas {
        match latest.iter_mut().find(|r| r.status.completion_index == replica.status.completion_index) {
            Some(kept) if kept.status.attempt < replica.status.attempt => *kept = replica,
            Some(_) => {}
            None => latest.push(replica),
        }
    }
    in_order(latest)
        .into_iter()
        .map(|r| (r.id.clone(), format!("Replica {} · {}", r.status.completion_index, replica_outcome(&r.status).1)))
        .collect()
}

/// The attempt picker's choices for the replica of attempt `current`.
pub fn attempt_choices(replicas: &[Replica], current: &str) -> Vec<(String, String)> {
    let Some(index) = replicas.iter().find(|r| r.id == current).map(|r| r.status.completion_index) else {
        return Vec::new();
    };
    replicas
        .iter()
        .filter(|r| r.status.completion_index == index)
        .map(|r| {
            let mut label = format!("Attempt {} · {}", r.status.attempt + 1, replica_outcome(&r.status).1);
            if let Some(code) = r.status.exit_code.filter(|c| *c != 0) {
                label.push_str(&format!(" (exit {code})"));
            } else if let Some(signal) = r.status.signal {
                label.push_str(&format!(" (signal {signal})"));
            }
            (r.id.clone(), label)
        })
        .collect()
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
                set_if_changed(replicas, into_order(list));
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
    let on_pick = move |ev: leptos::ev::Event| {
        let id = event_target_value(&ev);
        navigate(&routes::job_logs(&context.id.get_untracked(), Some(&id)));
    };
    // The replica picker selects the replica's latest attempt; the attempt
    // picker any attempt of it.
    let options = move |choices: Vec<(String, String)>, selected: Option<String>| {
        choices
            .into_iter()
            .map(|(id, label)| {
                let on = selected.as_deref() == Some(id.as_str());
                view! { <option value=id prop:selected=on>{label}</option> }
            })
            .collect_view()
    };
    let replica_options = move || {
        let current = wanted.get();
        let choices = replicas.with(|list| replica_choices(list));
        // The latest attempt of the shown replica stands for the replica.
        let selected = replicas.with(|list| {
            let index = list.iter().find(|r| Some(&r.id) == current.as_ref()).map(|r| r.status.completion_index);
            choices
                .iter()
                .find(|(id, _)| list.iter().any(|r| &r.id == id && Some(r.status.completion_index) == index))
                .map(|(id, _)| id.clone())
        });
        options(choices, selected)
    };
    let attempt_options = move || {
        let current = wanted.get().unwrap_or_default();
        let mut choices = replicas.with(|list| attempt_choices(list, &current));
        // An attempt named by the address but not (or no longer) listed.
        if !current.is_empty() && !choices.iter().any(|(id, _)| *id == current) {
            choices.push((current.clone(), current.clone()));
        }
        options(choices, Some(current))
    };

    // For a failed attempt, where its first error is (from the failure
    // analysis), as a link to that line.
    let first_error = LocalResource::new(move || {
        let replica = wanted.get();
        let failed = replica.as_ref().is_some_and(|id| {
            replicas.with_untracked(|list| list.iter().any(|r| &r.id == id && r.status.phase == ReplicaPhase::Failed))
        });
        let job = context.id.get_untracked();
        async move {
            let replica = replica.filter(|_| failed)?;
            let analysis = api::failure_analysis(&job).await.ok()?;
            let stream = analysis.log_streams.into_iter().find(|s| s.replica_id == replica)?;
            let href = format!("{}#L{}", routes::job_logs(&job, Some(&replica)), stream.error_line);
            Some((href, format!("Go to the first error: {} on line {}", stream.pattern, stream.error_line)))
        }
    });

    view! {
        <LiveNote problem/>
        <h2>"Logs"</h2>
        <Show
            when=move || wanted.with(Option::is_some) || replicas.with(|r| !r.is_empty())
            fallback=|| view! { <p class="empty">"No replica has started yet, so there is no log."</p> }
        >
            <div class="log-pickers">
                <label for="log-replica">"Replica"</label>
                <select id="log-replica" on:change=on_pick.clone()>{replica_options}</select>
                <label for="log-attempt">"Attempt"</label>
                <select id="log-attempt" on:change=on_pick.clone()>{attempt_options}</select>
                {move || {
                    first_error
                        .get()
                        .flatten()
                        .map(|(href, label)| view! { <a class="first-error" href=href>{label}</a> })
                }}
            </div>
            {move || {
                wanted.get().map(|replica| view! { <LogViewer job=context.id.get_untracked() replica/> })
            }}
        </Show>
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
    fn pickers_offer_each_replica_once_and_its_attempts() {
        let mut failed = replica(1, 0, Failed, Some(1), Some(3));
        failed.status.exit_code = Some(2);
        let list = [replica(0, 0, Succeeded, Some(0), Some(5)), failed, replica(1, 1, Running, Some(4), None)];
        assert_eq!(
            replica_choices(&list),
            [
                ("job-1-0-0".to_string(), "Replica 0 · Succeeded".to_string()),
                ("job-1-1-1".into(), "Replica 1 · Running".into())
            ]
        );
        assert_eq!(
            attempt_choices(&list, "job-1-1-0"),
            [
                ("job-1-1-0".to_string(), "Attempt 1 · Failed (exit 2)".to_string()),
                ("job-1-1-1".into(), "Attempt 2 · Running".into())
            ]
        );
        assert!(attempt_choices(&list, "gone").is_empty());
        // An attempt killed by a signal says which.
        let mut killed = replica(2, 0, Failed, Some(1), Some(3));
        killed.status.exit_code = None;
        killed.status.signal = Some(15);
        assert_eq!(attempt_choices(&[killed], "job-1-2-0")[0].1, "Attempt 1 · Failed (signal 15)");
    }
}
