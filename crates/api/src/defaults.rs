//! Every default of a job, in one place, and the effective-value accessors
//! that apply them.
//!
//! A field left out of a job means "the default". Nobody else re-derives a
//! default: the console shows `spec.completions()`, the scheduler runs
//! `spec.completions()`, the Kubernetes mapping writes `spec.completions()`.
//! The accessors assume a job that passed validation; on an invalid job they
//! still return something sensible (the default) rather than panic.

use crate::{Container, ContainerPort, EnvVar, JobSpec, LeptonJob, Mount, Secret, Visibility};

/// Replicas that must succeed for the job to complete.
pub const COMPLETIONS: i64 = 1;
/// Replicas that may run at the same time.
pub const PARALLELISM: i64 = 1;
/// Workers of a distributed job; one means "not distributed".
pub const WORKERS: i64 = 1;
/// Retries of failed replicas before the job fails (Kubernetes
/// `backoffLimit`), as on the managed-cluster page, when the job sets no
/// per-replica limit (see [`JobSpec::backoff_limit`]).
pub const BACKOFF_LIMIT: i64 = 3;
/// The overall retries of a job that sets only a per-replica limit
/// (`max_failure_retry`): no overall limit, written as the largest value a
/// retry setting may take, exactly as Kubernetes defaults `backoffLimit` to
/// 2147483647 when `backoffLimitPerIndex` is set.
pub const BACKOFF_LIMIT_WITH_PER_REPLICA_LIMIT: i64 = crate::validate::RETRIES_MAX;
/// Retries of one failed replica ("max replica failure retry") of a job that
/// does not say: no per-replica limit, only the backoff limit applies.
pub const MAX_FAILURE_RETRY: Option<i64> = None;
/// Restarts of the whole job after it failed ("max job failure retry").
pub const MAX_JOB_FAILURE_RETRY: i64 = 0;
/// The archive time: how long a finished job's record and logs are kept.
pub const TTL_SECONDS_AFTER_FINISHED: i64 = 3 * 24 * 60 * 60;
/// Who may see a job that does not say: the whole workspace, as in Lepton,
/// where only a job explicitly set to private is restricted to its creator.
pub const VISIBILITY: Visibility = Visibility::Public;
/// A secret is its owner's alone unless made public on purpose: a value
/// shared by accident reaches other users' replicas and so their logs.
pub const SECRET_VISIBILITY: Visibility = Visibility::Private;
/// Log collection of a job that does not say: follow the workspace setting
/// (`WorkspaceInfo::log_collection_default`).
pub const LOG_COLLECTION: Option<bool> = None;
/// The image tag used when neither `image` nor `image_tag` names one.
pub const IMAGE_TAG: &str = "latest";
/// Whether a job may evict lower-priority preemptible work.
pub const CAN_PREEMPT: bool = false;
/// Whether a job may be evicted by higher-priority work.
pub const CAN_BE_PREEMPTED: bool = false;
/// Whether a detected program error stops the retries.
pub const DISABLE_RETRY_ON_PROGRAM_ERROR: bool = false;
/// The protocol of a port that does not say.
pub const PORT_PROTOCOL: Protocol = Protocol::Tcp;
/// The queue priority of a job that does not say: Medium (4).
pub const PRIORITY: Priority = Priority::MEDIUM;

/// The shared-memory table of the configuration page, in MiB:
/// (shape memory, shared memory). A shape gets the row of the largest memory
/// not above its own; a shape below the first row gets half its memory.
pub const SHARED_MEMORY_TABLE_MIB: [(i64, i64); 5] = [
    (4 * 1024, 2 * 1024),
    (32 * 1024, 16 * 1024),
    (128 * 1024, 32 * 1024),
    (512 * 1024, 64 * 1024),
    (1024 * 1024, 100 * 1024),
];

/// The default shared memory, in MiB, of a shape with `shape_memory_mib` of
/// memory (see [`SHARED_MEMORY_TABLE_MIB`]).
pub fn shared_memory_default_mib(shape_memory_mib: i64) -> i64 {
    SHARED_MEMORY_TABLE_MIB
        .iter()
        .rev()
        .find(|(memory, _)| *memory <= shape_memory_mib)
        .map(|(_, shared)| *shared)
        .unwrap_or(shape_memory_mib.max(0) / 2)
}

