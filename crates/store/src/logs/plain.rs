//! The plain format, every log's before blocks came: the stored lines as
//! they are and a line-offset index, so any line range is one seek away.
//!
//! ```text
//! <completion index>-<attempt>.log   lines "<unix ms> <o|e> <text>\n"
//! <completion index>-<attempt>.idx   one little-endian u64 per line:
//!                                    the byte offset where it starts
//! ```
//!
//! Logs of this format are read, and a writer that finds one continues it
//! (a copy resumed after an upgrade); no new log starts in it.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use super::{LogLine, Stream};

/// Appends to a plain log.
pub struct PlainWriter {
    log: BufWriter<File>,
    idx: File,
    /// Index entries of lines appended since the last flush. They reach the
    /// `.idx` file only after the log bytes they point to are written, so a
    /// reader never sees an entry whose line is not complete (a buffered
    /// index writer could spill entries early when its buffer fills).
    pending_idx: Vec<u8>,
    offset: u64,
}

impl PlainWriter {
    pub fn create(log_path: &Path, idx_path: &Path) -> std::io::Result<PlainWriter> {
        let log = OpenOptions::new().create(true).append(true).open(log_path)?;
        let idx = OpenOptions::new().create(true).append(true).open(idx_path)?;
        let offset = log.metadata()?.len();
        Ok(PlainWriter {
            log: BufWriter::with_capacity(64 * 1024, log),
            idx,
            pending_idx: Vec::with_capacity(8 * 1024),
            offset,
        })
    }

    /// The bytes of the log so far.
    pub fn stored_bytes(&self) -> u64 {
        self.offset
    }

    /// Appends one encoded stored line (ending in `\n`).
    pub fn append(&mut self, line: &[u8]) -> std::io::Result<()> {
        self.pending_idx.extend_from_slice(&self.offset.to_le_bytes());
        self.log.write_all(line)?;
        self.offset += line.len() as u64;
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

/// Reads a plain log.
pub struct PlainReader {
    log: File,
    idx_path: PathBuf,
}

impl PlainReader {
    /// `None` when the log does not exist.
    pub fn open(log_path: &Path, idx_path: &Path) -> std::io::Result<Option<PlainReader>> {
        match File::open(log_path) {
            Ok(log) => Ok(Some(PlainReader { log, idx_path: idx_path.to_path_buf() })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// How many complete lines are stored: the index's entries.
    pub fn line_count(&self) -> std::io::Result<u64> {
        match std::fs::metadata(&self.idx_path) {
            Ok(m) => Ok(m.len() / 8),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(e),
        }
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

    /// Lines `from..=to` (`1 <= from <= to`, clamped to what exists): the
    /// bytes between two index entries, read at once.
    pub fn lines(&mut self, from: u64, to: u64) -> std::io::Result<Vec<LogLine>> {
        let count = self.line_count()?;
        let to = to.min(count);
        if from > to {
            return Ok(Vec::new());
        }
        let start = self.offset_of(from)?;
        let end = if to < count { self.offset_of(to + 1)? } else { self.log.metadata()?.len() };
        self.log.seek(SeekFrom::Start(start))?;
        let mut bytes = vec![0u8; (end - start) as usize];
        self.log.read_exact(&mut bytes)?;
        let mut lines = Vec::with_capacity((to - from + 1) as usize);
        let _ = super::visit_stored(&bytes, from, to, &mut |number, time, stream, text| {
            lines.push(LogLine { number, time, stream, text: String::from_utf8_lossy(text).into_owned() });
            ControlFlow::Continue(())
        });
        Ok(lines)
    }

    /// See [`super::LogReader::visit`]: the log front to back in 1 MiB
    /// reads from line `from` (`>= 1`).
    pub fn visit(
        &mut self,
        from: u64,
        visit: &mut impl FnMut(u64, i64, Stream, &[u8]) -> ControlFlow<()>,
    ) -> std::io::Result<u64> {
        const BLOCK: usize = 1 << 20;
        let count = self.line_count()?;
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
            let Some(last_newline) = memchr::memrchr(b'\n', &buffer) else { continue };
            let whole = &buffer[..=last_newline];
            let lines = memchr::memchr_iter(b'\n', whole).count() as u64;
            if super::visit_stored(whole, number, count, visit).is_break() {
                return Ok(count);
            }
            number += lines;
            if number > count {
                return Ok(count);
            }
            buffer.drain(..=last_newline);
        }
    }
}
