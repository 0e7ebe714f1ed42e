//! The replicas tab: the timeline of every attempt, then one row per attempt
//! with its state, why it waits, where it ran, how it ended and a link to its
//! log.

use jobdeck_api::{Replica, StreamMessage};
use leptos::prelude::*;

use super::use_job;
use crate::api;
use crate::components::api_error::{use_sign_in_again, LiveNote};
use crate::components::data_table::{Cell, Head, Table};
use crate::components::dom;
use crate::components::live::{load_and_poll, set_if_changed, take_answer, POLL_INTERVAL_MS};
use crate::components::state_badge::replica_outcome;
use crate::components::time::{format_duration, format_time};
use crate::pages::job::timeline::{into_order, layout, open_clicked_log, Timeline};
use crate::pages::jobs_list::completions_of;
use crate::routes;

/// The timeline and the table of a job's attempts, one drawn part
/// (`dom::draw_into`): both are drawn from the polled replicas whenever
/// they, the job or the clock change. The first round of the polling is the
/// load, as on the job page and the logs tab: a `Resource` would bring
/// Leptos's transition machinery (with std's thread handle, for its
/// channel) into the tab's download (docs/measurements.md, "One thread, no
/// thread handle").
#[component]
pub fn ReplicasTab() -> impl IntoView {
    let context = use_job();
    let job_id = context.id.get_untracked();
    let replicas = RwSignal::new(None::<Vec<Replica>>);
    let problem = RwSignal::new(None::<String>);
    let sign_in_again = use_sign_in_again();
    let fetch_id = job_id.clone();
    load_and_poll(
        POLL_INTERVAL_MS,
        &[StreamMessage::Replicas],
        move || {
            let id = fetch_id.clone();
            async move { api::job_replicas(&id).await }
        },
        move |answer| {
            if let Some(list) = take_answer(answer, problem, &sign_in_again) {
                set_if_changed(replicas, Some(into_order(list)));
            }
        },
    );
    let host = NodeRef::<leptos::html::Div>::new();
    let mut parts: Option<(web_sys::Element, Timeline, Table)> = None;
    dom::draw_into(
        host,
        Box::new(move |host| {
            if parts.as_ref().is_none_or(|(at, _, _)| at != host) {
                let timeline = Timeline::new(&dom::child(host, "div", "", ""));
                dom::child(host, "h2", "", "Replicas");
                let table = Table::new(
                    &dom::child(host, "div", "", ""),
                    "replicas",
                    "Replica attempts",
                    &REPLICA_HEAD,
                    "No replica yet.",
                );
                parts = Some((host.clone(), timeline, table));
            }
            let Some((_, timeline, table)) = parts.as_mut() else { return };
            let now = context.now.get();
            let completions = context.read(completions_of);
            replicas.with(|list| {
                let Some(list) = list else { return };
                timeline.draw(&layout(list, completions, now), &job_id);
                table.draw(&replica_rows(list, &job_id, now));
            });
        }),
    );
    let loading = move || replicas.with(Option::is_none) && problem.with(Option::is_none);
    view! {
        <LiveNote problem/>
        <p class="loading" role="status" hidden=move || !loading()>"Loading…"</p>
        <div node_ref=host on:click=open_clicked_log()></div>
    }
}

/// The column headers of the replicas table.
pub const REPLICA_HEAD: [Head; 11] = [
    Head::plain("Replica"),
    Head::plain("Attempt"),
    Head::plain("State"),
    Head::plain("Waiting because"),
    Head::plain("Node"),
    Head::plain("Runs as"),
    Head::plain("Exit"),
    Head::plain("Start"),
    Head::plain("End"),
    Head::plain("Duration"),
    Head::plain("Log"),
];

/// Each attempt as a keyed row of cells.
pub fn replica_rows(replicas: &[Replica], job_id: &str, now: i64) -> Vec<(String, Vec<Cell>)> {
    replicas.iter().map(|r| (r.id.clone(), replica_cells(r, job_id, now))).collect()
}

