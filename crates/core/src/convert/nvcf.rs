//! An NVCF container task (`task.json`, seed 004) as a Jobdeck job.

use serde_json::{json, Map, Value};

use super::shapes::require;
use super::{ConvertError, Converted, Document, Notes};
use crate::config::ShapeConfig;
use jobdeck_api::{AmountRange, GpuRequirement, ResourceRequirements};

/// NVCF's defaults for the two limits it always has.
const QUEUE_LIMIT_DEFAULT: &str = "PT72H";
const GRACE_PERIOD_DEFAULT: &str = "PT1H";

/// The job the task in `document` describes.
pub fn convert(document: &Document, shapes: &[ShapeConfig]) -> Result<Converted, ConvertError> {
    let mut notes = Notes::new(document);
    let task = document.value.as_object().ok_or_else(|| notes.refuse("body", "an NVCF task is a JSON object"))?;
    let text = |field: &str| task.get(field).and_then(Value::as_str);
    let mut metadata = Map::new();
    let mut spec = Map::new();
    let mut container = Map::new();

    for (field, value) in task {
        match field.as_str() {
            "name" => {
                metadata.insert("name".into(), value.clone());
                notes.carried("name", "metadata.name", "the job's name");
            }
            "containerImage" => {
                container.insert("image".into(), value.clone());
                notes.carried("containerImage", "spec.container.image", "the image");
            }
            "containerArgs" => {
                let args = value.as_str().ok_or_else(|| notes.refuse("containerArgs", "must be a string"))?;
                let words = shell_words::split(args)
                    .map_err(|e| notes.refuse("containerArgs", format!("cannot be split into words: {e}")))?;
                notes.carried(
                    "containerArgs",
                    "spec.container.args",
                    format!(
                        "split into words as a shell would, not run by one: {}; passed to the image's entrypoint, \
                         as NVCF does",
                        serde_json::to_string(&words).unwrap_or_default()
                    ),
                );
                container.insert("args".into(), json!(words));
            }
            "containerEnvironment" => {
                let mut envs = Vec::new();
                for (i, pair) in value.as_array().into_iter().flatten().enumerate() {
                    let at = format!("containerEnvironment[{i}]");
                    let name =
                        pair.get("key").and_then(Value::as_str).ok_or_else(|| notes.refuse(&at, "needs a key"))?;
                    let value = pair.get("value").and_then(Value::as_str).unwrap_or_default();
                    envs.push(json!({"name": name, "value": value}));
                }
                notes.carried("containerEnvironment", "spec.envs", format!("{} variables", envs.len()));
                push_envs(&mut spec, envs);
            }
            "secrets" => {
                // A secret's value never comes back in the answer: the
                // variable references a secret of that name, which the user
                // makes (or has) in Jobdeck.
                let mut envs = Vec::new();
                for (i, secret) in value.as_array().into_iter().flatten().enumerate() {
                    let at = format!("secrets[{i}]");
                    let name =
                        secret.get("name").and_then(Value::as_str).ok_or_else(|| notes.refuse(&at, "needs a name"))?;
                    envs.push(json!({"name": name, "value_from": {"secret_name_ref": name}}));
                    notes.carried(
                        &at,
                        "spec.envs",
                        format!("{name} reads the Jobdeck secret '{name}'; its value is not carried over: create the secret with the value first"),
                    );
                }
                push_envs(&mut spec, envs);
            }
            "maxRuntimeDuration" => {
                duration(&mut notes, &mut spec, value, "maxRuntimeDuration", "active_deadline_seconds")?
            }
            "maxQueuedDuration" => {
                duration(&mut notes, &mut spec, value, "maxQueuedDuration", "max_queued_duration_seconds")?
            }
            "terminationGracePeriodDuration" => duration(
                &mut notes,
                &mut spec,
                value,
                "terminationGracePeriodDuration",
                "termination_grace_period_seconds",
            )?,
            "gpuSpecification" => gpu(&mut notes, &mut spec, value, shapes),
            "description" => {
                metadata.insert("annotations".into(), json!({"description": value}));
                notes.carried("description", "metadata.annotations.description", "the description");
            }
            "resultHandlingStrategy" | "resultsLocation" => notes.dropped(
                field,
                "Jobdeck does not upload results; write them to a mounted volume (spec.mounts) instead",
            ),
            "models" | "resources" => {
                notes.dropped(field, "Jobdeck does not fetch artifacts; mount them or fetch them in the command")
            }
            other => notes.dropped(other, "Jobdeck has no such setting"),
        }
    }
    // NVCF's limits apply when the file gives none.
    for (field, name, default) in [
        ("maxQueuedDuration", "max_queued_duration_seconds", QUEUE_LIMIT_DEFAULT),
        ("terminationGracePeriodDuration", "termination_grace_period_seconds", GRACE_PERIOD_DEFAULT),
    ] {
        if text(field).is_none() && !task.contains_key(field) {
            let seconds = jobdeck_api::parse_duration(default).ok().flatten();
            spec.insert(name.into(), json!(seconds));
            notes.carried(field, &format!("spec.{name}"), format!("not in the file: NVCF's default, {default}"));
        }
    }
    if !container.is_empty() {
        spec.insert("container".into(), Value::Object(container));
    }
    Ok(Converted { job: json!({"metadata": metadata, "spec": spec}), notes: notes.into_notes() })
}

fn push_envs(spec: &mut Map<String, Value>, envs: Vec<Value>) {
    let list = spec.entry("envs").or_insert_with(|| json!([]));
    if let Some(list) = list.as_array_mut() {
        list.extend(envs);
    }
}

