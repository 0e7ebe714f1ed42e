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
use std::sync::Arc;
use std::time::Duration;

use jobdeck_api::{FieldErrors, JobRequirements, JobSpec, ReadinessIssue, ReplicaPhase};
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
use crate::config::{Config, ExecutorKind};
use crate::executor::{
    replica_id, BoxFuture, EventType, Executor, ExecutorError, ExecutorEvent, ExecutorHost, JobLaunch,
    ReplicaObservation, RunOutcome, StopReason,
};
use crate::spec::ResolvedSpec;

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
    fn events(&self) -> Api<Event> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }
}

/// Builds the kube-rs configuration from the settings: a kubeconfig file
/// when one is named, else the in-cluster service account, else
/// `$KUBECONFIG` or `~/.kube/config`.
pub async fn kube_config(settings: &KubernetesSettings) -> Result<kube::Config, String> {
    let options = kube::config::KubeConfigOptions { context: settings.context.clone(), ..Default::default() };
    let config = match &settings.kubeconfig {
        Some(path) => {
            let file = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| format!("cannot read the kubeconfig {}: {e}", path.display()))?;
            kube::Config::from_custom_kubeconfig(file, &options)
                .await
                .map_err(|e| format!("cannot use the kubeconfig {}: {e}", path.display()))?
        }
        None if settings.context.is_some() => kube::Config::from_kubeconfig(&options)
            .await
            .map_err(|e| format!("cannot use the kubeconfig context: {e}"))?,
        None => kube::Config::infer().await.map_err(|e| {
            format!("no Kubernetes cluster found (not in a pod, and no usable $KUBECONFIG or ~/.kube/config): {e}")
        })?,
    };
    Ok(config)
}

