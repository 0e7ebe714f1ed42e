//! Resources by requirement (`spec.resources`): the server picks the
//! smallest shape that meets them and fits the job's node groups, writes it
//! into the job and says why in an event; a requirement no shape meets is a
//! 422 naming the field and the nearest shapes; and the console, reading
//! the same `GET /shapes`, chooses the same shape.

use crate::common;

use axum::http::{Method, StatusCode};
use common::TestApp;
use jobdeck_core::config::{NodeGroupConfig, ShapeConfig};
use serde_json::{json, Value};

fn shape(name: &str, gpus: i64, kind: Option<&str>, gpu_memory_mb: Option<i64>, memory_mb: i64) -> ShapeConfig {
    ShapeConfig {
        name: name.into(),
        cpu: 4.0 * gpus.max(1) as f64,
        memory_mb,
        gpus,
        accelerator_type: kind.map(String::from),
        accelerator_memory_mb: gpu_memory_mb,
        compute_capability: None,
        ephemeral_storage_gb: Some(200 * gpus.max(1)),
        description: None,
    }
}

/// A CPU shape and three GPU shapes; a group of two 8-GPU nodes, and a
/// small group where only one GPU fits.
async fn app() -> TestApp {
    TestApp::with_config(|config| {
        let group = |name: &str, gpus: i64, nodes: u32| NodeGroupConfig {
            name: name.into(),
            cpu: 64.0,
            memory_mb: 1_048_576,
            gpus,
            gpu_product: None,
            nodes: Some(nodes),
            node_names: None,
            node_selector: Default::default(),
            privileged_roles: Vec::new(),
        };
        config.node_groups = vec![group("big", 8, 2), group("small", 1, 1)];
        config.shapes = vec![
            shape("cpu.small", 0, None, None, 4_096),
            // nvidia-smi's 40,960 and 81,559 MiB: GPUs labelled 40 and 80 GB.
            shape("gpu.a100-40x1", 1, Some("NVIDIA A100-SXM4-40GB"), Some(40_960), 65_536),
            shape("gpu.a100-80x2", 2, Some("NVIDIA A100-SXM4-80GB"), Some(81_559), 131_072),
            shape("gpu.h100x8", 8, Some("NVIDIA H100 80GB HBM3"), Some(81_559), 1_048_576),
        ];
    })
    .await
}

fn job_with(resources: Value) -> Value {
    let mut job = common::sh_job("by-need", "true");
    job["spec"].as_object_mut().unwrap().remove("resource_shape");
    job["spec"]["resources"] = resources;
    job
}

#[tokio::test]
async fn the_smallest_shape_that_meets_the_requirements_is_chosen_written_and_explained() {
    let app = app().await;
    let cases = [
        (json!({"gpu": {"name": ["A100"]}}), "gpu.a100-40x1"),
        (json!({"gpu": {"name": ["A100"], "memory_in_mb": {"min": 81_920}}}), "gpu.a100-80x2"),
        (json!({"gpu": {"count": {"min": 3}}}), "gpu.h100x8"),
        (json!({"gpu": {"vendor": "nvidia", "compute_capability": "9.0"}}), "gpu.h100x8"),
        (json!({"memory_in_mb": {"min": 8_192}, "disk_in_gb": {"min": 100}}), "gpu.a100-40x1"),
        (json!({"cpu": {"max": 4.5}}), "cpu.small"),
    ];
    for (resources, expected) in cases {
        let res = app.post_json("/api/v2/jobs", &app.admin_token, &job_with(resources.clone())).await;
        assert_eq!(res.status, StatusCode::OK, "{resources}: {}", res.text());
        let job = res.json();
        assert_eq!(job["spec"]["resource_shape"], expected, "{resources}");
        assert_eq!(job["spec"]["resources"], resources, "the requirements are kept as given");
        let id = job["metadata"]["id"].as_str().unwrap().to_string();
        let events = app.events(&id).await;
        let chosen = events.iter().find(|e| e["reason"] == "ShapeChosen").expect("a ShapeChosen event");
        assert!(chosen["message"].as_str().unwrap().starts_with(&format!("shape '{expected}': the ")), "{chosen}");
    }
}

