//! The overview tab: the job's state and counts, who created it when, and a
//! summary of its specification.

use jobdeck_api::{LeptonJob, Visibility};
use leptos::prelude::*;

use super::use_job;
use crate::components::time::{format_duration, format_time};
use crate::pages::jobs_list::{job_duration, node_groups_of, replica_counts, shape_of};

/// The status facts, as (label, value).
pub fn status_facts(job: &LeptonJob, now_millis: i64) -> Vec<(&'static str, String)> {
    let status = job.status.clone().unwrap_or_default();
    let (succeeded, running, failed, of) = replica_counts(job);
    let mut facts = vec![
        ("State", status.state.map(|s| s.as_str().to_string()).unwrap_or_else(|| "UNK".into())),
        ("Replicas", format!("{succeeded} succeeded, {running} running, {failed} failed of {of}")),
    ];
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
    add("Resource shape", Some(shape_of(job)));
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
                .map(|e| match e.value_from.as_ref().and_then(|v| v.secret_name_ref.as_ref()) {
                    Some(secret) => format!("{} (secret {secret})", e.name),
                    None => e.name.clone(),
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

fn fact_list(facts: Vec<(&'static str, String)>) -> impl IntoView {
    facts.into_iter().map(|(label, value)| view! { <dt>{label}</dt><dd>{value}</dd> }).collect_view()
}

#[component]
pub fn OverviewTab() -> impl IntoView {
    let context = use_job();
    view! {
        <div class="overview">
            <section aria-labelledby="status-title">
                <h2 id="status-title">"Status"</h2>
                <dl class="facts">{move || fact_list(context.read(|j| status_facts(j, context.now.get())))}</dl>
            </section>
            <section aria-labelledby="spec-title">
                <h2 id="spec-title">"Specification"</h2>
                <dl class="facts">{move || fact_list(context.read(spec_facts))}</dl>
            </section>
        </div>
    }
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
                value_from: Some(EnvValue { secret_name_ref: Some("hf".into()) }),
            },
        ]);
        let facts = spec_facts(&j);
        assert_eq!(value(&facts, "Container image"), Some("busybox:1.36"));
        assert_eq!(value(&facts, "Command"), Some("(image default)"));
        assert_eq!(value(&facts, "Completions / parallelism"), Some("4 / 1"));
        assert_eq!(value(&facts, "Backoff limit"), Some("3"));
        assert_eq!(value(&facts, "Node groups"), Some("any"));
        assert_eq!(value(&facts, "Environment"), Some("MODE, TOKEN (secret hf)"));
        assert!(!facts.iter().any(|(_, v)| v.contains("fast")), "env values stay off the screen");
        assert_eq!(value(&facts, "Visibility"), Some("private (creator only)"));
        assert_eq!(value(&facts, "Deadline"), None);
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn the_status_names_counts_and_reason() {
        let mut j = job("train-1", "train", "alice", JobState::Failed);
        j.spec.completions = Some(2);
        let status = j.status.as_mut().unwrap();
        status.failed = 2;
        status.reason = Some("BackoffLimitExceeded".into());
        status.message = Some("2 replicas failed".into());
        let facts = status_facts(&j, 0);
        assert_eq!(value(&facts, "State"), Some("Failed"));
        assert_eq!(value(&facts, "Replicas"), Some("0 succeeded, 0 running, 2 failed of 2"));
        assert_eq!(value(&facts, "Reason"), Some("BackoffLimitExceeded"));
        assert_eq!(value(&facts, "Created by"), Some("alice"));
    }
}
