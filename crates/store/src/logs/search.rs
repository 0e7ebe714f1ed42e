//! What lets a search skip blocks: each sealed block keeps a small filter
//! of the three-byte sequences (trigrams) its lines hold, and a search
//! reads the text its pattern cannot match without, so a block that lacks
//! one of its trigrams is never decompressed.
//!
//! Both sides fold case the same way: ASCII letters to lower case, and the
//! two characters outside ASCII whose case folding gives an ASCII letter
//! (`ſ`, U+017F, and the Kelvin sign, U+212A) to `s` and `k`. Any other
//! byte outside ASCII breaks a sequence. The filter is therefore a superset
//! for every pattern, case-sensitive or not: a block it rules out holds no
//! match (tested against the regex itself, `tests.rs`).

use regex_syntax::hir::{Class, Hir, HirKind};

/// Bytes of one block's filter: 65,536 bits, two set per trigram. A 1 MiB
/// block of training output holds about 6,300 distinct trigrams, which
/// leaves one in 30 of the trigrams it lacks looking present.
pub const FILTER_BYTES: usize = 8 * 1024;

/// The two bits a trigram sets.
fn bits(trigram: u32) -> [usize; 2] {
    let hash = u64::from(trigram).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    [(hash >> 48) as usize, ((hash >> 32) & 0xffff) as usize]
}

/// The folded byte of `c`, if it has one (see the module's comment).
fn fold(c: char) -> Option<u8> {
    match c {
        'ſ' => Some(b's'),
        '\u{212a}' => Some(b'k'),
        c if c.is_ascii() => Some((c as u8).to_ascii_lowercase()),
        _ => None,
    }
}

/// Trigrams of bytes below 0x80, the only ones a filter holds: 2^21.
const ASCII_TRIGRAMS: usize = 1 << 21;
/// Marks a byte that breaks a run of trigrams in folded text.
const BREAK: u8 = 0x80;

/// Bytes of a block folded at a time: the folded text of a whole block
/// would be another megabyte per writer.
pub(super) const FOLD_CHUNK: usize = 64 * 1024;

/// What [`filter_of`] works in, kept from one block to the next so a block
/// costs no allocation: a piece of the block folded, and which trigrams it
/// has met.
pub struct FilterScratch {
    folded: Vec<u8>,
    /// One bit per trigram of bytes below 0x80.
    met: Box<[u64; ASCII_TRIGRAMS / 64]>,
    distinct: Vec<u32>,
}

impl Default for FilterScratch {
    fn default() -> Self {
        FilterScratch {
            folded: Vec::with_capacity(FOLD_CHUNK + 2),
            met: vec![0; ASCII_TRIGRAMS / 64].into_boxed_slice().try_into().expect("the bitmap's length"),
            distinct: Vec::with_capacity(8192),
        }
    }
}

/// A trigram of bytes below 0x80 as a number below [`ASCII_TRIGRAMS`].
fn ascii_index(trigram: u32) -> usize {
    ((trigram >> 2 & 0x1f_c000) | (trigram >> 1 & 0x3f80) | (trigram & 0x7f)) as usize
}

