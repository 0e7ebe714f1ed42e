//! The failure tab: why the job failed and what to do, from
//! `GET /jobs/{id}/failure-analysis`. The error class and the suggestion come
//! first in plain words; then which replica failed first, with every attempt
//! of the run on one time axis; then node events (OOM kills with their
//! victim, evictions, preemptions); then, per failed replica, the log lines
//! around its first error, each line a link into the log viewer.

use jobdeck_api::{FailureAnalysis, JobState, LogStream, Metadata, Replica, ReplicaSpan, ReplicaStatus};
use leptos::prelude::*;

use super::use_job;
use crate::api::{self, ApiFailure};
use crate::components::api_error::use_sign_in_again;
use crate::components::dom;
use crate::components::time::{format_duration, format_time};
use crate::pages::job::ansi;
use crate::pages::job::chart::{Chart, Line, StillChart};
use crate::pages::job::timeline::ReplicaTimeline;
use crate::routes;

/// An error class in words: (title, what kind of error it is).
pub fn class_words(class: &str) -> (&'static str, &'static str) {
    match class {
        "ERR_PROGRAM" => ("The program failed", "a program error: retrying the same code and data fails the same way"),
        "ERR_CUDA_OOM" => ("Out of GPU memory", "a program error: the same batch needs the same memory"),
        "ERR_CONFIG" => {
            ("The job cannot start as configured", "a configuration error: change the job, then run it again")
        }
        "ERR_OOM" => ("Out of host memory", "a resource error: the replica needed more memory than it had"),
        "ERR_NCCL" => {
            ("Communication between workers failed", "usually the network or another worker; a retry may succeed")
        }
        "ERR_IMAGE_PULL" => {
            ("The container image could not be pulled", "check the image name, tag and registry credentials")
        }
        "ERR_DEADLINE" => ("The job ran past its deadline", "the active deadline ended it"),
        "ERR_QUEUE_TIMEOUT" => ("The job waited too long for capacity", "the maximum queueing time ended it"),
        "ERR_INFRA" => ("Ended from outside the program", "an infrastructure error: a retry may succeed"),
        "ERR_ENGINE" => {
            ("The container engine failed", "an infrastructure error: the machine's engine, not the job, is at fault")
        }
        _ => ("The job failed", "no more specific cause was recognised"),
    }
}

/// The analysis' time axis as replica attempts, for the timeline chart.
pub fn spans_as_replicas(spans: &[ReplicaSpan]) -> Vec<Replica> {
    spans
        .iter()
        .map(|span| Replica {
            metadata: Metadata { id: Some(span.replica_id.clone()), ..Default::default() },
            id: span.replica_id.clone(),
            status: ReplicaStatus {
                completion_index: span.completion_index,
                attempt: span.attempt,
                phase: span.phase,
                reason: span.reason.clone(),
                start_time: span.started_at,
                end_time: span.ended_at,
                public_ip: None,
                node: None,
                readiness_issue: None,
                exit_code: None,
                signal: None,
                message: None,
                cpu: None,
                memory_in_mb: None,
                retry_at: None,
                executor_id: None,
            },
        })
        .collect()
}

/// The sentence that says which replica failed first, when, and after how
/// long.
pub fn first_failure_sentence(analysis: &FailureAnalysis) -> Option<String> {
    let first = analysis.failed_replicas.first()?;
    let mut sentence = format!("Replica {} (attempt {}) failed first", first.completion_index, first.attempt + 1);
    if let Some(at) = first.failed_at {
        sentence.push_str(&format!(", at {}", format_time(at)));
        if let Some(started) = first.started_at {
            sentence.push_str(&format!(", {} after it started", format_duration((at - started) / 1000)));
        }
    }
    let others = analysis.failed_replicas.len() - 1;
    if others > 0 {
        sentence.push_str(&format!("; {others} more attempt{} failed after it", if others == 1 { "" } else { "s" }));
    }
    sentence.push('.');
    Some(sentence)
}

