//! The metrics tab: what each replica attempt uses, as line charts on the
//! time axis of the replica timeline above them: CPU cores, memory against
//! its limit, and for the GPUs it holds their utilization and memory.
//! Flags come first: a replica whose GPUs sat idle for ten minutes, or whose
//! memory is near its limit. Live while the job runs.

use jobdeck_api::metrics::{ReplicaMetrics, ReplicaUse};
use jobdeck_api::{JobState, Replica, StreamMessage};
use leptos::prelude::*;

use super::use_job;
use crate::api::{self, ApiFailure};
use crate::components::api_error::use_sign_in_again;
use crate::components::dom;
use crate::components::live::load_and_poll;
use crate::components::time::now_millis;
use crate::pages::job::chart::{format_value, Chart, Charts, Line};
use crate::pages::job::timeline::{into_order, layout, ReplicaTimeline};
use crate::pages::jobs_list::completions_of;

/// How often a running job's charts are read again: the executor samples
/// every few seconds.
const REFRESH_MS: i32 = 5_000;

/// What the tab shows: the attempts (for the time axis), their use, and the
/// series of each attempt that has samples.
#[derive(Clone, Default, PartialEq)]
struct Loaded {
    replicas: Vec<Replica>,
    uses: Vec<ReplicaUse>,
    series: Vec<ReplicaMetrics>,
}

async fn load(id: String) -> Result<Loaded, ApiFailure> {
    let replicas = into_order(api::job_replicas(&id).await?);
    let uses = api::job_metrics(&id).await?.replicas;
    let mut series = Vec::with_capacity(uses.len());
    for replica in &uses {
        series.push(api::replica_metrics(&id, &replica.replica_id).await?);
    }
    Ok(Loaded { replicas, uses, series })
}

/// A flag in words.
pub fn flag_words(flag: &str) -> &'static str {
    match flag {
        "gpu_idle" => "GPU idle: under 5 % for the last 10 minutes",
        "memory_near_limit" => "Memory above 90 % of its limit",
        _ => "Flagged",
    }
}

/// `gpu0` as people write it: `GPU 0`. (Not `str::replace`: the string
/// searcher's panic paths bring Rust's string escaping into the download.)
fn gpu_label(series: &str) -> String {
    match series.strip_prefix("gpu") {
        Some(index) => format!("GPU {index}"),
        None => series.to_string(),
    }
}

/// The lines of the series whose names end in `what` among GPU series
/// (`gpu0.util` …), one per GPU.
fn gpu_lines(metrics: &ReplicaMetrics, what: &str) -> Vec<Line> {
    metrics
        .series
        .iter()
        .filter(|s| s.name.starts_with("gpu") && s.name.ends_with(&format!(".{what}")))
        .map(|s| Line {
            label: gpu_label(s.name.split('.').next().unwrap_or("gpu")),
            points: s.points.iter().map(|p| (p.0, p.1)).collect(),
        })
        .collect()
}

fn line(metrics: &ReplicaMetrics, name: &str, label: &str) -> Vec<Line> {
    metrics
        .series
        .iter()
        .filter(|s| s.name == name)
        .map(|s| Line { label: label.into(), points: s.points.iter().map(|p| (p.0, p.1)).collect() })
        .collect()
}

/// Where the tab is: the view changes only when this does, so a refresh
/// updates the charts in place instead of building the page again.
#[derive(Debug, Clone, PartialEq)]
enum Status {
    Loading,
    Failed(String),
    Empty,
    Ready,
}

#[component]
pub fn MetricsTab() -> impl IntoView {
    let context = use_job();
    let sign_in_again = use_sign_in_again();
    let loaded = RwSignal::new(Loaded::default());
    let status = RwSignal::new(Status::Loading);
    let now = RwSignal::new(now_millis());
    let take = move |answer: Result<Loaded, ApiFailure>| {
        now.set(now_millis());
        match answer {
            Ok(data) => {
                let next = if data.uses.is_empty() { Status::Empty } else { Status::Ready };
                if loaded.with_untracked(|old| *old != data) {
                    loaded.set(data);
                }
                if status.get_untracked() != next {
                    status.set(next);
                }
            }
            Err(ApiFailure::Unauthorized) => sign_in_again(),
            Err(failure) => status.set(Status::Failed(failure.to_string())),
        }
    };
    let id = context.id.get_untracked();
    let running = move || context.read(|job| job.state()) == Some(JobState::Running);
    load_and_poll(
        REFRESH_MS,
        &[StreamMessage::Metrics],
        move || {
            let id = id.clone();
            let first = status.get_untracked() == Status::Loading;
            let live = running();
            async move {
                // Nothing changes while the job does not run.
                if first || live {
                    Some(load(id).await)
                } else {
                    None
                }
            }
        },
        move |answer| {
            if let Some(answer) = answer {
                take(answer);
            }
        },
    );
    view! {
        <h2>"Metrics"</h2>
        {move || match status.get() {
            Status::Loading => view! { <p class="loading" role="status">"Loading metrics…"</p> }.into_any(),
            Status::Failed(message) => view! { <p class="banner error" role="alert">{message}</p> }.into_any(),
            Status::Empty => view! {
                <p class="empty">"No samples yet: replicas are sampled every few seconds while they run."</p>
            }
            .into_any(),
            Status::Ready => view! { <Charts loaded now job_id=context.id.get_untracked()/> }.into_any(),
        }}
    }
}

