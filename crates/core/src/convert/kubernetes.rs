//! A Kubernetes `batch/v1` Job manifest (the managed-cluster page, seed 001,
//! runs jobs as Kubernetes Jobs) as a Jobdeck job: the first container of
//! the pod template, the Job's counts and limits, and the shape that meets
//! the container's resources.

use serde_json::{json, Map, Value};

use super::shapes::{cpu_quantity, memory_quantity, require};
use super::{ConvertError, Converted, Document, Notes};
use crate::config::ShapeConfig;
use jobdeck_api::{AmountRange, CpuRange, GpuRequirement, ResourceRequirements};

/// The first Job of `documents` as a job.
pub fn convert(documents: &[Document], shapes: &[ShapeConfig]) -> Result<Converted, ConvertError> {
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
    pod_spec(&mut notes, &mut spec, pod, shapes)?;
    Ok(Converted { job: json!({"metadata": metadata, "spec": spec}), notes: notes.into_notes() })
}

/// The pod template's settings, and its first container's.
fn pod_spec(
    notes: &mut Notes,
    spec: &mut Map<String, Value>,
    pod: &Map<String, Value>,
    shapes: &[ShapeConfig],
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
            "volumes" => notes.dropped(
                &at,
                "mount a Jobdeck volume in the form instead (spec.mounts); a pod's own volumes are not carried over",
            ),
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
            "command" | "args" | "name" => {}
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
    spec.insert("container".into(), Value::Object(container));
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
        assert_eq!(note("spec.template.spec.containers[0].volumeMounts").became, None);
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

    #[test]
    fn a_file_without_a_job_or_of_another_version_is_refused() {
        let none = read("apiVersion: v1\nkind: Pod\n").unwrap();
        assert_eq!(convert(&none, &[]).unwrap_err().field, "kind");
        let old = read("apiVersion: batch/v1beta1\nkind: Job\n").unwrap();
        assert_eq!(convert(&old, &[]).unwrap_err().field, "apiVersion");
    }
}