impl KubernetesExecutor {
    /// Connects to the cluster the config's `[executor.kubernetes]` names.
    pub async fn connect(config: Arc<Config>, host: ExecutorHost) -> Result<Self, String> {
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
    ) -> Result<Self, String> {
        settings.check()?;
        let namespace = settings.namespace.clone().unwrap_or_else(|| kube_config.default_namespace.clone());
        let client = Client::try_from(kube_config).map_err(|e| format!("cannot build the Kubernetes client: {e}"))?;
        let shared = Arc::new(Shared { client, namespace, settings, config, host });
        let (commands, command_rx) = mpsc::unbounded_channel();
        let controller = Controller::new(shared.clone(), commands.downgrade());
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
                run: Box::new(RunState::new(&launch, Vec::new(), crate::now_millis())),
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

fn render_launch(
    shared: &Shared,
    launch: &JobLaunch,
    metadata: &jobdeck_api::Metadata,
    suspended: bool,
) -> Result<KubeObjects, ExecutorError> {
    // The one resolution of the job, made by the scheduler, in the
    // mapping's terms.
    let values = SpecValues::from_resolved(&launch.resolved, &launch.spec);
    let shape = ShapeResources {
        cpu: launch.resolved.shape.cpu,
        memory_mib: launch.resolved.shape.memory_mb,
        gpus: launch.resolved.shape.gpus,
        accelerator_type: launch.resolved.shape.accelerator_type.clone(),
    };
    let group = shared
        .config
        .node_group(&launch.placement.node_group)
        .map(|g| NodeGroupTarget { name: g.name.clone(), node_labels: g.node_selector.clone() })
        .unwrap_or_else(|| NodeGroupTarget { name: launch.placement.node_group.clone(), node_labels: BTreeMap::new() });
    // The launch carries the job's environment with secrets resolved; only
    // the variables that reference a secret go into the Secret.
    let secret_values: BTreeMap<String, String> = launch
        .spec
        .envs
        .iter()
        .flatten()
        .filter(|e| e.value_from.as_ref().and_then(|v| v.secret_name_ref.as_ref()).is_some())
        .filter_map(|e| {
            launch.env.iter().find(|(name, _)| *name == e.name).map(|(name, value)| (name.clone(), value.clone()))
        })
        .collect();
    let mut spec = launch.spec.clone();
    spec.stopped = Some(suspended);
    let empty = BTreeMap::new();
    mapping::render(
        &RenderInput {
            job_id: &launch.job_id,
            job_name: &launch.job_name,
            run: launch.run,
            labels: metadata.labels.as_ref().unwrap_or(&empty),
            annotations: metadata.annotations.as_ref().unwrap_or(&empty),
            created_by: metadata.created_by.as_deref(),
            spec: &spec,
            values: &values,
            shape: &shape,
            node_group: Some(&group),
            namespace: &shared.namespace,
            secrets: SecretValues::Resolved(&secret_values),
            pull_credentials: &launch.pull_credentials,
        },
        &shared.settings,
    )
    .map_err(|e| ExecutorError::Failed(field_errors_message(&e)))
}

/// The problems with a spec that only the Kubernetes mapping sees (a volume
/// the cluster does not have, an image missing, a bad pull secret name).
///
/// The job's labels and annotations are not rendered here (the trait hands
/// over the spec alone): their rules, including the prefixes the mapping
/// reserves (`kubernetes.io/`, `k8s.io/` and `jobdeck.dev/`, with their
/// subdomains), are the contract's (`jobdeck_api::check_qualified_name`),
/// which the API and the console apply before a job is created. The
/// mapping applies the same function, so it cannot refuse metadata the API
/// accepted.
fn check_spec(shared: &Shared, spec: &JobSpec) -> FieldErrors {
    let resolved = match ResolvedSpec::resolve(spec, &shared.config) {
        Ok(resolved) => resolved,
        // The scheduler's own checks report these.
        Err(_) => return FieldErrors::new(),
    };
    let values = SpecValues::from_resolved(&resolved, spec);
    let shape = ShapeResources {
        cpu: resolved.shape.cpu,
        memory_mib: resolved.shape.memory_mb,
        gpus: resolved.shape.gpus,
        accelerator_type: resolved.shape.accelerator_type.clone(),
    };
    let empty = BTreeMap::new();
    let input = RenderInput {
        // A stand-in id: the real one is made when the job is stored.
        job_id: "check-00000",
        job_name: "check",
        run: 0,
        labels: &empty,
        annotations: &empty,
        created_by: None,
        spec,
        values: &values,
        shape: &shape,
        node_group: None,
        namespace: &shared.namespace,
        secrets: SecretValues::Redacted,
        pull_credentials: &[],
    };
    match mapping::render(&input, &shared.settings) {
        Ok(_) => FieldErrors::new(),
        Err(errors) => errors.into_iter().filter(|(path, _)| path.starts_with("spec.")).collect(),
    }
}

fn owner_reference(job: &Job) -> OwnerReference {
    OwnerReference {
        api_version: "batch/v1".into(),
        kind: "Job".into(),
        name: job.metadata.name.clone().unwrap_or_default(),
        uid: job.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        // Not blocking: that would need update rights on jobs/finalizers,
        // and Jobdeck deletes in the background anyway.
        block_owner_deletion: None,
    }
}

fn owned_by(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta, uid: &str) -> bool {
    meta.owner_references.iter().flatten().any(|o| o.uid == uid)
}

/// Creates one object owned by the Job; one left from an interrupted start
/// of this run is kept, one of another Job is replaced.
async fn create_owned<K>(api: &Api<K>, mut object: K, owner: &OwnerReference) -> Result<(), ExecutorError>
where
    K: kube::Resource + Clone + Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    object.meta_mut().owner_references = Some(vec![owner.clone()]);
    let name = object.meta().name.clone().unwrap_or_default();
    match api.create(&PostParams::default(), &object).await {
        Ok(_) => Ok(()),
        Err(e) if is_conflict(&e) => {
            let existing = api.get(&name).await.map_err(kube_error)?;
            if owned_by(existing.meta(), &owner.uid) {
                return Ok(());
            }
            match api.delete(&name, &DeleteParams::background()).await {
                Ok(_) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(kube_error(e)),
            }
            api.create(&PostParams::default(), &object).await.map_err(kube_error)?;
            Ok(())
        }
        Err(e) => Err(kube_error(e)),
    }
}

/// Creates a run's objects: the Job suspended (so no pod starts before its
/// Secrets exist), the Secrets and Service owned by it, then resumes the
/// Job. Returns whether the Job was created (false: this run's Job existed
/// already and was adopted).
async fn create_objects(shared: &Shared, objects: &KubeObjects, run: i64) -> Result<bool, ExecutorError> {
    let jobs = shared.jobs();
    let name = objects.job.metadata.name.clone().unwrap_or_default();
    let mut job = objects.job.clone();
    let resume = job.spec.as_ref().and_then(|s| s.suspend) != Some(true);
    if let Some(spec) = job.spec.as_mut() {
        spec.suspend = Some(true);
    }
    let (created_job, created) = match jobs.create(&PostParams::default(), &job).await {
        Ok(created) => (created, true),
        Err(e) if is_conflict(&e) => {
            let existing = jobs.get(&name).await.map_err(kube_error)?;
            if job_run(&existing) == Some(run) {
                (existing, false)
            } else {
                // A Job of an earlier run: a run always starts afresh.
                let uid = existing.metadata.uid.clone().unwrap_or_default();
                match jobs.delete(&name, &DeleteParams::background()).await {
                    Ok(_) => {}
                    Err(e) if e.is_not_found() => {}
                    Err(e) => return Err(kube_error(e)),
                }
                let deadline = tokio::time::Instant::now() + OLD_JOB_GONE_TIMEOUT;
                loop {
                    match jobs.get_opt(&name).await.map_err(kube_error)? {
                        Some(j) if j.metadata.uid.as_deref() == Some(uid.as_str()) => {
                            if tokio::time::Instant::now() >= deadline {
                                return Err(ExecutorError::Failed(format!(
                                    "the Kubernetes Job {name} of an earlier run is still being deleted"
                                )));
                            }
                            tokio::time::sleep(Duration::from_millis(250)).await;
                        }
                        _ => break,
                    }
                }
                (jobs.create(&PostParams::default(), &job).await.map_err(kube_error)?, true)
            }
        }
        Err(e) => return Err(kube_error(e)),
    };
    let owner = owner_reference(&created_job);
    if let Some(secret) = &objects.env_secret {
        create_owned(&shared.secrets(), secret.clone(), &owner).await?;
    }
    if let Some(secret) = &objects.registry_secret {
        create_owned(&shared.secrets(), secret.clone(), &owner).await?;
    }
    if let Some(service) = &objects.service {
        create_owned(&shared.services(), service.clone(), &owner).await?;
    }
    if resume {
        let patch = serde_json::json!({"spec": {"suspend": false}});
        jobs.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.map_err(kube_error)?;
    }
    Ok(created)
}

async fn suspend(shared: &Shared, job_id: &str) -> Result<(), kube::Error> {
    let patch = serde_json::json!({"spec": {"suspend": true}});
    shared.jobs().patch(job_id, &PatchParams::default(), &Patch::Merge(&patch)).await.map(|_| ())
}

/// What a replica's `executor_state` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct PodState {
    pod: String,
    uid: String,
    #[serde(default)]
    logs_copied: bool,
}

/// An attempt recorded before a restart.
#[derive(Debug, Clone)]
struct KnownAttempt {
    uid: String,
    pod_name: String,
    completion_index: i64,
    attempt: i64,
    finished: bool,
    logs_copied: bool,
}

/// One pod the run has given an attempt number.
#[derive(Debug, Clone)]
struct Tracked {
    pod_name: String,
    completion_index: i64,
    attempt: i64,
    /// The last state read from the pod.
    last: Option<PodAttempt>,
    /// The last observation reported.
    reported: Option<ReplicaObservation>,
    finished: bool,
    /// A copy of the log runs or ran to the end.
    log_started: bool,
    logs_copied: bool,
    /// When (Unix ms) a copy that broke, or ended while the container
    /// still ran, is started again.
    log_retry_at: Option<i64>,
    /// How many copies of this pod's log broke so far (the pause before the
    /// next doubles with each, so a lasting error is not retried every
    /// second).
    log_failures: u32,
    /// The kubelet said it is pulling the pod's image (a `Pulling` event,
    /// not yet followed by `Pulled` or a failure): a pending replica then
    /// says "Pulling image", as Lepton's do.
    pulling: bool,
    /// Since when (Unix ms) the pod waits on something that never resolves
    /// by itself.
    stuck_since: Option<i64>,
}

