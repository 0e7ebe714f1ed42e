//! The deployments list (`/jobs`).
//!
//! Filters, sort and page live in the address (`routes::ListQuery`), so a
//! filtered view is a link. The list loads once per address, then asks the
//! server again whenever the event stream says a job changed (every second
//! without a stream) and patches its rows in place: rows are keyed by job
//! id, so an update never rebuilds the table under the user's cursor.

use std::cell::RefCell;
use std::rc::Rc;

use jobdeck_api::{JobList, JobState, LeptonJob, StreamMessage};
use leptos::prelude::*;

use crate::api;
use crate::components::api_error::{use_sign_in_again, LiveNote};
use crate::components::data_table::{Cell, DataTable, Head, Rows};
use crate::components::event_stream;
use crate::components::live::{every_second, poll, set_if_changed, sleep, take_answer, POLL_INTERVAL_MS};
use crate::components::state_badge::state_tone;
use crate::components::time::{format_duration, format_time_short, now_millis};
use crate::router::{use_navigate, use_navigate_replace, use_url};
use crate::routes::{self, ListQuery};
use crate::session::{require_sign_in, use_session};

/// The states the state filter offers, most asked-for first.
const FILTER_STATES: [JobState; 9] = [
    JobState::Running,
    JobState::Queueing,
    JobState::Starting,
    JobState::PendingRetry,
    JobState::Completed,
    JobState::Failed,
    JobState::Stopping,
    JobState::Stopped,
    JobState::Deleting,
];

/// The list loads once per address and keeps the last address's table on
/// screen (marked busy) until the new one's answer comes; the table then
/// polls on its own (`JobsTable`). Not through a `Resource` in a
/// `Transition`: that machinery, std's thread handle with it, was the
/// larger part of what the list downloads beyond its own code
/// (docs/measurements.md, "One thread, no thread handle").
#[component]
pub fn JobsListPage() -> impl IntoView {
    let signed_in = require_sign_in();
    let url = use_url();
    let query = Memo::new(move |_| url.with(|u| ListQuery::parse(&u.query)));
    // The last answer with the address it answers, or why the last load
    // failed.
    let shown = RwSignal::new(None::<(ListQuery, JobList)>);
    let failure = RwSignal::new(None::<String>);
    // Only the answer to the latest address is shown.
    let asked = StoredValue::new(0_u32);
    let sign_in_again = use_sign_in_again();
    Effect::new(move |_| {
        let query = query.get();
        if !signed_in {
            return;
        }
        asked.update_value(|n| *n += 1);
        let ticket = asked.get_value();
        let sign_in_again = sign_in_again.clone();
        leptos::task::spawn_local(async move {
            let answer = api::list_jobs(&query.to_query()).await;
            if asked.try_get_value() != Some(ticket) {
                return;
            }
            match answer {
                Ok(list) => {
                    failure.set(None);
                    shown.set(Some((query, list)));
                }
                Err(api::ApiFailure::Unauthorized) => sign_in_again(),
                Err(problem) => failure.set(Some(problem.to_string())),
            }
        });
    });
    let pending =
        move || failure.with(Option::is_none) && shown.with(|s| s.as_ref().map(|(q, _)| q) != Some(&query.get()));

    view! {
        <section class="page">
            <div class="page-head">
                <h1>"Deployments"</h1>
                <a href=routes::NEW_JOB class="button primary needs-member">"New job"</a>
            </div>
            <ListFilters query/>
            <div class="results" aria-busy=move || pending().to_string()>
                {move || match (failure.get(), shown.get()) {
                    (Some(problem), _) => view! { <p class="banner error" role="alert">{problem}</p> }.into_any(),
                    (None, Some((query, list))) => {
                        view! { <JobsTable query list=list.jobs total=list.total total_capped=list.total_capped/> }
                            .into_any()
                    }
                    (None, None) => view! { <p class="loading" role="status">"Loading jobs…"</p> }.into_any(),
                }}
            </div>
        </section>
    }
}

