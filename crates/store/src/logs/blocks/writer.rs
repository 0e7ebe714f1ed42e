//! The writer of the block format (the format is described in
//! `blocks.rs`): lines appended to the block being written and flushed to
//! the tail, full blocks compressed on threads of their own and recorded in
//! order.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::Arc;

use super::{
    nth_line_start, parse_tail_header, read_records, search, tail_header, time_span, BlockPaths, Record, BLOCK_BYTES,
    FILTER_BYTES, LEVEL, RECORD_BYTES, TAIL_HEADER,
};

/// Appends to a log in the block format. A full block is compressed on a
/// thread of its own while the next one fills, so the writer (the pipe's
/// reader) never waits for zstd unless [`SEALING_AT_ONCE`] blocks fill
/// first.
pub struct BlockWriter {
    paths: BlockPaths,
    zst: File,
    zflt: File,
    zidx: File,
    zst_len: u64,
    tail: File,
    /// The blocks being compressed, oldest first; the tail holds their
    /// lines until their records are written.
    sealing: VecDeque<Sealing>,
    /// The stored lines of the block being written.
    block: Vec<u8>,
    /// How much of `block` is in the tail file.
    flushed: usize,
    block_lines: u32,
    span: (i64, i64),
    /// Lines and bytes of the recorded blocks.
    sealed_lines: u64,
    sealed_bytes: u64,
    /// What a sealing thread works with, lent to it while it works.
    tools: Vec<SealingTools>,
    /// Buffers of blocks sealed, for the next ones: a new megabyte each
    /// time costs page faults.
    spare: Vec<Vec<u8>>,
    /// Holds sealing threads back until a test lets them go.
    #[cfg(test)]
    pub(in crate::logs) gate: Option<Arc<SealingGate>>,
}

/// A gate the sealing threads of a test wait at before they compress,
/// until it lets them through in the order their blocks were handed off.
#[cfg(test)]
#[derive(Default)]
pub(in crate::logs) struct SealingGate {
    /// (blocks handed off, blocks let through)
    counts: std::sync::Mutex<(usize, usize)>,
    changed: std::sync::Condvar,
}

#[cfg(test)]
impl SealingGate {
    pub(in crate::logs) fn let_through(&self, blocks: usize) {
        let mut counts = self.counts.lock().unwrap();
        counts.1 = counts.1.saturating_add(blocks);
        self.changed.notify_all();
    }

    /// The place of the next block handed off.
    fn turn(&self) -> usize {
        let mut counts = self.counts.lock().unwrap();
        counts.0 += 1;
        counts.0 - 1
    }

    fn wait(&self, turn: usize) {
        let mut counts = self.counts.lock().unwrap();
        while counts.1 <= turn {
            counts = self.changed.wait(counts).unwrap();
        }
    }
}

/// Blocks compressed at once by one writer. Two keep both cores of a small
/// machine busy when the lines come faster than one thread compresses
/// them, while a machine running many replicas' writers is not flooded
/// with threads (docs/measurements.md, "Ingest").
const SEALING_AT_ONCE: usize = 2;

/// A block handed to its sealing thread.
struct Sealing {
    lines: u32,
    raw: u32,
    span: (i64, i64),
    /// Its lines, shared with the thread: a tail written while the block
    /// is compressed holds them.
    block: Arc<Vec<u8>>,
    work: std::thread::JoinHandle<std::io::Result<Sealed>>,
}

/// A zstd context and a filter's scratch space, made once per writer and
/// thread slot.
struct SealingTools {
    compressor: zstd::bulk::Compressor<'static>,
    scratch: search::FilterScratch,
}

/// What the sealing thread gives back.
struct Sealed {
    frame: Vec<u8>,
    filter: Vec<u8>,
    tools: SealingTools,
}

