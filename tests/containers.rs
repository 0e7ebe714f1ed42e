//! Container mode against the real engine (issue 15): the real `jobdeck
//! serve`, podman with runc, a test image made from busybox-static and a
//! private registry on loopback (tests/support/containers.rs). Every
//! replica that must be seen running waits at a gate file in a mounted
//! volume that the test creates; nothing here waits on a clock.

use std::path::Path;
use std::time::Duration;

use jobdeck_e2e::containers::{self, GatedProxy, Registry};
use jobdeck_e2e::{reason, wait_for, JobState, Server};
use serde_json::{json, Value};

/// The longest a wait in these tests may take.
const LIMIT: Duration = Duration::from_secs(60);

/// A container-mode server: podman, a `scratch` volume at `scratch`, a
/// small shape for the OOM test, and `extra` lines for `[executor.local]`.
fn server(scratch: &Path, extra: &str) -> Server {
    server_on(scratch, containers::ENGINE, extra)
}

/// [`server`] on the engine binary `engine`.
fn server_on(scratch: &Path, engine: &str, extra: &str) -> Server {
    Server::start_api_with_config(&config(scratch, engine, extra))
}

/// The configuration of [`server_on`].
fn config(scratch: &Path, engine: &str, extra: &str) -> String {
    containers::test_image();
    format!(
        "[executor.local]\nmode = \"container\"\nengine = \"{engine}\"\ngrace_period_seconds = 2\n\
         retry_backoff_seconds = 0\nmetrics_interval_ms = 500\nvolumes = {{ scratch = \"{scratch}\" }}\n{extra}\n\n\
         [[node_groups]]\nname = \"local\"\ncpu = 8\nmemory_mb = 16384\n\n\
         [[shapes]]\nname = \"cpu.small\"\ncpu = 1\nmemory_mb = 1024\n\n\
         [[shapes]]\nname = \"mem.tiny\"\ncpu = 1\nmemory_mb = 32\n",
        scratch = scratch.display(),
    )
}

/// A job in the test image running `script` with `/bin/sh -c`, the scratch
/// volume mounted at `/scratch`.
fn job(name: &str, script: &str) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {
            "resource_shape": "cpu.small",
            "backoff_limit": 0,
            "container": {"image": containers::TEST_IMAGE, "command": ["/bin/sh", "-c", script]},
            "mounts": [{"from": "scratch", "path": "/", "mount_path": "/scratch"}]
        }
    })
}

#[test]
fn replicas_run_in_their_image_with_their_environment_resources_and_volume() {
    let scratch = tempfile::tempdir().unwrap();
    let server = server(scratch.path(), "");
    let token = &server.admin_token;
    let (status, _) =
        server.call("POST", "/usersecrets", token, Some(&json!([{"name": "API_KEY", "value": "multi\nline secret"}])));
    assert_eq!(status, 200);
    let data_dir = server.data_dir.display().to_string();
    let script = format!(
        "cat /etc/jobdeck-test-image; echo index=$JOB_COMPLETION_INDEX of $JOB_COMPLETIONS; \
         echo plain=$PLAIN; echo \"secret=$API_KEY\"; \
         cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory.max 2>/dev/null; \
         df -k /dev/shm | tail -1; \
         [ -e '{data_dir}' ] && echo server data visible || echo server data hidden; \
         echo $JOB_COMPLETION_INDEX > /scratch/wrote-$JOB_COMPLETION_INDEX"
    );
    let mut spec = job("in-image", &script);
    spec["spec"]["completions"] = json!(2);
    spec["spec"]["parallelism"] = json!(2);
    spec["spec"]["shared_memory_size"] = json!(64);
    spec["spec"]["envs"] = json!([
        {"name": "PLAIN", "value": "a value with spaces"},
        {"name": "API_KEY", "value_from": {"secret_name_ref": "API_KEY"}}
    ]);
    let id = server.create_job(token, &spec);
    server.wait_for_state(token, &id, JobState::Completed);

    let list = server.replicas(token, &id);
    assert_eq!(list.len(), 2, "each index ran once: {list:?}");
    for replica in &list {
        let index = replica["status"]["completion_index"].as_i64().unwrap();
        let name = replica["id"].as_str().unwrap();
        assert_eq!(replica["status"]["attempt"], 0);
        assert_eq!(replica["status"]["executor_id"], format!("jobdeck-{name}"));
        let text = server.log_text(token, &id, name);
        for expected in [
            "jobdeck test image".to_string(),
            format!("index={index} of 2"),
            "plain=a value with spaces".to_string(),
            "secret=multi".to_string(),
            "line secret".to_string(),
            // The shape's 1024 MiB, enforced by the engine.
            (1024u64 << 20).to_string(),
            "65536".to_string(),
            "server data hidden".to_string(),
        ] {
            assert!(text.contains(&expected), "replica {index} log lacks {expected:?}:\n{text}");
        }
        let wrote = std::fs::read_to_string(scratch.path().join(format!("wrote-{index}"))).unwrap();
        assert_eq!(wrote.trim(), index.to_string());
    }
    assert_eq!(containers::containers_of_job(&id), Vec::<String>::new(), "ended containers are removed");
    // The environment file with the secret's value is gone from the run
    // directory, and no auth file was ever needed.
    for attempt in std::fs::read_dir(server.data_dir.join("runs").join(&id)).unwrap().flatten() {
        for leftover in ["env", "auth.json", "spec.json"] {
            assert!(!attempt.path().join(leftover).exists(), "{leftover} left in {}", attempt.path().display());
        }
    }
}

