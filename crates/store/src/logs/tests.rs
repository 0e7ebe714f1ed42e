use std::io::Write;
use std::ops::ControlFlow;

use proptest::prelude::*;

use super::*;

fn store() -> (tempfile::TempDir, LogStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = LogStore::new(dir.path());
    (dir, store)
}

/// Which format a test writes: every log feature is checked on both.
#[derive(Debug, Clone, Copy)]
enum Format {
    Blocks,
    Plain,
}

const FORMATS: [Format; 2] = [Format::Blocks, Format::Plain];

/// A writer of job-1's first attempt in `format`. A plain log is one whose
/// `.log` exists before the writer does: what an upgrade finds.
fn writer(store: &LogStore, format: Format) -> LogWriter {
    let (log, idx) = store.paths("job-1", 0, 0);
    if let Format::Plain = format {
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        std::fs::OpenOptions::new().create(true).append(true).open(&log).unwrap();
    }
    LogWriter::create(&log, &idx).unwrap()
}

fn write(store: &LogStore, format: Format, lines: &[(Stream, &str)]) {
    let mut writer = writer(store, format);
    for (i, (stream, text)) in lines.iter().enumerate() {
        writer.append(*stream, 1000 + i as i64, text.as_bytes()).unwrap();
    }
    writer.flush().unwrap();
}

fn open(store: &LogStore) -> LogReader {
    store.open("job-1", 0, 0).unwrap().unwrap()
}

fn texts(reader: &mut LogReader, from: u64, to: u64) -> Vec<String> {
    reader.lines(from, to).unwrap().into_iter().map(|l| l.text).collect()
}

