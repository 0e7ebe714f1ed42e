//! One module per page.

pub mod job;
pub mod jobs_list;
pub mod login;
pub mod new_job;
pub mod not_found;
