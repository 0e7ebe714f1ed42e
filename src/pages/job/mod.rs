//! The job page: `/jobs/<id>` (overview) and its other tabs, each a route of
//! its own (`/jobs/<id>/replicas`, `/events`, `/logs?replica=…`).
//!
//! `JobPage` loads the job once, keeps it up to date every second and
//! provides it to the tabs through `JobContext`; the header with the state
//! and the actions stays in place while the tabs change below it.

pub mod actions;
pub mod ansi;
pub mod chart;
pub mod events;
pub mod failure;
pub mod log_viewer;
pub mod logs;
pub mod metrics;
pub mod numbers;
pub mod overview;
pub mod ranks;
pub mod replicas;
pub mod rerun;
pub mod timeline;

use jobdeck_api::{JobState, JobStatus, LeptonJob, Metadata, StreamMessage};
use leptos::prelude::*;

use crate::api::{self, ApiFailure, JobJson};
use crate::components::api_error::{use_sign_in_again, LiveNote};
use crate::components::dom;
use crate::components::event_stream;
use crate::components::lazy_view::{lazy_switch, load, split_view, SplitLoaderError};
use crate::components::live::{every_second, load_and_poll, set_if_changed, take_answer, POLL_INTERVAL_MS};
use crate::components::state_badge::state_tone;
use crate::components::time::now_millis;
use crate::pages::job::actions::JobActions;
use crate::router::use_url;
use crate::routes::{self, encode_component, Route};
use crate::session::{require_sign_in, use_session};

/// The job the page shows, for its tabs.
#[derive(Clone, Copy)]
pub struct JobContext {
    /// The job id from the address.
    pub id: Signal<String>,
    /// The job as last read, its specification but for what the header and
    /// the tabs use left out (`JobJson::summary`); set before any tab
    /// renders.
    pub job: RwSignal<Option<LeptonJob>>,
    /// The same answer as the browser parsed it, for the overview to read
    /// the whole job from (`JobJson::whole`).
    pub json: RwSignal<Option<JobJson>>,
    /// The time of the last update, for durations of things still running.
    pub now: RwSignal<i64>,
    /// How many times `job` was written; a poll's answer carries the count
    /// from when it asked (see `offer_job`).
    writes: StoredValue<u64>,
}

impl JobContext {
    fn new(id: Signal<String>) -> Self {
        JobContext {
            id,
            job: RwSignal::new(None),
            json: RwSignal::new(None),
            now: RwSignal::new(now_millis()),
            writes: StoredValue::new(0),
        }
    }

    /// Shows the job as the server answered a user's action.
    pub fn set_job(&self, job: LeptonJob, json: Option<JobJson>) {
        self.writes.update_value(|w| *w += 1);
        self.job.set(Some(job));
        self.json.set(json);
    }

    /// What a poll takes before it asks the server.
    pub fn ticket(&self) -> u64 {
        self.writes.get_value()
    }

    /// A poll's answer, shown only if nothing was written since the poll
    /// asked: the answer to a Stop that arrives while a poll is under way is
    /// newer than the poll's, and must not be replaced by it. The next poll
    /// brings the current state either way.
    pub fn offer_job(&self, ticket: u64, job: LeptonJob, json: Option<JobJson>) -> bool {
        if self.writes.try_get_value() != Some(ticket) {
            return false;
        }
        self.writes.update_value(|w| *w += 1);
        // A poll reads what `JobJson::summary` reads, so that is what is
        // compared: comparing whole specifications would be code (for every
        // field of the contract) that this page never needs.
        fn read(j: &LeptonJob) -> (&Metadata, &Option<JobStatus>, Option<bool>, Option<i64>, Option<i64>) {
            (&j.metadata, &j.status, j.spec.stopped, j.spec.completions, j.spec.workers)
        }
        if self.job.with_untracked(|old| old.as_ref().map(read) != Some(read(&job))) {
            self.job.set(Some(job));
        }
        self.json.set(json);
        true
    }

    /// Reads a value from the job (tracked), or the default before it loaded.
    pub fn read<T: Default>(&self, f: impl FnOnce(&LeptonJob) -> T) -> T {
        self.job.with(|job| job.as_ref().map(f).unwrap_or_default())
    }
}