#[test]
fn lines_are_read_back_by_number_with_time_and_stream() {
    for format in FORMATS {
        let (_dir, store) = store();
        write(
            &store,
            format,
            &[
                (Stream::Stdout, "first"),
                (Stream::Stderr, "second \u{1b}[31mred"),
                (Stream::Stdout, ""),
                (Stream::Stdout, "<b>4</b>"),
            ],
        );
        let mut reader = open(&store);
        assert!(matches!(
            (format, &reader),
            (Format::Blocks, LogReader::Blocks(_)) | (Format::Plain, LogReader::Plain(_))
        ));
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
}

#[test]
fn a_reopened_writer_continues_the_same_log_in_its_format() {
    for format in FORMATS {
        let (_dir, store) = store();
        write(&store, format, &[(Stream::Stdout, "a")]);
        // Reopened as a resumed copy does: no format is forced.
        let (log, idx) = store.paths("job-1", 0, 0);
        let mut again = LogWriter::create(&log, &idx).unwrap();
        again.append(Stream::Stdout, 2, b"b").unwrap();
        drop(again);
        let mut reader = open(&store);
        assert_eq!(texts(&mut reader, 1, 2), ["a", "b"]);
        let plain = matches!(reader, LogReader::Plain(_));
        assert_eq!(plain, matches!(format, Format::Plain), "{format:?}");
        assert_eq!(log.with_extension("tail").exists(), !plain);
    }
}

#[test]
fn streaming_reads_continue_from_the_line_after_the_last_and_see_new_lines() {
    for format in FORMATS {
        let (_dir, store) = store();
        let mut writer = writer(&store, format);
        for text in ["one", "two", "three"] {
            writer.append(Stream::Stdout, 1, text.as_bytes()).unwrap();
        }
        writer.flush().unwrap();
        let mut reader = open(&store);
        // At least one line per read, however small the budget.
        let (lines, next) = reader.read_from(1, 1).unwrap();
        assert_eq!((lines.iter().map(|l| l.2.as_str()).collect::<Vec<_>>(), next), (vec!["one"], 2));
        let (lines, next) = reader.read_from(next, 1 << 20).unwrap();
        assert_eq!((lines.iter().map(|l| l.2.as_str()).collect::<Vec<_>>(), next), (vec!["two", "three"], 4));
        let (more, again) = reader.read_from(next, 1 << 20).unwrap();
        assert!(more.is_empty());
        assert_eq!(again, next);
        // The same reader sees what is flushed later.
        writer.append(Stream::Stderr, 2, b"four").unwrap();
        writer.flush().unwrap();
        let (lines, next) = reader.read_from(next, 1 << 20).unwrap();
        assert_eq!((lines, next), (vec![(2, Stream::Stderr, "four".to_string())], 5));
    }
}

#[test]
fn half_a_line_left_by_a_crash_is_not_read_and_a_reopened_writer_drops_it() {
    for format in FORMATS {
        let (_dir, store) = store();
        write(&store, format, &[(Stream::Stdout, "one"), (Stream::Stdout, "two")]);
        let (log, idx) = store.paths("job-1", 0, 0);
        let written = match format {
            Format::Blocks => log.with_extension("tail"),
            Format::Plain => log.clone(),
        };
        std::fs::OpenOptions::new().append(true).open(&written).unwrap().write_all(b"1003 o thr").unwrap();
        let mut reader = open(&store);
        assert_eq!(reader.line_count().unwrap(), 2);
        assert_eq!(texts(&mut reader, 1, 10), ["one", "two"]);
        if let Format::Blocks = format {
            let mut writer = LogWriter::create(&log, &idx).unwrap();
            writer.append(Stream::Stdout, 4, b"three").unwrap();
            drop(writer);
            assert_eq!(texts(&mut open(&store), 1, 10), ["one", "two", "three"]);
        }
    }
}

#[test]
fn long_lines_are_split_and_invalid_utf8_is_replaced() {
    for format in FORMATS {
        let (_dir, store) = store();
        let long = "x".repeat(MAX_LINE + 10);
        let mut writer = writer(&store, format);
        writer.append(Stream::Stdout, 1, long.as_bytes()).unwrap();
        writer.append(Stream::Stdout, 2, b"bad \xff byte").unwrap();
        writer.flush().unwrap();
        let mut reader = open(&store);
        assert_eq!(reader.line_count().unwrap(), 3);
        let lines = reader.lines(1, 3).unwrap();
        assert_eq!(lines[0].text.len(), MAX_LINE);
        assert_eq!(lines[1].text.len(), 10);
        assert_eq!(lines[2].text, "bad \u{fffd} byte");
    }
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
fn visiting_reads_every_line_across_blocks_and_reads() {
    for format in FORMATS {
        let (_dir, store) = store();
        let mut writer = writer(&store, format);
        // Enough lines to cross several 1 MiB blocks and reads.
        for i in 1..=40_000u64 {
            let stream = if i % 7 == 0 { Stream::Stderr } else { Stream::Stdout };
            writer.append(stream, i as i64, format!("line {i} {}", "x".repeat((i % 90) as usize)).as_bytes()).unwrap();
        }
        writer.flush().unwrap();
        drop(writer);
        let mut reader = open(&store);
        if let LogReader::Blocks(_) = reader {
            assert!(store.paths("job-1", 0, 0).0.with_extension("zidx").metadata().unwrap().len() >= 48 * 2);
        }
        let mut seen = 0u64;
        let total = reader
            .visit(5, |number, time, stream, text| {
                assert_eq!(time, number as i64);
                assert_eq!(stream == Stream::Stderr, number % 7 == 0);
                assert!(text.starts_with(format!("line {number} ").as_bytes()));
                seen += 1;
                ControlFlow::Continue(())
            })
            .unwrap();
        assert_eq!((total, seen), (40_000, 39_996));
        let mut first = Vec::new();
        reader
            .visit(1, |number, _, _, _| {
                first.push(number);
                if number == 3 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .unwrap();
        assert_eq!(first, [1, 2, 3]);
        assert_eq!(reader.visit(40_001, |_, _, _, _| panic!("no line is past the end")).unwrap(), 40_000);
    }
}

#[test]
fn searching_finds_line_numbers_and_stops_at_the_limit() {
    for format in FORMATS {
        let (_dir, store) = store();
        write(
            &store,
            format,
            &[
                (Stream::Stdout, "alpha"),
                (Stream::Stdout, "Beta"),
                (Stream::Stderr, "beta gamma"),
                (Stream::Stdout, "1003 o beta"),
            ],
        );
        let mut reader = open(&store);
        let exact = LinePattern::compile("beta", false, false).unwrap();
        assert_eq!(reader.search(&exact, 10).unwrap(), (4, vec![3, 4], false));
        let any_case = LinePattern::compile("beta", false, true).unwrap();
        assert_eq!(reader.search(&any_case, 2).unwrap(), (4, vec![2, 3], true));
        // Patterns see the text only, not the stored time and stream.
        let anchored = LinePattern::compile("^b", true, false).unwrap();
        assert_eq!(reader.search(&anchored, 10).unwrap().1, vec![3]);
    }
}

#[test]
fn a_flushed_line_is_readable_at_once_and_never_half() {
    // Many short lines between flushes, and reads between appends: what a
    // reader counts it can always read, in either format.
    for format in FORMATS {
        let (_dir, store) = store();
        let mut writer = writer(&store, format);
        for i in 0..5_000 {
            writer.append(Stream::Stdout, i, b"y").unwrap();
            if i % 3 == 0 {
                writer.flush().unwrap();
                assert_eq!(open(&store).line_count().unwrap(), i as u64 + 1);
            }
            let mut reader = open(&store);
            let count = reader.line_count().unwrap();
            if count > 0 {
                assert_eq!(reader.lines(count, count).unwrap().len(), 1);
            }
        }
        writer.flush().unwrap();
        assert_eq!(open(&store).line_count().unwrap(), 5_000);
    }
}

#[test]
fn a_reader_open_across_seals_sees_every_line_once() {
    let (_dir, store) = store();
    let mut writer = writer(&store, Format::Blocks);
    writer.append(Stream::Stdout, 1, b"first").unwrap();
    writer.flush().unwrap();
    let mut reader = open(&store);
    assert_eq!(reader.line_count().unwrap(), 1);
    // Two blocks sealed and a third begun while the reader is open.
    let line = "z".repeat(999);
    let mut written = 1u64;
    while store.paths("job-1", 0, 0).0.with_extension("zidx").metadata().unwrap().len() < 2 * 48 {
        writer.append(Stream::Stdout, 2, line.as_bytes()).unwrap();
        written += 1;
    }
    writer.append(Stream::Stdout, 3, b"last").unwrap();
    writer.flush().unwrap();
    written += 1;
    assert_eq!(reader.line_count().unwrap(), written);
    let lines = reader.lines(1, u64::MAX).unwrap();
    assert_eq!(lines.len() as u64, written);
    assert!(lines.iter().enumerate().all(|(i, l)| l.number == i as u64 + 1));
    assert_eq!((lines[0].text.as_str(), lines.last().unwrap().text.as_str()), ("first", "last"));
}

#[test]
fn a_writer_reopened_after_a_crash_between_its_steps_loses_and_repeats_nothing() {
    let (_dir, store) = store();
    let (log, idx) = store.paths("job-1", 0, 0);
    let (zst, zidx, tail) = (log.with_extension("zst"), log.with_extension("zidx"), log.with_extension("tail"));
    let line = |i: u32| format!("line {i:06} {}", "w".repeat(200));
    let mut writer = writer(&store, Format::Blocks);
    let mut i = 0u32;
    // Up to just before the first seal, with the tail as it stands then.
    while writer.stored + 2 * 230 < blocks::BLOCK_BYTES as u64 {
        writer.append(Stream::Stdout, i64::from(i), line(i).as_bytes()).unwrap();
        i += 1;
    }
    writer.flush().unwrap();
    let tail_before_seal = std::fs::read(&tail).unwrap();
    while zidx.metadata().unwrap().len() == 0 {
        writer.append(Stream::Stdout, i64::from(i), line(i).as_bytes()).unwrap();
        i += 1;
    }
    writer.flush().unwrap();
    drop(writer);
    // The crash came after the record, before the new tail: the old tail
    // holds lines the record holds too. And a frame half written after.
    std::fs::write(&tail, &tail_before_seal).unwrap();
    std::fs::OpenOptions::new().append(true).open(&zst).unwrap().write_all(b"\x28\xb5\x2f\xfd half").unwrap();
    std::fs::OpenOptions::new().append(true).open(&zidx).unwrap().write_all(&[7u8; 20]).unwrap();
    let expected: Vec<String> = (0..i).map(line).collect();
    // A reader sees each line once before the writer comes back.
    let seen = texts(&mut open(&store), 1, u64::MAX);
    assert_eq!((seen.len(), seen == expected), (expected.len(), true));
    let mut writer = LogWriter::create(&log, &idx).unwrap();
    writer.append(Stream::Stdout, 99, b"after").unwrap();
    writer.finish().unwrap();
    drop(writer);
    let mut all = expected.clone();
    all.push("after".into());
    let seen = texts(&mut open(&store), 1, u64::MAX);
    assert_eq!((seen.len(), seen == all), (all.len(), true));
    assert_eq!(zidx.metadata().unwrap().len() % 48, 0);
}

/// Copies job-1's log files into a new store: what a crash would leave.
fn crash_copy(dir: &Path) -> (tempfile::TempDir, LogStore) {
    let (crashed_dir, crashed) = store();
    std::fs::create_dir_all(crashed.job_dir("job-1")).unwrap();
    for entry in std::fs::read_dir(dir.join("logs/job-1")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), crashed.job_dir("job-1").join(entry.file_name())).unwrap();
    }
    (crashed_dir, crashed)
}

/// A writer reopened on `crashed` continues it with `after`; answers
/// every line then.
fn continue_after_crash(crashed: &LogStore) -> Vec<String> {
    let (log, idx) = crashed.paths("job-1", 0, 0);
    let mut writer = LogWriter::create(&log, &idx).unwrap();
    writer.append(Stream::Stdout, 99, b"after").unwrap();
    writer.finish().unwrap();
    drop(writer);
    texts(&mut crashed.open("job-1", 0, 0).unwrap().unwrap(), 1, u64::MAX)
}

#[test]
fn lines_of_two_blocks_still_compressing_are_read_once_and_survive_a_crash() {
    let (dir, store) = store();
    let zidx = store.paths("job-1", 0, 0).0.with_extension("zidx");
    let line = |i: u32| format!("line {i:06} {}", "c".repeat(300));
    let mut writer = writer(&store, Format::Blocks);
    let gate = std::sync::Arc::new(blocks::SealingGate::default());
    match &mut writer.format {
        WriterFormat::Blocks(blocks) => blocks.gate = Some(gate.clone()),
        WriterFormat::Plain(_) => unreachable!("a new log is written in blocks"),
    }
    // A failed assertion opens the gate before the writer's drop waits for
    // its sealing threads.
    struct OpenOnDrop(std::sync::Arc<blocks::SealingGate>);
    impl Drop for OpenOnDrop {
        fn drop(&mut self) {
            self.0.let_through(usize::MAX / 2);
        }
    }
    let _open_on_drop = OpenOnDrop(gate.clone());
    // Two blocks handed to sealing threads that wait at the gate, and a
    // third begun.
    let mut i = 0u32;
    while writer.stored < 2 * blocks::BLOCK_BYTES as u64 + 50_000 {
        writer.append(Stream::Stdout, i64::from(i), line(i).as_bytes()).unwrap();
        i += 1;
    }
    writer.flush().unwrap();
    let expected: Vec<String> = (0..i).map(line).collect();
    let mut all = expected.clone();
    all.push("after".into());
    assert_eq!(zidx.metadata().unwrap().len(), 0, "nothing recorded yet");
    assert!(zidx.with_extension("tail").metadata().unwrap().len() > 2 * blocks::BLOCK_BYTES as u64);
    assert_eq!(texts(&mut open(&store), 1, u64::MAX), expected);
    let (_both_waiting_dir, both_waiting) = crash_copy(dir.path());
    let mut reader_from_before = open(&store);

    // The first block recorded while the second still waits: the new tail
    // holds the second's lines and the third's.
    gate.let_through(1);
    while zidx.metadata().unwrap().len() == 0 {
        writer.flush().unwrap();
    }
    let seen = texts(&mut open(&store), 1, u64::MAX);
    let first_difference = seen.iter().zip(&expected).position(|(a, b)| a != b);
    assert_eq!((seen.len(), first_difference), (expected.len(), None), "with one block recorded");
    let (_one_waiting_dir, one_waiting) = crash_copy(dir.path());

    gate.let_through(usize::MAX / 2);
    writer.append(Stream::Stdout, 99, b"after").unwrap();
    writer.finish().unwrap();
    drop(writer);
    assert_eq!(texts(&mut reader_from_before, 1, u64::MAX), all, "a reader open across the seals");
    assert_eq!(texts(&mut open(&store), 1, u64::MAX), all);
    // A writer reopened on the files of either moment loses nothing.
    assert_eq!(continue_after_crash(&both_waiting), all);
    assert_eq!(continue_after_crash(&one_waiting), all);
}

/// Bytes a filter must read alike both ways: ASCII in both cases, the two
/// letters that fold into ASCII, other text outside ASCII, bytes that are
/// not UTF-8 at all, and newlines.
fn filter_bytes() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 1..4),
            Just(b"Ab".to_vec()),
            Just(b"ZaZ".to_vec()),
            Just("ſ".as_bytes().to_vec()),
            Just("\u{212a}".as_bytes().to_vec()),
            Just("é█".as_bytes().to_vec()),
            Just(b"\n".to_vec()),
            Just(b"loss 2.1691 | lr".to_vec()),
            Just(b"@[`{".to_vec()),
        ],
        0..200,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// The filter made fold-first sets the bits the byte-at-a-time one
    /// (the one earlier releases sealed blocks with) sets, block after
    /// block with the same scratch, also where a block's text crosses from
    /// one folded piece into the next (`shift` bytes before the end of the
    /// first).
    #[test]
    fn the_fold_first_filter_is_the_bytewise_one(
        blocks in proptest::collection::vec(filter_bytes(), 1..4),
        shift in 0usize..12,
    ) {
        let mut scratch = search::FilterScratch::default();
        for block in &blocks {
            prop_assert_eq!(search::filter_of(block, &mut scratch), search::filter_of_bytewise(block));
            let mut crossing = vec![b'P'; search::FOLD_CHUNK - shift];
            crossing.extend_from_slice(block);
            prop_assert_eq!(search::filter_of(&crossing, &mut scratch), search::filter_of_bytewise(&crossing));
        }
    }
}

