//! The queue (`/queue`): every job waiting for capacity, in the order the
//! scheduler admits them (`GET /queue`, docs/api.md "The queue"), with its
//! place, priority, what it asks for, how long it has waited and why, and
//! whether it may preempt others or be preempted. A job the reader may not
//! see keeps its place, priority and size but not its name, owner or
//! message. `?node_group=<name>` shows one node group's queue (its places
//! counted in it); `?job=<id>` marks one job, as the overview's "See the
//! queue" link does.
//!
//! The queue changes when jobs do: the table follows the event stream's job
//! changes (every second without a stream) and its waiting times count on
//! between answers. Another user's private job that starts sends the reader
//! no message, so its row goes at the next change the reader may see, or
//! after the stream's quiet poll.
//!
//! The page shares the notifications page's download (`lib.rs`): both are
//! small, and a split point of its own would cost every page's first load
//! its loader.

use std::cell::RefCell;
use std::rc::Rc;

use jobdeck_api::{QueueEntry, QueueList, StreamMessage};
use leptos::prelude::*;

use crate::api::{self, ApiResult};
use crate::components::api_error::{use_sign_in_again, LiveNote};
use crate::components::data_table::{Cell, DataTable, Head};
use crate::components::event_stream;
use crate::components::live::{every_second, load_and_poll, set_if_changed, take_answer, POLL_INTERVAL_MS};
use crate::components::time::{format_duration, now_millis};
use crate::router::{use_navigate_replace, use_url};
use crate::routes;
use crate::session::require_sign_in;

#[component]
pub fn QueuePage() -> impl IntoView {
    let signed_in = require_sign_in();
    let url = use_url();
    let group = Memo::new(move |_| url.with(|u| u.param("node_group").unwrap_or_default()));
    let marked = Memo::new(move |_| url.with(|u| u.param("job").unwrap_or_default()));
    let groups = RwSignal::new(Vec::<String>::new());
    if signed_in {
        leptos::task::spawn_local(async move {
            if let Ok(names) = api::node_group_names().await {
                groups.try_set(names);
            }
        });
    }
    let navigate = use_navigate_replace();
    let on_group = move |ev| navigate(&routes::queue(&event_target_value(&ev), &marked.get_untracked()));
    let options = move || {
        let mut names = groups.get();
        // A group named in the address is offered even before (or without)
        // the list of groups.
        let chosen = group.get();
        if !chosen.is_empty() && !names.contains(&chosen) {
            names.push(chosen.clone());
        }
        names
            .into_iter()
            .map(|name| {
                let (selected, label) = (name == chosen, name.clone());
                view! { <option value=name selected=selected>{label}</option> }
            })
            .collect_view()
    };
    view! {
        <section class="page queue">
            <h1>"Queue"</h1>
            <p class="help">
                "Jobs waiting for capacity, in the order the scheduler admits them: higher priority first, then \
                 the earlier submitted. A job that does not fit yet does not hold back smaller ones behind it, and \
                 a job its creator's quota holds has no place until they are under it."
            </p>
            <label class="filter">
                "Node group "
                <select on:change=on_group prop:value=move || group.get()>
                    <option value="">"Every node group"</option>
                    {options}
                </select>
            </label>
            {signed_in.then(|| view! { <QueueTable group marked/> })}
        </section>
    }
}

