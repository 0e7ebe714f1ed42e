//! The job spec → Kubernetes objects mapping: a pure function, so
//! `jobdeck kube render` and the tests see exactly what the executor sends.
//!
//! A job becomes a `batch/v1` Job in Indexed completion mode named after the
//! job's id, plus, when needed, a Secret with the values of the environment's
//! secret references, a `kubernetes.io/dockerconfigjson` Secret with the
//! registry credentials and a headless Service that gives every worker of a
//! multi-worker job a DNS name (`<job>-<index>.<job>`).

use std::collections::BTreeMap;

use jobdeck_api::defaults::{Priority, PRIORITY_CLASSES};
use jobdeck_api::{FieldErrors, JobSpec};
use k8s_openapi::api::batch::v1::{
    Job, JobSpec as KubeJobSpec, PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement,
    PodFailurePolicyOnPodConditionsPattern, PodFailurePolicyRule,
};
use k8s_openapi::api::core::v1::{
    Affinity as KubeAffinity, Container as KubeContainer, ContainerPort as KubePort, EmptyDirVolumeSource,
    EnvVar as KubeEnvVar, EnvVarSource, HostPathVolumeSource, LocalObjectReference, NFSVolumeSource, NodeAffinity,
    NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, ObjectFieldSelector, PersistentVolumeClaimVolumeSource,
    PodSpec, PodTemplateSpec, ResourceRequirements, Secret, SecretKeySelector, Service, ServicePort, ServiceSpec,
    Toleration, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;

use super::names;
use super::settings::{KubernetesSettings, VolumeSource};
use super::spec_values::SpecValues;

/// The name of the job's container in every pod.
pub const CONTAINER_NAME: &str = "job";
/// The annotation (and, since Kubernetes 1.28, label) the Job controller puts
/// on each pod of an Indexed Job with its completion index.
pub const COMPLETION_INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// Jobdeck's labels on every object it creates.
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY_VALUE: &str = "jobdeck";
pub const LABEL_JOB_ID: &str = "jobdeck.dev/job-id";
pub const LABEL_JOB_NAME: &str = "jobdeck.dev/job-name";
/// The run of the job a Job and its pods belong to (0, then one more after
/// each stop/start, preemption or job-level retry).
pub const LABEL_RUN: &str = "jobdeck.dev/run";
pub const LABEL_PRIORITY: &str = "jobdeck.dev/priority";
pub const LABEL_PREEMPTIBLE: &str = "jobdeck.dev/preemptible";
pub const LABEL_NODE_GROUP: &str = "jobdeck.dev/node-group";
pub const ANNOTATION_CREATED_BY: &str = "jobdeck.dev/created-by";
/// The key of the registry Secret's only entry.
pub const DOCKER_CONFIG_KEY: &str = ".dockerconfigjson";
/// Docker Hub's key in a docker config, for images without a registry host.
pub const DOCKER_HUB_AUTH_KEY: &str = "https://index.docker.io/v1/";
/// What `kube render` prints in place of a secret value.
pub const REDACTED: &str = "<redacted: write-only>";

/// Exit codes that do not count as a program error when
/// `disable_retry_on_program_error` is on. Any other non-zero exit of the job
/// container is the program's own failure. 137 (SIGKILL) and 143 (SIGTERM)
/// are excluded because the kubelet sends them, not the program: on an OOM
/// kill (its own class, `ERR_OOM`), an eviction, a preemption or a stop. The
/// list keeps 0 because the `NotIn` operator would otherwise match it. The
/// list is the shared classifier's (`jobdeck_core::failure`), so both executors
/// draw the line between program and infrastructure in the same place.
pub use jobdeck_core::failure::NOT_PROGRAM_ERROR_EXIT_CODES;

/// Where the values of secret references come from.
#[derive(Debug, Clone, Copy)]
pub enum SecretValues<'a> {
    /// The scheduler resolved every referenced secret: environment variable
    /// name → value.
    Resolved(&'a BTreeMap<String, String>),
    /// Rendering for people (`kube render`): values and the registry
    /// password are replaced by [`REDACTED`].
    Redacted,
}

/// What one replica gets, from the job's resource shape.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ShapeResources {
    pub cpu: f64,
    pub memory_mib: i64,
    pub gpus: i64,
    pub accelerator_type: Option<String>,
}