#[test]
fn a_capped_log_keeps_the_line_that_crosses_its_cap_then_says_so_once_and_keeps_no_more() {
    for format in FORMATS {
        let (_dir, store) = store();
        let (log, idx) = store.paths("job-1", 0, 0);
        // Each stored line: "1 o " and ten characters and a newline, 15 bytes.
        let mut writer = writer(&store, format).with_cap(Some(40));
        for i in 0..10 {
            writer.append(Stream::Stdout, 1, format!("line {i:05}").as_bytes()).unwrap();
        }
        assert!(writer.is_capped());
        drop(writer);
        assert_eq!(texts(&mut open(&store), 1, 100), ["line 00000", "line 00001", "line 00002", &cap_marker(40)]);
        // Reopened past its cap (a resumed copy): no second marker.
        let mut again = LogWriter::create(&log, &idx).unwrap().with_cap(Some(40));
        again.append(Stream::Stdout, 2, b"later").unwrap();
        drop(again);
        assert_eq!(open(&store).line_count().unwrap(), 4);
    }
}

#[test]
fn a_missing_log_opens_as_none_and_removal_is_idempotent() {
    let (_dir, store) = store();
    assert!(store.open("nope", 0, 0).unwrap().is_none());
    store.remove_job("nope").unwrap();
}

