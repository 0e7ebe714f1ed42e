//! The kubernetes executor: runs each run of a job as a `batch/v1` Job and
//! reports its pods as replica attempts through the [`ExecutorHost`].
//!
//! * `start` renders the run ([`super::mapping`]), creates the Job
//!   suspended, then its Secrets and Service owned by it (so Kubernetes
//!   deletes them with the Job), then resumes it. A Job left by an earlier
//!   run of the same job is deleted first: a run always starts from scratch,
//!   as it does on the local executor.
//! * `stop` suspends the Job: the Job controller deletes its pods and keeps
//!   the Job (and its record of completed indexes) until the next start or
//!   `forget`.
//! * One controller task keeps the view of the cluster: it watches the
//!   Jobs and pods Jobdeck manages and the namespace's Job and pod events
//!   (keeping those about its own objects), turns pods
//!   into replica observations (completion index from the
//!   `batch.kubernetes.io/job-completion-index` annotation, attempt numbers
//!   in creation order), copies every replica's log into the log store, ends
//!   runs whose pods can never start (an image that cannot be pulled), and
//!   reports each run's outcome from the Job's conditions.
//!
//! What the executor needs to survive a restart lives in the cluster (the
//! Jobs and pods, labelled with job id and run) and in each replica's
//! `executor_state` (the pod's uid, and whether its log was copied).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use jobdeck_api::{EndReason, FieldErrors, JobRequirements, JobSpec, ReadinessIssue, ReplicaPhase};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Pod, Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::Client;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

use super::mapping::{
    self, KubeObjects, NodeGroupTarget, RenderInput, SecretValues, ShapeResources, LABEL_JOB_ID, LABEL_MANAGED_BY,
    LABEL_RUN, MANAGED_BY_VALUE,
};
use super::settings::KubernetesSettings;
use super::spec_values::SpecValues;
use super::status::{self, JobEnd, PodAttempt, RunFailure};
use super::watch::{self, Change, Selector};
use jobdeck_core::config::{Config, ConfigError, ExecutorKind};
use jobdeck_core::executor::{
    replica_id, BoxFuture, EventType, Executor, ExecutorError, ExecutorEvent, ExecutorHost, JobLaunch,
    ReplicaObservation, RunOutcome, StopReason,
};
use jobdeck_core::spec::ResolvedSpec;

mod controller;
mod objects;
mod run_state;

use self::controller::{ClusterController, Command};
use self::objects::*;
use self::run_state::*;

/// How long `start` waits for the Job of an earlier run to be gone.
const OLD_JOB_GONE_TIMEOUT: Duration = Duration::from_secs(60);
/// How often the controller looks for pods that can never start.
const TICK: Duration = Duration::from_secs(2);
/// At most this many repetitions of one Kubernetes event are recorded per
/// observation; the store folds repetitions into a count.
const MAX_EVENT_REPEATS: i64 = 20;
/// How long an event about an object Jobdeck does not know is kept, in case
/// its object arrives after it (the watches of events and of pods are
/// separate streams).
const EVENT_GRACE: Duration = Duration::from_secs(60);
/// How long a log copy that broke waits before it is started again; the
/// pause doubles with each break, up to the maximum.
const LOG_RETRY_DELAY: Duration = Duration::from_secs(1);
const LOG_RETRY_MAX_DELAY: Duration = Duration::from_secs(60);

/// The kubernetes executor. Cheap to clone; every clone drives the same
/// controller.
#[derive(Clone)]
pub struct KubernetesExecutor {
    shared: Arc<Shared>,
    commands: mpsc::UnboundedSender<Command>,
}

struct Shared {
    client: Client,
    namespace: String,
    settings: KubernetesSettings,
    config: Arc<Config>,
    host: ExecutorHost,
}

impl Shared {
    fn jobs(&self) -> Api<Job> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }
    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }
    fn secrets(&self) -> Api<Secret> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }
    fn services(&self) -> Api<Service> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }
    fn network_policies(&self) -> Api<k8s_openapi::api::networking::v1::NetworkPolicy> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }
    fn events(&self) -> Api<Event> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }
}

