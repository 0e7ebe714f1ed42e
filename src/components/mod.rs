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
pub mod numbers;
pub mod state_badge;
pub mod time;
pub mod timeline;
pub mod top_bar;