/// One generated line: any bytes (invalid UTF-8, carriage returns,
/// newlines inside), sometimes longer than [`MAX_LINE`].
fn any_line() -> impl Strategy<Value = (bool, Vec<u8>)> {
    let short = proptest::collection::vec(any::<u8>(), 0..120);
    let long = (0usize..4, any::<u8>()).prop_map(|(extra, byte)| vec![byte; MAX_LINE - 2 + extra * 3]);
    let progress = (1usize..6).prop_map(|n| (0..n).map(|i| format!("{i}%|##  |\r")).collect::<String>().into_bytes());
    (any::<bool>(), prop_oneof![8 => short, 1 => long, 2 => progress])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Whatever lines come, in whatever flushes: each format gives back the
    /// lines the writer's rules make of them, by range, by visit, by stream
    /// and by search.
    #[test]
    fn every_read_gives_back_what_was_written(
        lines in proptest::collection::vec(any_line(), 1..400),
        flush_every in 1usize..50,
        range in (0u64..600, 0u64..600),
        padding in 0usize..6_000,
    ) {
        for format in FORMATS {
            let (_dir, store) = store();
            let mut writer = writer(&store, format);
            let mut expected: Vec<(i64, Stream, String)> = Vec::new();
            // Padding makes some logs cross block boundaries.
            for (i, (stderr, bytes)) in lines.iter().enumerate() {
                let stream = if *stderr { Stream::Stderr } else { Stream::Stdout };
                let mut text = bytes.clone();
                if i % 2 == 0 {
                    text.extend(std::iter::repeat_n(b'p', padding));
                }
                writer.append(stream, i as i64 * 3 - 50, &text).unwrap();
                let lossy = String::from_utf8_lossy(&text).into_owned();
                for piece in stored_pieces(&lossy) {
                    expected.push((i as i64 * 3 - 50, stream, piece.replace('\n', " ")));
                }
                if i % flush_every == 0 {
                    writer.flush().unwrap();
                }
            }
            if range.0 % 2 == 0 {
                writer.finish().unwrap();
            }
            drop(writer);
            let mut reader = open(&store);
            prop_assert_eq!(reader.line_count().unwrap(), expected.len() as u64);
            let (from, to) = (range.0.min(range.1), range.0.max(range.1));
            let got: Vec<(i64, Stream, String)> =
                reader.lines(from, to).unwrap().into_iter().map(|l| (l.time, l.stream, l.text)).collect();
            let want: Vec<_> = expected.iter().skip(from.max(1) as usize - 1).take((to + 1).saturating_sub(from.max(1)) as usize).cloned().collect();
            prop_assert_eq!(got, want);
            let mut visited = Vec::new();
            reader.visit(from, |number, time, stream, text| {
                visited.push((number, time, stream, String::from_utf8(text.to_vec()).unwrap()));
                ControlFlow::Continue(())
            }).unwrap();
            let want: Vec<_> = expected.iter().enumerate().skip(from.max(1) as usize - 1)
                .map(|(i, (time, stream, text))| (i as u64 + 1, *time, *stream, text.clone())).collect();
            prop_assert_eq!(visited, want);
            let mut streamed = Vec::new();
            let mut next = 1;
            loop {
                let (chunk, after) = reader.read_from(next, 70_000).unwrap();
                if chunk.is_empty() { break; }
                streamed.extend(chunk);
                next = after;
            }
            prop_assert_eq!(&streamed, &expected);
            let pattern = LinePattern::compile("\r", false, false).unwrap();
            let want: Vec<u64> = expected.iter().enumerate().filter(|(_, l)| l.2.contains('\r')).map(|(i, _)| i as u64 + 1).collect();
            prop_assert_eq!(reader.search(&pattern, usize::MAX).unwrap().1, want);
        }
    }
}

