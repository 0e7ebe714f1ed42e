//! Builds the answer of `GET /jobs/{id}/failure-analysis` (design §7) from a
//! job's stored attempts, its events and its logs: the error class, a
//! sentence saying what happened, a suggestion a person can act on, the
//! node events behind the failure, the log excerpt around the first error of
//! each failed replica, and every attempt on one time axis.
//!
//! It reads log files, so callers run it on the blocking pool.

use jobdeck_api::{
    ExcerptLine, FailureAnalysis, JobState, LogStream, NodeFailureEvent, ReplicaFailure, ReplicaPhase, ReplicaSpan,
};

use super::scan::{first_error, oom_victim, Finding};
use super::{classify, AttemptEnd, FailureClass};
use jobdeck_api::{replica_id, EndReason};
use jobdeck_store::logs::LogStore;
use jobdeck_store::{ReplicaRow, StoredEvent};

/// Excerpts are built for this many failed replicas (first failures first);
/// the others are listed without one.
pub const MAX_EXCERPTS: usize = 8;
/// Lines shown before and after an error's block.
const CONTEXT: u64 = 3;
/// A block longer than this is shown as its head and its tail.
const MAX_BLOCK: u64 = 40;
const BLOCK_HEAD: u64 = 8;
const BLOCK_TAIL: u64 = 25;
/// Lines shown from the end of a log with no recognisable error.
const LAST_LINES: u64 = 15;

/// Lepton's name for a node event: its failure analysis says `OOM` where the
/// replica's reason (Kubernetes' word) is `OOMKilled`.
fn lepton_node_event_name(reason: &EndReason) -> &str {
    match reason {
        EndReason::OomKilled => "OOM",
        other => other.as_str(),
    }
}

/// What the analysis needs to know about the job besides its attempts.
#[derive(Debug, Clone, Default)]
pub struct JobFacts {
    pub job_id: String,
    pub state: JobState,
    pub reason: Option<String>,
    pub message: Option<String>,
    /// The run the job is on now.
    pub run: i64,
    pub shape_name: String,
    pub memory_mb: i64,
    pub gpus: i64,
    pub accelerator_memory_mb: Option<i64>,
    pub image: Option<String>,
    pub active_deadline_seconds: Option<i64>,
    pub max_queued_duration_seconds: Option<i64>,
    pub disable_retry_on_program_error: bool,
    pub log_collection: bool,
}

/// Whether an attempt failed on its own account: an attempt ended because
/// its run was stopped or failed on another replica's is not a failure to
/// explain; the replica that caused it is.
fn is_failure(row: &ReplicaRow) -> bool {
    row.phase == ReplicaPhase::Failed && !row.reason.as_ref().is_some_and(EndReason::is_collateral)
}

fn end_of(row: &ReplicaRow) -> AttemptEnd<'_> {
    AttemptEnd {
        reason: row.reason.as_ref(),
        exit_code: row.exit_code.map(|c| c as i32),
        signal: row.signal.map(|s| s as i32),
    }
}

/// The process an OOM kill took, from the kernel's words ("Killed process
/// 4695 (awk)") or the local executor's ("the kernel killed awk (pid 4695)").
pub fn victim_in(text: &str) -> Option<String> {
    oom_victim(text).or_else(|| {
        let at = text.find("the kernel killed ")?;
        let victim = text[at + "the kernel killed ".len()..].trim().trim_end_matches('.');
        (!victim.is_empty()).then(|| victim.to_string())
    })
}

