//! Privileged containers and the container's user (`spec.user_security_context.
//! privileged`, `spec.container.user`): a privileged job runs only on node
//! groups whose `privileged_roles` list its creator's role, on an executor
//! that runs containers, and a group an admin closes again runs none of the
//! privileged jobs it holds. The server here is in container mode with an
//! engine that does not exist, so nothing runs: what is tested is what it
//! accepts, publishes and refuses.

use crate::common;

use axum::http::Method;
use common::{sh_job, small_cluster, TestApp};
use jobdeck_api::Role;
use jobdeck_core::config::{LocalMode, NodeGroupConfig};
use serde_json::{json, Value};

/// `small_cluster`'s group `local` (closed) and a group `trusted` open to
/// admins, in container mode.
fn with_trusted_group(roles: Vec<Role>) -> impl FnOnce(&mut jobdeck_core::Config) {
    move |config: &mut jobdeck_core::Config| {
        small_cluster(4.0)(config);
        let mut trusted: NodeGroupConfig = config.node_groups[0].clone();
        trusted.name = "trusted".into();
        trusted.node_names = Some(vec!["node-t".into()]);
        trusted.privileged_roles = roles;
        config.node_groups.push(trusted);
        config.executor.local.mode = LocalMode::Container;
        config.executor.local.engine = "/nonexistent/podman".into();
    }
}

fn privileged_job(name: &str, groups: &[&str]) -> Value {
    let mut job = sh_job(name, "id");
    job["spec"]["user_security_context"] = json!({"privileged": true});
    if !groups.is_empty() {
        job["spec"]["affinity"] = json!({"allowed_dedicated_node_groups": groups});
    }
    job
}

#[tokio::test]
async fn privileged_containers_run_only_where_the_config_opens_them_to_the_callers_role() {
    let app = TestApp::with_config(with_trusted_group(vec![Role::Admin])).await;
    let member = app.token_for("bob").await;

    // What the console reads: the groups open to the caller, none to bob.
    let workspace = app.call(Method::GET, "/api/v2/workspace", &app.admin_token, None).await.json();
    assert_eq!(workspace["job_requirements"]["privileged_node_groups"], json!(["trusted"]));
    let workspace = app.call(Method::GET, "/api/v2/workspace", &member, None).await.json();
    assert_eq!(workspace["job_requirements"].get("privileged_node_groups"), None);

    let refused = app.post_json("/api/v2/jobs", &member, &privileged_job("bobs", &["trusted"])).await;
    assert_eq!(refused.status, 422, "{}", refused.text());
    assert_eq!(
        refused.json()["fields"]["spec.user_security_context.privileged"][0],
        "Jobdeck does not run privileged containers for you here: no node group allows them for your role"
    );
    // An admin must keep the job on the open group: the scheduler could
    // otherwise place it on `local`.
    let anywhere = app.post_json("/api/v2/jobs", &app.admin_token, &privileged_job("anywhere", &[])).await;
    assert_eq!(anywhere.status, 422, "{}", anywhere.text());
    assert!(
        anywhere.json()["fields"]["spec.user_security_context.privileged"][0]
            .as_str()
            .unwrap()
            .contains("choose 'trusted' in spec.affinity.allowed_dedicated_node_groups"),
        "{}",
        anywhere.text()
    );
    let accepted = app.post_json("/api/v2/jobs", &app.admin_token, &privileged_job("admins", &["trusted"])).await;
    assert_eq!(accepted.status, 200, "{}", accepted.text());
    assert_eq!(accepted.json()["spec"]["user_security_context"]["privileged"], true);
}

#[tokio::test]
async fn a_group_closed_again_runs_none_of_the_privileged_jobs_it_holds() {
    // Stored while `trusted` was open; the server starts with it closed.
    let mut spec = privileged_job("held", &["trusted"])["spec"].clone();
    spec["container"]["user"] = json!("0:0");
    let held = common::stored_queued_job("held", spec, 0);
    let app = TestApp::with_stored_jobs(with_trusted_group(Vec::new()), vec![held]).await;
    let job = app.wait_state("held-aaaaa", "Failed").await;
    let message = job["status"]["message"].as_str().unwrap();
    assert!(
        message.contains("node group(s) 'trusted' allow no privileged containers (privileged_roles in the config)"),
        "{message}"
    );
    assert!(app.replicas("held-aaaaa").await.is_empty(), "no replica was started");
}

#[tokio::test]
async fn a_containers_user_is_taken_as_it_is_and_refused_where_nothing_runs_in_a_container() {
    let containers = TestApp::with_config(with_trusted_group(Vec::new())).await;
    let mut job = sh_job("as-1000", "id");
    job["spec"]["container"]["user"] = json!("1000:1000");
    let created = containers.post_json("/api/v2/jobs", &containers.admin_token, &job).await;
    assert_eq!(created.status, 200, "{}", created.text());
    assert_eq!(created.json()["spec"]["container"]["user"], "1000:1000");
    for (user, message) in [
        ("-u 0", "a name starts with a letter or _, such as ubuntu"),
        ("1000:", "must be a user name or id, optionally with a group: ubuntu, 1000 or 1000:1000"),
        ("root\n--privileged", "a name holds only letters, digits, _, - and ."),
    ] {
        job["spec"]["container"]["user"] = json!(user);
        let refused = containers.post_json("/api/v2/jobs", &containers.admin_token, &job).await;
        assert_eq!(refused.status, 422, "{user:?}: {}", refused.text());
        assert_eq!(refused.json()["fields"]["spec.container.user"][0], message, "{user:?}");
    }

    let processes = TestApp::with_config(small_cluster(4.0)).await;
    job["spec"]["container"]["user"] = json!("1000");
    let refused = processes.post_json("/api/v2/jobs", &processes.admin_token, &job).await;
    assert_eq!(refused.status, 422, "{}", refused.text());
    assert!(refused.json()["fields"]["spec.container.user"][0].as_str().unwrap().contains("as plain processes"));
}