/// The filter of a block's stored lines: the bits of every trigram of its
/// folded text, in which a byte outside ASCII that does not fold breaks
/// the run (and a newline does not).
///
/// A megabyte of training output holds a million trigrams but only about
/// 6,300 distinct ones, so the text is folded first (eight bytes at a time
/// while they are ASCII), each trigram is looked up in a bitmap of the
/// ones met, and only a new one is hashed into the filter (about 1.6 times
/// as fast as hashing every trigram: docs/measurements.md, "Ingest"). The
/// bits are the same either way (`tests.rs` holds the two to each other),
/// so blocks sealed by earlier releases read alike.
pub fn filter_of(lines: &[u8], scratch: &mut FilterScratch) -> Vec<u8> {
    let FilterScratch { folded, met, distinct } = scratch;
    folded.clear();
    distinct.clear();
    let mut window = u32::from(BREAK) << 8 | u32::from(BREAK);
    let mut start = 0;
    while start < lines.len() {
        // A piece never ends inside a character: the two that fold would
        // not fold in halves.
        let mut end = (start + FOLD_CHUNK).min(lines.len());
        while end < lines.len() && end > start + 3 && (0x80..0xc0).contains(&lines[end]) {
            end -= 1;
        }
        fold_onto(&lines[start..end], folded);
        // The window runs on from the piece before; a byte of BREAK in it
        // (or the start) rules its trigram out.
        for &byte in folded.iter() {
            window = (window << 8 | u32::from(byte)) & 0xff_ffff;
            if window & 0x80_8080 != 0 {
                continue;
            }
            let index = ascii_index(window);
            let bit = 1u64 << (index % 64);
            let word = &mut met[index / 64 % (ASCII_TRIGRAMS / 64)];
            if *word & bit == 0 {
                *word |= bit;
                distinct.push(window);
            }
        }
        folded.clear();
        start = end;
    }
    let mut filter = vec![0u8; FILTER_BYTES];
    for &trigram in distinct.iter() {
        for bit in bits(trigram) {
            filter[bit / 8] |= 1 << (bit % 8);
        }
        met[ascii_index(trigram) / 64] = 0;
    }
    filter
}

/// Appends `lines` to `out` folded as a filter reads them: ASCII to lower
/// case, `ſ` and the Kelvin sign to `s` and `k`, any other byte outside
/// ASCII to [`BREAK`].
fn fold_onto(lines: &[u8], out: &mut Vec<u8>) {
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    out.reserve(lines.len());
    let mut i = 0;
    while i < lines.len() {
        // Eight bytes at once while they are ASCII: each upper-case letter
        // (0x41..=0x5a) gains 0x20. Adding 0x3f sets a byte's high bit from
        // 'A' up, adding 0x25 from past 'Z'; no byte carries into the next.
        while let Some(eight) = lines.get(i..i + 8) {
            let word = u64::from_le_bytes(eight.try_into().expect("eight bytes"));
            if word & HIGH_BITS != 0 {
                break;
            }
            let upper = (word + 0x3f3f_3f3f_3f3f_3f3f) & !(word + 0x2525_2525_2525_2525) & HIGH_BITS;
            out.extend_from_slice(&(word | upper >> 2).to_le_bytes());
            i += 8;
        }
        let Some(&byte) = lines.get(i) else { break };
        let (folded, width) = if byte.is_ascii() {
            (byte.to_ascii_lowercase(), 1)
        } else if lines[i..].starts_with("ſ".as_bytes()) {
            (b's', 2)
        } else if lines[i..].starts_with("\u{212a}".as_bytes()) {
            (b'k', 3)
        } else {
            (BREAK, 1)
        };
        out.push(folded);
        i += width;
    }
}

/// The filter as releases before the fold-first one built it, a byte at a
/// time: the definition [`filter_of`] is held to.
#[cfg(test)]
pub fn filter_of_bytewise(lines: &[u8]) -> Vec<u8> {
    let mut filter = vec![0u8; FILTER_BYTES];
    let mut window = 0u32;
    let mut run = 0u32;
    let mut i = 0;
    while i < lines.len() {
        let byte = lines[i];
        let folded = if byte.is_ascii() {
            i += 1;
            Some(byte.to_ascii_lowercase())
        } else if lines[i..].starts_with("ſ".as_bytes()) {
            i += 2;
            Some(b's')
        } else if lines[i..].starts_with("\u{212a}".as_bytes()) {
            i += 3;
            Some(b'k')
        } else {
            i += 1;
            None
        };
        match folded {
            Some(folded) => {
                window = ((window << 8) | u32::from(folded)) & 0xff_ffff;
                run += 1;
                if run >= 3 {
                    for bit in bits(window) {
                        filter[bit / 8] |= 1 << (bit % 8);
                    }
                }
            }
            None => run = 0,
        }
    }
    filter
}