pub fn use_job() -> JobContext {
    crate::provided::<JobContext>()
}

/// Where the job page is: the job loads once, then the same sequence of
/// requests keeps it up to date (`load_and_poll`), so the first answer and
/// the refreshes are one stream and no loading machinery of its own is
/// needed (a Leptos `Resource` and its transition would be kilobytes of the
/// download, std's thread handle among them).
#[derive(Debug, Clone, PartialEq)]
enum Phase {
    Loading,
    Shown,
    /// The job does not exist, is not visible, or was deleted (or made
    /// private) while the page was open.
    Missing,
    /// The first load failed; the next round tries again.
    Failed(String),
}

/// The phase an answer moves the page to, if it moves it (`None`: a failed
/// update while the job is shown, or a token no longer accepted, which
/// `take_answer` handles).
fn phase_after<T>(shown: bool, answer: &Result<T, ApiFailure>) -> Option<Phase> {
    match answer {
        Ok(_) => Some(Phase::Shown),
        Err(ApiFailure::NotFound(_)) => Some(Phase::Missing),
        Err(ApiFailure::Unauthorized) => None,
        Err(_) if shown => None,
        Err(failure) => Some(Phase::Failed(failure.to_string())),
    }
}

#[component]
pub fn JobPage(id: String) -> impl IntoView {
    let signed_in = require_sign_in();
    // The app renders a new page for another id, so the id is fixed here.
    let id = Signal::stored(id);
    let context = JobContext::new(id);
    provide_context(context);
    let phase = RwSignal::new(Phase::Loading);
    let problem = RwSignal::new(None::<String>);
    let sign_in_again = use_sign_in_again();
    if signed_in {
        // The job's changes (its state, replicas, events, metrics) come
        // through the event stream and wake every tab's requests; between
        // them the page's clock goes on counting.
        event_stream::follow(format!("job={}", encode_component(&id.get_untracked())));
        every_second(move || context.now.set(now_millis()));
        load_and_poll(
            POLL_INTERVAL_MS,
            &[StreamMessage::Job, StreamMessage::JobDeleted],
            move || {
                let id = context.id.get_untracked();
                let ticket = context.ticket();
                async move {
                    let answer = api::job_json(&id).await.and_then(|json| Ok((json.summary()?, json)));
                    (ticket, answer)
                }
            },
            move |(ticket, answer)| {
                context.now.set(now_millis());
                match phase_after(phase.get_untracked() == Phase::Shown, &answer) {
                    Some(Phase::Shown) | None => {
                        if let Some((job, json)) = take_answer(answer, problem, &sign_in_again) {
                            context.offer_job(ticket, job, Some(json));
                            set_if_changed(phase, Phase::Shown);
                        }
                    }
                    Some(other) => set_if_changed(phase, other),
                }
            },
        );
    }
    view! {
        <section class="page">
            {move || match phase.get() {
                Phase::Loading => view! { <p class="loading" role="status">"Loading job…"</p> }.into_any(),
                Phase::Shown => view! { <JobView problem/> }.into_any(),
                Phase::Missing => view! { <JobNotFound id=id.get_untracked()/> }.into_any(),
                Phase::Failed(message) => {
                    view! { <div class="banner error" role="alert"><p>{message}</p></div> }.into_any()
                }
            }}
        </section>
    }
}

/// The page for a job that does not exist or that the user may not see: the
/// same words for both, so the page does not tell whether a private job of
/// that name exists.
#[component]
pub fn JobNotFound(id: String) -> impl IntoView {
    view! {
        <div class="not-found">
            <h1>"Job not found"</h1>
            <p>
                "There is no job " <code>{id}</code> " that you can see. "
                "It may have been deleted, or be private to its creator."
            </p>
            <p><a href=routes::JOBS>"Go to the deployments list"</a></p>
        </div>
    }
}