/// One `<select>` of the filter bar.
#[component]
fn FilterSelect(
    id: &'static str,
    label: &'static str,
    /// (value, text) pairs.
    #[prop(into)]
    options: Signal<Vec<(String, String)>>,
    #[prop(into)] selected: Signal<String>,
    #[prop(into)] on_pick: Callback<String>,
) -> impl IntoView {
    view! {
        <div class="filter">
            <label for=id>{label}</label>
            <select id=id on:change=move |ev| on_pick.run(event_target_value(&ev))>
                {move || {
                    let current = selected.get();
                    options
                        .get()
                        .into_iter()
                        .map(|(value, text)| {
                            let chosen = value == current;
                            view! { <option value=value prop:selected=chosen>{text}</option> }
                        })
                        .collect_view()
                }}
            </select>
        </div>
    }
}

/// The filter bar. Every change becomes a new address; typing in the name
/// box replaces the current history entry (after a short pause) instead of
/// adding one per key.
#[component]
fn ListFilters(query: Memo<ListQuery>) -> impl IntoView {
    let session = use_session();
    let (push, replace) = (use_navigate(), use_navigate_replace());
    let go = Callback::new(
        move |(next, replacing): (ListQuery, bool)| {
            if replacing {
                replace(&next.href())
            } else {
                push(&next.href())
            }
        },
    );
    let pick = move |change: fn(&mut ListQuery, String)| {
        Callback::new(move |value: String| {
            let mut next = query.get_untracked();
            next.page = 1;
            change(&mut next, value);
            go.run((next, false));
        })
    };
    // The groups only fill the filter's choices: without them the filter
    // still works from the address, so a failure here is not shown.
    let node_groups = RwSignal::new(Vec::<String>::new());
    leptos::task::spawn_local(async move {
        if let Ok(names) = api::node_group_names().await {
            node_groups.try_set(names);
        }
    });

    // The name box keeps its own text while the user types; the address
    // catches up after a pause. The box follows the address only when the
    // address changes for another reason (back button, a link).
    let text = RwSignal::new(query.get_untracked().text);
    let typed = StoredValue::new(query.get_untracked().text);
    Effect::new(move |_| {
        let from_address = query.with(|q| q.text.clone());
        if from_address != typed.get_value() {
            typed.set_value(from_address.clone());
            text.set(from_address);
        }
    });
    let typing_round = StoredValue::new(0u32);
    let on_text = move |ev: leptos::ev::Event| {
        text.set(event_target_value(&ev));
        let round = typing_round.get_value() + 1;
        typing_round.set_value(round);
        leptos::task::spawn_local(async move {
            sleep(300).await;
            if typing_round.try_get_value() != Some(round) {
                return;
            }
            let value = text.get_untracked();
            typed.set_value(value.clone());
            go.run((ListQuery { text: value, page: 1, ..query.get_untracked() }, true));
        });
    };

    let pair = |value: &str, text: &str| (value.to_string(), text.to_string());
    let state_options = Signal::derive(move || {
        let mut options = vec![pair("", "Any state")];
        options.extend(FILTER_STATES.iter().map(|s| pair(s.as_str(), s.as_str())));
        query.with(|q| {
            if q.states.len() > 1 {
                options.push(pair("several", &q.states.join(", ")));
            }
        });
        options
    });
    let state_value = Signal::derive(move || {
        query.with(|q| match q.states.len() {
            0 => String::new(),
            1 => q.states[0].clone(),
            _ => "several".to_string(),
        })
    });
    let on_state = pick(|q, value| {
        if value != "several" {
            q.states = if value.is_empty() { vec![] } else { vec![value] };
        }
    });

    let owner_options = Signal::derive(move || {
        let mut options = vec![pair("", "Everyone"), pair("mine", "Me")];
        if let Some(by) = query.with(|q| q.created_by.clone()) {
            if Some(&by) != session.user.get().as_ref() {
                options.push(pair("other", &by));
            }
        }
        options
    });
    let owner_value = Signal::derive(move || {
        query.with(|q| match (&q.created_by, session.user.get()) {
            (None, _) => String::new(),
            (Some(by), Some(me)) if *by == me => "mine".into(),
            (Some(_), _) => "other".into(),
        })
    });
    let on_owner = Callback::new(move |value: String| {
        let created_by = match value.as_str() {
            "mine" => session.user.get_untracked(),
            "other" => return,
            _ => None,
        };
        go.run((ListQuery { created_by, page: 1, ..query.get_untracked() }, false));
    });

    let group_options = Signal::derive(move || {
        let mut names = node_groups.get();
        // A group named by the address stays selectable even if the list of
        // groups is not there (yet).
        for wanted in query.with(|q| q.node_groups.clone()) {
            if !names.contains(&wanted) {
                names.push(wanted);
            }
        }
        let mut options = vec![pair("", "Any node group")];
        options.extend(names.iter().map(|n| pair(n, n)));
        options
    });
    let group_value = Signal::derive(move || query.with(|q| q.node_groups.first().cloned().unwrap_or_default()));
    let on_group = pick(|q, value| q.node_groups = if value.is_empty() { vec![] } else { vec![value] });

    view! {
        <form class="filters" role="search" aria-label="Filter jobs" on:submit=|ev| ev.prevent_default()>
            <div class="filter">
                <label for="filter-text">"Name"</label>
                <input
                    id="filter-text"
                    type="search"
                    placeholder="Filter by name"
                    autocomplete="off"
                    prop:value=move || text.get()
                    on:input=on_text
                />
            </div>
            <FilterSelect id="filter-state" label="State" options=state_options selected=state_value on_pick=on_state/>
            <FilterSelect id="filter-owner" label="Created by" options=owner_options selected=owner_value on_pick=on_owner/>
            <FilterSelect id="filter-group" label="Node group" options=group_options selected=group_value on_pick=on_group/>
            <Show when=move || query.with(ListQuery::is_filtered)>
                <a class="clear-filters" href=routes::JOBS>"Clear filters"</a>
            </Show>
        </form>
    }
}

