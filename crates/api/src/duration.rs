//! Durations as people type them, read in one place: the form's fields, the
//! imports (`POST /jobs/convert`) and the server's configuration all use
//! [`parse_duration`]; the API itself keeps Lepton's whole seconds.
//!
//! Three spellings are read:
//! * whole seconds: `3600`;
//! * short: numbers with a unit each, `s`, `m`, `h`, `d` or `w`, largest
//!   first and optionally spaced: `2h`, `90m`, `1d`, `1h 30m`, `90 m` (dstack's
//!   `max_duration`, the configuration's `retention = "30d"`);
//! * ISO 8601: `PT4H30M`, `P1D`, `P1DT12H`, `P2W` (NVCF's task fields).
//!   Years and months are refused: they have no fixed length in seconds.
//!
//! `off` reads as no duration, as dstack writes "no limit".

/// Seconds per unit letter, largest first; the order is also the order
/// units must come in (`1h30m`, not `30m1h`).
const UNITS: [(char, i64); 5] = [('w', 604_800), ('d', 86_400), ('h', 3_600), ('m', 60), ('s', 1)];

/// The one message for text that is no duration: it names every spelling.
fn not_a_duration(text: &str) -> String {
    format!("must be a duration such as 2h, 90m, 1d, PT4H30M or 3600 (seconds), not '{text}'")
}

/// The seconds `text` names; `None` for empty text and `off`.
///
/// It reads bytes and adds up digits itself: no string slicing, substring
/// search or `str::parse`, whose panic and error paths would be the most of
/// its size in the console (docs/measurements.md).
pub fn parse_duration(text: &str) -> Result<Option<i64>, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() || trimmed.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let bytes = trimmed.as_bytes();
    let seconds = if bytes[0] == b'P' || bytes[0] == b'p' {
        parse_iso(&bytes[1..], trimmed)?
    } else if bytes.iter().all(u8::is_ascii_digit) {
        number(bytes).ok_or_else(|| too_long(trimmed))?
    } else {
        parse_units(bytes, &UNITS, trimmed)?
    };
    Ok(Some(seconds))
}

fn too_long(text: &str) -> String {
    format!("'{text}' is too long a duration")
}

/// The number `digits` (ASCII digits only) writes; `None` past `i64`.
fn number(digits: &[u8]) -> Option<i64> {
    digits.iter().try_fold(0i64, |n, d| n.checked_mul(10)?.checked_add(i64::from(d - b'0')))
}

/// `<number><unit>` pairs in the order of `units`, each unit at most once,
/// spaces allowed between pairs and before a unit.
fn parse_units(mut rest: &[u8], units: &[(char, i64)], text: &str) -> Result<i64, String> {
    let mut total: i64 = 0;
    let mut next_unit = 0;
    let mut any = false;
    while let Some(first) = rest.iter().position(|b| !b.is_ascii_whitespace()) {
        rest = &rest[first..];
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        // A space may stand between a number and its unit (`90 m`).
        let spaces = rest[digits..].iter().take_while(|b| b.is_ascii_whitespace()).count();
        let unit = rest.get(digits + spaces).map(|b| b.to_ascii_lowercase() as char);
        let Some(position) = unit.and_then(|u| units[next_unit..].iter().position(|(c, _)| *c == u)) else {
            return Err(not_a_duration(text));
        };
        if digits == 0 {
            return Err(not_a_duration(text));
        }
        let scale = units[next_unit + position].1;
        total = number(&rest[..digits])
            .and_then(|n| n.checked_mul(scale))
            .and_then(|s| total.checked_add(s))
            .ok_or_else(|| too_long(text))?;
        next_unit += position + 1;
        rest = &rest[digits + spaces + 1..];
        any = true;
    }
    if any {
        Ok(total)
    } else {
        Err(not_a_duration(text))
    }
}

