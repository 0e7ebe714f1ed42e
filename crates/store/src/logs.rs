//! The log store: one file of timestamped lines per replica attempt, plus a
//! line-offset index so any line range is one seek away.
//!
//! Layout under the data directory:
//!
//! ```text
//! logs/<job id>/<completion index>-<attempt>.log   lines "<unix ms> <o|e> <text>\n"
//! logs/<job id>/<completion index>-<attempt>.idx   one little-endian u64 per line:
//!                                                  the byte offset where it starts
//! ```
//!
//! `o` marks standard output and `e` standard error. A line is stored once
//! its newline arrives (or when the stream ends); bytes that are not UTF-8
//! are replaced, and a line longer than [`MAX_LINE`] bytes is split so one
//! runaway line cannot exhaust memory. The writer (the replica supervisor)
//! flushes the `.log` before the `.idx`, so every indexed line is complete;
//! readers trust the index and never see half a line.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The longest line stored in one piece.
pub const MAX_LINE: usize = 64 * 1024;

/// Which output a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    fn tag(self) -> u8 {
        match self {
            Stream::Stdout => b'o',
            Stream::Stderr => b'e',
        }
    }
}

/// One stored line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// 1-based.
    pub number: u64,
    /// Unix milliseconds when the line was read.
    pub time: i64,
    pub stream: Stream,
    pub text: String,
}

/// Where the logs of every job live.
#[derive(Debug, Clone)]
pub struct LogStore {
    root: PathBuf,
}

impl LogStore {
    pub fn new(data_dir: &Path) -> Self {
        Self { root: data_dir.join("logs") }
    }

    /// The directory that holds every job's log directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn job_dir(&self, job_id: &str) -> PathBuf {
        self.root.join(job_id)
    }

    /// The `.log` and `.idx` paths of an attempt.
    pub fn paths(&self, job_id: &str, completion_index: i64, attempt: i64) -> (PathBuf, PathBuf) {
        let dir = self.job_dir(job_id);
        (dir.join(format!("{completion_index}-{attempt}.log")), dir.join(format!("{completion_index}-{attempt}.idx")))
    }

    /// Where the failure analysis keeps what it found in an ended attempt's
    /// log, so a large log is scanned once.
    pub fn scan_cache_path(&self, job_id: &str, completion_index: i64, attempt: i64) -> PathBuf {
        self.job_dir(job_id).join(format!("{completion_index}-{attempt}.scan.json"))
    }

    /// Opens an attempt's log for reading; `None` when nothing was written.
    pub fn open(&self, job_id: &str, completion_index: i64, attempt: i64) -> std::io::Result<Option<LogReader>> {
        let (log, idx) = self.paths(job_id, completion_index, attempt);
        match File::open(&log) {
            Ok(file) => Ok(Some(LogReader { log: file, idx_path: idx })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Deletes every log of a job.
    pub fn remove_job(&self, job_id: &str) -> std::io::Result<()> {
        match std::fs::remove_dir_all(self.job_dir(job_id)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }
}

/// The stored lines [`LogWriter::append`] makes of one line's text (already
/// made UTF-8): pieces of at most [`MAX_LINE`] bytes, cut on character
/// boundaries; an empty line is one empty piece. Whoever must recognise
/// lines it stored earlier (the Kubernetes log copy, when it resumes)
/// compares these pieces with what the reader returns.
pub fn stored_pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let current = rest?;
        let cut = if current.len() <= MAX_LINE {
            current.len()
        } else {
            let mut cut = MAX_LINE;
            while !current.is_char_boundary(cut) {
                cut -= 1;
            }
            cut
        };
        let (piece, tail) = current.split_at(cut);
        rest = (!tail.is_empty()).then_some(tail);
        Some(piece)
    })
}

/// Appends lines to one attempt's log; used by the replica supervisor.
pub struct LogWriter {
    log: BufWriter<File>,
    idx: File,
    /// Index entries of lines appended since the last flush. They reach the
    /// `.idx` file only after the log bytes they point to are written, so a
    /// reader never sees an entry whose line is not complete (a buffered
    /// index writer could spill entries early when its buffer fills).
    pending_idx: Vec<u8>,
    offset: u64,
    /// Bytes of log past which lines are left out (the job's log cap, its
    /// share for this attempt); `None`: no cap.
    cap: Option<u64>,
    /// Whether the line saying the cap was reached is written (a log
    /// reopened past its cap has it already).
    capped: bool,
}

