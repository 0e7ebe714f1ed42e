//! What the create-job form reads of the four answers it loads its context
//! from: `GET /shapes`, `/dedicated-node-groups`, `/usersecrets` and
//! `/workspace`. It reads what its choices show and what the contract's
//! rules look at (`validate_job_in`: a shape's id, CPU, memory and GPUs; a
//! group's id, nodes and capacity; the secrets' names; what the workspace
//! requires of a job), and nothing else.
//!
//! These are read field by field out of the value the browser parsed, not
//! with the contract's `Decode`: its readers of the eleven types involved
//! were 14 KB of the form's code (5 KB brotli), these helpers about half of
//! that (docs/measurements.md, "The create-job form's context read by
//! hand"). A field that is missing or of another type reads as absent, as
//! `#[serde(default)]` has it; an answer that is not a list, or a workspace
//! without its user, is unreadable. The tests read what the server's own
//! types write, so a field renamed in the contract fails them.

use jobdeck_api::{JobRequirements, NodeGroupChoice, NodeInfo, ResourceAmounts, ShapeChoice, Visibility};
use wasm_bindgen::{JsCast, JsValue};

/// A secret an environment variable may reference, without its value.
#[derive(Debug, Clone, PartialEq)]
pub struct SecretChoice {
    pub name: String,
    pub owner: String,
    pub visibility: Option<Visibility>,
}

/// Who the caller is (`GET /workspace`), and what the workspace asks of a
/// job.
#[derive(Debug, Clone, PartialEq)]
pub struct Workspace {
    pub current_user: String,
    pub current_user_role: jobdeck_api::Role,
    pub log_collection_default: bool,
    pub job_requirements: JobRequirements,
}

