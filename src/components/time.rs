//! Times as people read them, in the browser's own time zone.

use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    type Date;
    #[wasm_bindgen(constructor)]
    fn new(millis: f64) -> Date;
    #[wasm_bindgen(method, js_name = getFullYear)]
    fn get_full_year(this: &Date) -> u32;
    #[wasm_bindgen(method, js_name = getMonth)]
    fn get_month(this: &Date) -> u32;
    #[wasm_bindgen(method, js_name = getDate)]
    fn get_date(this: &Date) -> u32;
    #[wasm_bindgen(method, js_name = getHours)]
    fn get_hours(this: &Date) -> u32;
    #[wasm_bindgen(method, js_name = getMinutes)]
    fn get_minutes(this: &Date) -> u32;
    #[wasm_bindgen(method, js_name = getSeconds)]
    fn get_seconds(this: &Date) -> u32;
    #[wasm_bindgen(static_method_of = Date)]
    fn now() -> f64;
    #[wasm_bindgen(static_method_of = Date)]
    fn parse(text: &str) -> f64;
}

/// The browser's clock in Unix milliseconds.
pub fn now_millis() -> i64 {
    Date::now() as i64
}

/// An RFC 3339 time (as events carry) in Unix milliseconds.
pub fn parse_time(text: &str) -> Option<i64> {
    let millis = Date::parse(text);
    millis.is_finite().then_some(millis as i64)
}

/// Unix milliseconds as `YYYY-MM-DD HH:MM` in local time, for tables.
pub fn format_time_short(millis: i64) -> String {
    let mut full = format_time(millis);
    full.truncate(16);
    full
}

/// Unix milliseconds as `HH:MM:SS` in local time, for the timeline's axis.
pub fn format_clock(millis: i64) -> String {
    format_time(millis).split_off(11)
}

/// Unix milliseconds as `YYYY-MM-DD HH:MM:SS` in local time.
pub fn format_time(millis: i64) -> String {
    let d = Date::new(millis as f64);
    format!(
        "{}-{:02}-{:02} {:02}:{:02}:{:02}",
        d.get_full_year(),
        d.get_month() + 1,
        d.get_date(),
        d.get_hours(),
        d.get_minutes(),
        d.get_seconds()
    )
}

/// Unix milliseconds as `YYYY-MM-DD HH:MM:SS.mmm` in local time, for log
/// lines.
pub fn format_time_millis(millis: i64) -> String {
    format!("{}.{:03}", format_time(millis), millis.rem_euclid(1000))
}

/// A duration in seconds as `1h 02m`, `3m 04s` or `5s`.
pub fn format_duration(seconds: i64) -> String {
    let s = seconds.max(0);
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, min, sec) => format!("{min}m {sec:02}s"),
        (h, min, _) if h < 48 => format!("{h}h {min:02}m"),
        (h, _, _) => format!("{}d {:02}h", h / 24, h % 24),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn durations() {
        assert_eq!(format_duration(0), "0s");
        assert_eq!(format_duration(59), "59s");
        assert_eq!(format_duration(61), "1m 01s");
        assert_eq!(format_duration(3600 + 120), "1h 02m");
        assert_eq!(format_duration(50 * 3600), "2d 02h");
        assert_eq!(format_duration(-5), "0s");
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn times() {
        assert_eq!(parse_time("1970-01-01T00:00:01Z"), Some(1000));
        assert_eq!(parse_time("not a time"), None);
        let t = parse_time("2026-03-04T05:06:07Z").unwrap();
        assert_eq!(format_time_short(t).len(), 16);
        assert_eq!(format_clock(t).len(), 8);
        assert!(now_millis() > t - 10 * 365 * 24 * 3600 * 1000);
    }
}
