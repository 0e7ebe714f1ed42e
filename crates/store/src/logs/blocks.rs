//! The block format: stored lines in zstd-compressed blocks with a record
//! per block, and the block being written as plain lines.
//!
//! ```text
//! <completion index>-<attempt>.zst    zstd frames, one per sealed block of
//!                                     about BLOCK_BYTES of stored lines
//! <completion index>-<attempt>.zflt   one FILTER_BYTES filter per block: the
//!                                     trigrams its lines hold (search.rs)
//! <completion index>-<attempt>.zidx   one RECORD_BYTES record per block:
//!                                     first line, offset, compressed and raw
//!                                     sizes, line count, earliest and latest
//!                                     time (little-endian)
//! <completion index>-<attempt>.tail   TAIL_MAGIC, the number of sealed lines
//!                                     before it (u64), then the lines of the
//!                                     block being written, as stored
//! ```
//!
//! A line goes to the tail when the writer flushes, so followers see it at
//! once. When the block reaches [`BLOCK_BYTES`] the writer seals it
//! (`blocks/writer.rs`): a thread compresses it while the tail keeps its
//! lines and the next ones (two blocks at most are compressed at once, and
//! recorded in order); then the frame is appended to `.zst`, its filter to
//! `.zflt`, its record to `.zidx`, and a tail of the lines after it, naming
//! the new count of sealed lines, replaces the old one (written aside and
//! renamed, so the path always holds a whole tail). A reader opens the tail first, then
//! reads the records, and skips the tail's lines that a record holds
//! already (sealed after the tail was opened, or left by a crash between
//! the record and the new tail): whatever the writer does meanwhile, the
//! reader sees each line once and none missing. A writer reopened after a
//! crash cuts a frame without a record, drops tail lines a record already
//! holds, and leaves out half a line at the tail's end.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::ops::ControlFlow;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::search::{self, FILTER_BYTES};
use super::{visit_stored, Stream};

mod writer;

pub use writer::BlockWriter;
#[cfg(test)]
pub(super) use writer::SealingGate;

/// Stored bytes per sealed block: large enough for zstd to find the
/// repeats of a training log, small enough that reading one line costs
/// about a millisecond (docs/measurements.md, "Compressed logs").
pub const BLOCK_BYTES: usize = 1 << 20;
/// zstd's level for sealed blocks: on the corpus of bench/log-format.sh,
/// level 1 is both smaller and faster than 3 (docs/measurements.md).
const LEVEL: i32 = 1;
const RECORD_BYTES: usize = 48;
/// Decompressed blocks a reader keeps (4 MiB).
const CACHED_BLOCKS: usize = 4;
/// The most threads one search reads blocks on, and how many blocks each
/// reads before the search looks whether it has enough matches.
const MAX_SEARCH_THREADS: usize = 4;
const BLOCKS_PER_SEARCH_THREAD: usize = 4;
const TAIL_MAGIC: &[u8; 8] = b"JDTAIL01";
const TAIL_HEADER: usize = 16;

/// The files of one attempt's log in the block format.
#[derive(Debug, Clone)]
pub struct BlockPaths {
    zst: PathBuf,
    zflt: PathBuf,
    zidx: PathBuf,
    tail: PathBuf,
    /// Where a new tail is written before it replaces the old one.
    tail_next: PathBuf,
}

impl BlockPaths {
    /// Named after the plain format's `.log` path of the same attempt.
    pub fn beside(log_path: &Path) -> BlockPaths {
        BlockPaths {
            zst: log_path.with_extension("zst"),
            zflt: log_path.with_extension("zflt"),
            zidx: log_path.with_extension("zidx"),
            tail: log_path.with_extension("tail"),
            tail_next: log_path.with_extension("tail.next"),
        }
    }

    /// Whether a log in this format exists (its tail always does).
    pub fn exists(&self) -> bool {
        self.tail.exists()
    }
}

/// One sealed block's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Record {
    /// 1-based number of the block's first line.
    first_line: u64,
    /// Where its frame starts in `.zst`.
    offset: u64,
    compressed: u32,
    lines: u32,
    /// Bytes of its stored lines.
    raw: u32,
    earliest: i64,
    latest: i64,
}

