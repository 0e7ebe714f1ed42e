//! Copying a task's output file into its attempt's log as Slurm writes it,
//! resuming after the lines the log already holds when the server
//! restarts.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use jobdeck_store::logs::{stored_pieces, LineSplitter, LogStore, LogWriter, Stream};

/// Copies an output file into an attempt's log.
pub(super) struct Tail {
    path: PathBuf,
    offset: u64,
    splitter: LineSplitter,
    writer: LogWriter,
}

impl Tail {
    /// Opens the copy of `path` into an attempt's log, resuming after the
    /// lines the log already holds.
    pub(super) fn open(
        logs: &LogStore,
        job_id: &str,
        index: i64,
        attempt: i64,
        path: PathBuf,
        cap: Option<u64>,
    ) -> std::io::Result<Tail> {
        let stored = match logs.open(job_id, index, attempt)? {
            Some(mut reader) => reader.line_count()?,
            None => 0,
        };
        let offset = resume_offset(&path, stored)?;
        let (log, idx) = logs.paths(job_id, index, attempt);
        let writer = LogWriter::create(&log, &idx)?.with_cap(cap);
        Ok(Tail { path, offset, splitter: LineSplitter::default(), writer })
    }

    /// Stores the complete lines the file gained.
    pub(super) fn copy(&mut self, now: i64) -> std::io::Result<()> {
        let mut file = match std::fs::File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        file.seek(SeekFrom::Start(self.offset))?;
        let mut buffer = vec![0u8; 256 * 1024];
        loop {
            let n = file.read(&mut buffer)?;
            if n == 0 {
                break;
            }
            self.offset += n as u64;
            let writer = &mut self.writer;
            self.splitter.feed(&buffer[..n], |line| {
                let _ = writer.append(Stream::Stdout, now, line);
            });
        }
        self.writer.flush()
    }

    /// Stores what is left, a last line without its newline included.
    pub(super) fn finish(&mut self, now: i64) {
        let _ = self.copy(now);
        let writer = &mut self.writer;
        self.splitter.finish(|line| {
            let _ = writer.append(Stream::Stdout, now, line);
        });
        let _ = self.writer.finish();
    }
}

/// The byte offset in `path` just after the source lines that make the
/// first `stored` lines of the log (a long source line is stored as
/// several), so a copy resumed after a restart neither repeats nor skips.
fn resume_offset(path: &Path, stored: u64) -> std::io::Result<u64> {
    if stored == 0 {
        return Ok(0);
    }
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let (mut offset, mut lines) = (0u64, 0u64);
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        if !line.ends_with(b"\n") || lines >= stored {
            break;
        }
        let text = String::from_utf8_lossy(&line[..line.len() - 1]);
        lines += stored_pieces(&text).count().max(1) as u64;
        offset += line.len() as u64;
    }
    Ok(offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resumed_copy_starts_after_the_stored_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        std::fs::write(&path, "one\ntwo\nthree\npartial").unwrap();
        // (lines stored, offset to read on from)
        for (stored, offset) in [(0, 0), (1, 4), (2, 8), (3, 14), (4, 14)] {
            assert_eq!(resume_offset(&path, stored).unwrap(), offset, "{stored}");
        }
        assert_eq!(resume_offset(&dir.path().join("missing"), 3).unwrap(), 0);
    }
}
