//! The overview's reruns section: the job a rerun came from, the reruns of
//! this job, and, for a failed or stopped job with indexes that did not
//! succeed, what a rerun changes and the button that makes one (`POST
//! /jobs/{id}/rerun?only=failed`), which then opens the new job.
//!
//! A split point of its own (`rerun_section`): only a job with reruns or
//! failed indexes needs it, and as part of the overview it put the move from
//! the list to a job over its 40 KB budget (docs/measurements.md,
//! "Rerunning a job's failed indexes"). Drawn straight into the page
//! (`components/dom.rs`) into the element the overview keeps for it; the
//! server sends the three facts only in `GET /jobs/{id}` and the console's
//! `JobStatus` leaves them out, so they are read from the answer
//! (`JobJson::field`).

use std::cell::RefCell;

use jobdeck_api::{LeptonJob, Role};
use leptos::prelude::*;
use leptos::wasm_split::SplitLoaderError;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::Element;

use super::actions::may_act;
use super::JobContext;
use crate::api::{self, JobJson};
use crate::components::dom;
use crate::router::Navigator;
use crate::routes;
use crate::session::Session;

/// What the section shows.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RerunFacts {
    pub id: String,
    /// The job whose failed indexes this one reruns.
    pub rerun_of: Option<String>,
    /// This job's `spec.completion_indexes`, when it runs some indexes only.
    pub indexes: Vec<i64>,
    pub completions: i64,
    /// The reruns of this job the user may see.
    pub reruns: Vec<String>,
    /// The indexes a rerun would run (none: nothing to rerun).
    pub failed: Vec<i64>,
    /// Whether the user may start this job again (and so rerun it).
    pub allowed: bool,
}

impl RerunFacts {
    /// The facts of the answer `json` about `job` for `user`.
    pub fn of(json: &JobJson, job: &LeptonJob, user: Option<(&str, Role)>) -> RerunFacts {
        RerunFacts {
            id: job.id().to_string(),
            rerun_of: json.field("status", "rerun_of"),
            indexes: json.field("spec", "completion_indexes").unwrap_or_default(),
            completions: job.spec.completions(),
            reruns: json.field("status", "reruns").unwrap_or_default(),
            failed: json.field("status", "rerun_indexes").unwrap_or_default(),
            allowed: may_act(user, job),
        }
    }
}

/// Indexes in words, runs of consecutive ones as ranges: "1, 3, 5–9".
pub fn index_ranges(indexes: &[i64]) -> String {
    let mut words = String::new();
    let mut at = 0;
    while at < indexes.len() {
        let mut end = at;
        while end + 1 < indexes.len() && indexes[end + 1] == indexes[end] + 1 {
            end += 1;
        }
        if !words.is_empty() {
            words.push_str(", ");
        }
        words.push_str(&match end - at {
            0 => indexes[at].to_string(),
            1 => format!("{}, {}", indexes[at], indexes[end]),
            _ => format!("{}–{}", indexes[at], indexes[end]),
        });
        at = end + 1;
    }
    words
}

/// The section as drawn: in which element, what it shows, the listener of
/// its button, and whether a rerun is being asked for. One overview shows at
/// a time, so one is kept; the next overview's section replaces it.
struct Shown {
    section: Element,
    facts: RerunFacts,
    busy: bool,
    /// Opens a page of the console (the new job's).
    navigator: Navigator,
    _listener: Closure<dyn Fn(web_sys::Event)>,
}

thread_local! {
    static SHOWN: RefCell<Option<Shown>> = const { RefCell::new(None) };
}

/// The answer's status fields the section shows: the overview downloads
/// the section only for a job that has one of them.
pub const RERUN_FIELDS: [&str; 3] = ["rerun_of", "reruns", "rerun_indexes"];

/// Draws the facts of the job `context` shows, for the user `session`
/// names, into `section`, or leaves it as it is when it shows them already
/// (the overview asks with every answer about the job). Everything is read
/// here rather than by the caller, so the overview's own download carries
/// only the call.
#[cfg_attr(
    not(test),
    leptos::wasm_split::wasm_split(rerun_section, wasm_split_path = ::leptos::wasm_split, fallible)
)]
pub fn draw_reruns(
    section: Element,
    context: JobContext,
    session: Session,
    navigator: Navigator,
) -> Result<(), SplitLoaderError> {
    let user = session.user.get_untracked().zip(session.role.get_untracked());
    let user = user.as_ref().map(|(name, role)| (name.as_str(), *role));
    let facts = context.json.with_untracked(|json| {
        context.job.with_untracked(|job| Some(RerunFacts::of(json.as_ref()?, job.as_ref()?, user)))
    });
    if let Some(facts) = facts {
        show(section, facts, navigator);
    }
    Ok(())
}