#[test]
fn a_search_reads_only_the_blocks_that_may_hold_its_text() {
    let (_dir, store) = store();
    let mut writer = writer(&store, Format::Blocks);
    // About 40 blocks of lines; one line in one block says something else.
    for i in 0..160_000u32 {
        let text = if i == 123_456 {
            "Watchdog caught collective operation timeout".to_string()
        } else {
            format!("step {i} loss {:.3} {}", f64::from(i % 997) / 331.0, "x".repeat(200))
        };
        writer.append(Stream::Stdout, i64::from(i), text.as_bytes()).unwrap();
    }
    writer.finish().unwrap();
    drop(writer);
    let LogReader::Blocks(mut reader) = open(&store) else { panic!("a block log") };
    reader.line_count().unwrap();
    let blocks = reader.records_read();
    assert!(blocks.0 >= 30, "{blocks:?}");
    let rare = LinePattern::compile("WATCHDOG caught", false, true).unwrap();
    let (_, found, _) = reader.search(&rare, 10).unwrap();
    assert_eq!(found, [123_457]);
    let decompressed = reader.records_read().1 - blocks.1;
    assert!(decompressed <= 2, "one block (and rarely one the filter lets through): {decompressed}");
    // Blocks read on several threads answer in order, up to the limit.
    let step = LinePattern::compile("step", false, false).unwrap();
    let (total, common, truncated) = reader.search(&step, 20_000).unwrap();
    assert_eq!((total, common.len(), truncated), (160_000, 20_000, true));
    assert!(common.iter().enumerate().all(|(i, number)| *number == i as u64 + 1));
    // A range of lines can be ruled out the same way (Lepton's `q`).
    assert!(!reader.may_hold(1, 100_000, &rare).unwrap());
    assert!(reader.may_hold(123_000, 124_000, &rare).unwrap());
    assert!(!reader.may_hold(159_990, 160_000, &absent_anywhere()).unwrap());
    assert!(reader.may_hold(159_990, 160_001, &absent_anywhere()).unwrap(), "past the blocks: no filter says");
    let absent = LinePattern::compile("no such line anywhere", false, false).unwrap();
    let before = reader.records_read().1;
    reader.search(&absent, 10).unwrap();
    assert!(reader.records_read().1 - before <= 2);
    // A pattern with no certain text reads every block.
    let any = LinePattern::compile(r"loss \d\.\d{3} y", true, false).unwrap();
    let before = reader.records_read().1;
    reader.search(&any, 10).unwrap();
    assert_eq!(reader.records_read().1 - before, blocks.0);
}