/// The loaded job: header, actions, tabs and the current tab, all live;
/// `problem` says when the page's updates fail.
#[component]
fn JobView(problem: RwSignal<Option<String>>) -> impl IntoView {
    let context = use_job();
    let session = use_session();
    let url = use_url();
    let tab = Memo::new(move |_| match Route::parse(&url.with(|u| u.path.clone())) {
        Route::Job { tab, .. } => tab,
        _ => "overview".to_string(),
    });
    // The heading and the tab bar are drawn by one render effect (each
    // effect is its own code): the tabs when the tab changes, the heading
    // when what it shows changed, not at every change of the job.
    let top = NodeRef::<leptos::html::Div>::new();
    let tab_bar = NodeRef::<leptos::html::Div>::new();
    let draw_heading = RenderEffect::new(move |drawn: Option<Option<Heading>>| {
        if let Some(tab_bar) = tab_bar.get() {
            draw_tabs(&tab_bar, &context.id.get_untracked(), &tab.read());
        }
        let top = top.get()?;
        let heading = context.job.with(|job| job.as_ref().map(Heading::of))?;
        if drawn.flatten().as_ref() != Some(&heading) {
            heading.draw(&top);
        }
        Some(heading)
    });
    on_cleanup(move || drop(draw_heading));
    let user = Signal::derive(move || session.user.get().zip(session.role.get()));
    let on_update = Callback::new(move |updated: JobJson| match updated.summary() {
        Ok(job) => context.set_job(job, Some(updated)),
        Err(failure) => problem.set(Some(failure.to_string())),
    });

    view! {
        <div node_ref=top></div>
        <JobActions job=context.job user on_update/>
        <LiveNote problem/>
        <div node_ref=tab_bar></div>
        <div class="tab-panel">{lazy_switch(tab, preload_tab, tab_view)}</div>
    }
}

/// What the top of the job page shows: the crumbs, the name with the
/// state's badge, and why the job is in that state.
///
/// Drawn straight into the page (`components/dom.rs`), as the tables are,
/// with the tab bar by one render effect: as typed views they were 1.9 KB
/// more of the job page's download (docs/measurements.md, "A decoder from
/// the contract's attributes; the job page's heading and actions").
#[derive(PartialEq)]
struct Heading {
    name: String,
    state: JobState,
    reason: String,
}

impl Heading {
    fn of(job: &LeptonJob) -> Heading {
        let status = job.status.as_ref();
        let reason = match (status.and_then(|s| s.reason.as_deref()), status.and_then(|s| s.message.as_deref())) {
            (Some(r), Some(m)) if !m.is_empty() => format!("{r}: {m}"),
            (Some(r), _) => r.to_string(),
            (None, Some(m)) => m.to_string(),
            (None, None) => String::new(),
        };
        Heading {
            name: job.metadata.name.clone().unwrap_or_else(|| job.id().to_string()),
            state: job.state().unwrap_or(JobState::Unknown),
            reason,
        }
    }

    /// Shows this heading in `top`: the elements are made the first time
    /// and keep their identity after, so only their words and the badge's
    /// colour change.
    fn draw(&self, top: &web_sys::Element) {
        if top.child_element_count() == 0 {
            let crumbs = dom::child(top, "nav", "crumbs", "");
            dom::set(&crumbs, "aria-label", "Breadcrumb");
            dom::set(&dom::child(&crumbs, "a", "", "Deployments"), "href", routes::JOBS);
            dom::set(&dom::child(&crumbs, "span", "", " / "), "aria-hidden", "true");
            let head = dom::child(top, "div", "page-head job-head", "");
            dom::child(&head, "h1", "", "");
            dom::child(&head, "span", "", "");
            dom::child(top, "p", "reason-line", "");
        }
        let part = |selector: &str| top.query_selector(selector).ok().flatten();
        if let Some(name) = part(".job-head h1") {
            name.set_text_content(Some(&self.name));
        }
        if let Some(badge) = part(".job-head span") {
            dom::set(&badge, "class", &format!("badge {}", state_tone(self.state)));
            badge.set_text_content(Some(self.state.as_str()));
        }
        if let Some(reason) = part(".reason-line") {
            reason.set_text_content(Some(&self.reason));
        }
    }
}

