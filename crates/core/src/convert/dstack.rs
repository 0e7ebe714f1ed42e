//! A dstack task (`.dstack.yml`, `type: task`; the task configuration
//! reference, seed 003) as a Jobdeck job.

use serde_json::{json, Map, Value};

use super::shapes::{choose, cpu_quantity, memory_quantity, Need};
use super::{ConvertError, Converted, Document, Notes};
use crate::config::ShapeConfig;

/// The task in `document` as a job.
pub fn convert(document: &Document, shapes: &[ShapeConfig]) -> Result<Converted, ConvertError> {
    let mut notes = Notes::new(document);
    let task = document.value.as_object().ok_or_else(|| notes.refuse("body", "a dstack configuration is a mapping"))?;
    if task.get("type").and_then(Value::as_str) != Some("task") {
        return Err(notes.refuse("type", "only a task (type: task) is a job; services and dev environments are not"));
    }
    let mut metadata = Map::new();
    let mut spec = Map::new();
    let mut container = Map::new();
    for (field, value) in task {
        match field.as_str() {
            "type" => {}
            "name" => {
                metadata.insert("name".into(), value.clone());
                notes.carried("name", "metadata.name", "the job's name");
            }
            "image" => {
                container.insert("image".into(), value.clone());
                notes.carried("image", "spec.container.image", "as it is");
            }
            "commands" => {
                let lines: Vec<&str> = value.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
                // `set -e`: the next command runs only if this one succeeded,
                // as dstack runs them.
                let script = format!("set -e\n{}", lines.join("\n"));
                container.insert("command".into(), json!(["/bin/bash", "-c", script]));
                notes.carried("commands", "spec.container.command", "one bash script, stopping at the first failure");
            }
            "env" => envs(&mut notes, &mut spec, value)?,
            "nodes" => {
                let nodes = value
                    .as_i64()
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| notes.refuse("nodes", "a whole number, 1 or more"))?;
                spec.insert("completions".into(), json!(nodes));
                spec.insert("parallelism".into(), json!(nodes));
                if nodes > 1 {
                    spec.insert("intra_job_communication".into(), json!(true));
                }
                notes.carried("nodes", "spec.completions", "one replica per node, started together");
            }
            "resources" => resources(&mut notes, &mut spec, value, shapes)?,
            "max_duration" => {
                let seconds = duration(&notes, "max_duration", value)?;
                spec.insert("active_deadline_seconds".into(), json!(seconds));
                let words = seconds.map(jobdeck_api::duration_in_words).unwrap_or_else(|| "no limit".into());
                notes.carried("max_duration", "spec.active_deadline_seconds", words);
            }
            "ports" => {
                let ports: Vec<Value> = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|port| match port {
                        Value::Number(n) => n.as_i64(),
                        // `local:container`: the container's side.
                        Value::String(text) => text.rsplit(':').next()?.trim().parse().ok(),
                        _ => None,
                    })
                    .map(|port| json!({"container_port": port}))
                    .collect();
                container.insert("ports".into(), Value::Array(ports));
                notes.carried("ports", "spec.container.ports", "the container's ports");
            }
            "registry_auth" => {
                for (from, to) in [("username", "registry_username"), ("password", "registry_password")] {
                    if let Some(text) = value.get(from) {
                        container.insert(to.into(), text.clone());
                        notes.carried(&format!("registry_auth.{from}"), &format!("spec.container.{to}"), "as it is");
                    }
                }
            }
            "privileged" => {
                notes.dropped("privileged", "refused: a privileged container is a security boundary (docs/contract.md)")
            }
            "retry" => retry(&mut notes, &mut spec, value)?,
            "working_dir" => match value.as_str() {
                Some(dir) if dir.starts_with('/') => {
                    container.insert("working_dir".into(), json!(dir));
                    notes.carried("working_dir", "spec.container.working_dir", "inside the container");
                }
                Some(_) => notes.dropped(
                    "working_dir",
                    "dstack reads a relative directory inside the repository it checks out, which Jobdeck does not: \
                     give an absolute path",
                ),
                None => return Err(notes.refuse("working_dir", "a path such as /workspace")),
            },
            "volumes" => volumes(&mut notes, &mut spec, value)?,
            "user" | "entrypoint" => notes.dropped(field, "not carried over yet (set it in the command)"),
            "python" | "nvcc" => notes.dropped(field, "dstack's own images: give an image instead"),
            _ => notes.dropped(field, "Jobdeck places jobs on its node groups: no clouds, regions, prices or fleets"),
        }
    }
    if !task.contains_key("retry") {
        // dstack's default: a run is not resubmitted.
        retry(&mut notes, &mut spec, &Value::Bool(false))?;
    }
    if !container.is_empty() {
        spec.insert("container".into(), Value::Object(container));
    }
    Ok(Converted { job: json!({"metadata": metadata, "spec": spec}), notes: notes.into_notes() })
}