/// One attempt's cells, in the order of `REPLICA_HEAD`. Attempts count from
/// 1 for people; the API counts from 0.
pub fn replica_cells(replica: &Replica, job_id: &str, now: i64) -> Vec<Cell> {
    let s = &replica.status;
    let (tone, word) = replica_outcome(s);
    let duration = match s.start_time {
        Some(start) => format_duration((s.end_time.unwrap_or(now) - start) / 1000),
        None => "—".to_string(),
    };
    vec![
        Cell::text(format!("#{}", s.completion_index)),
        Cell::text((s.attempt + 1).to_string()),
        Cell::Badge { tone, text: word.to_string(), note: String::new() },
        Cell::Text {
            text: match (&s.readiness_issue, s.retry_at) {
                // A failed replica's next attempt counts down its back-off.
                (Some(_), Some(at)) => format!("BackOff: retrying in {}", format_duration((at - now).max(0) / 1000)),
                (Some(i), None) => format!("{}: {}", i.reason, i.message),
                (None, _) => String::new(),
            },
            class: "issue",
        },
        Cell::text(s.node.as_ref().map(|n| n.name.clone()).unwrap_or_default()),
        // The executor's own name for the attempt: a Slurm job, a container,
        // a pod — what to look for with squeue, podman or kubectl.
        Cell::text(s.executor_id.clone().unwrap_or_default()),
        Cell::text(exit_summary(replica)),
        Cell::text(s.start_time.map(format_time).unwrap_or_default()),
        Cell::text(s.end_time.map(format_time).unwrap_or_default()),
        Cell::text(duration),
        Cell::Link {
            href: routes::job_logs(job_id, Some(&replica.id)),
            text: "Log".into(),
            label: Some(format!("Log of replica {}, attempt {}", s.completion_index, s.attempt + 1)),
        },
    ]
}

/// How an attempt ended: exit code, signal and reason.
pub fn exit_summary(replica: &Replica) -> String {
    let s = &replica.status;
    let mut parts = Vec::new();
    if let Some(code) = s.exit_code {
        parts.push(format!("exit code {code}"));
    }
    if let Some(signal) = s.signal {
        parts.push(format!("signal {signal}"));
    }
    if let Some(reason) = s.reason.as_ref().filter(|r| !matches!(r.as_str(), "Completed" | "Error")) {
        parts.push(reason.clone());
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::replica;
    use jobdeck_api::ReplicaPhase::*;

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn every_attempt_is_a_row_with_its_story() {
        // A failed replica waiting out its back-off; the table is drawn at
        // 8 s, the retry starts at 20 s.
        let mut backing_off = replica(4, 1, Pending, None, None);
        backing_off.status.retry_at = Some(20_000);
        let mut in_slurm = replica(2, 1, Running, Some(3_000), None);
        in_slurm.status.executor_id = Some("4711_2".into());
        let attempts = into_order(vec![
            in_slurm,
            replica(0, 0, Succeeded, Some(0), Some(10_000)),
            replica(2, 0, Failed, Some(0), Some(2_000)),
            replica(3, 0, Pending, None, None),
            backing_off,
        ]);
        let host = dom::element("div");
        let mut table = Table::new(&host, "replicas", "Replica attempts", &REPLICA_HEAD, "No replica yet.");
        table.draw(&replica_rows(&attempts, "job-1", 8_000));
        let trs = host.query_selector_all("tbody tr").unwrap();
        assert_eq!(trs.length(), 5);
        let row = |i: u32| {
            wasm_bindgen::JsCast::unchecked_into::<web_sys::Element>(trs.get(i).unwrap()).text_content().unwrap()
        };
        assert!(row(0).starts_with("#01Succeeded"), "{}", row(0));
        assert!(row(1).contains("#21Failed") && row(1).contains("exit code 3") && row(1).contains("2s"), "{}", row(1));
        assert!(row(2).contains("#22Running") && row(2).contains("5s"), "{}", row(2));
        assert!(row(2).contains("node-a4711_2"), "the executor's id follows the node: {}", row(2));
        assert!(row(3).contains("NoCapacity: waiting for 1 CPU"), "{}", row(3));
        assert!(row(4).contains("#42Pending") && row(4).contains("BackOff: retrying in 12s"), "{}", row(4));
        let log = host.query_selector("tbody tr:nth-child(2) a").unwrap().unwrap();
        assert_eq!(log.get_attribute("href").as_deref(), Some("/jobs/job-1/logs?replica=job-1-2-0"));
        assert_eq!(log.get_attribute("aria-label").as_deref(), Some("Log of replica 2, attempt 1"));
    }
}