/// The part of an ISO 8601 duration after its `P`: weeks and days, then
/// after a `T` hours, minutes and seconds.
fn parse_iso(iso: &[u8], text: &str) -> Result<i64, String> {
    if iso.iter().any(u8::is_ascii_whitespace) {
        return Err(not_a_duration(text));
    }
    let (date, time) = match iso.iter().position(|b| b.eq_ignore_ascii_case(&b'T')) {
        Some(at) => (&iso[..at], Some(&iso[at + 1..])),
        None => (iso, None),
    };
    if date.iter().any(|b| matches!(b.to_ascii_uppercase(), b'Y' | b'M')) {
        return Err(format!(
            "'{text}' names years or months, which have no fixed length; give days (P30D) or hours instead"
        ));
    }
    let date_seconds = if date.is_empty() { 0 } else { parse_units(date, &UNITS[..2], text)? };
    let time_seconds = match time {
        // `P1DT` has a `T` and nothing after it.
        Some([]) => return Err(not_a_duration(text)),
        Some(time) => parse_units(time, &UNITS[2..], text)?,
        None if date.is_empty() => return Err(not_a_duration(text)),
        None => 0,
    };
    date_seconds.checked_add(time_seconds).ok_or_else(|| too_long(text))
}

/// `seconds` as a person types it, in the largest unit that divides it
/// (`3d`, `90m`, `7s`): how the form and the storage page show a duration
/// in a field that [`parse_duration`] reads back.
pub fn short_duration(seconds: i64) -> String {
    for (unit, scale) in [UNITS[1], UNITS[2], UNITS[3]] {
        if seconds != 0 && seconds % scale == 0 {
            return format!("{}{unit}", seconds / scale);
        }
    }
    format!("{seconds}s")
}

/// `seconds` in words, every unit that is not zero: "4 hours 30 minutes",
/// "1 day", "0 seconds".
pub fn duration_in_words(seconds: i64) -> String {
    const NAMES: [&str; 4] = ["day", "hour", "minute", "second"];
    let mut left = seconds.max(0);
    let mut words = Vec::new();
    for (name, (_, scale)) in NAMES.iter().zip(&UNITS[1..]) {
        let count = left / scale;
        left %= scale;
        if count > 0 {
            let plural = if count == 1 { "" } else { "s" };
            words.push(format!("{count} {name}{plural}"));
        }
    }
    if words.is_empty() {
        "0 seconds".to_string()
    } else {
        words.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_duration_reads_back_as_its_seconds() {
        for seconds in [259_200, 5400, 16_200, 7, 0, 86_401] {
            assert_eq!(parse_duration(&short_duration(seconds)), Ok(Some(seconds)), "{seconds}");
        }
        assert_eq!(short_duration(259_200), "3d");
        assert_eq!(short_duration(5400), "90m");
        assert_eq!(short_duration(7), "7s");
    }

    #[test]
    fn every_spelling_reads_as_seconds() {
        let cases = [
            ("3600", 3600),
            ("2h", 7200),
            ("90m", 5400),
            ("1d", 86_400),
            ("1h30m", 5400),
            ("1h 30m", 5400),
            (" 90 m ", 5400),
            (" 2W ", 1_209_600),
            ("45s", 45),
            ("PT4H30M", 16_200),
            ("PT72H", 259_200),
            ("P1D", 86_400),
            ("P1DT12H", 129_600),
            ("P2W", 1_209_600),
            ("PT1H", 3600),
            ("pt30s", 30),
            ("PT0S", 0),
        ];
        for (text, seconds) in cases {
            assert_eq!(parse_duration(text), Ok(Some(seconds)), "{text}");
        }
        assert_eq!(parse_duration(""), Ok(None));
        assert_eq!(parse_duration("off"), Ok(None));
    }

    #[test]
    fn what_is_no_duration_is_refused_with_the_spellings() {
        for text in
            ["soon", "2x", "h", "30m1h", "1h1h", "P", "PT", "P1DT", "PT1D", "P1H", "1.5h", "-5", "P1D T1H", "PT1 H"]
        {
            let message = parse_duration(text).unwrap_err();
            assert!(message.contains("2h, 90m, 1d, PT4H30M"), "{text}: {message}");
        }
        assert!(parse_duration("P1M").unwrap_err().contains("years or months"));
        assert!(parse_duration("P1Y2D").unwrap_err().contains("years or months"));
        assert!(parse_duration("99999999999999999999").unwrap_err().contains("too long"));
        assert!(parse_duration("9999999999999999w").unwrap_err().contains("too long"));
    }

    #[test]
    fn seconds_read_back_in_words() {
        assert_eq!(duration_in_words(16_200), "4 hours 30 minutes");
        assert_eq!(duration_in_words(86_400), "1 day");
        assert_eq!(duration_in_words(93_784), "1 day 2 hours 3 minutes 4 seconds");
        assert_eq!(duration_in_words(0), "0 seconds");
        assert_eq!(duration_in_words(259_200), "3 days");
    }
}
