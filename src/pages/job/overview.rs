//! The overview tab: the job's state and counts, who created it when, what
//! would let a queued job start, a summary of its specification, and the
//! job's reruns (`rerun.rs`, downloaded only for a job that has any).

use jobdeck_api::{LeptonJob, StartEstimate, StartSuggestion, SuggestionKind, Visibility};
use leptos::prelude::*;

use super::rerun::{draw_reruns, RERUN_FIELDS};
use super::use_job;
use crate::components::dom;
use crate::components::lazy_view::load;
use crate::components::time::{format_duration, format_time};
use crate::pages::jobs_list::{job_duration, node_groups_of, replica_counts, shape_of};
use crate::routes;

/// The status facts, as (label, value).
pub fn status_facts(job: &LeptonJob, estimate: Option<&StartEstimate>, now_millis: i64) -> Vec<(&'static str, String)> {
    let status = job.status.clone().unwrap_or_default();
    let (succeeded, running, failed, of) = replica_counts(job);
    let mut facts = vec![
        ("State", status.state.map(|s| s.as_str().to_string()).unwrap_or_else(|| "UNK".into())),
        ("Replicas", format!("{succeeded} succeeded, {running} running, {failed} failed of {of}")),
    ];
    if let Some(place) = status.queue_position {
        facts.push(("Place in queue", format!("{place} (the scheduler's order for its node groups)")));
    }
    if let Some(estimate) = estimate {
        let by = format_time(estimate.at.saturating_mul(1000));
        facts.push(("Expected start", format!("by {by}: {}", estimate.reason)));
    }
    if let Some(reason) = status.reason {
        facts.push(("Reason", reason));
    }
    if let Some(message) = status.message.filter(|m| !m.is_empty()) {
        facts.push(("Message", message));
    }
    facts.push(("Created by", job.metadata.created_by.clone().unwrap_or_default()));
    if let Some(at) = job.metadata.created_at {
        facts.push(("Created", format_time(at)));
    }
    if let Some(at) = status.completion_time {
        facts.push(("Finished", format_time(at * 1000)));
    }
    facts.push(("Duration", job_duration(job, now_millis)));
    facts
}