/// A dstack duration (`2h`, `1d`, seconds, or `off`/`false` for none) in
/// seconds, refused on `field` when it is none of these.
fn duration(notes: &Notes, field: &str, value: &Value) -> Result<Option<i64>, ConvertError> {
    match value {
        Value::Number(n) => Ok(n.as_i64()),
        Value::String(text) => jobdeck_api::parse_duration(text).map_err(|e| notes.refuse(field, e)),
        Value::Bool(false) => Ok(None),
        _ => Err(notes.refuse(field, "a duration such as 2h, 1d or off")),
    }
}

/// dstack's retry events.
const RETRY_EVENTS: [&str; 3] = ["no-capacity", "interruption", "error"];

/// `retry`: dstack resubmits a run for the events it lists, for at most
/// `duration`; absent or `false`, never. Mapped onto what Jobdeck does: it
/// always waits in the queue for capacity (a `duration` for `no-capacity`
/// becomes the queue limit), it starts again a replica lost to the machine
/// or the engine, and a replica whose program failed only while `error` is
/// listed (`spec.disable_retry_on_program_error`); no resubmission at all is
/// a backoff limit of 0. A window for the other events is not enforced yet:
/// the backoff limit bounds them.
fn retry(notes: &mut Notes, spec: &mut Map<String, Value>, value: &Value) -> Result<(), ConvertError> {
    let (events, window): (Vec<String>, Option<&Value>) = match value {
        Value::Bool(on) => (if *on { RETRY_EVENTS.map(String::from).to_vec() } else { Vec::new() }, None),
        Value::Object(policy) => {
            let Some(Value::Array(listed)) = policy.get("on_events") else {
                return Err(notes.refuse("retry.on_events", "a list of no-capacity, interruption and error"));
            };
            let mut events = Vec::new();
            for (i, event) in listed.iter().enumerate() {
                match event.as_str().filter(|e| RETRY_EVENTS.contains(e)) {
                    Some(event) => events.push(event.to_string()),
                    None => {
                        return Err(notes.refuse(&format!("retry.on_events[{i}]"), "no-capacity, interruption or error"))
                    }
                }
            }
            (events, policy.get("duration"))
        }
        _ => return Err(notes.refuse("retry", "true, false, or on_events and a duration")),
    };
    if events.is_empty() {
        spec.insert("backoff_limit".into(), json!(0));
        notes.carried("retry", "spec.backoff_limit", "no resubmission: the first failed replica fails the job");
        return Ok(());
    }
    let listed = |event: &str| events.iter().any(|e| e == event);
    if listed("error") {
        notes.carried(
            "retry",
            "spec.backoff_limit",
            "a failed replica starts again, up to the backoff limit (3 unless set)",
        );
    } else {
        spec.insert("disable_retry_on_program_error".into(), json!(true));
        notes.carried(
            "retry",
            "spec.disable_retry_on_program_error",
            "a program's failure ends the job; a replica lost to the machine or the engine starts again",
        );
    }
    if !listed("no-capacity") {
        notes.dropped(
            "retry.on_events",
            "Jobdeck always waits in the queue for capacity; give the job a queue limit to fail sooner",
        );
    }
    let Some(window) = window else { return Ok(()) };
    let seconds = duration(notes, "retry.duration", window)?;
    match seconds.filter(|_| listed("no-capacity")) {
        Some(seconds) => {
            spec.insert("max_queued_duration_seconds".into(), json!(seconds));
            notes.carried(
                "retry.duration",
                "spec.max_queued_duration_seconds",
                format!(
                    "waits for capacity for {}; for the other events the backoff limit bounds the retries, not a \
                     time window (not yet)",
                    jobdeck_api::duration_in_words(seconds)
                ),
            );
        }
        None => notes.dropped("retry.duration", "the backoff limit bounds the retries, not a time window (not yet)"),
    }
    Ok(())
}

