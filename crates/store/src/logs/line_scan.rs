//! Finding the lines a pattern matches in a run of stored lines (a block,
//! the tail) with one pass of a regex over the whole run, rather than one
//! regex search per line.
//!
//! A search per line pays the regex's start for every line, which over a
//! hundred million lines is most of a search's time, and a pattern's
//! literal part (` tokens` in `[0-9]{6}\.[0-9] tokens`) is looked for with
//! SIMD only over a long haystack. The run-wide pattern is the line
//! pattern loosened so that it matches wherever the line pattern matches a
//! line's text, and never across a newline: its assertions (`^`, `$`,
//! `\b`) are dropped, `\n` is taken out of its classes, and a literal
//! holding `\n` (which no line holds) never matches. Each line where the
//! loosened pattern matches is then checked with the line pattern itself,
//! so the lines found are exactly those a search line by line finds
//! (`tests` below, over generated lines and tricky patterns).

use std::ops::ControlFlow;

use regex_automata::meta;
use regex_automata::util::syntax;
use regex_automata::Input;
use regex_syntax::hir::{Capture, Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange, Hir, HirKind};
use regex_syntax::hir::{Literal, Repetition};

use super::{split_stored, visit_stored, LinePattern};

/// Lines checked before the scan asks whether it checks too many.
const CHECKS_BEFORE_COUNTING: u64 = 64;

/// Past one line checked in this many, a run is searched line by line
/// instead: the loosened pattern then matches in most lines (in their
/// times, as `\d{13}` does), and each check would cost a run-wide search
/// on top of the line's own.
const LINES_PER_CHECK: u64 = 4;

/// The loosened pattern of a [`LinePattern`], searched over whole runs.
#[derive(Debug)]
pub(super) struct RunPattern(meta::Regex);

impl RunPattern {
    /// The loosened form of `pattern` (a regex's text, as the line pattern
    /// was compiled from), or `None` when it would match an empty string:
    /// then every line is a candidate and line by line is as fast.
    pub(super) fn new(pattern: &str, ignore_case: bool) -> Option<RunPattern> {
        // The syntax the `regex` crate gives a bytes::Regex, so both
        // patterns read the text alike.
        let config = syntax::Config::new().case_insensitive(ignore_case).utf8(false);
        let loose = loosen(&syntax::parse_with(pattern, &config).ok()?);
        if loose.properties().minimum_len() == Some(0) {
            return None;
        }
        // The line pattern's limits (LinePattern::compile), so a hostile
        // pattern costs no more here than there.
        let limits = meta::Config::new()
            .utf8_empty(false)
            .nfa_size_limit(Some(1 << 20))
            .onepass_size_limit(Some(1 << 20))
            .hybrid_cache_capacity(4 << 20)
            .dfa_size_limit(Some(4 << 20));
        meta::Builder::new().configure(limits).build_from_hir(&loose).ok().map(RunPattern)
    }
}

/// `hir` with its assertions dropped, `\n` out of its classes and its
/// literals holding `\n` made to fail: it matches at least every string
/// without a newline that `hir` matches, and no string with one.
fn loosen(hir: &Hir) -> Hir {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => Hir::empty(),
        HirKind::Literal(Literal(bytes)) if bytes.contains(&b'\n') => Hir::fail(),
        HirKind::Literal(_) => hir.clone(),
        HirKind::Class(Class::Unicode(class)) => {
            let mut class = class.clone();
            class.difference(&ClassUnicode::new([ClassUnicodeRange::new('\n', '\n')]));
            Hir::class(Class::Unicode(class))
        }
        HirKind::Class(Class::Bytes(class)) => {
            let mut class = class.clone();
            class.difference(&ClassBytes::new([ClassBytesRange::new(b'\n', b'\n')]));
            Hir::class(Class::Bytes(class))
        }
        HirKind::Repetition(repetition) => {
            Hir::repetition(Repetition { sub: Box::new(loosen(&repetition.sub)), ..repetition.clone() })
        }
        HirKind::Capture(capture) => Hir::capture(Capture { sub: Box::new(loosen(&capture.sub)), ..capture.clone() }),
        HirKind::Concat(parts) => Hir::concat(parts.iter().map(loosen).collect()),
        HirKind::Alternation(parts) => Hir::alternation(parts.iter().map(loosen).collect()),
    }
}

