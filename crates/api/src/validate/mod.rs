//! The rules a job must follow, run identically by the console before it
//! submits and by the server on every write.
//!
//! There are two entry points, and both return every problem at once as one
//! message per field path (`spec.envs[2].name`):
//!
//! * [`validate_job`] runs every rule that needs nothing but the job;
//! * [`validate_job_in`] adds the rules that need the server's data (the
//!   shape, node groups, nodes and secrets exist; shared memory fits the
//!   shape).
//!
//! Every rule is a hand-written check here, single-field ranges included
//! (`check_ranges`). There is deliberately no regular expression and no
//! `validator` derive: the console runs this code as WebAssembly, and the
//! derive's error machinery (hash maps of `serde_json::Value` parameters) cost
//! the console 7 KB brotli for what `check_ranges` does in a few hundred
//! bytes (see `docs/measurements.md`).
//!
//! When one field breaks several rules, the first is reported: the checks run
//! from the most basic ("must not be empty") to the relational ("is listed
//! twice"), so fixing the reported problem is always the next step.

mod container;
mod context;
mod env;
mod metadata;
mod mounts;
mod requirements;
mod spec;
#[cfg(test)]
mod tests;
mod text;

pub use container::*;
pub use context::*;
pub use env::*;
pub use metadata::*;
pub use mounts::*;
pub use requirements::*;
use spec::*;
pub use text::*;

use crate::defaults::{split_image_reference, Priority, Protocol, PRIORITY_CLASSES};
use crate::{Container, EnvVar, FieldErrors, JobSpec, LeptonJob, Metadata, Mount, Shape};