impl BlockWriter {
    /// Creates the log, or continues it: a frame without a record (a
    /// crash between the two) is cut, lines of the tail that a record
    /// holds already are dropped, and half a line at the tail's end is
    /// left out.
    pub fn create(paths: BlockPaths) -> std::io::Result<BlockWriter> {
        let mut zidx = OpenOptions::new().create(true).read(true).append(true).open(&paths.zidx)?;
        let records = read_records(&mut zidx)?;
        zidx.set_len((records.len() * RECORD_BYTES) as u64)?;
        let zst = OpenOptions::new().create(true).append(true).open(&paths.zst)?;
        let zst_len = records.last().map(|r| r.offset + u64::from(r.compressed)).unwrap_or(0);
        if zst.metadata()?.len() > zst_len {
            zst.set_len(zst_len)?;
        }
        let mut zflt = OpenOptions::new().create(true).append(true).open(&paths.zflt)?;
        let filters_len = (records.len() * FILTER_BYTES) as u64;
        let held = zflt.metadata()?.len();
        if held > filters_len {
            zflt.set_len(filters_len)?;
        } else if held < filters_len {
            // Filters are written before their records, so this is damage:
            // a block without its filter must never be skipped.
            zflt.write_all(&vec![0xff; (filters_len - held) as usize])?;
        }
        let sealed_lines = records.last().map(|r| r.end_line() - 1).unwrap_or(0);
        let sealed_bytes = records.iter().map(|r| u64::from(r.raw)).sum();

        let old_tail = match std::fs::read(&paths.tail) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        let mut block = new_block_buffer();
        if let Some(tail_after) = parse_tail_header(&old_tail) {
            let lines = &old_tail[TAIL_HEADER..];
            let whole = memchr::memrchr(b'\n', lines).map_or(0, |last| last + 1);
            // Lines a record holds already: the crash came between the
            // record and the new tail.
            let start = nth_line_start(&lines[..whole], sealed_lines.saturating_sub(tail_after));
            block.extend_from_slice(&lines[start..whole]);
        }
        let block_lines = memchr::memchr_iter(b'\n', &block).count() as u32;
        let span = time_span(&block);
        let tail = write_tail(&paths, sealed_lines, &[&block])?;
        Ok(BlockWriter {
            flushed: block.len(),
            paths,
            zst,
            zflt,
            zidx,
            zst_len,
            tail,
            sealing: VecDeque::new(),
            block,
            block_lines,
            span,
            sealed_lines,
            sealed_bytes,
            tools: Vec::new(),
            spare: Vec::new(),
            #[cfg(test)]
            gate: None,
        })
    }

    /// The bytes of stored lines so far, sealed or not.
    pub fn stored_bytes(&self) -> u64 {
        self.sealed_bytes + self.sealing.iter().map(|s| u64::from(s.raw)).sum::<u64>() + self.block.len() as u64
    }

    /// Appends one stored line (ending in `\n`) at `time`, written by
    /// `encode` straight into the block.
    pub fn append_with(&mut self, time: i64, encode: impl FnOnce(&mut Vec<u8>)) -> std::io::Result<()> {
        encode(&mut self.block);
        self.block_lines += 1;
        self.span = (self.span.0.min(time), self.span.1.max(time));
        if self.block.len() >= BLOCK_BYTES {
            self.hand_off()?;
        }
        Ok(())
    }

    /// Records the blocks whose compression is done, then writes the lines
    /// appended since the last flush to the tail.
    pub fn flush(&mut self) -> std::io::Result<()> {
        while self.sealing.front().is_some_and(|s| s.work.is_finished()) {
            self.record_oldest()?;
        }
        if self.flushed < self.block.len() {
            self.tail.write_all(&self.block[self.flushed..])?;
            self.flushed = self.block.len();
        }
        Ok(())
    }

    /// Seals every line appended: the block being written is compressed
    /// and recorded now, with those before it.
    pub fn seal(&mut self) -> std::io::Result<()> {
        if !self.block.is_empty() {
            self.hand_off()?;
        }
        while !self.sealing.is_empty() {
            self.record_oldest()?;
        }
        Ok(())
    }

