//! The Slurm executor (docs/slurm.md): jobs run as Slurm job arrays
//! submitted with `sbatch`, read back with `scontrol`, their output copied
//! into the log store.
//!
//! * `settings.rs` — `[executor.slurm]`;
//! * `script.rs` — one submission as data: options, batch script, exported
//!   variables (pure; `jobdeck slurm render` prints it);
//! * `cli.rs` — the Slurm tools: running them, parsing `scontrol show job`;
//! * `executor.rs` — the controller of each run.

pub mod cli;
pub mod executor;
mod output;
pub mod script;
pub mod settings;
mod states;

pub use executor::SlurmExecutor;
pub use settings::SlurmSettings;