/// Calls `found` with the number of each line of `stored` (whole stored
/// lines, each ending in `\n`, numbered from `first`) whose text `pattern`
/// matches, in order, until `found` breaks; says whether it did.
pub(super) fn matching_lines(
    pattern: &LinePattern,
    stored: &[u8],
    first: u64,
    found: &mut impl FnMut(u64) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let Some(run) = &pattern.run else { return line_by_line(pattern, stored, first, found) };
    // `at` is where a line starts, `number` that line's number.
    let (mut at, mut number, mut checked) = (0, first, 0);
    while at < stored.len() {
        if checked >= CHECKS_BEFORE_COUNTING && checked * LINES_PER_CHECK > number - first {
            return line_by_line(pattern, &stored[at..], number, found);
        }
        let Some(hit) = run.0.search(&Input::new(stored).range(at..)) else { break };
        let mut start = at;
        for newline in memchr::memchr_iter(b'\n', &stored[at..hit.start()]) {
            number += 1;
            start = at + newline + 1;
        }
        // The loosened pattern never matches a newline, so the hit lies in
        // the line from `start`; a line without its newline is not whole.
        let Some(length) = memchr::memchr(b'\n', &stored[start..]) else { break };
        checked += 1;
        if let Some((_, _, text)) = split_stored(&stored[start..start + length]) {
            if pattern.regex.is_match(text) {
                found(number)?;
            }
        }
        number += 1;
        at = start + length + 1;
    }
    ControlFlow::Continue(())
}