/// A queue priority, 1 (lowest) to 9 (highest). On the wire it is Lepton's
/// priority class, `low-1000` … `high-9000`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Priority(u8);

/// Lepton's priority classes, lowest first; index + 1 is the level.
pub const PRIORITY_CLASSES: [&str; 9] =
    ["low-1000", "low-2000", "low-3000", "mid-4000", "mid-5000", "mid-6000", "high-7000", "high-8000", "high-9000"];

impl Priority {
    pub const LOWEST: Priority = Priority(1);
    /// "Low" in the lep CLI's short forms (`l`, `low`).
    pub const LOW: Priority = Priority(1);
    /// "Medium" (`m`, `mid`), the default.
    pub const MEDIUM: Priority = Priority(4);
    /// "High" (`h`, `high`).
    pub const HIGH: Priority = Priority(7);
    pub const HIGHEST: Priority = Priority(9);

    /// The priority of `level`, if it is 1 to 9.
    pub const fn new(level: u8) -> Option<Priority> {
        if level >= 1 && level <= 9 {
            Some(Priority(level))
        } else {
            None
        }
    }

    /// Every priority, lowest first.
    pub fn all() -> impl Iterator<Item = Priority> {
        (1..=9).map(Priority)
    }

    /// 1 to 9.
    pub fn level(self) -> u8 {
        self.0
    }

    /// The priority class on the wire: `low-1000` … `high-9000`.
    pub fn class(self) -> &'static str {
        PRIORITY_CLASSES[usize::from(self.0 - 1)]
    }

    /// The priority of a canonical priority class (`mid-4000`); the wire
    /// accepts only these.
    pub fn from_class(class: &str) -> Option<Priority> {
        PRIORITY_CLASSES.iter().position(|c| *c == class).map(|i| Priority(i as u8 + 1))
    }

    /// Reads what a person types, as `lep --queue-priority` accepts it: a
    /// level `1`…`9`, a canonical class (`mid-4000`), a short class
    /// (`mid-4`), or a band (`l`/`low` = 1, `m`/`mid` = 4, `h`/`high` = 7),
    /// ignoring case and surrounding spaces.
    pub fn parse(input: &str) -> Option<Priority> {
        let input = input.trim().to_ascii_lowercase();
        match input.as_str() {
            "l" | "low" => return Some(Priority::LOW),
            "m" | "mid" => return Some(Priority::MEDIUM),
            "h" | "high" => return Some(Priority::HIGH),
            _ => {}
        }
        if let Some(p) = Priority::from_class(&input) {
            return Some(p);
        }
        if let Ok(level) = input.parse::<u8>() {
            return Priority::new(level);
        }
        // Short classes: the band and the level, `low-1` … `high-9`.
        let (band, level) = input.split_once('-')?;
        let level: u8 = level.parse().ok()?;
        let p = Priority::new(level)?;
        (p.band() == band).then_some(p)
    }

    /// `low`, `mid` or `high`.
    pub fn band(self) -> &'static str {
        match self.0 {
            1..=3 => "low",
            4..=6 => "mid",
            _ => "high",
        }
    }

    /// The short class the lep CLI documents: `low-1` … `high-9`.
    pub fn short_class(self) -> String {
        format!("{}-{}", self.band(), self.0)
    }

    /// How the console names it: `Low (1)`, `Medium (4)`, `High (9)`.
    pub fn label(self) -> String {
        let band = match self.0 {
            1..=3 => "Low",
            4..=6 => "Medium",
            _ => "High",
        };
        format!("{band} ({})", self.0)
    }
}

impl Default for Priority {
    fn default() -> Self {
        PRIORITY
    }
}

impl std::fmt::Display for Priority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.class())
    }
}

/// A port protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Protocol {
    Tcp,
    Udp,
    Sctp,
}

impl Protocol {
    pub const ALL: [Protocol; 3] = [Protocol::Tcp, Protocol::Udp, Protocol::Sctp];

