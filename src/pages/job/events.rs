//! The events tab: every transition of the job and its replicas, newest
//! first, with reason and message.

use jobdeck_api::{EventType, JobEvent, StreamMessage};
use leptos::prelude::*;

use super::use_job;
use crate::api;
use crate::components::api_error::{use_sign_in_again, LiveNote};
use crate::components::data_table::{Cell, DataTable, Head, Rows};
use crate::components::live::{load_and_poll, set_if_changed, take_answer, POLL_INTERVAL_MS};
use crate::components::time::{format_time, parse_time};

/// The events, loaded by the first round of their polling (as the replicas
/// tab is, and for the same reason); the table shows from the first answer.
#[component]
pub fn EventsTab() -> impl IntoView {
    let context = use_job();
    let rows = RwSignal::new(Vec::new());
    let loaded = RwSignal::new(false);
    let problem = RwSignal::new(None::<String>);
    let sign_in_again = use_sign_in_again();
    load_and_poll(
        POLL_INTERVAL_MS,
        &[StreamMessage::Events],
        move || {
            let id = context.id.get_untracked();
            async move { api::job_events(&id).await }
        },
        move |answer| {
            if let Some(list) = take_answer(answer, problem, &sign_in_again) {
                set_if_changed(rows, event_rows(&list));
                set_if_changed(loaded, true);
            }
        },
    );
    view! {
        <LiveNote problem/>
        <p class="loading" role="status" hidden=move || loaded.get() || problem.with(Option::is_some)>
            "Loading events…"
        </p>
        <div hidden=move || !loaded.get()>
            <EventTable rows/>
        </div>
    }
}

const EVENT_HEAD: [Head; 6] = [
    Head::plain("Time"),
    Head::plain("Type"),
    Head::plain("Reason"),
    Head::plain("Message"),
    Head::plain("About"),
    Head::plain("Count"),
];

/// The events as the server lists them, newest first. An event is keyed by
/// its place counted from the oldest: the server folds a repetition into the
/// newest event, which then updates in place, and new events arrive on top.
pub fn event_rows(events: &[JobEvent]) -> Vec<(String, Vec<Cell>)> {
    let count = events.len();
    events.iter().enumerate().map(|(i, event)| ((count - i).to_string(), event_cells(event))).collect()
}

fn event_cells(event: &JobEvent) -> Vec<Cell> {
    let time =
        parse_time(&event.last_observed_time).map(format_time).unwrap_or_else(|| event.last_observed_time.clone());
    let tone = if event.kind == EventType::Warning { "bad" } else { "neutral" };
    vec![
        Cell::text(time),
        Cell::Badge { tone, text: event.kind.as_str().into(), note: String::new() },
        Cell::text(event.reason.clone()),
        Cell::text(event.message.clone()),
        Cell::mono(event.regarding.as_ref().map(|r| format!("{} {}", r.kind, r.name)).unwrap_or_default()),
        Cell::text(if event.count > 1 { format!("×{}", event.count) } else { String::new() }),
    ]
}

#[component]
pub fn EventTable(rows: Rows) -> impl IntoView {
    view! {
        <h2>"Events"</h2>
        <DataTable class="events" caption="Events, newest first" head=EVENT_HEAD.to_vec() rows empty="No events yet."/>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::mount;
    use jobdeck_api::EventSubject;

    fn event(kind: EventType, reason: &str, message: &str, count: i64) -> JobEvent {
        JobEvent {
            kind,
            reason: reason.into(),
            regarding: Some(EventSubject { kind: "Replica".into(), name: "job-1-2-0".into() }),
            count,
            last_observed_time: "2026-03-04T05:06:07Z".into(),
            message: message.into(),
        }
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    async fn events_show_in_the_servers_order_and_update() {
        let mut events = vec![
            event(EventType::Warning, "BackOff", "replica 2 failed with exit code 3; retrying", 2),
            event(EventType::Normal, "Started", "replica 2 started on node-a", 1),
        ];
        let rows = RwSignal::new(event_rows(&events));
        let host = mount(move || view! { <EventTable rows/> });
        crate::components::live::sleep(0).await;
        assert_eq!(host.query_selector_all("tbody tr").unwrap().length(), 2);
        let first = host.query_selector("tbody tr").unwrap().unwrap();
        let text = first.text_content().unwrap();
        assert!(
            text.contains("BackOff")
                && text.contains("retrying")
                && text.contains("×2")
                && text.contains("Replica job-1-2-0"),
            "{text}"
        );
        assert_eq!(first.query_selector(".badge").unwrap().unwrap().class_name(), "badge bad");
        // The newest event repeats (folded), then a new one arrives on top.
        events[0].count = 3;
        set_if_changed(rows, event_rows(&events));
        crate::components::live::sleep(0).await;
        assert!(first.text_content().unwrap().contains("×3"), "the same row, updated in place");
        events.insert(0, event(EventType::Normal, "Completed", "all replicas succeeded", 1));
        set_if_changed(rows, event_rows(&events));
        crate::components::live::sleep(0).await;
        let top = host.query_selector("tbody tr").unwrap().unwrap();
        assert!(top.text_content().unwrap().contains("Completed"));
        assert_eq!(host.query_selector_all("tbody tr").unwrap().length(), 3);
    }
}