#[test]
fn an_empty_command_runs_the_images_own() {
    let scratch = tempfile::tempdir().unwrap();
    let server = server(scratch.path(), "");
    let token = &server.admin_token;
    let mut spec = job("default-cmd", "");
    spec["spec"]["container"] = json!({"image": containers::TEST_IMAGE});
    let id = server.create_job(token, &spec);
    server.wait_for_state(token, &id, JobState::Completed);
    let text = server.log_text(token, &id, &format!("{id}-0-0"));
    assert!(text.contains(containers::DEFAULT_COMMAND_OUTPUT), "{text}");
}

/// A job's working directory is where its command starts in the container
/// (a path with a space included); one the image lacks is the job's
/// configuration error, not the engine's (podman 4 does not make it).
#[test]
fn the_command_starts_in_the_jobs_working_directory() {
    let scratch = tempfile::tempdir().unwrap();
    std::fs::create_dir(scratch.path().join("run 1")).unwrap();
    let server = server(scratch.path(), "");
    let token = &server.admin_token;
    let mut spec = job("workdir", "pwd");
    spec["spec"]["container"]["working_dir"] = json!("/scratch/run 1");
    let id = server.create_job(token, &spec);
    server.wait_for_state(token, &id, JobState::Completed);
    let text = server.log_text(token, &id, &format!("{id}-0-0"));
    assert!(text.lines().any(|line| line.trim() == "/scratch/run 1"), "{text}");

    spec["spec"]["container"]["working_dir"] = json!("/not/in/the/image");
    let id = server.create_job(token, &spec);
    server.wait_for_state(token, &id, JobState::Failed);
    let replica = &server.replicas(token, &id)[0]["status"];
    assert_eq!(replica["reason"], "ContainerCannotRun", "{replica}");
    assert_eq!(server.failure_analysis(token, &id)["err_class"], "ERR_CONFIG");
}