/// The longest job name Lepton allows (the TAO SDK's generated names are
/// this long), and the default of a workspace's own limit
/// (`JobRequirements::job_name_max_length`; the managed-cluster page's 20 is
/// such a setting).
pub const JOB_NAME_MAX_LEN: usize = 36;
/// The longest name part of a label or annotation key, and the longest label
/// value (Kubernetes).
pub const LABEL_NAME_MAX_LEN: usize = 63;
pub const LABEL_VALUE_MAX_LEN: usize = 63;
/// The longest prefix (`example.com/`) of a label or annotation key.
pub const LABEL_PREFIX_MAX_LEN: usize = 253;
/// Key prefixes Kubernetes keeps for itself; the Kubernetes executor copies
/// labels onto pods, so Jobdeck keeps them out of user labels too.
pub const RESERVED_LABEL_PREFIXES: [&str; 2] = ["kubernetes.io", "k8s.io"];
/// The key prefix of the labels and annotations Jobdeck puts on what it
/// creates (`jobdeck.dev/job-id`, `jobdeck.dev/run`, …). The Kubernetes
/// executor finds a run's Job and pods by them, so a user's key under it
/// could make Jobdeck adopt or lose objects. It is refused here, when the
/// job is created, rather than when a run starts on Kubernetes, so every
/// executor and the console give the same answer.
pub const JOBDECK_LABEL_PREFIX: &str = "jobdeck.dev";
/// The most bytes all annotation keys and values may take together
/// (Kubernetes' limit).
pub const ANNOTATIONS_MAX_BYTES: usize = 256 * 1024;
/// The longest image tag (the OCI distribution spec).
pub const IMAGE_TAG_MAX_LEN: usize = 128;
/// The longest port name (an IANA service name, as Kubernetes requires).
pub const PORT_NAME_MAX_LEN: usize = 15;
/// The most replicas a job may have: completions, parallelism, workers and
/// the workers of a segment. This is the limit Kubernetes puts on an Indexed
/// Job's completions and parallelism.
pub const REPLICAS_MAX: i64 = 100_000;
/// The most retries any retry setting may ask for (`backoff_limit`,
/// `max_failure_retry`, `max_job_failure_retry`): Kubernetes keeps
/// `backoffLimit` in an `int32`.
pub const RETRIES_MAX: i64 = i32::MAX as i64;
/// The longest duration a job may name, in seconds: ten years of 365 days
/// (deadline, maximum queued duration, archive time).
pub const DURATION_MAX_SECONDS: i64 = 10 * 365 * 24 * 60 * 60;
/// The longest termination grace period, in seconds: one day. A replica
/// being stopped holds its GPUs until it ends, so the wait is bounded.
pub const GRACE_PERIOD_MAX_SECONDS: i64 = 24 * 60 * 60;
/// The most memory a size may name, in MiB: 1 PiB, far above any machine,
/// and still far from overflowing when counted in bytes.
pub const MEMORY_MAX_MIB: i64 = 1 << 30;
/// The latest start time, in Unix seconds: 9999-12-31T23:59:59Z.
pub const START_AT_MAX: i64 = 253_402_300_799;
/// The highest port number.
pub const PORT_MAX: i64 = 65_535;
/// Environment variables Jobdeck sets: the first two in every replica, the
/// last in a Kubernetes pod of a rerun of failed indexes, whose index it
/// maps (a job's own variable of that name would change which index runs).
pub const RESERVED_ENV_NAMES: [&str; 3] = ["JOB_COMPLETION_INDEX", "JOB_COMPLETIONS", "JOBDECK_COMPLETION_INDEXES"];
/// The prefix of the variables Jobdeck (like Lepton) sets: `LEPTON_JOB_NAME`, …
pub const RESERVED_ENV_PREFIX: &str = "LEPTON_";
/// Mount paths that would hide the operating system of the image. Only the
/// path itself is reserved: `/usr` is, `/usr/share/data` is not. This is
/// Lepton's list (`leptonai/api/v2/job_validation.py`) plus `/var/run`,
/// `/lib32` and `/libx32`.
pub const RESERVED_MOUNT_PATHS: [&str; 24] = [
    "/",
    "/bin",
    "/boot",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/media",
    "/opt",
    "/run",
    "/sbin",
    "/srv",
    "/usr",
    "/usr/bin",
    "/usr/lib",
    "/usr/local",
    "/usr/sbin",
    "/var",
    "/var/run",
    "/sys",
    "/proc",
    "/dev",
    "/dev/shm",
];
/// Trees nothing may be mounted into: the kernel's file systems, the devices,
/// the shared memory Jobdeck mounts at `/dev/shm`, and where Kubernetes puts
/// service-account secrets.
pub const RESERVED_MOUNT_TREES: [&str; 5] = ["/proc", "/sys", "/dev", "/run/secrets", "/var/run/secrets"];

/// Problems found so far: one message per field path, the first one found.
#[derive(Default)]
struct Problems(FieldErrors);

impl Problems {
    fn add(&mut self, path: impl Into<String>, message: impl Into<String>) {
        let messages = self.0.entry(path.into()).or_default();
        if messages.is_empty() {
            messages.push(message.into());
        }
    }
}

/// The path of one entry of a string map, such as a label:
/// `metadata.labels["team"]`. The key is quoted as a JSON string so keys with
/// dots and slashes (`example.com/team`) stay unambiguous.
pub fn entry_path(map_path: &str, key: &str) -> String {
    let quoted = serde_json::to_string(key).unwrap_or_default();
    format!("{map_path}[{quoted}]")
}

/// Every problem with `job` that can be found without the server's data, as
/// one message per field path. Empty means valid.
pub fn validate_job(job: &LeptonJob) -> FieldErrors {
    validate_job_with_name_limit(job, JOB_NAME_MAX_LEN)
}

fn validate_job_with_name_limit(job: &LeptonJob, name_max_len: usize) -> FieldErrors {
    let mut problems = Problems::default();
    check_ranges(&job.spec, &mut problems);
    check_metadata(&job.metadata, name_max_len, &mut problems);
    check_spec(&job.spec, &mut problems);
    problems.0
}
