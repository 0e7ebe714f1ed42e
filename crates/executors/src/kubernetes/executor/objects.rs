//! The objects of a run in the cluster: rendering a launch, checking a spec
//! against what the mapping needs, and creating, owning and suspending Jobs.

use super::*;

pub(super) fn render_launch(
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
pub(super) fn check_spec(shared: &Shared, spec: &JobSpec) -> FieldErrors {
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

pub(super) fn owner_reference(job: &Job) -> OwnerReference {
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

pub(super) fn owned_by(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta, uid: &str) -> bool {
    meta.owner_references.iter().flatten().any(|o| o.uid == uid)
}

/// Creates one object owned by the Job; one left from an interrupted start
/// of this run is kept, one of another Job is replaced.
pub(super) async fn create_owned<K>(api: &Api<K>, mut object: K, owner: &OwnerReference) -> Result<(), ExecutorError>
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
pub(super) async fn create_objects(shared: &Shared, objects: &KubeObjects, run: i64) -> Result<bool, ExecutorError> {
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
    if let Some(policy) = &objects.network_policy {
        create_owned(&shared.network_policies(), policy.clone(), &owner).await?;
    }
    if resume {
        let patch = serde_json::json!({"spec": {"suspend": false}});
        jobs.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.map_err(kube_error)?;
    }
    Ok(created)
}

pub(super) async fn suspend(shared: &Shared, job_id: &str) -> Result<(), kube::Error> {
    let patch = serde_json::json!({"spec": {"suspend": true}});
    shared.jobs().patch(job_id, &PatchParams::default(), &Patch::Merge(&patch)).await.map(|_| ())
}