/// Who a job runs as, where it starts and its arguments reach the
/// container; the shape comes from its requirements; and its overview says
/// all of it in words (screenshot `job-overview-container-settings.png`).
#[test]
fn a_jobs_user_directory_arguments_and_requirements_reach_the_container_and_its_overview() {
    let scratch = tempfile::tempdir().unwrap();
    let server = Server::start_on("127.0.0.1:0", &config(scratch.path(), containers::ENGINE, ""), &[], true);
    let token = &server.admin_token;
    let mut spec = job("settings", "echo uid=$(id -u):$(id -g) in $(pwd) with $0 $1");
    let container = &mut spec["spec"]["container"];
    container["user"] = json!("1000:1000");
    container["working_dir"] = json!("/tmp");
    container["args"] = json!(["one", "two"]);
    spec["spec"].as_object_mut().unwrap().remove("resource_shape");
    spec["spec"]["resources"] = json!({"memory_in_mb": {"min": 512}});
    let id = server.create_job(token, &spec);
    let done = server.wait_for_state(token, &id, JobState::Completed);
    assert_eq!(done.spec.resource_shape.as_deref(), Some("cpu.small"), "mem.tiny has 32 MiB");
    let text = server.log_text(token, &id, &format!("{id}-0-0"));
    assert!(text.contains("uid=1000:1000 in /tmp with one two"), "{text}");

    let browser = jobdeck_e2e::Browser::start();
    browser.sign_in(&server, token);
    browser.goto(&format!("{}/jobs/{id}", server.base_url));
    browser.wait_for_text("Runs as");
    let facts = browser.execute(
        "return [...document.querySelectorAll('dd')].map(d => d.previousElementSibling.textContent + ': ' + d.textContent);",
        vec![],
    );
    let facts: Vec<String> = serde_json::from_value(facts).unwrap();
    for fact in [
        "Runs as: 1000:1000",
        "Working directory: /tmp",
        "Arguments: one two",
        "Requirements: 0.5 GiB or more memory",
        "Resource shape: cpu.small",
    ] {
        assert!(facts.iter().any(|f| f.contains(fact)), "{fact} in {facts:?}");
    }
    assert!(!facts.iter().any(|f| f.starts_with("Privileged")), "{facts:?}");
    browser.screenshot(&jobdeck_e2e::screenshot_path("job-overview-container-settings"));
}

#[test]
fn a_private_image_is_pulled_with_the_jobs_credentials_and_a_wrong_password_is_an_image_pull_failure() {
    let scratch = tempfile::tempdir().unwrap();
    let registry = Registry::start();
    let image = registry.push(containers::test_image(), "team/private:1");
    let extra = format!(
        "pull_policy = \"always\"\nengine_environment = {{ CONTAINERS_REGISTRIES_CONF = \"{}\" }}",
        registry.registries_conf.display()
    );
    let server = server(scratch.path(), &extra);
    let token = &server.admin_token;
    let private = |name: &str, password: &str| {
        let mut spec = job(name, "cat /etc/jobdeck-test-image");
        spec["spec"]["container"]["image"] = json!(image);
        spec["spec"]["container"]["registry_username"] = json!(registry.username);
        spec["spec"]["container"]["registry_password"] = json!(password);
        spec
    };

    let good = server.create_job(token, &private("right-password", &registry.password));
    server.wait_for_state(token, &good, JobState::Completed);
    let text = server.log_text(token, &good, &format!("{good}-0-0"));
    assert!(text.contains(&format!("pulled image {image}")) && text.contains("jobdeck test image"), "{text}");

    let bad = server.create_job(token, &private("wrong-password", "not-the-password"));
    let failed = server.wait_for_state(token, &bad, JobState::Failed);
    let replica = &server.replicas(token, &bad)[0]["status"];
    assert_eq!(replica["reason"], "ImagePullFailed", "{replica}");
    assert_eq!(replica["readiness_issue"]["reason"], "Failed", "Lepton's readiness for a failed pull: {replica}");
    let found = server.failure_analysis(token, &bad);
    assert_eq!(found["err_class"], "ERR_IMAGE_PULL", "{found} {failed:?}");
    assert!(found["suggestion"].as_str().unwrap().contains("credentials"), "{found}");

    // A stored image pull secret named by the job works as well.
    let secret = json!({
        "metadata": {"name": "team-registry"},
        "spec": {"registry_server": format!("http://{}", registry.address), "username": registry.username,
                 "password": registry.password}
    });
    let (status, answer) = server.call("POST", "/imagepullsecrets", token, Some(&secret));
    assert_eq!(status, 201, "{answer}");
    let mut named = job("named-secret", "cat /etc/jobdeck-test-image");
    named["spec"]["container"]["image"] = json!(image);
    named["spec"]["image_pull_secrets"] = json!(["team-registry"]);
    let named = server.create_job(token, &named);
    server.wait_for_state(token, &named, JobState::Completed);

    // Credentials went to the engine in an auth file of the run directory,
    // gone after the pull, never into the server user's own auth files.
    for id in [&good, &bad, &named] {
        let attempt = server.data_dir.join("runs").join(id.as_str()).join("0-0");
        assert!(attempt.is_dir(), "{}", attempt.display());
        assert!(!attempt.join("auth.json").exists(), "{}", attempt.display());
    }
    let home = std::env::var("HOME").unwrap_or_default();
    for file in [
        format!("{home}/.config/containers/auth.json"),
        format!("{home}/.docker/config.json"),
        "/run/containers/0/auth.json".to_string(),
    ] {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(!text.contains(&registry.address), "{file} holds the registry's credentials");
    }
}

