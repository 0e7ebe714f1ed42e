//! The spec's own fields: replica counts, node groups and the sections'
//! order.

use super::*;

pub(super) fn check_spec(spec: &JobSpec, problems: &mut Problems) {
    check_replica_counts(spec, problems);
    if spec.resource_shape.as_deref().is_some_and(|s| s.trim().is_empty()) {
        problems.add("spec.resource_shape", "must not be empty; leave it out for the default shape");
    }
    if let Some(resources) = &spec.resources {
        check_resources(resources, problems);
    }
    check_container(&spec.container, problems);
    check_envs(spec.envs(), problems);
    check_mounts(spec.mounts(), problems);
    if let Some(affinity) = &spec.affinity {
        let lists = [
            ("spec.affinity.allowed_dedicated_node_groups", &affinity.allowed_dedicated_node_groups),
            ("spec.affinity.allowed_nodes_in_node_group", &affinity.allowed_nodes_in_node_group),
            ("spec.affinity.allowed_providers", &affinity.allowed_providers),
        ];
        for (path, list) in lists {
            check_name_list(path, list.as_deref().unwrap_or(&[]), problems);
        }
    }
    check_name_list("spec.image_pull_secrets", spec.image_pull_secrets(), problems);
    if let Some(class) = spec.queue_config.as_ref().and_then(|q| q.priority_class.as_deref()) {
        if Priority::from_class(class).is_none() {
            let hint = match Priority::parse(class) {
                Some(p) => format!(" ('{class}' is written '{}')", p.class()),
                None => String::new(),
            };
            problems.add(
                "spec.queue_config.priority_class",
                format!("must be one of {} (priority 1 to 9){hint}", PRIORITY_CLASSES.join(", ")),
            );
        }
    }
    if spec.storage_attachments.as_ref().is_some_and(|a| !a.is_empty()) {
        problems.add(
            "spec.storage_attachments",
            "Jobdeck has no object-storage data sources; mount a volume with spec.mounts instead",
        );
    }
    if spec.reservation_config.as_ref().and_then(|r| r.reservation_id.as_ref()).is_some() {
        problems.add("spec.reservation_config.reservation_id", "Jobdeck has no reservations; leave this out");
    }
    if let Some(segment) = &spec.segment_config {
        let workers = spec.workers();
        if segment.count_per_segment >= 1 {
            if workers <= 1 {
                problems.add("spec.segment_config", "needs more than one worker");
            } else if workers % segment.count_per_segment != 0 {
                problems.add(
                    "spec.segment_config.count_per_segment",
                    format!("must divide the number of workers ({workers})"),
                );
            }
        }
    }
}

/// Workers, completions and parallelism: with more than one worker the
/// other two follow the workers; otherwise parallelism ≤ completions.
pub(super) fn check_replica_counts(spec: &JobSpec, problems: &mut Problems) {
    // A count out of range reports only its own range: comparing the others
    // with it would name a number the user has to change anyway.
    let in_range = |n: &i64| (1..=REPLICAS_MAX).contains(n);
    if spec.workers.is_some_and(|w| !in_range(&w)) {
        return;
    }
    if let Some(workers) = spec.workers.filter(|w| *w > 1) {
        for (path, value) in [("spec.completions", spec.completions), ("spec.parallelism", spec.parallelism)] {
            if value.is_some_and(|v| v != workers) {
                problems.add(path, format!("must equal the number of workers ({workers}) or be left out"));
            }
        }
        if spec.intra_job_communication == Some(false) {
            problems.add(
                "spec.intra_job_communication",
                format!("must be on (or left out) with more than one worker ({workers})"),
            );
        }
        if spec.chosen_indexes().is_some() {
            problems.add(
                "spec.completion_indexes",
                format!("a distributed job's {workers} workers run together; leave this out to run them all"),
            );
        }
        return;
    }
    let completions = spec.completions();
    if let Some(parallelism) = spec.parallelism {
        if in_range(&completions) && parallelism > completions {
            problems.add("spec.parallelism", format!("must be less than or equal to completions ({completions})"));
        }
    }
    if let Some(indexes) = spec.chosen_indexes() {
        check_completion_indexes(indexes, completions, problems);
    }
}

/// The indexes a job runs (a rerun of failed indexes): at least one, each
/// a completion index of the job, none twice. A distributed job never gets
/// here: its workers run together, so it is rerun whole.
fn check_completion_indexes(indexes: &[i64], completions: i64, problems: &mut Problems) {
    const PATH: &str = "spec.completion_indexes";
    if indexes.is_empty() {
        problems.add(PATH, "must list at least one index; leave it out to run every index");
        return;
    }
    let mut seen = std::collections::BTreeMap::new();
    for (at, &index) in indexes.iter().enumerate() {
        if !(0..completions).contains(&index) {
            let last = completions - 1;
            problems.add(format!("{PATH}[{at}]"), format!("must be a completion index from 0 to {last}, not {index}"));
        } else if let Some(first) = seen.insert(index, at) {
            problems.add(format!("{PATH}[{at}]"), format!("{index} is already listed at {PATH}[{first}]"));
        }
    }
}

/// A list of names (node groups, nodes, pull secrets): none empty, none twice.
pub(super) fn check_name_list(path: &str, names: &[String], problems: &mut Problems) {
    let mut seen = Keys::default();
    for (i, name) in names.iter().enumerate() {
        if name.trim().is_empty() {
            problems.add(format!("{path}[{i}]"), "must not be empty");
        } else {
            seen.add(name, i);
        }
    }
    for (i, name, first) in seen.repeats() {
        problems.add(format!("{path}[{i}]"), format!("'{name}' is already listed at {path}[{first}]"));
    }
}