/// The specification in words, as (label, value); unset fields are left out
/// unless their default matters to a reader.
pub fn spec_facts(job: &LeptonJob) -> Vec<(&'static str, String)> {
    let spec = &job.spec;
    let container = &spec.container;
    let mut facts: Vec<(&'static str, String)> = Vec::new();
    let mut add = |label: &'static str, value: Option<String>| {
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            facts.push((label, v));
        }
    };
    add("Job id", Some(job.id().to_string()));
    let image = container.image.clone().map(|image| match &container.image_tag {
        // A byte search: `str::contains` with a char falls back to the
        // string searcher for non-ASCII chars, and that brings Rust's string
        // escaping (its panic messages) into the job page's download.
        Some(tag) if !image.as_bytes().contains(&b':') => format!("{image}:{tag}"),
        _ => image,
    });
    add("Container image", image.or(Some("(none)".into())));
    add(
        "Command",
        Some(
            container
                .command
                .as_ref()
                .filter(|c| !c.is_empty())
                .map(|c| c.join(" "))
                .unwrap_or_else(|| "(image default)".into()),
        ),
    );
    add("Arguments", container.args.as_ref().map(|args| args.join(" ")));
    add("Working directory", container.working_dir.clone());
    add("Runs as", container.user.clone());
    // Said plainly: a teammate reading the job should know it could reach
    // the whole node.
    add("Privileged", spec.privileged().then(|| "yes: every capability and device of its node".to_string()));
    add("Resource shape", Some(shape_of(job)));
    add("Requirements", spec.resources.as_ref().map(jobdeck_api::validate::requirement_words));
    add("Node groups", Some(node_groups_of(job)));
    add(
        "Nodes",
        spec.affinity.as_ref().and_then(|a| a.allowed_nodes_in_node_group.as_ref()).map(|nodes| nodes.join(", ")),
    );
    add("Workers", spec.workers.map(|w| w.to_string()));
    add(
        "Completions / parallelism",
        Some(format!("{} / {}", spec.completions.unwrap_or(1), spec.parallelism.unwrap_or(1))),
    );
    let queue = spec.queue_config.clone().unwrap_or_default();
    add("Priority", queue.priority_class);
    let preemption = match (queue.can_preempt == Some(true), queue.can_be_preempted == Some(true)) {
        (false, false) => None,
        (true, false) => Some("can preempt lower priority".to_string()),
        (false, true) => Some("can be preempted by higher priority".to_string()),
        (true, true) => Some("can preempt lower priority; can be preempted by higher priority".to_string()),
    };
    add("Preemption", preemption);
    add("Backoff limit", Some(spec.backoff_limit.unwrap_or(3).to_string()));
    add("Deadline", spec.active_deadline_seconds.map(format_duration));
    add("Replica failure retries", spec.max_failure_retry.map(|n| n.to_string()));
    add("Job failure retries", spec.max_job_failure_retry.map(|n| n.to_string()));
    add("Retry on program error", (spec.disable_retry_on_program_error == Some(true)).then(|| "disabled".to_string()));
    add("Shared memory", spec.shared_memory_size.map(|mib| format!("{mib} MiB")));
    add(
        "Ports",
        container.ports.as_ref().map(|ports| {
            ports
                .iter()
                .map(|p| format!("{}/{}", p.container_port, p.protocol.as_deref().unwrap_or("TCP")))
                .collect::<Vec<_>>()
                .join(", ")
        }),
    );
    // Names only: a literal value may be something its owner would rather
    // not have on a shared screen.
    add(
        "Environment",
        spec.envs.as_ref().map(|envs| {
            envs.iter()
                .map(|e| match e.value_from.as_ref().map(|v| (v.secret_name_ref.as_ref(), v.secret_owner.as_ref())) {
                    // Whose secret it reads, pinned when the job was created.
                    Some((Some(secret), Some(owner))) => format!("{} (secret {secret} of {owner})", e.name),
                    Some((Some(secret), None)) => format!("{} (secret {secret})", e.name),
                    _ => e.name.clone(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        }),
    );
    add(
        "Storage",
        spec.mounts.as_ref().map(|mounts| {
            mounts
                .iter()
                .map(|m| format!("{}:{} → {}", m.from, m.path.as_deref().unwrap_or("/"), m.mount_path))
                .collect::<Vec<_>>()
                .join(", ")
        }),
    );
    add(
        "Visibility",
        Some(match job.metadata.visibility.unwrap_or_default() {
            Visibility::Public => "public (whole workspace)".to_string(),
            Visibility::Private => "private (creator only)".to_string(),
        }),
    );
    let pairs = |map: &Option<std::collections::BTreeMap<String, String>>| {
        map.as_ref().map(|m| m.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", "))
    };
    add("Labels", pairs(&job.metadata.labels));
    add("Annotations", pairs(&job.metadata.annotations));
    add("Keep after finishing", spec.ttl_seconds_after_finished.map(format_duration));
    facts
}

/// Facts as (label, value), in the order shown.
type Facts = Vec<(&'static str, String)>;

/// A start suggestion's link words, for one with a change: what the form
/// will be filled with.
fn change_words(suggestion: &StartSuggestion) -> Option<String> {
    let change = suggestion.change.as_ref()?;
    let group = change.affinity.as_ref().and_then(|a| a.allowed_dedicated_node_groups.as_ref()?.first().cloned());
    Some(match suggestion.kind {
        SuggestionKind::SmallerShape => format!("Clone with shape {}", change.resource_shape.clone()?),
        SuggestionKind::FewerAtOnce => format!("Clone running {} at a time", change.parallelism?),
        SuggestionKind::OtherNodeGroup => format!("Clone into node group {}", group?),
        SuggestionKind::PriorityAhead | SuggestionKind::Quota => return None,
    })
}

/// Draws the suggestions of job `id` into `list`: a change as a link that
/// opens the form filled with it, then its reason; a reason alone where no
/// change helps. `section` shows only when there are any.
fn draw_suggestions(section: &web_sys::Element, list: &web_sys::Element, id: &str, suggestions: &[StartSuggestion]) {
    dom::clear(list);
    for suggestion in suggestions {
        let item = dom::child(list, "li", "", "");
        match (change_words(suggestion), &suggestion.change) {
            (Some(words), Some(change)) => {
                dom::set(&dom::child(&item, "a", "", &words), "href", &routes::clone_with_change(id, change));
                dom::child(&item, "span", "", &format!(": {}", suggestion.reason));
            }
            _ => item.set_text_content(Some(&suggestion.reason)),
        }
    }
    dom::show(section, !suggestions.is_empty());
}

/// The fact lists and the suggestions as drawn, with what they show.
struct Drawn {
    status: web_sys::Element,
    suggestions: (web_sys::Element, web_sys::Element),
    spec: web_sys::Element,
    shown: (Facts, Facts),
    shown_suggestions: Option<Vec<StartSuggestion>>,
    /// "See it in the queue", shown while the job has a place in it.
    queue_link: web_sys::Element,
    /// Where `rerun.rs` draws the reruns section; hidden until it does.
    reruns: web_sys::Element,
}

impl Drawn {
    /// Makes the two sections in `host`: a heading and a fact list each.
    fn build(host: &web_sys::Element) -> Drawn {
        let section = |id: &str, title: &str| {
            let section = dom::child(host, "section", "", "");
            dom::set(&section, "aria-labelledby", id);
            dom::set(&dom::child(&section, "h2", "", title), "id", id);
            dom::child(&section, "dl", "facts", "")
        };
        let status = section("status-title", "Status");
        let queue_link = dom::child(host, "p", "queue-link", "");
        dom::child(&queue_link, "a", "", "See it in the queue");
        dom::show(&queue_link, false);
        let suggestions = dom::child(host, "section", "start-suggestions", "");
        dom::set(&suggestions, "aria-labelledby", "suggestions-title");
        dom::set(&dom::child(&suggestions, "h2", "", "What would let it start"), "id", "suggestions-title");
        let list = dom::child(&suggestions, "ul", "", "");
        dom::show(&suggestions, false);
        Drawn {
            status,
            suggestions: (suggestions, list),
            spec: section("spec-title", "Specification"),
            shown: Default::default(),
            shown_suggestions: None,
            queue_link,
            reruns: {
                let reruns = dom::child(host, "section", "reruns", "");
                dom::set(&reruns, "aria-label", "Reruns");
                dom::show(&reruns, false);
                reruns
            },
        }
    }
}

/// Shows `facts` in the fact list `list`, which shows `shown`: when the
/// labels are the same (a running job's duration, every second) only the
/// values that changed are written, so a reader's selection stays.
fn draw_facts(list: &web_sys::Element, facts: &Facts, shown: &Facts) {
    let same_labels = facts.len() == shown.len() && facts.iter().zip(shown).all(|(a, b)| a.0 == b.0);
    if !same_labels {
        dom::clear(list);
        for (label, value) in facts {
            dom::child(list, "dt", "", label);
            dom::child(list, "dd", "", value);
        }
        return;
    }
    let items = list.children();
    for (index, ((_, value), (_, before))) in facts.iter().zip(shown).enumerate() {
        if value != before {
            if let Some(dd) = items.item(2 * index as u32 + 1) {
                dd.set_text_content(Some(value));
            }
        }
    }
}

/// The tab: both fact lists drawn straight into the page (`components/dom.rs`)
/// by one render effect, as the heading is; they are read-only and change
/// every second while the job runs.
#[component]
pub fn OverviewTab() -> impl IntoView {
    let context = use_job();
    let host = NodeRef::<leptos::html::Div>::new();
    let (session, navigator) = (crate::session::use_session(), crate::router::use_navigator());
    let draw = RenderEffect::new(move |drawn: Option<Option<Drawn>>| {
        // The whole job, specification included, is read here only, and
        // so are a queued job's suggestions.
        let (job, suggestions, estimate, reruns) = context.json.with(|json| match json {
            Some(json) => {
                (json.whole().ok(), json.start_suggestions(), json.start_estimate(), json.has_status(&RERUN_FIELDS))
            }
            None => (None, Vec::new(), None, false),
        });
        let now = context.now.get();
        let host = host.get()?;
        let mut drawn = drawn.flatten().unwrap_or_else(|| Drawn::build(&host));
        if let Some(job) = job {
            let facts = (status_facts(&job, estimate.as_ref(), now), spec_facts(&job));
            draw_facts(&drawn.status, &facts.0, &drawn.shown.0);
            draw_facts(&drawn.spec, &facts.1, &drawn.shown.1);
            drawn.shown = facts;
            let queued = job.status.as_ref().is_some_and(|s| s.queue_position.is_some());
            if let Some(link) = drawn.queue_link.first_element_child().filter(|_| queued) {
                dom::set(&link, "href", &routes::queue("", job.id()));
            }
            dom::show(&drawn.queue_link, queued);
            if drawn.shown_suggestions.as_ref() != Some(&suggestions) {
                draw_suggestions(&drawn.suggestions.0, &drawn.suggestions.1, job.id(), &suggestions);
                drawn.shown_suggestions = Some(suggestions);
            }
        }
        // The reruns section is drawn by a module of its own, downloaded
        // once an answer says the job has reruns, came from one or has
        // failed indexes. A failed download leaves the section hidden; the
        // next answer asks for it again.
        if reruns {
            let section = drawn.reruns.clone();
            leptos::task::spawn_local(async move {
                let _ = load!(draw_reruns(section, context, session, navigator));
            });
        }
        Some(drawn)
    });
    on_cleanup(move || drop(draw));
    view! { <div class="overview" node_ref=host></div> }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::job;
    use jobdeck_api::{EnvValue, EnvVar, JobState, Visibility};

    fn value<'a>(facts: &'a [(&'static str, String)], label: &str) -> Option<&'a str> {
        facts.iter().find(|(l, _)| *l == label).map(|(_, v)| v.as_str())
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn the_spec_reads_in_words_with_defaults_shown() {
        let mut j = job("train-1", "train", "alice", JobState::Running);
        j.spec.container.image = Some("busybox".into());
        j.metadata.visibility = Some(Visibility::Private);
        j.spec.container.image_tag = Some("1.36".into());
        j.spec.completions = Some(4);
        j.spec.envs = Some(vec![
            EnvVar { name: "MODE".into(), value: Some("fast".into()), value_from: None },
            EnvVar {
                name: "TOKEN".into(),
                value: None,
                value_from: Some(EnvValue { secret_name_ref: Some("hf".into()), secret_owner: Some("ann".into()) }),
            },
        ]);
        let facts = spec_facts(&j);
        assert_eq!(value(&facts, "Container image"), Some("busybox:1.36"));
        assert_eq!(value(&facts, "Command"), Some("(image default)"));
        assert_eq!(value(&facts, "Completions / parallelism"), Some("4 / 1"));
        assert_eq!(value(&facts, "Backoff limit"), Some("3"));
        assert_eq!(value(&facts, "Node groups"), Some("any"));
        assert_eq!(value(&facts, "Environment"), Some("MODE, TOKEN (secret hf of ann)"));
        assert!(!facts.iter().any(|(_, v)| v.contains("fast")), "env values stay off the screen");
        assert_eq!(value(&facts, "Visibility"), Some("private (creator only)"));
        assert_eq!(value(&facts, "Deadline"), None);
        for label in ["Arguments", "Working directory", "Runs as", "Privileged", "Requirements"] {
            assert_eq!(value(&facts, label), None, "{label} is shown only when the job sets it");
        }

        // What a dstack import carries: the container's user, its working
        // directory, arguments, requirements and, where allowed, privileges.
        j.spec.container.args = Some(vec!["--epochs".into(), "10".into()]);
        j.spec.container.working_dir = Some("/workspace".into());
        j.spec.container.user = Some("1000:1000".into());
        j.spec.user_security_context =
            Some(jobdeck_api::UserSecurityContext { privileged: Some(true), no_specific_user: None });
        j.spec.resources = Some(jobdeck_api::ResourceRequirements {
            memory_in_mb: Some(jobdeck_api::AmountRange { min: Some(2048), max: None }),
            ..Default::default()
        });
        let facts = spec_facts(&j);
        assert_eq!(value(&facts, "Arguments"), Some("--epochs 10"));
        assert_eq!(value(&facts, "Working directory"), Some("/workspace"));
        assert_eq!(value(&facts, "Runs as"), Some("1000:1000"));
        assert_eq!(value(&facts, "Privileged"), Some("yes: every capability and device of its node"));
        assert_eq!(value(&facts, "Requirements"), Some("2 GiB or more memory"));
    }

    /// A fact list's (label, value) pairs as drawn.
    fn drawn(list: &web_sys::Element) -> Vec<(String, String)> {
        let items = list.children();
        let text = |i: u32| items.item(i).unwrap().text_content().unwrap();
        (0..items.length() / 2).map(|i| (text(2 * i), text(2 * i + 1))).collect()
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn a_fact_list_keeps_its_elements_while_only_values_change() {
        let list = dom::element("dl");
        let first: Facts = vec![("State", "Running".into()), ("Duration", "3s".into())];
        draw_facts(&list, &first, &Vec::new());
        assert_eq!(drawn(&list), [("State".into(), "Running".into()), ("Duration".into(), "3s".into())]);
        let state = list.children().item(1).unwrap();

        let later: Facts = vec![("State", "Running".into()), ("Duration", "4s".into())];
        draw_facts(&list, &later, &first);
        assert_eq!(drawn(&list)[1].1, "4s");
        assert_eq!(list.children().item(1).unwrap(), state, "an unchanged value keeps its element");

        // A fact more (the job finished) draws the list again.
        let finished: Facts =
            vec![("State", "Completed".into()), ("Finished", "now".into()), ("Duration", "5s".into())];
        draw_facts(&list, &finished, &later);
        assert_eq!(drawn(&list).len(), 3);
        assert_eq!(drawn(&list)[1], ("Finished".into(), "now".into()));
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn the_status_names_counts_and_reason() {
        let mut j = job("train-1", "train", "alice", JobState::Failed);
        j.spec.completions = Some(2);
        let status = j.status.as_mut().unwrap();
        status.failed = 2;
        status.reason = Some("BackoffLimitExceeded".into());
        status.message = Some("2 replicas failed".into());
        let facts = status_facts(&j, None, 0);
        assert_eq!(value(&facts, "State"), Some("Failed"));
        assert_eq!(value(&facts, "Replicas"), Some("0 succeeded, 0 running, 2 failed of 2"));
        assert_eq!(value(&facts, "Reason"), Some("BackoffLimitExceeded"));
        assert_eq!(value(&facts, "Created by"), Some("alice"));
        assert_eq!(value(&facts, "Place in queue"), None, "only a queued job has one");
        let mut queued = job("train-2", "train", "alice", JobState::Queueing);
        queued.status.as_mut().unwrap().queue_position = Some(3);
        let facts = status_facts(&queued, None, 0);
        assert_eq!(value(&facts, "Place in queue"), Some("3 (the scheduler's order for its node groups)"));
        assert_eq!(value(&facts, "Expected start"), None, "only where there is a basis");
        let estimate = StartEstimate { at: 60, reason: "at the latest, when …".into(), ..Default::default() };
        let facts = status_facts(&queued, Some(&estimate), 0);
        let expected = value(&facts, "Expected start").unwrap();
        assert!(
            expected.starts_with("by 1970-01-01 ") && expected.ends_with(":01:00: at the latest, when …"),
            "{expected}"
        );
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn a_queued_jobs_suggestions_are_read_apart_and_drawn_as_links_that_fill_the_form() {
        let json = crate::api::JobJson::parse(
            r#"{"metadata": {"id": "train-2", "name": "train"}, "spec": {}, "status": {"state": "Queueing",
              "start_suggestions": [
                {"kind": "smaller_shape", "change": {"resource_shape": "gpu.4"},
                 "reason": "fits now with 4 GPUs a replica instead of 8 (shape gpu.4) in node group local"},
                {"kind": "other_node_group", "change": {"affinity": {"allowed_dedicated_node_groups": ["b b"]}},
                 "reason": "node group b b has 8 GPUs free: the job fits there now"},
                {"kind": "priority_ahead", "reason": "2 jobs of higher priority wait ahead for the same node groups"}],
              "start_estimate": {"at": 60, "basis": "deadlines", "reason": "at the latest, when …"}}}"#,
        );
        let read = json.start_suggestions();
        assert_eq!(read.len(), 3);
        assert_eq!(read[0].change.as_ref().and_then(|c| c.resource_shape.as_deref()), Some("gpu.4"));
        assert_eq!(json.start_estimate().map(|e| e.at), Some(60));
        assert_eq!(crate::api::JobJson::of(&job("x", "x", "a", JobState::Running)).start_suggestions(), Vec::new());

        let host = dom::element("div");
        let drawn = Drawn::build(&host);
        let (section, list) = &drawn.suggestions;
        draw_suggestions(section, list, "train-2", &[]);
        assert_eq!(section.get_attribute("hidden").as_deref(), Some(""), "none: the section is hidden");
        draw_suggestions(section, list, "train-2", &read);
        assert_eq!(section.get_attribute("hidden"), None);
        let items = list.children();
        assert_eq!(items.length(), 3);
        let link = |i: u32| items.item(i).unwrap().query_selector("a").unwrap();
        let first = link(0).expect("a change is a link");
        assert_eq!(first.text_content().unwrap(), "Clone with shape gpu.4");
        assert_eq!(first.get_attribute("href").unwrap(), "/jobs/new?clone=train-2&shape=gpu.4");
        assert_eq!(
            items.item(0).unwrap().text_content().unwrap(),
            "Clone with shape gpu.4: fits now with 4 GPUs a replica instead of 8 (shape gpu.4) in node group local"
        );
        let second = link(1).unwrap();
        assert_eq!(second.text_content().unwrap(), "Clone into node group b b");
        assert_eq!(second.get_attribute("href").unwrap(), "/jobs/new?clone=train-2&node_group=b%20b");
        assert!(link(2).is_none(), "no change of its own helps: no link");
        assert_eq!(items.item(2).unwrap().text_content().unwrap(), read[2].reason);
    }
}