#[test]
fn a_replica_says_it_is_pulling_its_image_until_the_pull_is_done() {
    let scratch = tempfile::tempdir().unwrap();
    let registry = Registry::start();
    registry.push(containers::test_image(), "team/gated:1");
    let proxy = GatedProxy::start(&registry.address);
    registry.allow(&[&proxy.address]);
    let extra =
        format!("engine_environment = {{ CONTAINERS_REGISTRIES_CONF = \"{}\" }}", registry.registries_conf.display());
    let server = server(scratch.path(), &extra);
    let token = &server.admin_token;
    let mut spec = job("gated-pull", "echo pulled and ran");
    let image = format!("{}/team/gated:1", proxy.address);
    spec["spec"]["container"]["image"] = json!(image);
    spec["spec"]["container"]["registry_username"] = json!(registry.username);
    spec["spec"]["container"]["registry_password"] = json!(registry.password);
    let id = server.create_job(token, &spec);

    // The registry cannot answer until the proxy opens: the replica waits,
    // saying why, in Lepton's words.
    let issue = server.wait_for_replicas(token, &id, "the replica to say it is pulling", LIMIT, |list| {
        let issue = list.first()?["status"]["readiness_issue"].clone();
        (issue["message"].as_str()?.starts_with("Pulling image")).then_some(issue)
    });
    assert_eq!(issue["reason"], "InProgress");
    assert_eq!(issue["message"], format!("Pulling image {image}"));
    assert_eq!(server.replicas(token, &id)[0]["status"]["phase"], "pending");
    proxy.open();
    server.wait_for_state(token, &id, JobState::Completed);
    let replica = &server.replicas(token, &id)[0]["status"];
    assert!(replica.get("readiness_issue").is_none(), "{replica}");
}

#[test]
fn an_engine_that_cannot_start_containers_is_an_infrastructure_failure_not_the_programs() {
    let scratch = tempfile::tempdir().unwrap();
    // A real engine with a broken OCI runtime: it creates containers and
    // fails to start every one.
    let broken = scratch.path().join("broken-containers.conf");
    std::fs::write(&broken, "[engine]\nruntime = \"/bin/false\"\n").unwrap();
    let server =
        server(scratch.path(), &format!("engine_environment = {{ CONTAINERS_CONF = \"{}\" }}", broken.display()));
    let token = &server.admin_token;
    let mut spec = job("engine-fails", "echo never");
    // A program error would end the job at its first failure; the engine's
    // failure is retried.
    spec["spec"]["backoff_limit"] = json!(1);
    spec["spec"]["disable_retry_on_program_error"] = json!(true);
    let id = server.create_job(token, &spec);
    let failed = server.wait_for_state(token, &id, JobState::Failed);
    assert_eq!(reason(&failed), "BackoffLimitExceeded", "{failed:?}");
    let list = server.replicas(token, &id);
    assert_eq!(list.len(), 2, "retried once: {list:?}");
    for replica in &list {
        assert_eq!(replica["status"]["reason"], "EngineError", "{replica}");
    }
    let found = server.failure_analysis(token, &id);
    assert_eq!(found["err_class"], "ERR_ENGINE", "{found}");
    assert!(found["suggestion"].as_str().unwrap().contains("engine"), "{found}");
    assert_eq!(containers::containers_of_job(&id), Vec::<String>::new());
}

#[test]
fn a_command_missing_from_the_image_is_a_configuration_error() {
    let scratch = tempfile::tempdir().unwrap();
    let server = server(scratch.path(), "");
    let token = &server.admin_token;
    let mut spec = job("no-such-command", "");
    spec["spec"]["container"]["command"] = json!(["/opt/not-in-the-image", "--train"]);
    let id = server.create_job(token, &spec);
    server.wait_for_state(token, &id, JobState::Failed);
    let replica = &server.replicas(token, &id)[0]["status"];
    assert_eq!(replica["reason"], "ContainerCannotRun", "{replica}");
    assert_eq!(server.failure_analysis(token, &id)["err_class"], "ERR_CONFIG");
}