/// `volumes`: a network volume (`name:/path`, or `{name, path}`) becomes
/// the Jobdeck volume of that name mounted at the path; an instance path
/// (`/host/dir:/path`, or `{instance_path, path}`) is not carried over, as
/// Jobdeck mounts only the volumes an admin configured.
fn volumes(notes: &mut Notes, spec: &mut Map<String, Value>, value: &Value) -> Result<(), ConvertError> {
    let mut mounts = Vec::new();
    for (i, item) in value.as_array().into_iter().flatten().enumerate() {
        let at = format!("volumes[{i}]");
        let text = |key: &str| item.get(key).and_then(Value::as_str).map(String::from);
        let (source, target) = match item {
            Value::String(short) => match short.split_once(':') {
                Some((source, target)) => (source.to_string(), target.to_string()),
                None => return Err(notes.refuse(&at, "name:/path, or /instance/path:/path")),
            },
            _ => match (text("name").or_else(|| text("instance_path")), text("path")) {
                (Some(source), Some(target)) => (source, target),
                _ => return Err(notes.refuse(&at, "a name (or an instance_path) and a path")),
            },
        };
        if source.starts_with('/') {
            notes.dropped(
                &at,
                "a directory of the machine: Jobdeck mounts only the volumes an admin configured; choose one in the \
                 form's Storage mounts",
            );
        } else if !target.starts_with('/') {
            return Err(notes.refuse(&at, "the path in the container must be absolute"));
        } else {
            mounts.push(json!({"from": source, "path": "/", "mount_path": target}));
            notes.carried(
                &at,
                "spec.mounts",
                format!("the Jobdeck volume '{source}' at {target}; the workspace must have a volume of that name"),
            );
        }
    }
    if !mounts.is_empty() {
        spec.insert("mounts".into(), Value::Array(mounts));
    }
    Ok(())
}

/// `env`: a mapping, or a list of `NAME=value`; a bare `NAME` (dstack
/// copies it from where `dstack apply` runs) cannot be carried over.
fn envs(notes: &mut Notes, spec: &mut Map<String, Value>, value: &Value) -> Result<(), ConvertError> {
    let mut envs = Vec::new();
    match value {
        Value::Object(map) => {
            for (name, value) in map {
                let text = value.as_str().map(String::from).unwrap_or_else(|| value.to_string());
                envs.push(json!({"name": name, "value": text}));
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let at = format!("env[{i}]");
                let text = item.as_str().ok_or_else(|| notes.refuse(&at, "NAME=value"))?;
                match text.split_once('=') {
                    Some((name, value)) => envs.push(json!({"name": name, "value": value})),
                    None => {
                        notes.dropped(&at, format!("{text} takes its value from where dstack runs; give it a value"))
                    }
                }
            }
        }
        _ => return Err(notes.refuse("env", "a mapping or a list of NAME=value")),
    }
    notes.carried("env", "spec.envs", format!("{} variables", envs.len()));
    spec.insert("envs".into(), Value::Array(envs));
    Ok(())
}

/// The low end of a range (`16GB..`, `16GB..80GB`), or the value.
fn low(text: &str) -> &str {
    text.split("..").next().unwrap_or(text).trim()
}

