//! The settings of the kubernetes executor: how to reach the cluster and how
//! Jobdeck's node groups, volumes and priorities map onto it.
//!
//! They are read from the `[executor.kubernetes]` table of the config file;
//! every key has a default except the node-group mapping, which only the
//! cluster's administrator knows.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use jobdeck_core::config::ConfigError;

/// The label every node carries with its own name (set by the kubelet).
pub const DEFAULT_NODE_NAME_LABEL: &str = "kubernetes.io/hostname";
/// The extended resource NVIDIA's device plugin advertises.
pub const DEFAULT_GPU_RESOURCE: &str = "nvidia.com/gpu";
/// The rendezvous port of the torch-style variables; the value Lepton's
/// `lepton_env_to_pytorch.sh` uses.
pub const DEFAULT_MASTER_PORT: u16 = 29400;
/// How long a pod may wait on an unpullable image before its run fails.
pub const DEFAULT_STUCK_POD_TIMEOUT_SECONDS: u64 = 300;
/// Prefix of the PriorityClass names in `deploy/kubernetes/priority-classes.yaml`.
pub const DEFAULT_PRIORITY_CLASS_PREFIX: &str = "jobdeck-";

/// `[executor.kubernetes]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KubernetesSettings {
    /// A kubeconfig file. Absent: the in-cluster service account when Jobdeck
    /// runs in a pod, otherwise `$KUBECONFIG` or `~/.kube/config`.
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context; absent uses the file's current context.
    pub context: Option<String>,
    /// The namespace jobs run in. Absent: the namespace of the in-cluster
    /// service account or of the kubeconfig context, else `default`.
    pub namespace: Option<String>,
    /// Node group name → what its jobs need besides the group's node labels
    /// (`node_selector` of `[[node_groups]]`).
    pub node_groups: BTreeMap<String, NodeGroupPlacement>,
    /// The node label that holds a node's name; "nodes" of a job select on it.
    pub node_name_label: String,
    /// The extended resource name of the shapes' accelerators.
    pub gpu_resource: String,
    /// Whether pods name a PriorityClass. Turn off on clusters where the
    /// classes of `deploy/kubernetes/priority-classes.yaml` are not installed.
    pub priority_classes: bool,
    /// Prefix of the PriorityClass names.
    pub priority_class_prefix: String,
    /// The `MASTER_PORT` of multi-worker jobs.
    pub master_port: u16,
    /// Volume name (a mount's `from`) → the Kubernetes volume behind it.
    pub volumes: BTreeMap<String, VolumeSource>,
    /// The service account job pods run as; absent uses the namespace's
    /// `default`. Its token is never mounted: jobs have no business with the
    /// Kubernetes API.
    pub job_service_account: Option<String>,
    /// Secrets of the namespace that jobs may name in
    /// `spec.image_pull_secrets` (a registry Secret the cluster's operators
    /// made). Any other name must be an image pull secret stored in Jobdeck
    /// that its user may use: never another job's Secret of the namespace,
    /// such as the registry Secret Jobdeck made for another user's job.
    pub image_pull_secrets: Vec<String>,
    /// `Always`, `IfNotPresent` or `Never`; absent leaves Kubernetes' default
    /// (`Always` for `latest`, `IfNotPresent` otherwise).
    pub image_pull_policy: Option<String>,
    /// How long a pod may wait on an image that cannot be pulled or on a
    /// configuration the kubelet rejects before its run fails. Kubernetes
    /// itself would retry such a pod forever.
    pub stuck_pod_timeout_seconds: u64,
    /// How often pods' CPU and memory are read from `metrics.k8s.io`
    /// (metrics-server refreshes every 15 s by default); 0: never.
    pub metrics_interval_seconds: u64,
    /// Whether each run gets a NetworkPolicy: its pods take connections
    /// only from pods of the same job and reach nothing in
    /// `blocked_networks`. Needs a network plugin that enforces them.
    pub network_policies: bool,
    /// Networks no job may reach (CIDR); the link-local range holds the
    /// cloud metadata address.
    pub blocked_networks: Vec<String>,
}

impl Default for KubernetesSettings {
    fn default() -> Self {
        Self {
            kubeconfig: None,
            context: None,
            namespace: None,
            node_groups: BTreeMap::new(),
            node_name_label: DEFAULT_NODE_NAME_LABEL.into(),
            gpu_resource: DEFAULT_GPU_RESOURCE.into(),
            priority_classes: true,
            priority_class_prefix: DEFAULT_PRIORITY_CLASS_PREFIX.into(),
            master_port: DEFAULT_MASTER_PORT,
            volumes: BTreeMap::new(),
            job_service_account: None,
            image_pull_secrets: Vec::new(),
            image_pull_policy: None,
            stuck_pod_timeout_seconds: DEFAULT_STUCK_POD_TIMEOUT_SECONDS,
            metrics_interval_seconds: 15,
            network_policies: true,
            blocked_networks: vec!["169.254.0.0/16".into()],
        }
    }
}

/// The taints of a node group's nodes that its jobs tolerate.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NodeGroupPlacement {
    /// Taints of the group's nodes that its jobs tolerate.
    pub tolerations: Vec<TolerationSetting>,
}