/// The node group the scheduler placed a run in, with the labels that select
/// its nodes (`node_selector` of `[[node_groups]]`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodeGroupTarget {
    pub name: String,
    pub node_labels: BTreeMap<String, String>,
}

/// Everything one run of a job is rendered from.
#[derive(Debug, Clone, Copy)]
pub struct RenderInput<'a> {
    /// The job's id: the name of the Job and of its Service.
    pub job_id: &'a str,
    pub job_name: &'a str,
    pub run: i64,
    pub labels: &'a BTreeMap<String, String>,
    pub annotations: &'a BTreeMap<String, String>,
    pub created_by: Option<&'a str>,
    pub spec: &'a JobSpec,
    /// The spec's values with defaults applied.
    pub values: &'a SpecValues,
    pub shape: &'a ShapeResources,
    pub node_group: Option<&'a NodeGroupTarget>,
    /// The namespace the objects go to.
    pub namespace: &'a str,
    pub secrets: SecretValues<'a>,
    /// The stored image pull secrets the job names (`spec.image_pull_secrets`
    /// names that are not stored refer to Secrets of the namespace).
    pub pull_credentials: &'a [jobdeck_core::executor::PullCredential],
}

/// The objects of one job, in the order they are created.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KubeObjects {
    pub job: Job,
    /// The environment's secret values; owned by the Job.
    pub env_secret: Option<Secret>,
    /// Registry credentials; owned by the Job.
    pub registry_secret: Option<Secret>,
    /// The headless Service of a multi-worker job; owned by the Job.
    pub service: Option<Service>,
    /// Who the job's pods may talk to (`network_policy.rs`); owned by the
    /// Job.
    pub network_policy: Option<k8s_openapi::api::networking::v1::NetworkPolicy>,
}

