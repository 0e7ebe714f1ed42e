//! Copies a pod's log from the pod log API into Jobdeck's log store, so a
//! Kubernetes replica's log is served, searched and kept like a local one
//! (and outlives the pod).
//!
//! The log is requested with `timestamps=true` and `follow=true`: every line
//! arrives as `<RFC 3339 time with nanoseconds> <text>` while the container
//! runs, and the stream ends when the container is no longer running.
//!
//! A copy that was interrupted (a restart of the server, a dropped
//! connection) resumes with `sinceTime`. The API server passes `sinceTime`
//! on to the kubelet at whole seconds (`Format(time.RFC3339)`), and the
//! kubelet sends every line whose time is not before it. So the copy asks
//! from the second of the last stored line, and skips exactly the lines of
//! that second it stored before: it counts the stored `(time, text)` pairs
//! from that second on, and skips an arriving line while an equal stored
//! one is left uncounted. Comparing times alone would lose lines that share
//! the last stored millisecond (the store keeps milliseconds, the kubelet
//! nanoseconds) or store them twice.
//!
//! Kubernetes merges the container's standard output and error into one
//! stream and does not say which line came from which, so every line is
//! stored as standard output (docs/kubernetes.md, "Logs").

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures_util::io::{AsyncBufRead, AsyncBufReadExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, LogParams};

use jobdeck_store::logs::{stored_pieces, LineSplitter, LogStore, LogWriter, Stream};

use super::mapping::CONTAINER_NAME;

/// How often appended lines are made visible to readers, also while the
/// stream is idle.
const FLUSH_EVERY: Duration = Duration::from_millis(200);
/// How many stored lines are read at a time when looking back for the
/// lines of the second a copy resumes from.
const LOOK_BACK_PAGE: u64 = 512;

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

/// Where an interrupted copy picks up: the lines an earlier copy stored
/// from the second of its last line on.
#[derive(Debug, Default)]
pub struct Resume {
    /// The start of the second of the last stored line (Unix ms): what
    /// `sinceTime` asks from.
    pub from_ms: i64,
    /// The time of the last stored line (Unix ms).
    pub last_ms: i64,
    /// How many times each `(time, text)` was stored from `from_ms` on.
    stored: HashMap<(i64, String), u32>,
}

impl Resume {
    /// Reads what is stored of an attempt's log; `None` when nothing is.
    pub fn read(store: &LogStore, job_id: &str, index: i64, attempt: i64) -> std::io::Result<Option<Resume>> {
        let Some(mut reader) = store.open(job_id, index, attempt)? else {
            return Ok(None);
        };
        let count = reader.line_count()?;
        let Some(last) = reader.lines(count, count)?.pop() else {
            return Ok(None);
        };
        let mut resume =
            Resume { from_ms: last.time.div_euclid(1000) * 1000, last_ms: last.time, stored: HashMap::new() };
        // Walk back from the end until a line before that second: the lines
        // of one second are usually one page.
        let mut to = count;
        'pages: while to > 0 {
            let from = to.saturating_sub(LOOK_BACK_PAGE - 1).max(1);
            for line in reader.lines(from, to)?.into_iter().rev() {
                if line.time < resume.from_ms {
                    break 'pages;
                }
                *resume.stored.entry((line.time, line.text)).or_default() += 1;
            }
            to = from - 1;
        }
        Ok(Some(resume))
    }

    /// The `sinceTime` to ask with.
    fn since_time(&self) -> Option<Timestamp> {
        Timestamp::from_millisecond(self.from_ms).ok()
    }

    /// Whether the stored piece `(time, piece)` was stored by the earlier
    /// copy and not matched yet; counts it as matched.
    fn take(&mut self, time: i64, piece: &str) -> bool {
        match self.stored.get_mut(&(time, piece.to_string())) {
            Some(left) if *left > 0 => {
                *left -= 1;
                true
            }
            _ => false,
        }
    }
}