/// One toleration, as in a pod spec.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TolerationSetting {
    pub key: Option<String>,
    /// `Exists` or `Equal` (Kubernetes' default).
    pub operator: Option<String>,
    pub value: Option<String>,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`; absent matches all.
    pub effect: Option<String>,
}

/// The Kubernetes volume behind a Jobdeck volume name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum VolumeSource {
    /// A PersistentVolumeClaim in the jobs' namespace.
    PersistentVolumeClaim { claim_name: String },
    /// An NFS export.
    Nfs { server: String, path: String },
    /// A directory on the node; for single-node clusters and shared file
    /// systems mounted on every node.
    HostPath { path: String },
}

impl KubernetesSettings {
    /// Reads `[executor.kubernetes]` as the config file wrote it; an unknown
    /// key or a bad value is an error naming it.
    pub fn from_table(table: &toml::Table) -> Result<Self, ConfigError> {
        let settings: KubernetesSettings = table
            .clone()
            .try_into()
            .map_err(|source| ConfigError::Section { section: "executor.kubernetes", source })?;
        settings.check()?;
        Ok(settings)
    }

    /// Problems with the settings themselves, one sentence each naming the key.
    pub fn check(&self) -> Result<(), ConfigError> {
        let mut problems = Vec::new();
        if let Some(ns) = &self.namespace {
            if let Err(e) = super::names::check_dns_label(ns) {
                problems.push(format!("executor.kubernetes.namespace: {e}"));
            }
        }
        if let Some(policy) = &self.image_pull_policy {
            if !["Always", "IfNotPresent", "Never"].contains(&policy.as_str()) {
                problems.push(format!(
                    "executor.kubernetes.image_pull_policy: must be Always, IfNotPresent or Never, not '{policy}'"
                ));
            }
        }
        for (i, network) in self.blocked_networks.iter().enumerate() {
            if !jobdeck_core::config::is_network(network) {
                problems.push(format!(
                    "executor.kubernetes.blocked_networks[{i}]: '{network}' is not an IP address or network"
                ));
            }
        }
        if self.master_port == 0 {
            problems.push("executor.kubernetes.master_port: must be 1..65535".into());
        }
        for (group, placement) in &self.node_groups {
            for (i, t) in placement.tolerations.iter().enumerate() {
                if let Some(op) = &t.operator {
                    if op != "Exists" && op != "Equal" {
                        problems.push(format!(
                            "executor.kubernetes.node_groups.{group}.tolerations[{i}].operator: must be Exists or Equal, not '{op}'"
                        ));
                    }
                }
                if let Some(effect) = &t.effect {
                    if !["NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&effect.as_str()) {
                        problems.push(format!(
                            "executor.kubernetes.node_groups.{group}.tolerations[{i}].effect: must be NoSchedule, PreferNoSchedule or NoExecute, not '{effect}'"
                        ));
                    }
                }
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError::Rule(problems.join("; ")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_from_toml_with_defaults() {
        let settings: KubernetesSettings = toml::from_str(
            r#"
            namespace = "ml"
            [node_groups.h100]
            tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
            [volumes.shared]
            persistent_volume_claim = { claim_name = "team-data" }
            "#,
        )
        .unwrap();
        assert_eq!(settings.namespace.as_deref(), Some("ml"));
        assert_eq!(settings.gpu_resource, "nvidia.com/gpu");
        assert_eq!(settings.master_port, 29400);
        assert_eq!(settings.node_groups["h100"].tolerations[0].effect.as_deref(), Some("NoSchedule"));
        assert_eq!(settings.volumes["shared"], VolumeSource::PersistentVolumeClaim { claim_name: "team-data".into() });
        settings.check().unwrap();
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let err = toml::from_str::<KubernetesSettings>("namespce = \"x\"").unwrap_err();
        assert!(err.to_string().contains("namespce"), "{err}");
        let table: toml::Table = toml::from_str("namespce = \"x\"").unwrap();
        let err = format!("{:#}", anyhow::Error::from(KubernetesSettings::from_table(&table).unwrap_err()));
        assert!(err.starts_with("executor.kubernetes:") && err.contains("namespce"), "{err}");
        let table: toml::Table = toml::from_str("namespace = \"ml\"\nstuck_pod_timeout_seconds = 60").unwrap();
        let settings = KubernetesSettings::from_table(&table).unwrap();
        assert_eq!((settings.namespace.as_deref(), settings.stuck_pod_timeout_seconds), (Some("ml"), 60));
    }

    #[test]
    fn bad_settings_name_the_key() {
        let cases: &[(&str, &str)] = &[
            ("namespace = \"Bad_NS\"", "executor.kubernetes.namespace"),
            ("image_pull_policy = \"Sometimes\"", "executor.kubernetes.image_pull_policy"),
            ("master_port = 0", "executor.kubernetes.master_port"),
            (
                "[node_groups.a]\ntolerations = [{ operator = \"Maybe\" }]",
                "executor.kubernetes.node_groups.a.tolerations[0].operator",
            ),
        ];
        for (toml_text, key) in cases {
            let settings: KubernetesSettings = toml::from_str(toml_text).unwrap();
            let err = settings.check().unwrap_err().to_string();
            assert!(err.contains(key), "{toml_text}: {err}");
        }
    }
}