/// The table of one page of jobs, kept up to date by polling the same query.
#[component]
fn JobsTable(query: ListQuery, list: Vec<LeptonJob>, total: i64, total_capped: bool) -> impl IntoView {
    let rows = RwSignal::new(job_rows(&list, now_millis()));
    let total = RwSignal::new(total);
    let capped = RwSignal::new(total_capped);
    let problem = RwSignal::new(None::<String>);
    let sign_in_again = use_sign_in_again();
    let api_query = query.to_query();
    // The jobs' changes come through the event stream; between them the
    // last answer's running times go on counting.
    event_stream::follow("jobs=true".into());
    let shown = Rc::new(RefCell::new(list));
    let counted = shown.clone();
    every_second(move || set_if_changed(rows, job_rows(&counted.borrow(), now_millis())));
    poll(
        POLL_INTERVAL_MS,
        &[StreamMessage::Job, StreamMessage::JobDeleted],
        move || {
            let api_query = api_query.clone();
            async move { api::list_jobs(&api_query).await }
        },
        move |answer| {
            if let Some(list) = take_answer(answer, problem, &sign_in_again) {
                set_if_changed(total, list.total);
                set_if_changed(capped, list.total_capped);
                set_if_changed(rows, job_rows(&list.jobs, now_millis()));
                *shown.borrow_mut() = list.jobs;
            }
        },
    );
    view! {
        <LiveNote problem/>
        <JobRows query rows total capped/>
    }
}

/// Each job as a keyed row of cells.
pub fn job_rows(jobs: &[LeptonJob], now: i64) -> Vec<(String, Vec<Cell>)> {
    jobs.iter().map(|job| (job.id().to_string(), job_cells(job, now))).collect()
}

/// One job's cells, in the order of `list_head`.
pub fn job_cells(job: &LeptonJob, now: i64) -> Vec<Cell> {
    let state = job.state().unwrap_or(JobState::Unknown);
    let status = job.status.clone().unwrap_or_default();
    vec![
        Cell::Link {
            href: routes::job(job.id()),
            text: job.metadata.name.clone().unwrap_or_else(|| job.id().to_string()),
            label: None,
        },
        Cell::Badge {
            tone: state_tone(state),
            text: state.as_str().to_string(),
            // A running job on GPUs says how busy they are, and when they
            // have sat idle for ten minutes.
            note: match (status.gpu_utilization, status.gpu_idle) {
                (Some(_), true) => "GPU idle".to_string(),
                // Rounded as an integer: formatting a float would bring
                // core's float printing (about 10 KB) into the list's download.
                (Some(utilization), false) => format!("GPU {} %", utilization.round() as i64),
                (None, _) => status.reason.unwrap_or_default(),
            },
        },
        Cell::text(job.metadata.created_by.clone().unwrap_or_default()),
        Cell::text(node_groups_of(job)),
        Cell::mono(shape_of(job)),
        Cell::Counts([status.succeeded, status.active, status.failed, completions_of(job)]),
        Cell::text(job.metadata.created_at.map(format_time_short).unwrap_or_default()),
        Cell::text(job_duration(job, now)),
    ]
}