#[tokio::test]
async fn a_shape_that_meets_them_but_does_not_fit_the_allowed_groups_is_passed_over() {
    let app = app().await;
    // Two GPUs per replica do not fit group `small` (one GPU); with `big`
    // allowed they do.
    let mut job = job_with(json!({"gpu": {"count": {"min": 2}}}));
    job["spec"]["affinity"] = json!({"allowed_dedicated_node_groups": ["small"]});
    let res = app.post_json("/api/v2/jobs", &app.admin_token, &job).await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", res.text());
    assert!(
        res.json()["fields"]["spec.resource_shape"][0].as_str().unwrap().contains("group 'small'"),
        "{}",
        res.text()
    );
    job["spec"]["affinity"] = json!({"allowed_dedicated_node_groups": ["big"]});
    let res = app.post_json("/api/v2/jobs", &app.admin_token, &job).await;
    assert_eq!(res.json()["spec"]["resource_shape"], "gpu.a100-80x2", "{}", res.text());
}

#[tokio::test]
async fn a_requirement_no_shape_meets_is_refused_naming_the_field_and_the_nearest_shapes() {
    let app = app().await;
    let count =
        || async { app.call(Method::GET, "/api/v2/jobs", &app.admin_token, None).await.json()["total"].clone() };
    let before = count().await;
    let refused = |resources: Value| {
        let app = &app;
        async move {
            let res = app.post_json("/api/v2/jobs", &app.admin_token, &job_with(resources)).await;
            assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", res.text());
            res.json()["fields"].clone()
        }
    };
    let fields = refused(json!({"gpu": {"name": ["MI300X"]}})).await;
    let message = fields["spec.resources.gpu.name"][0].as_str().unwrap();
    assert!(
        message.starts_with(
            "no shape of this workspace has MI300X; the nearest: 'gpu.h100x8' (has NVIDIA H100 80GB HBM3)"
        ),
        "{message}"
    );
    // Each part is met by some shape, never all together: the requirements
    // as a whole are named.
    let fields = refused(json!({"gpu": {"name": ["A100"], "compute_capability": "9.0"}})).await;
    assert!(
        fields["spec.resources"][0].as_str().unwrap().contains("'gpu.a100-40x1' (has compute capability 8.0)"),
        "{fields}"
    );
    // A named shape that does not meet them.
    let mut job = job_with(json!({"gpu": {"count": {"min": 1}}}));
    job["spec"]["resource_shape"] = json!("cpu.small");
    let res = app.post_json("/api/v2/jobs", &app.admin_token, &job).await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
    let message = res.json()["fields"]["spec.resource_shape"][0].clone();
    assert!(message.as_str().unwrap_or_default().starts_with("shape 'cpu.small' has 0 GPU"), "{}", res.text());
    // The requirements' own rules.
    let fields =
        refused(json!({"gpu": {"count": {"min": 4, "max": 2}, "vendor": "acme", "compute_capability": "high"}})).await;
    assert_eq!(fields["spec.resources.gpu.count.max"][0], "must not be less than min");
    assert_eq!(fields["spec.resources.gpu.vendor"][0], "must be 'nvidia', 'amd', 'intel' or 'google'");
    assert_eq!(fields["spec.resources.gpu.compute_capability"][0], "must be major.minor, such as 8.0");
    let fields = refused(json!({"gpu": {"name": ["A100; rm -rf /"]}, "disk": 1})).await;
    assert!(fields.to_string().contains("disk"), "an unknown field is named: {fields}");
    assert_eq!(count().await, before, "nothing is stored");
}

/// The console reads `GET /shapes` and `GET /dedicated-node-groups` into
/// its validation context and chooses as the server does.
#[tokio::test]
async fn the_console_chooses_the_shape_the_server_chooses() {
    let app = app().await;
    let context = common::console_context(&app).await;
    for resources in [
        json!({"gpu": {"name": ["H100", "A100"], "total_memory_in_mb": {"min": 150_000}}}),
        json!({"gpu": {"vendor": "nvidia", "memory_in_mb": {"min": 40_960, "max": 40_960}}}),
        json!({"cpu": {"min": 5}}),
    ] {
        let job = job_with(resources.clone());
        let spec: jobdeck_api::JobSpec = serde_json::from_value(job["spec"].clone()).unwrap();
        let local = context.shape_for(&spec).and_then(|s| s.id.clone());
        let res = app.post_json("/api/v2/jobs", &app.admin_token, &job).await;
        assert_eq!(res.json()["spec"]["resource_shape"].as_str().map(String::from), local, "{resources}");
    }
}
