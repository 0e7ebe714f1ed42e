//! The log store: the lines of each replica attempt, with their times and
//! streams, readable by line number, by time, in order and by search.
//!
//! A stored line is `<unix ms> <o|e> <text>\n` (`o` marks standard output,
//! `e` standard error). A line is stored once its newline arrives (or when
//! the stream ends); bytes that are not UTF-8 are replaced, and a line
//! longer than [`MAX_LINE`] bytes is split so one runaway line cannot
//! exhaust memory.
//!
//! Two formats live side by side under `logs/<job id>/`, named by
//! `<completion index>-<attempt>`:
//!
//! - **blocks** (`blocks.rs`, every log written since the format came): the
//!   lines in zstd-compressed blocks of about 1 MiB (`.zst`) with one
//!   fixed-size record per block (`.zidx`: its first line, place, size and
//!   times), and the block being written as plain lines (`.tail`), so a line
//!   is readable as soon as it is flushed;
//! - **plain** (`plain.rs`, logs written before): the lines as they are
//!   (`.log`) and one `u64` offset per line (`.idx`).
//!
//! [`LogStore::open`] reads either; a writer continuing a plain log keeps
//! it plain, so an attempt's log is always one format. Both writers flush
//! lines before anything that points at them, so readers never see half a
//! line.

mod blocks;
mod line_scan;
mod plain;
mod search;
#[cfg(test)]
mod tests;

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

/// The longest line stored in one piece.
pub const MAX_LINE: usize = 64 * 1024;