/// Why a copy of a pod's log stopped before the container's output ended.
/// The controller starts it again after a pause.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    #[error("cannot read the stored log of pod {pod}")]
    ReadStored {
        pod: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the log of pod {pod}")]
    Open {
        pod: String,
        #[source]
        source: kube::Error,
    },
    #[error("the log stream of pod {pod} broke")]
    Broke {
        pod: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the log of pod {pod}")]
    Write {
        pod: String,
        #[source]
        source: std::io::Error,
    },
}

/// Copies the log of `pod` into the attempt's log until the container's
/// output ends (the container stopped running). Returns the number of
/// lines stored by this copy.
pub async fn copy_pod_log(
    pods: &Api<Pod>,
    pod: &str,
    store: &LogStore,
    job_id: &str,
    index: i64,
    attempt: i64,
    cap: Option<u64>,
) -> Result<u64, CopyError> {
    let resume = Resume::read(store, job_id, index, attempt)
        .map_err(|source| CopyError::ReadStored { pod: pod.into(), source })?;
    let params = LogParams {
        container: Some(CONTAINER_NAME.into()),
        follow: true,
        timestamps: true,
        since_time: resume.as_ref().and_then(Resume::since_time),
        ..LogParams::default()
    };
    let stream = pods.log_stream(pod, &params).await.map_err(|source| CopyError::Open { pod: pod.into(), source })?;
    let (log_path, idx_path) = store.paths(job_id, index, attempt);
    let writer = LogWriter::create(&log_path, &idx_path)
        .map_err(|source| CopyError::Write { pod: pod.into(), source })?
        .with_cap(cap);
    let mut sink = Sink {
        writer,
        last_time: resume.as_ref().map_or(0, |r| r.last_ms),
        resume,
        stored: 0,
        unflushed: false,
        error: None,
    };
    let mut splitter = LineSplitter::default();
    futures_util::pin_mut!(stream);
    let mut last_flush = Instant::now();
    let broken = loop {
        // While lines wait to be flushed, wait for more only until they are
        // due, so a quiet container's last lines do not stay invisible.
        let wait = if sink.unflushed { FLUSH_EVERY.saturating_sub(last_flush.elapsed()) } else { Duration::MAX };
        let chunk = match tokio::time::timeout(wait, stream.as_mut().fill_buf()).await {
            Ok(Ok(chunk)) => chunk.to_vec(),
            // The connection dropped: keep the complete lines that arrived;
            // the copy is resumed from them.
            Ok(Err(e)) => break Some(e),
            Err(_due) => {
                sink.flush(pod)?;
                last_flush = Instant::now();
                continue;
            }
        };
        if chunk.is_empty() {
            break None;
        }
        stream.as_mut().consume(chunk.len());
        splitter.feed(&chunk, |line| sink.store(line));
        sink.check(pod)?;
        if last_flush.elapsed() >= FLUSH_EVERY {
            sink.flush(pod)?;
            last_flush = Instant::now();
        }
    };
    match broken {
        Some(e) => {
            // The unfinished last line is not stored: the resumed copy
            // receives it whole.
            sink.flush(pod)?;
            Err(CopyError::Broke { pod: pod.into(), source: e })
        }
        None => {
            // The container's output ended; a last line without a newline
            // is complete.
            splitter.finish(|line| sink.store(line));
            sink.check(pod)?;
            sink.writer.finish().map_err(|source| CopyError::Write { pod: pod.into(), source })?;
            Ok(sink.stored)
        }
    }
}

/// Where the lines of one copy go.
struct Sink {
    writer: LogWriter,
    /// What an earlier copy stored, while lines of its last second arrive.
    resume: Option<Resume>,
    /// The time of the last line, for the tail of a line the splitter cut.
    last_time: i64,
    stored: u64,
    unflushed: bool,
    error: Option<std::io::Error>,
}

impl Sink {
    fn store(&mut self, line: &[u8]) {
        let (time, text) = split_timestamp(line, self.last_time);
        self.last_time = time;
        let text = String::from_utf8_lossy(text);
        if let Some(resume) = &mut self.resume {
            if time < resume.from_ms {
                // Before `sinceTime`: stored already (the API does not send
                // these; a server that ignores `sinceTime` would).
                return;
            }
            if time > resume.last_ms {
                // Past everything stored: the rest is new.
                self.resume = None;
            } else {
                // Within the last stored second: skip exactly what was
                // stored, piece by piece as the store keeps it.
                for piece in stored_pieces(&text) {
                    if !resume.take(time, piece) {
                        Self::append(&mut self.writer, &mut self.stored, &mut self.error, time, piece);
                        self.unflushed = true;
                    }
                }
                return;
            }
        }
        Self::append(&mut self.writer, &mut self.stored, &mut self.error, time, &text);
        self.unflushed = true;
    }

    fn append(writer: &mut LogWriter, stored: &mut u64, error: &mut Option<std::io::Error>, time: i64, text: &str) {
        match writer.append(Stream::Stdout, time, text.as_bytes()) {
            Ok(()) => *stored += 1,
            Err(e) => *error = Some(e),
        }
    }

    fn flush(&mut self, pod: &str) -> Result<(), CopyError> {
        self.check(pod)?;
        self.writer.flush().map_err(|source| CopyError::Write { pod: pod.into(), source })?;
        self.unflushed = false;
        Ok(())
    }

    fn check(&mut self, pod: &str) -> Result<(), CopyError> {
        match self.error.take() {
            Some(source) => Err(CopyError::Write { pod: pod.into(), source }),
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

    const SECOND: i64 = 1_768_039_202_000; // 2026-01-10T10:00:02Z

    fn kubelet_line(ms: i64, nanos: u32, text: &str) -> Vec<u8> {
        let time = Timestamp::from_millisecond(ms).unwrap();
        let whole = time.strftime("%Y-%m-%dT%H:%M:%S");
        let fraction = (ms.rem_euclid(1000) as u32) * 1_000_000 + nanos;
        format!("{whole}.{fraction:09}Z {text}").into_bytes()
    }

    fn sink(store: &LogStore) -> Sink {
        let (log, idx) = store.paths("job", 0, 0);
        Sink {
            writer: LogWriter::create(&log, &idx).unwrap(),
            last_time: 0,
            resume: Resume::read(store, "job", 0, 0).unwrap(),
            stored: 0,
            unflushed: false,
            error: None,
        }
    }

    fn texts(store: &LogStore) -> Vec<(i64, String)> {
        let mut reader = store.open("job", 0, 0).unwrap().unwrap();
        reader.lines(1, u64::MAX).unwrap().into_iter().map(|l| (l.time, l.text)).collect()
    }

    #[test]
    fn a_resume_counts_every_stored_line_of_the_last_second_across_pages() {
        let dir = tempfile::tempdir().unwrap();
        let store = LogStore::new(dir.path());
        assert!(Resume::read(&store, "job", 0, 0).unwrap().is_none(), "nothing stored");
        let (log, idx) = store.paths("job", 0, 0);
        let mut writer = LogWriter::create(&log, &idx).unwrap();
        for i in 0..10 {
            writer.append(Stream::Stdout, SECOND - 1000 + i, b"earlier").unwrap();
        }
        // More lines in the last second than one page of the look back,
        // all in its last millisecond and the same.
        for _ in 0..(LOOK_BACK_PAGE + 100) {
            writer.append(Stream::Stdout, SECOND + 999, b"progress").unwrap();
        }
        drop(writer);
        let resume = Resume::read(&store, "job", 0, 0).unwrap().unwrap();
        assert_eq!((resume.from_ms, resume.last_ms), (SECOND, SECOND + 999));
        assert_eq!(resume.since_time().unwrap().to_string(), "2026-01-10T10:00:02Z");
        assert_eq!(resume.stored.len(), 1);
        assert_eq!(resume.stored[&(SECOND + 999, "progress".to_string())], LOOK_BACK_PAGE as u32 + 100);
    }

    #[test]
    fn a_resumed_copy_skips_exactly_what_was_stored() {
        let long = "y".repeat(jobdeck_store::logs::MAX_LINE + 5);
        // What the API sends, in the order of the container's log: a line
        // before the second, three equal lines in one millisecond, a line
        // the store keeps in two pieces, a line in the same millisecond as
        // that one, and two equal lines in the next second.
        let sent: Vec<Vec<u8>> = vec![
            kubelet_line(SECOND - 500, 0, "before"),
            kubelet_line(SECOND + 100, 1, "same"),
            kubelet_line(SECOND + 100, 2, "same"),
            kubelet_line(SECOND + 100, 3, "same"),
            kubelet_line(SECOND + 200, 0, &long),
            kubelet_line(SECOND + 200, 1, "new in the same millisecond"),
            kubelet_line(SECOND + 1500, 0, "later"),
            kubelet_line(SECOND + 1500, 0, "later"),
        ];
        let expected: Vec<(i64, String)> = vec![
            (SECOND - 500, "before".into()),
            (SECOND + 100, "same".into()),
            (SECOND + 100, "same".into()),
            (SECOND + 100, "same".into()),
            (SECOND + 200, long[..jobdeck_store::logs::MAX_LINE].to_string()),
            (SECOND + 200, "yyyyy".into()),
            (SECOND + 200, "new in the same millisecond".into()),
            (SECOND + 1500, "later".into()),
            (SECOND + 1500, "later".into()),
        ];
        // The earlier copy was cut after each line in turn; the resumed one
        // gets everything from the second of the last stored line on, as
        // the API sends it for `sinceTime`.
        for cut in 1..sent.len() {
            let dir = tempfile::tempdir().unwrap();
            let store = LogStore::new(dir.path());
            let mut first = sink(&store);
            for line in &sent[..cut] {
                first.store(line);
            }
            first.flush("pod").unwrap();
            drop(first);
            let mut resumed = sink(&store);
            let from = resumed.resume.as_ref().unwrap().from_ms;
            for line in sent.iter().filter(|l| split_timestamp(l, 0).0 >= from) {
                resumed.store(line);
            }
            resumed.flush("pod").unwrap();
            assert_eq!(texts(&store), expected, "cut after {cut} lines");
        }
    }
}