impl Record {
    fn encode(&self) -> [u8; RECORD_BYTES] {
        let mut out = [0u8; RECORD_BYTES];
        out[0..8].copy_from_slice(&self.first_line.to_le_bytes());
        out[8..16].copy_from_slice(&self.offset.to_le_bytes());
        out[16..20].copy_from_slice(&self.compressed.to_le_bytes());
        out[20..24].copy_from_slice(&self.lines.to_le_bytes());
        out[24..28].copy_from_slice(&self.raw.to_le_bytes());
        // 28..32 is kept for flags a later format may need.
        out[32..40].copy_from_slice(&self.earliest.to_le_bytes());
        out[40..48].copy_from_slice(&self.latest.to_le_bytes());
        out
    }

    fn decode(bytes: &[u8]) -> Record {
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        Record {
            first_line: u64_at(0),
            offset: u64_at(8),
            compressed: u32_at(16),
            lines: u32_at(20),
            raw: u32_at(24),
            earliest: u64_at(32) as i64,
            latest: u64_at(40) as i64,
        }
    }

    /// The number of the line after the block.
    fn end_line(&self) -> u64 {
        self.first_line + u64::from(self.lines)
    }

    /// The block's compressed frame, read from `.zst`. A record whose sizes
    /// no writer makes (damage) is refused before anything is allocated
    /// for it: a block is at most a full block and the lines a crash left
    /// in the tail after it.
    fn frame(&self, zst: &File) -> std::io::Result<Vec<u8>> {
        const LARGEST: u32 = 4 * BLOCK_BYTES as u32;
        if self.raw > LARGEST || self.compressed > LARGEST {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a log block's record says {} bytes ({} compressed): damaged", self.raw, self.compressed),
            ));
        }
        let mut frame = vec![0u8; self.compressed as usize];
        zst.read_exact_at(&mut frame, self.offset)?;
        Ok(frame)
    }
}

/// Reads every whole record of `.zidx`.
fn read_records(file: &mut File) -> std::io::Result<Vec<Record>> {
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0))?;
    file.read_to_end(&mut bytes)?;
    Ok(bytes.chunks_exact(RECORD_BYTES).map(Record::decode).collect())
}

/// A tail's header: the number of sealed lines before it.
fn tail_header(sealed_lines: u64) -> [u8; TAIL_HEADER] {
    let mut header = [0u8; TAIL_HEADER];
    header[..8].copy_from_slice(TAIL_MAGIC);
    header[8..].copy_from_slice(&sealed_lines.to_le_bytes());
    header
}

