//! Pieces shared by several pages, one module each.

pub mod api_error;
pub mod state_badge;
pub mod time;
pub mod top_bar;