/// What the controller knows about one run.
struct RunState {
    job_id: String,
    run: i64,
    node_group: String,
    first_attempt: i64,
    log_collection: bool,
    /// When the run was registered; older events belong to earlier runs.
    since_ms: i64,
    job_uid: Option<String>,
    tracked: HashMap<String, Tracked>,
    next_attempt: BTreeMap<i64, i64>,
    stop: Option<StopReason>,
    /// Set when the run failed on Jobdeck's own account (a pod that can
    /// never start); the Job is being suspended.
    failure: Option<RunFailure>,
}

impl RunState {
    fn new(launch: &JobLaunch, known: Vec<KnownAttempt>, since_ms: i64) -> Self {
        let mut state = RunState {
            job_id: launch.job_id.clone(),
            run: launch.run,
            node_group: launch.placement.node_group.clone(),
            first_attempt: launch.first_attempt,
            log_collection: launch.resolved.log_collection,
            since_ms,
            job_uid: None,
            tracked: HashMap::new(),
            next_attempt: BTreeMap::new(),
            stop: None,
            failure: None,
        };
        for k in known {
            let next = state.next_attempt.entry(k.completion_index).or_insert(launch.first_attempt);
            *next = (*next).max(k.attempt + 1);
            state.tracked.insert(
                k.uid,
                Tracked {
                    pod_name: k.pod_name,
                    completion_index: k.completion_index,
                    attempt: k.attempt,
                    last: None,
                    reported: None,
                    finished: k.finished,
                    log_started: k.logs_copied,
                    logs_copied: k.logs_copied,
                    log_retry_at: None,
                    log_failures: 0,
                    pulling: false,
                    stuck_since: None,
                },
            );
        }
        state
    }

    fn replica_id(&self, tracked: &Tracked) -> String {
        replica_id(&self.job_id, tracked.completion_index, tracked.attempt)
    }
}

enum Command {
    /// Starts following a run; replies false when it is followed already.
    Register {
        run: Box<RunState>,
        reply: oneshot::Sender<bool>,
    },
    /// Forgets a run whose objects could not be created.
    Unregister {
        job_id: String,
        run: i64,
    },
    /// A stop was asked; replies whether the run is known.
    Stop {
        job_id: String,
        run: i64,
        reason: StopReason,
        reply: oneshot::Sender<bool>,
    },
    /// The run's Job no longer exists.
    JobGone {
        job_id: String,
        run: i64,
    },
    Forget {
        job_id: String,
    },
    /// A log copy ended.
    LogCopied {
        job_id: String,
        run: i64,
        uid: String,
        complete: bool,
    },
}

/// The single task that owns the view of the cluster.
struct Controller {
    shared: Arc<Shared>,
    commands: mpsc::WeakUnboundedSender<Command>,
    runs: HashMap<String, RunState>,
    /// The last state of every managed Job and pod, so a run registered
    /// after the watchers listed them (a recovery) still sees them.
    jobs: HashMap<String, Job>,
    pods: HashMap<String, Pod>,
    /// The current events about Jobdeck's Jobs and pods (Kubernetes keeps
    /// events about an hour), so a recovered run records what happened while
    /// the server was down, with when each arrived (Unix ms). Events about
    /// other objects are dropped once [`EVENT_GRACE`] has passed without
    /// their object showing up.
    events: HashMap<String, (Event, i64)>,
    /// Kubernetes event uid → the count already recorded.
    event_counts: HashMap<String, i64>,
    /// The log copies that run: pod uid → (job id, the task). They end with
    /// the controller, as they would with the server's process, so two
    /// copies never write one log.
    copies: HashMap<String, (String, tokio::task::AbortHandle)>,
    /// Whether the cluster serves `metrics.k8s.io`; false after a 404, and
    /// then never asked again.
    metrics_served: bool,
}

impl Controller {
    fn new(shared: Arc<Shared>, commands: mpsc::WeakUnboundedSender<Command>) -> Self {
        Self {
            shared,
            commands,
            runs: HashMap::new(),
            jobs: HashMap::new(),
            pods: HashMap::new(),
            events: HashMap::new(),
            event_counts: HashMap::new(),
            copies: HashMap::new(),
            metrics_served: true,
        }
    }

