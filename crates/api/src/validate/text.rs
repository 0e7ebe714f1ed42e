//! The checks shared by the sections: number ranges, and the words a
//! message uses for lists, keys and characters.

use super::*;

/// A number that must lie in `min..=max` when it is set.
pub(super) fn check_range(problems: &mut Problems, path: &str, value: Option<i64>, min: i64, max: i64) {
    if value.is_some_and(|v| v < min || v > max) {
        problems.add(path, format!("must be between {min} and {max}"));
    }
}

/// The ranges of a spec's top-level numbers: `(field, least, most)`. The
/// checks below and the server's OpenAPI document both read this table.
pub const SPEC_RANGES: [(&str, i64, i64); 12] = [
    ("completions", 1, REPLICAS_MAX),
    ("parallelism", 1, REPLICAS_MAX),
    ("workers", 1, REPLICAS_MAX),
    ("backoff_limit", 0, RETRIES_MAX),
    ("active_deadline_seconds", 1, DURATION_MAX_SECONDS),
    ("max_queued_duration_seconds", 1, DURATION_MAX_SECONDS),
    ("max_failure_retry", 0, RETRIES_MAX),
    ("max_job_failure_retry", 0, RETRIES_MAX),
    ("ttl_seconds_after_finished", 0, DURATION_MAX_SECONDS),
    ("shared_memory_size", 0, MEMORY_MAX_MIB),
    ("termination_grace_period_seconds", 0, GRACE_PERIOD_MAX_SECONDS),
    ("retry_window_seconds", 1, DURATION_MAX_SECONDS),
];

/// The ranges of numbers inside a spec's parts: `(type, field, least,
/// most)`, by the contract's type names. The checks below and the server's
/// OpenAPI document (on those types' schemas) both read this table.
pub const PART_RANGES: [(&str, &str, i64, i64); 5] = [
    ("ContainerPort", "container_port", 1, PORT_MAX),
    ("ContainerPort", "host_port", 1, PORT_MAX),
    ("TimeSchedule", "start_at", 0, START_AT_MAX),
    ("SegmentConfig", "count_per_segment", 1, REPLICAS_MAX),
    ("MountOptions", "local_cache_size_mib", 0, MEMORY_MAX_MIB),
];

/// Checks `value` against the range [`PART_RANGES`] gives `kind.field`.
pub(super) fn check_part_range(problems: &mut Problems, path: &str, kind: &str, field: &str, value: Option<i64>) {
    let (_, _, min, max) = PART_RANGES
        .into_iter()
        .find(|(k, f, _, _)| *k == kind && *f == field)
        .unwrap_or_else(|| unreachable!("{kind}.{field} is not in PART_RANGES"));
    check_range(problems, path, value, min, max);
}

/// The value of a field of [`SPEC_RANGES`].
pub(super) fn spec_number(spec: &JobSpec, field: &str) -> Option<i64> {
    match field {
        "completions" => spec.completions,
        "parallelism" => spec.parallelism,
        "workers" => spec.workers,
        "backoff_limit" => spec.backoff_limit,
        "active_deadline_seconds" => spec.active_deadline_seconds,
        "max_queued_duration_seconds" => spec.max_queued_duration_seconds,
        "max_failure_retry" => spec.max_failure_retry,
        "max_job_failure_retry" => spec.max_job_failure_retry,
        "ttl_seconds_after_finished" => spec.ttl_seconds_after_finished,
        "shared_memory_size" => spec.shared_memory_size,
        "termination_grace_period_seconds" => spec.termination_grace_period_seconds,
        "retry_window_seconds" => spec.retry_window_seconds,
        other => unreachable!("{other} is not in SPEC_RANGES"),
    }
}

/// A job name as a regular expression (the length is [`check_job_name`]'s
/// limit), for schemas: what [`check_job_name`] accepts.
pub const JOB_NAME_PATTERN: &str = "^[a-z]([-a-z0-9]*[a-z0-9])?$";

