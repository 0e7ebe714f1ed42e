//! Job templates: the built-in public ones, the rules a saved one must
//! follow, and rendering (filling a template's `{{name}}` placeholders from
//! the parameters a request gives). docs/api.md, "Templates".
//!
//! Rendering only fills in text: what it makes is a job specification that
//! `POST /jobs` then validates like any other, with the caller's rights.
//! A parameter's value never becomes anything but the string (or number)
//! the template put it in, so a value cannot add fields to the job.

use std::collections::BTreeMap;

use jobdeck_api::{Metadata, Template, TemplateSpec, TemplateStatus, TEMPLATE_BYTES_MAX};
use serde_json::{json, Map, Value};

/// The most bytes (as JSON) a rendered job may take.
pub const RENDERED_BYTES_MAX: usize = 1024 * 1024;

/// Why a template or a render request was refused: the field (as a path
/// such as `payload.run` or `spec.json_schema.properties.run.type`) and
/// what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct TemplateError {
    pub field: String,
    pub message: String,
}

fn refuse(field: impl Into<String>, message: impl Into<String>) -> TemplateError {
    TemplateError { field: field.into(), message: message.into() }
}

/// A parameter's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ParamType {
    String,
    Integer,
    Number,
    Boolean,
}

impl ParamType {
    fn parse(text: &str) -> Option<ParamType> {
        match text {
            "string" => Some(ParamType::String),
            "integer" => Some(ParamType::Integer),
            "number" => Some(ParamType::Number),
            "boolean" => Some(ParamType::Boolean),
            _ => None,
        }
    }

    fn accepts(self, value: &Value) -> bool {
        match self {
            ParamType::String => value.is_string(),
            ParamType::Integer => value.is_i64() || value.is_u64(),
            ParamType::Number => value.is_number(),
            ParamType::Boolean => value.is_boolean(),
        }
    }

    fn name(self) -> &'static str {
        match self {
            ParamType::String => "a string",
            ParamType::Integer => "a whole number",
            ParamType::Number => "a number",
            ParamType::Boolean => "true or false",
        }
    }

    /// A value of the type, to try a template whose parameter has no
    /// default.
    fn sample(self) -> Value {
        match self {
            ParamType::String => json!("x"),
            ParamType::Integer | ParamType::Number => json!(1),
            ParamType::Boolean => json!(true),
        }
    }
}

/// One parameter of a template's schema.
#[derive(Debug, Clone)]
struct Param {
    kind: ParamType,
    default: Option<Value>,
    required: bool,
}

/// The parameters of `schema`, checked.
fn params_of(schema: &Value) -> Result<BTreeMap<String, Param>, TemplateError> {
    let field = "spec.json_schema";
    let Some(schema) = schema.as_object() else {
        return Err(refuse(field, "must be a JSON schema object, {\"type\": \"object\", \"properties\": {…}}"));
    };
    if schema.get("type").is_some_and(|t| t != "object") {
        return Err(refuse(format!("{field}.type"), "must be \"object\""));
    }
    let empty = Map::new();
    let properties = match schema.get("properties") {
        None => &empty,
        Some(Value::Object(properties)) => properties,
        Some(_) => return Err(refuse(format!("{field}.properties"), "must be an object of parameters")),
    };
    let required: Vec<&str> = match schema.get("required") {
        None => Vec::new(),
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        Some(_) => return Err(refuse(format!("{field}.required"), "must be a list of parameter names")),
    };
    let mut params = BTreeMap::new();
    for (name, property) in properties {
        let at = format!("{field}.properties.{name}");
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(refuse(at, "a parameter's name is letters, digits and _"));
        }
        let kind = property.get("type").and_then(Value::as_str).and_then(ParamType::parse).ok_or_else(|| {
            refuse(format!("{at}.type"), "must be \"string\", \"integer\", \"number\" or \"boolean\"")
        })?;
        let default = property.get("default").cloned();
        if let Some(default) = &default {
            if !kind.accepts(default) {
                return Err(refuse(format!("{at}.default"), format!("must be {}", kind.name())));
            }
        }
        params.insert(name.clone(), Param { kind, default, required: required.contains(&name.as_str()) });
    }
    if let Some(missing) = required.iter().find(|name| !params.contains_key(**name)) {
        return Err(refuse(format!("{field}.required"), format!("names '{missing}', which is no parameter")));
    }
    Ok(params)
}