fn absent_anywhere() -> LinePattern {
    LinePattern::compile("no such line anywhere", false, false).unwrap()
}

#[test]
fn the_text_a_pattern_needs_is_read_conservatively() {
    let trigrams = |pattern: &str, ignore_case: bool| search::required_trigrams(pattern, ignore_case);
    let of = |text: &str| {
        let mut all: Vec<u32> = text
            .as_bytes()
            .windows(3)
            .map(|w| u32::from(w[0]) << 16 | u32::from(w[1]) << 8 | u32::from(w[2]))
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    };
    assert_eq!(trigrams("no such line", false), of("no such line"));
    assert_eq!(trigrams("No Such", true), of("no such"));
    assert_eq!(trigrams("(?i)Watchdog", false), of("watchdog"));
    assert_eq!(trigrams("[Ss]tep", false), of("step"));
    let mut both = of("foo");
    both.extend(of("bar"));
    both.sort_unstable();
    assert_eq!(trigrams(r"foo\d+bar", false), both);
    assert_eq!(trigrams(r"(foo)+", false), of("foo"));
    for nothing in ["ab", "foo|bar", "(foo)?", "[a-z]+", r"\d{5}", "f.o", "", "(unclosed"] {
        assert!(trigrams(nothing, false).is_empty(), "{nothing}");
    }
    // Characters outside ASCII break the text, except the two that fold
    // to ASCII letters.
    assert_eq!(trigrams("ab█cd", false), Vec::<u32>::new());
    assert_eq!(trigrams("(?i)task", false), trigrams("(?i)TASK", false));
}