    /// `TCP`, `UDP` or `SCTP`.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
            Protocol::Sctp => "SCTP",
        }
    }

    /// Reads a protocol in any case, as Lepton accepts it (`tcp`, `Udp`).
    pub fn parse(input: &str) -> Option<Protocol> {
        Protocol::ALL.into_iter().find(|p| p.as_str().eq_ignore_ascii_case(input))
    }
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The effective values of a job spec: each accessor is the field when set,
/// else the default.
impl JobSpec {
    /// The number of workers. `spec.workers` when set; otherwise a payload
    /// from `lep job create --num-workers N` (which sends completions =
    /// parallelism = N with intra-job communication on) counts as N workers;
    /// otherwise 1.
    pub fn workers(&self) -> i64 {
        if let Some(workers) = self.workers {
            return workers;
        }
        match (self.intra_job_communication, self.completions, self.parallelism) {
            (Some(true), Some(c), Some(p)) if c == p && c > 1 => c,
            _ => WORKERS,
        }
    }

    /// Replicas that must succeed: the number of workers when there is more
    /// than one, else `spec.completions` or 1.
    pub fn completions(&self) -> i64 {
        let workers = self.workers();
        if workers > 1 {
            workers
        } else {
            self.completions.unwrap_or(COMPLETIONS)
        }
    }

    /// Replicas that may run at once: the number of workers when there is
    /// more than one, else `spec.parallelism` or 1, and never more than
    /// the indexes the job runs.
    pub fn parallelism(&self) -> i64 {
        let workers = self.workers();
        if workers > 1 {
            workers
        } else {
            let parallelism = self.parallelism.unwrap_or(PARALLELISM);
            match self.chosen_indexes() {
                Some(indexes) if !indexes.is_empty() => parallelism.min(indexes.len() as i64),
                _ => parallelism,
            }
        }
    }

    /// `spec.completion_indexes`, in the builds that have the field (the
    /// console's does not).
    pub fn chosen_indexes(&self) -> Option<&[i64]> {
        #[cfg(not(target_arch = "wasm32"))]
        return self.completion_indexes.as_deref();
        #[cfg(target_arch = "wasm32")]
        None
    }

    /// The completion indexes the job runs, in order: `completion_indexes`
    /// when given (a rerun of failed indexes), else every index from 0 to
    /// `completions() - 1`. Indexes out of range are left out (the rules
    /// refuse them when the job is created), and so is every index past
    /// the most replicas a job may have.
    pub fn completion_indexes(&self) -> Vec<i64> {
        let completions = self.completions().clamp(0, crate::validate::REPLICAS_MAX);
        match self.chosen_indexes() {
            Some(indexes) if !indexes.is_empty() => {
                let mut indexes: Vec<i64> = indexes.iter().copied().filter(|i| (0..completions).contains(i)).collect();
                indexes.sort_unstable();
                indexes.dedup();
                indexes
            }
            _ => (0..completions).collect(),
        }
    }

    /// Whether replicas can reach each other (and get the rendezvous
    /// variables): always with more than one worker, else as set.
    pub fn intra_job_communication(&self) -> bool {
        self.workers() > 1 || self.intra_job_communication.unwrap_or(false)
    }

    /// Failed attempts a run tolerates in total before it fails
    /// (Kubernetes `backoffLimit`): `spec.backoff_limit` when set; else 3
    /// ([`BACKOFF_LIMIT`]); but a job that sets only a per-replica limit
    /// (`max_failure_retry`) has no overall limit
    /// ([`BACKOFF_LIMIT_WITH_PER_REPLICA_LIMIT`]), so the limit it asked for is
    /// the one that applies, as in Kubernetes and in Lepton, which has only
    /// the per-replica setting.
    pub fn backoff_limit(&self) -> i64 {
        match (self.backoff_limit, self.max_failure_retry) {
            (Some(limit), _) => limit,
            (None, Some(_)) => BACKOFF_LIMIT_WITH_PER_REPLICA_LIMIT,
            (None, None) => BACKOFF_LIMIT,
        }
    }

    /// Seconds the job may run; `None` means no deadline.
    pub fn active_deadline_seconds(&self) -> Option<i64> {
        self.active_deadline_seconds
    }

    /// Seconds the job may wait in the queue; `None` means no limit.
    pub fn max_queued_duration_seconds(&self) -> Option<i64> {
        self.max_queued_duration_seconds
    }

