//! The failure tab: why the job failed and which attempts failed, first
//! failure first, each with a link to its log. (The full failure analysis,
//! with error classes and log excerpts, builds on this page.)

use std::sync::Arc;

use jobdeck_api::{JobState, Replica, ReplicaPhase};
use leptos::prelude::*;

use super::replicas::{load_replicas, replica_cells};
use super::use_job;
use crate::components::data_table::{Cell, DataTable};
use crate::components::loaded::{Data, Loaded};
use crate::components::time::now_millis;

/// The failed attempts, the first to fail first.
pub fn failed_first(replicas: &[Replica]) -> Vec<&Replica> {
    let mut failed: Vec<&Replica> = replicas.iter().filter(|r| r.status.phase == ReplicaPhase::Failed).collect();
    failed.sort_by_key(|r| (r.status.end_time.unwrap_or(i64::MAX), r.status.completion_index));
    failed
}

#[component]
pub fn FailureTab() -> impl IntoView {
    let context = use_job();
    let verdict = move || {
        context.read(|job| {
            let status = job.status.clone().unwrap_or_default();
            match status.state {
                Some(JobState::Failed) => format!(
                    "The job failed: {}{}",
                    status.reason.unwrap_or_else(|| "no reason given".into()),
                    status.message.map(|m| format!(" — {m}")).unwrap_or_default()
                ),
                state => format!(
                    "This job has not failed (it is {}).",
                    state.map(|s| s.as_str()).unwrap_or("in an unknown state")
                ),
            }
        })
    };
    let render = Arc::new(move |data| match data {
        Data::Replicas(list) => {
            let job_id = context.id.get_untracked();
            let failed = failed_first(&list);
            if failed.is_empty() {
                return view! { <p class="help">"No attempt has failed."</p> }.into_any();
            }
            let first = format!(
                "Replica {} failed first (attempt {}).",
                failed[0].status.completion_index,
                failed[0].status.attempt + 1
            );
            let rows = RwSignal::new(
                failed.iter().map(|r| (r.id.clone(), replica_cells(r, &job_id, now_millis()))).collect::<Vec<(String, Vec<Cell>)>>(),
            );
            view! {
                <p>{first}</p>
                <DataTable class="replicas" caption="Failed attempts, first failure first" head=super::replicas::REPLICA_HEAD.to_vec() rows/>
            }
            .into_any()
        }
        _ => ().into_any(),
    });
    view! {
        <h2>"Failure"</h2>
        <p class="verdict">{verdict}</p>
        <Loaded fetch=load_replicas(context) render loading="Loading replicas…"/>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::replica;
    use ReplicaPhase::*;

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn the_first_failure_comes_first() {
        let replicas = vec![
            replica(0, 0, Failed, Some(0), Some(9_000)),
            replica(1, 0, Succeeded, Some(0), Some(1_000)),
            replica(2, 0, Failed, Some(0), Some(2_000)),
            replica(2, 1, Running, Some(3_000), None),
        ];
        let order: Vec<&str> = failed_first(&replicas).iter().map(|r| r.id.as_str()).collect();
        assert_eq!(order, ["job-1-2-0", "job-1-0-0"]);
    }
}