#[test]
fn a_replica_over_its_memory_is_killed_and_classified_as_out_of_memory() {
    let scratch = tempfile::tempdir().unwrap();
    let server = server(scratch.path(), "");
    let token = &server.admin_token;
    let mut spec = job("memory-hog", "echo filling; x=aaaaaaaa; while true; do x=$x$x; done");
    spec["spec"]["resource_shape"] = json!("mem.tiny");
    let id = server.create_job(token, &spec);
    server.wait_for_state(token, &id, JobState::Failed);
    let replica = &server.replicas(token, &id)[0]["status"];
    assert_eq!(replica["reason"], "OOMKilled", "{replica}");
    let found = server.failure_analysis(token, &id);
    assert_eq!(found["err_class"], "ERR_OOM", "{found}");
    assert!(found["summary"].as_str().unwrap().contains("32 MiB"), "{found}");
}

#[test]
fn stop_removes_the_container_and_delete_removes_its_run_directory() {
    let scratch = tempfile::tempdir().unwrap();
    let server = server(scratch.path(), "");
    let token = &server.admin_token;
    let id = server.create_job(token, &job("stop-me", "echo up; touch /scratch/up; while true; do sleep 1; done"));
    wait_for("the container to run", LIMIT, || scratch.path().join("up").exists().then_some(()));
    server.wait_for_state(token, &id, JobState::Running);
    assert_eq!(containers::containers_of_job(&id), vec![format!("jobdeck-{id}-0-0")]);

    let (status, _) = server.call("PATCH", &format!("/jobs/{id}"), token, Some(&json!({"spec": {"stopped": true}})));
    assert_eq!(status, 200);
    server.wait_for_state(token, &id, JobState::Stopped);
    assert_eq!(server.replicas(token, &id)[0]["status"]["reason"], "Stopped");
    assert_eq!(containers::containers_of_job(&id), Vec::<String>::new(), "stop removes the container");

    let runs = server.data_dir.join("runs").join(&id);
    assert!(runs.is_dir());
    let (status, _) = server.call("DELETE", &format!("/jobs/{id}"), token, None);
    assert_eq!(status, 200);
    wait_for("the run directory to go", LIMIT, || (!runs.exists()).then_some(()));
}

#[test]
fn running_containers_are_adopted_after_a_kill_9_of_the_server() {
    let scratch = tempfile::tempdir().unwrap();
    let mut first = server(scratch.path(), "");
    let token = first.admin_token.clone();
    let script = "echo before; touch /scratch/started; \
                  while [ ! -e /scratch/release ]; do sleep 0.1; done; echo after; echo run >> /scratch/runs";
    let id = first.create_job(&token, &job("adopted", script));
    wait_for("the container to run", LIMIT, || scratch.path().join("started").exists().then_some(()));
    first.wait_for_state(&token, &id, JobState::Running);

    // The server dies; the container and its supervisor do not.
    first.kill();
    let config = first.data_dir.parent().unwrap().join("jobdeck.toml");
    let data_dir = first.data_dir.clone();
    let second = Server::start_api_in(&data_dir, &["--config", config.to_str().unwrap()]);
    std::fs::write(scratch.path().join("release"), "").unwrap();
    second.wait_for_state(&token, &id, JobState::Completed);

    let list = second.replicas(&token, &id);
    assert_eq!(list.len(), 1, "nothing ran twice: {list:?}");
    assert_eq!(std::fs::read_to_string(scratch.path().join("runs")).unwrap(), "run\n");
    let text = second.log_text(&token, &id, &format!("{id}-0-0"));
    let before = text.find("before").expect("the line before the crash");
    let after = text.find("after").expect("the line after the restart");
    assert!(before < after, "{text}");
    assert_eq!(containers::containers_of_job(&id), Vec::<String>::new());
}