/// [`matching_lines`] with one search per line.
fn line_by_line(
    pattern: &LinePattern,
    stored: &[u8],
    first: u64,
    found: &mut impl FnMut(u64) -> ControlFlow<()>,
) -> ControlFlow<()> {
    visit_stored(stored, first, u64::MAX, &mut |number, _, _, text| {
        if pattern.regex.is_match(text) {
            found(number)
        } else {
            ControlFlow::Continue(())
        }
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Patterns whose loosening is easy to get wrong: anchors and word
    /// boundaries, negated classes (which hold `\n`), a `\n` in the
    /// pattern, matches that reach into a line's time or stream, empty
    /// matches, case folding, non-ASCII and raw bytes.
    const PATTERNS: &[(&str, bool)] = &[
        ("^b", false),
        ("a$", false),
        (r"\bstep\b", false),
        ("[^x]{3}y", false),
        (r"\s+loss", false),
        ("(?s)a.b", false),
        ("(?m)^1", false),
        ("o b", false),
        ("e a", false),
        (r"\d{13}", false),
        (r"a\nb", false),
        (r"a\n?b", false),
        ("x*", false),
        ("^$", false),
        ("BETA", true),
        ("é", true),
        (r"(?-u:\xFF)", false),
        ("\r", false),
        (r"^\S+$", false),
        (r"(a|^b)c", false),
        (r"[0-9]{2}\.[0-9] tokens", false),
    ];

    /// Stored lines of `texts`, each with a time and a stream as the
    /// writer stores them.
    fn stored_lines(texts: &[Vec<u8>]) -> Vec<u8> {
        let mut stored = Vec::new();
        for (at, text) in texts.iter().enumerate() {
            let stream = if at % 3 == 0 { "e" } else { "o" };
            stored.extend_from_slice(format!("{} {stream} ", 1_700_000_000_000u64 + at as u64).as_bytes());
            stored.extend_from_slice(text);
            stored.push(b'\n');
        }
        stored
    }

    /// The numbers of the lines of `stored` that `pattern` matches, found
    /// by the run-wide scan and line by line.
    fn both_ways(pattern: &LinePattern, stored: &[u8], first: u64) -> (Vec<u64>, Vec<u64>) {
        let (mut scanned, mut by_line) = (Vec::new(), Vec::new());
        let _ = matching_lines(pattern, stored, first, &mut |number| {
            scanned.push(number);
            ControlFlow::Continue(())
        });
        let _ = line_by_line(pattern, stored, first, &mut |number| {
            by_line.push(number);
            ControlFlow::Continue(())
        });
        (scanned, by_line)
    }

    /// Line texts from a small alphabet, so the patterns above match often:
    /// letters of the patterns, digits, spaces, `\r`, `é` and a raw 0xFF.
    fn texts() -> impl Strategy<Value = Vec<Vec<u8>>> {
        let pieces: [&[u8]; 15] = [
            b"a",
            b"b",
            b"c",
            b"x",
            b"y",
            b"beta",
            b"BeTa",
            b"step",
            b" loss",
            b"12.5 tokens",
            b"1",
            b" ",
            b"\r",
            "é".as_bytes(),
            b"\xFF",
        ];
        let piece = prop::sample::select(pieces.to_vec()).prop_map(<[u8]>::to_vec);
        prop::collection::vec(prop::collection::vec(piece, 0..8).prop_map(|p| p.concat()), 0..200)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn the_run_wide_scan_finds_exactly_the_lines_a_line_by_line_search_finds(texts in texts(), first in 1u64..1_000_000) {
            let stored = stored_lines(&texts);
            for (text, ignore_case) in PATTERNS {
                let pattern = LinePattern::compile(text, true, *ignore_case).unwrap();
                let (scanned, by_line) = both_ways(&pattern, &stored, first);
                prop_assert_eq!(scanned, by_line, "{:?}", text);
            }
        }
    }

    #[test]
    fn only_patterns_that_cannot_match_an_empty_line_scan_whole_runs() {
        for (text, run_wide) in
            [("beta", true), ("^b", true), ("x*", false), ("^$", false), (r"\b", false), (r"a\nb", true)]
        {
            let pattern = LinePattern::compile(text, true, false).unwrap();
            assert_eq!(pattern.run.is_some(), run_wide, "{text:?}");
        }
    }

    /// A pattern the loosening lets match every line's time (`\d{13}`)
    /// goes line by line after a few checks, with the same answer, and a
    /// stop asked for by `found` stops the scan at once.
    #[test]
    fn a_pattern_matching_every_lines_time_goes_line_by_line_and_stops_when_asked() {
        let texts: Vec<Vec<u8>> =
            (0..1000).map(|at| if at % 100 == 7 { b"id 1234567890123".to_vec() } else { b"plain".to_vec() }).collect();
        let stored = stored_lines(&texts);
        let pattern = LinePattern::compile(r"\d{13}", true, false).unwrap();
        let (scanned, by_line) = both_ways(&pattern, &stored, 1);
        assert_eq!(scanned, (0..10).map(|k| 8 + 100 * k).collect::<Vec<u64>>());
        assert_eq!(scanned, by_line);
        let mut first_two = Vec::new();
        let stopped = matching_lines(&pattern, &stored, 1, &mut |number| {
            first_two.push(number);
            if first_two.len() == 2 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        assert!(stopped.is_break());
        assert_eq!(first_two, [8, 108]);
    }

    /// A run whose last line has no newline yet: that line is not whole,
    /// and neither way finds it.
    #[test]
    fn a_line_without_its_newline_is_not_searched() {
        let mut stored = stored_lines(&[b"beta one".to_vec(), b"beta two".to_vec()]);
        stored.extend_from_slice(b"1700000000002 o beta three");
        let pattern = LinePattern::compile("beta", false, false).unwrap();
        let (scanned, by_line) = both_ways(&pattern, &stored, 1);
        assert_eq!(scanned, [1, 2]);
        assert_eq!(scanned, by_line);
    }
}