/// The list's column headers; name, state and created sort the list.
fn list_head(query: &ListQuery) -> Vec<Head> {
    let current = query.sort.as_deref().unwrap_or("created_at");
    let order = if query.is_ascending() { "ascending" } else { "descending" };
    let sortable = |label, column: &str| Head {
        label,
        sort: Some((query.sorted_by(column).href(), (current == column).then_some(order))),
        title: None,
    };
    vec![
        sortable("Name", "name"),
        sortable("State", "state"),
        Head::plain("Owner"),
        Head::plain("Node group"),
        Head::plain("Shape"),
        Head { label: "Replicas", sort: None, title: Some("succeeded / running / failed of completions") },
        sortable("Created", "created_at"),
        Head::plain("Duration"),
    ]
}

/// The rows and the paging bar, or the empty state that fits the filters.
/// A `capped` total is a lower bound: the server stopped counting there.
#[component]
pub fn JobRows(
    query: ListQuery,
    rows: Rows,
    #[prop(into)] total: Signal<i64>,
    #[prop(optional, into)] capped: Signal<bool>,
) -> impl IntoView {
    let empty_query = query.clone();
    let empty = move || empty_state(&empty_query, total.get());
    let head = list_head(&query);
    view! {
        <Show when=move || rows.with(|r| !r.is_empty()) fallback=empty>
            <DataTable class="jobs" caption="Jobs" head=head.clone() rows/>
            <Pager query=query.clone() shown=Signal::derive(move || rows.with(|r| r.len() as i64)) total capped/>
        </Show>
    }
}

fn empty_state(query: &ListQuery, total: i64) -> AnyView {
    let (message, href, link) = if query.page > 1 && total > 0 {
        let size = i64::from(query.page_size.unwrap_or(routes::DEFAULT_PAGE_SIZE));
        let last = ((total + size - 1) / size).max(1) as u32;
        (
            format!("Page {} is past the end of the list.", query.page),
            query.with_page(last).href(),
            format!("Go to the last page ({last})"),
        )
    } else if query.is_filtered() {
        ("No jobs match these filters.".into(), routes::JOBS.into(), "Clear filters".into())
    } else {
        ("No jobs yet.".into(), routes::NEW_JOB.into(), "Deploy one with New job".into())
    };
    view! {
        <div class="empty">
            <p>{message}</p>
            <p><a href=href>{link}</a></p>
        </div>
    }
    .into_any()
}

/// "Showing 51–100 of 1,234" and links to the neighbouring pages.
#[component]
fn Pager(
    query: ListQuery,
    #[prop(into)] shown: Signal<i64>,
    #[prop(into)] total: Signal<i64>,
    #[prop(into)] capped: Signal<bool>,
) -> impl IntoView {
    let size = i64::from(query.page_size.unwrap_or(routes::DEFAULT_PAGE_SIZE));
    let first = (i64::from(query.page) - 1) * size;
    let previous = (query.page > 1).then(|| query.with_page(query.page - 1).href());
    let next = query.with_page(query.page + 1).href();
    let has_next = move || first + shown.get() < total.get() || capped.get();
    view! {
        <nav class="pager" aria-label="Pages">
            <p class="count" role="status">
                {move || {
                    let more = if capped.get() { "more than " } else { "" };
                    format!("Showing {}–{} of {more}{} jobs", first + 1, first + shown.get(), total.get())
                }}
            </p>
            <PageLink href=previous rel="prev" text="Previous page"/>
            <PageLink href=Signal::derive(move || has_next().then(|| next.clone())) rel="next" text="Next page"/>
        </nav>
    }
}