/// The sealed-line count a tail's bytes start with; `None` for bytes that
/// are not a tail (a file cut before its header was written).
fn parse_tail_header(bytes: &[u8]) -> Option<u64> {
    (bytes.len() >= TAIL_HEADER && &bytes[..8] == TAIL_MAGIC)
        .then(|| u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes")))
}

/// The earliest and latest time of whole stored lines.
fn time_span(lines: &[u8]) -> (i64, i64) {
    let mut span = (i64::MAX, i64::MIN);
    let _ = visit_stored(lines, 1, u64::MAX, &mut |_, time, _, _| {
        span = (span.0.min(time), span.1.max(time));
        ControlFlow::Continue(())
    });
    span
}

/// Reads a log in the block format.
pub struct BlockReader {
    paths: BlockPaths,
    zst: File,
    /// `None` if it cannot be opened: searches then read every block.
    zflt: Option<File>,
    zidx: File,
    tail: File,
    /// Which file the tail is (a sealing writer replaces it).
    tail_inode: u64,
    /// The lines the records hold.
    sealed_lines: u64,
    records: u64,
    /// What was read of the tail after its header and the lines a record
    /// holds too.
    tail_bytes: Vec<u8>,
    /// The bytes of the tail file read, its header included.
    tail_read: u64,
    /// The whole lines at the start of `tail_bytes`.
    tail_whole: usize,
    tail_lines: u64,
    /// The last blocks decompressed, the latest used first: a screen, a
    /// time search and a merged view read the same few blocks again and
    /// again.
    cached: Vec<(u64, Vec<u8>)>,
    /// How many blocks were decompressed (the tests count skipped ones).
    decompressed: u64,
    decompressor: zstd::bulk::Decompressor<'static>,
}

impl BlockReader {
    /// `None` when no log of this format exists.
    pub fn open(paths: &BlockPaths) -> std::io::Result<Option<BlockReader>> {
        let tail = match File::open(&paths.tail) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut reader = BlockReader {
            zst: File::open(&paths.zst)?,
            zflt: File::open(&paths.zflt).ok(),
            zidx: File::open(&paths.zidx)?,
            paths: paths.clone(),
            tail_inode: tail.metadata()?.ino(),
            tail,
            sealed_lines: 0,
            records: 0,
            tail_bytes: Vec::new(),
            tail_read: 0,
            tail_whole: 0,
            tail_lines: 0,
            cached: Vec::with_capacity(CACHED_BLOCKS),
            decompressed: 0,
            decompressor: zstd::bulk::Decompressor::new()?,
        };
        reader.read_tail()?;
        Ok(Some(reader))
    }

    /// Reads the tail file held from its start, and the records.
    fn read_tail(&mut self) -> std::io::Result<()> {
        let mut bytes = Vec::new();
        self.tail.seek(SeekFrom::Start(0))?;
        self.tail.read_to_end(&mut bytes)?;
        self.tail_read = bytes.len() as u64;
        // A tail without its header (cut by a crash before the writer's
        // rename, which cannot be seen) reads as no lines.
        let tail_after = parse_tail_header(&bytes);
        bytes.drain(..TAIL_HEADER.min(bytes.len()));
        self.records = self.zidx.metadata()?.len() / RECORD_BYTES as u64;
        self.sealed_lines = match self.records {
            0 => 0,
            records => self.record(records - 1)?.end_line() - 1,
        };
        // Tail lines a record holds too: the writer sealed them after this
        // tail was opened (or crashed before replacing it). The records
        // are newer; the tail's lines after them follow on.
        let whole = memchr::memrchr(b'\n', &bytes).map_or(0, |last| last + 1);
        let start = match tail_after {
            Some(after) => nth_line_start(&bytes[..whole], self.sealed_lines.saturating_sub(after)),
            None => whole,
        };
        bytes.drain(..start);
        self.tail_bytes = bytes;
        self.tail_whole = whole - start;
        self.tail_lines = memchr::memchr_iter(b'\n', &self.tail_bytes[..self.tail_whole]).count() as u64;
        Ok(())
    }

    /// Sees what the writer flushed since: new lines in the same tail, or a
    /// new tail after a seal.
    fn refresh(&mut self) -> std::io::Result<()> {
        let meta = match std::fs::metadata(&self.paths.tail) {
            Ok(meta) => meta,
            // The log was removed while read: what is held stays readable.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        if meta.ino() != self.tail_inode {
            self.tail = File::open(&self.paths.tail)?;
            self.tail_inode = self.tail.metadata()?.ino();
            return self.read_tail();
        }
        if meta.len() > self.tail_read {
            let before = self.tail_whole;
            self.tail.seek(SeekFrom::Start(self.tail_read))?;
            self.tail_read += self.tail.read_to_end(&mut self.tail_bytes)? as u64;
            if let Some(last) = memchr::memrchr(b'\n', &self.tail_bytes[before..]) {
                self.tail_whole = before + last + 1;
                self.tail_lines += memchr::memchr_iter(b'\n', &self.tail_bytes[before..self.tail_whole]).count() as u64;
            }
        }
        Ok(())
    }

    fn record(&self, index: u64) -> std::io::Result<Record> {
        let mut bytes = [0u8; RECORD_BYTES];
        self.zidx.read_exact_at(&mut bytes, index * RECORD_BYTES as u64)?;
        Ok(Record::decode(&bytes))
    }

    /// At most `count` records from `index` on, read at once.
    fn records_range(&self, index: u64, count: u64) -> std::io::Result<Vec<Record>> {
        let count = self.records.saturating_sub(index).min(count) as usize;
        let mut bytes = vec![0u8; count * RECORD_BYTES];
        self.zidx.read_exact_at(&mut bytes, index * RECORD_BYTES as u64)?;
        Ok(bytes.chunks_exact(RECORD_BYTES).map(Record::decode).collect())
    }

    /// The filters of `count` blocks from `index` on; `None` when they
    /// cannot be read (a block is then searched, never skipped).
    fn filters(&self, index: u64, count: usize) -> Option<Vec<u8>> {
        let mut bytes = vec![0u8; count * FILTER_BYTES];
        self.zflt.as_ref()?.read_exact_at(&mut bytes, index * FILTER_BYTES as u64).ok()?;
        Some(bytes)
    }

    /// The index of the block holding sealed line `line`.
    fn block_of(&self, line: u64) -> std::io::Result<u64> {
        let (mut low, mut high) = (0u64, self.records);
        while high - low > 1 {
            let middle = (low + high) / 2;
            if self.record(middle)?.first_line <= line {
                low = middle;
            } else {
                high = middle;
            }
        }
        Ok(low)
    }

    /// The stored lines of block `index`, decompressed (or kept from a
    /// recent call).
    fn block(&mut self, index: u64, record: &Record) -> std::io::Result<&[u8]> {
        match self.cached.iter().position(|(cached, _)| *cached == index) {
            Some(at) => self.cached[..=at].rotate_right(1),
            None => {
                let frame = record.frame(&self.zst)?;
                let lines = self.decompressor.decompress(&frame, record.raw as usize)?;
                if lines.len() != record.raw as usize {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        "a log block is not its record's size",
                    ));
                }
                self.cached.truncate(CACHED_BLOCKS - 1);
                self.cached.insert(0, (index, lines));
                self.decompressed += 1;
            }
        }
        Ok(&self.cached[0].1)
    }

    /// The blocks recorded and how many were decompressed so far.
    #[cfg(test)]
    pub fn records_read(&self) -> (u64, u64) {
        (self.records, self.decompressed)
    }

    pub fn line_count(&mut self) -> std::io::Result<u64> {
        self.refresh()?;
        Ok(self.sealed_lines + self.tail_lines)
    }

    /// The bytes of stored lines, sealed and in the tail.
    pub fn stored_bytes(&mut self) -> std::io::Result<u64> {
        self.refresh()?;
        let sealed: u64 = self.records_range(0, u64::MAX)?.iter().map(|r| u64::from(r.raw)).sum();
        Ok(sealed + self.tail_whole as u64)
    }

    /// See [`super::LogReader::visit`]: the blocks from the one holding
    /// `from` (`>= 1`), then the tail.
    pub fn visit(
        &mut self,
        from: u64,
        visit: &mut impl FnMut(u64, i64, Stream, &[u8]) -> ControlFlow<()>,
    ) -> std::io::Result<u64> {
        self.refresh()?;
        let count = self.sealed_lines + self.tail_lines;
        if from > count {
            return Ok(count);
        }
        if from <= self.sealed_lines {
            let first = self.block_of(from)?;
            for (index, record) in (first..).zip(self.records_range(first, u64::MAX)?) {
                let lines = self.block(index, &record)?;
                let start = nth_line_start(lines, from.saturating_sub(record.first_line));
                let first_number = from.max(record.first_line);
                if visit_stored(&lines[start..], first_number, count, visit).is_break() {
                    return Ok(count);
                }
            }
        }
        let tail = &self.tail_bytes[..self.tail_whole];
        let first_number = from.max(self.sealed_lines + 1);
        let start = nth_line_start(tail, first_number - self.sealed_lines - 1);
        let _ = visit_stored(&tail[start..], first_number, count, visit);
        Ok(count)
    }
}

