//! Pieces shared by several pages, one module each.

pub mod api_error;
pub mod data_table;
pub mod dom;
pub mod event_stream;
pub mod lazy_view;
pub mod live;
pub mod new_token;
pub mod state_badge;
pub mod time;
pub mod top_bar;