#[test]
fn the_letters_that_fold_into_ascii_are_found_in_any_case() {
    let (_dir, store) = store();
    let mut writer = writer(&store, Format::Blocks);
    writer.append(Stream::Stdout, 1, "ab\u{212a}c tha\u{17f}k".as_bytes()).unwrap();
    writer.finish().unwrap();
    drop(writer);
    for (text, ignore_case, found) in [
        ("abkc", true, true),
        ("ABKC", true, true),
        ("ab\u{212a}c", false, true),
        ("abkc", false, false),
        ("thask", true, true),
        ("tha\u{17f}k", false, true),
        ("THA\u{17f}K", true, true),
    ] {
        let pattern = LinePattern::compile(text, false, ignore_case).unwrap();
        assert_eq!(open(&store).search(&pattern, 10).unwrap().1.len(), usize::from(found), "{text} {ignore_case}");
    }
}

/// Lines in mixed case with the characters whose case folding is ASCII.
fn mixed_line() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("a"),
            Just("B"),
            Just("s"),
            Just("S"),
            Just("ſ"),
            Just("k"),
            Just("K"),
            Just("\u{212a}"),
            Just(" "),
            Just("█"),
            Just("é"),
            Just("x"),
            Just("1")
        ],
        0..16,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// A search that skips blocks finds exactly what reading every line
    /// with the same pattern finds: the filters never rule out a match.
    #[test]
    fn skipping_blocks_never_loses_a_match(
        lines in proptest::collection::vec(mixed_line(), 1..40),
        pick in (0usize..40, 0usize..16, 3usize..8),
        ignore_case in any::<bool>(),
        as_regex in any::<bool>(),
    ) {
        let (_dir, store) = store();
        let mut writer = writer(&store, Format::Blocks);
        // Each line padded so a block holds a few lines, and few trigrams.
        let padding = "p".repeat(60_000);
        for (i, line) in lines.iter().enumerate() {
            writer.append(Stream::Stdout, i as i64, format!("{line}{padding}{line}").as_bytes()).unwrap();
        }
        writer.finish().unwrap();
        drop(writer);
        // A piece of one of the lines, as typed or as a one-letter class.
        let source: Vec<char> = lines[pick.0 % lines.len()].chars().collect();
        let start = pick.1.min(source.len());
        let piece: String = source[start..(start + pick.2).min(source.len())].iter().collect();
        let text = if as_regex { format!("[{}]{}", piece.chars().next().unwrap_or('a'), piece) } else { piece };
        let pattern = LinePattern::compile(&text, as_regex, ignore_case).unwrap();
        let (_, found, _) = open(&store).search(&pattern, usize::MAX).unwrap();
        let want: Vec<u64> = lines
            .iter()
            .enumerate()
            .filter(|(_, line)| pattern.is_match(format!("{line}{padding}{line}").as_bytes()))
            .map(|(i, _)| i as u64 + 1)
            .collect();
        prop_assert_eq!(found, want, "{:?} ignore case {}", text, ignore_case);
    }
}