#[component]
fn Charts(loaded: RwSignal<Loaded>, now: RwSignal<i64>, job_id: String) -> impl IntoView {
    let context = use_job();
    let completions = Signal::derive(move || context.read(completions_of));
    let replicas = Signal::derive(move || loaded.with(|l| l.replicas.clone()));
    let axis = Memo::new(move |_| {
        let l = replicas.with(|r| layout(r, completions.get(), now.get()));
        (l.start, l.end)
    });
    // Every attempt's section, drawn again by one render effect when the
    // data or the axis changed (a refresh brings both).
    let host = NodeRef::<leptos::html::Div>::new();
    let charts = Charts::default();
    dom::draw_into(
        host,
        Box::new(move |host| {
            let (start, end) = axis.get();
            charts.clear();
            dom::clear(host);
            loaded.with(|loaded| {
                for (replica_use, metrics) in loaded.uses.iter().zip(loaded.series.iter()) {
                    section(host, &charts, replica_use, metrics, start, end);
                }
            });
        }),
    );
    view! {
        <ReplicaTimeline replicas completions now job_id/>
        <div node_ref=host></div>
    }
}

/// Draws one attempt's flags and charts at the end of `host`.
fn section(
    host: &web_sys::Element,
    charts: &Charts,
    replica_use: &ReplicaUse,
    metrics: &ReplicaMetrics,
    start: i64,
    end: i64,
) {
    let section = dom::child(host, "section", "replica-metrics", "");
    dom::set(&section, "data-replica", &replica_use.replica_id);
    let title = format!("Replica {}, attempt {} ", replica_use.completion_index, replica_use.attempt + 1);
    let heading = dom::child(&section, "h3", "", &title);
    for flag in &replica_use.flags {
        dom::child(&heading, "span", "badge waiting flag", flag_words(flag));
    }
    let peak_memory = replica_use.peak.get("memory").map(|m| format_value("bytes", *m)).unwrap_or_default();
    dom::child(&section, "p", "peak", &format!("Peak memory {peak_memory}"));
    let gpu_total =
        metrics.series.iter().find(|s| s.name.ends_with(".memory_total")).and_then(|s| s.points.last()).map(|p| p.1);
    let mut shown = vec![
        Chart { title: "CPU".into(), unit: "cores", lines: line(metrics, "cpu", "CPU"), limit: None },
        Chart {
            title: "Memory".into(),
            unit: "bytes",
            lines: line(metrics, "memory", "Memory"),
            limit: Some(replica_use.memory_limit_bytes as f64),
        },
    ];
    let gpu_util = gpu_lines(metrics, "util");
    if !gpu_util.is_empty() {
        shown.push(Chart { title: "GPU utilization".into(), unit: "%", lines: gpu_util, limit: Some(100.0) });
        shown.push(Chart {
            title: "GPU memory".into(),
            unit: "MiB",
            lines: gpu_lines(metrics, "memory"),
            limit: gpu_total,
        });
    }
    for chart in shown {
        charts.draw(&section, chart, start, end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jobdeck_api::metrics::MetricSeries;

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn gpu_series_become_one_line_per_gpu() {
        let series = |name: &str| MetricSeries { name: name.into(), unit: String::new(), points: vec![(1, 2.0, 2.0)] };
        let metrics = ReplicaMetrics {
            replica_id: "j-0-0".into(),
            memory_limit_bytes: 1,
            series: vec![
                series("cpu"),
                series("gpu0.util"),
                series("gpu1.util"),
                series("gpu0.memory"),
                series("gpu0.memory_total"),
            ],
        };
        let lines = gpu_lines(&metrics, "util");
        assert_eq!(lines.iter().map(|l| l.label.as_str()).collect::<Vec<_>>(), ["GPU 0", "GPU 1"]);
        assert_eq!(gpu_lines(&metrics, "memory").len(), 1, "memory_total is not a memory line");
        assert_eq!(line(&metrics, "cpu", "CPU")[0].points, [(1, 2.0)]);
        assert!(flag_words("gpu_idle").starts_with("GPU idle"));
    }
}
