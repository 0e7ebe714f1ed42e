//! A Kubernetes `batch/v1` Job manifest (the managed-cluster page, seed 001,
//! runs jobs as Kubernetes Jobs) as a Jobdeck job: the first container of
//! the pod template, the Job's counts and limits, and the shape that meets
//! the container's resources.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{json, Map, Value};

use super::shapes::{cpu_quantity, memory_quantity, require};
use super::{ConvertError, Converted, Document, Notes};
use crate::config::ShapeConfig;
use jobdeck_api::{AmountRange, CpuRange, GpuRequirement, ResourceRequirements};

/// The first Job of `documents` as a job, on a workspace of `shapes` whose
/// volumes are the host directories `volumes` names.
pub fn convert(
    documents: &[Document],
    shapes: &[ShapeConfig],
    volumes: &BTreeMap<String, PathBuf>,
) -> Result<Converted, ConvertError> {
    let is_job = |d: &&Document| d.value.get("kind").and_then(Value::as_str) == Some("Job");
    let Some(document) = documents.iter().find(is_job) else {
        return Err(ConvertError {
            field: "kind".into(),
            line: 1,
            message: "the file has no Kubernetes Job (kind: Job)".into(),
        });
    };
    let mut notes = Notes::new(document);
    let manifest = &document.value;
    if manifest.get("apiVersion").and_then(Value::as_str) != Some("batch/v1") {
        return Err(notes.refuse("apiVersion", "a Job of batch/v1 is read"));
    }
    let mut metadata = Map::new();
    let mut spec = Map::new();
    if let Some(meta) = manifest.get("metadata").and_then(Value::as_object) {
        for (field, value) in meta {
            let at = format!("metadata.{field}");
            match field.as_str() {
                "name" | "labels" | "annotations" => {
                    metadata.insert(field.clone(), value.clone());
                    notes.carried(&at, &at, "as it is");
                }
                "generateName" => notes.dropped(&at, "Jobdeck names a job without a name itself"),
                _ => notes.dropped(&at, "Jobdeck has no namespaces or such metadata"),
            }
        }
    }
    let job_spec = manifest.get("spec").and_then(Value::as_object).cloned().unwrap_or_default();
    for (field, value) in &job_spec {
        let at = format!("spec.{field}");
        let same = |name: &str| (name.to_string(), format!("spec.{name}"));
        let mapped = match field.as_str() {
            "completions" => Some(same("completions")),
            "parallelism" => Some(same("parallelism")),
            "backoffLimit" => Some(same("backoff_limit")),
            "activeDeadlineSeconds" => Some(same("active_deadline_seconds")),
            "ttlSecondsAfterFinished" => Some(same("ttl_seconds_after_finished")),
            "suspend" => Some(same("stopped")),
            _ => None,
        };
        match (mapped, field.as_str()) {
            (Some((name, became)), _) => {
                spec.insert(name, value.clone());
                notes.carried(&at, &became, "as it is");
            }
            (None, "template") => {}
            (None, "completionMode") if value == "Indexed" => {
                notes.carried(&at, "spec.completions", "Jobdeck's replicas are always indexed (JOB_COMPLETION_INDEX)")
            }
            (None, _) => notes.dropped(&at, "Jobdeck has no such setting of a job"),
        }
    }
    let pod = job_spec.get("template").and_then(|t| t.get("spec")).and_then(Value::as_object);
    let Some(pod) = pod else {
        return Err(notes.refuse("spec.template.spec", "a Job needs a pod template"));
    };
    pod_spec(&mut notes, &mut spec, pod, shapes, volumes)?;
    Ok(Converted { job: json!({"metadata": metadata, "spec": spec}), notes: notes.into_notes() })
}