/// The queue of the node group `group` names (every group when empty),
/// kept up to date. One table for every group: a new group is asked for at
/// once and its answer replaces the rows (a table made anew for it would
/// be drawn by Leptos into the old one's elements).
#[component]
fn QueueTable(group: Memo<String>, marked: Memo<String>) -> impl IntoView {
    let rows = RwSignal::new(Vec::new());
    let summary = RwSignal::new(None::<String>);
    let problem = RwSignal::new(None::<String>);
    let sign_in_again = use_sign_in_again();
    event_stream::follow("jobs=true".into());
    let shown = Rc::new(RefCell::new(QueueList::default()));
    let counted = shown.clone();
    every_second(move || set_if_changed(rows, queue_rows(&counted.borrow(), &marked.get_untracked(), now_millis())));
    // An answer is shown only while its group is still the one asked for.
    let apply = Rc::new(move |(asked, answer): (String, ApiResult<QueueList>)| {
        if asked != group.get_untracked() {
            return;
        }
        if let Some(list) = take_answer(answer, problem, &sign_in_again) {
            set_if_changed(rows, queue_rows(&list, &marked.get_untracked(), now_millis()));
            set_if_changed(summary, Some(summary_of(&list)));
            *shown.borrow_mut() = list;
        }
    });
    let ask = move || {
        let asked = group.get_untracked();
        async move {
            let answer = api::queue(&asked).await;
            (asked, answer)
        }
    };
    let applied = apply.clone();
    load_and_poll(POLL_INTERVAL_MS, &[StreamMessage::Job, StreamMessage::JobDeleted], ask, move |a| applied(a));
    Effect::new(move |first: Option<()>| {
        group.track();
        if first.is_some() {
            let apply = apply.clone();
            leptos::task::spawn_local(async move { apply(ask().await) });
        }
    });
    view! {
        <LiveNote problem/>
        <p class="loading" role="status" hidden=move || summary.with(Option::is_some) || problem.with(Option::is_some)>
            "Loading the queue…"
        </p>
        <p class="queue-summary" role="status">{move || summary.get()}</p>
        // The sentence above says when none waits.
        <div hidden=move || rows.with(Vec::is_empty)>
            <DataTable class="queue" caption="Queued jobs, first to be admitted first" head=QUEUE_HEAD.to_vec() rows/>
        </div>
    }
}

const QUEUE_HEAD: [Head; 9] = [
    Head::plain("Place"),
    Head::plain("Job"),
    Head::plain("Created by"),
    Head::plain("Priority"),
    Head::plain("Node groups"),
    Head::plain("Asks for"),
    Head::plain("Waiting"),
    Head::plain("Preemption"),
    Head::plain("Why it waits"),
];

/// The sentence over the table: how many wait, and how many of them the
/// reader may not see.
fn summary_of(list: &QueueList) -> String {
    let waiting = match list.jobs.len() {
        0 => return "No job is waiting.".into(),
        1 => "1 job is waiting".to_string(),
        n => format!("{n} jobs are waiting"),
    };
    match list.hidden {
        0 => format!("{waiting}."),
        1 => format!("{waiting}; 1 of them is another user's private job, counted but not named."),
        n => format!("{waiting}; {n} of them are other users' private jobs, counted but not named."),
    }
}

/// The table's rows at `now` (Unix milliseconds), job `marked` marked. A
/// job is keyed by its id, one the reader may not see by its place in the
/// list.
pub fn queue_rows(list: &QueueList, marked: &str, now: i64) -> Vec<(String, Vec<Cell>)> {
    list.jobs
        .iter()
        .enumerate()
        .map(|(at, entry)| {
            let key = entry.id.clone().unwrap_or_else(|| format!("unseen-{at}"));
            (key, queue_cells(entry, marked, now))
        })
        .collect()
}