/// The excerpt of a log around `finding`, or its last lines without one.
fn excerpt(logs: &LogStore, job_id: &str, row: &ReplicaRow, finding: Option<&Finding>) -> Option<LogStream> {
    let mut reader = logs.open(job_id, row.completion_index, row.attempt).ok()??;
    let total = reader.line_count().ok()?;
    if total == 0 {
        return None;
    }
    let (ranges, error_line, pattern) = match finding {
        Some(f) => {
            let start = f.first_line.saturating_sub(CONTEXT).max(1);
            let end = (f.last_line + CONTEXT).min(total);
            let ranges = if f.last_line - f.first_line > MAX_BLOCK {
                vec![(start, f.first_line + BLOCK_HEAD), (f.last_line.saturating_sub(BLOCK_TAIL), end)]
            } else {
                vec![(start, end)]
            };
            (ranges, f.error_line, f.kind.label().to_string())
        }
        None => {
            (vec![(total.saturating_sub(LAST_LINES - 1).max(1), total)], total, "Last lines of the log".to_string())
        }
    };
    let mut lines = Vec::new();
    for (from, to) in ranges {
        for line in reader.lines(from, to).ok()? {
            lines.push(ExcerptLine { line: line.number as i64, text: line.text });
        }
    }
    Some(LogStream {
        replica_id: replica_id(job_id, row.completion_index, row.attempt),
        attempt: row.attempt,
        error_line: error_line as i64,
        pattern,
        lines,
    })
}

/// The last "waiting for capacity" message the scheduler recorded. Events
/// come newest first, in the order they were recorded: the scheduler often
/// queues a job and says what it waits for within one millisecond, so their
/// times cannot tell which came last.
fn last_capacity_message(events: &[StoredEvent]) -> Option<String> {
    events.iter().find(|e| e.reason == "NoCapacity" || e.reason == "Queued").map(|e| e.message.clone())
}

fn quote(text: &str) -> String {
    let text = text.trim();
    let short: String = text.chars().take(200).collect();
    if short.len() < text.len() {
        format!("“{short}…”")
    } else {
        format!("“{short}”")
    }
}

