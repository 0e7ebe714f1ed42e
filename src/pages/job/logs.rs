//! The logs tab: one attempt's log (`?replica=<id>` in the address, a line
//! range in the fragment), in the viewer that draws only what is on screen,
//! with pickers for the replica and its attempt and, for a failed attempt, a
//! jump to the first error the failure analysis found in it.

use jobdeck_api::{Replica, ReplicaPhase, StreamMessage};
use leptos::prelude::*;
use wasm_bindgen::JsCast;

use super::use_job;
use crate::api;
use crate::components::api_error::{use_sign_in_again, LiveNote};
use crate::components::dom;
use crate::components::live::{load_and_poll, set_if_changed, take_answer, POLL_INTERVAL_MS};
use crate::components::state_badge::replica_outcome;
use crate::pages::job::log_viewer::LogViewer;
use crate::pages::job::timeline::{in_order, into_order};
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

/// The tab. Its first load is the first round of its polling of the
/// replicas; the log viewer starts at once when the address names an
/// attempt.
#[component]
pub fn LogsTab() -> impl IntoView {
    let context = use_job();
    let url = use_url();
    let navigate = use_navigate();
    let navigate_replace = use_navigate_replace();
    let replicas = RwSignal::new(Vec::<Replica>::new());
    let loaded = RwSignal::new(false);
    let problem = RwSignal::new(None::<String>);
    let sign_in_again = use_sign_in_again();
    load_and_poll(
        POLL_INTERVAL_MS,
        &[StreamMessage::Replicas],
        move || {
            let id = context.id.get_untracked();
            async move { api::job_replicas(&id).await }
        },
        move |answer| {
            if let Some(list) = take_answer(answer, problem, &sign_in_again) {
                set_if_changed(replicas, into_order(list));
                set_if_changed(loaded, true);
            }
        },
    );
    let wanted = Memo::new(move |_| url.with(|u| u.param("replica")));
    // Without a replica in the address, pick one and put it there, so the
    // address names what is on screen. The fragment stays: a link to lines
    // (`…/logs#L120`) that names no replica opens them in the one picked.
    Effect::new(move |_| {
        if wanted.get().is_none() {
            if let Some(choice) = replicas.with(|r| default_replica(r)) {
                let mut here = routes::job_logs(&context.id.get_untracked(), Some(&choice));
                url.with_untracked(|u| {
                    if !u.hash.is_empty() {
                        here = format!("{here}#{}", u.hash);
                    }
                });
                navigate_replace(&here);
            }
        }
    });
    // Either picker names an attempt; one listener on their box serves both.
    let on_pick = move |ev: leptos::ev::Event| {
        let id = event_target_value(&ev);
        navigate(&routes::job_logs(&context.id.get_untracked(), Some(&id)));
    };
    let host = NodeRef::<leptos::html::Div>::new();
    let draw_pickers = RenderEffect::new(move |drawn: Option<Option<Pickers>>| {
        let host = host.get()?;
        let mut pickers = drawn.flatten().unwrap_or_else(|| Pickers::new(&host));
        let current = wanted.get();
        let failed = replicas.with(|list| {
            pickers.draw(list, current.as_deref(), loaded.get());
            failed_attempt(list, current.as_deref())
        });
        if failed != pickers.asked {
            pickers.asked = failed.clone();
            show_link(&pickers.first_error, None);
            if let Some(replica) = failed {
                let job = context.id.get_untracked();
                let link = pickers.first_error.clone();
                leptos::task::spawn_local(async move {
                    let Ok(Some((line, pattern))) = api::first_error(&job, &replica).await else { return };
                    // The answer is drawn only if the same attempt is still
                    // on screen.
                    if wanted.try_get_untracked().flatten().as_deref() == Some(replica.as_str()) {
                        let href = format!("{}#L{line}", routes::job_logs(&job, Some(&replica)));
                        show_link(&link, Some((&href, &format!("Go to the first error: {pattern} on line {line}"))));
                    }
                });
            }
        }
        Some(pickers)
    });
    on_cleanup(move || drop(draw_pickers));

    view! {
        <LiveNote problem/>
        <h2>"Logs"</h2>
        <div node_ref=host on:change=on_pick></div>
        {move || {
            wanted.get().map(|replica| view! { <LogViewer job=context.id.get_untracked() replica/> })
        }}
    }
}

