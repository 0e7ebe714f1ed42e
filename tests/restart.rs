//! Restart safety with a real crash (issue 4): the real `jobdeck serve` is
//! killed with SIGKILL while replicas run, one replica finishes while no
//! server is there, and a new server on the same data directory takes over.
//!
//! Every replica leaves marker files outside the data directory: one line
//! per start, and a directory that exists while it runs (`mkdir` fails when
//! a second copy of the same replica is already running, which the replica
//! records as an overlap). So the test counts starts and sees overlaps
//! without trusting the server it tests.

use std::path::{Path, PathBuf};
use std::time::Duration;

use jobdeck_e2e::{JobState, Server};
use serde_json::{json, Value};

/// What every replica runs: record the start, hold the running marker,
/// wait for its release file, then exit with `$EXIT_CODE`.
const REPLICA: &str = r#"m="$MARK/$LEPTON_JOB_NAME-$JOB_COMPLETION_INDEX"
echo "start $$" >> "$m.starts"
mkdir "$m.running" 2>/dev/null || echo overlap >> "$m.overlap"
while [ ! -e "$MARK/release-$LEPTON_JOB_NAME-$JOB_COMPLETION_INDEX" ]; do sleep 0.1; done
rmdir "$m.running"
echo end >> "$m.ends"
exit "$EXIT_CODE""#;

/// One node group with room for eight `cpu.small` replicas and a short
/// grace period.
const CONFIG: &str = r#"
[executor.local]
mode = "process"
retry_backoff_seconds = 0
grace_period_seconds = 2

[[node_groups]]
name = "local"
cpu = 8
memory_mb = 65536
"#;

fn job(name: &str, marks: &Path, completions: i64, parallelism: i64, backoff: i64, exit_code: i32) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {
            "resource_shape": "cpu.small",
            "completions": completions,
            "parallelism": parallelism,
            "backoff_limit": backoff,
            "container": {"image": "busybox", "command": ["/bin/sh", "-c", REPLICA]},
            "envs": [
                {"name": "MARK", "value": marks.to_str().unwrap()},
                {"name": "EXIT_CODE", "value": exit_code.to_string()}
            ]
        }
    })
}

/// Waits up to a minute for `probe` to hold; fails naming `what`.
fn wait_for(what: &str, mut probe: impl FnMut() -> bool) {
    jobdeck_e2e::wait_for(what, Duration::from_secs(60), || probe().then_some(()));
}

fn lines(path: PathBuf) -> usize {
    std::fs::read_to_string(path).map(|t| t.lines().count()).unwrap_or(0)
}

struct Marks(PathBuf);

impl Marks {
    fn starts(&self, replica: &str) -> usize {
        lines(self.0.join(format!("{replica}.starts")))
    }

    fn ends(&self, replica: &str) -> usize {
        lines(self.0.join(format!("{replica}.ends")))
    }

    fn release(&self, replica: &str) {
        std::fs::write(self.0.join(format!("release-{replica}")), b"").unwrap();
    }

    fn overlaps(&self) -> Vec<String> {
        std::fs::read_dir(&self.0)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".overlap"))
            .collect()
    }
}

impl Drop for Marks {
    /// Releases every replica, so none is left waiting when the test fails
    /// half-way (their supervisors outlive the servers by design).
    fn drop(&mut self) {
        for replica in ["steady-0", "steady-1", "steady-2", "fails-0"] {
            self.release(replica);
        }
    }
}

fn replicas(server: &Server, token: &str, id: &str) -> Vec<Value> {
    let (status, body) = server.call("GET", &format!("/jobs/{id}/replicas?attempts=all"), token, None);
    assert_eq!(status, 200, "{body}");
    body.as_array().unwrap().clone()
}

/// The replica of completion `index`, attempt `attempt`.
fn replica(list: &[Value], index: i64, attempt: i64) -> Option<&Value> {
    list.iter().find(|r| r["status"]["completion_index"] == index && r["status"]["attempt"] == attempt)
}

