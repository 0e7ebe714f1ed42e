//! The HTTP layer: the handlers of every resource (parse, authorize,
//! respond), the error every handler answers with ([`error::AppError`]),
//! the authorization table, authentication and sessions, the bounds on requests, the request log,
//! the accept loop, the gateway form, the console's files and the OpenAPI
//! document. Nothing below this layer names it (`tests/api/layering.rs`).

pub mod access;
pub mod audit;
pub mod auth;
pub mod cluster;
pub mod console;
pub mod convert;
pub mod error;
pub mod failure_analysis;
pub mod gateway;
pub mod image_pull_secrets;
pub mod invitations;
pub mod job_patch;
pub mod jobs;
pub mod lepton_logs;
pub mod listener;
pub mod logs;
mod merged_download;
pub mod merged_log;
mod merged_search;
pub mod metrics;
pub mod notifications;
pub mod openapi;
pub mod queue;
pub mod quotas;
pub mod replicas;
pub mod request_limits;
pub mod request_log;
pub mod rerun;
pub mod secrets;
pub mod sessions;
pub mod single_sign_on;
pub mod stream;
pub mod templates;
pub mod users;
pub mod workspace;