    /// Failed attempts one replica (completion index) tolerates before the
    /// run fails (Kubernetes `backoffLimitPerIndex`); `None`: no per-replica
    /// limit, the backoff limit alone bounds the retries.
    pub fn max_failure_retry(&self) -> Option<i64> {
        self.max_failure_retry.or(MAX_FAILURE_RETRY)
    }

    pub fn max_job_failure_retry(&self) -> i64 {
        self.max_job_failure_retry.unwrap_or(MAX_JOB_FAILURE_RETRY)
    }

    /// The archive time in seconds.
    pub fn ttl_seconds_after_finished(&self) -> i64 {
        self.ttl_seconds_after_finished.unwrap_or(TTL_SECONDS_AFTER_FINISHED)
    }

    pub fn disable_retry_on_program_error(&self) -> bool {
        self.disable_retry_on_program_error.unwrap_or(DISABLE_RETRY_ON_PROGRAM_ERROR)
    }

    /// The queue priority; Medium (4) when unset (or, on an invalid job, not
    /// a known priority class).
    pub fn priority(&self) -> Priority {
        self.queue_config
            .as_ref()
            .and_then(|q| q.priority_class.as_deref())
            .and_then(Priority::from_class)
            .unwrap_or(PRIORITY)
    }

    pub fn can_preempt(&self) -> bool {
        self.queue_config.as_ref().and_then(|q| q.can_preempt).unwrap_or(CAN_PREEMPT)
    }

    pub fn can_be_preempted(&self) -> bool {
        self.queue_config.as_ref().and_then(|q| q.can_be_preempted).unwrap_or(CAN_BE_PREEMPTED)
    }

    /// Whether logs are collected, given the workspace's default.
    pub fn log_collection(&self, workspace_default: bool) -> bool {
        self.log.as_ref().and_then(|l| l.enable_collection).or(LOG_COLLECTION).unwrap_or(workspace_default)
    }

    /// Shared memory in MiB on a shape with `shape_memory_mib` of memory:
    /// `spec.shared_memory_size` when set, else the table's default.
    pub fn shared_memory_mib(&self, shape_memory_mib: i64) -> i64 {
        self.shared_memory_size.unwrap_or_else(|| shared_memory_default_mib(shape_memory_mib))
    }

    /// Whether the job is stopped on request (`PATCH {"spec":{"stopped":true}}`).
    pub fn stopped(&self) -> bool {
        self.stopped.unwrap_or(false)
    }

    /// The node groups the job may run in; empty means any.
    pub fn node_groups(&self) -> &[String] {
        self.affinity.as_ref().and_then(|a| a.allowed_dedicated_node_groups.as_deref()).unwrap_or(&[])
    }

    /// Whether the job asks for privileged containers
    /// (`spec.user_security_context.privileged`).
    pub fn privileged(&self) -> bool {
        self.user_security_context.as_ref().and_then(|c| c.privileged) == Some(true)
    }

    /// The nodes within those groups the job may run on; empty means any.
    pub fn nodes(&self) -> &[String] {
        self.affinity.as_ref().and_then(|a| a.allowed_nodes_in_node_group.as_deref()).unwrap_or(&[])
    }

    pub fn envs(&self) -> &[EnvVar] {
        self.envs.as_deref().unwrap_or(&[])
    }

    pub fn mounts(&self) -> &[Mount] {
        self.mounts.as_deref().unwrap_or(&[])
    }

    pub fn image_pull_secrets(&self) -> &[String] {
        self.image_pull_secrets.as_deref().unwrap_or(&[])
    }
}

impl Container {
    /// The command and its arguments; empty means the image's entrypoint.
    pub fn command(&self) -> &[String] {
        self.command.as_deref().unwrap_or(&[])
    }

    /// The arguments after the command, or after the image's entrypoint.
    pub fn args(&self) -> &[String] {
        self.args.as_deref().unwrap_or(&[])
    }

    /// What a replica runs, as one list: the command, then the arguments.
    /// Without a command this is only the image entrypoint's arguments.
    pub fn command_line(&self) -> Vec<String> {
        self.command().iter().chain(self.args()).cloned().collect()
    }

    pub fn ports(&self) -> &[ContainerPort] {
        self.ports.as_deref().unwrap_or(&[])
    }