/// A tab's view. Every tab is a split point of the console's WebAssembly,
/// one each: its code (the facts and the specification's reader, the replica
/// table and timeline, the events, the log viewer, the charts, the failure
/// analysis) downloads the first time that tab is opened, so a link to a
/// job's logs does not also carry the charts, the analysis or the reader of
/// a job's whole specification. A cold load asks for the job page's module
/// and its tab's at once (`preload_tab`).
async fn tab_view(tab: String) -> Result<AnyView, SplitLoaderError> {
    match tab.as_str() {
        "replicas" => load!(replicas_tab()),
        "events" => load!(events_tab()),
        "logs" => load!(logs_tab()),
        "ranks" => load!(ranks_tab()),
        "metrics" => load!(metrics_tab()),
        "failure" => load!(failure_tab()),
        _ => load!(overview_tab()),
    }
}

/// Downloads a tab's module.
#[cfg(not(test))]
pub(crate) async fn preload_tab(tab: String) -> Result<(), SplitLoaderError> {
    match tab.as_str() {
        "replicas" => download_replicas_tab().await,
        "events" => download_events_tab().await,
        "logs" => download_logs_tab().await,
        "ranks" => download_ranks_tab().await,
        "metrics" => download_metrics_tab().await,
        "failure" => download_failure_tab().await,
        _ => download_overview_tab().await,
    }
}
#[cfg(test)]
pub(crate) async fn preload_tab(_: String) -> Result<(), SplitLoaderError> {
    Ok(())
}

split_view!(fn overview_tab(), preload download_overview_tab, { view! { <overview::OverviewTab/> } });
split_view!(fn replicas_tab(), preload download_replicas_tab, { view! { <replicas::ReplicasTab/> } });
split_view!(fn events_tab(), preload download_events_tab, { view! { <events::EventsTab/> } });
split_view!(fn logs_tab(), preload download_logs_tab, { view! { <logs::LogsTab/> } });
split_view!(fn ranks_tab(), preload download_ranks_tab, { view! { <ranks::RanksTab/> } });
split_view!(fn metrics_tab(), preload download_metrics_tab, { view! { <metrics::MetricsTab/> } });
split_view!(fn failure_tab(), preload download_failure_tab, { view! { <failure::FailureTab/> } });

