//! The trust boundary of process mode (docs/architecture.md, "Process mode
//! and trust"): replicas run as the server's OS user, so what keeps the
//! server's own secrets from them, and from other users of the machine, is
//! tested here against the real server.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use jobdeck_e2e::{JobState, Server};
use serde_json::json;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).permissions().mode() & 0o777
}

#[test]
fn replicas_get_none_of_the_servers_environment_and_the_data_stays_owner_only() {
    let temp = tempfile::tempdir().unwrap();
    let data = temp.path().join("data");
    // A data directory someone created readable by everyone.
    std::fs::create_dir_all(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    let server = Server::start_api_with_env(
        &data,
        &[],
        &[
            ("JOBDECK_CANARY", "canary-in-a-jobdeck-variable"),
            ("AWS_SECRET_ACCESS_KEY", "canary-in-a-cloud-credential"),
            ("KUBECONFIG", "/canary/kubeconfig"),
        ],
    );
    let token = server.admin_token.clone();
    let job = json!({
        "metadata": {"name": "printenv"},
        "spec": {
            "resource_shape": "cpu.small",
            "container": {"image": "busybox", "command": ["/bin/sh", "-c", "env; echo cwd=$(pwd)"]},
            "envs": [{"name": "MINE", "value": "set-by-the-job"}]
        }
    });
    let id = server.create_job(&token, &job);
    server.wait_for_state(&token, &id, JobState::Completed);
    let (status, log) = server.call("GET", &format!("/jobs/{id}/replicas/{id}-0-0/log"), &token, None);
    assert_eq!(status, 200, "{log}");
    let log = log.as_str().unwrap().to_string();
    assert!(log.contains("MINE=set-by-the-job") && log.contains("JOB_COMPLETION_INDEX=0"), "{log}");
    assert!(log.contains("PATH="), "{log}");
    for leaked in ["canary", "JOBDECK_", "KUBECONFIG", "AWS_"] {
        assert!(!log.contains(leaked), "the replica saw {leaked}: {log}");
    }

    // Owner-only: the data directory (tightened although it existed), the
    // database with its write-ahead log, and the replica's run directory.
    assert_eq!(mode(&data), 0o700);
    for file in ["jobdeck.db", "jobdeck.db-wal", "jobdeck.db-shm"] {
        let path = data.join(file);
        if path.exists() {
            assert_eq!(mode(&path), 0o600, "{file}");
        }
    }
    assert_eq!(mode(&data.join("jobdeck.db")), 0o600);
    let cwd = log.lines().find_map(|l| l.strip_prefix("cwd=")).expect("the replica printed its directory");
    let run_dir = Path::new(cwd).parent().unwrap();
    assert!(run_dir.starts_with(&data), "{cwd}");
    assert_eq!(mode(run_dir), 0o700, "{}", run_dir.display());
}

/// Supervisors outlive a crashed server by design; the test harness must
/// still end them with the test, or every test that leaves a replica running
/// would leave it running for the rest of the suite.
#[test]
fn a_dropped_test_server_leaves_no_replica_running() {
    let temp = tempfile::tempdir().unwrap();
    let data = temp.path().join("data");
    let server = Server::start_api_in(&data, &[]);
    let token = server.admin_token.clone();
    let job = json!({
        "metadata": {"name": "lingers"},
        "spec": {"container": {"image": "busybox", "command": ["/bin/sh", "-c", "echo pid=$$; exec sleep 600"]}}
    });
    let id = server.create_job(&token, &job);
    server.wait_for_state(&token, &id, JobState::Running);
    let pid = jobdeck_e2e::wait_for("the replica to print its pid", std::time::Duration::from_secs(60), || {
        let (_, log) = server.call("GET", &format!("/jobs/{id}/replicas/{id}-0-0/log?follow=false"), &token, None);
        log.as_str().and_then(|l| l.lines().find_map(|l| l.strip_prefix("pid=")).map(str::to_string))
    });
    assert!(Path::new(&format!("/proc/{pid}")).exists(), "the replica runs while its server does");
    assert_eq!(jobdeck_e2e::live_supervisors(&data).len(), 1);

    drop(server);
    assert!(jobdeck_e2e::live_supervisors(&data).is_empty(), "a supervisor outlived its test server");
    // The replica was killed with its session (a zombie until init reaps it).
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    assert!(
        state.is_empty() || state.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        "{state}"
    );
}

/// A job's own termination grace period holds between SIGTERM and SIGKILL:
/// the server's default here is 60 s, the job asks for 3, and a program that
/// ignores SIGTERM is killed about 3 s after it.
#[test]
fn a_stopped_replica_gets_its_jobs_grace_period_between_sigterm_and_sigkill() {
    let scratch = tempfile::tempdir().unwrap();
    let server = Server::start_api_with_config("[executor.local]\nmode = \"process\"\ngrace_period_seconds = 60\n");
    let script = jobdeck_e2e::grace_probe_script(scratch.path());
    let job = json!({
        "metadata": {"name": "graceful"},
        "spec": {
            "termination_grace_period_seconds": 3,
            "container": {"image": "busybox", "command": ["/bin/sh", "-c", script]}
        }
    });
    let (_, gap) = jobdeck_e2e::stop_grace_probe(&server, &job, scratch.path());
    assert!((2.0..20.0).contains(&gap), "SIGKILL came {gap:.2} s after SIGTERM, not 3 s");
}