/// The pod template's settings, and its first container's.
fn pod_spec(
    notes: &mut Notes,
    spec: &mut Map<String, Value>,
    pod: &Map<String, Value>,
    shapes: &[ShapeConfig],
    volumes: &BTreeMap<String, PathBuf>,
) -> Result<(), ConvertError> {
    const AT: &str = "spec.template.spec";
    for (field, value) in pod {
        let at = format!("{AT}.{field}");
        match field.as_str() {
            "containers" => {}
            "terminationGracePeriodSeconds" => {
                spec.insert("termination_grace_period_seconds".into(), value.clone());
                notes.carried(&at, "spec.termination_grace_period_seconds", "as it is");
            }
            "imagePullSecrets" => {
                let names: Vec<Value> =
                    value.as_array().into_iter().flatten().filter_map(|s| s.get("name").cloned()).collect();
                spec.insert("image_pull_secrets".into(), Value::Array(names));
                notes.carried(&at, "spec.image_pull_secrets", "by name");
            }
            "restartPolicy" => notes.dropped(
                &at,
                "Jobdeck starts a failed replica again up to spec.max_failure_retry times (backoffLimit is carried over)",
            ),
            "hostNetwork" | "hostPID" | "hostIPC" => {
                notes.dropped(&at, "refused: a job never shares the host's namespaces (docs/contract.md)")
            }
            // Read through the container's volumeMounts below.
            "volumes" | "securityContext" => {}
            _ => notes.dropped(&at, "Jobdeck places and runs replicas itself"),
        }
    }
    let containers = pod.get("containers").and_then(Value::as_array).cloned().unwrap_or_default();
    let Some(first) = containers.first().and_then(Value::as_object) else {
        return Err(notes.refuse(&format!("{AT}.containers"), "a pod template needs a container"));
    };
    for (i, _) in containers.iter().enumerate().skip(1) {
        notes.dropped(&format!("{AT}.containers[{i}]"), "Jobdeck runs one container per replica");
    }
    let at = |field: &str| format!("{AT}.containers[0].{field}");
    let mut container = Map::new();
    let words = |field: &str| -> Vec<Value> { first.get(field).and_then(Value::as_array).cloned().unwrap_or_default() };
    let (command, args) = (words("command"), words("args"));
    if command.is_empty() {
        // Without a command, Kubernetes passes args to the image's
        // entrypoint; so does Jobdeck's extension `spec.container.args`.
        if !args.is_empty() {
            container.insert("args".into(), Value::Array(args));
            notes.carried(&at("args"), "spec.container.args", "passed to the image's entrypoint, as Kubernetes does");
        }
    } else {
        // With one, they are one command line, which the form shows whole.
        let mut all = command;
        all.extend(args.iter().cloned());
        container.insert("command".into(), Value::Array(all));
        notes.carried(&at("command"), "spec.container.command", "as it is");
        if !args.is_empty() {
            notes.carried(&at("args"), "spec.container.command", "after the command, as Kubernetes runs them");
        }
    }
    let mut requirements = ResourceRequirements::default();
    for (field, value) in first {
        match field.as_str() {
            "image" => {
                container.insert("image".into(), value.clone());
                notes.carried(&at("image"), "spec.container.image", "as it is");
            }
            "command" | "args" | "name" | "volumeMounts" | "securityContext" => {}
            "workingDir" => {
                container.insert("working_dir".into(), value.clone());
                notes.carried(&at("workingDir"), "spec.container.working_dir", "as it is");
            }
            "env" => envs(notes, spec, value, &at("env"))?,
            "ports" => {
                let ports: Vec<Value> = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|p| {
                        let mut port = json!({"container_port": p.get("containerPort")?});
                        for (from, to) in [("name", "name"), ("protocol", "protocol")] {
                            if let Some(v) = p.get(from) {
                                port[to] = v.clone();
                            }
                        }
                        Some(port)
                    })
                    .collect();
                container.insert("ports".into(), Value::Array(ports));
                notes.carried(&at("ports"), "spec.container.ports", "by number, name and protocol");
            }
            "resources" => {
                // Limits are what a replica may use; requests when there are none.
                let amounts = value.get("limits").or_else(|| value.get("requests")).cloned().unwrap_or_default();
                let text = |key: &str| amounts.get(key).map(|v| v.as_str().map(String::from).unwrap_or(v.to_string()));
                // A request is a least: the node gives at least that much.
                let gpus: i64 = text("nvidia.com/gpu").and_then(|n| n.parse().ok()).unwrap_or(0);
                if gpus > 0 {
                    requirements.gpu = Some(GpuRequirement {
                        vendor: Some("nvidia".into()),
                        count: Some(AmountRange::at_least(gpus)),
                        ..GpuRequirement::default()
                    });
                }
                requirements.cpu =
                    text("cpu").and_then(|c| cpu_quantity(&c)).map(|cpu| CpuRange { min: Some(cpu), max: None });
                requirements.memory_in_mb = text("memory").and_then(|m| memory_quantity(&m)).map(AmountRange::at_least);
            }
            _ => notes.dropped(&at(field), "Jobdeck has no such setting of a container (yet)"),
        }
    }
    require(notes, spec, &at("resources"), &requirements, shapes);
    security_context(notes, spec, &mut container, pod, first);
    mounts(notes, spec, pod, first, volumes)?;
    spec.insert("container".into(), Value::Object(container));
    Ok(())
}

