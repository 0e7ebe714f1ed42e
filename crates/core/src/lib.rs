//! Jobdeck's core: what a job is and how the control plane decides about it.
//!
//! The configuration (`config`), the server's reading of a job spec
//! (`spec`), node groups and placements (`topology`), failure analysis
//! (`failure`), the metrics a replica reports (`metrics`), the executor
//! contract (`executor`: the trait every executor implements and the host
//! it reports through) and the scheduler, the only writer of job state.
//! Below it are the wire contract (`jobdeck_api`) and the store
//! (`jobdeck_store`); above it the executors (`jobdeck_executors`) and the
//! HTTP layer (`jobdeck_server`), which this crate cannot name.

pub mod config;
pub mod convert;
pub mod executor;
pub mod failure;
pub mod metrics;
pub mod naming;
pub mod quota;
pub mod rerun;
pub mod retention;
pub mod scheduler;
pub mod spec;
pub mod templates;
pub mod topology;
pub mod usage;

pub use config::Config;

/// An error and its sources, `outer: inner: innermost`, as one line. Some
/// errors (kube's, io's inside them) also write their source into their
/// own message: a cause the line already ends with is not repeated.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string().trim_end().to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        let said = said.trim_end();
        if !text.ends_with(said) {
            text.push_str(": ");
            text.push_str(said);
        }
        source = cause.source();
    }
    text
}