/// Why the objects could not be written as YAML.
#[derive(Debug, thiserror::Error)]
pub enum YamlError {
    #[error("cannot encode an object")]
    Encode(#[source] serde_json::Error),
    #[error("cannot write YAML")]
    Write(#[source] serde_saphyr::ser::Error),
}

impl KubeObjects {
    /// The objects as a multi-document YAML stream, as `kubectl apply -f`
    /// reads it: secrets and service first, the Job last.
    pub fn to_yaml(&self) -> Result<String, YamlError> {
        // k8s-openapi writes `apiVersion` and `kind` itself.
        let mut documents: Vec<serde_json::Value> = Vec::new();
        let mut push = |object: Result<serde_json::Value, serde_json::Error>| {
            object.map(|o| documents.push(o)).map_err(YamlError::Encode)
        };
        if let Some(s) = &self.env_secret {
            push(serde_json::to_value(s))?;
        }
        if let Some(s) = &self.registry_secret {
            push(serde_json::to_value(s))?;
        }
        if let Some(s) = &self.service {
            push(serde_json::to_value(s))?;
        }
        if let Some(p) = &self.network_policy {
            push(serde_json::to_value(p))?;
        }
        push(serde_json::to_value(&self.job))?;
        let mut out = String::new();
        for doc in documents {
            out.push_str("---\n");
            out.push_str(&serde_saphyr::to_string(&doc).map_err(YamlError::Write)?);
        }
        Ok(out)
    }
}

/// The name of the Secret holding a job's secret environment values.
pub fn env_secret_name(job_id: &str) -> String {
    format!("{job_id}-env")
}

/// The name of the Secret holding a job's registry credentials.
pub fn registry_secret_name(job_id: &str) -> String {
    format!("{job_id}-registry")
}

/// The PriorityClass a job's pods name: one class per priority and
/// preemption policy, because the API server rejects a pod whose
/// `preemptionPolicy` differs from its class's.
pub fn priority_class_name(settings: &KubernetesSettings, priority: &str, can_preempt: bool) -> String {
    let suffix = if can_preempt { "-preempting" } else { "" };
    format!("{}{priority}{suffix}", settings.priority_class_prefix)
}

/// The registry an image is pulled from, as docker config keys name it.
pub fn registry_host(image: &str) -> &str {
    match image.split_once('/') {
        Some((first, _)) if first.contains('.') || first.contains(':') || first == "localhost" => first,
        _ => DOCKER_HUB_AUTH_KEY,
    }
}

/// A CPU amount as a Kubernetes quantity: whole cores, else millicores.
pub fn cpu_quantity(cores: f64) -> String {
    let millis = (cores * 1000.0).round() as i64;
    if millis % 1000 == 0 {
        format!("{}", millis / 1000)
    } else {
        format!("{millis}m")
    }
}

/// Renders one run of a job as Kubernetes objects. Every problem is reported
/// with the job field it comes from, as validation errors are.
pub fn render<'a>(input: &RenderInput<'a>, settings: &KubernetesSettings) -> Result<KubeObjects, FieldErrors> {
    let mut errors = FieldErrors::new();
    let mut fail = |path: &str, message: String| errors.entry(path.to_string()).or_default().push(message);

    let spec = input.spec;
    let values = input.values;
    let id = input.job_id.to_string();
    let name = input.job_name.to_string();
    if let Err(e) = names::check_dns_label(&id) {
        fail("metadata.id", format!("is not a valid Kubernetes name: it {e}"));
    }
    if Priority::from_class(&values.priority).is_none() {
        fail(
            "spec.queue_config.priority_class",
            format!("must be one of {}, not '{}'", PRIORITY_CLASSES.join(", "), values.priority),
        );
    }
    let workers = values.workers;
    // An Indexed Job runs its indexes from 0: a job that runs chosen ones
    // (a rerun of failed indexes) is a Job of as many, whose pods map their
    // index to the chosen one (`index_mapping`).
    let completions = match &values.indexes {
        Some(indexes) => to_i32(indexes.len() as i64, "spec.completion_indexes", &mut fail),
        None => to_i32(values.completions, "spec.completions", &mut fail),
    };
    if values.indexes.is_some() && spec.container.command.as_ref().is_none_or(|c| c.is_empty()) {
        fail(
            "spec.completion_indexes",
            "on Kubernetes needs spec.container.command: a shell before the command gives each pod its index".into(),
        );
    }
    let parallelism = to_i32(values.parallelism, "spec.parallelism", &mut fail);
    let backoff_limit = values.backoff_limit.map(|n| to_i32(n, "spec.backoff_limit", &mut fail));
    let per_index_retries = values.max_failure_retry.map(|n| to_i32(n, "spec.max_failure_retry", &mut fail));
    let ttl = values.ttl_seconds_after_finished.map(|n| to_i32(n, "spec.ttl_seconds_after_finished", &mut fail));
    let multi_worker = workers > 1;
    let needs_service = multi_worker || spec.intra_job_communication == Some(true);

    // Labels: Jobdeck's own, then the user's, which may not take Jobdeck's
    // or Kubernetes' keys.
    let mut labels = BTreeMap::from([
        (LABEL_MANAGED_BY.to_string(), MANAGED_BY_VALUE.to_string()),
        (LABEL_JOB_ID.to_string(), id.clone()),
        (LABEL_JOB_NAME.to_string(), name.clone()),
        (LABEL_RUN.to_string(), input.run.to_string()),
        (LABEL_PRIORITY.to_string(), values.priority.clone()),
        (LABEL_PREEMPTIBLE.to_string(), values.can_be_preempted.to_string()),
    ]);
    // The keys follow the contract's rule (`jobdeck_api::check_qualified_name`,
    // which also refuses Kubernetes' and Jobdeck's own prefixes), so a job
    // the API accepted is not refused here for its metadata. They are
    // checked again because a render may be handed a job that never went
    // through the API (`jobdeck kube render`).
    for (key, value) in input.labels {
        let path = jobdeck_api::entry_path("metadata.labels", key);
        match jobdeck_api::check_qualified_name(key).and_then(|_| jobdeck_api::check_label_value(value)) {
            Ok(()) => {
                labels.insert(key.clone(), value.clone());
            }
            Err(e) => fail(&path, e),
        }
    }
    let mut annotations = BTreeMap::new();
    if let Some(creator) = input.created_by {
        annotations.insert(ANNOTATION_CREATED_BY.to_string(), creator.to_string());
    }
    for (key, value) in input.annotations {
        let path = jobdeck_api::entry_path("metadata.annotations", key);
        match jobdeck_api::check_qualified_name(key) {
            Ok(()) => {
                annotations.insert(key.clone(), value.clone());
            }
            Err(e) => fail(&path, e),
        }
    }

    // The image and its pull credentials.
    let image = spec.container.image.as_deref().unwrap_or("").trim();
    if image.is_empty() {
        fail("spec.container.image", "is required to run on Kubernetes".into());
    }
    let image_ref = spec.container.image_reference().unwrap_or_default();
    let mut image_pull_secrets: Vec<LocalObjectReference> = Vec::new();
    let redacted = matches!(input.secrets, SecretValues::Redacted);
    let shown = |password: &'a str| -> &'a str {
        if redacted {
            REDACTED
        } else {
            password
        }
    };
    // One Secret of the Job's own holds every credential it pulls with: the
    // form's username and password for the image's registry, then each
    // stored image pull secret it names, by its registry.
    let mut auths: Vec<(String, &str, &str)> = Vec::new();
    match (
        spec.container.registry_username.as_deref().filter(|s| !s.is_empty()),
        spec.container.registry_password.as_deref().filter(|s| !s.is_empty()),
    ) {
        (Some(user), Some(password)) => auths.push((registry_host(image).to_string(), user, shown(password))),
        (None, None) => {}
        (Some(_), None) => fail("spec.container.registry_password", "is required with registry_username".into()),
        (None, Some(_)) => fail("spec.container.registry_username", "is required with registry_password".into()),
    }
    for credential in input.pull_credentials {
        let host = credential.registry_host();
        if !auths.iter().any(|(h, _, _)| *h == host) {
            auths.push((host, &credential.username, shown(&credential.password)));
        }
    }
    let registry_secret = (!auths.is_empty()).then(|| {
        let secret_name = registry_secret_name(&id);
        image_pull_secrets.push(LocalObjectReference { name: secret_name.clone() });
        registry_secret(&secret_name, input.namespace, &labels, &auths)
    });
    for (i, secret) in spec.image_pull_secrets.iter().flatten().enumerate() {
        if input.pull_credentials.iter().any(|c| &c.name == secret) {
            continue;
        }
        match names::check_dns_subdomain(secret) {
            Ok(()) => image_pull_secrets.push(LocalObjectReference { name: secret.clone() }),
            Err(e) => fail(&format!("spec.image_pull_secrets[{i}]"), format!("is not a valid Secret name: it {e}")),
        }
    }

    // The environment: the platform's variables, then the user's.
    let mut env = platform_env(&id, &name, values, input.shape, settings, needs_service);
    let mut secret_data = BTreeMap::new();
    for (i, var) in spec.envs.iter().flatten().enumerate() {
        let secret_ref = var.value_from.as_ref().and_then(|v| v.secret_name_ref.as_deref());
        match secret_ref {
            Some(secret) => {
                // The Secret is keyed by variable name: names are C
                // identifiers, valid keys whatever the secret is called.
                let path = format!("spec.envs[{i}].value_from.secret_name_ref");
                if let Err(e) = names::check_secret_key(&var.name) {
                    fail(&format!("spec.envs[{i}].name"), format!("cannot be a Kubernetes Secret key: it {e}"));
                    continue;
                }
                let value = match input.secrets {
                    SecretValues::Resolved(resolved) => match resolved.get(&var.name) {
                        Some(value) => value.clone(),
                        None => {
                            fail(&path, format!("no secret named '{secret}'"));
                            continue;
                        }
                    },
                    SecretValues::Redacted => REDACTED.to_string(),
                };
                secret_data.insert(var.name.clone(), value);
                env.push(KubeEnvVar {
                    name: var.name.clone(),
                    value_from: Some(EnvVarSource {
                        secret_key_ref: Some(SecretKeySelector {
                            name: env_secret_name(&id),
                            key: var.name.clone(),
                            optional: Some(false),
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                });
            }
            None => env.push(literal_env(&var.name, var.value.clone().unwrap_or_default())),
        }
    }
    let env_secret = (!secret_data.is_empty()).then(|| Secret {
        metadata: object_meta(&env_secret_name(&id), input.namespace, &labels, BTreeMap::new()),
        type_: Some("Opaque".into()),
        immutable: Some(true),
        string_data: Some(secret_data),
        ..Default::default()
    });

    // Resources: requests equal limits, so a replica gets exactly its shape
    // (Guaranteed QoS, the last to be evicted under node pressure).
    let mut resources = BTreeMap::new();
    if input.shape.cpu > 0.0 {
        resources.insert("cpu".to_string(), Quantity(cpu_quantity(input.shape.cpu)));
    }
    if input.shape.memory_mib > 0 {
        resources.insert("memory".to_string(), Quantity(format!("{}Mi", input.shape.memory_mib)));
    }
    if input.shape.gpus > 0 {
        resources.insert(settings.gpu_resource.clone(), Quantity(input.shape.gpus.to_string()));
    }

    // Volumes: shared memory, then one volume per distinct storage source.
    let mut volumes = Vec::new();
    let mut mounts = Vec::new();
    if values.shared_memory_mib > 0 {
        let shm = values.shared_memory_mib;
        volumes.push(Volume {
            name: "shm".into(),
            empty_dir: Some(EmptyDirVolumeSource {
                medium: Some("Memory".into()),
                size_limit: Some(Quantity(format!("{shm}Mi"))),
            }),
            ..Default::default()
        });
        mounts.push(VolumeMount { name: "shm".into(), mount_path: "/dev/shm".into(), ..Default::default() });
    }
    let mut volume_names: BTreeMap<String, String> = BTreeMap::new();
    for (i, mount) in spec.mounts.iter().flatten().enumerate() {
        let Some(source) =
            jobdeck_api::volume_key(&mount.from, settings.volumes.keys()).and_then(|k| settings.volumes.get(k))
        else {
            fail(
                &format!("spec.mounts[{i}].from"),
                format!("no volume named '{}' is configured for the kubernetes executor", mount.from),
            );
            continue;
        };
        let next = format!("storage-{}", volume_names.len());
        let volume_name = volume_names.entry(mount.from.clone()).or_insert_with(|| {
            volumes.push(kube_volume(&next, source));
            next.clone()
        });
        let sub_path = mount.path.as_deref().map(|p| p.trim_matches('/')).filter(|p| !p.is_empty());
        if sub_path.is_some_and(|p| p.split('/').any(|part| part == "..")) {
            fail(&format!("spec.mounts[{i}].path"), "must not contain '..'".into());
            continue;
        }
        mounts.push(VolumeMount {
            name: volume_name.clone(),
            mount_path: mount.mount_path.clone(),
            sub_path: sub_path.map(String::from),
            read_only: mount.mount_options.as_ref().and_then(|o| o.read_only).filter(|r| *r),
            ..Default::default()
        });
    }

    // Ports.
    let ports: Vec<KubePort> = spec
        .container
        .ports
        .iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, p)| {
            let port = i32::try_from(p.container_port).ok().filter(|n| (1..=65535).contains(n));
            let Some(port) = port else {
                fail(&format!("spec.container.ports[{i}].container_port"), "must be 1..65535".into());
                return None;
            };
            Some(KubePort {
                container_port: port,
                name: p.name.clone(),
                protocol: Some(p.protocol().as_str().to_string()),
                host_port: p.host_port.and_then(|h| i32::try_from(h).ok()),
                ..Default::default()
            })
        })
        .collect();

    // Placement: node groups and nodes.
    let (node_selector, affinity, tolerations) = placement(input.node_group, &values.nodes, settings);
    let mut pod_labels = labels.clone();
    if let Some(group) = input.node_group {
        pod_labels.insert(LABEL_NODE_GROUP.to_string(), group.name.clone());
    }

    let (priority_class_name, preemption_policy) = if settings.priority_classes {
        (
            Some(priority_class_name(settings, &values.priority, values.can_preempt)),
            Some(if values.can_preempt { "PreemptLowerPriority" } else { "Never" }.to_string()),
        )
    } else {
        (None, None)
    };

    let container = KubeContainer {
        name: CONTAINER_NAME.into(),
        image: Some(image_ref),
        image_pull_policy: settings.image_pull_policy.clone(),
        command: match &values.indexes {
            Some(_) => spec.container.command.clone().filter(|c| !c.is_empty()).map(index_mapping),
            None => spec.container.command.clone().filter(|c| !c.is_empty()),
        },
        // Kubernetes reads `args` as Jobdeck does: after the command, or
        // after the image's entrypoint when there is none.
        args: spec.container.args.clone().filter(|a| !a.is_empty()),
        working_dir: spec.container.working_dir.clone(),
        security_context: super::security::container_security_context(spec, &mut fail),
        env: Some(env),
        ports: (!ports.is_empty()).then_some(ports),
        resources: (!resources.is_empty()).then(|| ResourceRequirements {
            limits: Some(resources.clone()),
            requests: Some(resources),
            ..Default::default()
        }),
        volume_mounts: (!mounts.is_empty()).then_some(mounts),
        ..Default::default()
    };

    let pod_spec = PodSpec {
        containers: vec![container],
        restart_policy: Some("Never".into()),
        termination_grace_period_seconds: values.termination_grace_period_seconds,
        volumes: (!volumes.is_empty()).then_some(volumes),
        image_pull_secrets: (!image_pull_secrets.is_empty()).then_some(image_pull_secrets),
        node_selector,
        affinity,
        tolerations,
        priority_class_name,
        preemption_policy,
        subdomain: needs_service.then(|| id.clone()),
        service_account_name: settings.job_service_account.clone(),
        automount_service_account_token: Some(false),
        enable_service_links: Some(false),
        ..Default::default()
    };

    let job_object = Job {
        metadata: object_meta(&id, input.namespace, &labels, annotations.clone()),
        spec: Some(KubeJobSpec {
            completion_mode: Some("Indexed".into()),
            completions: Some(completions),
            parallelism: Some(parallelism),
            backoff_limit,
            backoff_limit_per_index: per_index_retries,
            active_deadline_seconds: values.active_deadline_seconds,
            pod_failure_policy: Some(pod_failure_policy(values.disable_retry_on_program_error)),
            ttl_seconds_after_finished: ttl,
            suspend: Some(spec.stopped == Some(true)),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(pod_labels),
                    annotations: (!annotations.is_empty()).then_some(annotations),
                    ..Default::default()
                }),
                spec: Some(pod_spec),
            },
            ..Default::default()
        }),
        status: None,
    };