#[component]
pub fn FailureTab() -> impl IntoView {
    let context = use_job();
    let sign_in_again = use_sign_in_again();
    // Asked again whenever the job's state changes: a job that fails while
    // the tab is open gets its analysis without a reload.
    let state = Memo::new(move |_| context.read(|job| job.state()));
    // Not a `LocalResource`: its machinery brings std's thread handle into
    // the tab's download (docs/measurements.md, "One thread, no thread
    // handle"). An answer is shown only if no later question was asked.
    let analysis = RwSignal::new(None);
    let asked = StoredValue::new(0_u32);
    Effect::new(move |_| {
        let _ = state.get();
        let id = context.id.get_untracked();
        asked.update_value(|n| *n += 1);
        let ticket = asked.get_value();
        leptos::task::spawn_local(async move {
            let answer = api::failure_analysis(&id).await;
            if asked.try_get_value() == Some(ticket) {
                analysis.try_set(Some(answer));
            }
        });
    });
    view! {
        <h2>"Failure"</h2>
        {move || match analysis.get() {
            None => view! { <p class="loading" role="status">"Analysing the failure…"</p> }.into_any(),
            Some(Err(ApiFailure::Unauthorized)) => {
                sign_in_again();
                ().into_any()
            }
            Some(Err(failure)) => view! { <p class="banner error" role="alert">{failure.to_string()}</p> }.into_any(),
            Some(Ok(analysis)) if analysis.err_class.is_empty() => {
                let state = state.get_untracked();
                let words = match state {
                    Some(JobState::Failed) => "The job failed, but no attempt of it failed on its own account.".to_string(),
                    state => format!(
                        "Nothing has failed: the job is {}.",
                        state.map(|s| s.as_str()).unwrap_or("in an unknown state")
                    ),
                };
                view! { <p class="verdict">{words}</p> }.into_any()
            }
            Some(Ok(analysis)) => view! { <Analysis analysis job_id=context.id.get_untracked()/> }.into_any(),
        }}
    }
}

/// The analysis of a failed job. The words, the tables and the excerpts are
/// drawn parts (`dom::draw_into`), drawn once: an analysis does not change
/// under the user (a new one replaces the view).
#[component]
fn Analysis(analysis: FailureAnalysis, job_id: String) -> impl IntoView {
    let replicas = Signal::stored(spans_as_replicas(&analysis.timeline));
    let lanes = analysis.timeline.iter().map(|s| s.completion_index + 1).max().unwrap_or(0);
    let end = analysis.timeline.iter().filter_map(|s| s.ended_at.or(s.started_at)).max().unwrap_or(0);
    // An out-of-memory kill: the memory the replica used up to it.
    let memory_curve = analysis.memory_curve.clone().map(|curve| {
        let start = curve.points.first().map(|p| p.0).unwrap_or(0);
        let end = curve.points.last().map(|p| p.0).unwrap_or(0).max(start + 1000);
        let line = Line { label: curve.replica_id.clone(), points: curve.points.iter().map(|p| (p.0, p.2)).collect() };
        view! {
            <h3>"Memory up to the kill"</h3>
            <StillChart chart=Chart { title: format!("Memory of {}", curve.replica_id), unit: "bytes",
                lines: vec![line], limit: Some(curve.limit_bytes as f64) } start end/>
        }
    });
    let (verdict, tables, excerpts) = (NodeRef::new(), NodeRef::new(), NodeRef::new());
    let parts: [(NodeRef<leptos::html::Div>, fn(&web_sys::Element, &FailureAnalysis, &str)); 3] =
        [(verdict, draw_verdict), (tables, draw_tables), (excerpts, draw_excerpts)];
    for (host, draw) in parts {
        let (analysis, job_id) = (analysis.clone(), job_id.clone());
        dom::draw_into(
            host,
            Box::new(move |host| {
                dom::clear(host);
                draw(host, &analysis, &job_id);
            }),
        );
    }
    view! {
        <div node_ref=verdict></div>
        <ReplicaTimeline replicas completions=Signal::stored(lanes) now=Signal::stored(end) job_id=job_id.clone()/>
        <div node_ref=tables></div>
        {memory_curve}
        <div node_ref=excerpts></div>
    }
}

