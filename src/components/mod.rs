//! Pieces shared by several pages, one module each.

pub mod ansi;
pub mod api_error;
pub mod chart;
pub mod data_table;
pub mod dom;
pub mod field;
pub mod job_actions;
pub mod lazy_view;
pub mod list_editor;
pub mod live;
pub mod loaded;
pub mod log_viewer;
pub mod state_badge;
pub mod time;
pub mod timeline;
pub mod top_bar;

/// `value` kept within `low..=high` (`high` must not be below `low`).
///
/// Not `f64::clamp`: its check of the bounds prints them with `{:?}` when
/// it fails, which puts the float printer (about 14 KB of code) into every
/// page that clamps a float (docs/measurements.md, "the float printer").
pub fn within(value: f64, low: f64, high: f64) -> f64 {
    value.max(low).min(high)
}
