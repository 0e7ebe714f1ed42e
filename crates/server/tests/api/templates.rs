//! Templates through the API, as Lepton's clients use them: the built-in
//! public ones listed and rendered, a user's private ones saved, kept to
//! their owner, rendered and run; a value is only ever text in the job it
//! fills; bad templates and bad parameters are refused naming the field.

use crate::common;

use axum::http::{Method, StatusCode};
use common::{small_cluster, TestApp};
use jobdeck_api::Role;
use serde_json::{json, Value};

fn ids(list: &Value) -> Vec<&str> {
    list.as_array().unwrap().iter().map(|t| t["metadata"]["id"].as_str().unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_builtin_templates_render_into_jobs_that_run() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let viewer = app.token_with_role("vera", Role::Viewer).await;
    let listed = app.call(Method::GET, "/api/v2/templates/public", &viewer, None).await;
    assert_eq!(listed.status, StatusCode::OK);
    assert_eq!(ids(&listed.json()), ["torchrun", "mpi", "script"]);
    let torchrun = app.get("/api/v2/templates/public/torchrun").await.json();
    assert_eq!(torchrun["spec"]["json_schema"]["required"], json!(["run"]));
    assert_eq!(app.get("/api/v2/templates/public/nope").await.status, StatusCode::NOT_FOUND);

    // `lep job create -t torchrun --run "…"` sends only the command, keeps
    // the rendered spec, drops its envs and adds its own options.
    let run = json!({"run": "echo rank=$NODE_RANK of $NNODES nproc=$NPROC_PER_NODE at $MASTER_ADDR:$MASTER_PORT"});
    let rendered = app.call(Method::POST, "/api/v2/templates/public/torchrun/render", &viewer, Some(&run)).await;
    assert_eq!(rendered.status, StatusCode::OK, "{}", rendered.text());
    let mut job = rendered.json();
    assert_eq!(job["spec"]["completions"], 1, "a typed parameter keeps its type");
    job["metadata"] = json!({"name": "from-torchrun"});
    job["spec"]["resource_shape"] = json!("cpu.small");
    job["spec"]["completions"] = json!(2);
    job["spec"]["parallelism"] = json!(2);
    let id = app.create_job(&app.admin_token, &job).await;
    app.wait_state(&id, "Completed").await;
    let rank1 = app.log(&id, &format!("{id}-1-0")).await;
    assert!(rank1.starts_with("rank=1 of 2 nproc=1 at 127.0.0.1:"), "{rank1}");

    for (payload, field) in [
        (json!({"rum": "x"}), "payload.rum"),
        (json!({"run": 1}), "payload.run"),
        (json!({"run": "x", "workers": "2"}), "payload.workers"),
    ] {
        let refused = app.call(Method::POST, "/api/v2/templates/public/torchrun/render", &viewer, Some(&payload)).await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{payload}");
        assert!(refused.json()["fields"][field].is_array(), "{payload}: {}", refused.text());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_template_is_its_owners_and_its_values_stay_text() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let bob = app.token_with_role("bob", Role::Member).await;
    let ann = app.token_with_role("ann", Role::Member).await;
    let viewer = app.token_with_role("vera", Role::Viewer).await;
    let template = json!({
        "metadata": {"name": "Echo Twice"},
        "spec": {
            "content": {"metadata": {"name": "echo"}, "spec": {
                "resource_shape": "cpu.small",
                "container": {"command": ["/bin/sh", "-c", "echo {{word}}; echo {{word}}"]},
                "completions": "{{copies}}",
                "envs": [{"name": "{{word}}", "value": "{{word}}"}]
            }},
            "json_schema": {"type": "object", "properties": {
                "word": {"type": "string"},
                "copies": {"type": "integer", "default": 1}
            }, "required": ["word"]}
        }
    });
    let saved = app.call(Method::POST, "/api/v2/templates/private", &bob, Some(&template)).await;
    assert_eq!(saved.status, StatusCode::OK, "{}", saved.text());
    assert_eq!(saved.json()["metadata"]["id"], "echo-twice");
    assert_eq!(saved.json()["metadata"]["owner"], "bob");
    let again = app.call(Method::POST, "/api/v2/templates/private", &bob, Some(&template)).await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.text());
    let refused = app.call(Method::POST, "/api/v2/templates/private", &viewer, Some(&template)).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "a viewer keeps no templates");

    // Private means the owner's: another member neither lists nor renders it.
    let bobs = app.call(Method::GET, "/api/v2/templates/private", &bob, None).await.json();
    assert_eq!(ids(&bobs), ["echo-twice"]);
    assert_eq!(app.call(Method::GET, "/api/v2/templates/private", &ann, None).await.json(), json!([]));
    let word = json!({"word": "x"});
    let hidden = app.call(Method::POST, "/api/v2/templates/private/echo-twice/render", &ann, Some(&word)).await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND);

    // A value that looks like JSON or like a placeholder is only text.
    let hostile = "hi\"}, \"privileged\": true, \"x\": {\"a\": \"{{copies}}";
    let rendered = app
        .call(Method::POST, "/api/v2/templates/private/echo-twice/render", &bob, Some(&json!({"word": hostile})))
        .await;
    assert_eq!(rendered.status, StatusCode::OK, "{}", rendered.text());
    let job = rendered.json();
    assert_eq!(job["spec"]["container"]["command"][2], format!("echo {hostile}; echo {hostile}"));
    assert!(job["spec"].get("privileged").is_none() && job["spec"].get("x").is_none());
    assert_eq!(job["spec"]["completions"], 1);
    assert_eq!(
        job["spec"]["envs"][0]["name"], hostile,
        "a value fills any string it is placed in; POST /jobs then judges it"
    );

    let job = app
        .call(Method::POST, "/api/v2/templates/private/echo-twice/render", &bob, Some(&json!({"word": "twice"})))
        .await
        .json();
    let id = app
        .create_job(
            &bob,
            &json!({"metadata": job["metadata"], "spec": {
        "resource_shape": job["spec"]["resource_shape"], "container": job["spec"]["container"],
        "completions": job["spec"]["completions"]}}),
        )
        .await;
    app.wait_state(&id, "Completed").await;
    assert_eq!(app.log(&id, &format!("{id}-0-0")).await, "twice\ntwice\n");

    // Bad templates are refused naming the field; nothing is stored.
    let mut unknown = template.clone();
    unknown["metadata"]["name"] = json!("other");
    unknown["spec"]["content"]["spec"]["container"]["command"][2] = json!("echo {{nothing}}");
    let refused = app.call(Method::POST, "/api/v2/templates/private", &bob, Some(&unknown)).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.json()["fields"]["spec.content"][0].as_str().unwrap().contains("{{nothing}} names no parameter"));
    let mut bad_id = template.clone();
    bad_id["metadata"]["id"] = json!("../x");
    let refused = app.call(Method::POST, "/api/v2/templates/private", &bob, Some(&bad_id)).await;
    assert!(refused.json()["fields"]["metadata.id"].is_array(), "{}", refused.text());
    let mut builtin_name = template.clone();
    builtin_name["metadata"]["name"] = json!("Torchrun");
    let refused = app.call(Method::POST, "/api/v2/templates/private", &bob, Some(&builtin_name)).await;
    assert!(refused.json()["fields"]["metadata.name"][0].as_str().unwrap().contains("built-in"), "{}", refused.text());
    assert_eq!(ids(&app.call(Method::GET, "/api/v2/templates/private", &bob, None).await.json()), ["echo-twice"]);

    // Deleting: only the owner's own, then it is gone; both are audited.
    let ann_delete = app.call(Method::DELETE, "/api/v2/templates/private/echo-twice", &ann, None).await;
    assert_eq!(ann_delete.status, StatusCode::NOT_FOUND);
    let deleted = app.call(Method::DELETE, "/api/v2/templates/private/echo-twice", &bob, None).await;
    assert_eq!(deleted.status, StatusCode::OK);
    let gone = app.call(Method::GET, "/api/v2/templates/private/echo-twice", &bob, None).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    let audit = app.get("/api/v2/audit?actor=bob&action=template.").await.json();
    let actions: Vec<&str> = audit["items"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert!(actions.contains(&"template.create") && actions.contains(&"template.delete"), "{actions:?}");
}