#[test]
fn without_a_mode_the_server_uses_a_working_engine_and_otherwise_says_the_image_is_ignored() {
    containers::test_image();
    let auto = Server::start_api_with_config("[executor.local]\nretry_backoff_seconds = 0\n");
    let (_, workspace) = auto.call("GET", "/workspace", &auto.admin_token, None);
    assert_eq!(workspace["executor_mode"], "container", "{workspace}");
    assert!(workspace["container_engine"].as_str().unwrap().ends_with("podman"), "{workspace}");
    assert_eq!(workspace["job_requirements"]["image_required"], true);
    assert!(workspace.get("isolation_warning").is_none(), "containers isolate: no notice: {workspace}");

    let without = Server::start_api_with_config("[executor.local]\nengine = \"/nonexistent/podman\"\n");
    let (_, workspace) = without.call("GET", "/workspace", &without.admin_token, None);
    assert_eq!(workspace["executor_mode"], "process", "{workspace}");
    assert!(workspace.get("container_engine").is_none(), "{workspace}");
    assert_eq!(workspace["job_requirements"]["image_ignored"], true, "{workspace}");
    let warning = workspace["isolation_warning"].as_str().unwrap_or_default();
    assert!(warning.contains("processes of the server's own user"), "process mode is never silent: {workspace}");
}

#[test]
fn a_containers_cpu_and_memory_are_sampled_from_its_cgroup() {
    let scratch = tempfile::tempdir().unwrap();
    let server = server(scratch.path(), "");
    let token = &server.admin_token;
    let script = "x=$(head -c 50000000 /dev/zero | tr '\\0' a); touch /scratch/holding; \
                  while [ ! -e /scratch/release ]; do :; done; echo ${#x}";
    let id = server.create_job(token, &job("sampled", script));
    wait_for("the container to hold its memory", LIMIT, || scratch.path().join("holding").exists().then_some(()));
    let current = wait_for("a busy core and 50 MB in the samples", LIMIT, || {
        let (_, metrics) = server.call("GET", &format!("/jobs/{id}/metrics"), token, None);
        let current = metrics["replicas"][0]["current"].clone();
        (current["cpu"].as_f64()? >= 0.5 && current["memory"].as_f64()? >= 50e6).then_some(current)
    });
    assert!(current["memory"].as_f64().unwrap() < 1024.0 * 1024.0 * 1024.0, "{current}");
    std::fs::write(scratch.path().join("release"), "").unwrap();
    server.wait_for_state(token, &id, JobState::Completed);
    assert!(server.log_text(token, &id, &format!("{id}-0-0")).contains("50000000"));
}

/// A job's own termination grace period holds in a container: the engine
/// passes SIGTERM to the container's first process, and SIGKILL comes when
/// the job's 5 s are over, not at the server's 2 s.
#[test]
fn a_stopped_container_gets_its_jobs_grace_period_between_sigterm_and_sigkill() {
    let scratch = tempfile::tempdir().unwrap();
    let server = server(scratch.path(), "");
    let mut spec = job("graceful", &jobdeck_e2e::grace_probe_script(Path::new("/scratch")));
    spec["spec"]["termination_grace_period_seconds"] = json!(5);
    let (_, gap) = jobdeck_e2e::stop_grace_probe(&server, &spec, scratch.path());
    assert!((4.0..20.0).contains(&gap), "SIGKILL came {gap:.2} s after SIGTERM, not 5 s");
}

/// An engine, `dir/name`, that is the real podman but for `start
/// --attach`: it starts the container detached, then runs `attach` (a
/// shell command; `$3` is the container).
fn podman_with_attach(dir: &Path, name: &str, attach: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let engine = dir.join(name);
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = start ] && [ \"$2\" = --attach ]; then\n  \
         /usr/bin/podman start \"$3\" > /dev/null || exit $?\n  {attach}\nfi\nexec /usr/bin/podman \"$@\"\n"
    );
    std::fs::write(&engine, script).unwrap();
    std::fs::set_permissions(&engine, std::fs::Permissions::from_mode(0o755)).unwrap();
    engine.display().to_string()
}