/// The line a capped log ends with: the last one kept.
pub fn cap_marker(cap: u64) -> String {
    format!(
        "jobdeck: this log reached its share of the job's log cap ({cap} bytes, [logs] job_log_cap); the lines \
         after this one are not kept"
    )
}

impl LogWriter {
    /// Opens (creating) the files; appending to an existing log continues it.
    pub fn create(log_path: &Path, idx_path: &Path) -> std::io::Result<LogWriter> {
        if let Some(dir) = log_path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let log = OpenOptions::new().create(true).append(true).open(log_path)?;
        let idx = OpenOptions::new().create(true).append(true).open(idx_path)?;
        let offset = log.metadata()?.len();
        Ok(LogWriter {
            log: BufWriter::with_capacity(64 * 1024, log),
            idx,
            pending_idx: Vec::with_capacity(8 * 1024),
            offset,
            cap: None,
            capped: false,
        })
    }

    /// Keeps at most `cap` bytes of log: the line that crosses it is
    /// followed by [`cap_marker`], and later lines are left out.
    pub fn with_cap(mut self, cap: Option<u64>) -> Self {
        self.cap = cap;
        self.capped = cap.is_some_and(|cap| self.offset >= cap);
        self
    }

    /// Whether lines are being left out past the cap.
    pub fn is_capped(&self) -> bool {
        self.capped
    }

    /// Appends one line (without its newline), splitting it when it is longer
    /// than [`MAX_LINE`].
    pub fn append(&mut self, stream: Stream, time: i64, text: &[u8]) -> std::io::Result<()> {
        if let Some(cap) = self.cap.filter(|cap| self.offset >= *cap) {
            if !self.capped {
                self.capped = true;
                self.append_piece(Stream::Stderr, time, &cap_marker(cap))?;
            }
            return Ok(());
        }
        let text = String::from_utf8_lossy(text);
        for piece in stored_pieces(&text) {
            self.append_piece(stream, time, piece)?;
        }
        Ok(())
    }

    fn append_piece(&mut self, stream: Stream, time: i64, piece: &str) -> std::io::Result<()> {
        let prefix = format!("{time} {} ", stream.tag() as char);
        self.pending_idx.extend_from_slice(&self.offset.to_le_bytes());
        self.log.write_all(prefix.as_bytes())?;
        // A lone '\n' cannot be inside `piece` (lines are split on it), but a
        // caller may still pass one; keep the one-line-per-entry invariant.
        let clean = piece.replace('\n', " ");
        self.log.write_all(clean.as_bytes())?;
        self.log.write_all(b"\n")?;
        self.offset += (prefix.len() + clean.len() + 1) as u64;
        Ok(())
    }

