//! Arithmetic and printing of floats without Rust's float printer.
//!
//! The float printer (`core::fmt::float`, dragon and grisu) is about 14 KB
//! of code, and any page that prints a float with `{}`, `{:.1}` or
//! `to_string()`, or calls `f64::clamp` (whose failed bounds check prints
//! the bounds), downloads it (docs/measurements.md, "the float printer").
//! The console only ever shows a few decimals, which integers print.

/// `value` kept within `low..=high` (`high` must not be below `low`); not
/// `f64::clamp`, see above.
pub fn within(value: f64, low: f64, high: f64) -> f64 {
    value.max(low).min(high)
}

/// `value` with exactly `places` decimals (at most 6), rounded half away
/// from zero: `decimal(79.64, 1)` is `79.6`. Never `-0`; a value beyond
/// what an `i64` of its decimals holds, or not a number, prints as `—`.
pub fn decimal(value: f64, places: u32) -> String {
    let places = places.min(6);
    let scale = 10u64.pow(places);
    let scaled = (value * scale as f64).round();
    if !scaled.is_finite() || scaled.abs() >= 9.0e15 {
        return "—".to_string();
    }
    let scaled = scaled as i64;
    let sign = if scaled < 0 { "-" } else { "" };
    let (whole, fraction) = (scaled.unsigned_abs() / scale, scaled.unsigned_abs() % scale);
    if places == 0 {
        format!("{sign}{whole}")
    } else {
        format!("{sign}{whole}.{fraction:0width$}", width = places as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DECIMALS: &[(f64, u32, &str)] = &[
        (0.0, 0, "0"),
        (0.0, 1, "0.0"),
        (79.64, 1, "79.6"),
        (79.65, 1, "79.7"),
        (1.254, 2, "1.25"),
        (1.005, 2, "1.00"),
        (87.4, 0, "87"),
        (87.5, 0, "88"),
        (1000.0, 1, "1000.0"),
        (0.04, 2, "0.04"),
        (-2.5, 1, "-2.5"),
        (-0.04, 1, "0.0"),
        (-1.26, 1, "-1.3"),
        (123_456_789.0, 2, "123456789.00"),
        (f64::NAN, 1, "—"),
        (f64::INFINITY, 0, "—"),
        (1.0e300, 0, "—"),
    ];

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn decimals_print_as_format_prints_them_but_for_ties_and_negative_zero() {
        for &(value, places, text) in DECIMALS {
            assert_eq!(decimal(value, places), text, "{value} with {places} decimals");
        }
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn within_keeps_a_value_between_its_bounds() {
        assert_eq!(within(-1.0, 0.0, 10.0), 0.0);
        assert_eq!(within(11.0, 0.0, 10.0), 10.0);
        assert_eq!(within(2.5, 0.0, 10.0), 2.5);
        assert_eq!(within(f64::NAN, 0.0, 10.0), 0.0);
    }
}
