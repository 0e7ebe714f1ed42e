//! What programs built on Lepton's API rely on beyond the `lep` CLI (issue
//! 14): the gateway form of every path, jobs addressed by name, the
//! workspace's job-name limit, image pull secrets, Lepton's log query, shapes
//! per node group and node-group volumes with their storage permissions.
//! `tests/tao_sdk.rs` (the e2e suite) drives the same through the real TAO
//! SDK; these pin down each rule with the edge cases a program meets.

use crate::common;

use axum::http::{Method, StatusCode};
use common::{sh_job, small_cluster, TestApp};
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_form_answers_as_the_direct_path_for_this_workspace_only() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    // Created stopped, so nothing changes between the two reads compared.
    let mut job = sh_job("gated", "echo hi");
    job["spec"]["stopped"] = json!(true);
    let id = app.create_job(&app.admin_token, &job).await;
    for path in ["/jobs", &format!("/jobs/{id}"), "/shapes", "/workspace", "/dedicated-node-groups"] {
        let direct = app.get(&format!("/api/v2{path}")).await;
        let gateway = app.get(&format!("/api/v2/workspaces/jobdeck{path}")).await;
        assert_eq!(direct.status, StatusCode::OK, "{path}");
        assert_eq!(gateway.status, StatusCode::OK, "{path}");
        if path != "/workspace" {
            assert_eq!(gateway.json(), direct.json(), "{path}");
        }
    }
    // The query string travels along; a write works too.
    let listed = app.get("/api/v2/workspaces/jobdeck/jobs?q=gated").await.json();
    assert_eq!(listed["total"], 1);
    let created =
        app.post_json("/api/v2/workspaces/jobdeck/jobs", &app.admin_token, &sh_job("via-gateway", "true")).await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text());
    // Another workspace is not here, whoever asks and whatever the route.
    for path in ["/api/v2/workspaces/other/jobs", "/api/v2/workspaces/jobdeck2/shapes", "/api/v2/workspaces/other"] {
        let res = app.get(path).await;
        assert_eq!(res.status, StatusCode::NOT_FOUND, "{path}");
        assert!(res.json()["message"].as_str().unwrap().contains("no workspace"), "{path}: {}", res.text());
    }
    // The gateway form still needs a token.
    let anonymous = app.request(Method::GET, "/api/v2/workspaces/jobdeck/jobs", None, None).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_is_found_by_its_name_when_the_name_is_unique_to_the_caller() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let alice = app.token_for("alice").await;
    let bob = app.token_for("bob").await;
    let mut private = sh_job("shared-name", "echo alice");
    private["metadata"]["visibility"] = json!("private");
    let first = app.create_job(&alice, &private).await;
    app.wait_state_as(&alice, &first, "Completed").await;

    // Alice's one job of that name: every job route takes the name.
    let by_name = app.call(Method::GET, "/api/v2/jobs/shared-name", &alice, None).await;
    assert_eq!(by_name.status, StatusCode::OK, "{}", by_name.text());
    assert_eq!(by_name.json()["metadata"]["id"], first.as_str());
    assert_eq!(by_name.json()["status"]["job_name"], first.as_str(), "status.job_name is the id, as on Lepton");
    for route in ["replicas", "events", "failure-analysis"] {
        let res = app.call(Method::GET, &format!("/api/v2/jobs/shared-name/{route}"), &alice, None).await;
        assert_eq!(res.status, StatusCode::OK, "{route}: {}", res.text());
    }
    let log = app.call(Method::GET, &format!("/api/v2/jobs/shared-name/replicas/{first}-0-0/log"), &alice, None).await;
    assert_eq!(log.text(), "alice\n");
    // Bob cannot see Alice's private job by its name either.
    let hidden = app.call(Method::GET, "/api/v2/jobs/shared-name", &bob, None).await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND);

    // A second job of that name makes the name ambiguous: 409 naming both.
    let second = app.create_job(&alice, &sh_job("shared-name", "echo again")).await;
    let ambiguous = app.call(Method::GET, "/api/v2/jobs/shared-name", &alice, None).await;
    assert_eq!(ambiguous.status, StatusCode::CONFLICT, "{}", ambiguous.text());
    let message = ambiguous.json()["message"].as_str().unwrap().to_string();
    assert!(message.contains(&first) && message.contains(&second), "{message}");
    let delete = app.call(Method::DELETE, "/api/v2/jobs/shared-name", &alice, None).await;
    assert_eq!(delete.status, StatusCode::CONFLICT, "nothing is deleted on a guess");
    // Bob sees only the public one: for him the name is unique.
    let public = app.call(Method::GET, "/api/v2/jobs/shared-name", &bob, None).await;
    assert_eq!(public.json()["metadata"]["id"], second.as_str());
    // Deleting by the id still works, and then the name is unique again.
    assert_eq!(app.call(Method::DELETE, &format!("/api/v2/jobs/{second}"), &alice, None).await.status, StatusCode::OK);
    app.wait_until("the second job to be gone", || {
        let (app, alice, second) = (&app, &alice, &second);
        async move {
            app.call(Method::GET, &format!("/api/v2/jobs/{second}"), alice, None).await.status == StatusCode::NOT_FOUND
        }
    })
    .await;
    let deleted = app.call(Method::DELETE, "/api/v2/jobs/shared-name", &alice, None).await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text());
    assert_eq!(deleted.json()["metadata"]["id"], first.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_names_may_be_as_long_as_leptons_unless_the_workspace_says_less() {
    let name36 = "tao-job-0c1f3a9e-5d2b-4e7a-9c1d-2f3e";
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let workspace = app.get("/api/v2/workspace").await.json();
    assert_eq!(workspace["job_requirements"]["job_name_max_length"], 36);
    let id = app.create_job(&app.admin_token, &sh_job(name36, "true")).await;
    assert!(id.starts_with(name36));

    let strict = TestApp::with_config(|config| {
        small_cluster(2.0)(config);
        config.job_name_max_length = 20;
    })
    .await;
    let workspace = strict.get("/api/v2/workspace").await.json();
    assert_eq!(workspace["job_requirements"]["job_name_max_length"], 20, "the console reads the limit here");
    let refused = strict.post_json("/api/v2/jobs", &strict.admin_token, &sh_job(name36, "true")).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(refused.json()["fields"]["metadata.name"][0], "must be at most 20 characters (it has 36)");
}

#[test]
fn the_job_name_limit_setting_is_checked_when_the_config_is_read() {
    let machine = jobdeck_core::config::MachineInfo::detect();
    let dir = std::path::Path::new("/tmp");
    for (value, ok) in [("20", true), ("36", true), ("0", false), ("37", false)] {
        let result = jobdeck_core::Config::from_toml(&format!("job_name_max_length = {value}"), dir, &machine);
        assert_eq!(result.is_ok(), ok, "{value}: {result:?}");
        if let Err(error) = result {
            let message = error.to_string();
            assert!(message.starts_with("job_name_max_length must be between 1 and 36"), "{message}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_pull_secrets_are_write_only_private_by_default_and_checked_on_jobs() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let alice = app.token_for("alice").await;
    let bob = app.token_for("bob").await;
    let secret = |name: &str, visibility: Option<&str>| {
        let mut body = json!({
            "metadata": {"name": name, "id": name},
            "spec": {"registry_server": "https://nvcr.io", "username": "$oauthtoken", "password": "s3cret-key"}
        });
        if let Some(v) = visibility {
            body["metadata"]["visibility"] = json!(v);
        }
        body
    };
    let created = app.call(Method::POST, "/api/v2/imagepullsecrets", &alice, Some(&secret("ngc", None))).await;
    assert_eq!(created.status, StatusCode::CREATED, "Lepton answers 201: {}", created.text());
    assert!(!created.text().contains("s3cret-key"));
    assert_eq!(created.json()["metadata"]["visibility"], "private");
    app.call(Method::POST, "/api/v2/imagepullsecrets", &alice, Some(&secret("team-ngc", Some("public")))).await;
    let names = |token: &str| {
        let (app, token) = (&app, token.to_string());
        async move {
            let list = app.call(Method::GET, "/api/v2/imagepullsecrets", &token, None).await;
            assert!(!list.text().contains("s3cret-key"), "{}", list.text());
            list.json()
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["metadata"]["name"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(names(&alice).await, ["ngc", "team-ngc"]);
    assert_eq!(names(&bob).await, ["team-ngc"]);
    let workspace = app.call(Method::GET, "/api/v2/workspace", &bob, None).await.json();
    assert_eq!(workspace["workloads"]["num_image_pull_secrets"], 1);

    // Every rule names its field.
    let mut bad = secret("Bad_Name", None);
    bad["spec"]["password"] = json!("");
    bad["spec"]["registry_server"] = json!("has space");
    let refused = app.call(Method::POST, "/api/v2/imagepullsecrets", &alice, Some(&bad)).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    let fields = refused.json()["fields"].clone();
    for field in ["metadata.name", "spec.password", "spec.registry_server"] {
        assert!(fields[field].is_array(), "{field}: {fields}");
    }

    // A job may name its creator's own and public ones, nothing else.
    let mut job = sh_job("pulls", "true");
    job["spec"]["image_pull_secrets"] = json!(["team-ngc"]);
    app.create_job(&bob, &job).await;
    job["spec"]["image_pull_secrets"] = json!(["ngc"]);
    let refused = app.call(Method::POST, "/api/v2/jobs", &bob, Some(&job)).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(refused.json()["fields"]["spec.image_pull_secrets[0]"][0], "no image pull secret named 'ngc'");
    app.create_job(&alice, &job).await;

    // Only the owner deletes.
    assert_eq!(
        app.call(Method::DELETE, "/api/v2/imagepullsecrets/team-ngc", &bob, None).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        app.call(Method::DELETE, "/api/v2/imagepullsecrets/team-ngc", &alice, None).await.status,
        StatusCode::OK
    );
    assert_eq!(names(&bob).await, Vec::<String>::new());
}

fn values(answer: &Value) -> Vec<(String, String)> {
    answer["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|stream| {
            let replica = stream["stream"]["replica"].as_str().unwrap().to_string();
            stream["values"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |v| (replica.clone(), v[1].as_str().unwrap().to_string()))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_query_answers_lines_of_a_visible_job_by_time_text_and_replica() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let alice = app.token_for("alice").await;
    let bob = app.token_for("bob").await;
    let mut job = sh_job("logged", "for i in 1 2 3 4; do echo \"step $i of $JOB_COMPLETION_INDEX\"; done");
    job["spec"]["completions"] = json!(2);
    job["metadata"]["visibility"] = json!("private");
    let id = app.create_job(&alice, &job).await;
    app.wait_state_as(&alice, &id, "Completed").await;
    let query = |params: String| {
        let (app, alice) = (&app, alice.clone());
        async move { app.call(Method::GET, &format!("/api/v2/logs?{params}"), &alice, None).await }
    };

    // The whole run, newest first; then oldest first.
    let all = query(format!("job={id}")).await;
    assert_eq!(all.status, StatusCode::OK, "{}", all.text());
    assert_eq!(all.json()["status"], "success");
    let newest_first = values(&all.json());
    assert_eq!(newest_first.len(), 8, "{newest_first:?}");
    let zero: Vec<&str> = newest_first.iter().filter(|(r, _)| r.ends_with("-0-0")).map(|(_, l)| l.as_str()).collect();
    assert_eq!(zero, ["step 4 of 0", "step 3 of 0", "step 2 of 0", "step 1 of 0"]);
    let forward = values(&query(format!("job={id}&direction=forward&limit=2")).await.json());
    assert_eq!(forward.len(), 2, "the two oldest lines: {forward:?}");
    // A text, one replica, by name.
    let found = values(&query("job=logged&q=step%203".into()).await.json());
    assert_eq!(found.len(), 2, "{found:?}");
    let one = values(&query(format!("replica={id}-1-0")).await.json());
    assert!(one.len() == 4 && one.iter().all(|(r, _)| r == &format!("{id}-1-0")), "{one:?}");
    // A time range: start inclusive, end exclusive, in nanoseconds.
    let times: Vec<i64> = all.json()["data"]["result"][0]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v[0].as_str().unwrap().parse().unwrap())
        .collect();
    let (newest, oldest) = (times[0], times[times.len() - 1]);
    let before_newest = values(&query(format!("job={id}&replica={id}-0-0&start={oldest}&end={newest}")).await.json());
    assert_eq!(before_newest.len(), 3, "end is exclusive: {before_newest:?}");

    // Bob may not read Alice's private job's lines; bad input names itself.
    let hidden = app.call(Method::GET, &format!("/api/v2/logs?job={id}"), &bob, None).await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND);
    for (params, message) in [
        ("", "job or replica is required"),
        ("job=logged&start=1", "start and end go together"),
        ("job=logged&limit=0", "limit must be between 1 and 10000"),
        ("job=logged&q=a%00b", "q must not contain control characters"),
    ] {
        let res = query(params.to_string()).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{params}");
        assert!(res.json()["message"].as_str().unwrap().starts_with(message), "{params}: {}", res.text());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shapes_are_listable_and_filtered_by_what_fits_a_node_group() {
    let app = TestApp::with_config(|config| {
        small_cluster(2.0)(config);
        let mut gpu_group = config.node_groups[0].clone();
        gpu_group.name = "gpu".into();
        gpu_group.gpus = 2;
        gpu_group.gpu_product = Some("test-gpu".into());
        gpu_group.node_names = Some(vec!["gpu-node".into()]);
        config.node_groups.push(gpu_group);
        let mut gpu_shape = config.shapes[0].clone();
        gpu_shape.name = "gpu.1x".into();
        gpu_shape.gpus = 1;
        gpu_shape.accelerator_type = Some("test-gpu".into());
        config.shapes.push(gpu_shape);
    })
    .await;
    let ids = |list: Value| -> Vec<String> {
        list.as_array().unwrap().iter().map(|s| s["metadata"]["id"].as_str().unwrap().to_string()).collect()
    };
    let all = app.get("/api/v2/shapes").await.json();
    assert_eq!(ids(all.clone()), ["cpu.small", "gpu.1x"]);
    assert_eq!(all[1]["spec"]["listable_in"], json!(["deployment", "job", "pod"]));
    assert_eq!(ids(app.get("/api/v2/shapes?node_groups=local").await.json()), ["cpu.small"]);
    assert_eq!(ids(app.get("/api/v2/shapes?node_groups=gpu").await.json()), ["cpu.small", "gpu.1x"]);
    let unknown = app.get("/api/v2/shapes?node_groups=nope").await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert!(unknown.json()["message"].as_str().unwrap().starts_with("node_groups: no node group named 'nope'"));

    // Replicas report the shape's CPU and memory, as Lepton's do.
    let id = app.create_job(&app.admin_token, &sh_job("sized", "true")).await;
    app.wait_state(&id, "Completed").await;
    let replica = &app.replicas(&id).await[0];
    assert_eq!(
        (replica["status"]["cpu"].as_f64(), replica["status"]["memory_in_mb"].as_i64()),
        (Some(1.0), Some(1024))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_groups_offer_the_executors_volumes_and_every_path_of_them() {
    let volume = tempfile::tempdir().unwrap();
    let app = TestApp::with_config(|config| {
        small_cluster(2.0)(config);
        config.executor.local.mode = jobdeck_core::config::LocalMode::Container;
        config.executor.local.engine = "podman".into();
        config.executor.local.volumes.insert("node-nfs:lustre".into(), volume.path().to_path_buf());
    })
    .await;
    let groups = app.get("/api/v2/dedicated-node-groups").await.json();
    assert_eq!(groups[0]["spec"]["volumes"], json!([{"name": "lustre", "from": "nfs", "size_in_gb": 0}]));
    for volume in ["lustre", "node-nfs:lustre"] {
        let res = app.get(&format!("/api/v2/storage-permission/{volume}?nodegroup_id=local")).await;
        assert_eq!(res.status, StatusCode::OK, "{volume}: {}", res.text());
        assert_eq!(res.json(), json!([{"path_prefix": "/", "allowed_users": ["*"], "nodegroup_id": "local"}]));
    }
    assert_eq!(app.get("/api/v2/storage-permission/other").await.status, StatusCode::NOT_FOUND);
    assert_eq!(app.get("/api/v2/storage-permission/lustre?nodegroup_id=nope").await.status, StatusCode::NOT_FOUND);
    // A job mounts it by either name.
    for from in ["lustre", "node-nfs:lustre"] {
        let mut job = sh_job("mounts", "true");
        job["spec"]["mounts"] = json!([{"from": from, "path": "/", "mount_path": "/mnt/lustre"}]);
        let res = app.post_json("/api/v2/jobs", &app.admin_token, &job).await;
        assert_eq!(res.status, StatusCode::OK, "{from}: {}", res.text());
        app.call(
            Method::DELETE,
            &format!("/api/v2/jobs/{}", res.json()["metadata"]["id"].as_str().unwrap()),
            &app.admin_token,
            None,
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_parameters_with_control_characters_answer_400_not_500() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    for query in ["q=a%00b", "q=%00%00%00", "query=a%00b", "query=team%3D%00"] {
        let res = app.get(&format!("/api/v2/jobs?{query}")).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{query}: {}", res.text());
    }
    // Label keys are values, not JSON path text: quotes and dots match
    // literally and break nothing.
    let mut job = sh_job("labelled", "true");
    job["metadata"]["labels"] = json!({"team.a": "nlp"});
    app.create_job(&app.admin_token, &job).await;
    assert_eq!(app.get("/api/v2/jobs?query=team.a%3Dnlp").await.json()["total"], 1);
    assert_eq!(app.get("/api/v2/jobs?query=team").await.json()["total"], 0);
    assert_eq!(app.get("/api/v2/jobs?query=x%5D%5B").await.status, StatusCode::OK);
    // Kubernetes' selector syntax, each value bound as a value.
    let app = &app;
    let total = |selector: &'static str| async move {
        let query: String = form_urlencoded::byte_serialize(selector.as_bytes()).collect();
        let res = app.get(&format!("/api/v2/jobs?query={query}")).await;
        assert_eq!(res.status, StatusCode::OK, "{selector}: {}", res.text());
        res.json()["total"].as_i64().unwrap()
    };
    assert_eq!(total("team.a in (cv, nlp)").await, 1);
    assert_eq!(total("team.a notin (nlp)").await, 0);
    assert_eq!(total("team.a!=cv, !draft").await, 1);
    assert_eq!(total("team.a in (nlp' OR '1)").await, 0);
    let broken = app.get("/api/v2/jobs?query=team.a%20in%20(nlp").await;
    assert_eq!(broken.status, StatusCode::BAD_REQUEST);
    assert!(broken.text().contains("query: 'team.a in (nlp' leaves a set open"), "{}", broken.text());
}