fn queue_cells(entry: &QueueEntry, marked: &str, now: i64) -> Vec<Cell> {
    let place = match entry.position {
        Some(place) => place.to_string(),
        None => "held by quota".into(),
    };
    let place = match &entry.id {
        Some(id) if !marked.is_empty() && id == marked => {
            Cell::Badge { tone: "active", text: place, note: "this job".into() }
        }
        _ => Cell::text(place),
    };
    let job = match (&entry.id, &entry.name) {
        (Some(id), name) => Cell::Link {
            href: routes::job(id),
            text: name.clone().unwrap_or_else(|| id.clone()),
            label: Some(format!("job {id}")),
        },
        (None, _) => Cell::Text { text: "another user's private job".into(), class: "issue" },
    };
    let each = match entry.gpus_per_replica {
        0 => "no GPU".to_string(),
        1 => "1 GPU".to_string(),
        gpus => format!("{gpus} GPUs"),
    };
    let asks = match &entry.resource_shape {
        Some(shape) if !shape.is_empty() => format!("{} × {shape} ({each} each)", entry.replicas),
        _ => format!("{} × {each}", entry.replicas),
    };
    let waiting = entry.queued_at.map(|at| format_duration((now - at) / 1000)).unwrap_or_default();
    let preemption = match (entry.can_preempt, entry.can_be_preempted) {
        (true, true) => "may preempt; preemptible",
        (true, false) => "may preempt",
        (false, true) => "preemptible",
        (false, false) => "",
    };
    vec![
        place,
        job,
        Cell::text(entry.created_by.clone().unwrap_or_default()),
        Cell::text(entry.priority_class.clone()),
        Cell::text(entry.node_groups.join(", ")),
        Cell::text(asks),
        Cell::text(waiting),
        Cell::text(preemption),
        Cell::text(entry.message.clone().unwrap_or_default()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: Option<&str>, position: Option<i64>) -> QueueEntry {
        QueueEntry {
            position,
            id: id.map(String::from),
            name: id.map(|id| format!("{id}-name")),
            created_by: id.map(|_| "alice".into()),
            priority_class: "mid-4000".into(),
            node_groups: vec!["a".into(), "b".into()],
            resource_shape: id.map(|_| "gpu.8".into()),
            replicas: 2,
            gpus_per_replica: 8,
            queued_at: Some(1_000_000),
            held_by_quota: position.is_none(),
            can_preempt: false,
            can_be_preempted: true,
            message: id.map(|_| "waiting for capacity: needs 16 GPUs, 0 free in group a".into()),
        }
    }

    fn texts(cells: &[Cell]) -> Vec<String> {
        cells
            .iter()
            .map(|cell| match cell {
                Cell::Text { text, .. } | Cell::Badge { text, .. } | Cell::Link { text, .. } => text.clone(),
                Cell::Counts(_) => String::new(),
            })
            .collect()
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn a_queued_job_reads_as_its_place_size_wait_and_reason_and_a_hidden_one_is_counted_not_named() {
        let mut list = QueueList {
            jobs: vec![entry(Some("train-1"), Some(1)), entry(None, Some(2)), entry(Some("train-3"), None)],
            hidden: 1,
        };
        list.jobs[2].can_preempt = true;
        list.jobs[2].priority_class = "high-9000".into();
        let rows = queue_rows(&list, "train-3", 1_000_000 + 125_000);
        assert_eq!(rows.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(), ["train-1", "unseen-1", "train-3"]);
        assert_eq!(
            texts(&rows[0].1),
            [
                "1",
                "train-1-name",
                "alice",
                "mid-4000",
                "a, b",
                "2 × gpu.8 (8 GPUs each)",
                "2m 05s",
                "preemptible",
                "waiting for capacity: needs 16 GPUs, 0 free in group a"
            ]
        );
        assert_eq!(
            rows[0].1[1],
            Cell::Link { href: "/jobs/train-1".into(), text: "train-1-name".into(), label: Some("job train-1".into()) }
        );
        // Another user's private job: its place, priority and size, nothing
        // that names it.
        assert_eq!(
            texts(&rows[1].1),
            ["2", "another user's private job", "", "mid-4000", "a, b", "2 × 8 GPUs", "2m 05s", "preemptible", ""]
        );
        // The marked job, held by its creator's quota.
        assert_eq!(rows[2].1[0], Cell::Badge { tone: "active", text: "held by quota".into(), note: "this job".into() });
        assert_eq!(texts(&rows[2].1)[7], "may preempt; preemptible");
        assert_eq!(
            summary_of(&list),
            "3 jobs are waiting; 1 of them is another user's private job, counted but not named."
        );
        assert_eq!(summary_of(&QueueList::default()), "No job is waiting.");
    }
}