/// The names of the placeholders in `text`: `{{name}}`, spaces allowed
/// inside the braces.
fn placeholders(text: &str) -> impl Iterator<Item = (std::ops::Range<usize>, &str)> {
    let mut rest = 0;
    std::iter::from_fn(move || loop {
        let start = rest + text[rest..].find("{{")?;
        let end = start + text[start..].find("}}")? + 2;
        rest = end;
        let name = text[start + 2..end - 2].trim();
        if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Some((start..end, name));
        }
    })
}

/// `value` as the text a placeholder inside a longer string becomes.
fn as_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// `content` with every placeholder filled from `values`.
fn fill(content: &Value, values: &BTreeMap<String, Value>) -> Value {
    match content {
        Value::String(text) => {
            let found: Vec<_> = placeholders(text).collect();
            if let [(range, name)] = found.as_slice() {
                if *range == (0..text.len()) {
                    if let Some(value) = values.get(*name) {
                        return value.clone();
                    }
                }
            }
            let mut out = String::with_capacity(text.len());
            let mut at = 0;
            for (range, name) in found {
                out.push_str(&text[at..range.start]);
                match values.get(name) {
                    Some(value) => out.push_str(&as_text(value)),
                    None => out.push_str(&text[range.clone()]),
                }
                at = range.end;
            }
            out.push_str(&text[at..]);
            Value::String(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|item| fill(item, values)).collect()),
        Value::Object(fields) => Value::Object(fields.iter().map(|(k, v)| (k.clone(), fill(v, values))).collect()),
        other => other.clone(),
    }
}

/// Every placeholder name in `content`.
fn names_in(content: &Value, out: &mut Vec<String>) {
    match content {
        Value::String(text) => out.extend(placeholders(text).map(|(_, name)| name.to_string())),
        Value::Array(items) => items.iter().for_each(|item| names_in(item, out)),
        Value::Object(fields) => fields.values().for_each(|value| names_in(value, out)),
        _ => {}
    }
}

/// The job `template` makes with `payload`'s parameters: each given one
/// must be a parameter of the template and of its type; a missing one takes
/// its default, and a required one without a default is refused.
pub fn render(template: &Template, payload: &Value) -> Result<Value, TemplateError> {
    let params = params_of(&template.spec.json_schema)?;
    let given = match payload {
        Value::Null => Map::new(),
        Value::Object(given) => given.clone(),
        _ => return Err(refuse("payload", "must be an object of parameter values")),
    };
    let mut values = BTreeMap::new();
    for (name, value) in given {
        let Some(param) = params.get(&name) else {
            let known: Vec<&str> = params.keys().map(String::as_str).collect();
            let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
            return Err(refuse(
                format!("payload.{name}"),
                format!("this template has no such parameter (it has {known})"),
            ));
        };
        if !param.kind.accepts(&value) {
            return Err(refuse(format!("payload.{name}"), format!("must be {}", param.kind.name())));
        }
        values.insert(name, value);
    }
    for (name, param) in &params {
        if values.contains_key(name) {
            continue;
        }
        match &param.default {
            Some(default) => {
                values.insert(name.clone(), default.clone());
            }
            None if param.required => return Err(refuse(format!("payload.{name}"), "is required")),
            None => {
                values.insert(name.clone(), Value::String(String::new()));
            }
        }
    }
    // A value placed many times could make a job far larger than the
    // template and the request together: the size is known before filling.
    let mut used = Vec::new();
    names_in(&template.spec.content, &mut used);
    let added: usize = used.iter().filter_map(|name| values.get(name)).map(|value| as_text(value).len()).sum();
    let size = template.spec.content.to_string().len().saturating_add(added);
    if size > RENDERED_BYTES_MAX {
        return Err(refuse(
            "payload",
            format!("makes a job of {size} bytes; at most {RENDERED_BYTES_MAX} are allowed"),
        ));
    }
    let mut job = fill(&template.spec.content, &values);
    // A job always has metadata, if only an empty one (Lepton's clients
    // read the answer as a `LeptonJob`).
    if let Some(fields) = job.as_object_mut() {
        fields.entry("metadata").or_insert_with(|| json!({}));
    }
    Ok(job)
}