/// The stop's SIGTERM goes to the container through the engine (`kill
/// --signal TERM`), not to the engine's attach: an attach that has not yet
/// set up its signal proxy dies of the signal, and the container ran on to
/// SIGKILL without its grace period (CI, under load, once). Here the
/// attach never passes a signal on (`--sig-proxy=false`): a stop that
/// relied on it got the container the engine's own 10 s (`rm -f` after the
/// attach died; 9.93 s measured), not the job's 5.
#[test]
fn a_stop_reaches_the_container_when_the_engines_attach_passes_no_signal_on() {
    let scratch = tempfile::tempdir().unwrap();
    let attach = "exec /usr/bin/podman attach --no-stdin --sig-proxy=false \"$3\"";
    let engine = podman_with_attach(scratch.path(), "podman-attach-without-signals", attach);
    let server = server_on(scratch.path(), &engine, "");
    let mut spec = job("graceful", &jobdeck_e2e::grace_probe_script(Path::new("/scratch")));
    spec["spec"]["termination_grace_period_seconds"] = json!(5);
    let (_, gap) = jobdeck_e2e::stop_grace_probe(&server, &spec, scratch.path());
    assert!((4.0..9.0).contains(&gap), "SIGKILL came {gap:.2} s after SIGTERM, not 5 s");
}

/// Podman before 5.2 can leave `start --attach` running after its container
/// ended (containers/podman#23258), which once kept a finished replica
/// "running" for good. Here the engine is the real podman with an attach
/// that never returns: it starts the container detached and blocks. The
/// replica still ends, with the container's own exit code, and its log
/// says what happened.
#[test]
fn a_replica_ends_with_its_container_when_the_engines_attach_hangs() {
    let scratch = tempfile::tempdir().unwrap();
    let engine = podman_with_attach(scratch.path(), "podman-with-a-hanging-attach", "exec /usr/bin/sleep 2147483647");
    let server = server_on(scratch.path(), &engine, "");
    let token = &server.admin_token;
    let id = server.create_job(token, &job("attach-hangs", "exit 3"));
    server.wait_for_state(token, &id, JobState::Failed);
    let replica = &server.replicas(token, &id)[0]["status"];
    assert_eq!(replica["exit_code"], 3, "the container's own exit code: {replica}");
    let text = server.log_text(token, &id, &format!("{id}-0-0"));
    assert!(text.contains("the engine's attach did not"), "{text}");
    assert_eq!(containers::containers_of_job(&id), Vec::<String>::new(), "the container is removed");
}

/// An NVCF task's `containerArgs` reach the image's own entrypoint, as on
/// NVCF: converted (`POST /jobs/convert?from=nvcf`) into
/// `spec.container.args`, created as converted, run in a container whose
/// image has an entrypoint. Words are split as a shell would split them and
/// never run by one.
#[test]
fn an_nvcf_tasks_arguments_reach_the_images_entrypoint() {
    containers::test_image();
    let image = "localhost/jobdeck-test/echo-entrypoint:1";
    let builder = "jobdeck-test-entrypoint-builder";
    let _ = std::process::Command::new(containers::ENGINE).args(["rm", "-f", builder]).output();
    containers::engine(&["create", "--name", builder, containers::TEST_IMAGE]);
    containers::engine(&["commit", "--change", r#"ENTRYPOINT ["/bin/echo", "entrypoint got"]"#, builder, image]);
    containers::engine(&["rm", builder]);

    let scratch = tempfile::tempdir().unwrap();
    let server = server(scratch.path(), "");
    let token = &server.admin_token;
    let task = json!({
        "name": "nvcf-args",
        "containerImage": image,
        "containerArgs": "--epochs 10 'two words' $HOME;true"
    });
    let (status, converted) = server.call("POST", "/jobs/convert?from=nvcf", token, Some(&task));
    assert_eq!(status, 200, "{converted}");
    let mut job = converted["job"].clone();
    assert_eq!(job["spec"]["container"]["args"], json!(["--epochs", "10", "two words", "$HOME;true"]), "{converted}");
    job["spec"]["resource_shape"] = json!("cpu.small");
    let id = server.create_job(token, &job);
    server.wait_for_state(token, &id, JobState::Completed);
    let text = server.log_text(token, &id, &format!("{id}-0-0"));
    assert!(text.contains("entrypoint got --epochs 10 two words $HOME;true"), "{text}");
}