    async fn run(mut self, mut commands: mpsc::UnboundedReceiver<Command>) {
        let managed = Selector { labels: Some(format!("{LABEL_MANAGED_BY}={MANAGED_BY_VALUE}")), fields: None };
        // Events carry no labels of their object, and field selectors
        // select by one value, so Jobdeck's events cannot be asked for
        // directly: two watches narrow them to Job and pod events, and the
        // controller keeps those about its own objects (docs/kubernetes.md,
        // "Replicas, readiness and events").
        let events_about = |kind: &str| Selector { labels: None, fields: Some(format!("involvedObject.kind={kind}")) };
        let (job_tx, mut job_rx) = mpsc::channel(watch::BUFFER);
        let (pod_tx, mut pod_rx) = mpsc::channel(watch::BUFFER);
        let (job_event_tx, mut job_event_rx) = mpsc::channel(watch::BUFFER);
        let (pod_event_tx, mut pod_event_rx) = mpsc::channel(watch::BUFFER);
        let watchers = [
            tokio::spawn(watch::run(self.shared.jobs(), managed.clone(), job_tx, "jobs")),
            tokio::spawn(watch::run(self.shared.pods(), managed, pod_tx, "pods")),
            tokio::spawn(watch::run(self.shared.events(), events_about("Job"), job_event_tx, "Job events")),
            tokio::spawn(watch::run(self.shared.events(), events_about("Pod"), pod_event_tx, "pod events")),
        ];
        let mut tick = tokio::time::interval(TICK);
        let metrics_every = self.shared.settings.metrics_interval_seconds;
        let mut metrics = tokio::time::interval(Duration::from_secs(metrics_every.max(1)));
        metrics.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                command = commands.recv() => match command {
                    Some(command) => self.on_command(command).await,
                    None => break,
                },
                Some(change) = pod_rx.recv() => self.on_pods(change).await,
                Some(change) = job_rx.recv() => self.on_jobs(change).await,
                Some(change) = job_event_rx.recv() => self.on_events("Job", change).await,
                Some(change) = pod_event_rx.recv() => self.on_events("Pod", change).await,
                _ = tick.tick() => self.on_tick().await,
                _ = metrics.tick(), if metrics_every > 0 && self.metrics_served => self.sample_metrics().await,
            }
        }
        for watcher in watchers {
            watcher.abort();
        }
        for (_, (_, copy)) in self.copies.drain() {
            copy.abort();
        }
    }

    async fn on_command(&mut self, command: Command) {
        match command {
            Command::Register { run, reply } => {
                let known = self.runs.get(&run.job_id).is_some_and(|existing| existing.run == run.run);
                if known {
                    let _ = reply.send(false);
                    return;
                }
                let job_id = run.job_id.clone();
                self.runs.insert(job_id.clone(), *run);
                let _ = reply.send(true);
                self.replay(&job_id).await;
            }
            Command::Unregister { job_id, run } => {
                if self.runs.get(&job_id).is_some_and(|r| r.run == run) {
                    self.runs.remove(&job_id);
                }
            }
            Command::Stop { job_id, run, reason, reply } => match self.runs.get_mut(&job_id).filter(|r| r.run == run) {
                Some(state) => {
                    state.stop.get_or_insert(reason);
                    let _ = reply.send(true);
                }
                None => {
                    let _ = reply.send(false);
                }
            },
            Command::JobGone { job_id, run } => {
                if self.runs.get(&job_id).is_some_and(|r| r.run == run) {
                    self.job_deleted(&job_id).await;
                }
            }
            Command::Forget { job_id } => {
                self.runs.remove(&job_id);
                // The job's logs are being removed: its copies must not
                // write them again.
                self.copies.retain(|_, (job, copy)| {
                    if *job == job_id {
                        copy.abort();
                    }
                    *job != job_id
                });
            }
            Command::LogCopied { job_id, run, uid, complete } => {
                self.copies.remove(&uid);
                let Some(state) = self.runs.get_mut(&job_id).filter(|r| r.run == run) else {
                    return;
                };
                let Some(tracked) = state.tracked.get_mut(&uid) else {
                    return;
                };
                // The kubelet ends a followed log when the container stops
                // running; a stream that ends while the pod still reads as
                // running was cut (an API server restarting, an idle
                // timeout) and is copied on from where it stopped.
                let still_running =
                    tracked.last.as_ref().is_some_and(|a| a.phase == ReplicaPhase::Running && !a.terminating);
                if complete && !still_running {
                    tracked.logs_copied = true;
                    // Record that the copy is complete, so a restart does not
                    // copy it again. The copy usually ends after the attempt
                    // was recorded as ended, which a replica report cannot
                    // change any more; the executor state can.
                    let state = pod_state(tracked);
                    if let Some(observation) = tracked.reported.as_mut() {
                        observation.executor_state = Some(state.clone());
                    }
                    let (index, attempt) = (tracked.completion_index, tracked.attempt);
                    if let Err(e) = self.shared.host.executor_state(&job_id, index, attempt, state).await {
                        tracing::warn!("kubernetes: cannot record replica of {job_id}: {e:?}");
                    }
                } else {
                    // Started again on the next tick after a pause, or on
                    // the pod's next update, whichever comes first; the
                    // copy resumes after the last stored line.
                    tracked.log_started = false;
                    let pause =
                        LOG_RETRY_DELAY.saturating_mul(1 << tracked.log_failures.min(6)).min(LOG_RETRY_MAX_DELAY);
                    tracked.log_failures += 1;
                    tracked.log_retry_at = Some(crate::now_millis() + pause.as_millis() as i64);
                }
            }
        }
    }

    /// Feeds a newly registered run what the watchers already know.
    async fn replay(&mut self, job_id: &str) {
        let mut pods: Vec<Pod> =
            self.pods.values().filter(|p| label(&p.metadata, LABEL_JOB_ID) == Some(job_id)).cloned().collect();
        pods.sort_by_key(creation_order);
        for pod in pods {
            self.on_pod(&pod, false).await;
        }
        let mut events: Vec<Event> = self.events.values().map(|(e, _)| e.clone()).collect();
        events.sort_by_key(status::event_order);
        for event in events {
            self.on_event(&event).await;
        }
        if let Some(job) = self.jobs.get(job_id).cloned() {
            self.on_job(&job).await;
        }
    }

    async fn on_pods(&mut self, change: Change<Pod>) {
        match change {
            Change::Listed(mut pods) => {
                pods.sort_by_key(creation_order);
                let present: std::collections::HashSet<String> =
                    pods.iter().filter_map(|p| p.metadata.uid.clone()).collect();
                let vanished: Vec<Pod> =
                    self.pods.iter().filter(|(uid, _)| !present.contains(*uid)).map(|(_, p)| p.clone()).collect();
                for pod in vanished {
                    self.forget_pod(&pod);
                    self.on_pod(&pod, true).await;
                }
                for pod in pods {
                    self.remember_pod(&pod);
                    self.on_pod(&pod, false).await;
                }
            }
            Change::Applied(pod) => {
                self.remember_pod(&pod);
                self.on_pod(&pod, false).await;
            }
            Change::Deleted(pod) => {
                self.forget_pod(&pod);
                self.on_pod(&pod, true).await;
            }
        }
    }

    fn remember_pod(&mut self, pod: &Pod) {
        if let Some(uid) = &pod.metadata.uid {
            self.pods.insert(uid.clone(), pod.clone());
        }
    }

    fn forget_pod(&mut self, pod: &Pod) {
        if let Some(uid) = &pod.metadata.uid {
            self.pods.remove(uid);
        }
    }

    async fn on_jobs(&mut self, change: Change<Job>) {
        match change {
            Change::Listed(jobs) => {
                let present: std::collections::HashSet<String> =
                    jobs.iter().filter_map(|j| j.metadata.name.clone()).collect();
                let vanished: Vec<String> = self.jobs.keys().filter(|n| !present.contains(*n)).cloned().collect();
                for name in vanished {
                    if let Some(job) = self.jobs.remove(&name) {
                        self.on_job_deleted(&job).await;
                    }
                }
                for job in jobs {
                    if let Some(name) = &job.metadata.name {
                        self.jobs.insert(name.clone(), job.clone());
                    }
                    self.on_job(&job).await;
                }
            }
            Change::Applied(job) => {
                if let Some(name) = &job.metadata.name {
                    self.jobs.insert(name.clone(), job.clone());
                }
                self.on_job(&job).await;
            }
            Change::Deleted(job) => {
                if let Some(name) = &job.metadata.name {
                    self.jobs.remove(name);
                }
                self.on_job_deleted(&job).await;
            }
        }
    }

    /// Reads one pod into its run: assigns its attempt number, reports its
    /// state when it changed, starts copying its log, and notes pods that
    /// can never start.
    async fn on_pod(&mut self, pod: &Pod, deleted: bool) {
        let Some(job_id) = label(&pod.metadata, LABEL_JOB_ID).map(String::from) else {
            return;
        };
        let Some(state) = self.runs.get_mut(&job_id) else {
            return;
        };
        let run: Option<i64> = label(&pod.metadata, LABEL_RUN).and_then(|r| r.parse().ok());
        if run != Some(state.run) {
            return;
        }
        let Some(attempt) = status::pod_attempt(pod) else {
            return;
        };
        let now = crate::now_millis();
        let uid = attempt.pod_uid.clone();
        let newly_tracked = !state.tracked.contains_key(&uid);
        if newly_tracked {
            if deleted {
                // A pod we never saw alive: nothing to report.
                return;
            }
            let next = state.next_attempt.entry(attempt.completion_index).or_insert(state.first_attempt);
            let number = *next;
            *next += 1;
            state.tracked.insert(
                uid.clone(),
                Tracked {
                    pod_name: attempt.pod_name.clone(),
                    completion_index: attempt.completion_index,
                    attempt: number,
                    last: None,
                    reported: None,
                    finished: false,
                    log_started: false,
                    logs_copied: false,
                    log_retry_at: None,
                    log_failures: 0,
                    pulling: false,
                    stuck_since: None,
                },
            );
        }
        let stop = state.stop;
        let failure_reason = state.failure.as_ref().map(|f| f.reason.clone());
        let node_group = state.node_group.clone();
        let log_collection = state.log_collection;
        let run_number = state.run;
        let tracked = state.tracked.get_mut(&uid).expect("tracked above");
        tracked.pod_name = attempt.pod_name.clone();
        tracked.last = Some(attempt.clone());
        tracked.stuck_since = match attempt.wait {
            Some(status::WaitKind::ImagePull | status::WaitKind::Config) => tracked.stuck_since.or(Some(now)),
            _ => None,
        };

        let mut observation = observation(&job_id, run_number, &node_group, tracked, &attempt);
        let alive = matches!(observation.phase, ReplicaPhase::Pending | ReplicaPhase::Running);
        if alive && (deleted || attempt.terminating) {
            if let Some(reason) = failure_reason.as_deref() {
                end_observation(&mut observation, reason, "the run failed; its replicas were stopped", now);
            } else if let Some(reason) = stop {
                end_observation(&mut observation, reason.as_str(), "stopped by Jobdeck", now);
            } else if deleted {
                end_observation(&mut observation, "Deleted", "the pod was deleted outside Jobdeck", now);
            }
        }
        let finished = matches!(observation.phase, ReplicaPhase::Succeeded | ReplicaPhase::Failed);
        let start_log = log_collection
            && !deleted
            && !tracked.log_started
            && (observation.phase == ReplicaPhase::Running || (finished && attempt.start_time.is_some()));
        if tracked.finished {
            // A finished attempt keeps its final report.
        } else if tracked.reported.as_ref() != Some(&observation) {
            tracked.finished = finished;
            tracked.reported = Some(observation.clone());
            if let Err(e) = self.shared.host.replica(observation).await {
                tracing::warn!("kubernetes: cannot record replica of {job_id}: {e:?}");
            }
        }
        if start_log {
            let tracked = self.runs.get_mut(&job_id).and_then(|s| s.tracked.get_mut(&uid)).expect("tracked above");
            tracked.log_started = true;
            tracked.log_retry_at = None;
            let (pod, index, number) = (tracked.pod_name.clone(), tracked.completion_index, tracked.attempt);
            self.spawn_log_copy(&job_id, run_number, &uid, pod, index, number);
        }
        if newly_tracked {
            self.replay_pod_events(&uid, &attempt.pod_name).await;
        }
    }

    fn spawn_log_copy(&mut self, job_id: &str, run: i64, uid: &str, pod: String, index: i64, attempt: i64) {
        let pods = self.shared.pods();
        let logs = self.shared.host.logs().clone();
        let commands = self.commands.clone();
        let owner = job_id.to_string();
        let job_id = job_id.to_string();
        let key = uid.to_string();
        let uid = uid.to_string();
        let task = tokio::spawn(async move {
            let result = super::pod_logs::copy_pod_log(&pods, &pod, &logs, &job_id, index, attempt).await;
            if let Err(e) = &result {
                tracing::warn!("kubernetes: {e}");
            }
            if let Some(commands) = commands.upgrade() {
                let _ = commands.send(Command::LogCopied { job_id, run, uid, complete: result.is_ok() });
            }
        });
        if let Some((_, earlier)) = self.copies.insert(key, (owner, task.abort_handle())) {
            earlier.abort();
        }
    }

    /// Starts again the log copies that broke, once their pause is over,
    /// for pods that still exist.
    fn retry_log_copies(&mut self, now: i64) {
        let mut due = Vec::new();
        for state in self.runs.values_mut() {
            if !state.log_collection {
                continue;
            }
            for (uid, tracked) in state.tracked.iter_mut() {
                if tracked.log_started || tracked.logs_copied || tracked.log_retry_at.is_none_or(|at| at > now) {
                    continue;
                }
                if !self.pods.contains_key(uid) {
                    // The pod is gone, and its log with it: what was copied
                    // is all there is.
                    tracked.log_retry_at = None;
                    continue;
                }
                tracked.log_started = true;
                tracked.log_retry_at = None;
                due.push((
                    state.job_id.clone(),
                    state.run,
                    uid.clone(),
                    tracked.pod_name.clone(),
                    tracked.completion_index,
                    tracked.attempt,
                ));
            }
        }
        for (job_id, run, uid, pod, index, attempt) in due {
            self.spawn_log_copy(&job_id, run, &uid, pod, index, attempt);
        }
    }

    async fn on_job(&mut self, job: &Job) {
        let Some(job_id) = job.metadata.name.clone() else {
            return;
        };
        let Some(state) = self.runs.get_mut(&job_id) else {
            return;
        };
        if job_run(job) != Some(state.run) {
            return;
        }
        state.job_uid = job.metadata.uid.clone();
        match status::job_end(job) {
            Some(JobEnd::Succeeded) => {
                self.refresh_pods(&job_id).await;
                self.finish(&job_id, RunOutcome::Succeeded).await;
            }
            Some(JobEnd::Failed { reason, message }) => {
                self.refresh_pods(&job_id).await;
                let Some(state) = self.runs.get(&job_id) else {
                    return;
                };
                let attempts: Vec<PodAttempt> = state.tracked.values().filter_map(|t| t.last.clone()).collect();
                let failure = status::run_failure(&reason, &message, &attempts);
                self.finish_failed(&job_id, failure).await;
            }
            None => {
                if status::job_suspended(job) && (state.stop.is_some() || state.failure.is_some()) {
                    self.refresh_pods(&job_id).await;
                    self.finish_stopped(&job_id).await;
                }
            }
        }
    }

    async fn on_job_deleted(&mut self, job: &Job) {
        let Some(job_id) = job.metadata.name.clone() else {
            return;
        };
        let current = self.runs.get(&job_id).is_some_and(|s| job_run(job) == Some(s.run));
        if current {
            self.job_deleted(&job_id).await;
        }
    }

    async fn job_deleted(&mut self, job_id: &str) {
        let Some(state) = self.runs.get(job_id) else {
            return;
        };
        if state.stop.is_some() || state.failure.is_some() {
            self.finish_stopped(job_id).await;
        } else {
            let failure = RunFailure {
                reason: "JobDeleted".into(),
                message: "the Kubernetes Job was deleted outside Jobdeck".into(),
                class: status::FailureClass::Infra,
                program_error: false,
            };
            self.finish_failed(job_id, failure).await;
        }
    }

    /// Reads the run's pods again before its outcome is reported, so the
    /// last state of every replica is recorded first (the Job's watch can
    /// run ahead of the pods').
    async fn refresh_pods(&mut self, job_id: &str) {
        let Some(state) = self.runs.get(job_id) else {
            return;
        };
        let selector = format!("{LABEL_JOB_ID}={job_id},{LABEL_RUN}={}", state.run);
        match self.shared.pods().list(&ListParams::default().labels(&selector)).await {
            Ok(list) => {
                let mut pods = list.items;
                pods.sort_by_key(creation_order);
                for pod in pods {
                    self.remember_pod(&pod);
                    self.on_pod(&pod, false).await;
                }
            }
            Err(e) => tracing::warn!("kubernetes: cannot list the pods of {job_id}: {e}"),
        }
    }

    async fn finish_stopped(&mut self, job_id: &str) {
        self.end_alive_replicas(job_id).await;
        let Some(state) = self.runs.get(job_id) else {
            return;
        };
        match state.failure.clone() {
            Some(failure) => self.finish_failed(job_id, failure).await,
            None => self.finish(job_id, RunOutcome::Stopped).await,
        }
    }

    async fn finish_failed(&mut self, job_id: &str, failure: RunFailure) {
        let _ = self
            .shared
            .host
            .event(ExecutorEvent {
                job_id: job_id.to_string(),
                kind: EventType::Warning,
                reason: failure.reason.clone(),
                message: format!("{} ({})", failure.message, failure.class.as_str()),
                regarding_replica: None,
            })
            .await;
        self.end_alive_replicas(job_id).await;
        self.finish(
            job_id,
            RunOutcome::Failed {
                reason: failure.reason,
                message: failure.message,
                program_error: failure.program_error,
            },
        )
        .await;
    }

    /// Reports every replica that has not ended as ended by the stop (or
    /// failure) of its run.
    async fn end_alive_replicas(&mut self, job_id: &str) {
        let Some(state) = self.runs.get_mut(job_id) else {
            return;
        };
        let (reason, message) = match (&state.failure, state.stop) {
            (Some(f), _) => (f.reason.clone(), "the run failed; its replicas were stopped".to_string()),
            (None, Some(stop)) => (stop.as_str().to_string(), "stopped by Jobdeck".to_string()),
            (None, None) => ("Stopped".to_string(), "the run ended".to_string()),
        };
        let now = crate::now_millis();
        let mut reports = Vec::new();
        for tracked in state.tracked.values_mut().filter(|t| !t.finished) {
            let Some(mut observation) = tracked.reported.clone() else {
                continue;
            };
            end_observation(&mut observation, &reason, &message, now);
            tracked.finished = true;
            tracked.reported = Some(observation.clone());
            reports.push(observation);
        }
        for observation in reports {
            if let Err(e) = self.shared.host.replica(observation).await {
                tracing::warn!("kubernetes: cannot record replica of {job_id}: {e:?}");
            }
        }
    }

    async fn finish(&mut self, job_id: &str, outcome: RunOutcome) {
        if let Some(state) = self.runs.remove(job_id) {
            self.shared.host.outcome(job_id, state.run, outcome);
        }
    }

    /// Ends runs whose pods wait on something that never resolves by itself.
    /// Reads the CPU and memory of Jobdeck's running pods from
    /// `metrics.k8s.io` and records them as their attempts' samples.
    async fn sample_metrics(&mut self) {
        let mut attempts: HashMap<&str, (&str, i64, i64)> = HashMap::new();
        for (job_id, state) in &self.runs {
            for tracked in state.tracked.values().filter(|t| !t.finished) {
                if tracked.last.as_ref().is_some_and(|a| a.phase == ReplicaPhase::Running) {
                    attempts.insert(
                        tracked.pod_name.as_str(),
                        (job_id.as_str(), tracked.completion_index, tracked.attempt),
                    );
                }
            }
        }
        if attempts.is_empty() {
            return;
        }
        let selector = format!("{LABEL_MANAGED_BY}={MANAGED_BY_VALUE}");
        let uses = match super::pod_metrics::read(&self.shared.client, &self.shared.namespace, &selector).await {
            Ok(Some(uses)) => uses,
            Ok(None) => {
                tracing::info!(
                    "the cluster does not serve metrics.k8s.io (no metrics-server): replicas are not sampled"
                );
                self.metrics_served = false;
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot read pod metrics");
                return;
            }
        };
        let now = crate::now_millis();
        let mut samples = Vec::new();
        for pod_use in uses {
            let Some((job_id, index, attempt)) = attempts.get(pod_use.pod.as_str()) else { continue };
            for (series, value) in [
                (jobdeck_api::metrics::SERIES_CPU, pod_use.cores),
                (jobdeck_api::metrics::SERIES_MEMORY, pod_use.memory_bytes),
            ] {
                samples.push(crate::store::MetricSample {
                    job_id: job_id.to_string(),
                    completion_index: *index,
                    attempt: *attempt,
                    series: series.to_string(),
                    t: now,
                    value,
                });
            }
        }
        if let Err(e) = self.shared.host.metrics(samples).await {
            tracing::warn!(error = ?e, "cannot store pod metrics");
        }
    }

    async fn on_tick(&mut self) {
        let now = crate::now_millis();
        self.retry_log_copies(now);
        self.prune_events(now);
        let limit = (self.shared.settings.stuck_pod_timeout_seconds as i64).saturating_mul(1000);
        let mut failing = Vec::new();
        for state in self.runs.values_mut() {
            if state.failure.is_some() || state.stop.is_some() {
                continue;
            }
            let stuck = state
                .tracked
                .values()
                .filter(|t| !t.finished && t.stuck_since.is_some_and(|since| now - since >= limit))
                .filter_map(|t| t.last.as_ref())
                .min_by_key(|a| a.completion_index)
                .and_then(status::stuck_failure);
            if let Some(mut failure) = stuck {
                failure.message =
                    format!("{} (for more than {} s)", failure.message, self.shared.settings.stuck_pod_timeout_seconds);
                state.failure = Some(failure);
                failing.push(state.job_id.clone());
            }
        }
        for job_id in failing {
            match suspend(&self.shared, &job_id).await {
                Ok(()) => {}
                Err(e) if e.is_not_found() => self.finish_stopped(&job_id).await,
                Err(e) => tracing::warn!("kubernetes: cannot suspend Job {job_id}: {e}"),
            }
        }
    }

    /// Takes in what one events watch (of Job or of pod events) reports.
    async fn on_events(&mut self, kind: &str, change: Change<Event>) {
        let now = crate::now_millis();
        let events = match change {
            Change::Listed(events) => {
                // A list replaces what this watch reported before, not
                // what the other one did.
                self.events.retain(|_, (e, _)| e.involved_object.kind.as_deref() != Some(kind));
                for event in &events {
                    self.events.insert(event_key(event), (event.clone(), now));
                }
                // Repetition counts are kept while their event may come
                // again; an event in neither list is gone from Kubernetes.
                let events_now = &self.events;
                self.event_counts.retain(|key, _| events_now.contains_key(key));
                events
            }
            Change::Applied(event) => {
                self.events.insert(event_key(&event), (event.clone(), now));
                vec![event]
            }
            Change::Deleted(event) => {
                // Kubernetes deleted it (events live about an hour): no
                // repetition of it can come any more.
                let key = event_key(&event);
                self.events.remove(&key);
                self.event_counts.remove(&key);
                return;
            }
        };
        for event in events {
            self.on_event(&event).await;
        }
    }

    /// Drops cached events about objects that are not Jobdeck's (other
    /// workloads of the namespace), once an event has had time to be
    /// matched with an object that arrived after it. Jobdeck's objects are
    /// the Jobs and pods its label-selected watches see, and those of the
    /// runs it follows (a deleted pod's events stay while its run is
    /// followed, so a new list of events does not record them twice).
    fn prune_events(&mut self, now: i64) {
        use std::collections::HashSet;
        let mut pod_uids: HashSet<&str> = self.pods.keys().map(String::as_str).collect();
        let mut pod_names: HashSet<&str> = self.pods.values().filter_map(|p| p.metadata.name.as_deref()).collect();
        for state in self.runs.values() {
            pod_uids.extend(state.tracked.keys().map(String::as_str));
            pod_names.extend(state.tracked.values().map(|t| t.pod_name.as_str()));
        }
        let managed = |event: &Event| {
            let involved = &event.involved_object;
            match involved.kind.as_deref() {
                Some("Job") => involved
                    .name
                    .as_ref()
                    .is_some_and(|name| self.jobs.contains_key(name) || self.runs.contains_key(name)),
                Some("Pod") => {
                    involved.uid.as_deref().is_some_and(|uid| pod_uids.contains(uid))
                        || involved.name.as_deref().is_some_and(|name| pod_names.contains(name))
                }
                _ => false,
            }
        };
        let grace = EVENT_GRACE.as_millis() as i64;
        let stale: Vec<String> = self
            .events
            .iter()
            .filter(|(_, (event, arrived))| now - arrived >= grace && !managed(event))
            .map(|(key, _)| key.clone())
            .collect();
        for key in stale {
            self.events.remove(&key);
            self.event_counts.remove(&key);
        }
    }

    /// Records the cached events about a pod that was just given an attempt
    /// number: an event can arrive before the watch of pods delivers its pod.
    async fn replay_pod_events(&mut self, uid: &str, name: &str) {
        let mut events: Vec<Event> = self
            .events
            .values()
            .map(|(e, _)| e)
            .filter(|e| {
                e.involved_object.kind.as_deref() == Some("Pod")
                    && (e.involved_object.uid.as_deref() == Some(uid)
                        || e.involved_object.name.as_deref() == Some(name))
            })
            .cloned()
            .collect();
        events.sort_by_key(status::event_order);
        for event in events {
            self.on_event(&event).await;
        }
    }

    /// Records a Kubernetes event about a run's Job or one of its pods.
    async fn on_event(&mut self, event: &Event) {
        let involved = &event.involved_object;
        let (Some(kind), Some(name)) = (involved.kind.as_deref(), involved.name.as_deref()) else {
            return;
        };
        let (job_id, replica) = match kind {
            "Job" => {
                let Some(state) = self.runs.get(name) else {
                    return;
                };
                if involved.uid.is_some() && state.job_uid.is_some() && involved.uid != state.job_uid {
                    return;
                }
                (name.to_string(), None)
            }
            "Pod" => {
                let tracked = self.runs.values().find_map(|state| {
                    state
                        .tracked
                        .iter()
                        .find(|(uid, t)| Some(uid.as_str()) == involved.uid.as_deref() || t.pod_name == name)
                        .map(|(uid, t)| (state.job_id.clone(), uid.clone(), state.replica_id(t)))
                });
                match tracked {
                    Some((job_id, uid, replica)) => {
                        self.note_image_pull(&job_id, &uid, event.reason.as_deref()).await;
                        (job_id, Some(replica))
                    }
                    None => return,
                }
            }
            _ => return,
        };
        let Some(state) = self.runs.get(&job_id) else {
            return;
        };
        let translated = status::job_event(event, |_| replica.clone());
        let observed = translated
            .last_observed_time
            .parse::<k8s_openapi::jiff::Timestamp>()
            .map(|t| t.as_millisecond())
            .unwrap_or(i64::MAX);
        // A minute of slack for a cluster clock behind Jobdeck's.
        if observed < state.since_ms.saturating_sub(60_000) {
            return;
        }
        let uid = event_key(event);
        let seen = self.event_counts.get(&uid).copied().unwrap_or(0);
        if translated.count <= seen {
            return;
        }
        self.event_counts.insert(uid, translated.count);
        let repeats = (translated.count - seen).min(MAX_EVENT_REPEATS);
        let kind = translated.kind;
        for _ in 0..repeats {
            let result = self
                .shared
                .host
                .event(ExecutorEvent {
                    job_id: job_id.clone(),
                    kind,
                    reason: translated.reason.clone(),
                    message: translated.message.clone(),
                    regarding_replica: replica.clone(),
                })
                .await;
            if let Err(e) = result {
                tracing::warn!("kubernetes: cannot record an event of {job_id}: {e:?}");
                break;
            }
        }
    }
}