impl BlockReader {
    /// See [`super::LogReader::first_at_or_after`]: the first block whose
    /// latest time reaches `millis`, by the records alone, then its lines.
    pub fn first_at_or_after(&mut self, millis: i64) -> std::io::Result<u64> {
        self.refresh()?;
        let (mut low, mut high) = (0u64, self.records);
        while low < high {
            let middle = (low + high) / 2;
            if self.record(middle)?.latest < millis {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        let count = self.sealed_lines + self.tail_lines;
        let mut found = count + 1;
        let mut first_at = |number: u64, time: i64, _: Stream, _: &[u8]| {
            if time >= millis {
                found = number;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        };
        if low < self.records {
            let record = self.record(low)?;
            let lines = self.block(low, &record)?;
            if visit_stored(lines, record.first_line, count, &mut first_at).is_break() {
                return Ok(found);
            }
        }
        let _ = visit_stored(&self.tail_bytes[..self.tail_whole], self.sealed_lines + 1, count, &mut first_at);
        Ok(found)
    }

    /// See [`super::LogReader::may_hold`].
    pub fn may_hold(&mut self, from: u64, to: u64, search: &super::LinePattern) -> std::io::Result<bool> {
        self.refresh()?;
        // The tail has no filter yet.
        if search.trigrams.is_empty() || to > self.sealed_lines || from > to {
            return Ok(true);
        }
        let (first, last) = (self.block_of(from.max(1))?, self.block_of(to)?);
        let Some(filters) = self.filters(first, (last - first + 1) as usize) else { return Ok(true) };
        Ok(filters.chunks_exact(FILTER_BYTES).any(|filter| search::may_hold(filter, &search.trigrams)))
    }

    /// See [`super::LogReader::search`]: blocks whose filter lacks a
    /// trigram the pattern needs are not read, and the others are read and
    /// matched a few at a time on as many threads as there are cores (the
    /// next few only if the limit is not reached).
    pub fn search(&mut self, search: &super::LinePattern, limit: usize) -> std::io::Result<(u64, Vec<u64>, bool)> {
        /// Filters read at once: 2 MiB, so a search that stops early
        /// does not read them all.
        const FILTERS_AT_ONCE: u64 = 256;
        self.refresh()?;
        let count = self.sealed_lines + self.tail_lines;
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, MAX_SEARCH_THREADS);
        let mut matches = Vec::new();
        let mut index = 0;
        while index < self.records {
            let records = self.records_range(index, FILTERS_AT_ONCE)?;
            let filters = if search.trigrams.is_empty() { None } else { self.filters(index, records.len()) };
            let candidates: Vec<Record> = records
                .iter()
                .enumerate()
                .filter(|(offset, _)| {
                    filters.as_ref().is_none_or(|f| {
                        search::may_hold(&f[offset * FILTER_BYTES..(offset + 1) * FILTER_BYTES], &search.trigrams)
                    })
                })
                .map(|(_, record)| *record)
                .collect();
            for batch in candidates.chunks(workers * BLOCKS_PER_SEARCH_THREAD) {
                for found in self.match_blocks(batch, workers, search)? {
                    matches.extend(found);
                }
                if matches.len() > limit {
                    matches.truncate(limit);
                    return Ok((count, matches, true));
                }
            }
            index += records.len() as u64;
        }
        let _ = super::line_scan::matching_lines(
            search,
            &self.tail_bytes[..self.tail_whole],
            self.sealed_lines + 1,
            &mut |number| {
                matches.push(number);
                if matches.len() > limit {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            },
        );
        let truncated = matches.len() > limit;
        matches.truncate(limit);
        Ok((count, matches, truncated))
    }

    /// The numbers of the lines of `blocks` that `search` matches, block by
    /// block, each block read and matched on one of `workers` threads.
    fn match_blocks(
        &mut self,
        blocks: &[Record],
        workers: usize,
        search: &super::LinePattern,
    ) -> std::io::Result<Vec<Vec<u64>>> {
        let zst = &self.zst;
        let matched = |record: &Record, decompressor: &mut zstd::bulk::Decompressor<'static>| {
            let frame = record.frame(zst)?;
            let lines = decompressor.decompress(&frame, record.raw as usize)?;
            let mut found = Vec::new();
            let _ = super::line_scan::matching_lines(search, &lines, record.first_line, &mut |number| {
                found.push(number);
                ControlFlow::Continue(())
            });
            Ok::<_, std::io::Error>(found)
        };
        self.decompressed += blocks.len() as u64;
        if workers == 1 || blocks.len() == 1 {
            return blocks.iter().map(|record| matched(record, &mut self.decompressor)).collect();
        }
        std::thread::scope(|scope| {
            let threads: Vec<_> = (0..workers)
                .map(|worker| {
                    let matched = &matched;
                    scope.spawn(move || {
                        let mut decompressor = zstd::bulk::Decompressor::new()?;
                        blocks
                            .iter()
                            .enumerate()
                            .filter(|(at, _)| at % workers == worker)
                            .map(|(at, record)| Ok((at, matched(record, &mut decompressor)?)))
                            .collect::<std::io::Result<Vec<(usize, Vec<u64>)>>>()
                    })
                })
                .collect();
            let mut found = vec![Vec::new(); blocks.len()];
            for thread in threads {
                let done = thread.join().map_err(|_| std::io::Error::other("a log search thread failed"))??;
                for (at, lines) in done {
                    found[at] = lines;
                }
            }
            Ok(found)
        })
    }
}

/// Where the line after the first `skip` lines of `lines` starts.
fn nth_line_start(lines: &[u8], skip: u64) -> usize {
    if skip == 0 {
        return 0;
    }
    memchr::memchr_iter(b'\n', lines).nth(skip as usize - 1).map_or(lines.len(), |newline| newline + 1)
}
