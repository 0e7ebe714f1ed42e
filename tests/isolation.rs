//! A hostile teammate's job, tried against the real server as an attacker
//! would (issue 32, docs/security.md): each test makes a real attempt that
//! would succeed if its defence broke. Container mode runs on the real
//! podman with runc and the busybox test image (tests/support/containers.rs);
//! the Slurm variants are in tests/slurm.rs. Nothing here waits on a clock:
//! every wait is for a job's state.

use std::path::Path;
use std::process::Command;

use std::time::Duration;

use jobdeck_e2e::containers::{self, GatedProxy, Registry};
use jobdeck_e2e::{wait_for, JobState, Server};
use serde_json::{json, Value};

/// A container-mode server on podman with one volume, `scratch`.
fn server(scratch: &Path) -> Server {
    server_with(scratch, "")
}

/// [`server`] with `extra` lines for `[executor.local]`.
fn server_with(scratch: &Path, extra: &str) -> Server {
    containers::test_image();
    let config = format!(
        "[executor.local]\nmode = \"container\"\nengine = \"{engine}\"\ngrace_period_seconds = 2\n\
         retry_backoff_seconds = 0\npids_limit = 300\nvolumes = {{ scratch = \"{scratch}\" }}\n{extra}\n\n\
         [[node_groups]]\nname = \"local\"\ncpu = 8\nmemory_mb = 16384\n\n\
         [[shapes]]\nname = \"cpu.small\"\ncpu = 1\nmemory_mb = 1024\n",
        engine = containers::ENGINE,
        scratch = scratch.display(),
    );
    Server::start_api_with_config(&config)
}

fn job(name: &str, script: &str) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {
            "resource_shape": "cpu.small",
            "backoff_limit": 0,
            "container": {"image": containers::TEST_IMAGE, "command": ["/bin/sh", "-c", script]}
        }
    })
}

/// The jobs the server lists, by name.
fn job_names(server: &Server) -> Vec<String> {
    let (status, list) = server.call("GET", "/jobs", &server.admin_token, None);
    assert_eq!(status, 200, "{list}");
    list["jobs"].as_array().unwrap().iter().filter_map(|j| j["metadata"]["name"].as_str().map(String::from)).collect()
}

/// An image reference that an engine would read as an option (here, a
/// volume of the host's root) is a 422 naming the field, and nothing is
/// stored; a job that was there before is still there.
#[test]
fn an_image_reference_an_engine_would_read_as_an_option_is_refused() {
    let scratch = tempfile::tempdir().unwrap();
    let server = server(scratch.path());
    let token = &server.admin_token;
    let id = server.create_job(token, &job("before", "true"));
    server.wait_for_state(token, &id, JobState::Completed);
    for image in ["--volume=/:/host:rw", "-v", "team/--privileged", "busybox:latest --privileged"] {
        let mut spec = job("attack", "id");
        spec["spec"]["container"]["image"] = json!(image);
        let (status, body) = server.call("POST", "/jobs", token, Some(&spec));
        assert_eq!(status, 422, "{image}: {body}");
        let text = body.to_string();
        assert!(text.contains("spec.container.image"), "{image}: the answer names the field: {text}");
    }
    assert_eq!(job_names(&server), ["before"], "nothing new was stored and nothing was lost");
}