/// Property `key` of `value`; undefined when it has none or is no object.
pub(super) fn field(value: &JsValue, key: &str) -> JsValue {
    js_sys::Reflect::get(value, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

pub(super) fn text(value: &JsValue, key: &str) -> Option<String> {
    field(value, key).as_string()
}

fn number(value: &JsValue, key: &str) -> Option<f64> {
    field(value, key).as_f64()
}

/// A whole number, as the contract's integers are (well within 2^53).
fn whole(value: &JsValue, key: &str) -> Option<i64> {
    number(value, key).map(|n| n as i64)
}

fn flag(value: &JsValue, key: &str) -> bool {
    field(value, key).as_bool().unwrap_or(false)
}

/// The items of a list; `None` when the value is not one.
pub(super) fn items(value: &JsValue) -> Option<Vec<JsValue>> {
    value.dyn_ref::<js_sys::Array>().map(|list| list.iter().collect())
}

fn amounts(value: &JsValue) -> ResourceAmounts {
    ResourceAmounts {
        cpu: number(value, "cpu").unwrap_or(0.0),
        memory_in_mb: whole(value, "memory_in_mb").unwrap_or(0),
        gpu: whole(value, "gpu").unwrap_or(0),
    }
}

/// `GET /shapes`: each shape's id, description, CPU, memory, disk and
/// GPUs (how many, which, their memory and compute capability).
pub fn shapes(answer: &JsValue) -> Option<Vec<ShapeChoice>> {
    let read = |value: &JsValue| {
        let spec = field(value, "spec");
        ShapeChoice {
            id: text(&field(value, "metadata"), "id"),
            description: text(&spec, "description"),
            cpu: number(&spec, "cpu"),
            memory_in_mb: whole(&spec, "memory_in_mb"),
            accelerator_num: number(&spec, "accelerator_num"),
            accelerator_type: text(&spec, "accelerator_type"),
            accelerator_memory_in_mb: whole(&spec, "accelerator_memory_in_mb"),
            accelerator_compute_capability: text(&spec, "accelerator_compute_capability"),
            ephemeral_storage_in_gb: whole(&spec, "ephemeral_storage_in_gb"),
        }
    };
    Some(items(answer)?.iter().map(read).collect())
}

/// `GET /dedicated-node-groups`: each group's id, nodes, capacity and
/// queued jobs.
pub fn node_groups(answer: &JsValue) -> Option<Vec<NodeGroupChoice>> {
    let node =
        |value: &JsValue| Some(NodeInfo { name: text(value, "name")?, capacity: amounts(&field(value, "capacity")) });
    let read = |value: &JsValue| {
        let spec = field(value, "spec");
        NodeGroupChoice {
            id: text(&field(value, "metadata"), "id"),
            nodes: items(&field(&spec, "nodes")).unwrap_or_default().iter().filter_map(node).collect(),
            capacity: amounts(&field(&spec, "capacity")),
            queued_jobs: whole(&field(value, "status"), "queued_jobs").unwrap_or(0),
        }
    };
    Some(items(answer)?.iter().map(read).collect())
}

/// `GET /usersecrets`: the caller's own secrets and public ones, by name,
/// owner and visibility (values are never returned).
pub fn secrets(answer: &JsValue) -> Option<Vec<SecretChoice>> {
    let read = |value: &JsValue| {
        let visibility = match text(value, "visibility").as_deref() {
            Some("public") => Some(Visibility::Public),
            Some("private") => Some(Visibility::Private),
            _ => None,
        };
        Some(SecretChoice { name: text(value, "name")?, owner: text(value, "owner").unwrap_or_default(), visibility })
    };
    Some(items(answer)?.iter().filter_map(read).collect())
}

/// `GET /workspace`: the caller, the log collection default and the job
/// requirements.
pub fn workspace(answer: &JsValue) -> Option<Workspace> {
    let needs = field(answer, "job_requirements");
    let names = |key: &str| items(&field(&needs, key)).map(|list| list.iter().filter_map(JsValue::as_string).collect());
    let job_requirements = JobRequirements {
        command_required: flag(&needs, "command_required"),
        image_required: flag(&needs, "image_required"),
        image_ignored: flag(&needs, "image_ignored"),
        volumes: names("volumes"),
        job_name_max_length: whole(&needs, "job_name_max_length").map(|n| n.max(0) as usize),
        refused_env_names: names("refused_env_names").unwrap_or_default(),
        multi_line_env_refused: flag(&needs, "multi_line_env_refused"),
        privileged_node_groups: names("privileged_node_groups").unwrap_or_default(),
    };
    Some(Workspace {
        current_user: text(answer, "current_user")?,
        current_user_role: text(answer, "current_user_role")
            .and_then(|role| jobdeck_api::Role::parse(&role))
            .unwrap_or_default(),
        log_collection_default: flag(answer, "log_collection_default"),
        job_requirements,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use jobdeck_api::{NodeGroup, NodeGroupSpec, NodeGroupStatus, Secret, Shape, ShapeSpec, WorkspaceInfo};
    use wasm_bindgen_test::wasm_bindgen_test;

    /// `value` as the server writes it, parsed as the browser parses it.
    fn answer<T: serde::Serialize>(value: &T) -> JsValue {
        js_sys::JSON::parse(&serde_json::to_string(value).unwrap()).unwrap()
    }

    #[wasm_bindgen_test]
    fn shapes_and_node_groups_are_read_as_the_server_writes_them() {
        let mut shape = Shape::default();
        shape.metadata.id = Some("gpu.big".into());
        shape.metadata.name = Some("GPU, big".into());
        shape.spec = ShapeSpec {
            description: Some("8 GPUs".into()),
            cpu: Some(32.0),
            memory_in_mb: Some(131072),
            accelerator_num: Some(8.0),
            accelerator_type: Some("H100".into()),
            accelerator_memory_in_mb: Some(81_559),
            accelerator_compute_capability: Some("9.0".into()),
            ephemeral_storage_in_gb: Some(500),
            default_shared_memory_in_mb: Some(1024),
            ..Default::default()
        };
        let read = shapes(&answer(&vec![shape.clone()])).unwrap();
        let kept = ShapeChoice {
            id: Some("gpu.big".into()),
            description: Some("8 GPUs".into()),
            cpu: Some(32.0),
            memory_in_mb: Some(131072),
            accelerator_num: Some(8.0),
            accelerator_type: Some("H100".into()),
            accelerator_memory_in_mb: Some(81_559),
            accelerator_compute_capability: Some("9.0".into()),
            ephemeral_storage_in_gb: Some(500),
        };
        assert_eq!(read, vec![kept.clone()], "what the form shows and checks, nothing else");
        assert_eq!(ShapeChoice::from(&shape), kept, "as the server reads its own shapes");

        let mut group = NodeGroup::default();
        group.metadata.id = Some("local".into());
        group.metadata.created_by = Some("admin".into());
        let capacity = ResourceAmounts { cpu: 64.0, memory_in_mb: 1 << 20, gpu: 8 };
        let nodes = vec![NodeInfo { name: "box".into(), capacity }];
        group.spec = NodeGroupSpec { nodes, capacity, desired_nodes: Some(1), ..Default::default() };
        group.status = NodeGroupStatus { queued_jobs: 3, ready_nodes: Some(1), ..Default::default() };
        let read = node_groups(&answer(&vec![group.clone()])).unwrap();
        let kept =
            NodeGroupChoice { id: Some("local".into()), nodes: group.spec.nodes.clone(), capacity, queued_jobs: 3 };
        assert_eq!(read, vec![kept.clone()]);
        assert_eq!(NodeGroupChoice::from(&group), kept, "as the server reads its own groups");
    }

    #[wasm_bindgen_test]
    fn secrets_and_the_workspace_are_read_as_the_server_writes_them() {
        let secret = |name: &str, owner: &str, visibility| Secret {
            name: name.into(),
            owner: Some(owner.into()),
            visibility,
            ..Default::default()
        };
        let listed =
            vec![secret("hf", "ann", Some(Visibility::Public)), secret("db", "bob", Some(Visibility::Private))];
        assert_eq!(
            secrets(&answer(&listed)).unwrap(),
            vec![
                SecretChoice { name: "hf".into(), owner: "ann".into(), visibility: Some(Visibility::Public) },
                SecretChoice { name: "db".into(), owner: "bob".into(), visibility: Some(Visibility::Private) },
            ]
        );

        let job_requirements = JobRequirements {
            command_required: true,
            image_required: false,
            image_ignored: true,
            volumes: Some(vec!["node-local".into(), "node-nfs:data".into()]),
            job_name_max_length: Some(20),
            refused_env_names: vec!["PATH".into(), "SLURM_*".into()],
            multi_line_env_refused: true,
            privileged_node_groups: vec!["trusted".into()],
        };
        let info = WorkspaceInfo {
            current_user: "ann".into(),
            current_user_role: jobdeck_api::Role::Viewer,
            log_collection_default: true,
            job_requirements: job_requirements.clone(),
            ..Default::default()
        };
        let read = workspace(&answer(&info)).unwrap();
        let expected = Workspace {
            current_user: "ann".into(),
            current_user_role: jobdeck_api::Role::Viewer,
            log_collection_default: true,
            job_requirements,
        };
        assert_eq!(read, expected);
        let plain = WorkspaceInfo { current_user: "bob".into(), ..Default::default() };
        let read = workspace(&answer(&plain)).unwrap();
        assert_eq!((read.log_collection_default, read.job_requirements), (false, JobRequirements::default()));
    }

    #[wasm_bindgen_test]
    fn an_answer_of_another_shape_is_unreadable_and_odd_fields_read_as_absent() {
        let parse = |json: &str| js_sys::JSON::parse(json).unwrap();
        assert_eq!(shapes(&parse(r#"{"shapes": []}"#)), None);
        assert_eq!(node_groups(&parse("null")), None);
        assert_eq!(secrets(&parse(r#""hf""#)), None);
        assert_eq!(workspace(&parse(r#"{"log_collection_default": true}"#)), None, "no user");
        let odd = shapes(&parse(r#"[{"metadata": "x", "spec": {"cpu": "4", "memory_in_mb": 2048}}, 7]"#)).unwrap();
        assert_eq!((odd[0].id.as_deref(), odd[0].cpu, odd[0].memory_in_mb), (None, None, Some(2048)));
        assert_eq!(odd[1], ShapeChoice::default());
        let unnamed = secrets(&parse(r#"[{"owner": "ann"}, {"name": "hf", "visibility": "team"}]"#)).unwrap();
        assert_eq!(unnamed, vec![SecretChoice { name: "hf".into(), owner: String::new(), visibility: None }]);
    }
}