/// Draws `facts` into `section` unless it shows them already.
fn show(section: Element, facts: RerunFacts, navigator: Navigator) {
    let same = SHOWN.with_borrow(|shown| shown.as_ref().is_some_and(|s| s.section == section && s.facts == facts));
    if !same {
        draw(&section, &facts);
        let listener = Closure::<dyn Fn(web_sys::Event)>::new(on_click);
        let _ = section.add_event_listener_with_callback("click", listener.as_ref().unchecked_ref());
        // One listener on the section handles its button; the listener of
        // the section drawn before (this one, or another overview's) goes.
        if let Some(old) = SHOWN.take() {
            let _ = old.section.remove_event_listener_with_callback("click", old._listener.as_ref().unchecked_ref());
        }
        SHOWN.set(Some(Shown { section, facts, busy: false, navigator, _listener: listener }));
    }
}

/// The section's text, links and button for `facts`.
fn draw(section: &Element, facts: &RerunFacts) {
    dom::clear(section);
    dom::child(section, "h2", "", "Reruns");
    let of: Vec<String> = facts.rerun_of.iter().cloned().collect();
    let rerun = format!("Reruns indexes {} that failed in ", index_ranges(&facts.indexes));
    for (words, jobs) in [(rerun.as_str(), &of), ("Its failed indexes were rerun as ", &facts.reruns)] {
        if jobs.is_empty() {
            continue;
        }
        let line = dom::child(section, "p", "", words);
        for (at, job) in jobs.iter().enumerate() {
            if at > 0 {
                line.append_with_str_1(", ").unwrap_or_default();
            }
            dom::set(&dom::child(&line, "a", "", job), "href", &routes::job(job));
        }
    }
    let count = facts.failed.len();
    if count > 0 {
        // A rerun's own indexes are the ones it runs.
        let of = if facts.indexes.is_empty() { facts.completions as usize } else { facts.indexes.len() };
        let indexes = index_ranges(&facts.failed);
        let words = format!(
            "{count} of its {of} indexes did not succeed in its last run: {indexes}. A rerun is a new job of \
             this specification with one change, completion indexes {indexes}, each with its own \
             JOB_COMPLETION_INDEX; this job and its logs stay."
        );
        dom::child(section, "p", "rerun-diff", &words);
        let button =
            dom::child(section, "button", "rerun-failed needs-member", &format!("Rerun {count} failed indexes"));
        dom::set(&button, "type", "button");
        if !facts.allowed {
            dom::set(&button, "disabled", "");
            dom::child(section, "p", "action-note", "Only those who may start this job can rerun it.");
        }
        let problem = dom::child(section, "p", "banner error", "");
        dom::set(&problem, "role", "alert");
        dom::show(&problem, false);
    }
    dom::show(section, facts.rerun_of.is_some() || !facts.reruns.is_empty() || count > 0);
}