/// What is wrong with a template a user saves, if anything: its name, its
/// schema, a placeholder that names no parameter, its size, and whether it
/// renders into something shaped like a job.
pub fn check_saved(template: &Template) -> Result<(), TemplateError> {
    let name = template.metadata.name.as_deref().unwrap_or_default();
    if name.is_empty() || name.len() > 64 || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_. ".contains(c)) {
        return Err(refuse("metadata.name", "1 to 64 letters, digits, spaces, '-', '_' or '.'"));
    }
    let size = template.spec.content.to_string().len() + template.spec.json_schema.to_string().len();
    if size > TEMPLATE_BYTES_MAX {
        return Err(refuse("spec", format!("takes {size} bytes; at most {TEMPLATE_BYTES_MAX} are allowed")));
    }
    if !template.spec.content.is_object() || template.spec.content.get("spec").is_none() {
        return Err(refuse("spec.content", "must be a job: {\"metadata\": {…}, \"spec\": {…}}"));
    }
    if template.spec.workload_type.as_deref().is_some_and(|kind| kind != "job") {
        return Err(refuse("spec.workload_type", "must be \"job\": Jobdeck runs jobs only"));
    }
    let params = params_of(&template.spec.json_schema)?;
    let mut used = Vec::new();
    names_in(&template.spec.content, &mut used);
    if let Some(unknown) = used.iter().find(|name| !params.contains_key(*name)) {
        return Err(refuse("spec.content", format!("{{{{{unknown}}}}} names no parameter of spec.json_schema")));
    }
    let samples: Map<String, Value> = params
        .iter()
        .map(|(name, param)| (name.clone(), param.default.clone().unwrap_or_else(|| param.kind.sample())))
        .collect();
    let job = render(template, &Value::Object(samples))?;
    match jobdeck_api::from_json::<jobdeck_api::LeptonJob>(job.to_string().as_bytes()) {
        Ok(_) => Ok(()),
        Err(jobdeck_api::JsonError::Fields(fields)) => {
            let (path, messages) = fields.into_iter().next().unwrap_or_default();
            Err(refuse(format!("spec.content.{path}"), messages.join("; ")))
        }
        Err(jobdeck_api::JsonError::Syntax(message)) => Err(refuse("spec.content", message)),
    }
}

/// Lepton's template status of a usable template.
fn ready() -> Option<TemplateStatus> {
    Some(TemplateStatus { state: Some("Ready".into()) })
}

/// The shell lines every distributed template starts with: Lepton's names
/// for where a worker stands, from what every Jobdeck replica is given
/// (docs/api.md, "Environment").
const DISTRIBUTED_SETUP: &str = r#"set -e
export NNODES="${LEPTON_JOB_TOTAL_WORKERS:-1}"
export NODE_RANK="${LEPTON_JOB_WORKER_INDEX:-0}"
export MASTER_ADDR="${MASTER_ADDR:-127.0.0.1}"
export MASTER_PORT="${MASTER_PORT:-29500}"
export NGPUS="${LEPTON_RESOURCE_ACCELERATOR_NUM:-0}"
if [ "$NGPUS" -lt 1 ]; then export NPROC_PER_NODE=1; else export NPROC_PER_NODE="$NGPUS"; fi
"#;

