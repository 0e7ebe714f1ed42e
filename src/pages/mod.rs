//! One module per page.

pub mod account;
pub mod audit;
pub mod invite;
pub mod job;
pub mod jobs_list;
pub mod login;
pub mod new_job;
pub mod not_found;
pub mod notifications;
pub mod people;
pub mod queue;
pub mod storage;