/// Every single-field range of a spec. These run first, so a number out of
/// range is what its field reports. Every number has an upper bound as well
/// as a lower one: the server turns seconds into milliseconds and counts
/// replicas into loops and Kubernetes `int32` fields, and a bound here keeps
/// all of that far from overflowing.
pub(super) fn check_ranges(spec: &JobSpec, problems: &mut Problems) {
    for (field, min, max) in SPEC_RANGES {
        check_range(problems, &format!("spec.{field}"), spec_number(spec, field), min, max);
    }
    let start_at = spec.time_schedule.as_ref().and_then(|t| t.start_at);
    check_part_range(problems, "spec.time_schedule.start_at", "TimeSchedule", "start_at", start_at);
    let segment = spec.segment_config.as_ref().map(|s| s.count_per_segment);
    let path = "spec.segment_config.count_per_segment";
    check_part_range(problems, path, "SegmentConfig", "count_per_segment", segment);
    for (i, port) in spec.container.ports().iter().enumerate() {
        let path = format!("spec.container.ports[{i}]");
        let container_port = Some(port.container_port);
        check_part_range(
            problems,
            &format!("{path}.container_port"),
            "ContainerPort",
            "container_port",
            container_port,
        );
        check_part_range(problems, &format!("{path}.host_port"), "ContainerPort", "host_port", port.host_port);
    }
    for (i, mount) in spec.mounts().iter().enumerate() {
        let cache = mount.mount_options.as_ref().and_then(|o| o.local_cache_size_mib);
        let path = format!("spec.mounts[{i}].mount_options.local_cache_size_mib");
        check_part_range(problems, &path, "MountOptions", "local_cache_size_mib", cache);
    }
}

/// `a`, `a or b`, `a, b or c`; `none` when empty.
pub(super) fn or_list(items: &[&str]) -> String {
    match items {
        [] => "none".into(),
        [one] => format!("'{one}'"),
        [rest @ .., last] => {
            let rest: Vec<String> = rest.iter().map(|s| format!("'{s}'")).collect();
            format!("{} or '{last}'", rest.join(", "))
        }
    }
}

/// Whether `s` has the two bytes `pair` next to each other. (Cheaper in the
/// console's WebAssembly than the general substring search.)
pub(super) fn has_pair(s: &str, pair: &[u8; 2]) -> bool {
    s.as_bytes().windows(2).any(|w| w == pair)
}

/// The keys of a list's items, to find the ones given twice, in the order
/// the items come.
#[derive(Default)]
pub(super) struct Keys(pub(super) Vec<(String, usize)>);

impl Keys {
    pub(super) fn add(&mut self, key: impl Into<String>, index: usize) {
        self.0.push((key.into(), index));
    }

    /// Each item whose key an earlier item had: its index, the key and the
    /// index of the first item with it.
    pub(super) fn repeats(self) -> Vec<(usize, String, usize)> {
        let keys = self.0;
        let mut repeats = Vec::new();
        let mut first = 0;
        let order = key_order(&keys);
        for (at, &item) in order.iter().enumerate() {
            let (key, index) = &keys[item];
            if at > 0 && keys[order[at - 1]].0 == *key {
                repeats.push((*index, key.clone(), first));
            } else {
                first = *index;
            }
        }
        repeats
    }
}

/// The positions of `keys` sorted by key, equal keys in the order they
/// came: a merge sort. A map of the keys seen cost the console's form
/// 1.6 KB (brotli) and the standard library's sort 1.2 KB more than this;
/// comparing each key with every one before it would take quadratic time on
/// a hostile list, and the server runs these rules on bodies up to 4 MB.
pub(super) fn key_order(keys: &[(String, usize)]) -> Vec<usize> {
    let count = keys.len();
    let mut order: Vec<usize> = (0..count).collect();
    let mut merged = vec![0; count];
    let mut width = 1;
    while width < count {
        let mut start = 0;
        while start < count {
            let middle = (start + width).min(count);
            let end = (start + 2 * width).min(count);
            let (mut left, mut right) = (start, middle);
            for slot in &mut merged[start..end] {
                // On equal keys the left run's comes first: the sort is stable.
                let take_left = right >= end || (left < middle && keys[order[left]].0 <= keys[order[right]].0);
                *slot = if take_left { order[left] } else { order[right] };
                if take_left {
                    left += 1;
                } else {
                    right += 1;
                }
            }
            start = end;
        }
        std::mem::swap(&mut order, &mut merged);
        width *= 2;
    }
    order
}

pub(super) fn has_control(s: &str) -> bool {
    s.chars().any(char::is_control)
}

/// A character that broke a rule, quoted: `'B'`, `'é'`, `'\n'`, `'\''`.
/// Control characters, the quote and the backslash are escaped as Rust
/// writes them; everything else is shown as it is. (`{:?}` would say the
/// same of these, with the Unicode tables of its escaping in the console's
/// download.)
pub(super) fn quoted(c: char) -> String {
    if c.is_control() || c == '\'' || c == '\\' {
        format!("'{}'", c.escape_default())
    } else {
        format!("'{c}'")
    }
}