impl Controller {
    /// Follows the kubelet's image pull of a tracked pod from its events and
    /// reports a pending replica's readiness as "Pulling image" meanwhile.
    async fn note_image_pull(&mut self, job_id: &str, uid: &str, reason: Option<&str>) {
        let pulling = match reason {
            Some("Pulling") => true,
            Some("Pulled" | "Failed" | "BackOff" | "ErrImageNeverPull" | "InspectFailed") => false,
            _ => return,
        };
        let Some(state) = self.runs.get_mut(job_id) else { return };
        let (run, node_group) = (state.run, state.node_group.clone());
        let Some(tracked) = state.tracked.get_mut(uid) else { return };
        if tracked.pulling == pulling || tracked.finished {
            return;
        }
        tracked.pulling = pulling;
        let Some(attempt) = tracked.last.clone() else { return };
        let observation = observation(job_id, run, &node_group, tracked, &attempt);
        if tracked.reported.as_ref() != Some(&observation) {
            tracked.reported = Some(observation.clone());
            if let Err(e) = self.shared.host.replica(observation).await {
                tracing::warn!("kubernetes: cannot record replica of {job_id}: {e:?}");
            }
        }
    }
}

/// What identifies a Kubernetes event across its repetitions.
fn event_key(event: &Event) -> String {
    event.metadata.uid.clone().or_else(|| event.metadata.name.clone()).unwrap_or_default()
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

fn pod_state(tracked: &Tracked) -> String {
    let uid = tracked.last.as_ref().map(|a| a.pod_uid.clone()).unwrap_or_default();
    serde_json::to_string(&PodState { pod: tracked.pod_name.clone(), uid, logs_copied: tracked.logs_copied })
        .unwrap_or_default()
}

fn observation(
    job_id: &str,
    run: i64,
    node_group: &str,
    tracked: &Tracked,
    attempt: &PodAttempt,
) -> ReplicaObservation {
    ReplicaObservation {
        job_id: job_id.to_string(),
        run,
        completion_index: tracked.completion_index,
        attempt: tracked.attempt,
        phase: attempt.phase,
        readiness_issue: match &attempt.readiness_issue {
            // Lepton's words for a replica whose image is being pulled.
            Some(issue)
                if tracked.pulling && attempt.phase == ReplicaPhase::Pending && issue.reason == "InProgress" =>
            {
                Some(ReadinessIssue { reason: "InProgress".into(), message: "Pulling image".into() })
            }
            other => other.clone(),
        },
        node: attempt.node.clone(),
        node_group: attempt.node.as_ref().map(|_| node_group.to_string()),
        gpu_ids: Vec::new(),
        exit_code: attempt.exit_code,
        signal: attempt.signal,
        reason: attempt.reason.clone(),
        message: attempt.message.clone(),
        start_time: attempt.start_time,
        end_time: attempt.end_time,
        executor_state: Some(pod_state(tracked)),
        retry_at: None,
        executor_id: Some(attempt.pod_name.clone()),
    }
}

fn end_observation(observation: &mut ReplicaObservation, reason: &str, message: &str, now: i64) {
    observation.phase = ReplicaPhase::Failed;
    observation.readiness_issue = None;
    observation.reason = Some(reason.to_string());
    observation.message = Some(message.to_string());
    observation.end_time.get_or_insert(now);
}
