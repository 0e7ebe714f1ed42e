//! Copies a pod's log from the pod log API into Jobdeck's log store, so a
//! Kubernetes replica's log is served, searched and kept like a local one
//! (and outlives the pod).
//!
//! The log is requested with `timestamps=true` and `follow=true`: every line
//! arrives as `<RFC 3339 time> <text>` while the container runs, and the
//! stream ends when it exits. A copy that was interrupted (a restart of the
//! server, a dropped connection) resumes with `sinceTime` at the last stored
//! line and skips lines up to that line's time.

use std::time::{Duration, Instant};

use futures_util::io::{AsyncBufRead, AsyncBufReadExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, LogParams};

use crate::logs::{LineSplitter, LogStore, LogWriter, Stream};

use super::mapping::CONTAINER_NAME;

/// How often appended lines are made visible to readers.
const FLUSH_EVERY: Duration = Duration::from_millis(200);

/// Splits `<RFC 3339 time> <text>` into Unix milliseconds and text. A line
/// without a readable time (the tail of a line the store split) keeps
/// `fallback`.
pub fn split_timestamp(line: &[u8], fallback: i64) -> (i64, &[u8]) {
    if let Some(space) = line.iter().position(|b| *b == b' ') {
        if let Ok(text) = std::str::from_utf8(&line[..space]) {
            if let Ok(time) = text.parse::<Timestamp>() {
                return (time.as_millisecond(), &line[space + 1..]);
            }
        }
    }
    (fallback, line)
}

/// The time of the last line stored for an attempt, if any.
fn last_stored_time(store: &LogStore, job_id: &str, index: i64, attempt: i64) -> std::io::Result<Option<i64>> {
    let Some(mut reader) = store.open(job_id, index, attempt)? else {
        return Ok(None);
    };
    let count = reader.line_count()?;
    if count == 0 {
        return Ok(None);
    }
    Ok(reader.lines(count, count)?.first().map(|l| l.time))
}

/// Copies the log of `pod` into the attempt's log until the container's
/// output ends. Returns the number of lines stored.
pub async fn copy_pod_log(
    pods: &Api<Pod>,
    pod: &str,
    store: &LogStore,
    job_id: &str,
    index: i64,
    attempt: i64,
) -> Result<u64, String> {
    let resume_after = last_stored_time(store, job_id, index, attempt)
        .map_err(|e| format!("cannot read the stored log of {pod}: {e}"))?;
    let params = LogParams {
        container: Some(CONTAINER_NAME.into()),
        follow: true,
        timestamps: true,
        since_time: resume_after.and_then(|ms| Timestamp::from_second(ms.div_euclid(1000)).ok()),
        ..LogParams::default()
    };
    let stream = pods
        .log_stream(pod, &params)
        .await
        .map_err(|e| format!("cannot read the log of pod {pod}: {e}"))?;
    let (log_path, idx_path) = store.paths(job_id, index, attempt);
    let writer = LogWriter::create(&log_path, &idx_path).map_err(|e| format!("cannot write the log of {pod}: {e}"))?;
    let mut sink = Sink {
        writer,
        resume_after,
        last_time: resume_after.unwrap_or(0),
        stored: 0,
        error: None,
    };
    let mut splitter = LineSplitter::default();
    futures_util::pin_mut!(stream);
    let mut last_flush = Instant::now();
    let mut broken = None;
    loop {
        let chunk = match stream.fill_buf().await {
            Ok(chunk) => chunk.to_vec(),
            Err(e) => {
                // The connection dropped: keep what arrived; the copy may be
                // resumed from it.
                broken = Some(e);
                break;
            }
        };
        if chunk.is_empty() {
            break;
        }
        stream.as_mut().consume(chunk.len());
        splitter.feed(&chunk, |line| sink.store(line));
        sink.check(pod)?;
        if last_flush.elapsed() >= FLUSH_EVERY {
            sink.writer.flush().map_err(|e| format!("cannot write the log of {pod}: {e}"))?;
            last_flush = Instant::now();
        }
    }
    splitter.finish(|line| sink.store(line));
    sink.check(pod)?;
    sink.writer.flush().map_err(|e| format!("cannot write the log of {pod}: {e}"))?;
    match broken {
        Some(e) => Err(format!("the log stream of pod {pod} broke: {e}")),
        None => Ok(sink.stored),
    }
}

/// Where the lines of one copy go.
struct Sink {
    writer: LogWriter,
    /// Lines up to this time were stored by an earlier copy.
    resume_after: Option<i64>,
    last_time: i64,
    stored: u64,
    error: Option<std::io::Error>,
}

impl Sink {
    fn store(&mut self, line: &[u8]) {
        let (time, text) = split_timestamp(line, self.last_time);
        if self.resume_after.is_some_and(|after| time <= after) {
            return;
        }
        self.last_time = time;
        match self.writer.append(Stream::Stdout, time, text) {
            Ok(()) => self.stored += 1,
            Err(e) => self.error = Some(e),
        }
    }

    fn check(&mut self, pod: &str) -> Result<(), String> {
        match self.error.take() {
            Some(e) => Err(format!("cannot write the log of {pod}: {e}")),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_split_from_the_text() {
        let (time, text) = split_timestamp(b"2026-01-10T10:00:05.123456789Z epoch 1 loss 0.5", 7);
        assert_eq!(time, "2026-01-10T10:00:05.123Z".parse::<Timestamp>().unwrap().as_millisecond());
        assert_eq!(text, b"epoch 1 loss 0.5");
        let (time, text) = split_timestamp(b"2026-01-10T10:00:05Z ", 7);
        assert_eq!(time, "2026-01-10T10:00:05Z".parse::<Timestamp>().unwrap().as_millisecond());
        assert_eq!(text, b"");
        // The tail of a line the store split has no time of its own.
        assert_eq!(split_timestamp(b"no time here", 7), (7, &b"no time here"[..]));
        assert_eq!(split_timestamp(b"\xff\xfe binary", 7), (7, &b"\xff\xfe binary"[..]));
    }
}
