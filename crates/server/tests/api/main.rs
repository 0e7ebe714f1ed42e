//! The server's integration tests, one binary: it links the server once
//! rather than once per file. One module per subject; `common` is the
//! in-process app every API test drives, `kube_fake` the Kubernetes API
//! server double.

mod common;
mod kube_fake;

mod api_basics;
mod audit;
mod authorization;
mod console_serving;
mod convert;
mod failure_analysis;
mod invitations;
mod job_list;
mod job_patch;
mod kube_executor;
mod kube_manifests;
mod kube_render;
mod layering;
mod lepton_programs;
mod lifecycle;
mod live_stream;
mod log_api;
mod log_retention;
mod merged_log;
mod metrics;
mod notification_conditions;
mod notification_email;
mod notifications;
mod offboarding;
mod openapi;
mod privileged;
mod queue;
mod quotas;
mod requirements;
mod rerun;
mod retry_window;
mod templates;
mod validation;
mod visibility;