/// Whether a block whose filter is `filter` may hold every trigram.
pub fn may_hold(filter: &[u8], trigrams: &[u32]) -> bool {
    filter.len() == FILTER_BYTES
        && trigrams.iter().all(|trigram| bits(*trigram).iter().all(|bit| filter[bit / 8] & (1 << (bit % 8)) != 0))
}

/// The folded trigrams a line must hold for `pattern` (as the regex crate
/// parses it, with `ignore_case`) to match it; empty when nothing is
/// certain (an alternation, a class, a pattern shorter than three bytes).
pub fn required_trigrams(pattern: &str, ignore_case: bool) -> Vec<u32> {
    let Ok(hir) = regex_syntax::ParserBuilder::new().case_insensitive(ignore_case).build().parse(pattern) else {
        return Vec::new();
    };
    let mut texts = Vec::new();
    required_texts(&hir, &mut texts);
    let mut trigrams: Vec<u32> = texts
        .iter()
        .flat_map(|text| text.windows(3).map(|w| u32::from(w[0]) << 16 | u32::from(w[1]) << 8 | u32::from(w[2])))
        .collect();
    trigrams.sort_unstable();
    trigrams.dedup();
    trigrams
}

/// What a literal or a one-character class contributes to a run of text:
/// each character's folded byte, or `None` where one does not fold (which
/// breaks the run); `None` for other kinds of pattern.
fn folded_items(hir: &Hir) -> Option<Vec<Option<u8>>> {
    match hir.kind() {
        HirKind::Literal(literal) => Some(String::from_utf8_lossy(&literal.0).chars().map(fold).collect()),
        HirKind::Class(class) => Some(vec![one_folded_byte(class)]),
        _ => None,
    }
}

/// The one folded byte every character of `class` folds to, as for `[Ss]`
/// or `(?i)s`; `None` for a class of different letters.
fn one_folded_byte(class: &Class) -> Option<u8> {
    let mut folded = None;
    let mut agree = |byte: Option<u8>| -> Option<()> {
        let byte = byte?;
        match folded.replace(byte) {
            Some(earlier) if earlier != byte => None,
            _ => Some(()),
        }
    };
    match class {
        Class::Unicode(class) => {
            for range in class.ranges() {
                // A wide range is not one letter in its cases.
                if u32::from(range.end()) - u32::from(range.start()) > 2 {
                    return None;
                }
                for c in range.start()..=range.end() {
                    agree(fold(c))?;
                }
            }
        }
        Class::Bytes(class) => {
            for range in class.ranges() {
                if range.end() - range.start() > 2 {
                    return None;
                }
                for byte in range.start()..=range.end() {
                    agree(byte.is_ascii().then(|| byte.to_ascii_lowercase()))?;
                }
            }
        }
    }
    folded
}

/// Adds to `texts` the folded texts every match of `hir` holds.
fn required_texts(hir: &Hir, texts: &mut Vec<Vec<u8>>) {
    match hir.kind() {
        HirKind::Capture(capture) => required_texts(&capture.sub, texts),
        HirKind::Repetition(repetition) if repetition.min >= 1 => required_texts(&repetition.sub, texts),
        HirKind::Concat(parts) => {
            let mut run: Vec<u8> = Vec::new();
            for part in parts {
                match folded_items(part) {
                    Some(items) => {
                        for item in items {
                            match item {
                                Some(byte) => run.push(byte),
                                None => texts.push(std::mem::take(&mut run)),
                            }
                        }
                    }
                    None => {
                        texts.push(std::mem::take(&mut run));
                        required_texts(part, texts);
                    }
                }
            }
            texts.push(run);
        }
        // An alternation holds one of its branches' texts, not a certain
        // one; a look-around and an empty pattern hold none.
        _ => {
            let mut run = Vec::new();
            for item in folded_items(hir).unwrap_or_default() {
                match item {
                    Some(byte) => run.push(byte),
                    None => texts.push(std::mem::take(&mut run)),
                }
            }
            texts.push(run);
        }
    }
    texts.retain(|text| text.len() >= 3);
}