/// Draws the tab bar into `host`: links, so each tab is an address of its
/// own, made the first time; the current one says so (`aria-current`).
fn draw_tabs(host: &web_sys::Element, id: &str, current: &str) {
    if host.child_element_count() == 0 {
        let nav = dom::child(host, "nav", "tabs", "");
        dom::set(&nav, "aria-label", "Job sections");
        for (segment, label) in routes::JOB_TABS {
            dom::set(&dom::child(&nav, "a", "", label), "href", &routes::job_tab(id, segment));
        }
    }
    let Some(nav) = host.first_element_child() else { return };
    let links = nav.children();
    for (index, (segment, _)) in routes::JOB_TABS.iter().enumerate() {
        let Some(link) = links.item(index as u32) else { continue };
        if *segment == current {
            dom::set(&link, "aria-current", "page");
        } else {
            let _ = link.remove_attribute("aria-current");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::mount;
    use jobdeck_api::JobState;

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn every_tab_is_a_link_and_the_current_one_says_so() {
        let host = dom::element("div");
        draw_tabs(&host, "train-1", "replicas");
        let links = host.query_selector_all("nav.tabs a").unwrap();
        let hrefs: Vec<String> = (0..links.length())
            .map(|i| wasm_bindgen::JsCast::unchecked_into::<web_sys::Element>(links.get(i).unwrap()))
            .map(|a| a.get_attribute("href").unwrap())
            .collect();
        assert_eq!(
            hrefs,
            [
                "/jobs/train-1",
                "/jobs/train-1/replicas",
                "/jobs/train-1/events",
                "/jobs/train-1/logs",
                "/jobs/train-1/ranks",
                "/jobs/train-1/metrics",
                "/jobs/train-1/failure"
            ]
        );
        let current = || host.query_selector("[aria-current=page]").unwrap().unwrap().text_content().unwrap();
        assert_eq!(current(), "Replicas");
        assert_eq!(host.query_selector_all("[aria-current]").unwrap().length(), 1);
        let first = host.query_selector("nav.tabs a").unwrap().unwrap();
        draw_tabs(&host, "train-1", "overview");
        assert_eq!(current(), "Overview");
        assert_eq!(host.query_selector_all("[aria-current]").unwrap().length(), 1);
        assert!(host.query_selector("nav.tabs a").unwrap().unwrap().is_same_node(Some(&first)), "links are kept");
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn each_answer_moves_the_page_where_it_should() {
        let down = || ApiFailure::Server { status: 503, message: "restarting".into() };
        let gone = || ApiFailure::NotFound("no job".into());
        // (the job is on screen, the answer, where the page goes)
        let cases: [(bool, Result<(), ApiFailure>, Option<Phase>); 8] = [
            (false, Ok(()), Some(Phase::Shown)),
            (true, Ok(()), Some(Phase::Shown)),
            (false, Err(gone()), Some(Phase::Missing)),
            // Deleted, or made private, while the page was open.
            (true, Err(gone()), Some(Phase::Missing)),
            (false, Err(down()), Some(Phase::Failed(down().to_string()))),
            // A failed update leaves the job on screen, with a note.
            (true, Err(down()), None),
            (false, Err(ApiFailure::Unauthorized), None),
            (true, Err(ApiFailure::Unauthorized), None),
        ];
        for (shown, answer, expected) in cases {
            assert_eq!(phase_after(shown, &answer), expected, "shown={shown} {answer:?}");
        }
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn a_poll_that_asked_before_an_action_answered_does_not_undo_it() {
        let context = JobContext::new(Signal::stored("train-1".to_string()));
        let job = |state| crate::fixtures::job("train-1", "train", "alice", state);
        let shown = || context.job.get_untracked().and_then(|j| j.state());
        context.set_job(job(JobState::Running), None);
        let asked = context.ticket();
        // The Stop's answer arrives while that poll is under way.
        context.set_job(job(JobState::Stopping), None);
        assert!(!context.offer_job(asked, job(JobState::Running), None));
        assert_eq!(shown(), Some(JobState::Stopping));
        // A poll that asks after the answer is shown, and so is the next.
        let asked = context.ticket();
        assert!(context.offer_job(asked, job(JobState::Stopping), None));
        let asked = context.ticket();
        assert!(context.offer_job(asked, job(JobState::Stopped), None));
        assert_eq!(shown(), Some(JobState::Stopped));
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn the_heading_names_the_job_its_state_and_why() {
        let rows: &[(Option<&str>, Option<&str>, &str)] = &[
            (Some("Failed"), Some("replica 0 exited 1"), "Failed: replica 0 exited 1"),
            (Some("Completed"), Some(""), "Completed"),
            (None, Some("waiting for a node"), "waiting for a node"),
            (None, None, ""),
        ];
        for (reason, message, says) in rows {
            let mut job = crate::fixtures::job("train-1", "train", "alice", JobState::Failed);
            let status = job.status.get_or_insert_with(Default::default);
            status.reason = reason.map(str::to_string);
            status.message = message.map(str::to_string);
            assert_eq!(Heading::of(&job).reason, *says, "{reason:?} {message:?}");
        }
        let job = crate::fixtures::job("train-1", "train", "alice", JobState::Failed);
        let top = dom::element("div");
        Heading::of(&job).draw(&top);
        let text = |selector: &str| top.query_selector(selector).unwrap().unwrap().text_content().unwrap();
        assert_eq!(text(".job-head h1"), "train");
        assert_eq!(text(".job-head .badge.bad"), "Failed");
        let crumb = top.query_selector("nav.crumbs a").unwrap().unwrap();
        assert_eq!(crumb.get_attribute("href").as_deref(), Some(routes::JOBS));
        // Drawn again, the same elements show the new words.
        let name = top.query_selector("h1").unwrap().unwrap();
        let stopped = crate::fixtures::job("train-1", "train", "alice", JobState::Stopped);
        Heading::of(&stopped).draw(&top);
        assert_eq!(top.query_selector_all("h1").unwrap().length(), 1);
        assert!(top.query_selector("h1").unwrap().unwrap().is_same_node(Some(&name)));
        assert_eq!(text(".job-head .badge.neutral"), "Stopped");
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn a_missing_job_and_a_hidden_one_read_the_same() {
        let host = mount(|| view! { <JobNotFound id="secret-1".to_string()/> });
        let text = host.text_content().unwrap();
        assert!(text.contains("Job not found"), "{text}");
        assert!(text.contains("There is no job secret-1 that you can see."), "{text}");
    }
}