/// A link to a neighbouring page, or its greyed-out text when there is none.
#[component]
fn PageLink(#[prop(into)] href: Signal<Option<String>>, rel: &'static str, text: &'static str) -> impl IntoView {
    move || match href.get() {
        Some(href) => view! { <a href=href rel=rel>{text}</a> }.into_any(),
        None => view! { <span class="disabled" aria-disabled="true">{text}</span> }.into_any(),
    }
}

/// The number of replicas a job runs to completion.
pub fn completions_of(job: &LeptonJob) -> i64 {
    job.spec.completions.or(job.spec.workers).unwrap_or(1).max(1)
}

/// The job's resource shape, or "default" for a job that names none (the
/// server runs it with its first shape).
pub fn shape_of(job: &LeptonJob) -> String {
    job.spec.resource_shape.clone().unwrap_or_else(|| "default".to_string())
}

/// The node groups a job may run in, or "any".
pub fn node_groups_of(job: &LeptonJob) -> String {
    job.spec
        .affinity
        .as_ref()
        .and_then(|a| a.allowed_dedicated_node_groups.as_ref())
        .filter(|groups| !groups.is_empty())
        .map(|groups| groups.join(", "))
        .unwrap_or_else(|| "any".to_string())
}

/// (succeeded, running, failed, completions) of a job.
pub fn replica_counts(job: &LeptonJob) -> (i64, i64, i64, i64) {
    let status = job.status.clone().unwrap_or_default();
    (status.succeeded, status.active, status.failed, completions_of(job))
}