/// An ISO 8601 duration of the file as the job's seconds.
fn duration(
    notes: &mut Notes,
    spec: &mut Map<String, Value>,
    value: &Value,
    field: &str,
    name: &str,
) -> Result<(), ConvertError> {
    let text = value.as_str().ok_or_else(|| notes.refuse(field, "must be an ISO 8601 duration such as PT4H"))?;
    let seconds = jobdeck_api::parse_duration(text).map_err(|e| notes.refuse(field, e))?;
    spec.insert(name.into(), json!(seconds));
    let words = seconds.map(jobdeck_api::duration_in_words).unwrap_or_else(|| "no limit".into());
    notes.carried(field, &format!("spec.{name}"), format!("{text} is {words}"));
    Ok(())
}

/// `gpuSpecification` as the smallest shape with that GPU and count
/// (`instanceType` `GPU.H100_8x` says eight).
fn gpu(notes: &mut Notes, spec: &mut Map<String, Value>, value: &Value, shapes: &[ShapeConfig]) {
    let name = value.get("gpu").and_then(Value::as_str).unwrap_or_default();
    let instance = value.get("instanceType").and_then(Value::as_str).unwrap_or_default();
    let count: i64 =
        instance.rsplit('_').next().and_then(|n| n.strip_suffix('x')).and_then(|n| n.parse().ok()).unwrap_or(1);
    // NVCF's instance types are exact: `GPU.H100_8x` is eight H100s.
    let gpu = GpuRequirement {
        name: (!name.is_empty()).then(|| vec![name.to_string()]),
        count: Some(AmountRange { min: Some(count), max: Some(count) }),
        ..GpuRequirement::default()
    };
    let requirements = ResourceRequirements { gpu: Some(gpu), ..ResourceRequirements::default() };
    require(notes, spec, "gpuSpecification", &requirements, shapes);
    for other in ["backend", "clusters"] {
        if value.get(other).is_some() {
            notes.dropped(
                &format!("gpuSpecification.{other}"),
                "Jobdeck places jobs by node group, not by backend or cluster",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::source::read;

    fn shape(name: &str, gpus: i64, gpu: &str) -> ShapeConfig {
        crate::convert::shapes::tests::shape(name, gpus, Some(gpu), 8.0, 65_536 * gpus.max(1))
    }

    const SEED: &str = r#"{
 "name": "my-training-job",
 "gpuSpecification": {
 "gpu": "H100",
 "instanceType": "GPU.H100_1x",
 "backend": "GFN"
 },
 "containerImage": "my-registry/training:latest",
 "containerArgs": "--epochs 10 --batch-size 32",
 "containerEnvironment": [
 {"key": "DATASET_PATH", "value": "/data/train"},
 {"key": "LOG_LEVEL", "value": "info"}
 ],
 "maxRuntimeDuration": "PT4H",
 "maxQueuedDuration": "PT72H",
 "resultHandlingStrategy": "UPLOAD",
 "resultsLocation": "my-org/my-team/my-model",
 "secrets": [
 {"name": "NGC_API_KEY", "value": "nvapi-secret-value"}
 ]
}"#;

    #[test]
    fn the_seed_task_becomes_a_job_and_says_what_became_of_each_field() {
        let document = &read(SEED).unwrap()[0];
        let shapes =
            [shape("gpu.a100x1", 1, "A100"), shape("gpu.h100x8", 8, "H100"), shape("gpu.h100x1", 1, "NVIDIA H100")];
        let converted = convert(document, &shapes).unwrap();
        let job = &converted.job;
        assert_eq!(job["metadata"]["name"], "my-training-job");
        assert_eq!(crate::convert::shapes::tests::chosen(job, &shapes).as_deref(), Some("gpu.h100x1"));
        assert_eq!(job["spec"]["container"]["args"], json!(["--epochs", "10", "--batch-size", "32"]));
        assert_eq!(job["spec"]["container"].get("command"), None, "the image's entrypoint runs");
        assert_eq!(job["spec"]["active_deadline_seconds"], 14_400);
        assert_eq!(job["spec"]["max_queued_duration_seconds"], 259_200);
        assert_eq!(job["spec"]["termination_grace_period_seconds"], 3_600, "NVCF's default");
        assert_eq!(
            job["spec"]["envs"][2],
            json!({"name": "NGC_API_KEY", "value_from": {"secret_name_ref": "NGC_API_KEY"}})
        );
        let answer = serde_json::to_string(&job).unwrap() + &format!("{:?}", converted.notes);
        assert!(!answer.contains("nvapi-secret-value"), "a secret's value never comes back");
        let note = |field: &str| converted.notes.iter().find(|n| n.field == field).unwrap().clone();
        assert_eq!(
            (note("containerArgs").line, note("containerArgs").became.as_deref()),
            (Some(9), Some("spec.container.args"))
        );
        assert_eq!(note("resultsLocation").became, None);
        assert_eq!(note("gpuSpecification.backend").line, Some(6));
        assert!(jobdeck_api::from_json::<jobdeck_api::LeptonJob>(job.to_string().as_bytes()).is_ok(), "{job}");
    }

    #[test]
    fn what_cannot_be_read_is_refused_at_its_line() {
        let document = &read("{\n\"containerArgs\": \"--name 'unclosed\"\n}").unwrap()[0];
        let error = convert(document, &[]).unwrap_err();
        assert_eq!((error.field.as_str(), error.line), ("containerArgs", 2));
        let document = &read("{\"maxRuntimeDuration\": \"P1Y\"}").unwrap()[0];
        assert_eq!(convert(document, &[]).unwrap_err().field, "maxRuntimeDuration");
    }
}
