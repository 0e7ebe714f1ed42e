//! The log format measured on generated training output (issue 37): bytes
//! on disk against the printed text, ingest through the supervisor's path
//! (a 64 KiB read split into lines, appended, flushed), the first screen of
//! a fresh reader at either end and in the middle, and searches over the
//! whole log. The block format at `LOG_FORMAT_LINES` lines (default
//! 100,000,000), the plain format (the one before) at
//! `LOG_FORMAT_PLAIN_LINES` (default 10,000,000; 0 leaves it out), in
//! `LOG_FORMAT_DIR` (default target/bench/log-format). First, the
//! sustained ingest: `LOG_FORMAT_INGEST_LINES` (default 20,000,000) lines
//! read from memory, so nothing but the store's own work is timed, of
//! the corpus and of short lines. Then searches over `LOG_FORMAT_SHORT_LINES`
//! (default 100,000,000; 0 leaves it out) short lines. Run with
//! `bench/log-format.sh`; figures in docs/measurements.md.

mod corpus;

use std::ops::ControlFlow;
use std::path::Path;
use std::time::{Duration, Instant};

use jobdeck_store::logs::{LinePattern, LineSplitter, LogStore, LogWriter, Stream};

/// Lines of one screen of the log viewer.
const SCREEN: u64 = 200;
/// What one pipe read hands the supervisor.
const READ: usize = 64 * 1024;

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.replace('_', "").parse().ok()).unwrap_or(default)
}

struct Filled {
    lines: u64,
    text_bytes: u64,
    ingest: Duration,
}

/// Writes `lines` lines of the corpus as the supervisor would; only the
/// splitting, appending and flushing are timed, not the generating.
fn fill(store: &LogStore, job: &str, lines: u64, plain: bool) -> Filled {
    let (log, idx) = store.paths(job, 0, 0);
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    if plain {
        std::fs::File::create(&log).unwrap();
    }
    let mut writer = LogWriter::create(&log, &idx).unwrap();
    let mut corpus = corpus::Corpus::new(corpus::SEED);
    let mut splitter = LineSplitter::default();
    let mut chunk: Vec<u8> = Vec::with_capacity(READ + 4096);
    let (mut written, mut text_bytes, mut ingest) = (0u64, 0u64, Duration::ZERO);
    let mut next_report = 10_000_000;
    while written < lines {
        chunk.clear();
        let mut time = 0;
        while chunk.len() < READ && written < lines {
            time = corpus.line(&mut chunk);
            chunk.push(b'\n');
            written += 1;
        }
        text_bytes += chunk.len() as u64;
        let started = Instant::now();
        splitter.feed(&chunk, |line| writer.append(Stream::Stdout, time, line).unwrap());
        writer.flush().unwrap();
        ingest += started.elapsed();
        if written >= next_report {
            eprintln!("  {written} lines");
            next_report += 10_000_000;
        }
    }
    let started = Instant::now();
    writer.finish().unwrap();
    ingest += started.elapsed();
    Filled { lines: written, text_bytes, ingest }
}

/// Seconds of CPU the calling thread and the whole process have used
/// (utime + stime of `/proc/thread-self/stat` and `/proc/self/stat`).
fn cpu_seconds() -> (f64, f64) {
    fn of(path: &str) -> f64 {
        let stat = std::fs::read_to_string(path).unwrap();
        // The fields after the command's closing parenthesis; utime and
        // stime are the 14th and 15th of the whole line.
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
        ticks / 100.0
    }
    (of("/proc/thread-self/stat"), of("/proc/self/stat"))
}

/// Pipe reads of `pool_lines` lines made by `line`, held in memory.
fn pool_of(pool_lines: u64, mut line: impl FnMut(&mut Vec<u8>) -> i64) -> Vec<(Vec<u8>, i64)> {
    let mut pool = Vec::new();
    let mut made = 0;
    while made < pool_lines {
        let mut chunk = Vec::with_capacity(READ + 4096);
        let mut time = 0;
        while chunk.len() < READ && made < pool_lines {
            time = line(&mut chunk);
            chunk.push(b'\n');
            made += 1;
        }
        pool.push((chunk, time));
    }
    pool
}