    /// The tag the image runs with: `image_tag` when set, else the tag inside
    /// `image`, else `latest`. `None` when `image` pins a digest instead.
    pub fn image_tag(&self) -> Option<&str> {
        if let Some(tag) = self.image_tag.as_deref() {
            return Some(tag);
        }
        match self.image.as_deref().map(split_image_reference) {
            Some(ImageReference { digest: Some(_), .. }) => None,
            Some(ImageReference { tag: Some(tag), .. }) => Some(tag),
            _ => Some(IMAGE_TAG),
        }
    }

    /// The full image reference to pull: `image` with its tag (explicit,
    /// embedded or `latest`) or digest. `None` when no image is set.
    pub fn image_reference(&self) -> Option<String> {
        let image = self.image.as_deref()?;
        let parts = split_image_reference(image);
        if parts.digest.is_some() || (parts.tag.is_some() && self.image_tag.is_none()) {
            return Some(image.to_string());
        }
        Some(format!("{}:{}", parts.name, self.image_tag().unwrap_or(IMAGE_TAG)))
    }
}

/// An image reference split into name, tag and digest:
/// `registry:5000/team/app:v1@sha256:…`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageReference<'a> {
    pub name: &'a str,
    pub tag: Option<&'a str>,
    pub digest: Option<&'a str>,
}

/// Splits `image` into name, tag and digest. A colon names a tag only after
/// the last `/`, so a registry port (`host:5000/app`) is not a tag.
pub fn split_image_reference(image: &str) -> ImageReference<'_> {
    let (rest, digest) = match image.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (image, None),
    };
    // The last colon starts a tag only if no `/` follows it. (`rsplit_once`
    // and a byte search rather than slicing at an index and
    // `str::contains`: the console shows image names, and their panic
    // paths would bring Rust's string escaping into its download.)
    match rest.rsplit_once(':') {
        Some((name, tag)) if !tag.as_bytes().contains(&b'/') => ImageReference { name, tag: Some(tag), digest },
        _ => ImageReference { name: rest, tag: None, digest },
    }
}

impl ContainerPort {
    /// The port's protocol; TCP when unset (or, on an invalid job, unknown).
    pub fn protocol(&self) -> Protocol {
        self.protocol.as_deref().and_then(Protocol::parse).unwrap_or(PORT_PROTOCOL)
    }
}

impl EnvVar {
    /// The secret the value comes from, if it comes from one.
    pub fn secret_ref(&self) -> Option<&str> {
        self.value_from.as_ref().and_then(|v| v.secret_name_ref.as_deref())
    }
}

impl LeptonJob {
    /// The job's name: `metadata.name`, or `metadata.id` for Lepton clients
    /// such as `lep job create`, which send the name as the id.
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().or(self.metadata.id.as_deref()).unwrap_or("")
    }

    /// Who may see the job; public unless set to private.
    pub fn visibility(&self) -> Visibility {
        self.metadata.visibility.unwrap_or(VISIBILITY)
    }
}