#[test]
fn the_first_line_at_a_time_is_found_across_blocks_and_the_tail() {
    for format in FORMATS {
        let (_dir, store) = store();
        let mut writer = writer(&store, format);
        // Times rise by a millisecond every 7 lines, over several blocks,
        // and the last lines stay in the tail.
        let line = "t".repeat(300);
        for i in 0..12_000u32 {
            writer.append(Stream::Stdout, 1_000 + i64::from(i / 7), line.as_bytes()).unwrap();
        }
        writer.flush().unwrap();
        let mut reader = open(&store);
        let times: Vec<i64> = reader.lines(1, u64::MAX).unwrap().iter().map(|l| l.time).collect();
        for millis in [0, 1_000, 1_001, 1_500, 1_714, 2_000, 2_713, 2_714, 9_999] {
            let want = times.iter().position(|t| *t >= millis).map_or(times.len() as u64 + 1, |i| i as u64 + 1);
            assert_eq!(reader.first_at_or_after(millis).unwrap(), want, "{format:?} {millis}");
        }
    }
}

#[test]
fn a_cut_log_ends_with_its_reason_at_the_next_flush_and_keeps_no_more_until_uncut() {
    for format in FORMATS {
        let (_dir, store) = store();
        let mut writer = writer(&store, format);
        writer.append(Stream::Stdout, 1, b"before").unwrap();
        writer.flush().unwrap();
        assert!(!store.is_cut("job-1"));
        store.cut("job-1", "jobdeck: this log is cut here: the budget\n").unwrap();
        assert!(store.is_cut("job-1"));
        // Read in the same pipe read as the flush that finds the cut.
        writer.append(Stream::Stdout, 2, b"same read").unwrap();
        writer.flush().unwrap();
        assert!(writer.is_capped());
        writer.append(Stream::Stdout, 3, b"after").unwrap();
        writer.flush().unwrap();
        drop(writer);
        let lines = open(&store).lines(1, 10).unwrap();
        let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts, ["before", "same read", "jobdeck: this log is cut here: the budget"], "{format:?}");
        assert_eq!(lines[2].stream, Stream::Stderr);
        // The job's next run keeps its lines again.
        store.uncut("job-1").unwrap();
        store.uncut("job-1").unwrap();
        let (log, idx) = store.paths("job-1", 0, 1);
        let mut next = LogWriter::create(&log, &idx).unwrap();
        next.append(Stream::Stdout, 4, b"next run").unwrap();
        next.flush().unwrap();
        assert!(!next.is_capped());
        drop(next);
        assert_eq!(store.open("job-1", 0, 1).unwrap().unwrap().line_count().unwrap(), 1);
        // The cut file is not a log: what the cap counts is unchanged.
        let next_run = store.open("job-1", 0, 1).unwrap().unwrap().byte_len().unwrap();
        assert_eq!(store.stored_bytes("job-1"), open(&store).byte_len().unwrap() + next_run);
    }
}

#[test]
fn a_damaged_record_is_an_error_not_an_allocation() {
    let (_dir, store) = store();
    let mut writer = writer(&store, Format::Blocks);
    writer.append(Stream::Stdout, 1, b"sealed").unwrap();
    writer.finish().unwrap();
    drop(writer);
    let zidx = store.paths("job-1", 0, 0).0.with_extension("zidx");
    let mut record = std::fs::read(&zidx).unwrap();
    // The raw size (bytes 24..28) says 4 GiB less one.
    record[24..28].copy_from_slice(&u32::MAX.to_le_bytes());
    std::fs::write(&zidx, &record).unwrap();
    let error = open(&store).lines(1, 1).unwrap_err();
    assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
    assert!(error.to_string().contains("damaged"), "{error}");
    let pattern = LinePattern::compile("sealed", false, false).unwrap();
    assert_eq!(open(&store).search(&pattern, 1).unwrap_err().kind(), std::io::ErrorKind::InvalidData);
}