    let service = needs_service.then(|| Service {
        metadata: object_meta(&id, input.namespace, &labels, BTreeMap::new()),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            selector: Some(BTreeMap::from([(LABEL_JOB_ID.to_string(), id.clone())])),
            // Workers look each other up while starting, before any is ready.
            publish_not_ready_addresses: Some(true),
            ports: Some(vec![ServicePort {
                name: Some("rendezvous".into()),
                port: i32::from(settings.master_port),
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        status: None,
    });

    if !errors.is_empty() {
        return Err(errors);
    }
    let network_policy = settings
        .network_policies
        .then(|| super::network_policy::network_policy(&id, input.namespace, &labels, &settings.blocked_networks));
    Ok(KubeObjects { job: job_object, env_secret, registry_secret, service, network_policy })
}

fn to_i32(value: i64, path: &str, fail: &mut impl FnMut(&str, String)) -> i32 {
    match i32::try_from(value) {
        Ok(v) => v,
        Err(_) => {
            fail(path, format!("{value} is larger than Kubernetes allows ({})", i32::MAX));
            0
        }
    }
}

fn object_meta(
    name: &str,
    namespace: &str,
    labels: &BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: Some(namespace.to_string()),
        labels: Some(labels.clone()),
        annotations: (!annotations.is_empty()).then_some(annotations),
        ..Default::default()
    }
}

fn literal_env(name: &str, value: String) -> KubeEnvVar {
    KubeEnvVar { name: name.to_string(), value: Some(value), ..Default::default() }
}

/// A variable whose value is the pod's completion index.
fn completion_index_env(name: &str) -> KubeEnvVar {
    KubeEnvVar {
        name: name.to_string(),
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: format!("metadata.annotations['{COMPLETION_INDEX_ANNOTATION}']"),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The variable that lists the indexes a Job of chosen indexes runs, in
/// the order of its own (`1,3,5`: its index 1 runs the job's index 3).
pub const COMPLETION_INDEXES_ENV: &str = "JOBDECK_COMPLETION_INDEXES";

/// What runs before the command of a Job of chosen indexes: the pod's
/// index (`JOB_COMPLETION_INDEX`, which Kubernetes sets) is a position in
/// [`COMPLETION_INDEXES_ENV`], and the index at that position becomes the
/// pod's `JOB_COMPLETION_INDEX` and `LEPTON_JOB_WORKER_INDEX`; then the
/// command runs in the shell's place with its words as they were (`"$@"`).
/// The list is the server's (numbers and commas), never a user's text.
const INDEX_MAPPING: &str = "n=0; IFS=,; for i in $JOBDECK_COMPLETION_INDEXES; do \
    if [ \"$n\" = \"$JOB_COMPLETION_INDEX\" ]; then JOB_COMPLETION_INDEX=$i; break; fi; n=$((n+1)); done; \
    unset IFS; LEPTON_JOB_WORKER_INDEX=$JOB_COMPLETION_INDEX; export JOB_COMPLETION_INDEX LEPTON_JOB_WORKER_INDEX; \
    exec \"$@\"";

/// The command of a Job of chosen indexes: [`INDEX_MAPPING`], then the
/// job's command as the shell's arguments (`$0` names the step).
fn index_mapping(command: Vec<String>) -> Vec<String> {
    let mut words =
        vec!["/bin/sh".to_string(), "-c".to_string(), INDEX_MAPPING.to_string(), "jobdeck-index".to_string()];
    words.extend(command);
    words
}

/// Design §3's variables. Kubernetes itself sets `JOB_COMPLETION_INDEX` in
/// Indexed mode; the rest are Jobdeck's. Multi-worker jobs also get Lepton's
/// `LEPTON_JOB_WORKER_PREFIX`/`LEPTON_SUBDOMAIN`, from which Lepton's own
/// `lepton_env_to_pytorch.sh` derives the same rendezvous variables.
fn platform_env(
    id: &str,
    name: &str,
    values: &SpecValues,
    shape: &ShapeResources,
    settings: &KubernetesSettings,
    has_service: bool,
) -> Vec<KubeEnvVar> {
    let mut env = vec![
        literal_env("JOB_COMPLETIONS", values.completions.to_string()),
        literal_env("LEPTON_JOB_NAME", name.to_string()),
        literal_env("LEPTON_RESOURCE_ACCELERATOR_TYPE", shape.accelerator_type.clone().unwrap_or_default()),
        literal_env("LEPTON_RESOURCE_ACCELERATOR_NUM", shape.gpus.to_string()),
        completion_index_env("LEPTON_JOB_WORKER_INDEX"),
        literal_env("LEPTON_JOB_TOTAL_WORKERS", values.workers.to_string()),
    ];
    if has_service {
        env.push(literal_env("LEPTON_JOB_WORKER_PREFIX", id.to_string()));
        env.push(literal_env("LEPTON_SUBDOMAIN", id.to_string()));
    }
    if let Some(indexes) = &values.indexes {
        let list: Vec<String> = indexes.iter().map(i64::to_string).collect();
        env.push(literal_env(COMPLETION_INDEXES_ENV, list.join(",")));
    }
    if values.workers > 1 {
        env.push(literal_env("MASTER_ADDR", format!("{id}-0.{id}")));
        env.push(literal_env("MASTER_PORT", settings.master_port.to_string()));
        env.push(literal_env("WORLD_SIZE", values.workers.to_string()));
        env.push(completion_index_env("NODE_RANK"));
    }
    env
}

/// Rules, first match wins: a disruption (preemption, eviction, node drain)
/// never counts against the retry budget; with
/// `disable_retry_on_program_error`, a program error fails the whole job at
/// once.
fn pod_failure_policy(disable_retry_on_program_error: bool) -> PodFailurePolicy {
    let mut rules = vec![PodFailurePolicyRule {
        action: "Ignore".into(),
        on_pod_conditions: Some(vec![PodFailurePolicyOnPodConditionsPattern {
            type_: "DisruptionTarget".into(),
            status: "True".into(),
        }]),
        on_exit_codes: None,
    }];
    if disable_retry_on_program_error {
        rules.push(PodFailurePolicyRule {
            action: "FailJob".into(),
            on_exit_codes: Some(PodFailurePolicyOnExitCodesRequirement {
                container_name: Some(CONTAINER_NAME.into()),
                operator: "NotIn".into(),
                values: NOT_PROGRAM_ERROR_EXIT_CODES.to_vec(),
            }),
            on_pod_conditions: None,
        });
    }
    PodFailurePolicy { rules }
}

/// A `kubernetes.io/dockerconfigjson` Secret with one entry per registry:
/// `(registry host, username, password)`.
fn registry_secret(
    name: &str,
    namespace: &str,
    labels: &BTreeMap<String, String>,
    auths: &[(String, &str, &str)],
) -> Secret {
    use base64::Engine as _;
    let entries: serde_json::Map<String, serde_json::Value> = auths
        .iter()
        .map(|(host, username, password)| {
            let auth = base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
            (host.clone(), serde_json::json!({ "username": username, "password": password, "auth": auth }))
        })
        .collect();
    let config = serde_json::json!({ "auths": entries });
    Secret {
        metadata: object_meta(name, namespace, labels, BTreeMap::new()),
        type_: Some("kubernetes.io/dockerconfigjson".into()),
        immutable: Some(true),
        string_data: Some(BTreeMap::from([(DOCKER_CONFIG_KEY.to_string(), config.to_string())])),
        ..Default::default()
    }
}

fn kube_volume(name: &str, source: &VolumeSource) -> Volume {
    let mut volume = Volume { name: name.to_string(), ..Default::default() };
    match source {
        VolumeSource::PersistentVolumeClaim { claim_name } => {
            volume.persistent_volume_claim =
                Some(PersistentVolumeClaimVolumeSource { claim_name: claim_name.clone(), read_only: None })
        }
        VolumeSource::Nfs { server, path } => {
            volume.nfs = Some(NFSVolumeSource { server: server.clone(), path: path.clone(), read_only: None })
        }
        VolumeSource::HostPath { path } => {
            volume.host_path = Some(HostPathVolumeSource { path: path.clone(), type_: Some("Directory".into()) })
        }
    }
    volume
}

type Placement = (Option<BTreeMap<String, String>>, Option<KubeAffinity>, Option<Vec<Toleration>>);

/// The node group and nodes → node selector, node affinity and tolerations:
/// the group's labels are the pod's node selector, its configured
/// tolerations the pod's, and chosen nodes a required node-affinity term on
/// `node_name_label`.
fn placement(group: Option<&NodeGroupTarget>, nodes: &[String], settings: &KubernetesSettings) -> Placement {
    let node_selector = group.map(|g| g.node_labels.clone()).filter(|labels| !labels.is_empty());
    let tolerations: Vec<Toleration> = group
        .and_then(|g| settings.node_groups.get(&g.name))
        .map(|p| {
            p.tolerations
                .iter()
                .map(|t| Toleration {
                    key: t.key.clone(),
                    operator: t.operator.clone(),
                    value: t.value.clone(),
                    effect: t.effect.clone(),
                    toleration_seconds: None,
                })
                .collect()
        })
        .unwrap_or_default();
    let affinity = (!nodes.is_empty()).then(|| KubeAffinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_expressions: Some(vec![NodeSelectorRequirement {
                        key: settings.node_name_label.clone(),
                        operator: "In".into(),
                        values: Some(nodes.to_vec()),
                    }]),
                    ..Default::default()
                }],
            }),
            ..Default::default()
        }),
        ..Default::default()
    });
    (node_selector, affinity, (!tolerations.is_empty()).then_some(tolerations))
}

#[cfg(test)]
#[path = "mapping_tests.rs"]
mod tests;