/// Says what happened, in one sentence, and what to do about it.
fn explain(
    class: FailureClass,
    facts: &JobFacts,
    first: Option<(&ReplicaRow, Option<&Finding>)>,
    victim: Option<&str>,
    capacity: Option<&str>,
) -> (String, String) {
    let who = match first {
        Some((row, _)) => format!("Replica {} (attempt {})", row.completion_index, row.attempt + 1),
        None => "The job".to_string(),
    };
    let found = first.and_then(|(_, f)| f);
    let evidence =
        found.map(|f| format!(" The log shows {} on line {}.", quote(&f.text), f.error_line)).unwrap_or_default();
    let exit = first
        .and_then(|(row, _)| match (row.exit_code, row.signal) {
            (Some(code), _) => Some(format!("exited with code {code}")),
            (None, Some(signal)) => Some(format!("was ended by signal {signal}")),
            _ => None,
        })
        .unwrap_or_else(|| "failed".to_string());
    let gpu_memory = match (facts.gpus, facts.accelerator_memory_mb) {
        (g, Some(mb)) if g > 0 => format!(" (shape {} has {g} GPU(s) with {} GiB each)", facts.shape_name, mb / 1024),
        _ => String::new(),
    };
    match class {
        FailureClass::Program => (
            format!("{who} {exit}: the program failed on its own.{evidence}"),
            "Fix the error the log excerpt shows (in the code, its inputs or its arguments), then start the job again; \
             running the same code again will fail the same way."
                .to_string(),
        ),
        FailureClass::CudaOom => (
            format!("{who} ran out of GPU memory.{evidence}"),
            format!(
                "Lower the batch size or sequence length, or turn on gradient checkpointing or mixed precision so the model \
                 fits in GPU memory; otherwise choose a shape with more GPU memory{gpu_memory}."
            ),
        ),
        FailureClass::Oom => {
            let killed = victim.map(|v| format!(" The kernel killed {v}.")).unwrap_or_default();
            (
                format!("{who} used more memory than the {} MiB its shape {} allows and was killed.{killed}", facts.memory_mb, facts.shape_name),
                format!(
                    "Choose a shape with more than {} MiB of memory, or make the program use less: smaller batches, fewer \
                     data-loader workers, or reading data in pieces instead of all at once.",
                    facts.memory_mb
                ),
            )
        }
        FailureClass::Nccl => (
            format!("{who} failed in communication between workers (NCCL).{evidence}"),
            "Look at the replica that failed first: a worker that crashed or ran out of memory makes the others fail in NCCL. \
             If none did, the network between the nodes is the likely cause: start the job again, and set NCCL_DEBUG=INFO in \
             the environment to see which connection fails."
                .to_string(),
        ),
        FailureClass::ImagePull => {
            let image = facts.image.as_deref().map(|i| format!(" '{i}'")).unwrap_or_default();
            (
                format!("{who} could not pull its container image{image}.{evidence}"),
                "Check the image name and tag for typos, and that the registry credentials (registry username and password, or \
                 the image pull secret) may read it; then start the job again."
                    .to_string(),
            )
        }
        FailureClass::Deadline => {
            let limit = facts.active_deadline_seconds.map(|s| format!(" of {s} s")).unwrap_or_default();
            (
                format!("The job ran longer than its active deadline{limit} and was stopped."),
                "If the work needs more time, raise the active deadline (spec.active_deadline_seconds) or remove it; the log \
                 excerpts show what each replica was doing when it was stopped, in case it was stuck."
                    .to_string(),
            )
        }
        FailureClass::QueueTimeout => {
            let limit = facts.max_queued_duration_seconds.map(|s| format!(" of {s} s")).unwrap_or_default();
            let why = capacity.map(|c| format!(" The last word from the scheduler: {c}.")).unwrap_or_default();
            (
                format!("The job waited in the queue longer than its maximum queued duration{limit} and never started.{why}"),
                "Choose a smaller shape, fewer parallel replicas or another node group, raise the job's priority, or allow it to \
                 wait longer (spec.max_queued_duration_seconds)."
                    .to_string(),
            )
        }
        // A configuration the executor refused before anything ran (a volume
        // path that is a link): its own words say what to change.
        FailureClass::Config if first.is_some_and(|(row, _)| row.reason == Some(EndReason::ConfigError)) => {
            let why = first.and_then(|(row, _)| row.message.clone()).unwrap_or_default();
            (
                format!("{who} could not start: {why}."),
                "Change what the message names in the job's configuration, then start the job again.".to_string(),
            )
        }
        FailureClass::Config => (
            format!("{who} could not run its command.{evidence}"),
            "Check the command (spec.container.command): the program it names must exist in the image (in process mode, on \
             this machine) and be executable, and any script it runs must be at that path."
                .to_string(),
        ),
        FailureClass::Engine => {
            let why = first
                .and_then(|(row, _)| row.message.clone())
                .map(|m| format!(" ({m})"))
                .unwrap_or_default();
            (
                format!(
                    "The container engine could not create or start the container of {}{why}.",
                    who.replacen("Replica", "replica", 1).replacen("The job", "the job", 1)
                ),
                "The job itself is not at fault: the machine's container engine is. Ask the administrator to look at the                  engine (its runtime, storage and daemon, for example with `podman info` or `docker info`); the job is                  retried within its backoff limit, and can be started again once the engine works."
                    .to_string(),
            )
        }
        FailureClass::Infra => {
            let why = first
                .and_then(|(row, _)| row.message.clone().or(row.reason.as_ref().map(EndReason::to_string)))
                .or_else(|| facts.message.clone())
                .map(|m| format!(" ({m})"))
                .unwrap_or_default();
            (
                format!("{who} was ended by something outside the program{why}."),
                "Start the job again: the program itself did not fail. If this keeps happening, look at the events for the \
                 node it ran on."
                    .to_string(),
            )
        }
    }
}