/// The shown attempt, if it failed: the one to offer a jump to its first
/// error for.
fn failed_attempt(replicas: &[Replica], current: Option<&str>) -> Option<String> {
    let current = current?;
    replicas.iter().any(|r| r.id == current && r.status.phase == ReplicaPhase::Failed).then(|| current.to_string())
}

/// The replica and attempt pickers and the link to the first error, drawn
/// straight into the page (`components/dom.rs`) by one render effect: as
/// typed views (two reactive option lists, a `Show`, a resource) they were
/// most of the logs tab's own code. The elements are made once; options are
/// made again only when the choices change, so an open picker stays open
/// through the polls that change nothing.
struct Pickers {
    empty: web_sys::Element,
    row: web_sys::Element,
    replica: web_sys::HtmlSelectElement,
    attempt: web_sys::HtmlSelectElement,
    first_error: web_sys::Element,
    choices: (Vec<(String, String)>, Vec<(String, String)>),
    /// The failed attempt whose first error was asked for.
    asked: Option<String>,
}

impl Pickers {
    fn new(host: &web_sys::Element) -> Pickers {
        let empty = dom::child(host, "p", "", "");
        dom::set(&empty, "role", "status");
        let row = dom::child(host, "div", "log-pickers", "");
        let select = |id: &str, label: &str| {
            dom::set(&dom::child(&row, "label", "", label), "for", id);
            let select = dom::child(&row, "select", "", "");
            dom::set(&select, "id", id);
            select.unchecked_into::<web_sys::HtmlSelectElement>()
        };
        let replica = select("log-replica", "Replica");
        let attempt = select("log-attempt", "Attempt");
        let first_error = dom::child(&row, "a", "first-error", "");
        show_link(&first_error, None);
        Pickers { empty, row, replica, attempt, first_error, choices: Default::default(), asked: None }
    }

    /// Shows the choices for `replicas` with attempt `current` selected;
    /// until the list has `loaded`, says so instead.
    fn draw(&mut self, replicas: &[Replica], current: Option<&str>, loaded: bool) {
        let nothing = current.is_none() && replicas.is_empty();
        self.empty.set_class_name(if loaded { "empty" } else { "loading" });
        self.empty.set_text_content(Some(if loaded {
            "No replica has started yet, so there is no log."
        } else {
            "Loading replicas…"
        }));
        show(&self.empty, nothing || !loaded);
        show(&self.row, loaded && !nothing);
        let replica_choices = replica_choices(replicas);
        // The latest attempt of the shown replica stands for the replica.
        let index = replicas.iter().find(|r| Some(r.id.as_str()) == current).map(|r| r.status.completion_index);
        let replica_selected = replica_choices
            .iter()
            .find(|(id, _)| replicas.iter().any(|r| &r.id == id && Some(r.status.completion_index) == index))
            .map(|(id, _)| id.clone())
            .unwrap_or_default();
        let current = current.unwrap_or_default();
        let mut attempt_choices = attempt_choices(replicas, current);
        // An attempt named by the address but not (or no longer) listed.
        if !current.is_empty() && !attempt_choices.iter().any(|(id, _)| id == current) {
            attempt_choices.push((current.to_string(), current.to_string()));
        }
        if self.choices.0 != replica_choices {
            fill_options(&self.replica, &replica_choices);
            self.choices.0 = replica_choices;
        }
        if self.choices.1 != attempt_choices {
            fill_options(&self.attempt, &attempt_choices);
            self.choices.1 = attempt_choices;
        }
        self.replica.set_value(&replica_selected);
        self.attempt.set_value(current);
    }
}