fn builtin(id: &str, name: &str, description: &str, script: String, run: (&str, &str), workers: bool) -> Template {
    let (run_default, run_help) = run;
    let mut spec = json!({"container": {"command": ["/bin/bash", "-c", script]}});
    if workers {
        spec["completions"] = json!("{{workers}}");
        spec["parallelism"] = json!("{{workers}}");
        spec["intra_job_communication"] = json!(true);
    }
    let mut properties = json!({
        "run": {"type": "string", "title": "Command", "description": run_help, "default": run_default},
    });
    if workers {
        properties["workers"] =
            json!({"type": "integer", "title": "Workers", "description": "replicas, one per node", "default": 1});
    }
    Template {
        metadata: Metadata {
            id: Some(id.into()),
            name: Some(name.into()),
            annotations: Some([("description".to_string(), description.to_string())].into()),
            ..Metadata::default()
        },
        spec: TemplateSpec {
            content: json!({"metadata": {}, "spec": spec}),
            json_schema: json!({"type": "object", "properties": properties, "required": ["run"]}),
            workload_type: Some("job".into()),
        },
        status: ready(),
    }
}

/// The templates every workspace has, as Lepton names them.
pub fn builtins() -> Vec<Template> {
    vec![
        builtin(
            "torchrun",
            "Torchrun",
            "PyTorch distributed training: NNODES, NODE_RANK, NPROC_PER_NODE, MASTER_ADDR and MASTER_PORT are \
             set for torchrun on every worker, then the command runs.",
            format!("{DISTRIBUTED_SETUP}{{{{run}}}}\n"),
            (
                "torchrun --nnodes=$NNODES --node_rank=$NODE_RANK --nproc_per_node=$NPROC_PER_NODE \
                 --master_addr=$MASTER_ADDR --master_port=$MASTER_PORT train.py",
                "runs on every worker after the variables are set",
            ),
            true,
        ),
        builtin(
            "mpi",
            "MPI",
            "MPI: NNODES, NODE_RANK, NGPUS, MASTER_ADDR and HOSTFILE (one line per worker with its slots) are \
             set; the command runs on the primary worker (rank 0), and the other workers wait for it to end.",
            format!(
                "{DISTRIBUTED_SETUP}export HOSTFILE=\"${{TMPDIR:-/tmp}}/hostfile\"\n\
                 : > \"$HOSTFILE\"\n\
                 for _ in $(seq 1 \"$NNODES\"); do echo \"$MASTER_ADDR slots=$NPROC_PER_NODE\" >> \"$HOSTFILE\"; done\n\
                 if [ \"$NODE_RANK\" = 0 ]; then\n{{{{run}}}}\nfi\n"
            ),
            (
                "mpirun --allow-run-as-root --hostfile $HOSTFILE -np $((NNODES * NPROC_PER_NODE)) ./program",
                "runs on the primary worker after the variables and the host file are set",
            ),
            true,
        ),
        builtin(
            "script",
            "Single-GPU script",
            "One replica that runs a command (with one GPU when its shape has one).",
            "{{run}}\n".to_string(),
            ("python train.py", "the command to run"),
            false,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(content: Value, schema: Value) -> Template {
        Template {
            metadata: Metadata { name: Some("mine".into()), ..Metadata::default() },
            spec: TemplateSpec { content, json_schema: schema, workload_type: None },
            status: None,
        }
    }

    #[test]
    fn placeholders_are_filled_as_text_or_with_their_type_when_alone() {
        let t = template(
            json!({"spec": {"container": {"command": ["sh", "-c", "echo {{ who }} x{{n}}"]}, "completions": "{{n}}"}}),
            json!({"type": "object", "properties": {"who": {"type": "string"}, "n": {"type": "integer", "default": 2}}, "required": ["who"]}),
        );
        let job = render(&t, &json!({"who": "ann {{n}}"})).unwrap();
        assert_eq!(job["spec"]["container"]["command"][2], "echo ann {{n}} x2", "a value is not filled again");
        assert_eq!(job["spec"]["completions"], 2);
        check_saved(&t).unwrap();
    }

    #[test]
    fn a_render_request_names_the_parameter_that_is_wrong() {
        let t = template(
            json!({"spec": {"container": {"command": ["{{run}}"]}}}),
            json!({"properties": {"run": {"type": "string"}}, "required": ["run"]}),
        );
        for (payload, field, says) in [
            (json!({}), "payload.run", "is required"),
            (json!({"run": 3}), "payload.run", "must be a string"),
            (json!({"rum": "x"}), "payload.rum", "has no such parameter (it has run)"),
            (json!([1]), "payload", "must be an object"),
        ] {
            let error = render(&t, &payload).unwrap_err();
            assert_eq!(error.field, field, "{payload}");
            assert!(error.message.contains(says), "{payload}: {error}");
        }
    }

    #[test]
    fn a_value_placed_many_times_cannot_make_a_huge_job() {
        let command: Vec<Value> = (0..5000).map(|_| json!("{{x}}")).collect();
        let t = template(
            json!({"spec": {"container": {"command": command}}}),
            json!({"properties": {"x": {"type": "string"}}}),
        );
        let error = render(&t, &json!({"x": "y".repeat(1000)})).unwrap_err();
        assert_eq!(error.field, "payload");
        assert!(error.message.contains("at most 1048576"), "{error}");
        assert!(render(&t, &json!({"x": "y"})).is_ok());
    }

    #[test]
    fn a_saved_template_must_be_a_job_with_known_placeholders_and_a_usable_schema() {
        let schema = json!({"properties": {"run": {"type": "string"}}});
        for (t, field) in [
            (template(json!({"spec": {"container": {"command": ["{{other}}"]}}}), schema.clone()), "spec.content"),
            (template(json!([1]), schema.clone()), "spec.content"),
            (template(json!({"spec": {"completions": "{{run}}"}}), schema.clone()), "spec.content.spec.completions"),
            (
                template(json!({"spec": {}}), json!({"properties": {"run": {"type": "list"}}})),
                "spec.json_schema.properties.run.type",
            ),
            (
                template(json!({"spec": {}}), json!({"properties": {"n": {"type": "integer", "default": "x"}}})),
                "spec.json_schema.properties.n.default",
            ),
            (template(json!({"spec": {}}), json!({"required": ["run"]})), "spec.json_schema.required"),
        ] {
            assert_eq!(check_saved(&t).unwrap_err().field, field, "{:?}", t.spec);
        }
        let mut unnamed = template(json!({"spec": {}}), json!({}));
        unnamed.metadata.name = Some("../x".into());
        assert_eq!(check_saved(&unnamed).unwrap_err().field, "metadata.name");
    }

    #[test]
    fn the_builtins_render_with_their_defaults_and_are_valid_templates() {
        for template in builtins() {
            check_saved(&template).unwrap_or_else(|e| panic!("{:?}: {e}", template.metadata.id));
            let job = render(&template, &json!({"run": "python train.py"})).unwrap();
            let script = job["spec"]["container"]["command"][2].as_str().unwrap();
            assert!(script.contains("python train.py"), "{script}");
            assert!(!script.contains("{{"), "{script}");
        }
        let torchrun = builtins().into_iter().find(|t| t.metadata.id.as_deref() == Some("torchrun")).unwrap();
        let job = render(&torchrun, &json!({"run": "true", "workers": 4})).unwrap();
        assert_eq!((job["spec"]["completions"].clone(), job["spec"]["parallelism"].clone()), (json!(4), json!(4)));
    }
}