/// Why the Kubernetes executor could not reach its cluster at start.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error(transparent)]
    Settings(#[from] ConfigError),
    #[error("cannot read the kubeconfig {}", path.display())]
    ReadKubeconfig {
        path: PathBuf,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error("cannot use the kubeconfig {}", path.display())]
    UseKubeconfig {
        path: PathBuf,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error("cannot use the kubeconfig context")]
    UseContext(#[source] kube::config::KubeconfigError),
    #[error("no Kubernetes cluster found (not in a pod, and no usable $KUBECONFIG or ~/.kube/config)")]
    NoCluster(#[source] kube::config::InferConfigError),
    #[error("cannot build the Kubernetes client")]
    Client(#[source] kube::Error),
}

/// Builds the kube-rs configuration from the settings: a kubeconfig file
/// when one is named, else the in-cluster service account, else
/// `$KUBECONFIG` or `~/.kube/config`.
pub async fn kube_config(settings: &KubernetesSettings) -> Result<kube::Config, ConnectError> {
    let options = kube::config::KubeConfigOptions { context: settings.context.clone(), ..Default::default() };
    let config = match &settings.kubeconfig {
        Some(path) => {
            let file = kube::config::Kubeconfig::read_from(path)
                .map_err(|source| ConnectError::ReadKubeconfig { path: path.clone(), source })?;
            kube::Config::from_custom_kubeconfig(file, &options)
                .await
                .map_err(|source| ConnectError::UseKubeconfig { path: path.clone(), source })?
        }
        None if settings.context.is_some() => {
            kube::Config::from_kubeconfig(&options).await.map_err(ConnectError::UseContext)?
        }
        None => kube::Config::infer().await.map_err(ConnectError::NoCluster)?,
    };
    Ok(config)
}

impl KubernetesExecutor {
    /// Connects to the cluster the config's `[executor.kubernetes]` names.
    pub async fn connect(config: Arc<Config>, host: ExecutorHost) -> Result<Self, ConnectError> {
        let settings = KubernetesSettings::from_table(&config.executor.kubernetes)?;
        let kube_config = kube_config(&settings).await?;
        Self::with_kube_config(kube_config, settings, config, host)
    }

    /// Uses an explicit kube-rs configuration (tests point it at a fake API
    /// server). Starts the controller on the current Tokio runtime.
    pub fn with_kube_config(
        kube_config: kube::Config,
        settings: KubernetesSettings,
        config: Arc<Config>,
        host: ExecutorHost,
    ) -> Result<Self, ConnectError> {
        settings.check()?;
        let namespace = settings.namespace.clone().unwrap_or_else(|| kube_config.default_namespace.clone());
        let client = Client::try_from(kube_config).map_err(ConnectError::Client)?;
        let shared = Arc::new(Shared { client, namespace, settings, config, host });
        let (commands, command_rx) = mpsc::unbounded_channel();
        let controller = ClusterController::new(shared.clone(), commands.downgrade());
        tokio::spawn(controller.run(command_rx));
        Ok(Self { shared, commands })
    }

    /// The namespace jobs run in.
    pub fn namespace(&self) -> &str {
        &self.shared.namespace
    }

    /// Renders a run the way `start` creates it.
    pub async fn render_launch(&self, launch: &JobLaunch) -> Result<KubeObjects, ExecutorError> {
        let metadata = self
            .shared
            .host
            .job_metadata(&launch.job_id)
            .await
            .map_err(|e| ExecutorError::Failed(format!("cannot read job {}: {e:?}", launch.job_id)))?
            .unwrap_or_default();
        render_launch(&self.shared, launch, &metadata, false)
    }

    async fn send<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Command) -> Result<T, ExecutorError> {
        let (tx, rx) = oneshot::channel();
        self.commands
            .send(make(tx))
            .map_err(|_| ExecutorError::Failed("the kubernetes controller has stopped".into()))?;
        rx.await.map_err(|_| ExecutorError::Failed("the kubernetes controller has stopped".into()))
    }

    async fn start_run(&self, launch: JobLaunch) -> Result<(), ExecutorError> {
        let objects = self.render_launch(&launch).await?;
        let registered = self
            .send(|reply| Command::Register {
                run: Box::new(RunState::new(&launch, Vec::new(), jobdeck_store::now_millis())),
                reply,
            })
            .await?;
        if !registered {
            // This run is already being driven: starting it again does nothing.
            return Ok(());
        }
        match create_objects(&self.shared, &objects, launch.run).await {
            Ok(created) => {
                self.shared
                    .host
                    .event(ExecutorEvent {
                        job_id: launch.job_id.clone(),
                        kind: EventType::Normal,
                        reason: "KubernetesJobCreated".into(),
                        message: format!(
                            "{} batch/v1 Job {}/{} for run {}",
                            if created { "created" } else { "adopted" },
                            self.shared.namespace,
                            launch.job_id,
                            launch.run
                        ),
                        regarding_replica: None,
                    })
                    .await
                    .map_err(|e| ExecutorError::Failed(format!("{e:?}")))?;
                Ok(())
            }
            Err(e) => {
                let _ = self.commands.send(Command::Unregister { job_id: launch.job_id.clone(), run: launch.run });
                Err(e)
            }
        }
    }

    async fn stop_run(&self, job_id: &str, run: i64, reason: StopReason) -> Result<(), ExecutorError> {
        let known = self.send(|reply| Command::Stop { job_id: job_id.to_string(), run, reason, reply }).await?;
        if !known {
            self.shared.host.outcome(job_id, run, RunOutcome::Stopped);
            return Ok(());
        }
        match suspend(&self.shared, job_id).await {
            Ok(()) => Ok(()),
            Err(e) if e.is_not_found() => {
                // Nothing runs: the run is stopped already.
                let _ = self.commands.send(Command::JobGone { job_id: job_id.to_string(), run });
                Ok(())
            }
            Err(e) => Err(ExecutorError::Failed(format!("cannot suspend Kubernetes Job {job_id}: {e}"))),
        }
    }

    async fn recover_runs(&self, runs: Vec<JobLaunch>) -> Result<(), ExecutorError> {
        for launch in runs {
            let known: Vec<KnownAttempt> = self
                .shared
                .host
                .attempts(&launch.job_id)
                .await
                .map_err(|e| ExecutorError::Failed(format!("{e:?}")))?
                .into_iter()
                .filter(|row| row.run == launch.run)
                .filter_map(|row| {
                    let state: PodState = serde_json::from_str(row.executor_state.as_deref()?).ok()?;
                    Some(KnownAttempt {
                        uid: state.uid,
                        pod_name: state.pod,
                        completion_index: row.completion_index,
                        attempt: row.attempt,
                        finished: row.is_finished(),
                        logs_copied: state.logs_copied,
                    })
                })
                .collect();
            let had_replicas = !known.is_empty();
            let job = self.shared.jobs().get_opt(&launch.job_id).await.map_err(kube_error)?;
            let current = job.as_ref().is_some_and(|j| job_run(j) == Some(launch.run));
            if current {
                // The watchers deliver the Job and its pods to the run.
                self.send(|reply| Command::Register { run: Box::new(RunState::new(&launch, known, 0)), reply }).await?;
            } else if had_replicas {
                self.shared.host.outcome(
                    &launch.job_id,
                    launch.run,
                    RunOutcome::Failed {
                        reason: "JobLost".into(),
                        message: format!(
                            "the Kubernetes Job of run {} disappeared while Jobdeck was not running",
                            launch.run
                        ),
                        program_error: false,
                    },
                );
            } else {
                // The server stopped between admitting the run and creating
                // its Job: create it now.
                self.start_run(launch).await?;
            }
        }
        Ok(())
    }

    async fn forget_job(&self, job_id: &str) -> Result<(), ExecutorError> {
        let _ = self.commands.send(Command::Forget { job_id: job_id.to_string() });
        match self.shared.jobs().delete(job_id, &DeleteParams::background()).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(ExecutorError::Failed(format!("cannot delete Kubernetes Job {job_id}: {e}"))),
        }
    }
}

impl Executor for KubernetesExecutor {
    fn kind(&self) -> ExecutorKind {
        ExecutorKind::Kubernetes
    }

    fn requirements(&self) -> JobRequirements {
        JobRequirements {
            volumes: Some(self.shared.settings.volumes.keys().cloned().collect()),
            ..JobRequirements::default()
        }
    }

    fn runs_privileged_containers(&self) -> bool {
        true
    }

    fn cluster_pull_secrets(&self) -> Vec<String> {
        self.shared.settings.image_pull_secrets.clone()
    }

    fn check_spec(&self, spec: &JobSpec) -> FieldErrors {
        check_spec(&self.shared, spec)
    }

    fn notes(&self) -> Vec<String> {
        vec![format!(
            "jobs run as batch/v1 Jobs in Kubernetes namespace '{}'; replicas are their pods",
            self.shared.namespace
        )]
    }

    fn start(&self, launch: JobLaunch) -> BoxFuture<'_, Result<(), ExecutorError>> {
        Box::pin(self.start_run(launch))
    }

    fn stop(&self, job_id: &str, run: i64, reason: StopReason) -> BoxFuture<'_, Result<(), ExecutorError>> {
        let job_id = job_id.to_string();
        Box::pin(async move { self.stop_run(&job_id, run, reason).await })
    }

    fn recover(&self, runs: Vec<JobLaunch>) -> BoxFuture<'_, Result<(), ExecutorError>> {
        Box::pin(self.recover_runs(runs))
    }

    fn forget(&self, job_id: &str) -> BoxFuture<'_, Result<(), ExecutorError>> {
        let job_id = job_id.to_string();
        Box::pin(async move { self.forget_job(&job_id).await })
    }
}

trait NotFound {
    fn is_not_found(&self) -> bool;
}

impl NotFound for kube::Error {
    fn is_not_found(&self) -> bool {
        matches!(self, kube::Error::Api(status) if status.code == 404)
    }
}

fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(status) if status.code == 409)
}

fn kube_error(e: kube::Error) -> ExecutorError {
    ExecutorError::Failed(format!("Kubernetes API: {e}"))
}

fn job_run(job: &Job) -> Option<i64> {
    job.metadata.labels.as_ref()?.get(LABEL_RUN)?.parse().ok()
}

fn field_errors_message(errors: &FieldErrors) -> String {
    errors
        .iter()
        .flat_map(|(path, messages)| messages.iter().map(move |m| format!("{path}: {m}")))
        .collect::<Vec<_>>()
        .join("; ")
}

fn label<'a>(meta: &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta, key: &str) -> Option<&'a str> {
    meta.labels.as_ref()?.get(key).map(String::as_str)
}

fn creation_order(pod: &Pod) -> (i64, String) {
    (
        pod.metadata.creation_timestamp.as_ref().map(|t| t.0.as_millisecond()).unwrap_or(0),
        pod.metadata.name.clone().unwrap_or_default(),
    )
}