/// The class and the suggestion in words, and which replica failed first,
/// with a link to every rank's lines around its first error.
fn draw_verdict(host: &web_sys::Element, analysis: &FailureAnalysis, job_id: &str) {
    let (title, kind) = class_words(&analysis.err_class);
    let verdict = dom::child(host, "div", "failure-verdict", "");
    let class = dom::child(&verdict, "p", "err-class", "");
    dom::child(&class, "code", "badge bad", &analysis.err_class);
    let _ = class.append_with_str_1(" ");
    dom::child(&class, "strong", "", title);
    dom::child(&verdict, "p", "err-kind", kind);
    dom::child(&verdict, "p", "summary", &analysis.summary);
    let suggestion = dom::child(&verdict, "p", "suggestion", "");
    dom::child(&suggestion, "strong", "", "What to do: ");
    let _ = suggestion.append_with_str_1(&analysis.suggestion);
    dom::child(host, "h3", "", "Which replica failed first");
    dom::child(host, "p", "first-failure-sentence", &first_failure_sentence(analysis).unwrap_or_default());
    // The analysis lists the failed attempts' logs first failure first.
    if let Some(first) = analysis.log_streams.first() {
        let link = dom::child(&dom::child(host, "p", "", ""), "a", "", "See every rank around its first error");
        dom::set(&link, "href", &routes::job_ranks_at(job_id, &first.replica_id, first.error_line));
    }
}

/// One row of a table drawn by `draw_tables`: each cell's text.
fn text_row(body: &web_sys::Element, cells: &[&str]) -> web_sys::Element {
    let row = dom::child(body, "tr", "", "");
    for cell in cells {
        dom::child(&row, "td", "", cell);
    }
    row
}

/// A table with its caption (none when empty: a heading above names it),
/// its header row, and its body, which it returns.
fn table(host: &web_sys::Element, class: &str, caption: &str, head: &[&str]) -> web_sys::Element {
    let table = dom::child(host, "table", class, "");
    if !caption.is_empty() {
        dom::child(&table, "caption", "", caption);
    }
    let header = dom::child(&dom::child(&table, "thead", "", ""), "tr", "", "");
    for column in head {
        dom::child(&header, "th", "", column);
    }
    dom::child(&table, "tbody", "", "")
}

/// The failed attempts, first failure first, and the node events.
fn draw_tables(host: &web_sys::Element, analysis: &FailureAnalysis, job_id: &str) {
    let head = ["Replica", "Attempt", "Class", "Failed at", "Exit code", "How it ended", "Log"];
    let body = table(host, "failed-replicas", "Failed attempts, first failure first", &head);
    for (i, f) in analysis.failed_replicas.iter().enumerate() {
        let log = routes::job_logs(job_id, Some(&f.replica_id));
        let log = match analysis.log_streams.iter().find(|s| s.replica_id == f.replica_id) {
            Some(stream) => format!("{log}#L{}", stream.error_line),
            None => log,
        };
        let how = f.message.clone().or(f.reason.clone()).unwrap_or_default();
        let failed_at = f.failed_at.map(format_time).unwrap_or_default();
        let exit_code = f.exit_code.map(|c| c.to_string()).unwrap_or_default();
        let row = text_row(
            &body,
            &[
                &format!("Replica {}", f.completion_index),
                &(f.attempt + 1).to_string(),
                "",
                &failed_at,
                &exit_code,
                &how,
            ],
        );
        if i == 0 {
            dom::set(&row, "class", "first-failure");
            if let Some(replica) = row.first_element_child() {
                let _ = replica.append_with_str_1(" ");
                dom::child(&replica, "span", "badge bad", "first");
            }
        }
        if let Some(class) = row.children().item(2) {
            dom::child(&class, "code", "", f.err_class.as_deref().unwrap_or_default());
        }
        let link = dom::child(&dom::child(&row, "td", "", ""), "a", "", "Log");
        dom::set(&link, "href", &log);
    }
    if analysis.job_failure_by_node_event.is_empty() {
        return;
    }
    dom::child(host, "h3", "", "Node events");
    let head = ["Event", "Replica", "Node", "Killed process", "When", "Message"];
    let body = table(host, "node-events", "", &head);
    for e in &analysis.job_failure_by_node_event {
        let when = e.time.map(format_time).unwrap_or_default();
        text_row(
            &body,
            &[
                &e.node_event_name,
                e.replica_id.as_deref().unwrap_or_default(),
                e.node.as_deref().unwrap_or_default(),
                e.victim.as_deref().unwrap_or_default(),
                &when,
                &e.message,
            ],
        );
    }
}