/// The container's user (its `securityContext`, else the pod's) as
/// `spec.container.user`, and `privileged` as Lepton's
/// `spec.user_security_context.privileged`, which the server accepts only
/// on node groups an admin opened to the caller's role.
fn security_context(
    notes: &mut Notes,
    spec: &mut Map<String, Value>,
    container: &mut Map<String, Value>,
    pod: &Map<String, Value>,
    first: &Map<String, Value>,
) {
    const POD: &str = "spec.template.spec.securityContext";
    const OWN: &str = "spec.template.spec.containers[0].securityContext";
    let (pod_context, own) = (pod.get("securityContext"), first.get("securityContext"));
    let id = |key: &str| {
        let read = |context: Option<&Value>| context.and_then(|c| c.get(key)).and_then(Value::as_i64);
        match (read(own), read(pod_context)) {
            (Some(id), _) => Some((id, OWN)),
            (None, Some(id)) => Some((id, POD)),
            (None, None) => None,
        }
    };
    if let Some((user, at)) = id("runAsUser") {
        let user = match id("runAsGroup") {
            Some((group, _)) => format!("{user}:{group}"),
            None => user.to_string(),
        };
        container.insert("user".into(), json!(user));
        notes.carried(&format!("{at}.runAsUser"), "spec.container.user", format!("{user}, in the container"));
    }
    for (at, context) in [(POD, pod_context), (OWN, own)] {
        for (key, value) in context.and_then(Value::as_object).into_iter().flatten() {
            match key.as_str() {
                "runAsUser" | "runAsGroup" => {}
                "privileged" if value == &Value::Bool(true) => {
                    spec.insert("user_security_context".into(), json!({"privileged": true}));
                    notes.carried(
                        &format!("{at}.{key}"),
                        "spec.user_security_context.privileged",
                        "only on node groups an admin opened to privileged containers for your role",
                    );
                }
                _ => notes.dropped(
                    &format!("{at}.{key}"),
                    "Jobdeck gives every container the same least privileges (docs/security.md)",
                ),
            }
        }
    }
}

/// The container's `volumeMounts` of the pod's volumes: a `hostPath` as a
/// mount of the configured volume that holds it, a `persistentVolumeClaim`
/// as the Jobdeck volume of the claim's name; any other volume (an
/// `emptyDir`, a ConfigMap) is not carried over.
fn mounts(
    notes: &mut Notes,
    spec: &mut Map<String, Value>,
    pod: &Map<String, Value>,
    first: &Map<String, Value>,
    volumes: &BTreeMap<String, PathBuf>,
) -> Result<(), ConvertError> {
    let pod_volumes = pod.get("volumes").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut mounts = Vec::new();
    for (i, mount) in first.get("volumeMounts").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let at = format!("spec.template.spec.containers[0].volumeMounts[{i}]");
        let text = |key: &str| mount.get(key).and_then(Value::as_str);
        let (Some(name), Some(target)) = (text("name"), text("mountPath")) else {
            return Err(notes.refuse(&at, "a volume's name and a mountPath"));
        };
        let sub_path = text("subPath").unwrap_or("").trim_start_matches('/');
        let volume = pod_volumes.iter().find(|v| v.get("name").and_then(Value::as_str) == Some(name));
        let host = volume.and_then(|v| v.pointer("/hostPath/path")).and_then(Value::as_str);
        let claim = volume.and_then(|v| v.pointer("/persistentVolumeClaim/claimName")).and_then(Value::as_str);
        let (from, inside, words) = match (host, claim) {
            (Some(host), _) => {
                let path = if sub_path.is_empty() { host.to_string() } else { format!("{host}/{sub_path}") };
                match super::volumes::volume_holding(&path, volumes) {
                    Some((from, inside)) => {
                        let words = format!("{inside} of the volume '{from}' at {target}");
                        (from, inside, words)
                    }
                    None => {
                        notes.dropped(&at, super::volumes::outside_every_volume(volumes));
                        continue;
                    }
                }
            }
            (None, Some(claim)) => {
                let words =
                    format!("the Jobdeck volume '{claim}' at {target}; the workspace must have a volume of that name");
                (claim.to_string(), format!("/{sub_path}"), words)
            }
            (None, None) => {
                notes.dropped(
                    &at,
                    format!("the volume '{name}' is not a hostPath or a claim: mount a Jobdeck volume in the form"),
                );
                continue;
            }
        };
        let mut mounted = json!({"from": from, "path": inside, "mount_path": target});
        if mount.get("readOnly") == Some(&Value::Bool(true)) {
            mounted["mount_options"] = json!({"read_only": true});
        }
        mounts.push(mounted);
        notes.carried(&at, "spec.mounts", words);
    }
    if !mounts.is_empty() {
        spec.insert("mounts".into(), Value::Array(mounts));
    }
    Ok(())
}