/// The file in a job's log directory that says its logs are cut.
const CUT_FILE: &str = "cut";

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

    /// The paths a writer of an attempt's log is created with
    /// ([`LogWriter::create`]): the plain format's `.log` and `.idx`, from
    /// which the block format's files are named too (a replica's
    /// supervisor gets these two in its spec, as it did before blocks).
    pub fn paths(&self, job_id: &str, completion_index: i64, attempt: i64) -> (PathBuf, PathBuf) {
        let dir = self.job_dir(job_id);
        (dir.join(format!("{completion_index}-{attempt}.log")), dir.join(format!("{completion_index}-{attempt}.idx")))
    }

    /// Where the failure analysis keeps what it found in an ended attempt's
    /// log, so a large log is scanned once.
    pub fn scan_cache_path(&self, job_id: &str, completion_index: i64, attempt: i64) -> PathBuf {
        self.job_dir(job_id).join(format!("{completion_index}-{attempt}.scan.json"))
    }

    /// Opens an attempt's log for reading, in whichever format it was
    /// written; `None` when nothing was.
    pub fn open(&self, job_id: &str, completion_index: i64, attempt: i64) -> std::io::Result<Option<LogReader>> {
        let (log, idx) = self.paths(job_id, completion_index, attempt);
        if let Some(reader) = blocks::BlockReader::open(&blocks::BlockPaths::beside(&log))? {
            return Ok(Some(LogReader::Blocks(Box::new(reader))));
        }
        Ok(plain::PlainReader::open(&log, &idx)?.map(LogReader::Plain))
    }

    /// The bytes of the stored lines of every log of a job, uncompressed:
    /// what the job log cap counts (the disk budget counts the files).
    pub fn stored_bytes(&self, job_id: &str) -> u64 {
        let Ok(entries) = std::fs::read_dir(self.job_dir(job_id)) else { return 0 };
        let mut attempts: Vec<(i64, i64)> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                let stem = name.strip_suffix(".tail").or_else(|| name.strip_suffix(".log"))?;
                let (index, attempt) = stem.split_once('-')?;
                Some((index.parse().ok()?, attempt.parse().ok()?))
            })
            .collect();
        attempts.sort_unstable();
        attempts.dedup();
        attempts
            .into_iter()
            .filter_map(|(index, attempt)| self.open(job_id, index, attempt).ok().flatten()?.byte_len().ok())
            .sum()
    }

    /// Where the scheduler says a job's logs are cut ([`LogStore::cut`]).
    fn cut_path(&self, job_id: &str) -> PathBuf {
        self.job_dir(job_id).join(CUT_FILE)
    }

    /// Cuts a running job's logs: each of its writers, at its next flush,
    /// ends its log with `sentence` and keeps no more
    /// lines, until [`LogStore::uncut`]. The disk budget's last resort,
    /// when running jobs' logs alone fill it.
    pub fn cut(&self, job_id: &str, sentence: &str) -> std::io::Result<()> {
        let path = self.cut_path(job_id);
        std::fs::create_dir_all(self.job_dir(job_id))?;
        let aside = path.with_extension("next");
        std::fs::write(&aside, sentence)?;
        std::fs::rename(aside, path)
    }

    /// Whether a job's logs are cut.
    pub fn is_cut(&self, job_id: &str) -> bool {
        self.cut_path(job_id).exists()
    }

    /// Lets a job's next run keep its logs again.
    pub fn uncut(&self, job_id: &str) -> std::io::Result<()> {
        match std::fs::remove_file(self.cut_path(job_id)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
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

/// Appends `<time> <o|e> <piece>\n` to `out`: one stored line, its time
/// given as its digits. A lone `\n` cannot be inside a piece (lines are
/// split on it), but a caller may still pass one; it becomes a space,
/// keeping one line per entry.
fn encode_line(out: &mut Vec<u8>, time_digits: &[u8], stream: Stream, piece: &str) {
    out.extend_from_slice(time_digits);
    out.extend_from_slice(&[b' ', stream.tag(), b' ']);
    let start = out.len();
    out.extend_from_slice(piece.as_bytes());
    for newline in memchr::memchr_iter(b'\n', piece.as_bytes()) {
        out[start + newline] = b' ';
    }
    out.push(b'\n');
}

/// The digits of the last time a writer wrote: the lines of one pipe read
/// share their time, so it is formatted once for all of them.
struct TimeDigits {
    time: Option<i64>,
    /// Room for any `i64`, its sign included.
    text: [u8; 20],
    len: usize,
}

impl TimeDigits {
    fn new() -> Self {
        TimeDigits { time: None, text: [0; 20], len: 0 }
    }

    fn of(&mut self, time: i64) -> &[u8] {
        if self.time != Some(time) {
            let mut buffer = itoa::Buffer::new();
            let digits = buffer.format(time).as_bytes();
            self.text[..digits.len()].copy_from_slice(digits);
            self.len = digits.len();
            self.time = Some(time);
        }
        &self.text[..self.len]
    }
}

/// Splits a stored line `<unix ms> <o|e> <text>` (without its newline) into
/// its parts.
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

/// Calls `visit` for each stored line of `bytes` (whole lines, each ending
/// in `\n`), numbering them from `first`; stops at line `last` or when
/// `visit` breaks, and says which.
fn visit_stored(
    bytes: &[u8],
    first: u64,
    last: u64,
    visit: &mut impl FnMut(u64, i64, Stream, &[u8]) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let mut start = 0;
    for (number, newline) in (first..).zip(memchr::memchr_iter(b'\n', bytes)) {
        if number > last {
            return ControlFlow::Break(());
        }
        if let Some((time, stream, text)) = split_stored(&bytes[start..newline]) {
            visit(number, time, stream, text)?;
        }
        start = newline + 1;
    }
    ControlFlow::Continue(())
}

/// The line a capped log ends with: the last one kept.
pub fn cap_marker(cap: u64) -> String {
    format!(
        "jobdeck: this log reached its share of the job's log cap ({cap} bytes, [logs] job_log_cap); the lines \
         after this one are not kept"
    )
}

/// Appends lines to one attempt's log; used by the replica supervisor, the
/// Slurm output copy and the Kubernetes log copy.
pub struct LogWriter {
    format: WriterFormat,
    /// One stored line, encoded before it is handed to the plain format
    /// (the block format's lines are encoded straight into their block).
    line: Vec<u8>,
    time_digits: TimeDigits,
    /// Bytes of stored lines so far (uncompressed).
    stored: u64,
    /// Bytes of log past which lines are left out (the job's log cap, its
    /// share for this attempt); `None`: no cap.
    cap: Option<u64>,
    /// Whether lines are left out: the line saying why is written (a log
    /// reopened past its cap has it already).
    capped: bool,
    /// Where the scheduler says this job's logs are cut.
    cut_path: PathBuf,
}

enum WriterFormat {
    Blocks(Box<blocks::BlockWriter>),
    Plain(plain::PlainWriter),
}

impl LogWriter {
    /// Opens (creating) an attempt's log from its [`LogStore::paths`];
    /// appending to an existing log continues it in its format.
    pub fn create(log_path: &Path, idx_path: &Path) -> std::io::Result<LogWriter> {
        if let Some(dir) = log_path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let block_paths = blocks::BlockPaths::beside(log_path);
        let format = if !block_paths.exists() && log_path.exists() {
            WriterFormat::Plain(plain::PlainWriter::create(log_path, idx_path)?)
        } else {
            WriterFormat::Blocks(Box::new(blocks::BlockWriter::create(block_paths)?))
        };
        let stored = match &format {
            WriterFormat::Blocks(writer) => writer.stored_bytes(),
            WriterFormat::Plain(writer) => writer.stored_bytes(),
        };
        Ok(LogWriter {
            format,
            line: Vec::with_capacity(256),
            time_digits: TimeDigits::new(),
            stored,
            cap: None,
            capped: false,
            cut_path: log_path.with_file_name(CUT_FILE),
        })
    }

    /// Keeps at most `cap` bytes of log: the line that crosses it is
    /// followed by [`cap_marker`], and later lines are left out.
    pub fn with_cap(mut self, cap: Option<u64>) -> Self {
        self.cap = cap;
        self.capped = cap.is_some_and(|cap| self.stored >= cap);
        self
    }

    /// Whether lines are being left out, past the cap or cut.
    pub fn is_capped(&self) -> bool {
        self.capped
    }

    /// Appends one line (without its newline), splitting it when it is longer
    /// than [`MAX_LINE`].
    pub fn append(&mut self, stream: Stream, time: i64, text: &[u8]) -> std::io::Result<()> {
        if self.capped {
            return Ok(());
        }
        if let Some(cap) = self.cap.filter(|cap| self.stored >= *cap) {
            self.capped = true;
            return self.append_piece(Stream::Stderr, time, &cap_marker(cap));
        }
        // Valid text, which nearly every line is, passes the strict check
        // sooner than the lossy conversion's (in the ingest profile,
        // 2.9 % of the time against 4.0 %).
        let text = match std::str::from_utf8(text) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(_) => String::from_utf8_lossy(text),
        };
        for piece in stored_pieces(&text) {
            self.append_piece(stream, time, piece)?;
        }
        Ok(())
    }

    fn append_piece(&mut self, stream: Stream, time: i64, piece: &str) -> std::io::Result<()> {
        let digits = self.time_digits.of(time);
        // The newline, the two spaces and the stream's tag.
        self.stored += (digits.len() + piece.len() + 4) as u64;
        match &mut self.format {
            WriterFormat::Blocks(writer) => writer.append_with(time, |block| encode_line(block, digits, stream, piece)),
            WriterFormat::Plain(writer) => {
                self.line.clear();
                encode_line(&mut self.line, digits, stream, piece);
                writer.append(&self.line)
            }
        }
    }

    /// Makes every appended line visible to readers; first looks whether
    /// the job's logs were cut (one failed open a flush, and a flush is a
    /// pipe read, so the cost is small against what was read).
    pub fn flush(&mut self) -> std::io::Result<()> {
        if !self.capped {
            if let Ok(sentence) = std::fs::read_to_string(&self.cut_path) {
                self.capped = true;
                self.append_piece(Stream::Stderr, crate::now_millis(), sentence.trim())?;
            }
        }
        match &mut self.format {
            WriterFormat::Blocks(writer) => writer.flush(),
            WriterFormat::Plain(writer) => writer.flush(),
        }
    }
}

impl LogWriter {
    /// Ends the log: flushes, and compresses the lines not yet in a block
    /// (a log in the block format). A writer reopened later continues it.
    pub fn finish(&mut self) -> std::io::Result<()> {
        match &mut self.format {
            WriterFormat::Blocks(writer) => writer.seal(),
            WriterFormat::Plain(writer) => writer.flush(),
        }
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// Reads one attempt's log, in either format. A reader sees the lines
/// flushed by the time of each call: a log being written grows under it.
pub enum LogReader {
    Blocks(Box<blocks::BlockReader>),
    Plain(plain::PlainReader),
}

impl LogReader {
    /// How many complete lines are stored.
    pub fn line_count(&mut self) -> std::io::Result<u64> {
        match self {
            LogReader::Blocks(reader) => reader.line_count(),
            LogReader::Plain(reader) => reader.line_count(),
        }
    }

    /// Lines `from..=to` (1-based, clamped to what exists).
    pub fn lines(&mut self, from: u64, to: u64) -> std::io::Result<Vec<LogLine>> {
        let from = from.max(1);
        if from > to {
            return Ok(Vec::new());
        }
        if let LogReader::Plain(reader) = self {
            return reader.lines(from, to);
        }
        let mut lines = Vec::new();
        self.visit(from, |number, time, stream, text| {
            if number > to {
                return ControlFlow::Break(());
            }
            lines.push(LogLine { number, time, stream, text: String::from_utf8_lossy(text).into_owned() });
            ControlFlow::Continue(())
        })?;
        Ok(lines)
    }

    /// The bytes of the stored lines (uncompressed): what changes whenever
    /// a line is added, for caches of what was read.
    pub fn byte_len(&mut self) -> std::io::Result<u64> {
        match self {
            LogReader::Blocks(reader) => reader.stored_bytes(),
            LogReader::Plain(reader) => reader.byte_len(),
        }
    }

    /// Calls `visit(number, time, stream, text)` for every stored line from
    /// `from` on, in order, until it answers `Break`. Reads large pieces at
    /// a time, so visiting a million lines is one sequential read. `text` is
    /// the stored line (valid UTF-8, see [`LogWriter`]). Returns how many
    /// lines the log held when the visit began; lines added during the visit
    /// are not visited.
    pub fn visit(
        &mut self,
        from: u64,
        mut visit: impl FnMut(u64, i64, Stream, &[u8]) -> ControlFlow<()>,
    ) -> std::io::Result<u64> {
        match self {
            LogReader::Blocks(reader) => reader.visit(from.max(1), &mut visit),
            LogReader::Plain(reader) => reader.visit(from.max(1), &mut visit),
        }
    }

    /// The numbers of the lines `search` matches, at most `limit` of them;
    /// the flag says whether more lines matched. Also answers how many
    /// lines the log held when the search began.
    pub fn search(&mut self, search: &LinePattern, limit: usize) -> std::io::Result<(u64, Vec<u64>, bool)> {
        if let LogReader::Blocks(reader) = self {
            return reader.search(search, limit);
        }
        let mut matches = Vec::new();
        let mut truncated = false;
        let total = self.visit(1, |number, _, _, text| {
            if search.regex.is_match(text) {
                if matches.len() == limit {
                    truncated = true;
                    return ControlFlow::Break(());
                }
                matches.push(number);
            }
            ControlFlow::Continue(())
        })?;
        Ok((total, matches, truncated))
    }

    /// Whether any of lines `from..=to` may match `search`: `false` only
    /// when every block holding them lacks text the pattern needs (a log of
    /// the plain format, or lines in the block being written, may).
    pub fn may_hold(&mut self, from: u64, to: u64, search: &LinePattern) -> std::io::Result<bool> {
        match self {
            LogReader::Blocks(reader) => reader.may_hold(from, to, search),
            LogReader::Plain(_) => Ok(true),
        }
    }

    /// The number of the first line whose time is at least `millis`, or
    /// one past the last line. Lines are stored in the order they were
    /// read, so their times rise: a block log finds it from its blocks'
    /// records and one block, a plain one by a binary search on lines.
    pub fn first_at_or_after(&mut self, millis: i64) -> std::io::Result<u64> {
        if let LogReader::Blocks(reader) = self {
            return reader.first_at_or_after(millis);
        }
        let count = self.line_count()?;
        let (mut low, mut high) = (1u64, count + 1);
        while low < high {
            let middle = low + (high - low) / 2;
            let time = self.lines(middle, middle)?.first().map_or(i64::MAX, |line| line.time);
            if time < millis {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        Ok(low)
    }

    /// The lines from line `from` on whose text adds up to about `max`
    /// bytes (at least one line), and the number of the line to continue
    /// from; used to stream a log (and to follow it as it grows).
    pub fn read_from(&mut self, from: u64, max: usize) -> std::io::Result<(Vec<(i64, Stream, String)>, u64)> {
        let from = from.max(1);
        let mut next = from;
        let mut lines = Vec::new();
        let mut bytes = 0usize;
        self.visit(from, |number, time, stream, text| {
            if bytes >= max {
                return ControlFlow::Break(());
            }
            bytes += text.len() + 1;
            lines.push((time, stream, String::from_utf8_lossy(text).into_owned()));
            next = number + 1;
            ControlFlow::Continue(())
        })?;
        Ok((lines, next))
    }
}

/// A search of a log's lines: the pattern, and the text any line it
/// matches must hold, which lets a search skip blocks (`search.rs`).
#[derive(Debug)]
pub struct LinePattern {
    regex: regex::bytes::Regex,
    trigrams: Vec<u32>,
    /// The pattern loosened to search a block at a time (`line_scan.rs`).
    run: Option<line_scan::RunPattern>,
}

impl LinePattern {
    /// `text` as a literal, or as a regular expression when `regex`.
    /// Patterns run in the `regex` crate's linear time, with size limits,
    /// so a hostile pattern cannot stall the server.
    pub fn compile(text: &str, regex: bool, ignore_case: bool) -> Result<LinePattern, regex::Error> {
        let pattern = if regex { text.to_string() } else { regex::escape(text) };
        let compiled = regex::bytes::RegexBuilder::new(&pattern)
            .case_insensitive(ignore_case)
            .size_limit(1 << 20)
            .dfa_size_limit(4 << 20)
            .build()?;
        Ok(LinePattern {
            regex: compiled,
            trigrams: search::required_trigrams(&pattern, ignore_case),
            run: line_scan::RunPattern::new(&pattern, ignore_case),
        })
    }

    /// Whether the search matches one line's text.
    pub fn is_match(&self, text: &[u8]) -> bool {
        self.regex.is_match(text)
    }
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
        while let Some(pos) = memchr::memchr(b'\n', rest) {
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