/// The log lines around each failed replica's first error. Line numbers
/// link to the same line in the log viewer; each excerpt opens as a
/// selected range.
fn draw_excerpts(host: &web_sys::Element, analysis: &FailureAnalysis, job_id: &str) {
    dom::child(host, "h3", "", "Where it went wrong in the logs");
    if analysis.log_streams.is_empty() {
        dom::child(host, "p", "help", "No log excerpt: the failed attempts wrote no output.");
    }
    for stream in &analysis.log_streams {
        draw_excerpt(host, stream, job_id);
    }
}

fn draw_excerpt(host: &web_sys::Element, stream: &LogStream, job_id: &str) {
    let log = routes::job_logs(job_id, Some(&stream.replica_id));
    let first = stream.lines.first().map(|l| l.line).unwrap_or(stream.error_line);
    let last = stream.lines.last().map(|l| l.line).unwrap_or(stream.error_line);
    let section = dom::child(host, "section", "excerpt", "");
    let heading = format!(
        "{} · attempt {} · {} on line {}",
        stream.replica_id,
        stream.attempt + 1,
        stream.pattern,
        stream.error_line
    );
    dom::child(&section, "h4", "", &heading);
    let range = dom::child(&dom::child(&section, "p", "", ""), "a", "", "Open these lines in the log viewer");
    dom::set(&range, "href", &format!("{log}#L{first}-L{last}"));
    let body = dom::child(&section, "div", "log-excerpt", "");
    let mut previous = None;
    for line in &stream.lines {
        // A gap between the head and the tail of a long block.
        if previous.is_some_and(|p: i64| line.line > p + 1) {
            dom::child(&body, "div", "log-line gap", "⋯");
        }
        previous = Some(line.line);
        let class = if line.line == stream.error_line { "log-line error-line" } else { "log-line" };
        let row = dom::child(&body, "div", class, "");
        let number = dom::child(&row, "a", "ln", &line.line.to_string());
        dom::set(&number, "href", &format!("{log}#L{}", line.line));
        let text = dom::child(&row, "span", "lt", "");
        ansi::render_into(&text, &line.text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jobdeck_api::{ExcerptLine, ReplicaFailure, ReplicaPhase};

    fn analysis() -> FailureAnalysis {
        FailureAnalysis {
            err_class: "ERR_CUDA_OOM".into(),
            summary: "Replica 1 (attempt 1) ran out of GPU memory.".into(),
            suggestion: "Lower the batch size.".into(),
            program_error: true,
            failed_replicas: vec![
                ReplicaFailure {
                    replica_id: "job-1-1-0".into(),
                    completion_index: 1,
                    attempt: 0,
                    started_at: Some(1_000),
                    failed_at: Some(94_000),
                    exit_code: Some(1),
                    err_class: Some("ERR_CUDA_OOM".into()),
                    ..Default::default()
                },
                ReplicaFailure { replica_id: "job-1-0-0".into(), completion_index: 0, ..Default::default() },
            ],
            log_streams: vec![LogStream {
                replica_id: "job-1-1-0".into(),
                attempt: 0,
                error_line: 4,
                pattern: "CUDA out of memory".into(),
                lines: [
                    (2, "step 1"),
                    (3, "Traceback (most recent call last):"),
                    (4, "\u{1b}[31mtorch.OutOfMemoryError: <CUDA>\u{1b}[0m"),
                    (9, "exit"),
                ]
                .into_iter()
                .map(|(line, text)| ExcerptLine { line, text: text.into() })
                .collect(),
            }],
            timeline: vec![ReplicaSpan {
                replica_id: "job-1-1-0".into(),
                completion_index: 1,
                attempt: 0,
                phase: ReplicaPhase::Failed,
                started_at: Some(1_000),
                ended_at: Some(94_000),
                reason: Some("Error".into()),
            }],
            ..Default::default()
        }
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn the_first_failure_is_named_with_its_time() {
        let sentence = first_failure_sentence(&analysis()).unwrap();
        assert!(sentence.starts_with("Replica 1 (attempt 1) failed first, at "), "{sentence}");
        assert!(sentence.ends_with(", 1m 33s after it started; 1 more attempt failed after it."), "{sentence}");
        assert_eq!(first_failure_sentence(&FailureAnalysis::default()), None);
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn every_class_has_words() {
        for class in [
            "ERR_PROGRAM",
            "ERR_CUDA_OOM",
            "ERR_CONFIG",
            "ERR_OOM",
            "ERR_NCCL",
            "ERR_IMAGE_PULL",
            "ERR_DEADLINE",
            "ERR_QUEUE_TIMEOUT",
            "ERR_INFRA",
            "ERR_ENGINE",
        ] {
            assert_ne!(class_words(class).0, class_words("ERR_UNKNOWN").0, "{class}");
        }
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    async fn the_analysis_says_why_and_links_each_line_to_the_log() {
        let host = crate::fixtures::mount(|| view! { <Analysis analysis=analysis() job_id="job-1".to_string()/> });
        crate::components::live::sleep(0).await;
        let text = host.text_content().unwrap();
        for expected in [
            "ERR_CUDA_OOM",
            "Out of GPU memory",
            "What to do: Lower the batch size.",
            "Replica 1 (attempt 1) failed first",
        ] {
            assert!(text.contains(expected), "{expected} in {text}");
        }
        let first_row = host.query_selector("table.failed-replicas tbody tr").unwrap().unwrap();
        assert!(first_row.text_content().unwrap().contains("first"));
        let error_line = host.query_selector(".log-excerpt .error-line").unwrap().unwrap();
        assert_eq!(error_line.text_content().unwrap(), "4torch.OutOfMemoryError: <CUDA>");
        let link = error_line.query_selector("a.ln").unwrap().unwrap();
        assert_eq!(link.get_attribute("href").unwrap(), "/jobs/job-1/logs?replica=job-1-1-0#L4");
        assert!(host.query_selector(".log-excerpt .gap").unwrap().is_some(), "the gap between line 4 and 9 is shown");
        let range = host.query_selector(".excerpt p a").unwrap().unwrap();
        assert_eq!(range.get_attribute("href").unwrap(), "/jobs/job-1/logs?replica=job-1-1-0#L2-L9");
        assert_eq!(host.query_selector_all(".timeline-chart").unwrap().length(), 1);
        let ranks = host.query_selector("a[href^='/jobs/job-1/ranks']").unwrap().unwrap();
        assert_eq!(ranks.get_attribute("href").unwrap(), "/jobs/job-1/ranks#job-1-1-0:L4");
    }
}