/// A container's `env`: values as they are, a `secretKeyRef` as a
/// reference to the Jobdeck secret of that name.
fn envs(notes: &mut Notes, spec: &mut Map<String, Value>, value: &Value, at: &str) -> Result<(), ConvertError> {
    let mut envs = Vec::new();
    for (i, variable) in value.as_array().into_iter().flatten().enumerate() {
        let here = format!("{at}[{i}]");
        let name = variable.get("name").and_then(Value::as_str).ok_or_else(|| notes.refuse(&here, "needs a name"))?;
        if let Some(text) = variable.get("value") {
            envs.push(json!({"name": name, "value": text}));
            continue;
        }
        match variable.get("valueFrom").and_then(|from| from.get("secretKeyRef")) {
            Some(secret) => {
                let kube_name = secret.get("name").and_then(Value::as_str).unwrap_or(name);
                // Jobdeck's secret names are letters, digits and `_`;
                // Kubernetes' are DNS names (`api-key`, `hf.token`).
                let secret_name: String =
                    kube_name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
                envs.push(json!({"name": name, "value_from": {"secret_name_ref": secret_name}}));
                let key = secret.get("key").and_then(Value::as_str).unwrap_or_default();
                let renamed =
                    if secret_name == kube_name { String::new() } else { format!(" (Kubernetes' '{kube_name}')") };
                notes.carried(
                    &here,
                    "spec.envs",
                    format!(
                        "{name} reads the Jobdeck secret '{secret_name}'{renamed}, which holds one value: create it with \
                         the value of key '{key}'"
                    ),
                );
            }
            None => notes.dropped(&here, format!("{name}: only values and secrets are carried over")),
        }
    }
    if !envs.is_empty() {
        spec.insert("envs".into(), Value::Array(envs));
        notes.carried(at, "spec.envs", "the variables");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::shapes::tests::{chosen, shape};
    use crate::convert::source::read;

    fn convert(documents: &[Document], shapes: &[ShapeConfig]) -> Result<Converted, ConvertError> {
        super::convert(documents, shapes, &BTreeMap::new())
    }

    const MANIFEST: &str = "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: unrelated
---
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: ml
  labels:
    team: vision
spec:
  completions: 4
  parallelism: 4
  completionMode: Indexed
  backoffLimit: 2
  activeDeadlineSeconds: 7200
  template:
    spec:
      restartPolicy: Never
      hostNetwork: true
      containers:
        - name: trainer
          image: registry.local/train:1.2
          command: [python]
          args: [train.py, --epochs, '10']
          env:
            - name: MODE
              value: fast
            - name: HF_TOKEN
              valueFrom:
                secretKeyRef: {name: hf-token, key: token}
          resources:
            limits:
              nvidia.com/gpu: 1
              cpu: 500m
              memory: 8Gi
          volumeMounts:
            - {name: data, mountPath: /data}
        - name: sidecar
          image: busybox
";

    #[test]
    fn a_job_manifest_becomes_a_job_and_says_what_became_of_each_field() {
        let documents = read(MANIFEST).unwrap();
        let shapes =
            [shape("cpu.small", 0, None, 2.0, 4096), shape("gpu.a100x1", 1, Some("NVIDIA A100"), 12.0, 120_000)];
        let converted = convert(&documents, &shapes).unwrap();
        let job = &converted.job;
        assert_eq!(job["metadata"], json!({"name": "train", "labels": {"team": "vision"}}));
        assert_eq!(
            (&job["spec"]["completions"], &job["spec"]["backoff_limit"], &job["spec"]["active_deadline_seconds"]),
            (&json!(4), &json!(2), &json!(7200))
        );
        assert_eq!(job["spec"]["container"]["command"], json!(["python", "train.py", "--epochs", "10"]));
        assert_eq!(chosen(job, &shapes).as_deref(), Some("gpu.a100x1"));
        assert_eq!(job["spec"]["envs"][1], json!({"name": "HF_TOKEN", "value_from": {"secret_name_ref": "hf_token"}}));
        let note = |field: &str| converted.notes.iter().find(|n| n.field == field).cloned().unwrap();
        assert_eq!(note("spec.template.spec.hostNetwork").line, Some(22));
        assert!(note("spec.template.spec.hostNetwork").message.starts_with("refused"));
        assert_eq!(note("spec.template.spec.containers[1]").became, None);
        assert_eq!(note("spec.template.spec.containers[0].volumeMounts[0]").became, None);
        assert_eq!(note("metadata.namespace").line, Some(10));
        assert!(jobdeck_api::from_json::<jobdeck_api::LeptonJob>(job.to_string().as_bytes()).is_ok(), "{job}");
    }

    #[test]
    fn args_without_a_command_go_to_the_images_entrypoint_and_the_working_directory_is_kept() {
        let text = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: eval}\nspec:\n  template:\n    spec:\n      \
                    containers:\n      - image: registry.local/eval:3\n        args: [--split, test]\n        workingDir: /eval\n";
        let converted = convert(&read(text).unwrap(), &[]).unwrap();
        let container = &converted.job["spec"]["container"];
        assert_eq!((container.get("command"), &container["args"]), (None, &json!(["--split", "test"])));
        assert_eq!(container["working_dir"], "/eval");
        let note = converted.notes.iter().find(|n| n.field.ends_with("containers[0].args")).unwrap();
        assert_eq!((note.line, note.became.as_deref()), (Some(9), Some("spec.container.args")));
    }

    /// A `hostPath` volume becomes the configured volume that holds it (with
    /// the mount's `subPath` inside it), a claim the Jobdeck volume of its
    /// name; a path outside every volume, one that climbs out of one, and an
    /// `emptyDir` are not carried over. The container's user and group come
    /// from its security context, else the pod's; `privileged` is carried
    /// for the server to decide.
    #[test]
    fn host_paths_become_configured_volumes_and_the_security_context_the_user() {
        let text = "\
apiVersion: batch/v1
kind: Job
metadata: {name: prep}
spec:
  template:
    spec:
      securityContext: {runAsUser: 1000, runAsGroup: 100, fsGroup: 100}
      volumes:
        - {name: data, hostPath: {path: /srv/shared/datasets}}
        - {name: etc, hostPath: {path: /etc}}
        - {name: sneaky, hostPath: {path: /srv/shared/../../etc}}
        - {name: models, persistentVolumeClaim: {claimName: models}}
        - {name: scratch, emptyDir: {}}
      containers:
        - image: registry.local/prep:1
          command: [prep]
          securityContext: {runAsUser: 2000, privileged: true, allowPrivilegeEscalation: false}
          volumeMounts:
            - {name: data, mountPath: /data, subPath: imagenet, readOnly: true}
            - {name: etc, mountPath: /host-etc}
            - {name: sneaky, mountPath: /sneaky}
            - {name: models, mountPath: /models}
            - {name: scratch, mountPath: /scratch}
";
        let volumes = BTreeMap::from([("shared".to_string(), PathBuf::from("/srv/shared"))]);
        let converted = super::convert(&read(text).unwrap(), &[], &volumes).unwrap();
        let spec = &converted.job["spec"];
        assert_eq!(
            spec["mounts"],
            json!([
                {"from": "shared", "path": "/datasets/imagenet", "mount_path": "/data", "mount_options": {"read_only": true}},
                {"from": "models", "path": "/", "mount_path": "/models"}
            ])
        );
        let note = |field: &str| converted.notes.iter().find(|n| n.field == field).cloned().unwrap();
        for (i, line) in [(1, 20), (2, 21), (4, 23)] {
            let note = note(&format!("spec.template.spec.containers[0].volumeMounts[{i}]"));
            assert_eq!((note.became, note.line), (None, Some(line)), "{i}");
        }
        assert!(note("spec.template.spec.containers[0].volumeMounts[1]").message.contains("/srv/shared"));
        // The container's own user wins; the group comes from the pod.
        assert_eq!(spec["container"]["user"], "2000:100");
        assert_eq!(spec["user_security_context"], json!({"privileged": true}));
        assert_eq!(note("spec.template.spec.securityContext.fsGroup").became, None);
        assert_eq!(note("spec.template.spec.containers[0].securityContext.allowPrivilegeEscalation").became, None);
        let job = converted.job.to_string();
        assert!(jobdeck_api::from_json::<jobdeck_api::LeptonJob>(job.as_bytes()).is_ok(), "{job}");
    }

    #[test]
    fn a_file_without_a_job_or_of_another_version_is_refused() {
        let none = read("apiVersion: v1\nkind: Pod\n").unwrap();
        assert_eq!(convert(&none, &[]).unwrap_err().field, "kind");
        let old = read("apiVersion: batch/v1beta1\nkind: Job\n").unwrap();
        assert_eq!(convert(&old, &[]).unwrap_err().field, "apiVersion");
    }
}