/// A variable whose value holds a line break used to reach the engine's own
/// process (`-e NAME` with the value in its environment), where the loader
/// acts on `LD_PRELOAD`. Here that value names a shared object planted on
/// the host whose constructor leaves a marker: it must reach the container
/// intact, byte for byte, and never load on the host.
#[test]
fn a_multi_line_value_reaches_the_container_and_no_host_process() {
    let scratch = tempfile::tempdir().unwrap();
    let planted = tempfile::tempdir().unwrap();
    let marker = planted.path().join("loaded-on-the-host");
    let source = planted.path().join("planted.c");
    std::fs::write(
        &source,
        format!(
            "#include <fcntl.h>\n#include <unistd.h>\n\
             __attribute__((constructor)) static void planted(void) {{\n\
               int fd = open(\"{}\", O_CREAT | O_WRONLY, 0644);\n  if (fd >= 0) close(fd);\n}}\n",
            marker.display()
        ),
    )
    .unwrap();
    // The loader splits LD_PRELOAD at spaces and colons, not line breaks:
    // the object's file name ends with one, so the multi-line value names it.
    let object = planted.path().join("planted.so\n");
    let built = Command::new("cc").args(["-shared", "-fPIC", "-o"]).arg(&object).arg(&source).output().unwrap();
    assert!(built.status.success(), "cc: {}", String::from_utf8_lossy(&built.stderr));
    // The object works: a host process given it leaves the marker.
    let probe = Command::new("/bin/true").env("LD_PRELOAD", &object).status().unwrap();
    assert!(probe.success() && marker.exists(), "the planted object loads on the host when given");
    std::fs::remove_file(&marker).unwrap();

    let server = server(scratch.path());
    let token = &server.admin_token;
    let value = object.to_str().unwrap().to_string();
    let mut spec = job("preload", "printf '[%s]' \"$LD_PRELOAD\"; printf '(%s)' \"$PEM\"");
    spec["spec"]["envs"] = json!([
        {"name": "LD_PRELOAD", "value": value},
        {"name": "PEM", "value": "-----BEGIN KEY-----\r\nabc\n-----END KEY-----"}
    ]);
    let id = server.create_job(token, &spec);
    server.wait_for_state(token, &id, JobState::Completed);
    let text = server.log_text(token, &id, &format!("{id}-0-0"));
    assert!(text.contains(&format!("[{value}]")), "the container got the value intact:\n{text}");
    assert!(text.contains("(-----BEGIN KEY-----"), "{text}");
    assert!(text.contains("-----END KEY-----)"), "{text}");
    assert!(!marker.exists(), "the job's LD_PRELOAD loaded in a process on the host");
    let secrets = containers::engine(&["secret", "ls", "--format", "{{.Name}}"]);
    assert!(!secrets.contains(&id), "the secrets that carried the values are removed with the container: {secrets}");
}

/// A job's root holds no capability beyond the documented set, cannot gain
/// one through a set-user-id program, cannot make device nodes and cannot
/// fork without limit.
#[test]
fn a_container_runs_with_least_privilege() {
    let scratch = tempfile::tempdir().unwrap();
    let server = server(scratch.path());
    let token = &server.admin_token;
    let script = "grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status; \
                  mknod /tmp/disk b 8 0 && echo mknod worked || echo mknod refused; \
                  cat /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids/pids.max 2>/dev/null; true";
    let id = server.create_job(token, &job("privileges", script));
    server.wait_for_state(token, &id, JobState::Completed);
    let text = server.log_text(token, &id, &format!("{id}-0-0"));
    // CHOWN 0, DAC_OVERRIDE 1, FOWNER 3, FSETID 4, KILL 5, SETGID 6,
    // SETUID 7, NET_BIND_SERVICE 10.
    let expected: u64 = [0, 1, 3, 4, 5, 6, 7, 10].iter().map(|bit| 1u64 << bit).sum();
    for line in [format!("CapEff:\t{expected:016x}"), format!("CapBnd:\t{expected:016x}"), "NoNewPrivs:\t1".into()] {
        assert!(text.contains(&line), "missing {line:?} in:\n{text}");
    }
    assert!(text.contains("mknod refused"), "{text}");
    assert!(text.lines().any(|l| l.trim() == "300"), "the configured pids limit:\n{text}");
}

/// A job that mounts `path` of the scratch volume at `/mnt` and runs
/// `script`.
fn mounting(name: &str, path: &str, script: &str) -> Value {
    let mut spec = job(name, script);
    spec["spec"]["mounts"] = json!([{"from": "scratch", "path": path, "mount_path": "/mnt"}]);
    spec
}

