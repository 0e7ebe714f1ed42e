//! The kubernetes executor (design §5): every job is a `batch/v1` Job in
//! Indexed completion mode, its replicas are the Job's pods.
//!
//! * [`mapping`] renders a job as Kubernetes objects (pure; `jobdeck kube
//!   render` prints its output);
//! * [`status`] translates pods, Jobs and events back into replicas,
//!   readiness issues, events and failure classes (pure);
//! * [`executor`] talks to the API server with kube-rs: creates, suspends
//!   and deletes Jobs, watches Jobs, pods and events ([`watch`]) and copies
//!   pod logs into the log store ([`pod_logs`]);
//! * [`security`] says who a container runs as;
//! * [`settings`] is the `[executor.kubernetes]` table of the config file.

pub mod executor;
pub mod mapping;
pub mod names;
pub mod network_policy;
pub mod pod_logs;
pub mod pod_metrics;
pub mod security;
pub mod settings;
pub mod spec_values;
pub mod status;
pub mod watch;

pub use executor::{ConnectError, KubernetesExecutor};
pub use mapping::{render, KubeObjects, RenderInput, SecretValues};
pub use settings::KubernetesSettings;