/// The failure analysis of a job. `replicas` are all its stored attempts,
/// `events` its events.
pub fn analyse(facts: &JobFacts, replicas: &[ReplicaRow], events: &[StoredEvent], logs: &LogStore) -> FailureAnalysis {
    // The run to explain: the newest one with failures, else the current one.
    let run = replicas.iter().filter(|r| is_failure(r)).map(|r| r.run).max().unwrap_or(facts.run);
    let mut failures: Vec<&ReplicaRow> = replicas.iter().filter(|r| r.run == run && is_failure(r)).collect();
    failures.sort_by_key(|r| (r.end_time.unwrap_or(i64::MAX), r.completion_index, r.attempt));

    let mut findings: Vec<Option<Finding>> = Vec::new();
    let mut log_streams = Vec::new();
    for row in failures.iter().take(MAX_EXCERPTS) {
        let finding = if facts.log_collection {
            first_error(logs, &facts.job_id, row.completion_index, row.attempt, true).ok().flatten()
        } else {
            None
        };
        if facts.log_collection {
            log_streams.extend(excerpt(logs, &facts.job_id, row, finding.as_ref()));
        }
        findings.push(finding);
    }
    let finding_of = |i: usize| findings.get(i).and_then(Option::as_ref);

    let failed_replicas: Vec<ReplicaFailure> = failures
        .iter()
        .enumerate()
        .map(|(i, row)| ReplicaFailure {
            replica_id: replica_id(&facts.job_id, row.completion_index, row.attempt),
            completion_index: row.completion_index,
            attempt: row.attempt,
            failed_at: row.end_time,
            exit_code: row.exit_code.map(|c| c as i32),
            reason: row.reason.as_ref().map(EndReason::to_string),
            started_at: row.start_time,
            err_class: Some(classify(&end_of(row), finding_of(i).map(|f| f.kind)).as_str().to_string()),
            message: row.message.clone(),
        })
        .collect();

    let mut node_events: Vec<NodeFailureEvent> = replicas
        .iter()
        .filter(|r| r.phase == ReplicaPhase::Failed)
        .filter_map(|row| Some((row, row.reason.as_ref().filter(|reason| reason.is_node_event())?)))
        .map(|(row, reason)| {
            let message = row.message.clone().unwrap_or_default();
            let mut victim = victim_in(&message);
            if victim.is_none() && *reason == EndReason::OomKilled {
                let index = failures.iter().position(|f| std::ptr::eq(*f, row));
                victim = index.and_then(finding_of).and_then(|f| victim_in(&f.text));
            }
            NodeFailureEvent {
                node_event_name: lepton_node_event_name(reason).to_string(),
                message,
                replica_id: Some(replica_id(&facts.job_id, row.completion_index, row.attempt)),
                time: row.end_time,
                node: row.node.clone(),
                victim,
            }
        })
        .collect();
    node_events.sort_by_key(|e| e.time.unwrap_or(i64::MAX));

    let mut timeline: Vec<ReplicaSpan> = replicas
        .iter()
        .filter(|r| r.run == run)
        .map(|r| ReplicaSpan {
            replica_id: replica_id(&facts.job_id, r.completion_index, r.attempt),
            completion_index: r.completion_index,
            attempt: r.attempt,
            phase: r.phase,
            started_at: r.start_time,
            ended_at: r.end_time,
            reason: r.reason.as_ref().map(EndReason::to_string),
        })
        .collect();
    timeline.sort_by_key(|s| (s.completion_index, s.attempt));

    let job_failed = facts.state == JobState::Failed || facts.state == JobState::PendingRetry;
    let first = failures.first().map(|row| (*row, finding_of(0)));
    // The job's own reason, where it is an end reason (a job's reason may
    // also say why it waits).
    let job_reason = facts.reason.as_deref().filter(|_| job_failed).map(EndReason::parse);
    let job_class = match job_reason {
        Some(EndReason::DeadlineExceeded) => Some(FailureClass::Deadline),
        Some(EndReason::MaxQueuedDurationExceeded) => Some(FailureClass::QueueTimeout),
        Some(EndReason::ImagePullFailed) => Some(FailureClass::ImagePull),
        Some(EndReason::ConfigError) => Some(FailureClass::Config),
        _ => None,
    };
    let class =
        job_class.or_else(|| first.map(|(row, finding)| classify(&end_of(row), finding.map(|f| f.kind)))).or_else(
            || job_failed.then(|| classify(&AttemptEnd { reason: job_reason.as_ref(), ..AttemptEnd::default() }, None)),
        );

    let Some(class) = class else {
        return FailureAnalysis { timeline, job_failure_by_node_event: node_events, ..FailureAnalysis::default() };
    };
    // A deadline or queue timeout is the job's, not one replica's.
    let first_for_words =
        first.filter(|_| job_class.is_none() || class == FailureClass::ImagePull || class == FailureClass::Config);
    let victim = node_events.iter().find_map(|e| e.victim.clone());
    let capacity = last_capacity_message(events);
    let (mut summary, suggestion) = explain(class, facts, first_for_words, victim.as_deref(), capacity.as_deref());
    if !job_failed {
        summary = format!("The job has not failed, but an attempt did: {summary}");
    } else if class.is_program_error() && facts.disable_retry_on_program_error {
        summary.push_str(" Retry on program error is disabled, so the job was not retried.");
    }
    FailureAnalysis {
        err_class: class.as_str().to_string(),
        suggestion,
        job_failure_by_node_event: node_events,
        log_streams,
        failed_replicas,
        program_error: class.is_program_error(),
        summary,
        timeline,
        memory_curve: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jobdeck_store::logs::{LogWriter, Stream};

    fn row(index: i64, attempt: i64, phase: &str, reason: &str, exit_code: Option<i64>, end: i64) -> ReplicaRow {
        ReplicaRow {
            job_id: "job-1".into(),
            completion_index: index,
            attempt,
            phase: ReplicaPhase::parse(phase).unwrap(),
            reason: Some(reason).filter(|r| !r.is_empty()).map(EndReason::parse),
            exit_code,
            start_time: Some(1_000),
            end_time: Some(end),
            node: Some("box".into()),
            ..ReplicaRow::default()
        }
    }

    fn facts(state: JobState, reason: &str) -> JobFacts {
        JobFacts {
            job_id: "job-1".into(),
            state,
            reason: Some(reason.into()),
            shape_name: "cpu.small".into(),
            memory_mb: 1024,
            log_collection: true,
            active_deadline_seconds: Some(5),
            max_queued_duration_seconds: Some(60),
            ..JobFacts::default()
        }
    }

    fn write_log(logs: &LogStore, index: i64, attempt: i64, lines: &[&str]) {
        let (log, idx) = logs.paths("job-1", index, attempt);
        let mut writer = LogWriter::create(&log, &idx).unwrap();
        for line in lines {
            writer.append(Stream::Stderr, 1, line.as_bytes()).unwrap();
        }
        writer.flush().unwrap();
    }

    #[test]
    fn the_first_failure_is_explained_with_its_log_excerpt() {
        let dir = tempfile::tempdir().unwrap();
        let logs = LogStore::new(dir.path());
        let mut lines: Vec<String> = (1..=50).map(|i| format!("step {i}")).collect();
        lines.extend([
            "Traceback (most recent call last):".into(),
            "  File \"train.py\", line 9".into(),
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB".into(),
        ]);
        write_log(&logs, 1, 0, &lines.iter().map(String::as_str).collect::<Vec<_>>());
        write_log(&logs, 0, 0, &["NCCL error: remote process exited"]);
        let replicas = vec![
            row(0, 0, "failed", "Error", Some(1), 9_000),
            row(1, 0, "failed", "Error", Some(1), 5_000),
            row(2, 0, "failed", "BackoffLimitExceeded", None, 9_500),
            row(3, 0, "succeeded", "Completed", Some(0), 4_000),
        ];
        let a = analyse(&facts(JobState::Failed, "BackoffLimitExceeded"), &replicas, &[], &logs);
        assert_eq!(a.err_class, "ERR_CUDA_OOM");
        assert!(a.program_error);
        assert!(a.summary.starts_with("Replica 1 (attempt 1) ran out of GPU memory."), "{}", a.summary);
        assert!(a.summary.contains("on line 53"), "{}", a.summary);
        assert!(a.suggestion.contains("batch size"), "{}", a.suggestion);
        // First failure first; the replica stopped because of it is not one.
        let order: Vec<&str> = a.failed_replicas.iter().map(|f| f.replica_id.as_str()).collect();
        assert_eq!(order, ["job-1-1-0", "job-1-0-0"]);
        assert_eq!(a.failed_replicas[1].err_class.as_deref(), Some("ERR_NCCL"));
        let stream = &a.log_streams[0];
        assert_eq!(
            (stream.replica_id.as_str(), stream.error_line, stream.pattern.as_str()),
            ("job-1-1-0", 53, "CUDA out of memory")
        );
        let numbers: Vec<i64> = stream.lines.iter().map(|l| l.line).collect();
        assert_eq!(numbers, (48..=53).collect::<Vec<_>>());
        assert_eq!(a.timeline.len(), 4);
    }

    #[test]
    fn job_level_reasons_and_node_events() {
        let dir = tempfile::tempdir().unwrap();
        let logs = LogStore::new(dir.path());
        write_log(
            &logs,
            0,
            0,
            &(1..=40)
                .map(|i| format!("working {i}"))
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        );
        let deadline = analyse(
            &facts(JobState::Failed, "DeadlineExceeded"),
            &[row(0, 0, "failed", "DeadlineExceeded", None, 6_000)],
            &[],
            &logs,
        );
        assert_eq!((deadline.err_class.as_str(), deadline.program_error), ("ERR_DEADLINE", false));
        assert!(deadline.summary.contains("active deadline of 5 s"), "{}", deadline.summary);
        // Without an error in the log, the excerpt is the log's end.
        assert_eq!(deadline.log_streams[0].pattern, "Last lines of the log");
        assert_eq!(deadline.log_streams[0].lines.first().map(|l| l.line), Some(26));
        assert_eq!(deadline.log_streams[0].error_line, 40);

        // Newest first, as the store gives them; both within one millisecond.
        let scheduler_said = |reason: &str, message: &str| StoredEvent {
            kind: jobdeck_api::EventType::Normal,
            reason: reason.into(),
            message: message.into(),
            regarding_kind: "Job".into(),
            regarding_name: "job-1".into(),
            count: 1,
            first_time: 2,
            last_time: 2,
        };
        let events = vec![
            scheduler_said("NoCapacity", "waiting for capacity: needs 8 GPUs, 0 free in group local"),
            scheduler_said("Queued", "waiting for the scheduler in node group(s) local"),
        ];
        let queued = analyse(&facts(JobState::Failed, "MaxQueuedDurationExceeded"), &[], &events, &logs);
        assert_eq!(queued.err_class, "ERR_QUEUE_TIMEOUT");
        assert!(queued.summary.contains("needs 8 GPUs"), "{}", queued.summary);

        let mut oom = row(0, 1, "failed", "OOMKilled", None, 7_000);
        oom.message = Some(
            "the replica used more memory than its shape allows and was killed; the kernel killed python3 (pid 42)"
                .into(),
        );
        let a = analyse(&facts(JobState::Failed, "BackoffLimitExceeded"), &[oom], &[], &logs);
        assert_eq!(a.err_class, "ERR_OOM");
        assert_eq!(a.job_failure_by_node_event[0].node_event_name, "OOM");
        assert_eq!(a.job_failure_by_node_event[0].victim.as_deref(), Some("python3 (pid 42)"));
        assert!(a.summary.contains("1024 MiB") && a.summary.contains("python3 (pid 42)"), "{}", a.summary);

        let running = analyse(&facts(JobState::Running, "Started"), &[row(0, 0, "running", "", None, 0)], &[], &logs);
        assert_eq!((running.err_class.as_str(), running.summary.as_str()), ("", ""));
    }

    #[test]
    fn long_blocks_are_cut_to_head_and_tail() {
        let dir = tempfile::tempdir().unwrap();
        let logs = LogStore::new(dir.path());
        let mut lines = vec!["Traceback (most recent call last):".to_string()];
        lines.extend((0..100).map(|i| format!("  File \"f{i}.py\"")));
        lines.push("RecursionError: maximum recursion depth exceeded".into());
        write_log(&logs, 0, 0, &lines.iter().map(String::as_str).collect::<Vec<_>>());
        let a = analyse(
            &facts(JobState::Failed, "BackoffLimitExceeded"),
            &[row(0, 0, "failed", "Error", Some(1), 2)],
            &[],
            &logs,
        );
        let numbers: Vec<i64> = a.log_streams[0].lines.iter().map(|l| l.line).collect();
        assert_eq!(numbers.first(), Some(&1));
        assert_eq!(numbers.last(), Some(&102));
        assert!(numbers.len() < 40, "{numbers:?}");
        assert_eq!(a.err_class, "ERR_PROGRAM");
    }
}