/// One job plants a link to the host's root in a shared volume; a second
/// job that mounts that path must not get the host's root. It fails as a
/// configuration error naming the link, and nothing it tried to write
/// reaches the host.
#[test]
fn a_link_planted_in_a_volume_never_leads_a_mount_out_of_it() {
    let scratch = tempfile::tempdir().unwrap();
    let server = server(scratch.path());
    let token = &server.admin_token;
    let mut plant = job("plant", "ln -s / /scratch/escape; mkdir -p /scratch/ok/inner; ln -s /etc /scratch/ok/etc");
    plant["spec"]["mounts"] = json!([{"from": "scratch", "path": "/", "mount_path": "/scratch"}]);
    let planted = server.create_job(token, &plant);
    server.wait_for_state(token, &planted, JobState::Completed);
    assert!(scratch.path().join("escape").is_symlink(), "the link is planted");

    let host_marker = format!("/tmp/jobdeck-escaped-{}", std::process::id());
    for path in ["/escape", "/escape/tmp", "/ok/etc"] {
        let id = server.create_job(token, &mounting("follow", path, &format!("touch /mnt{host_marker}; ls /mnt")));
        server.wait_for_state(token, &id, JobState::Failed);
        let found = server.failure_analysis(token, &id);
        assert_eq!(found["err_class"], "ERR_CONFIG", "{path}: {found}");
        assert!(found["summary"].as_str().unwrap().contains("is a symbolic link"), "{path}: {found}");
        let replica = &server.replicas(token, &id)[0]["status"];
        let text = replica.to_string();
        assert!(text.contains("is a symbolic link"), "{path}: the replica names the link: {text}");
    }
    assert!(!Path::new(&host_marker).exists(), "a job wrote to the host's /tmp through a planted link");

    let id = server.create_job(token, &mounting("inside", "/ok/inner", "touch /mnt/written; echo mounted"));
    server.wait_for_state(token, &id, JobState::Completed);
    assert!(scratch.path().join("ok/inner/written").exists(), "a plain directory of the volume mounts as before");
}