/// The store's sustained ingest: `lines` lines fed from `pool` (read again
/// from its start when it runs out), from the first read to the last
/// block sealed, with the CPU the writer's thread and the sealing threads
/// used.
fn sustained_ingest(store: &LogStore, name: &str, pool: &[(Vec<u8>, i64)], lines: u64) {
    let pool_lines: u64 = pool.iter().map(|(chunk, _)| lines_in(chunk)).sum();
    let (log, idx) = store.paths(name, 0, 0);
    let mut writer = LogWriter::create(&log, &idx).unwrap();
    let mut splitter = LineSplitter::default();
    let (mut written, mut text_bytes) = (0u64, 0u64);
    let (thread_before, process_before) = cpu_seconds();
    let started = Instant::now();
    'feed: loop {
        for (chunk, time) in pool {
            splitter.feed(chunk, |line| {
                writer.append(Stream::Stdout, *time, line).unwrap();
                written += 1;
            });
            writer.flush().unwrap();
            text_bytes += chunk.len() as u64;
            if written >= lines {
                break 'feed;
            }
        }
    }
    writer.finish().unwrap();
    let seconds = started.elapsed().as_secs_f64();
    let (thread_after, process_after) = cpu_seconds();
    let writer_cpu = thread_after - thread_before;
    let sealing_cpu = process_after - process_before - writer_cpu;
    println!(
        "{name}: {written} lines ({:.1} bytes a line; a pool of {pool_lines} read again) in {seconds:.2} s: \
         {:.2} M lines/s, {:.0} MB/s of text; CPU: the writer {writer_cpu:.2} s, sealing {sealing_cpu:.2} s",
        text_bytes as f64 / written as f64,
        written as f64 / seconds / 1e6,
        text_bytes as f64 / seconds / 1e6,
    );
    store.remove_job(name).unwrap();
}

fn lines_in(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&byte| byte == b'\n').count() as u64
}

fn directory_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir).unwrap().map(|entry| entry.unwrap().metadata().unwrap().len()).sum()
}