/// A click in the section: on the button, asks for the rerun and opens the
/// new job's page, or says why not.
fn on_click(event: web_sys::Event) {
    let target = event.target().and_then(|t| t.dyn_into::<Element>().ok());
    let Some(button) = target.and_then(|t| t.closest("button.rerun-failed").ok().flatten()) else { return };
    let asked = SHOWN.with_borrow_mut(|shown| {
        let shown = shown.as_mut().filter(|s| !s.busy && s.section.contains(Some(&button)))?;
        shown.busy = true;
        Some((shown.facts.id.clone(), shown.section.clone(), shown.navigator))
    });
    let Some((id, section, navigator)) = asked else { return };
    dom::set(&button, "aria-busy", "true");
    leptos::task::spawn_local(async move {
        let answer = api::rerun_failed(&id).await;
        SHOWN.with_borrow_mut(|shown| {
            if let Some(shown) = shown.as_mut().filter(|s| s.section == section) {
                shown.busy = false;
            }
        });
        let _ = button.remove_attribute("aria-busy");
        // The page may have gone while the server answered.
        if !section.is_connected() {
            return;
        }
        match answer {
            Ok(created) => navigator.go(&routes::job(&created.id())),
            Err(failure) => {
                if let Ok(Some(problem)) = section.query_selector("p.banner") {
                    problem.set_text_content(Some(&format!("Cannot rerun the failed indexes: {failure}")));
                    dom::show(&problem, true);
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::job;
    use jobdeck_api::JobState;

    /// A navigator, as a page's component gets one.
    fn navigator() -> Navigator {
        let got = std::sync::Arc::new(std::sync::Mutex::new(None));
        let into = got.clone();
        crate::fixtures::mount(move || {
            *into.lock().unwrap() = Some(crate::router::use_navigator());
        });
        let navigator = got.lock().unwrap().take();
        navigator.unwrap()
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn a_failed_jobs_indexes_are_offered_for_a_rerun_with_the_one_change_named() {
        let mut failed = job("shard-1", "shard", "alice", JobState::Failed);
        failed.spec.completions = Some(64);
        let answer = JobJson::parse(
            r#"{"metadata": {"id": "shard-1", "name": "shard", "created_by": "alice"},
            "spec": {"completions": 64},
            "status": {"state": "Failed", "rerun_indexes": [3, 7, 8, 9], "reruns": ["shard-rerun-2", "shard-rerun-3"]}}"#,
        );
        assert!(answer.has_status(&["rerun_of", "rerun_indexes"]));
        let facts = RerunFacts::of(&answer, &failed, Some(("alice", Role::Member)));
        assert_eq!(
            (facts.failed.clone(), facts.reruns.clone(), facts.allowed),
            (vec![3, 7, 8, 9], vec!["shard-rerun-2".to_string(), "shard-rerun-3".to_string()], true)
        );

        let section = dom::element("section");
        let navigator = navigator();
        let facts_for = |answer: &JobJson, user| RerunFacts::of(answer, &failed, user);
        show(section.clone(), facts_for(&answer, Some(("alice", Role::Member))), navigator);
        let text = section.text_content().unwrap();
        assert!(text.contains("4 of its 64 indexes did not succeed in its last run: 3, 7–9."), "{text}");
        assert!(text.contains("one change, completion indexes 3, 7–9"), "{text}");
        assert!(text.contains("Its failed indexes were rerun as shard-rerun-2, shard-rerun-3"), "{text}");
        let link = section.query_selector("a").unwrap().unwrap();
        assert_eq!(link.get_attribute("href").as_deref(), Some("/jobs/shard-rerun-2"));
        let button = section.query_selector("button.rerun-failed").unwrap().unwrap();
        assert_eq!(button.text_content().as_deref(), Some("Rerun 4 failed indexes"));
        assert_eq!(button.get_attribute("disabled"), None);
        assert_eq!(section.get_attribute("hidden"), None);

        // The same answer again leaves the section as it is.
        show(section.clone(), facts_for(&answer, None), navigator);
        assert!(section.query_selector("button[disabled]").unwrap().is_some(), "someone else may not rerun it");
        let again = section.query_selector("button.rerun-failed").unwrap().unwrap();
        show(section.clone(), facts_for(&answer, None), navigator);
        assert!(section.query_selector("button.rerun-failed").unwrap().unwrap() == again, "not drawn twice");

        // A rerun names the job it came from and the indexes it runs, and
        // offers nothing while it has no failed indexes of its own.
        let rerun = JobJson::parse(
            r#"{"metadata": {"id": "shard-rerun-2"}, "spec": {"completions": 64, "completion_indexes": [3, 7, 8, 9]},
            "status": {"state": "Running", "rerun_of": "shard-1"}}"#,
        );
        show(section.clone(), facts_for(&rerun, None), navigator);
        let text = section.text_content().unwrap();
        assert!(text.contains("Reruns indexes 3, 7–9 that failed in shard-1"), "{text}");
        assert!(section.query_selector("button").unwrap().is_none());
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn indexes_read_as_ranges() {
        assert_eq!(index_ranges(&[]), "");
        assert_eq!(index_ranges(&[3]), "3");
        assert_eq!(index_ranges(&[1, 3]), "1, 3");
        assert_eq!(index_ranges(&[1, 2, 5, 6, 7, 8, 12]), "1, 2, 5–8, 12");
    }
}