/// The check and the mount cannot be raced: the directory is bound when it
/// is checked, before the image is pulled. While the pull is held, the test
/// swaps the checked directory for a link to the host's root, as a running
/// job on the same volume could; the container still gets the directory
/// that was checked.
#[test]
fn a_link_swapped_in_after_the_check_changes_nothing() {
    let scratch = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(scratch.path().join("data")).unwrap();
    std::fs::write(scratch.path().join("data/original"), "the checked directory\n").unwrap();
    let registry = Registry::start();
    registry.push(containers::test_image(), "team/gated:1");
    let proxy = GatedProxy::start(&registry.address);
    registry.allow(&[&proxy.address]);
    let extra =
        format!("engine_environment = {{ CONTAINERS_REGISTRIES_CONF = \"{}\" }}", registry.registries_conf.display());
    let server = server_with(scratch.path(), &extra);
    let token = &server.admin_token;
    let mut spec =
        mounting("swapped", "/data", "cat /mnt/original; [ -e /mnt/etc/hostname ] && echo host root || true");
    spec["spec"]["container"]["image"] = json!(format!("{}/team/gated:1", proxy.address));
    spec["spec"]["container"]["registry_username"] = json!(registry.username);
    spec["spec"]["container"]["registry_password"] = json!(registry.password);
    let id = server.create_job(token, &spec);
    server.wait_for_replicas(token, &id, "the replica to pull its image", Duration::from_secs(60), |list| {
        list.first()?["status"]["readiness_issue"]["message"].as_str()?.starts_with("Pulling image").then_some(())
    });
    std::fs::rename(scratch.path().join("data"), scratch.path().join("moved")).unwrap();
    std::os::unix::fs::symlink("/", scratch.path().join("data")).unwrap();
    proxy.open();
    server.wait_for_state(token, &id, JobState::Completed);
    let text = server.log_text(token, &id, &format!("{id}-0-0"));
    assert!(text.contains("the checked directory"), "{text}");
    assert!(!text.contains("host root"), "the swapped-in link was followed:\n{text}");
    let binds = std::fs::read_dir(server.data_dir.join("mounts")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(binds, 0, "the bind is undone with the container");
}

/// A multi-worker job's workers share a pod of their own: they reach each
/// other on 127.0.0.1:MASTER_PORT, as `torchrun` expects, but not the
/// host's loopback, where the server listens (they shared the host's network
/// before). The pod goes with the job's last container.
#[test]
fn a_multi_worker_job_has_a_network_of_its_own() {
    let scratch = tempfile::tempdir().unwrap();
    let server = server(scratch.path());
    let token = &server.admin_token;
    let server_port = server.base_url.rsplit(':').next().unwrap().trim_end_matches('/').to_string();
    // Rank 0 waits for one connection on its loopback; rank 1 retries
    // (bounded) until it can open one to 127.0.0.1:MASTER_PORT, which only
    // a listener in its own network namespace answers. Neither sends data:
    // busybox's nc may close on its own input's end before it reads any.
    let script = format!(
        "if [ \"$NODE_RANK\" = 0 ]; then nc -l -p \"$MASTER_PORT\" < /dev/null; else \
           i=0; until nc 127.0.0.1 \"$MASTER_PORT\" < /dev/null; do \
             i=$((i + 1)); [ $i -lt 600 ] || exit 9; sleep 0.1; done; echo connected-to-rank-0; fi; \
         if echo | nc -w 2 127.0.0.1 {server_port}; then echo reached-the-server; else echo server-unreachable; fi"
    );
    let mut spec = job("workers", &script);
    spec["spec"]["workers"] = json!(2);
    let id = server.create_job(token, &spec);
    server.wait_for_state(token, &id, JobState::Completed);
    let rank1 = server.log_text(token, &id, &format!("{id}-1-0"));
    assert!(rank1.contains("connected-to-rank-0"), "the workers reach each other:\n{rank1}");
    for index in 0..2 {
        let text = server.log_text(token, &id, &format!("{id}-{index}-0"));
        assert!(text.contains("server-unreachable"), "worker {index} reached the host's loopback:\n{text}");
    }
    let pods = containers::engine(&["pod", "ps", "--format", "{{.Name}}"]);
    assert!(!pods.contains(&id), "the pod is removed with the last worker: {pods}");
    let networks = containers::engine(&["network", "ls", "--format", "{{.Name}}"]);
    assert!(!networks.contains(&id), "the run's network is removed with the last worker: {networks}");
}

/// A job cannot reach another job's container, even at its address on the
/// machine's bridges, nor the cloud metadata address. The first job listens
/// (and proves it to itself) and leaves its address in the shared volume;
/// the second tries it. Both ran on the engine's one default network
/// before, where the second connected (and netavark's `isolate` alone let
/// it through now and then while other networks came and went). Both are
/// refused at once by routes the job cannot remove (it has no `NET_ADMIN`);
/// without them the metadata connection would wait for its timeout.
#[test]
fn a_job_reaches_neither_another_jobs_container_nor_the_metadata_address() {
    let scratch = tempfile::tempdir().unwrap();
    let server = server(scratch.path());
    let token = &server.admin_token;
    let listen = "nc -ll -p 8080 -e echo hi & \
        until nc 127.0.0.1 8080 < /dev/null; do sleep 0.1; done; \
        ip -o -4 addr show eth0 | sed 's/.* inet \\([0-9.]*\\).*/\\1/' > /mnt/address.tmp; \
        mv /mnt/address.tmp /mnt/address; \
        while [ ! -e /mnt/done ]; do sleep 0.1; done";
    let listener = server.create_job(token, &mounting("listener", "/", listen));
    let address = scratch.path().join("address");
    wait_for("the first job's address", Duration::from_secs(120), || address.exists().then_some(()));
    let address = std::fs::read_to_string(&address).unwrap().trim().to_string();
    assert!(address.parse::<std::net::Ipv4Addr>().is_ok(), "{address:?}");

    let probe = format!(
        "if nc -w 3 {address} 8080 < /dev/null; then echo reached-the-other-job; else echo other-job-unreachable; fi; \
         nc -w 3 169.254.169.254 80 < /dev/null 2>&1; ip route del prohibit 169.254.0.0/16 2>&1; ip route; \
         cat /etc/resolv.conf; true"
    );
    let prober = server.create_job(token, &mounting("prober", "/", &probe));
    server.wait_for_state(token, &prober, JobState::Completed);
    std::fs::write(scratch.path().join("done"), "").unwrap();
    server.wait_for_state(token, &listener, JobState::Completed);
    let text = server.log_text(token, &prober, &format!("{prober}-0-0"));
    assert!(text.contains("other-job-unreachable"), "a job reached another job's container:\n{text}");
    assert!(text.contains("169.254.169.254): Permission denied"), "the metadata address is refused at once:\n{text}");
    assert!(text.contains("Operation not permitted"), "the job cannot remove the route:\n{text}");
    assert!(text.contains("prohibit 169.254.0.0/16"), "{text}");
    assert!(text.contains("prohibit 10.89.0.0/16"), "the other runs' networks are refused too:\n{text}");
    // No DNS server of the engine's on the run's network (`--disable-dns`).
    assert!(!text.contains("nameserver 10.89."), "the run's network has a DNS server:\n{text}");
}

/// A teammate cannot take over the public secret another's jobs read: a
/// second public secret of that name is refused (409 naming its owner), a
/// job's reference is pinned to the secret it was created with (and says
/// whose), and naming another user's private secret is a 422.
#[test]
fn a_public_secret_cannot_be_taken_over_by_a_teammate() {
    let scratch = tempfile::tempdir().unwrap();
    let server = server(scratch.path());
    let (alice, bob, mallory) = (server.token_for("alice"), server.token_for("bob"), server.token_for("mallory"));
    let public = |value: &str| json!([{"name": "HF_TOKEN", "value": value, "visibility": "public"}]);
    let (status, body) = server.call("POST", "/usersecrets", &alice, Some(&public("alice-value")));
    assert_eq!(status, 200, "{body}");

    let mut spec = job("reads-secret", "echo \"token=[$TOKEN]\"");
    spec["spec"]["envs"] = json!([{"name": "TOKEN", "value_from": {"secret_name_ref": "HF_TOKEN"}}]);
    let (status, created) = server.call("POST", "/jobs", &bob, Some(&spec));
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["spec"]["envs"][0]["value_from"]["secret_owner"], "alice", "the reference is pinned");
    let id = created["metadata"]["id"].as_str().unwrap().to_string();

    // The takeover: a newer public secret of the same name.
    let (status, body) = server.call("POST", "/usersecrets", &mallory, Some(&public("mallory-value")));
    assert_eq!(status, 409, "{body}");
    assert!(body.to_string().contains("alice"), "the answer names the owner: {body}");
    // A private one of the same name is mallory's own business, and unseen.
    let mut private = public("mallory-value");
    private[0]["visibility"] = json!("private");
    assert_eq!(server.call("POST", "/usersecrets", &mallory, Some(&private)).0, 200);

    server.wait_for_state(&bob, &id, JobState::Completed);
    let text = server.log_text(&bob, &id, &format!("{id}-0-0"));
    assert!(text.contains("token=[alice-value]"), "bob's job read alice's secret:\n{text}");
    let (_, second) = server.call("POST", "/jobs", &bob, Some(&spec));
    assert_eq!(second["spec"]["envs"][0]["value_from"]["secret_owner"], "alice", "{second}");

    spec["spec"]["envs"][0]["value_from"]["secret_owner"] = json!("mallory");
    let (status, body) = server.call("POST", "/jobs", &bob, Some(&spec));
    assert_eq!(status, 422, "{body}");
    assert!(body.to_string().contains("spec.envs[0].value_from.secret_owner"), "{body}");
}