/// p50 and p99 in milliseconds of `runs` calls.
fn percentiles(runs: usize, mut call: impl FnMut(usize)) -> (f64, f64) {
    let mut times: Vec<f64> = (0..runs)
        .map(|run| {
            let started = Instant::now();
            call(run);
            started.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (times[runs / 2], times[(runs * 99 / 100).min(runs - 1)])
}

fn measure(name: &str, store: &LogStore, job: &str, plain: bool, lines: u64) {
    eprintln!("{name}: writing {lines} lines");
    let filled = fill(store, job, lines, plain);
    let disk = directory_bytes(&store.job_dir(job));
    let text_mb = filled.text_bytes as f64 / 1e6;
    println!("## {name} format, {} lines", filled.lines);
    println!(
        "text {:.1} MB ({:.1} bytes a line); on disk {:.1} MB = {:.3} of the text",
        text_mb,
        filled.text_bytes as f64 / filled.lines as f64,
        disk as f64 / 1e6,
        disk as f64 / filled.text_bytes as f64
    );
    println!(
        "ingest {:.2} s: {:.2} M lines/s, {:.0} MB/s of text",
        filled.ingest.as_secs_f64(),
        filled.lines as f64 / filled.ingest.as_secs_f64() / 1e6,
        text_mb / filled.ingest.as_secs_f64()
    );

    let open = || store.open(job, 0, 0).unwrap().unwrap();
    let total = open().line_count().unwrap();
    assert_eq!(total, filled.lines, "every line stored");
    let (p50, p99) = percentiles(50, |_| {
        let mut reader = open();
        let count = reader.line_count().unwrap();
        assert_eq!(reader.lines(count - SCREEN + 1, count).unwrap().len() as u64, SCREEN);
    });
    println!("first screen, newest {SCREEN} lines (open, count, read): p50 {p50:.2} ms, p99 {p99:.2} ms");
    let (p50, p99) = percentiles(50, |_| {
        let mut reader = open();
        reader.line_count().unwrap();
        assert_eq!(reader.lines(1, SCREEN).unwrap().len() as u64, SCREEN);
    });
    println!("first screen, oldest {SCREEN} lines: p50 {p50:.2} ms, p99 {p99:.2} ms");
    let mut draw = corpus::Draw::new(7);
    let (p50, p99) = percentiles(50, |_| {
        let mut reader = open();
        let count = reader.line_count().unwrap();
        let from = 1 + draw.below(count - SCREEN);
        assert_eq!(reader.lines(from, from + SCREEN - 1).unwrap().len() as u64, SCREEN);
    });
    println!("a screen anywhere (a permalink): p50 {p50:.2} ms, p99 {p99:.2} ms");

    for (what, pattern, case_insensitive) in [
        ("a text in no line", "no such line anywhere", false),
        ("a rare text, any case", "gpu has fallen off the bus", true),
        ("a common text, any case", "watchdog caught collective operation timeout", true),
        ("a regex with a text", r"loss 3\.39\d\d \| lr 2\.9\d\de-4", false),
        ("a regex without one", r"[0-9]{6}\.[0-9] tokens", false),
    ] {
        let regex = LinePattern::compile(pattern, true, case_insensitive).unwrap();
        let started = Instant::now();
        let (_, matches, truncated) = open().search(&regex, 1000).unwrap();
        println!(
            "search for {what} ({pattern:?}): {:.2} s, {} matches{}",
            started.elapsed().as_secs_f64(),
            matches.len(),
            if truncated { " (the limit)" } else { "" }
        );
    }
    let started = Instant::now();
    open().visit(1, |_, _, _, _| ControlFlow::Continue(())).unwrap();
    println!("reading every line in order: {:.2} s", started.elapsed().as_secs_f64());
    println!();
}

/// Searches over a log of `lines` short lines (`line 000000001`, as in
/// the issue's own example, 15 bytes a line with the newline): what a
/// search costs where there are many lines to match and little text.
fn short_line_searches(store: &LogStore, lines: u64) {
    println!("## Searches over {lines} short lines");
    let (log, idx) = store.paths("short", 0, 0);
    let mut writer = LogWriter::create(&log, &idx).unwrap();
    let mut line = Vec::new();
    for number in 1..=lines {
        line.clear();
        line.extend_from_slice(b"line ");
        line.extend_from_slice(format!("{number:09}").as_bytes());
        writer.append(Stream::Stdout, 1_795_000_000_000 + (number / 1000) as i64, &line).unwrap();
        if number % 4096 == 0 {
            writer.flush().unwrap();
        }
    }
    writer.finish().unwrap();
    for (what, pattern) in [
        ("a text in no line", "no such line anywhere"),
        ("one number", "line 012345678"),
        ("a regex whose text is in every block, 9 matches", r"[1-9]9999999$"),
        ("a regex with no text, no match", r"[a-z] [0-9]{3}[a-z]"),
    ] {
        let regex = LinePattern::compile(pattern, true, false).unwrap();
        let started = Instant::now();
        let (count, matches, truncated) = store.open("short", 0, 0).unwrap().unwrap().search(&regex, 1000).unwrap();
        assert_eq!(count, lines);
        println!(
            "search for {what} ({pattern:?}): {:.2} s, {} matches{}",
            started.elapsed().as_secs_f64(),
            matches.len(),
            if truncated { " (the limit)" } else { "" }
        );
    }
    store.remove_job("short").unwrap();
    println!();
}

fn main() {
    let lines = env_number("LOG_FORMAT_LINES", 100_000_000);
    let plain_lines = env_number("LOG_FORMAT_PLAIN_LINES", 10_000_000);
    let dir = std::env::var("LOG_FORMAT_DIR").unwrap_or_else(|_| "target/bench/log-format".into());
    let _ = std::fs::remove_dir_all(&dir);
    let store = LogStore::new(Path::new(&dir));
    println!("# The log format on generated training output (seed {})\n", corpus::SEED);
    let ingest_lines = env_number("LOG_FORMAT_INGEST_LINES", 20_000_000);
    if ingest_lines > 0 {
        println!("## Sustained ingest, from memory");
        let mut corpus = corpus::Corpus::new(corpus::SEED);
        sustained_ingest(&store, "ingest-corpus", &pool_of(2_000_000, |out| corpus.line(out)), ingest_lines);
        // Lines as short as those of the issue's own example (a
        // 10,000,000-line log of about 129 MB of text).
        let mut number = 0u64;
        let short = pool_of(10_000_000, |out| {
            number += 1;
            out.extend_from_slice(format!("line {number:07}").as_bytes());
            1_795_000_000_000 + (number / 1000) as i64
        });
        sustained_ingest(&store, "ingest-short", &short, ingest_lines);
        println!();
    }
    let short_lines = env_number("LOG_FORMAT_SHORT_LINES", 100_000_000);
    if short_lines > 0 {
        short_line_searches(&store, short_lines);
    }
    if plain_lines > 0 {
        measure("plain", &store, "plain", true, plain_lines);
        store.remove_job("plain").unwrap();
    }
    if lines > 0 {
        measure("block", &store, "blocks", false, lines);
    }
    // LOG_FORMAT_KEEP=1 keeps the block log for a look (or for zstd -b).
    if std::env::var_os("LOG_FORMAT_KEEP").is_none() {
        store.remove_job("blocks").unwrap();
    }
}