/// Makes a picker's options again: `(value, label)` each.
fn fill_options(select: &web_sys::Element, choices: &[(String, String)]) {
    dom::clear(select);
    for (id, label) in choices {
        dom::set(&dom::child(select, "option", "", label), "value", id);
    }
}

/// Shows or hides an element.
fn show(element: &web_sys::Element, shown: bool) {
    let _ = element.toggle_attribute_with_force("hidden", !shown);
}

/// Points the link at `(href, words)`, or hides it.
fn show_link(link: &web_sys::Element, to: Option<(&str, &str)>) {
    show(link, to.is_some());
    let (href, words) = to.unwrap_or_default();
    dom::set(link, "href", href);
    link.set_text_content(Some(words));
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

    /// A picker's options as `(value, label)`.
    fn options(select: &web_sys::HtmlSelectElement) -> Vec<(String, String)> {
        let options = select.children();
        (0..options.length())
            .map(|i| options.item(i).unwrap())
            .map(|o| (o.get_attribute("value").unwrap(), o.text_content().unwrap()))
            .collect()
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn the_pickers_select_the_shown_attempt_and_its_replica() {
        let host = dom::element("div");
        let mut pickers = Pickers::new(&host);
        pickers.draw(&[], None, false);
        assert_eq!(pickers.empty.text_content().as_deref(), Some("Loading replicas…"));
        assert!(!pickers.empty.has_attribute("hidden") && pickers.row.has_attribute("hidden"));
        pickers.draw(&[], None, true);
        assert_eq!(pickers.empty.class_name(), "empty");
        assert!(!pickers.empty.has_attribute("hidden") && pickers.row.has_attribute("hidden"));
        assert!(pickers.first_error.has_attribute("hidden"));

        let list = [
            replica(0, 0, Succeeded, Some(0), Some(5)),
            replica(1, 0, Failed, Some(1), Some(3)),
            replica(1, 1, Running, Some(4), None),
        ];
        pickers.draw(&list, Some("job-1-1-0"), true);
        assert!(pickers.empty.has_attribute("hidden") && !pickers.row.has_attribute("hidden"));
        assert_eq!(options(&pickers.replica), replica_choices(&list));
        assert_eq!(options(&pickers.attempt), attempt_choices(&list, "job-1-1-0"));
        // The replica's latest attempt stands for the replica.
        assert_eq!((pickers.replica.value(), pickers.attempt.value()), ("job-1-1-1".into(), "job-1-1-0".into()));

        // Another attempt of the same replica: the options stay the same
        // elements (an open picker stays open), only the selection moves.
        let first_option = pickers.attempt.first_element_child();
        pickers.draw(&list, Some("job-1-1-1"), true);
        assert_eq!(pickers.attempt.first_element_child(), first_option);
        assert_eq!(pickers.attempt.value(), "job-1-1-1");

        // An attempt the address names but the list lacks is offered as
        // itself.
        pickers.draw(&list, Some("job-1-9-0"), true);
        assert_eq!(options(&pickers.attempt), [("job-1-9-0".to_string(), "job-1-9-0".to_string())]);
        assert_eq!(pickers.attempt.value(), "job-1-9-0");
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn only_a_failed_attempt_on_screen_is_offered_a_jump_to_its_first_error() {
        let list = [replica(0, 0, Failed, Some(0), Some(5)), replica(0, 1, Running, Some(6), None)];
        let cases =
            [(Some("job-1-0-0"), Some("job-1-0-0")), (Some("job-1-0-1"), None), (Some("gone"), None), (None, None)];
        for (current, offered) in cases {
            assert_eq!(failed_attempt(&list, current).as_deref(), offered, "{current:?}");
        }
        let link = dom::element("a");
        show_link(&link, Some(("/jobs/j/logs?replica=r#L4", "Go to the first error: Python traceback on line 4")));
        assert!(!link.has_attribute("hidden"));
        assert_eq!(link.get_attribute("href").as_deref(), Some("/jobs/j/logs?replica=r#L4"));
        show_link(&link, None);
        assert!(link.has_attribute("hidden"));
    }
}