/// A server whose jobs ran in containers never turns into one that runs
/// them as processes of its own user because the engine broke: restarted
/// with no working engine (and no mode in its config), it stays in container
/// mode and says so, and a job that would leave a file on the host if it
/// ran unisolated fails as the engine's failure instead.
#[test]
fn a_server_that_ran_containers_does_not_fall_back_to_processes_when_the_engine_breaks() {
    containers::test_image();
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let config = |engine: &str| {
        let path = dir.path().join(format!("{}.toml", engine.replace('/', "_")));
        std::fs::write(&path, format!("[executor.local]\nengine = \"{engine}\"\nretry_backoff_seconds = 0\n")).unwrap();
        path.to_string_lossy().into_owned()
    };
    let working = config(containers::ENGINE);
    let server = Server::start_api_in(&data_dir, &["--config", &working]);
    let (_, workspace) = server.call("GET", "/workspace", &server.admin_token, None);
    assert_eq!(workspace["executor_mode"], "container", "{workspace}");
    let token = server.admin_token.clone();
    drop(server);

    let broken = config("/nonexistent/podman");
    let server = Server::start_api_in(&data_dir, &["--config", &broken]);
    let (_, workspace) = server.call("GET", "/workspace", &token, None);
    assert_eq!(workspace["executor_mode"], "container", "still containers: {workspace}");
    let marker = dir.path().join("ran-on-the-host");
    let id = server.create_job(&token, &job("unisolated", &format!("touch {}", marker.display())));
    server.wait_for_state(&token, &id, JobState::Failed);
    assert_eq!(server.failure_analysis(&token, &id)["err_class"], "ERR_ENGINE");
    assert!(!marker.exists(), "the job ran as a process of the server's user");
}

