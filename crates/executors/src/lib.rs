//! Jobdeck's executors: they run the replicas of the jobs the scheduler
//! admits and report through the core's `ExecutorHost`.
//!
//! * `local` runs replicas on this machine, as processes or in containers
//!   (`container`, `engine`: podman or docker), each under a supervisor
//!   process that outlives a restart of the server.
//! * `slurm` submits each replica as a Slurm job.
//! * `kubernetes` renders a job as a `batch/v1` Job and watches it.
//!
//! What local and Slurm share: a replica's environment (`env`), the runs a
//! controller drives (`runs`) and the run ledger (`run_ledger`), which
//! decides retries and a run's outcome from its replicas' ends.

pub mod atomic_file;
pub mod container;
pub mod engine;
pub mod env;
pub mod kubernetes;
pub mod local;
pub mod run_ledger;
pub mod runs;
pub mod slurm;