    /// Makes every appended line visible to readers: the log first, then the
    /// index that points into it.
    pub fn flush(&mut self) -> std::io::Result<()> {
        if !self.pending_idx.is_empty() {
            self.log.flush()?;
            self.idx.write_all(&self.pending_idx)?;
            self.pending_idx.clear();
        }
        Ok(())
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Reads one attempt's log.
pub struct LogReader {
    log: File,
    idx_path: PathBuf,
}

impl LogReader {
    /// How many complete lines are stored.
    pub fn line_count(&self) -> std::io::Result<u64> {
        match std::fs::metadata(&self.idx_path) {
            Ok(m) => Ok(m.len() / 8),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(e),
        }
    }

    /// Lines `from..=to` (1-based, clamped to what exists).
    pub fn lines(&mut self, from: u64, to: u64) -> std::io::Result<Vec<LogLine>> {
        let count = self.line_count()?;
        let from = from.max(1);
        let to = to.min(count);
        if from > to {
            return Ok(Vec::new());
        }
        let mut idx = File::open(&self.idx_path)?;
        idx.seek(SeekFrom::Start((from - 1) * 8))?;
        let mut first = [0u8; 8];
        idx.read_exact(&mut first)?;
        let start = u64::from_le_bytes(first);
        let end = if to < count {
            idx.seek(SeekFrom::Start(to * 8))?;
            let mut next = [0u8; 8];
            idx.read_exact(&mut next)?;
            u64::from_le_bytes(next)
        } else {
            self.log.metadata()?.len()
        };
        self.log.seek(SeekFrom::Start(start))?;
        let mut bytes = vec![0u8; (end - start) as usize];
        self.log.read_exact(&mut bytes)?;
        let text = String::from_utf8_lossy(&bytes);
        Ok(text
            .split_terminator('\n')
            .take((to - from + 1) as usize)
            .enumerate()
            .filter_map(|(i, raw)| parse_line(from + i as u64, raw))
            .collect())
    }

    /// The size of the `.log` file in bytes.
    pub fn byte_len(&self) -> std::io::Result<u64> {
        Ok(self.log.metadata()?.len())
    }

    /// The byte offset where line `number` (1-based, indexed) starts.
    fn offset_of(&self, number: u64) -> std::io::Result<u64> {
        let mut idx = File::open(&self.idx_path)?;
        idx.seek(SeekFrom::Start((number - 1) * 8))?;
        let mut entry = [0u8; 8];
        idx.read_exact(&mut entry)?;
        Ok(u64::from_le_bytes(entry))
    }

    /// Calls `visit(number, time, stream, text)` for every indexed line from
    /// `from` on, in order, until it answers `Break`. Reads the file front to
    /// back in large blocks, so visiting a million lines is one sequential
    /// read. `text` is the stored line (valid UTF-8, see [`LogWriter`]).
    /// Returns how many lines the log held when the visit began.
    pub fn visit(
        &mut self,
        from: u64,
        mut visit: impl FnMut(u64, i64, Stream, &[u8]) -> std::ops::ControlFlow<()>,
    ) -> std::io::Result<u64> {
        const BLOCK: usize = 1 << 20;
        let count = self.line_count()?;
        let from = from.max(1);
        if from > count {
            return Ok(count);
        }
        self.log.seek(SeekFrom::Start(self.offset_of(from)?))?;
        let mut buffer: Vec<u8> = Vec::with_capacity(2 * BLOCK);
        let mut number = from;
        loop {
            let filled = buffer.len();
            buffer.resize(filled + BLOCK, 0);
            let n = self.log.read(&mut buffer[filled..])?;
            buffer.truncate(filled + n);
            if n == 0 {
                return Ok(count);
            }
            let mut start = 0;
            for newline in memchr::memchr_iter(b'\n', &buffer[filled..]) {
                let end = filled + newline;
                if let Some((time, stream, text)) = split_stored(&buffer[start..end]) {
                    if visit(number, time, stream, text).is_break() {
                        return Ok(count);
                    }
                }
                start = end + 1;
                number += 1;
                if number > count {
                    return Ok(count);
                }
            }
            buffer.drain(..start);
        }
    }

    /// The numbers of the lines whose text `pattern` matches, at most
    /// `limit` of them; the flag says whether more lines matched.
    pub fn search(&mut self, pattern: &regex::bytes::Regex, limit: usize) -> std::io::Result<(u64, Vec<u64>, bool)> {
        let mut matches = Vec::new();
        let mut truncated = false;
        let total = self.visit(1, |number, _, _, text| {
            if pattern.is_match(text) {
                if matches.len() == limit {
                    truncated = true;
                    return std::ops::ControlFlow::Break(());
                }
                matches.push(number);
            }
            std::ops::ControlFlow::Continue(())
        })?;
        Ok((total, matches, truncated))
    }

    /// Reads stored bytes from `offset` on, at most `max` of them, cut after
    /// the last complete line. Returns the lines and the offset to continue
    /// from; used to stream a log (and to follow it as it grows).
    pub fn read_from(&mut self, offset: u64, max: usize) -> std::io::Result<(Vec<(i64, Stream, String)>, u64)> {
        let len = self.log.metadata()?.len();
        if offset >= len {
            return Ok((Vec::new(), offset));
        }
        let want = ((len - offset) as usize).min(max.max(MAX_LINE + 64));
        self.log.seek(SeekFrom::Start(offset))?;
        let mut bytes = vec![0u8; want];
        self.log.read_exact(&mut bytes)?;
        let Some(last_newline) = bytes.iter().rposition(|b| *b == b'\n') else {
            return Ok((Vec::new(), offset));
        };
        bytes.truncate(last_newline + 1);
        let text = String::from_utf8_lossy(&bytes);
        let lines = text
            .split_terminator('\n')
            .filter_map(|raw| parse_line(0, raw).map(|l| (l.time, l.stream, l.text)))
            .collect();
        Ok((lines, offset + bytes.len() as u64))
    }
}

/// Splits a stored line `<unix ms> <o|e> <text>` into its parts.
fn split_stored(raw: &[u8]) -> Option<(i64, Stream, &[u8])> {
    let space = memchr::memchr(b' ', raw)?;
    let time = std::str::from_utf8(&raw[..space]).ok()?.parse().ok()?;
    let stream = match raw.get(space + 1)? {
        b'o' => Stream::Stdout,
        b'e' => Stream::Stderr,
        _ => return None,
    };
    Some((time, stream, raw.get(space + 3..).unwrap_or(b"")))
}

fn parse_line(number: u64, raw: &str) -> Option<LogLine> {
    let (time, rest) = raw.split_once(' ')?;
    let time = time.parse().ok()?;
    let (stream, text) = match rest.as_bytes().first()? {
        b'o' => (Stream::Stdout, rest.get(2..).unwrap_or("")),
        b'e' => (Stream::Stderr, rest.get(2..).unwrap_or("")),
        _ => return None,
    };
    Some(LogLine { number, time, stream, text: text.to_string() })
}

/// Splits a byte stream into lines, keeping an unfinished line until its
/// newline (or the end) arrives. Used by whoever feeds a [`LogWriter`].
#[derive(Default)]
pub struct LineSplitter {
    partial: Vec<u8>,
}

impl LineSplitter {
    /// Feeds bytes; calls `line` for every complete line (without `\n`).
    pub fn feed(&mut self, bytes: &[u8], mut line: impl FnMut(&[u8])) {
        let mut rest = bytes;
        while let Some(pos) = rest.iter().position(|b| *b == b'\n') {
            if self.partial.is_empty() {
                line(&rest[..pos]);
            } else {
                self.partial.extend_from_slice(&rest[..pos]);
                line(&self.partial);
                self.partial.clear();
            }
            rest = &rest[pos + 1..];
        }
        self.partial.extend_from_slice(rest);
        if self.partial.len() > MAX_LINE {
            line(&self.partial);
            self.partial.clear();
        }
    }

    /// The unfinished last line, if any.
    pub fn finish(&mut self, mut line: impl FnMut(&[u8])) {
        if !self.partial.is_empty() {
            line(&self.partial);
            self.partial.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, LogStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = LogStore::new(dir.path());
        (dir, store)
    }

    fn write(store: &LogStore, lines: &[(Stream, &str)]) {
        let (log, idx) = store.paths("job-1", 0, 0);
        let mut writer = LogWriter::create(&log, &idx).unwrap();
        for (i, (stream, text)) in lines.iter().enumerate() {
            writer.append(*stream, 1000 + i as i64, text.as_bytes()).unwrap();
        }
        writer.flush().unwrap();
    }

    #[test]
    fn lines_are_read_back_by_number_with_time_and_stream() {
        let (_dir, store) = store();
        write(
            &store,
            &[
                (Stream::Stdout, "first"),
                (Stream::Stderr, "second \u{1b}[31mred"),
                (Stream::Stdout, ""),
                (Stream::Stdout, "<b>4</b>"),
            ],
        );
        let mut reader = store.open("job-1", 0, 0).unwrap().unwrap();
        assert_eq!(reader.line_count().unwrap(), 4);
        let lines = reader.lines(2, 4).unwrap();
        assert_eq!(lines.len(), 3);
        assert_eq!(
            lines[0],
            LogLine { number: 2, time: 1001, stream: Stream::Stderr, text: "second \u{1b}[31mred".into() }
        );
        assert_eq!(lines[1].text, "");
        assert_eq!(lines[2].text, "<b>4</b>");
        assert_eq!(reader.lines(4, 100).unwrap().len(), 1);
        assert!(reader.lines(5, 9).unwrap().is_empty());
        assert_eq!(reader.lines(0, 1).unwrap()[0].text, "first");
    }

    #[test]
    fn a_reopened_writer_continues_the_same_log() {
        let (_dir, store) = store();
        write(&store, &[(Stream::Stdout, "a")]);
        write(&store, &[(Stream::Stdout, "b")]);
        let mut reader = store.open("job-1", 0, 0).unwrap().unwrap();
        let texts: Vec<_> = reader.lines(1, 2).unwrap().into_iter().map(|l| l.text).collect();
        assert_eq!(texts, ["a", "b"]);
    }

    #[test]
    fn streaming_reads_stop_at_the_last_complete_line() {
        let (_dir, store) = store();
        write(&store, &[(Stream::Stdout, "one"), (Stream::Stdout, "two")]);
        let (log, _) = store.paths("job-1", 0, 0);
        // Half a line, as a crash in the middle of a write would leave.
        std::fs::OpenOptions::new().append(true).open(&log).unwrap().write_all(b"1003 o thr").unwrap();
        let mut reader = store.open("job-1", 0, 0).unwrap().unwrap();
        let (lines, next) = reader.read_from(0, 1 << 20).unwrap();
        assert_eq!(lines.iter().map(|l| l.2.as_str()).collect::<Vec<_>>(), ["one", "two"]);
        let (more, again) = reader.read_from(next, 1 << 20).unwrap();
        assert!(more.is_empty());
        assert_eq!(again, next);
    }

    #[test]
    fn long_lines_are_split_and_invalid_utf8_is_replaced() {
        let (_dir, store) = store();
        let long = "x".repeat(MAX_LINE + 10);
        let (log, idx) = store.paths("job-1", 0, 0);
        let mut writer = LogWriter::create(&log, &idx).unwrap();
        writer.append(Stream::Stdout, 1, long.as_bytes()).unwrap();
        writer.append(Stream::Stdout, 2, b"bad \xff byte").unwrap();
        writer.flush().unwrap();
        let mut reader = store.open("job-1", 0, 0).unwrap().unwrap();
        assert_eq!(reader.line_count().unwrap(), 3);
        let lines = reader.lines(1, 3).unwrap();
        assert_eq!(lines[0].text.len(), MAX_LINE);
        assert_eq!(lines[1].text.len(), 10);
        assert_eq!(lines[2].text, "bad \u{fffd} byte");
    }

    #[test]
    fn the_splitter_keeps_partial_lines_until_their_newline() {
        let mut splitter = LineSplitter::default();
        let mut out: Vec<String> = Vec::new();
        splitter.feed(b"a\nb", |l| out.push(String::from_utf8_lossy(l).into()));
        splitter.feed(b"c\n\nd", |l| out.push(String::from_utf8_lossy(l).into()));
        splitter.finish(|l| out.push(String::from_utf8_lossy(l).into()));
        assert_eq!(out, ["a", "bc", "", "d"]);
    }

    #[test]
    fn visiting_reads_every_indexed_line_across_blocks() {
        let (_dir, store) = store();
        let (log, idx) = store.paths("job-1", 0, 0);
        let mut writer = LogWriter::create(&log, &idx).unwrap();
        // Enough lines to cross several 1 MiB read blocks.
        for i in 1..=40_000u64 {
            let stream = if i % 7 == 0 { Stream::Stderr } else { Stream::Stdout };
            writer.append(stream, i as i64, format!("line {i} {}", "x".repeat((i % 90) as usize)).as_bytes()).unwrap();
        }
        writer.flush().unwrap();
        drop(writer);
        // An unindexed half line at the end, as a writer caught mid-write leaves.
        std::fs::OpenOptions::new().append(true).open(&log).unwrap().write_all(b"99 o partial").unwrap();
        let mut reader = store.open("job-1", 0, 0).unwrap().unwrap();
        let mut seen = 0u64;
        let total = reader
            .visit(5, |number, time, stream, text| {
                assert_eq!(time, number as i64);
                assert_eq!(stream == Stream::Stderr, number % 7 == 0);
                assert!(text.starts_with(format!("line {number} ").as_bytes()));
                seen += 1;
                std::ops::ControlFlow::Continue(())
            })
            .unwrap();
        assert_eq!((total, seen), (40_000, 39_996));
        let mut first = Vec::new();
        reader
            .visit(1, |number, _, _, _| {
                first.push(number);
                if number == 3 {
                    std::ops::ControlFlow::Break(())
                } else {
                    std::ops::ControlFlow::Continue(())
                }
            })
            .unwrap();
        assert_eq!(first, [1, 2, 3]);
        assert_eq!(reader.visit(40_001, |_, _, _, _| panic!("no line is past the end")).unwrap(), 40_000);
    }

    #[test]
    fn searching_finds_line_numbers_and_stops_at_the_limit() {
        let (_dir, store) = store();
        write(
            &store,
            &[
                (Stream::Stdout, "alpha"),
                (Stream::Stdout, "Beta"),
                (Stream::Stderr, "beta gamma"),
                (Stream::Stdout, "1003 o beta"),
            ],
        );
        let mut reader = store.open("job-1", 0, 0).unwrap().unwrap();
        let exact = regex::bytes::Regex::new("beta").unwrap();
        assert_eq!(reader.search(&exact, 10).unwrap(), (4, vec![3, 4], false));
        let any_case = regex::bytes::RegexBuilder::new("beta").case_insensitive(true).build().unwrap();
        assert_eq!(reader.search(&any_case, 2).unwrap(), (4, vec![2, 3], true));
        // Patterns see the text only, not the stored time and stream.
        let anchored = regex::bytes::Regex::new("^b").unwrap();
        assert_eq!(reader.search(&anchored, 10).unwrap().1, vec![3]);
    }

    #[test]
    fn the_index_never_points_past_the_log() {
        // Many short lines between flushes: the index must not get ahead of
        // the log even when more entries pile up than a buffer holds.
        let (_dir, store) = store();
        let (log, idx) = store.paths("job-1", 0, 0);
        let mut writer = LogWriter::create(&log, &idx).unwrap();
        for i in 0..5_000 {
            writer.append(Stream::Stdout, i, b"y").unwrap();
            let mut reader = store.open("job-1", 0, 0).unwrap().unwrap();
            let count = reader.line_count().unwrap();
            if count > 0 {
                assert_eq!(reader.lines(count, count).unwrap().len(), 1);
            }
        }
        writer.flush().unwrap();
        assert_eq!(store.open("job-1", 0, 0).unwrap().unwrap().line_count().unwrap(), 5_000);
    }

    #[test]
    fn a_capped_log_keeps_the_line_that_crosses_its_cap_then_says_so_once_and_keeps_no_more() {
        let (_dir, store) = store();
        let (log, idx) = store.paths("job-1", 0, 0);
        // Each stored line: "1 o " and ten characters and a newline, 15 bytes.
        let mut writer = LogWriter::create(&log, &idx).unwrap().with_cap(Some(40));
        for i in 0..10 {
            writer.append(Stream::Stdout, 1, format!("line {i:05}").as_bytes()).unwrap();
        }
        assert!(writer.is_capped());
        drop(writer);
        let mut reader = store.open("job-1", 0, 0).unwrap().unwrap();
        let texts: Vec<String> = reader.lines(1, 100).unwrap().into_iter().map(|l| l.text).collect();
        assert_eq!(texts, ["line 00000", "line 00001", "line 00002", &cap_marker(40)]);
        // Reopened past its cap (a resumed copy): no second marker.
        let mut again = LogWriter::create(&log, &idx).unwrap().with_cap(Some(40));
        again.append(Stream::Stdout, 2, b"later").unwrap();
        drop(again);
        assert_eq!(store.open("job-1", 0, 0).unwrap().unwrap().line_count().unwrap(), 4);
    }

    #[test]
    fn a_missing_log_opens_as_none_and_removal_is_idempotent() {
        let (_dir, store) = store();
        assert!(store.open("nope", 0, 0).unwrap().is_none());
        store.remove_job("nope").unwrap();
    }
}