impl Secret {
    /// Who may see and use the secret; its owner alone unless set public.
    pub fn visibility(&self) -> Visibility {
        self.visibility.unwrap_or(SECRET_VISIBILITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Affinity, LogConfig, QueueConfig};

    const GIB: i64 = 1024;

    #[test]
    fn shared_memory_follows_the_table() {
        let cases = [
            (0, 0),
            (1, 0),
            (2 * GIB, GIB),
            (4 * GIB - 2, 2 * GIB - 1),
            (4 * GIB, 2 * GIB),
            (8 * GIB, 2 * GIB),
            (32 * GIB - 1, 2 * GIB),
            (32 * GIB, 16 * GIB),
            (64 * GIB, 16 * GIB),
            (128 * GIB, 32 * GIB),
            (256 * GIB, 32 * GIB),
            (512 * GIB, 64 * GIB),
            (1024 * GIB - 1, 64 * GIB),
            (1024 * GIB, 100 * GIB),
            (2048 * GIB, 100 * GIB),
            (-5, 0),
        ];
        for (memory, shared) in cases {
            assert_eq!(shared_memory_default_mib(memory), shared, "memory {memory} MiB");
        }
    }

    #[test]
    fn priorities_map_both_ways() {
        let expected = [
            (1, "low-1000", "low-1", "Low (1)"),
            (2, "low-2000", "low-2", "Low (2)"),
            (3, "low-3000", "low-3", "Low (3)"),
            (4, "mid-4000", "mid-4", "Medium (4)"),
            (5, "mid-5000", "mid-5", "Medium (5)"),
            (6, "mid-6000", "mid-6", "Medium (6)"),
            (7, "high-7000", "high-7", "High (7)"),
            (8, "high-8000", "high-8", "High (8)"),
            (9, "high-9000", "high-9", "High (9)"),
        ];
        for (level, class, short, label) in expected {
            let p = Priority::new(level).unwrap();
            assert_eq!(p.level(), level);
            assert_eq!(p.class(), class);
            assert_eq!(p.short_class(), short);
            assert_eq!(p.label(), label);
            assert_eq!(Priority::from_class(class), Some(p));
            assert_eq!(Priority::parse(class), Some(p));
            assert_eq!(Priority::parse(short), Some(p));
            assert_eq!(Priority::parse(&level.to_string()), Some(p));
        }
        assert_eq!(Priority::all().count(), 9);
        assert_eq!(Priority::default().class(), "mid-4000");
        assert_eq!(Priority::new(0), None);
        assert_eq!(Priority::new(10), None);
    }

    #[test]
    fn priority_parse_accepts_what_lep_accepts_and_nothing_else() {
        let cases: &[(&str, Option<u8>)] = &[
            ("l", Some(1)),
            ("low", Some(1)),
            ("LOW", Some(1)),
            ("m", Some(4)),
            ("mid", Some(4)),
            ("h", Some(7)),
            ("High", Some(7)),
            (" 9 ", Some(9)),
            ("MID-4000", Some(4)),
            ("0", None),
            ("10", None),
            ("low-4", None),
            ("mid-4001", None),
            ("mid-", None),
            ("medium", None),
            ("", None),
        ];
        for (input, level) in cases {
            assert_eq!(Priority::parse(input).map(Priority::level), *level, "{input:?}");
        }
        // The wire takes canonical classes only.
        assert_eq!(Priority::from_class("mid"), None);
        assert_eq!(Priority::from_class("MID-4000"), None);
    }

    #[test]
    fn protocols_parse_in_any_case() {
        assert_eq!(Protocol::parse("tcp"), Some(Protocol::Tcp));
        assert_eq!(Protocol::parse("Udp"), Some(Protocol::Udp));
        assert_eq!(Protocol::parse("SCTP"), Some(Protocol::Sctp));
        assert_eq!(Protocol::parse("http"), None);
        assert_eq!(ContainerPort::default().protocol(), Protocol::Tcp);
    }

    #[test]
    fn an_empty_spec_has_every_default() {
        let spec = JobSpec::default();
        assert_eq!(spec.workers(), 1);
        assert_eq!(spec.completions(), 1);
        assert_eq!(spec.parallelism(), 1);
        assert!(!spec.intra_job_communication());
        assert_eq!(spec.backoff_limit(), 3);
        assert_eq!(spec.active_deadline_seconds(), None);
        assert_eq!(spec.max_failure_retry(), None);
        assert_eq!(spec.max_job_failure_retry(), 0);
        assert_eq!(spec.ttl_seconds_after_finished(), 259_200);
        assert_eq!(spec.priority().class(), "mid-4000");
        assert!(!spec.can_preempt());
        assert!(!spec.can_be_preempted());
        assert!(spec.log_collection(true));
        assert!(!spec.log_collection(false));
        assert!(!spec.disable_retry_on_program_error());
        assert_eq!(spec.shared_memory_mib(32 * GIB), 16 * GIB);
        assert!(!spec.stopped());
        assert!(spec.node_groups().is_empty() && spec.nodes().is_empty());
        assert!(spec.envs().is_empty() && spec.mounts().is_empty());
        assert_eq!(spec.container.image_tag(), Some("latest"));
        assert_eq!(spec.container.image_reference(), None);
        assert_eq!(LeptonJob::default().visibility(), Visibility::Public);
        assert_eq!(Visibility::default(), Visibility::Public);
    }

    #[test]
    fn set_fields_win_over_defaults() {
        let spec = JobSpec {
            completions: Some(8),
            parallelism: Some(2),
            backoff_limit: Some(0),
            max_failure_retry: Some(5),
            ttl_seconds_after_finished: Some(60),
            shared_memory_size: Some(0),
            log: Some(LogConfig { enable_collection: Some(false), ..Default::default() }),
            queue_config: Some(QueueConfig {
                priority_class: Some("high-9000".into()),
                can_preempt: Some(true),
                can_be_preempted: Some(true),
            }),
            affinity: Some(Affinity { allowed_dedicated_node_groups: Some(vec!["gpu".into()]), ..Default::default() }),
            ..Default::default()
        };
        assert_eq!((spec.completions(), spec.parallelism(), spec.workers()), (8, 2, 1));
        assert_eq!(spec.backoff_limit(), 0);
        assert_eq!(spec.max_failure_retry(), Some(5));
        assert_eq!(spec.ttl_seconds_after_finished(), 60);
        assert_eq!(spec.shared_memory_mib(32 * GIB), 0);
        assert!(!spec.log_collection(true));
        assert_eq!(spec.priority().level(), 9);
        assert!(spec.can_preempt() && spec.can_be_preempted());
        assert_eq!(spec.node_groups(), ["gpu".to_string()]);
    }

    #[test]
    fn a_per_replica_limit_alone_lifts_the_overall_default() {
        // (backoff_limit, max_failure_retry) → (overall limit, per-replica limit)
        let cases = [
            (None, None, 3, None),
            (Some(0), None, 0, None),
            (None, Some(0), i64::from(i32::MAX), Some(0)),
            (None, Some(2), i64::from(i32::MAX), Some(2)),
            (Some(5), Some(2), 5, Some(2)),
            (Some(0), Some(2), 0, Some(2)),
        ];
        for (backoff_limit, max_failure_retry, overall, per_replica) in cases {
            let spec = JobSpec { backoff_limit, max_failure_retry, ..Default::default() };
            assert_eq!(
                (spec.backoff_limit(), spec.max_failure_retry()),
                (overall, per_replica),
                "backoff_limit {backoff_limit:?}, max_failure_retry {max_failure_retry:?}"
            );
        }
    }

    #[test]
    fn more_than_one_worker_sets_completions_parallelism_and_communication() {
        let spec = JobSpec { workers: Some(4), ..Default::default() };
        assert_eq!((spec.completions(), spec.parallelism()), (4, 4));
        assert!(spec.intra_job_communication());

        // What `lep job create --num-workers 3` sends.
        let lep = JobSpec {
            completions: Some(3),
            parallelism: Some(3),
            intra_job_communication: Some(true),
            ..Default::default()
        };
        assert_eq!((lep.workers(), lep.completions(), lep.parallelism()), (3, 3, 3));

        // Indexed work without communication is not "workers".
        let indexed = JobSpec { completions: Some(3), parallelism: Some(3), ..Default::default() };
        assert_eq!(indexed.workers(), 1);
        assert!(!indexed.intra_job_communication());
    }

    #[test]
    fn image_references_get_their_tag() {
        let cases: &[(&str, Option<&str>, Option<&str>, &str)] = &[
            ("busybox", None, Some("latest"), "busybox:latest"),
            ("busybox", Some("1.36"), Some("1.36"), "busybox:1.36"),
            ("busybox:1.35", None, Some("1.35"), "busybox:1.35"),
            ("nvcr.io/nvidia/pytorch:25.08-py3", None, Some("25.08-py3"), "nvcr.io/nvidia/pytorch:25.08-py3"),
            ("registry:5000/team/app", None, Some("latest"), "registry:5000/team/app:latest"),
            ("registry:5000/team/app:v2", None, Some("v2"), "registry:5000/team/app:v2"),
            ("app@sha256:abc", None, None, "app@sha256:abc"),
        ];
        for (image, tag, effective_tag, reference) in cases {
            let container =
                Container { image: Some(image.to_string()), image_tag: tag.map(String::from), ..Default::default() };
            assert_eq!(container.image_tag(), *effective_tag, "{image}");
            assert_eq!(container.image_reference().as_deref(), Some(*reference), "{image}");
        }
    }

    #[test]
    fn lep_jobs_are_named_by_their_id() {
        let mut job = LeptonJob::default();
        job.metadata.id = Some("hello".into());
        assert_eq!(job.name(), "hello");
        job.metadata.name = Some("named".into());
        assert_eq!(job.name(), "named");
    }
}
