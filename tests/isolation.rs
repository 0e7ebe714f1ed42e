//! A hostile teammate's job, tried against the real server as an attacker
//! would (issue 32, docs/security.md): each test makes a real attempt that
//! would succeed if its defence broke. Container mode runs on the real
//! podman with runc and the busybox test image (tests/support/containers.rs);
//! the Slurm variants are in tests/slurm.rs. Nothing here waits on a clock:
//! every wait is for a job's state.

use std::path::Path;
use std::process::Command;

use jobdeck_e2e::containers;
use jobdeck_e2e::Server;
use serde_json::{json, Value};

/// A container-mode server on podman with one volume, `scratch`.
fn server(scratch: &Path) -> Server {
    containers::test_image();
    let config = format!(
        "[executor.local]\nmode = \"container\"\nengine = \"{engine}\"\ngrace_period_seconds = 2\n\
         retry_backoff_seconds = 0\npids_limit = 300\nvolumes = {{ scratch = \"{scratch}\" }}\n\n\
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
    server.wait_for_state(token, &id, "Completed");
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
    server.wait_for_state(token, &id, "Completed");
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
    server.wait_for_state(token, &id, "Completed");
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