/// `resources` as the smallest shape that meets them, and the shared memory.
fn resources(
    notes: &mut Notes,
    spec: &mut Map<String, Value>,
    value: &Value,
    shapes: &[ShapeConfig],
) -> Result<(), ConvertError> {
    let mut need = Need::default();
    let text = |field: &str| value.get(field).map(|v| v.as_str().map(String::from).unwrap_or(v.to_string()));
    if let Some(cpu) = text("cpu") {
        need.cpu = cpu_quantity(low(&cpu))
            .ok_or_else(|| notes.refuse("resources.cpu", "a number of CPUs, or a range 4..8"))?;
    }
    if let Some(memory) = text("memory") {
        need.memory_mb =
            memory_quantity(low(&memory)).ok_or_else(|| notes.refuse("resources.memory", "a size such as 8GB"))?;
    }
    match value.get("gpu") {
        None => {}
        Some(Value::Number(n)) => need.gpus = n.as_i64().unwrap_or(0),
        Some(Value::String(text)) => {
            // `A100:80GB:2`, `80GB:2`, `A100`, `A100,H100:2`: names, memory
            // per GPU and count in any order.
            need.gpus = 1;
            for part in text.split(':').map(low) {
                if let Ok(count) = part.parse::<i64>() {
                    need.gpus = count;
                } else if let Some(mib) = memory_quantity(part).filter(|_| part.ends_with('B')) {
                    need.gpu_memory_mb = mib;
                } else {
                    need.gpu_name = part.split(',').next().map(String::from);
                }
            }
        }
        Some(Value::Object(gpu)) => {
            need.gpus = gpu
                .get("count")
                .and_then(|c| c.as_i64().or_else(|| c.as_str()?.split("..").next()?.parse().ok()))
                .unwrap_or(1);
            need.gpu_name = match gpu.get("name") {
                Some(Value::String(name)) => Some(name.clone()),
                Some(Value::Array(names)) => names.first().and_then(Value::as_str).map(String::from),
                _ => None,
            };
            need.gpu_memory_mb =
                gpu.get("memory").and_then(Value::as_str).and_then(|m| memory_quantity(low(m))).unwrap_or(0);
            if let Some(least) = gpu.get("compute_capability") {
                let text = match least {
                    Value::Number(n) => n.to_string(),
                    Value::String(text) => text.clone(),
                    _ => String::new(),
                };
                need.compute_capability = Some(
                    crate::config::parse_compute_capability(&text)
                        .ok_or_else(|| notes.refuse("resources.gpu.compute_capability", "major.minor, such as 7.5"))?,
                );
            }
            for other in ["vendor", "total_memory"] {
                if gpu.contains_key(other) {
                    notes.dropped(&format!("resources.gpu.{other}"), "not matched against shapes yet");
                }
            }
        }
        Some(_) => return Err(notes.refuse("resources.gpu", "a count, a string such as A100:80GB:2, or a mapping")),
    }
    if let Some(shm) = text("shm_size") {
        let mib = memory_quantity(&shm).ok_or_else(|| notes.refuse("resources.shm_size", "a size such as 8GB"))?;
        spec.insert("shared_memory_size".into(), json!(mib));
        notes.carried("resources.shm_size", "spec.shared_memory_size", format!("{mib} MiB"));
    }
    if value.get("disk").is_some() {
        notes.dropped("resources.disk", "a shape's disk is the node's; not matched yet");
    }
    choose(notes, spec, "resources", &need, shapes);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::shapes::tests::shape;
    use crate::convert::source::read;

    const TASK: &str = "\
type: task
name: train-llama
nodes: 2
image: nvcr.io/nvidia/pytorch:24.01-py3
env:
  - HF_TOKEN
  - MODE=fast
commands:
  - pip install -r requirements.txt
  - torchrun train.py
resources:
  gpu: A100:80GB:2
  memory: 64GB..
  shm_size: 16GB
  disk: 200GB
max_duration: 2h
spot_policy: auto
privileged: true
retry:
  on_events: [no-capacity, error]
  duration: 1d
";

    #[test]
    fn a_task_becomes_a_job_and_says_what_became_of_each_field() {
        let document = &read(TASK).unwrap()[0];
        let mut a100 = shape("gpu.a100x2", 2, Some("NVIDIA A100"), 24.0, 240_000);
        a100.accelerator_memory_mb = Some(81_920);
        let mut small = shape("gpu.a100-40x2", 2, Some("NVIDIA A100"), 24.0, 240_000);
        small.accelerator_memory_mb = Some(40_960);
        let converted = convert(document, &[small, a100]).unwrap();
        let job = &converted.job;
        assert_eq!(job["metadata"]["name"], "train-llama");
        assert_eq!(job["spec"]["resource_shape"], "gpu.a100x2", "80 GB per GPU rules out the 40 GB shape");
        assert_eq!((&job["spec"]["completions"], &job["spec"]["intra_job_communication"]), (&json!(2), &json!(true)));
        assert_eq!(
            job["spec"]["container"]["command"][2],
            "set -e\npip install -r requirements.txt\ntorchrun train.py"
        );
        assert_eq!(job["spec"]["envs"], json!([{"name": "MODE", "value": "fast"}]));
        assert_eq!(job["spec"]["active_deadline_seconds"], 7200);
        assert_eq!(job["spec"]["shared_memory_size"], 16_384);
        let note = |field: &str| converted.notes.iter().find(|n| n.field == field).cloned().unwrap();
        assert_eq!((note("env[0]").line, note("env[0]").became), (Some(6), None));
        assert!(note("privileged").message.starts_with("refused"));
        assert_eq!(note("spot_policy").became, None);
        assert_eq!(note("retry").line, Some(19));
        // [no-capacity, error] for 1d: waits a day for capacity, retries a
        // program's failure, and the window for errors is said not to be
        // enforced.
        assert_eq!(job["spec"]["max_queued_duration_seconds"], 86_400);
        assert_eq!(job["spec"].get("disable_retry_on_program_error"), None);
        assert_eq!(note("retry.duration").became.as_deref(), Some("spec.max_queued_duration_seconds"));
        assert!(note("retry.duration").message.contains("not a time window"), "{:?}", note("retry.duration"));
        assert!(jobdeck_api::from_json::<jobdeck_api::LeptonJob>(job.to_string().as_bytes()).is_ok(), "{job}");
    }

    #[test]
    fn an_absolute_working_directory_is_kept_and_a_relative_one_is_said_to_be_not() {
        let absolute = &read("type: task\nname: a\nworking_dir: /workspace/train\n").unwrap()[0];
        let converted = convert(absolute, &[]).unwrap();
        assert_eq!(converted.job["spec"]["container"]["working_dir"], "/workspace/train");
        let relative = &read("type: task\nname: a\nworking_dir: src\n").unwrap()[0];
        let converted = convert(relative, &[]).unwrap();
        assert_eq!(converted.job["spec"].get("container").and_then(|c| c.get("working_dir")), None);
        let note = converted.notes.iter().find(|n| n.field == "working_dir").unwrap();
        assert_eq!((note.line, note.became.as_deref()), (Some(3), None));
        assert!(note.message.contains("absolute path"), "{}", note.message);
    }

    #[test]
    fn a_network_volume_is_mounted_by_name_and_a_machines_directory_is_not() {
        let text = "type: task\nname: a\nvolumes:\n  - datasets:/data\n  - /mnt/cache:/cache\n  - name: ckpt\n    path: /ckpt\n";
        let converted = convert(&read(text).unwrap()[0], &[]).unwrap();
        assert_eq!(
            converted.job["spec"]["mounts"],
            json!([{"from": "datasets", "path": "/", "mount_path": "/data"}, {"from": "ckpt", "path": "/", "mount_path": "/ckpt"}])
        );
        let note = |field: &str| converted.notes.iter().find(|n| n.field == field).unwrap().clone();
        assert_eq!((note("volumes[0]").line, note("volumes[0]").became.as_deref()), (Some(4), Some("spec.mounts")));
        assert_eq!((note("volumes[1]").line, note("volumes[1]").became), (Some(5), None));
        assert!(note("volumes[1]").message.contains("volumes an admin configured"));
        let relative = &read("type: task\nvolumes: [data:relative]\n").unwrap()[0];
        assert_eq!(convert(relative, &[]).unwrap_err().field, "volumes[0]");
    }

    #[test]
    fn retry_events_map_onto_what_jobdeck_retries() {
        let job = |text: &str| convert(&read(text).unwrap()[0], &[]).map(|c| c.job["spec"].clone());
        let none = job("type: task\nname: a\n").unwrap();
        assert_eq!(none["backoff_limit"], 0, "dstack resubmits nothing by default");
        assert_eq!(job("type: task\nretry: false\n").unwrap()["backoff_limit"], 0);
        let all = job("type: task\nretry: true\n").unwrap();
        assert_eq!((all.get("backoff_limit"), all.get("disable_retry_on_program_error")), (None, None));
        let interruptions = job("type: task\nretry:\n  on_events: [interruption]\n  duration: 2h\n").unwrap();
        assert_eq!(interruptions["disable_retry_on_program_error"], true, "a program's failure ends the job");
        assert_eq!(interruptions.get("max_queued_duration_seconds"), None, "no-capacity is not listed");
        let wrong = convert(&read("type: task\nretry:\n  on_events: [oom]\n").unwrap()[0], &[]).unwrap_err();
        assert_eq!((wrong.field.as_str(), wrong.line), ("retry.on_events[0]", 3));
    }

    #[test]
    fn a_least_compute_capability_rules_out_older_gpus() {
        let shapes = [
            shape("gpu.a100x1", 1, Some("NVIDIA-A100-80GB"), 8.0, 65_536),
            shape("gpu.h100x1", 1, Some("NVIDIA-H100-80GB-HBM3"), 8.0, 65_536),
        ];
        let text = "type: task\nresources:\n  gpu:\n    count: 1\n    compute_capability: 8.9\n";
        let converted = convert(&read(text).unwrap()[0], &shapes).unwrap();
        assert_eq!(converted.job["spec"]["resource_shape"], "gpu.h100x1");
        let bad = "type: task\nresources:\n  gpu:\n    compute_capability: high\n";
        let error = convert(&read(bad).unwrap()[0], &shapes).unwrap_err();
        assert_eq!((error.field.as_str(), error.line), ("resources.gpu.compute_capability", 4));
    }

    #[test]
    fn only_a_task_is_a_job() {
        let service = &read("type: service\nport: 8000\n").unwrap()[0];
        assert_eq!(convert(service, &[]).unwrap_err().field, "type");
    }
}