/// How long a job has run: from its start to its end, or to `now` while it
/// is still going. A dash when it never started or the end is unknown.
pub fn job_duration(job: &LeptonJob, now_millis: i64) -> String {
    let Some(status) = job.status.as_ref() else { return "—".into() };
    let Some(start) = status.creation_time else { return "—".into() };
    let end = match (status.completion_time, status.state) {
        (Some(end), _) => end,
        (None, Some(state)) if state.is_terminal() => return "—".into(),
        (None, _) => now_millis / 1000,
    };
    format_duration(end - start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{click, job, mount, text_of};
    use jobdeck_api::JobState;

    const NOW: i64 = 10_000_000;

    async fn table(query: &str, jobs: Vec<LeptonJob>, total: i64) -> (web_sys::HtmlElement, Rows, RwSignal<i64>) {
        let query = ListQuery::parse(query);
        let rows = RwSignal::new(job_rows(&jobs, NOW));
        let total = RwSignal::new(total);
        let host = mount(move || view! { <JobRows query=query.clone() rows total/> });
        // The rows are drawn right after mounting.
        sleep(0).await;
        (host, rows, total)
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    async fn an_empty_list_says_how_to_create_a_job() {
        let (host, _, _) = table("", vec![], 0).await;
        let text = text_of(&host);
        assert!(text.contains("No jobs yet."), "{text}");
        assert!(host.query_selector("table").unwrap().is_none());
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    async fn an_empty_filtered_list_offers_to_clear_the_filters() {
        let (host, _, _) = table("status=Failed&q=zzz", vec![], 0).await;
        let text = text_of(&host);
        assert!(text.contains("No jobs match these filters."), "{text}");
        let link = host.query_selector(".empty a").unwrap().unwrap();
        assert_eq!(link.get_attribute("href").as_deref(), Some("/jobs"));
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    async fn a_page_past_the_end_links_to_the_last_page() {
        let (host, _, _) = table("page=9&q=a", vec![], 120).await;
        let link = host.query_selector(".empty a").unwrap().unwrap();
        assert_eq!(link.get_attribute("href").as_deref(), Some("/jobs?q=a&page=3"));
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    async fn each_job_is_a_row_with_every_column() {
        let mut train = job("train-ab12c", "train", "alice", JobState::Running);
        train.spec.resource_shape = Some("cpu.small".into());
        train.spec.completions = Some(4);
        train.spec.affinity = Some(jobdeck_api::Affinity {
            allowed_dedicated_node_groups: Some(vec!["gpu-a".into()]),
            ..Default::default()
        });
        let status = train.status.as_mut().unwrap();
        status.succeeded = 2;
        status.active = 1;
        status.failed = 1;
        status.creation_time = Some(10_000 - 65);
        let (host, _, _) = table("", vec![train, job("eval-x", "eval", "bob", JobState::Failed)], 7).await;
        let rows = host.query_selector_all("tbody tr").unwrap();
        assert_eq!(rows.length(), 2);
        let link = host.query_selector("tbody tr a").unwrap().expect("a link in the row");
        assert_eq!(link.get_attribute("href").as_deref(), Some("/jobs/train-ab12c"));
        assert_eq!(link.text_content().as_deref(), Some("train"));
        let first = text_of(&host.query_selector("tbody tr").unwrap().unwrap());
        for expected in ["Running", "alice", "gpu-a", "cpu.small", "2 succeeded, 1 running, 1 failed of 4", "1m 05s"] {
            assert!(first.contains(expected), "{expected:?} in {first:?}");
        }
        let second = text_of(&host.query_selector("tbody tr:nth-child(2)").unwrap().unwrap());
        assert!(second.contains("default"), "a job without a shape runs on the default one: {second:?}");
        let badge = host.query_selector("tbody tr:nth-child(2) .badge").unwrap().unwrap();
        assert_eq!(badge.text_content().as_deref(), Some("Failed"));
        assert_eq!(badge.class_name(), "badge bad");
        assert!(text_of(&host).contains("Showing 1–2 of 7 jobs"));
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn a_running_job_on_gpus_says_how_busy_they_are() {
        let note = |utilization: Option<f64>, idle: bool| {
            let mut running = job("g-1", "g", "alice", JobState::Running);
            let status = running.status.as_mut().unwrap();
            status.reason = Some("Running".into());
            status.gpu_utilization = utilization;
            status.gpu_idle = idle;
            match &job_cells(&running, NOW)[1] {
                Cell::Badge { note, .. } => note.clone(),
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(note(Some(87.4), false), "GPU 87 %");
        assert_eq!(note(Some(99.6), false), "GPU 100 %");
        assert_eq!(note(Some(1.0), true), "GPU idle");
        assert_eq!(note(None, false), "Running");
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    async fn a_state_change_patches_the_row_in_place() {
        let (host, rows, _) =
            table("", vec![job("a-1", "a", "alice", JobState::Queueing), job("b-1", "b", "bob", JobState::Running)], 2)
                .await;
        let row_b = host.query_selector("tbody tr:nth-child(2)").unwrap().unwrap();
        let link_a: web_sys::HtmlElement =
            wasm_bindgen::JsCast::unchecked_into(host.query_selector("tbody tr a").unwrap().unwrap());
        link_a.focus().unwrap();
        set_if_changed(
            rows,
            job_rows(&[job("a-1", "a", "alice", JobState::Running), job("b-1", "b", "bob", JobState::Completed)], NOW),
        );
        sleep(0).await;
        let text = text_of(&host);
        assert!(!text.contains("Queueing") && text.contains("Completed"), "{text}");
        // The very same row element, and the focused link kept its focus.
        let row_b_after = host.query_selector("tbody tr:nth-child(2)").unwrap().unwrap();
        assert!(row_b.is_same_node(Some(&row_b_after)));
        let active = web_sys::window().unwrap().document().unwrap().active_element().unwrap();
        assert!(active.is_same_node(Some(&link_a)));
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    async fn paging_links_carry_the_filters() {
        let jobs: Vec<LeptonJob> = (0..2).map(|i| job(&format!("j-{i}"), "j", "alice", JobState::Running)).collect();
        let (host, _, _) = table("status=Running&page=2&page_size=2", jobs, 7).await;
        assert!(text_of(&host).contains("Showing 3–4 of 7 jobs"));
        let prev = host.query_selector("a[rel=prev]").unwrap().unwrap();
        assert_eq!(prev.get_attribute("href").as_deref(), Some("/jobs?status=Running&page_size=2"));
        let next = host.query_selector("a[rel=next]").unwrap().unwrap();
        assert_eq!(next.get_attribute("href").as_deref(), Some("/jobs?status=Running&page=3&page_size=2"));

        let (last, _, _) = table("page=4&page_size=2", vec![job("j-9", "j", "a", JobState::Running)], 7).await;
        assert!(last.query_selector("a[rel=next]").unwrap().is_none(), "no next page after the last");
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    async fn a_capped_total_says_more_than_and_keeps_the_next_page() {
        let query = ListQuery::parse("q=e&page=20&page_size=50");
        let rows = RwSignal::new(job_rows(&[job("e-1", "e", "alice", JobState::Running)], NOW));
        let host = mount(move || {
            view! { <JobRows query=query.clone() rows total=Signal::stored(1_000) capped=Signal::stored(true)/> }
        });
        sleep(0).await;
        assert!(text_of(&host).contains("Showing 951–951 of more than 1000 jobs"), "{}", text_of(&host));
        let next = host.query_selector("a[rel=next]").unwrap().unwrap();
        assert_eq!(next.get_attribute("href").as_deref(), Some("/jobs?q=e&page=21&page_size=50"));
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    async fn headers_sort_by_their_column() {
        let (host, _, _) = table("q=x", vec![job("a-1", "a", "alice", JobState::Running)], 1).await;
        let created = host.query_selector("th[aria-sort]").unwrap().unwrap();
        assert_eq!(created.get_attribute("aria-sort").as_deref(), Some("descending"));
        assert!(text_of(&created).contains("Created"));
        let links: Vec<String> = (0..3)
            .map(|i| host.query_selector_all("th a.sort").unwrap().get(i).unwrap())
            .map(|n| wasm_bindgen::JsCast::unchecked_into::<web_sys::Element>(n).get_attribute("href").unwrap())
            .collect();
        assert_eq!(links, ["/jobs?q=x&sort=name&order=asc", "/jobs?q=x&sort=state", "/jobs?q=x&order=asc"]);
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    async fn filters_become_the_address() {
        crate::fixtures::set_address("/jobs?q=old");
        let host = mount(|| {
            let url = use_url();
            let query = Memo::new(move |_| url.with(|u| ListQuery::parse(&u.query)));
            // Another way of reaching a new address: a link elsewhere, or
            // the back button.
            let navigate = use_navigate();
            view! {
                <ListFilters query/>
                <button id="elsewhere" on:click=move |_| navigate(routes::JOBS)>"Elsewhere"</button>
            }
        });
        let address = || crate::fixtures::address();
        crate::components::live::sleep(20).await;
        let input: web_sys::HtmlInputElement =
            wasm_bindgen::JsCast::unchecked_into(host.query_selector("#filter-text").unwrap().unwrap());
        assert_eq!(input.value(), "old", "the box shows the address's text ({})", address());

        crate::fixtures::choose(&host, "#filter-state", "Failed");
        crate::components::live::sleep(20).await;
        assert_eq!(address(), "/jobs?q=old&status=Failed");

        input.set_value("new name");
        input.dispatch_event(&web_sys::Event::new("input").unwrap()).unwrap();
        crate::components::live::sleep(450).await;
        assert_eq!(address(), "/jobs?q=new%20name&status=Failed");
        assert_eq!(input.value(), "new name");

        crate::fixtures::choose(&host, "#filter-state", "");
        crate::components::live::sleep(20).await;
        assert_eq!(address(), "/jobs?q=new%20name");
        let clear = host.query_selector(".clear-filters").unwrap().unwrap();
        assert_eq!(clear.get_attribute("href").as_deref(), Some("/jobs"));
        click(&host, "#elsewhere");
        crate::fixtures::wait_for("the cleared address", || address() == "/jobs").await;
        crate::components::live::sleep(20).await;
        assert_eq!(input.value(), "", "the box follows the address when it changes elsewhere");
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn durations() {
        let mut j = job("a", "a", "u", JobState::Running);
        assert_eq!(job_duration(&j, 100_000), "—");
        j.status.as_mut().unwrap().creation_time = Some(40);
        assert_eq!(job_duration(&j, 100_000), "1m 00s");
        j.status.as_mut().unwrap().state = Some(JobState::Stopped);
        assert_eq!(job_duration(&j, 100_000), "—");
        j.status.as_mut().unwrap().completion_time = Some(50);
        assert_eq!(job_duration(&j, 100_000), "10s");
    }
}
