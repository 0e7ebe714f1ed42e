//! `[executor.slurm]`: how Jobdeck reaches a Slurm cluster and how its node
//! groups, priorities and images map onto it (docs/slurm.md).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use jobdeck_core::config::ConfigError;

/// The rendezvous port of multi-worker jobs (Lepton's).
pub const DEFAULT_MASTER_PORT: u16 = 29400;

/// `[executor.slurm]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SlurmSettings {
    /// The partition of node groups that `partitions` does not name; absent:
    /// the cluster's default partition.
    pub partition: Option<String>,
    /// Node group name → Slurm partition.
    pub partitions: BTreeMap<String, String>,
    /// `--account` of every job, when the cluster wants one.
    pub account: Option<String>,
    /// `--qos` of every job that `qos_by_priority` does not place.
    pub qos: Option<String>,
    /// Priority class (`high-9000`, …) → QOS. A priority without a QOS
    /// becomes a `--nice` value instead: 0 at the default priority and
    /// above, 1000 more per level below it (raising priority with a negative
    /// nice is for Slurm's operators only).
    pub qos_by_priority: BTreeMap<String, String>,
    /// Where jobs write their output and exit codes, one directory per job:
    /// it must be the same path on the server and on every compute node (a
    /// shared file system). Absent: `<data dir>/slurm`, right for a server
    /// on a one-node cluster or on a login node whose data directory is
    /// shared.
    pub log_dir: Option<PathBuf>,
    /// Whether the cluster runs pyxis: jobs then run in their image
    /// (`--container-image`); otherwise the image is ignored and the form
    /// says so.
    pub pyxis: bool,
    /// Where `sbatch`, `scontrol`, `squeue` and `scancel` are; absent: `PATH`.
    pub bin_dir: Option<PathBuf>,
    /// How often the state of running jobs is read (and their output copied
    /// into the log store), in milliseconds.
    pub poll_interval_ms: u64,
    /// The `MASTER_PORT` of multi-worker jobs.
    pub master_port: u16,
    /// The wait before a failed replica's retry (`--begin`), doubled per
    /// further failure, as the local executor's.
    pub retry_backoff_seconds: u64,
    pub retry_backoff_max_seconds: u64,
}

impl Default for SlurmSettings {
    fn default() -> Self {
        Self {
            partition: None,
            partitions: BTreeMap::new(),
            account: None,
            qos: None,
            qos_by_priority: BTreeMap::new(),
            log_dir: None,
            pyxis: false,
            bin_dir: None,
            poll_interval_ms: 1000,
            master_port: DEFAULT_MASTER_PORT,
            retry_backoff_seconds: 10,
            retry_backoff_max_seconds: 360,
        }
    }
}

impl SlurmSettings {
    /// Reads `[executor.slurm]` as the config file wrote it; an unknown key
    /// or a bad value is an error naming it.
    pub fn from_table(table: &toml::Table) -> Result<Self, ConfigError> {
        let settings: SlurmSettings =
            table.clone().try_into().map_err(|source| ConfigError::Section { section: "executor.slurm", source })?;
        settings.check()?;
        Ok(settings)
    }

    /// Problems with the settings themselves, each naming its key.
    pub fn check(&self) -> Result<(), ConfigError> {
        let word = |key: &str, value: &str| -> Result<(), ConfigError> {
            // A word as Slurm names things; never one that reads as an option.
            let ok = value.starts_with(|c: char| c.is_ascii_alphanumeric())
                && value.len() <= 128
                && value.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
            if ok {
                Ok(())
            } else {
                Err(ConfigError::Rule(format!(
                    "executor.slurm.{key}: '{value}' must be letters, digits, '-', '_' or '.'"
                )))
            }
        };
        for (key, value) in [("partition", &self.partition), ("account", &self.account), ("qos", &self.qos)] {
            if let Some(value) = value {
                word(key, value)?;
            }
        }
        for (group, partition) in &self.partitions {
            word(&format!("partitions.{group}"), partition)?;
        }
        for (class, qos) in &self.qos_by_priority {
            if jobdeck_api::Priority::from_class(class).is_none() {
                return Err(ConfigError::Rule(format!(
                    "executor.slurm.qos_by_priority: '{class}' is not a priority class ({})",
                    jobdeck_api::PRIORITY_CLASSES.join(", ")
                )));
            }
            word(&format!("qos_by_priority.{class}"), qos)?;
        }
        if self.poll_interval_ms == 0 {
            return Err(ConfigError::Rule("executor.slurm.poll_interval_ms must be more than 0".into()));
        }
        Ok(())
    }

    /// The wait before the retry after a replica's `failures`-th failure.
    pub fn retry_backoff(&self, failures: i64) -> std::time::Duration {
        jobdeck_core::config::retry_backoff(self.retry_backoff_seconds, self.retry_backoff_max_seconds, failures)
    }

    /// The partition of a node group, if one is set.
    pub fn partition_of(&self, node_group: &str) -> Option<&str> {
        self.partitions.get(node_group).or(self.partition.as_ref()).map(String::as_str)
    }

    /// A Slurm command (`sbatch`, …) as found in `bin_dir` or on `PATH`.
    pub fn command(&self, name: &str) -> PathBuf {
        match &self.bin_dir {
            Some(dir) => dir.join(name),
            None => PathBuf::from(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn settings_are_read_and_every_bad_value_is_named() {
        let ok = SlurmSettings::from_table(&table(
            "partition = \"batch\"\npartitions = { gpu-a = \"gpu\" }\nqos_by_priority = { high-9000 = \"urgent\" }\n",
        ))
        .unwrap();
        assert_eq!(ok.partition_of("gpu-a"), Some("gpu"));
        assert_eq!(ok.partition_of("other"), Some("batch"));
        assert_eq!(SlurmSettings::default().partition_of("other"), None);
        // (config, what the error names)
        let cases = [
            ("partion = \"x\"", "partion"),
            ("partition = \"a b\"", "executor.slurm.partition"),
            ("account = \"\"", "executor.slurm.account"),
            ("partitions = { g = \"--exclusive\" }", "executor.slurm.partitions.g"),
            ("qos_by_priority = { urgent = \"x\" }", "'urgent' is not a priority class"),
            ("poll_interval_ms = 0", "poll_interval_ms"),
        ];
        for (text, named) in cases {
            let err = format!("{:#}", anyhow::Error::from(SlurmSettings::from_table(&table(text)).unwrap_err()));
            assert!(err.contains(named), "{text}: {err}");
        }
    }
}