    /// Gives the full block to a sealing thread (after recording the
    /// oldest one still at work, if [`SEALING_AT_ONCE`] are). Its lines go
    /// to the tail first, so readers keep seeing them until the block's
    /// record is written.
    fn hand_off(&mut self) -> std::io::Result<()> {
        if self.sealing.len() >= SEALING_AT_ONCE {
            self.record_oldest()?;
        }
        self.flush()?;
        let next = self.spare.pop().unwrap_or_else(new_block_buffer);
        let block = Arc::new(std::mem::replace(&mut self.block, next));
        let raw = u32::try_from(block.len()).map_err(std::io::Error::other)?;
        let mut tools = match self.tools.pop() {
            Some(tools) => tools,
            None => SealingTools {
                compressor: zstd::bulk::Compressor::new(LEVEL)?,
                scratch: search::FilterScratch::default(),
            },
        };
        let lines = Arc::clone(&block);
        #[cfg(test)]
        let gate = self.gate.clone().map(|gate| (gate.turn(), gate));
        let work = std::thread::Builder::new().name("log-seal".into()).spawn(move || {
            #[cfg(test)]
            if let Some((turn, gate)) = gate {
                gate.wait(turn);
            }
            let frame = tools.compressor.compress(&lines)?;
            let filter = search::filter_of(&lines, &mut tools.scratch);
            Ok(Sealed { frame, filter, tools })
        })?;
        self.sealing.push_back(Sealing { lines: self.block_lines, raw, span: self.span, block, work });
        self.flushed = 0;
        self.block_lines = 0;
        self.span = (i64::MAX, i64::MIN);
        Ok(())
    }

    /// Waits for the oldest block being compressed and records it: its
    /// frame, its filter, its record, then a tail of the lines after it.
    fn record_oldest(&mut self) -> std::io::Result<()> {
        let Some(sealing) = self.sealing.pop_front() else { return Ok(()) };
        let sealed = sealing.work.join().map_err(|_| std::io::Error::other("compressing a log block failed"))??;
        let record = Record {
            first_line: self.sealed_lines + 1,
            offset: self.zst_len,
            compressed: u32::try_from(sealed.frame.len()).map_err(std::io::Error::other)?,
            lines: sealing.lines,
            raw: sealing.raw,
            earliest: sealing.span.0,
            latest: sealing.span.1,
        };
        self.zst.write_all(&sealed.frame)?;
        self.zflt.write_all(&sealed.filter)?;
        self.zidx.write_all(&record.encode())?;
        self.zst_len += sealed.frame.len() as u64;
        self.sealed_lines += u64::from(sealing.lines);
        self.sealed_bytes += u64::from(sealing.raw);
        self.tools.push(sealed.tools);
        // The thread has let go of its share of the block.
        if let Ok(mut buffer) = Arc::try_unwrap(sealing.block) {
            buffer.clear();
            self.spare.push(buffer);
        }
        let mut after: Vec<&[u8]> = self.sealing.iter().map(|s| s.block.as_slice()).collect();
        after.push(&self.block[..self.flushed]);
        self.tail = write_tail(&self.paths, self.sealed_lines, &after)?;
        Ok(())
    }
}

/// A block's buffer, with room for the line that crosses [`BLOCK_BYTES`].
fn new_block_buffer() -> Vec<u8> {
    Vec::with_capacity(BLOCK_BYTES + crate::logs::MAX_LINE + 64)
}

impl Drop for BlockWriter {
    /// The blocks still being compressed are recorded (their lines are in
    /// the tail either way).
    fn drop(&mut self) {
        while !self.sealing.is_empty() {
            if self.record_oldest().is_err() {
                break;
            }
        }
    }
}

/// Replaces the tail with one holding `lines` (in order) after
/// `sealed_lines` sealed lines; answers the new tail, open to append to.
fn write_tail(paths: &BlockPaths, sealed_lines: u64, lines: &[&[u8]]) -> std::io::Result<File> {
    let mut next = OpenOptions::new().create(true).write(true).truncate(true).open(&paths.tail_next)?;
    next.write_all(&tail_header(sealed_lines))?;
    for part in lines {
        next.write_all(part)?;
    }
    std::fs::rename(&paths.tail_next, &paths.tail)?;
    Ok(next)
}