#[test]
fn a_server_killed_with_sigkill_loses_no_job_and_runs_no_replica_twice() {
    let temp = tempfile::tempdir().unwrap();
    let data = temp.path().join("data");
    let marks = Marks(temp.path().join("marks"));
    std::fs::create_dir_all(&marks.0).unwrap();
    let config = temp.path().join("jobdeck.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let args = ["--config", config.to_str().unwrap()];

    let mut first = Server::start_api_in(&data, &args);
    let token = first.admin_token.clone();
    // `steady`: three completions, two at a time, all succeed.
    // `fails`: one replica that exits 7 with no retries.
    let steady = first.create_job(&token, &job("steady", &marks.0, 3, 2, 3, 0));
    let fails = first.create_job(&token, &job("fails", &marks.0, 1, 1, 0, 7));
    wait_for("steady-0, steady-1 and fails-0 to start", || {
        marks.starts("steady-0") == 1 && marks.starts("steady-1") == 1 && marks.starts("fails-0") == 1
    });
    first.wait_for_state(&token, &steady, JobState::Running);
    first.wait_for_state(&token, &fails, JobState::Running);

    // The crash. The replicas' supervisors are in sessions of their own and
    // keep running.
    first.kill();

    // While no server runs, steady-0 succeeds and fails-0 exits with 7;
    // steady-1 keeps running across the restart.
    marks.release("steady-0");
    marks.release("fails-0");
    wait_for("steady-0 and fails-0 to end while the server is down", || {
        marks.ends("steady-0") == 1 && marks.ends("fails-0") == 1
    });
    assert_eq!(marks.ends("steady-1"), 0, "steady-1 ended although it was not released");

    let second = Server::start_api_in(&data, &args);

    // No job is lost.
    let (status, list) = second.call("GET", "/jobs", &token, None);
    assert_eq!(status, 200, "{list}");
    let mut ids: Vec<&str> =
        list["jobs"].as_array().unwrap().iter().map(|j| j["metadata"]["id"].as_str().unwrap()).collect();
    ids.sort();
    let mut expected = vec![steady.as_str(), fails.as_str()];
    expected.sort();
    assert_eq!(ids, expected, "{list}");

    // The replica that ended meanwhile has its real exit status, and the
    // lifecycle goes on from it: no retries were allowed, so the job fails.
    let failed = second.wait_for_state(&token, &fails, JobState::Failed);
    let fails_replicas = replicas(&second, &token, &fails);
    let ended = replica(&fails_replicas, 0, 0).unwrap_or_else(|| panic!("{fails_replicas:#?}"));
    assert_eq!(ended["status"]["phase"], "failed", "{ended}");
    assert_eq!(ended["status"]["exit_code"], 7, "{ended}");
    assert_eq!(fails_replicas.len(), 1, "fails was retried: {fails_replicas:#?}\n{failed:?}");

    // steady-0 succeeded while the server was down; the new server starts
    // the third completion into the freed slot.
    wait_for("steady-2 to start under the new server", || marks.starts("steady-2") == 1);
    let steady_replicas = replicas(&second, &token, &steady);
    let zero = replica(&steady_replicas, 0, 0).unwrap_or_else(|| panic!("{steady_replicas:#?}"));
    assert_eq!(zero["status"]["phase"], "succeeded", "{zero}");
    assert_eq!(zero["status"]["exit_code"], 0, "{zero}");
    let one = replica(&steady_replicas, 1, 0).unwrap_or_else(|| panic!("{steady_replicas:#?}"));
    assert_eq!(one["status"]["phase"], "running", "steady-1 is still the same process: {one}");

    marks.release("steady-1");
    marks.release("steady-2");
    let done = second.wait_for_state(&token, &steady, JobState::Completed);
    assert_eq!(done.status.as_ref().map(|s| s.succeeded), Some(3), "{done:?}");

    // Every replica ran exactly once, never two copies at the same time.
    for replica in ["steady-0", "steady-1", "steady-2", "fails-0"] {
        assert_eq!(marks.starts(replica), 1, "{replica} started {} times", marks.starts(replica));
        assert_eq!(marks.ends(replica), 1, "{replica} ended {} times", marks.ends(replica));
    }
    assert_eq!(marks.overlaps(), Vec::<String>::new(), "replicas ran twice at the same time");
    let all = replicas(&second, &token, &steady);
    assert_eq!(all.len(), 3, "one attempt per completion: {all:#?}");
}
