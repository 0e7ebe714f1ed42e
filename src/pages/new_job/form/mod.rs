//! The create-job form's state and its one mapping to and from `LeptonJob`.
//!
//! The form holds what people typed, as text (`FormState`). `to_job` turns it
//! into the job the API takes and `from_job` fills it from a job (a clone, an
//! imported spec, a shared draft); nothing else converts between the two.
//! The rules a job must follow are the contract's (`jobdeck_api`); here is
//! only what turning text into JSON needs (a number must be a number).
//!
//! Which input shows the problems of a field path (`spec.envs[2].name`) is
//! decided by two tables, `FIELDS` and `LISTS`, so a message from the
//! contract or from the server's 422 lands on the input it is about.

mod fields;
mod job_mapping;
mod targets;
#[cfg(test)]
mod tests;

pub use fields::*;
pub use job_mapping::*;
pub use targets::*;