/// A token that leaked (or a teammate who left) is revoked from the
/// server's shell, and it stops working on its very next request, with
/// every console session made from it. Listing tokens never shows a
/// secret, and the first-start sign-in link's token expires within a day.
#[test]
fn a_revoked_token_and_its_sessions_stop_working_at_once() {
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_api_in(&data.path().join("data"), &[]);
    let out = server.token_command(&["create", "--user", "mallory", "--name", "laptop", "--expires", "2h"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let token = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let said = String::from_utf8(out.stderr).unwrap();
    assert!(said.contains("for mallory; expires "), "{said}");
    let (status, session) = server.call("POST", "/sessions", &token, Some(&json!({})));
    assert_eq!(status, 200, "{session}");
    let session = session["token"].as_str().unwrap().to_string();
    assert_eq!(server.call("GET", "/jobs", &session, None).0, 200);

    let list = server.token_command(&["list"]);
    let listed = String::from_utf8(list.stdout).unwrap();
    assert!(list.status.success(), "{}", String::from_utf8_lossy(&list.stderr));
    for secret in [&token, &session, &server.admin_token] {
        assert!(!listed.contains(secret.as_str()), "a secret was listed:\n{listed}");
    }
    assert!(!listed.contains("jd_"), "{listed}");
    let row = |kind: &str, user: &str| -> Vec<String> {
        let line = listed.lines().find(|l| l.contains(kind) && l.contains(user));
        line.unwrap_or_else(|| panic!("no {kind} token of {user}:\n{listed}"))
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    let link = row("sign-in-link", "admin");
    let (created, expires) = (&link[link.len() - 4], &link[link.len() - 3]);
    let hours = |t: &str| humantime::parse_rfc3339(t).unwrap().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    assert_eq!(hours(expires) - hours(created), 24 * 3600, "the sign-in link lasts 24 hours: {link:?}");
    let laptop = row("laptop", "mallory");
    assert_eq!(laptop[2], "api", "{laptop:?}");

    let revoked = server.token_command(&["revoke", &laptop[0]]);
    let said = String::from_utf8(revoked.stdout).unwrap();
    assert!(revoked.status.success(), "{}", String::from_utf8_lossy(&revoked.stderr));
    assert!(said.contains("and 1 console sessions made with it"), "{said}");
    for used in [&token, &session] {
        let (status, body) = server.call("GET", "/jobs", used, None);
        assert_eq!(status, 401, "a revoked token still signs in: {body}");
        assert!(body.to_string().contains("revoked"), "{body}");
    }
    let all = String::from_utf8(server.token_command(&["list", "--all"]).stdout).unwrap();
    assert!(all.lines().any(|l| l.contains("laptop") && l.ends_with("revoked")), "{all}");

    let refused = server.token_command(&["create", "--user", "x", "--expires", "soon"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--expires"), "the error names the option");
    let missing = server.token_command(&["revoke", "999"]);
    assert!(String::from_utf8_lossy(&missing.stderr).contains("there is no token 999"));
}

/// Secret values are sealed at rest with a key kept beside, not inside,
/// the data directory: no file of a copy of the data directory holds a
/// secret's value or a registry password, though jobs still get them; and
/// a server given the data directory without its key refuses to start
/// rather than make a new key and lose every secret.
#[test]
fn a_copy_of_the_data_directory_reveals_no_secret_value() {
    let temp = tempfile::tempdir().unwrap();
    let data_dir = temp.path().join("data");
    let mut server = Server::start_api_in(&data_dir, &[]);
    let token = server.admin_token.clone();
    let marker = format!("hf-marker-{}", std::process::id());
    let password = format!("pw-marker-{}", std::process::id());
    let secret = json!([{"name": "HF_TOKEN", "value": marker}]);
    assert_eq!(server.call("POST", "/usersecrets", &token, Some(&secret)).0, 200);
    let registry = json!({"metadata": {"name": "team"},
        "spec": {"registry_server": "registry.example", "username": "u", "password": password}});
    assert_eq!(server.call("POST", "/imagepullsecrets", &token, Some(&registry)).0, 201);

    // The job prints the value changed (upper case), so its log does not
    // hold the value itself either.
    let mut spec = job("reads", "echo \"$TOKEN\" | tr a-z A-Z");
    spec["spec"]["envs"] = json!([{"name": "TOKEN", "value_from": {"secret_name_ref": "HF_TOKEN"}}]);
    let id = server.create_job(&token, &spec);
    server.wait_for_state(&token, &id, JobState::Completed);
    assert!(server.log_text(&token, &id, &format!("{id}-0-0")).contains(&marker.to_uppercase()));

    fn files(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() && !path.is_symlink() {
                files(&path, found);
            } else if path.is_file() {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    files(&data_dir, &mut found);
    assert!(found.iter().any(|p| p.ends_with("jobdeck.db")), "{found:?}");
    for file in &found {
        let bytes = std::fs::read(file).unwrap_or_default();
        for value in [&marker, &password] {
            let at = bytes.windows(value.len()).position(|w| w == value.as_bytes());
            assert!(at.is_none(), "{} holds a secret value in clear", file.display());
        }
    }
    let key = temp.path().join("data.key");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600, "the key is the server's only");

    // Without its key, the server refuses to start and says why.
    server.kill();
    std::fs::rename(&key, temp.path().join("elsewhere.key")).unwrap();
    let mut refused = std::process::Command::new(jobdeck_e2e::jobdeck_bin())
        .args(["serve", "--listen", "127.0.0.1:0", "--local-mode", "process", "--data-dir"])
        .arg(&data_dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let status =
        wait_for("the server to refuse to start", Duration::from_secs(60), || refused.try_wait().ok().flatten());
    let mut said = String::new();
    std::io::Read::read_to_string(refused.stderr.as_mut().unwrap(), &mut said).unwrap();
    assert!(!status.success(), "{said}");
    assert!(said.contains("cannot load the key that seals secret values") && said.contains("data.key"), "{said}");
    assert!(!key.exists(), "no new key was made in place of the lost one");
}

/// `<scratch>/shared`, writable by everyone (sticky), holding `root-only`:
/// a file only the host's root may read.
fn shared_with_a_root_only_file(scratch: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let shared = scratch.join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::write(shared.join("root-only"), "the host's secret\n").unwrap();
    std::fs::set_permissions(shared.join("root-only"), std::fs::Permissions::from_mode(0o600)).unwrap();
    shared
}

/// With `user_namespace = "auto"` a job's root is not the host's root: it
/// cannot read a file of a volume that only the host's root may read (it
/// could before, holding `DAC_OVERRIDE`), and what it writes belongs to an
/// unprivileged user of the host.
#[test]
fn a_jobs_root_is_not_the_hosts_root_in_a_user_namespace_of_its_own() {
    use std::os::unix::fs::MetadataExt;
    let scratch = tempfile::tempdir().unwrap();
    let shared = shared_with_a_root_only_file(scratch.path());
    let server = server_with(scratch.path(), "user_namespace = \"auto\"");
    let token = &server.admin_token;
    let script = "cat /mnt/root-only 2>&1; touch /mnt/written && echo wrote; head -1 /proc/self/uid_map";
    let id = server.create_job(token, &mounting("userns", "/shared", script));
    server.wait_for_state(token, &id, JobState::Completed);
    let text = server.log_text(token, &id, &format!("{id}-0-0"));
    assert!(!text.contains("the host's secret"), "a job's root read a file only the host's root may:\n{text}");
    assert!(text.contains("Permission denied") && text.contains("wrote"), "{text}");
    let owner = std::fs::metadata(shared.join("written")).unwrap().uid();
    assert!(owner >= 65_536, "the job's file belongs to host user {owner}");
}

/// `spec.container.user` is a user of the container's own namespace: on a
/// server with a user namespace per run, `0:0` is the container's root and
/// `1000:1000` its user 1000, and what either writes to a volume belongs to
/// an unprivileged user of the host, never to the host's root or its user
/// 1000. The same job on a server without one runs as the host's 1000.
#[test]
fn a_jobs_user_is_a_user_of_its_own_namespace_and_never_the_hosts_root() {
    use std::os::unix::fs::MetadataExt;
    let scratch = tempfile::tempdir().unwrap();
    let shared = shared_with_a_root_only_file(scratch.path());
    let run = |server: &Server, user: &str, file: &str| {
        let script =
            format!("echo uid=$(id -u) gid=$(id -g); cat /mnt/root-only 2>&1; touch /mnt/{file} && echo wrote");
        let mut job = mounting("as-user", "/shared", &script);
        job["spec"]["container"]["user"] = json!(user);
        let id = server.create_job(&server.admin_token, &job);
        server.wait_for_state(&server.admin_token, &id, JobState::Completed);
        let text = server.log_text(&server.admin_token, &id, &format!("{id}-0-0"));
        assert!(!text.contains("the host's secret"), "user {user} read a file only the host's root may:\n{text}");
        (text, std::fs::metadata(shared.join(file)).unwrap().uid())
    };
    let own = server_with(scratch.path(), "user_namespace = \"auto\"");
    for (user, file, inside) in [("0:0", "by-root", "uid=0 gid=0"), ("1000:1000", "by-1000", "uid=1000 gid=1000")] {
        let (text, owner) = run(&own, user, file);
        assert!(text.contains(inside) && text.contains("wrote"), "{user}: {text}");
        assert!(owner >= 65_536, "user {user}'s file belongs to host user {owner}");
    }
    drop(own);
    let host = server_with(scratch.path(), "");
    let (text, owner) = run(&host, "1000:1000", "by-host-1000");
    assert!(text.contains("uid=1000 gid=1000") && text.contains("Permission denied"), "{text}");
    assert_eq!(owner, 1000, "without a namespace of its own the user is the host's");
}

/// A node group an admin opened to privileged containers
/// (`privileged_roles`) runs an admin's privileged job with every
/// capability; the same job on the server's other group is refused, and an
/// ordinary job keeps only the few capabilities a training job needs.
#[test]
fn a_privileged_job_runs_with_every_capability_only_where_the_config_opens_it() {
    let scratch = tempfile::tempdir().unwrap();
    let trusted = "\n[[node_groups]]\nname = \"trusted\"\ncpu = 8\nmemory_mb = 16384\nprivileged_roles = [\"admin\"]\n";
    let server = server_with(scratch.path(), trusted);
    let token = &server.admin_token;
    let capabilities = |job: Value| {
        let id = server.create_job(token, &job);
        server.wait_for_state(token, &id, JobState::Completed);
        let text = server.log_text(token, &id, &format!("{id}-0-0"));
        text.lines().find_map(|l| l.strip_prefix("CapEff:")).map(|c| c.trim().to_string()).unwrap()
    };
    let mut privileged = job("privileged", "grep CapEff /proc/self/status");
    privileged["spec"]["user_security_context"] = json!({"privileged": true});
    let (status, body) = server.call("POST", "/jobs", token, Some(&privileged));
    assert_eq!(status, 422, "on any group, local included: {body}");
    privileged["spec"]["affinity"] = json!({"allowed_dedicated_node_groups": ["trusted"]});
    let all = u64::from_str_radix(&capabilities(privileged), 16).unwrap();
    let ordinary = u64::from_str_radix(&capabilities(job("ordinary", "grep CapEff /proc/self/status")), 16).unwrap();
    assert_eq!(ordinary.count_ones(), 8, "the eight of CAPABILITIES: {ordinary:x}");
    assert!(all.count_ones() >= 38, "a privileged container has every capability: {all:x}");
}
