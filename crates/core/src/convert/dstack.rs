//! A dstack task (`.dstack.yml`, `type: task`; the task configuration
//! reference, seed 003) as a Jobdeck job.

use serde_json::{json, Map, Value};

use super::shapes::{cpu_quantity, memory_quantity, range_of, require};
use super::{ConvertError, Converted, Document, Notes};
use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::config::ShapeConfig;
use jobdeck_api::{AmountRange, CpuRange, GpuRequirement, ResourceRequirements};

/// The task in `document` as a job, on a workspace of `shapes` whose
/// volumes are the host directories `volumes` names.
pub fn convert(
    document: &Document,
    shapes: &[ShapeConfig],
    volumes: &BTreeMap<String, PathBuf>,
) -> Result<Converted, ConvertError> {
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
            // Read with `entrypoint` after the loop.
            "commands" | "entrypoint" => {}
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
            "privileged" => match value.as_bool() {
                Some(true) => {
                    spec.insert("user_security_context".into(), json!({"privileged": true}));
                    notes.carried(
                        "privileged",
                        "spec.user_security_context.privileged",
                        "only on node groups an admin opened to privileged containers for your role",
                    );
                }
                Some(false) => {}
                None => return Err(notes.refuse("privileged", "true or false")),
            },
            "user" => match value.as_str().map(|text| (text, jobdeck_api::parse_container_user(text))) {
                Some((text, Ok(_))) => {
                    container.insert("user".into(), json!(text));
                    notes.carried("user", "spec.container.user", "inside the container's own user namespace");
                }
                Some((_, Err(message))) => return Err(notes.refuse("user", message)),
                None => return Err(notes.refuse("user", "a user name or id, such as ubuntu or 1000:1000")),
            },
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
            "volumes" => mounts(&mut notes, &mut spec, value, volumes)?,
            "python" | "nvcc" => notes.dropped(field, "dstack's own images: give an image instead"),
            _ => notes.dropped(field, "Jobdeck places jobs on its node groups: no clouds, regions, prices or fleets"),
        }
    }
    if let Some(command) = command(&mut notes, task)? {
        container.insert("command".into(), command);
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

/// The command dstack runs: with `entrypoint`, its words (split as a shell
/// would) followed by each of `commands` as one argument, as `docker run
/// --entrypoint` would; without, the commands as one script of the image's
/// shell (`/bin/sh`, or bash in dstack's own image when no image is given)
/// that stops at the first failure, as dstack joins them with `&&`.
fn command(notes: &mut Notes, task: &Map<String, Value>) -> Result<Option<Value>, ConvertError> {
    let mut lines = Vec::new();
    if let Some(value) = task.get("commands") {
        for line in value.as_array().ok_or_else(|| notes.refuse("commands", "a list of shell commands"))? {
            lines.push(line.as_str().ok_or_else(|| notes.refuse("commands", "a list of shell commands"))?);
        }
    }
    if let Some(value) = task.get("entrypoint") {
        let text =
            value.as_str().ok_or_else(|| notes.refuse("entrypoint", "a command line such as python train.py"))?;
        let mut words = shell_words::split(text).map_err(|e| notes.refuse("entrypoint", e.to_string()))?;
        if words.is_empty() {
            return Err(notes.refuse("entrypoint", "a command line such as python train.py"));
        }
        words.extend(lines.iter().map(|line| line.to_string()));
        let said = format!("the command {}", words.len());
        notes.carried("entrypoint", "spec.container.command", format!("{said} words: its own, then each command"));
        return Ok(Some(json!(words)));
    }
    if lines.is_empty() {
        return Ok(None);
    }
    let shell = if task.contains_key("image") { "/bin/sh" } else { "/bin/bash" };
    let script = format!("set -e\n{}", lines.join("\n"));
    notes.carried("commands", "spec.container.command", format!("one {shell} script, stopping at the first failure"));
    Ok(Some(json!([shell, "-c", script])))
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
/// a backoff limit of 0. A `duration` is the retry window
/// (`spec.retry_window_seconds`): whole runs start again within it, as
/// dstack resubmits them, and single replicas do not (a backoff limit of 0).
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
            "a failed replica starts again, up to the backoff limit (3 unless set; with a duration, the whole run \
             starts again instead)",
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
    // `off`: no window, as without one.
    let Some(seconds) = duration(notes, "retry.duration", window)? else { return Ok(()) };
    let words = jobdeck_api::duration_in_words(seconds);
    spec.insert("retry_window_seconds".into(), json!(seconds));
    spec.insert("backoff_limit".into(), json!(0));
    let queue = if listed("no-capacity") {
        spec.insert("max_queued_duration_seconds".into(), json!(seconds));
        format!("; it waits for capacity for {words} as well (spec.max_queued_duration_seconds)")
    } else {
        String::new()
    };
    notes.carried(
        "retry.duration",
        "spec.retry_window_seconds",
        format!(
            "a failed or preempted run starts again within {words} of the job's creation; a failed replica fails \
             its run (spec.backoff_limit 0), as dstack resubmits whole runs{queue}"
        ),
    );
    Ok(())
}

/// `volumes`: a network volume (`name:/path`, or `{name, path}`) becomes
/// the Jobdeck volume of that name mounted at the path; an instance path
/// (`/host/dir:/path`, or `{instance_path, path}`) becomes a mount of the
/// configured volume whose directory holds it, with the rest of the path
/// inside it (`spec.mounts[].path`, which the executor resolves inside the
/// volume as it resolves any mount's); a directory under no volume is not
/// carried over, as Jobdeck mounts only what an admin configured.
fn mounts(
    notes: &mut Notes,
    spec: &mut Map<String, Value>,
    value: &Value,
    volumes: &BTreeMap<String, PathBuf>,
) -> Result<(), ConvertError> {
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
        if !target.starts_with('/') {
            return Err(notes.refuse(&at, "the path in the container must be absolute"));
        }
        if source.starts_with('/') {
            match super::volumes::volume_holding(&source, volumes) {
                Some((name, inside)) => {
                    mounts.push(json!({"from": name, "path": inside, "mount_path": target}));
                    notes.carried(&at, "spec.mounts", format!("{inside} of the volume '{name}' at {target}"));
                }
                None => notes.dropped(&at, super::volumes::outside_every_volume(volumes)),
            }
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

/// `resources` as requirements (`spec.resources`), which the server meets
/// with the smallest shape that has them, and the shared memory.
fn resources(
    notes: &mut Notes,
    spec: &mut Map<String, Value>,
    value: &Value,
    shapes: &[ShapeConfig],
) -> Result<(), ConvertError> {
    let mut requirements = ResourceRequirements::default();
    let text = |v: &Value| v.as_str().map(String::from).unwrap_or(v.to_string());
    let field = |name: &str| value.get(name).map(text);
    let sizes = |notes: &mut Notes, at: &str, written: &str| {
        range_of(written, false, memory_quantity)
            .map(|(min, max)| AmountRange { min, max })
            .ok_or_else(|| notes.refuse(at, "a size such as 8GB, or a range 8GB..64GB"))
    };
    if let Some(cpu) = field("cpu") {
        let (min, max) = range_of(&cpu, false, cpu_quantity)
            .ok_or_else(|| notes.refuse("resources.cpu", "a number of CPUs, or a range 4..8"))?;
        requirements.cpu = Some(CpuRange { min, max });
    }
    if let Some(memory) = field("memory") {
        requirements.memory_in_mb = Some(sizes(notes, "resources.memory", &memory)?);
    }
    if let Some(disk) = field("disk") {
        // dstack writes `disk: 100GB..` or `disk: {size: 100GB..}`.
        let written = value["disk"].get("size").map(text).unwrap_or(disk);
        let mib = sizes(notes, "resources.disk", &written)?;
        let gb = |mib: Option<i64>| mib.map(|m| (m + 1023) / 1024);
        requirements.disk_in_gb = Some(AmountRange { min: gb(mib.min), max: gb(mib.max) });
    }
    let count = |notes: &mut Notes, written: &str| {
        range_of(written, true, |p| p.parse::<i64>().ok())
            .map(|(min, max)| AmountRange { min, max })
            .ok_or_else(|| notes.refuse("resources.gpu.count", "a number of GPUs, or a range 1..2"))
    };
    match value.get("gpu") {
        None => {}
        Some(Value::Number(n)) => {
            let n = n.as_i64().unwrap_or(0);
            if n > 0 {
                let count = Some(AmountRange { min: Some(n), max: Some(n) });
                requirements.gpu = Some(GpuRequirement { count, ..GpuRequirement::default() });
            }
        }
        Some(Value::String(written)) => {
            // `A100:80GB:2`, `80GB:2`, `A100`, `A100,H100:2`, `nvidia:2`:
            // vendor, names, memory per GPU and count in any order.
            let mut gpu = GpuRequirement::default();
            for part in written.split(':').map(str::trim) {
                if part.starts_with(|c: char| c.is_ascii_digit() || c == '.') && !part.ends_with('B') {
                    gpu.count = Some(count(notes, part)?);
                } else if part.ends_with('B') && range_of(part, false, memory_quantity).is_some() {
                    gpu.memory_in_mb = Some(sizes(notes, "resources.gpu", part)?);
                } else if jobdeck_api::GPU_VENDORS.contains(&part.to_ascii_lowercase().as_str()) {
                    gpu.vendor = Some(part.to_ascii_lowercase());
                } else {
                    gpu.name = Some(part.split(',').map(|n| n.trim().to_string()).collect());
                }
            }
            requirements.gpu = Some(gpu);
        }
        Some(Value::Object(written)) => {
            let mut gpu = GpuRequirement {
                vendor: written.get("vendor").map(text).map(|v| v.to_ascii_lowercase()),
                ..GpuRequirement::default()
            };
            if let Some(n) = written.get("count") {
                gpu.count = Some(count(notes, &text(n))?);
            }
            gpu.name = match written.get("name") {
                Some(Value::String(name)) => Some(name.split(',').map(|n| n.trim().to_string()).collect()),
                Some(Value::Array(names)) => Some(names.iter().map(text).collect()),
                _ => None,
            };
            if let Some(memory) = written.get("memory") {
                gpu.memory_in_mb = Some(sizes(notes, "resources.gpu.memory", &text(memory))?);
            }
            if let Some(total) = written.get("total_memory") {
                gpu.total_memory_in_mb = Some(sizes(notes, "resources.gpu.total_memory", &text(total))?);
            }
            if let Some(least) = written.get("compute_capability") {
                let least = text(least).trim_matches('"').to_string();
                if jobdeck_api::parse_compute_capability(&least).is_none() {
                    return Err(notes.refuse("resources.gpu.compute_capability", "major.minor, such as 7.5"));
                }
                gpu.compute_capability = Some(least);
            }
            requirements.gpu = Some(gpu);
        }
        Some(_) => return Err(notes.refuse("resources.gpu", "a count, a string such as A100:80GB:2, or a mapping")),
    }
    if let Some(shm) = field("shm_size") {
        let mib = memory_quantity(&shm).ok_or_else(|| notes.refuse("resources.shm_size", "a size such as 8GB"))?;
        spec.insert("shared_memory_size".into(), json!(mib));
        notes.carried("resources.shm_size", "spec.shared_memory_size", format!("{mib} MiB"));
    }
    require(notes, spec, "resources", &requirements, shapes);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace without volumes.
    fn convert(document: &Document, shapes: &[ShapeConfig]) -> Result<Converted, ConvertError> {
        super::convert(document, shapes, &BTreeMap::new())
    }
    use crate::convert::shapes::tests::{chosen, shape};
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
        a100.ephemeral_storage_gb = Some(500);
        let mut small = shape("gpu.a100-40x2", 2, Some("NVIDIA A100"), 24.0, 240_000);
        small.accelerator_memory_mb = Some(40_960);
        let shapes = [small.clone(), a100.clone()];
        let converted = convert(document, &shapes).unwrap();
        let job = &converted.job;
        assert_eq!(job["metadata"]["name"], "train-llama");
        assert_eq!(job["spec"].get("resource_shape"), None, "the server chooses when it creates the job");
        assert_eq!(
            job["spec"]["resources"],
            json!({"gpu": {"name": ["A100"], "count": {"min": 2, "max": 2}, "memory_in_mb": {"min": 81_920}},
                   "memory_in_mb": {"min": 65_536}, "disk_in_gb": {"min": 200}})
        );
        assert_eq!(chosen(job, &shapes).as_deref(), Some("gpu.a100x2"), "80 GB per GPU rules out the 40 GB shape");
        let note = converted.notes.iter().find(|n| n.field == "resources").unwrap();
        assert!(note.message.contains("the smallest shape that meets them is gpu.a100x2"), "{note:?}");
        // A requirement no shape meets is left out, and the note says so.
        a100.ephemeral_storage_gb = Some(100);
        let converted = convert(document, &[small, a100]).unwrap();
        assert_eq!(converted.job["spec"].get("resources"), None);
        let note = converted.notes.iter().find(|n| n.field == "resources").unwrap();
        assert!(note.became.is_none() && note.message.starts_with("no shape of this workspace has"), "{note:?}");
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
        assert_eq!(note("privileged").became.as_deref(), Some("spec.user_security_context.privileged"));
        assert_eq!(job["spec"]["user_security_context"], json!({"privileged": true}), "the server decides");
        assert_eq!(job["spec"]["container"]["command"][0], "/bin/sh", "dstack's shell for an image of one's own");
        assert_eq!(note("spot_policy").became, None);
        assert_eq!(note("retry").line, Some(19));
        // [no-capacity, error] for 1d: waits a day for capacity, and
        // restarts a failed run, a program's failure included, for a day.
        assert_eq!(job["spec"]["max_queued_duration_seconds"], 86_400);
        assert_eq!(job["spec"]["retry_window_seconds"], 86_400);
        assert_eq!(job["spec"]["backoff_limit"], 0, "dstack resubmits whole runs");
        assert_eq!(job["spec"].get("disable_retry_on_program_error"), None);
        assert_eq!(note("retry.duration").became.as_deref(), Some("spec.retry_window_seconds"));
        assert!(
            note("retry.duration").message.contains("within 1 day of the job's creation"),
            "{:?}",
            note("retry.duration")
        );
        assert!(jobdeck_api::from_json::<jobdeck_api::LeptonJob>(job.to_string().as_bytes()).is_ok(), "{job}");
    }

    /// dstack's `entrypoint` replaces the image's, and then each command is
    /// one argument after its words (as dstack's job configurator builds
    /// them); `user` is carried as it is, and a user that is not one is
    /// refused on its line.
    #[test]
    fn an_entrypoint_takes_the_commands_as_arguments_and_the_user_is_carried() {
        let text = "type: task\nname: a\nimage: python:3.12\nuser: 1000:1000\nentrypoint: python -u -c\ncommands:\n  - print('one two')\n";
        let converted = convert(&read(text).unwrap()[0], &[]).unwrap();
        let container = &converted.job["spec"]["container"];
        assert_eq!(container["command"], json!(["python", "-u", "-c", "print('one two')"]));
        assert_eq!(container["user"], "1000:1000");
        let note = converted.notes.iter().find(|n| n.field == "entrypoint").unwrap();
        assert_eq!(note.became.as_deref(), Some("spec.container.command"));
        let quoted = "type: task\nname: a\nentrypoint: '\"/bin/my tool\" --flag'\n";
        let converted = convert(&read(quoted).unwrap()[0], &[]).unwrap();
        assert_eq!(converted.job["spec"]["container"]["command"], json!(["/bin/my tool", "--flag"]));
        let no_image = "type: task\nname: a\ncommands:\n  - echo hi\n";
        let converted = convert(&read(no_image).unwrap()[0], &[]).unwrap();
        assert_eq!(converted.job["spec"]["container"]["command"][0], "/bin/bash", "dstack's own image has bash");
        for (text, field, line) in [
            ("type: task\nname: a\nuser: \"--privileged\"\n", "user", 3),
            ("type: task\nname: a\nentrypoint: \"python 'unclosed\"\n", "entrypoint", 3),
            ("type: task\nname: a\nprivileged: yes please\n", "privileged", 3),
        ] {
            let error = convert(&read(text).unwrap()[0], &[]).unwrap_err();
            assert_eq!((error.field.as_str(), error.line), (field, line), "{error:?}");
        }
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
        assert!(note("volumes[1]").message.contains("outside every volume an admin configured"));
        let relative = &read("type: task\nvolumes: [data:relative]\n").unwrap()[0];
        assert_eq!(convert(relative, &[]).unwrap_err().field, "volumes[0]");
    }

    #[test]
    fn a_machines_directory_under_a_configured_volume_is_that_volume_mounted_at_the_rest() {
        let volumes = BTreeMap::from([
            ("shared".to_string(), PathBuf::from("/srv/shared")),
            ("models".to_string(), PathBuf::from("/srv/shared/models")),
        ]);
        let text = "type: task\nvolumes:\n  - /srv/shared/data/imagenet:/data\n  - /srv/shared/models:/models\n  - \
                    instance_path: /srv/shared/../../etc\n    path: /etc2\n  - /srv/sharedother:/x\n";
        let converted = super::convert(&read(text).unwrap()[0], &[], &volumes).unwrap();
        assert_eq!(
            converted.job["spec"]["mounts"],
            json!([{"from": "shared", "path": "/data/imagenet", "mount_path": "/data"},
                   {"from": "models", "path": "/", "mount_path": "/models"}]),
            "the deepest volume that holds it; `..` and a mere prefix of a name are not inside"
        );
        let note = |field: &str| converted.notes.iter().find(|n| n.field == field).unwrap().clone();
        assert_eq!(note("volumes[2]").became, None);
        assert!(note("volumes[3]").message.contains("their directories: /srv/shared/models, /srv/shared)"));
        assert!(jobdeck_api::from_json::<jobdeck_api::LeptonJob>(converted.job.to_string().as_bytes()).is_ok());
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
        assert_eq!(interruptions["retry_window_seconds"], 7_200);
        let off = job("type: task\nretry:\n  on_events: [error]\n  duration: off\n").unwrap();
        assert_eq!(off.get("retry_window_seconds"), None, "off: no window");
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
        assert_eq!(chosen(&converted.job, &shapes).as_deref(), Some("gpu.h100x1"));
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
