//! The real `lep` CLI against Jobdeck: the `leptonai` client from PyPI, at the
//! versions pinned in `tests/lep-requirements.txt` and installed into
//! `tests/.venv` by `scripts/setup.sh --lep` (which `scripts/test.sh` runs),
//! drives a real `jobdeck serve` as a user would, one subprocess per command.
//! Each step checks what `lep` prints and what the server really did, through
//! the API: the jobs run to completion on the local executor, their logs hold
//! the commands' output, stop and start change the state, remove deletes.
//!
//! `JOBDECK_LEP_VENV` points at another virtual environment with `leptonai`.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use jobdeck_e2e::{poll, wait_for, workspace_root, JobState, Server};
use serde_json::{json, Value};

/// One node group `local` of one node `lep-node` with room for two
/// `cpu.small` replicas (1 CPU, 4 GiB each), so a two-worker job fills it and
/// the test can make a job queue. A short grace period makes stops quick.
const CONFIG: &str = r#"
[executor.local]
mode = "process"
retry_backoff_seconds = 0
grace_period_seconds = 2

[[node_groups]]
name = "local"
cpu = 2
memory_mb = 16384
node_names = ["lep-node"]
"#;

/// The virtual environment with the `lep` CLI, checked: the test fails
/// (never passes silently) when it is missing or holds another version than
/// the pinned one.
fn lep_venv() -> PathBuf {
    let venv =
        std::env::var_os("JOBDECK_LEP_VENV").map(PathBuf::from).unwrap_or_else(|| workspace_root().join("tests/.venv"));
    let requirements = workspace_root().join("tests/lep-requirements.txt");
    let pinned = std::fs::read_to_string(&requirements)
        .expect("tests/lep-requirements.txt pins the leptonai version")
        .lines()
        .find_map(|l| l.trim().strip_prefix("leptonai==").map(str::to_string))
        .expect("tests/lep-requirements.txt has a leptonai==<version> line");
    let install = "create it with `scripts/setup.sh --lep` (scripts/test.sh does), or by hand: \
                   `python3 -m venv tests/.venv && tests/.venv/bin/pip install -r tests/lep-requirements.txt`";
    assert!(
        venv.join("bin/lep").is_file(),
        "the lep CLI is missing: {} has no bin/lep. This test runs the real leptonai {pinned} client; {install}",
        venv.display()
    );
    let out = Command::new(venv.join("bin/python"))
        .args(["-c", "import importlib.metadata as m; print(m.version('leptonai'))"])
        .output()
        .expect("the venv's python runs");
    let installed = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_eq!(
        installed,
        pinned,
        "{} holds leptonai {installed:?}, but tests/lep-requirements.txt pins {pinned}; {install}",
        venv.display()
    );
    venv
}

/// Runs `lep` as a user of one server would: its own home directory (where
/// `lep workspace login` keeps its record), and unless `logged_in_by_login`,
/// the workspace in the environment variables the client reads.
struct Lep {
    venv: PathBuf,
    home: tempfile::TempDir,
    env: Vec<(&'static str, String)>,
}

impl Lep {
    /// `lep` pointed at `server` with `token` through `LEPTON_WORKSPACE_*`.
    fn with_env(server: &Server, token: &str) -> Lep {
        let mut lep = Lep::without_workspace();
        lep.env = vec![
            ("LEPTON_WORKSPACE_ID", "jobdeck".to_string()),
            ("LEPTON_WORKSPACE_TOKEN", token.to_string()),
            ("LEPTON_WORKSPACE_URL", server.api_url("")),
        ];
        lep
    }

    /// `lep` with no workspace set: it has to `lep workspace login`.
    fn without_workspace() -> Lep {
        let venv = lep_venv();
        let home = tempfile::tempdir().expect("a home directory");
        // The CLI asks PyPI for a newer release once a day and remembers when
        // it last did here; a check far in the future keeps the test offline.
        let cache = home.path().join(".cache/lepton");
        std::fs::create_dir_all(&cache).unwrap();
        std::fs::write(cache.join("latest_version_check"), "99999999999").unwrap();
        Lep { venv, home, env: Vec::new() }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(self.venv.join("bin/lep"));
        command.args(args);
        for (key, _) in std::env::vars() {
            if key.starts_with("LEPTON_") {
                command.env_remove(key);
            }
        }
        command
            .env("HOME", self.home.path())
            // Wide enough that rich's tables never cut an id; unbuffered so a
            // followed log arrives line by line.
            .env("COLUMNS", "250")
            .env("PYTHONUNBUFFERED", "1")
            .env("NO_COLOR", "1")
            .envs(self.env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::null());
        command
    }

    fn run(&self, args: &[&str]) -> (Output, String) {
        let started = Instant::now();
        let out = self.command(args).output().unwrap_or_else(|e| panic!("cannot run lep {args:?}: {e}"));
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        println!("$ lep {} ({} ms, {})\n{text}", args.join(" "), started.elapsed().as_millis(), out.status);
        (out, text)
    }

    /// Runs a command that must succeed and answer cleanly: no traceback,
    /// and no answer item the client could not read (it skips those with a
    /// `[lepton-error]` line instead of failing).
    fn ok(&self, args: &[&str]) -> String {
        let (out, text) = self.run(args);
        assert!(out.status.success(), "lep {args:?} failed with {}:\n{text}", out.status);
        for sign in ["Traceback", "[lepton-error]", "programming error", "Error:", "Unexpected error"] {
            assert!(!text.contains(sign), "lep {args:?} printed {sign:?}:\n{text}");
        }
        text
    }

    /// Runs a command that must fail.
    fn fails(&self, args: &[&str]) -> String {
        let (out, text) = self.run(args);
        assert!(!out.status.success(), "lep {args:?} should have failed:\n{text}");
        assert!(!text.contains("Traceback"), "lep {args:?} crashed:\n{text}");
        text
    }

    /// Runs a command that asks a question, answering `input`; it must
    /// succeed as [`Lep::ok`] says.
    fn ok_answering(&self, args: &[&str], input: &str) -> String {
        use std::io::Write;
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run lep {args:?}: {e}"));
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        println!("$ lep {} <<< {input:?} ({})\n{text}", args.join(" "), out.status);
        assert!(out.status.success(), "lep {args:?} failed with {}:\n{text}", out.status);
        assert!(!text.contains("Traceback") && !text.contains("Error"), "lep {args:?}:\n{text}");
        text
    }

    /// Starts a command in the background; its output lines arrive on the
    /// returned channel.
    fn spawn(&self, args: &[&str]) -> (Child, mpsc::Receiver<String>) {
        let mut child = self
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run lep {args:?}: {e}"));
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                println!("[lep] {line}");
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        (child, rx)
    }
}

/// The id in `lep job create`'s "ID: <id>" line.
fn created_id(out: &str) -> String {
    assert!(out.contains("Job Created Successfully"), "{out}");
    out.lines()
        .find_map(|l| l.trim().strip_prefix("ID: "))
        .unwrap_or_else(|| panic!("no ID line in:\n{out}"))
        .trim()
        .to_string()
}

/// The job JSON `lep job get` prints after "Job details for …:".
fn printed_job(out: &str) -> Value {
    let start = out.find("\n{").unwrap_or_else(|| panic!("no JSON in:\n{out}")) + 1;
    let end = start + out[start..].find("\n}").unwrap_or_else(|| panic!("unterminated JSON in:\n{out}")) + 2;
    serde_json::from_str(&out[start..end]).unwrap_or_else(|e| panic!("{e}: {}", &out[start..end]))
}

fn get(server: &Server, token: &str, path: &str) -> Value {
    let (status, body) = server.call("GET", path, token, None);
    assert_eq!(status, 200, "GET {path}: {body}");
    body
}

/// The text of a replica's log as the API serves it now.
fn api_log(server: &Server, token: &str, job: &str, replica: &str) -> String {
    let body = get(server, token, &format!("/jobs/{job}/replicas/{replica}/log?follow=false"));
    body.as_str().map(str::to_string).unwrap_or_else(|| body.to_string())
}

fn wait_until_gone(server: &Server, token: &str, id: &str) {
    wait_for(&format!("job {id} to be removed"), Duration::from_secs(60), || {
        (server.call("GET", &format!("/jobs/{id}"), token, None).0 == 404).then_some(())
    });
}

/// Waits for a background command to end; fails the test after `limit`.
fn wait_exit(child: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    poll(limit, Duration::from_millis(100), || child.try_wait().unwrap()).unwrap_or_else(|| {
        let _ = child.kill();
        panic!("{what} did not end within {limit:?}");
    })
}

/// Collects a background command's lines until one contains `needle`.
fn wait_line(rx: &mpsc::Receiver<String>, needle: &str, seen: &mut Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !seen.iter().any(|l| l.contains(needle)) {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => seen.push(line),
            Err(_) => panic!("no line with {needle:?} came; seen:\n{}", seen.join("\n")),
        }
    }
}

#[test]
fn lep_creates_lists_reads_stops_starts_and_removes_jobs_on_jobdeck() {
    let server = Server::start_api_with_config(CONFIG);
    let token = server.admin_token.clone();
    let lep = Lep::with_env(&server, &token);

    // An empty workspace.
    let out = lep.ok(&["job", "list"]);
    assert!(out.contains("above 0 jobs"), "{out}");

    // Create with every flag a user reaches for first. `--command` runs under
    // /bin/bash -c, `--num-workers 2` is two indexed replicas that talk to
    // each other, `--queue-priority` needs `--node-group`.
    let command =
        r#"echo "hello from $JOB_COMPLETION_INDEX of $JOB_COMPLETIONS (rank $NODE_RANK of $WORLD_SIZE): $GREETING""#;
    let out = lep.ok(&[
        "job",
        "create",
        "--name",
        "hello",
        "--resource-shape",
        "cpu.small",
        "--command",
        command,
        "--env",
        "GREETING=hi there",
        "--num-workers",
        "2",
        "--node-group",
        "local",
        "--queue-priority",
        "high",
    ]);
    let hello = created_id(&out);
    assert!(hello.starts_with("hello-"), "{hello}");
    let job = get(&server, &token, &format!("/jobs/{hello}"));
    assert_eq!(job["metadata"]["name"], "hello");
    assert_eq!(job["metadata"]["created_by"], "admin");
    assert_eq!(job["spec"]["resource_shape"], "cpu.small");
    assert_eq!(job["spec"]["container"]["command"], json!(["/bin/bash", "-c", command]));
    assert_eq!(job["spec"]["envs"], json!([{"name": "GREETING", "value": "hi there"}]));
    assert_eq!((job["spec"]["completions"].as_i64(), job["spec"]["parallelism"].as_i64()), (Some(2), Some(2)));
    assert_eq!(job["spec"]["intra_job_communication"], true);
    assert_eq!(job["spec"]["affinity"]["allowed_dedicated_node_groups"], json!(["local"]));
    assert_eq!(job["spec"]["queue_config"]["priority_class"], "high-7000");
    let done = server.wait_for_state(&token, &hello, JobState::Completed);
    assert_eq!(done.status.as_ref().map(|s| s.succeeded), Some(2), "{done:?}");

    // List, with the filters `lep job list` turns into query parameters.
    let out = lep.ok(&["job", "list"]);
    for expected in [hello.as_str(), "Completed", "admin", "local", "cpu.small", "above 1 job "] {
        assert!(out.contains(expected), "no {expected:?} in:\n{out}");
    }
    let out = lep.ok(&["job", "list", "-s", "comp", "-n", "hel", "-u", "adm", "-ng", "loc"]);
    assert!(out.contains(&hello), "{out}");
    let out = lep.ok(&["job", "list", "-s", "run"]);
    assert!(out.contains("No jobs match") && !out.contains(&hello), "{out}");

    // Get, by id and by name: the job as the API has it.
    let printed = printed_job(&lep.ok(&["job", "get", "-i", &hello]));
    assert_eq!(printed["metadata"]["id"], hello.as_str());
    assert_eq!(printed["status"]["state"], "Completed");
    assert_eq!(printed["spec"]["envs"], serde_json::to_value(&done.spec.envs).unwrap());
    assert_eq!(printed["spec"]["queue_config"], serde_json::to_value(&done.spec.queue_config).unwrap());
    assert_eq!(printed["status"]["succeeded"], 2);
    let out = lep.ok(&["job", "get", "-n", "hello"]);
    assert_eq!(printed_job(&out)["metadata"]["id"], hello.as_str());

    // Replicas: one per worker, on the node of the group.
    let out = lep.ok(&["job", "replicas", "-i", &hello]);
    let replicas = get(&server, &token, &format!("/jobs/{hello}/replicas"));
    let ids: Vec<&str> = replicas.as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [format!("{hello}-0-0"), format!("{hello}-1-0")]);
    for id in &ids {
        assert!(out.contains(id), "no {id} in:\n{out}");
    }
    assert_eq!(out.matches("lep-node").count(), 2, "{out}");

    // Logs: the first replica by default, another with -r; what each
    // replica printed, as the API serves it.
    let out = lep.ok(&["job", "log", "-i", &hello]);
    assert!(out.contains(&format!("Selected replica {hello}-0-0")), "{out}");
    assert!(out.contains("hello from 0 of 2 (rank 0 of 2): hi there"), "{out}");
    assert!(out.contains("End of log"), "{out}");
    let second = format!("{hello}-1-0");
    let out = lep.ok(&["job", "log", "-i", &hello, "-r", &second]);
    assert!(out.contains("hello from 1 of 2 (rank 1 of 2): hi there"), "{out}");
    assert!(out.contains(api_log(&server, &token, &hello, &second).trim()), "{out}");

    // `lep log get` asks Lepton's log query (GET /logs) for the job's whole
    // run, every replica's lines with their times.
    let out = lep.ok(&["log", "get", "--job", &hello]);
    for rank in 0..2 {
        assert!(out.contains(&format!("hello from {rank} of 2 (rank {rank} of 2): hi there")), "{out}");
    }
    assert!(out.contains("total 2 lines"), "{out}");

    // A secret is private unless made public, and `lep secret list` says so.
    lep.ok(&["secret", "create", "-n", "LEP_TOKEN", "-v", "not-shown"]);
    let out = lep.ok(&["secret", "list"]);
    let row = out.lines().find(|l| l.contains("LEP_TOKEN")).unwrap_or_else(|| panic!("{out}"));
    assert!(row.contains("private") && !row.contains("not-shown"), "{out}");

    // Events: every reason the API lists, the newest first.
    let out = lep.ok(&["job", "events", "-i", &hello]);
    let events = get(&server, &token, &format!("/jobs/{hello}/events"));
    let reasons: Vec<&str> = events.as_array().unwrap().iter().map(|e| e["reason"].as_str().unwrap()).collect();
    assert!(reasons.contains(&"Completed") && reasons.contains(&"Queued"), "{events}");
    for reason in &reasons {
        assert!(out.contains(reason), "no event {reason} in:\n{out}");
    }
    assert!(out.contains(&format!("'name': '{second}'")), "{out}");
    let first_row = out.lines().position(|l| l.contains("Completed")).unwrap();
    let created_row = out.lines().position(|l| l.contains("Created")).unwrap();
    assert!(first_row < created_row, "newest first:\n{out}");

    // A long job pinned to a node: `--node-id` is checked against the
    // group's node list. It prints a second line once the test opens its
    // gate, so that following is shown by a line arriving, not by a wait.
    let gate_dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(gate_dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let gate = gate_dir.path().join("open");
    let sleeper_command =
        format!("echo started; until [ -e '{}' ]; do sleep 0.1; done; echo still-followed; sleep 300", gate.display());
    let out = lep.ok(&[
        "job",
        "create",
        "--name",
        "sleeper",
        "--resource-shape",
        "cpu.small",
        "--command",
        &sleeper_command,
        "--node-group",
        "local",
        "--node-id",
        "lep-node",
    ]);
    let sleeper = created_id(&out);
    let job = get(&server, &token, &format!("/jobs/{sleeper}"));
    assert_eq!(job["spec"]["affinity"]["allowed_nodes_in_node_group"], json!(["lep-node"]));
    let out = lep.fails(&[
        "job",
        "create",
        "--name",
        "nowhere",
        "--resource-shape",
        "cpu.small",
        "--command",
        "true",
        "--node-group",
        "local",
        "--node-id",
        "no-such-node",
    ]);
    assert!(out.contains("Invalid node ids: no-such-node"), "{out}");
    server.wait_for_state(&token, &sleeper, JobState::Running);

    // `lep job log` on a running job follows it until it ends.
    let (mut follower, lines) = lep.spawn(&["job", "log", "-i", &sleeper]);
    let mut seen = Vec::new();
    wait_line(&lines, "started", &mut seen);
    std::fs::write(&gate, "").unwrap();
    wait_line(&lines, "still-followed", &mut seen);
    assert!(follower.try_wait().unwrap().is_none(), "lep job log stopped following a running job: {seen:?}");

    // Stop: the replica is ended, the job is Stopped, the follower ends.
    let out = lep.ok(&["job", "stop", "-i", &sleeper]);
    assert!(out.contains(&format!("Job {sleeper} stopped successfully")), "{out}");
    let stopped = server.wait_for_state(&token, &sleeper, JobState::Stopped);
    assert_eq!(stopped.spec.stopped, Some(true));
    let replicas = get(&server, &token, &format!("/jobs/{sleeper}/replicas"));
    assert_eq!(replicas[0]["status"]["reason"], "Stopped", "{replicas}");
    assert!(wait_exit(&mut follower, Duration::from_secs(30), "lep job log").success());
    seen.extend(lines.try_iter());
    assert!(seen.iter().any(|l| l.contains("End of log")), "{seen:?}");
    let out = lep.ok(&["job", "stop", "-i", &sleeper]);
    assert!(out.contains("is already") && out.contains("Stopped. No action taken"), "{out}");

    // Start: a new attempt runs.
    let out = lep.ok(&["job", "start", "-i", &sleeper]);
    assert!(out.contains(&format!("Job {sleeper} started successfully")), "{out}");
    let running = server.wait_for_state(&token, &sleeper, JobState::Running);
    assert_eq!(running.spec.stopped, Some(false));
    // Replicas lists the current attempt, as Lepton lists a job's pods, and
    // `lep job log` without `-r` follows it, not the stopped first one.
    let out = lep.ok(&["job", "replicas", "-i", &sleeper]);
    assert!(out.contains(&format!("{sleeper}-0-1")) && !out.contains(&format!("{sleeper}-0-0")), "{out}");
    let (mut follower, lines) = lep.spawn(&["job", "log", "-i", &sleeper]);
    let mut seen = Vec::new();
    wait_line(&lines, &format!("Selected replica {sleeper}-0-1"), &mut seen);
    wait_line(&lines, "still-followed", &mut seen);
    assert!(follower.try_wait().unwrap().is_none(), "lep job log stopped following the new attempt: {seen:?}");
    follower.kill().unwrap();
    follower.wait().unwrap();
    let out = lep.ok(&["job", "start", "-i", &sleeper]);
    assert!(out.contains("Running. No action taken"), "{out}");
    let out = lep.ok(&["job", "list", "-s", "run"]);
    assert!(out.contains(&sleeper) && out.contains("cpu.small : 1"), "{out}");

    // A job that does not fit next to it waits in the queue; its log is
    // empty and ends at once; stopping it needs no replica to end.
    let out = lep.ok(&[
        "job",
        "create",
        "--name",
        "big",
        "--resource-shape",
        "cpu.small",
        "--command",
        "echo never",
        "--num-workers",
        "2",
        "--node-group",
        "local",
    ]);
    let big = created_id(&out);
    wait_for("the job to say it waits for capacity", Duration::from_secs(30), || {
        let queued = get(&server, &token, &format!("/jobs/{big}"));
        assert_eq!(queued["status"]["state"], "Queueing", "{queued}");
        (queued["status"]["reason"] == "NoCapacity").then_some(())
    });
    let out = lep.ok(&["job", "replicas", "-i", &big]);
    assert!(out.contains(&format!("{big}-0-0")) && out.contains(&format!("{big}-1-0")), "{out}");
    // A queued replica's log is printed at once: nothing follows it (the
    // job stays queued until it is stopped below, so a follower would never
    // end).
    let (mut reader, lines) = lep.spawn(&["job", "log", "-i", &big]);
    wait_line(&lines, "End of log", &mut Vec::new());
    assert!(wait_exit(&mut reader, Duration::from_secs(60), "lep job log of a queued job").success());

    // `stop-all` stops every job of the user, and a finished one in the
    // list changes nothing instead of aborting the loop.
    let out = lep.ok_answering(&["job", "stop-all", "-u", "admin"], "3\n");
    for id in [&hello, &sleeper, &big] {
        assert!(out.contains(&format!("Job {id} stopped successfully")), "{id}: {out}");
    }
    server.wait_for_state(&token, &big, JobState::Stopped);
    server.wait_for_state(&token, &sleeper, JobState::Stopped);
    assert_eq!(get(&server, &token, &format!("/jobs/{hello}"))["status"]["state"], "Completed");

    // Remove: by id, and by name.
    let out = lep.ok(&["job", "remove", "-i", &sleeper]);
    assert!(out.contains(&format!("Job {sleeper} deleted successfully")), "{out}");
    wait_until_gone(&server, &token, &sleeper);
    for (name, id) in [("big", &big), ("hello", &hello)] {
        let out = lep.ok(&["job", "remove", "-n", name]);
        assert!(out.contains(&format!("Job {id} deleted successfully")), "{out}");
        wait_until_gone(&server, &token, id);
    }
    let out = lep.ok(&["job", "list"]);
    assert!(out.contains("above 0 jobs"), "{out}");

    // Mistakes get the server's answer.
    let out = lep.fails(&["job", "get", "-i", "nope-00000"]);
    assert!(out.contains("404") && out.contains("job 'nope-00000' not found"), "{out}");
    let out = lep.fails(&["job", "create", "--name", "wrong", "--resource-shape", "gpu.a10", "--command", "true"]);
    assert!(out.contains("422") && out.contains("no resource shape named 'gpu.a10'"), "{out}");
    // `--privileged` reaches the server as Lepton's
    // `user_security_context.privileged`, which no node group here opens.
    let privileged = ["job", "create", "--name", "root", "--resource-shape", "cpu.small", "--command", "true"];
    let out = lep.fails(&[&privileged[..], &["--privileged", "--node-group", "local"]].concat());
    assert!(out.contains("422") && out.contains("does not run privileged containers for you here"), "{out}");
}

/// `lep template list` and `lep job create -t`: a built-in template with
/// `--run` (lep keeps the rendered spec without its envs and adds its own
/// options) and a private one a user saved through the API.
#[test]
fn lep_lists_templates_and_creates_jobs_from_them() {
    let server = Server::start_api_with_config(CONFIG);
    let token = server.admin_token.clone();
    let lep = Lep::with_env(&server, &token);
    let mine = json!({
        "metadata": {"name": "Say It"},
        "spec": {
            "content": {"spec": {"container": {"command": ["/bin/sh", "-c", "echo said: {{run}}"]}}},
            "json_schema": {"type": "object", "properties": {"run": {"type": "string"}}, "required": ["run"]}
        }
    });
    let (status, saved) = server.call("POST", "/templates/private", &token, Some(&mine));
    assert_eq!(status, 200, "{saved}");

    let out = lep.ok(&["template", "list"]);
    for expected in ["Torchrun", "torchrun", "mpi", "script", "Say It", "say-it", "job"] {
        assert!(out.contains(expected), "no {expected:?} in:\n{out}");
    }

    let run = "echo rank $NODE_RANK of $NNODES, $NPROC_PER_NODE per node, primary $MASTER_ADDR";
    let out = lep.ok(&[
        "job",
        "create",
        "--name",
        "dist",
        "-t",
        "torchrun",
        "--run",
        run,
        "--resource-shape",
        "cpu.small",
        "--num-workers",
        "2",
        "--node-group",
        "local",
    ]);
    let dist = created_id(&out);
    let job = get(&server, &token, &format!("/jobs/{dist}"));
    assert_eq!(job["spec"]["container"]["command"][0], "/bin/bash");
    assert!(job["spec"]["container"]["command"][2].as_str().unwrap().ends_with(&format!("{run}\n")), "{job}");
    server.wait_for_state(&token, &dist, JobState::Completed);
    assert_eq!(api_log(&server, &token, &dist, &format!("{dist}-1-0")), "rank 1 of 2, 1 per node, primary 127.0.0.1\n");

    let out =
        lep.ok(&["job", "create", "--name", "said", "-t", "say-it", "--run", "hello", "--resource-shape", "cpu.small"]);
    let said = created_id(&out);
    server.wait_for_state(&token, &said, JobState::Completed);
    assert_eq!(api_log(&server, &token, &said, &format!("{said}-0-0")), "said: hello\n");

    let out = lep.fails(&["job", "create", "--name", "nope", "-t", "nothing-here", "--resource-shape", "cpu.small"]);
    assert!(out.contains("Failed to render template") && out.contains("you have no template 'nothing-here'"), "{out}");
}

#[test]
fn lep_workspace_login_keeps_jobdeck_as_the_current_workspace() {
    let server = Server::start_api_with_config(CONFIG);
    let lep = Lep::without_workspace();
    let url = server.api_url("");

    let out = lep.fails(&["job", "list"]);
    assert!(out.contains("LEPTON_WORKSPACE_ID"), "{out}");
    let out = lep.fails(&["workspace", "login", "-i", "jobdeck", "-t", "jd_not_a_token", "--workspace-url", &url]);
    assert!(out.contains("Invalid Workspace Access"), "{out}");

    // A personal token, made through the API as the console makes it.
    let body = serde_json::json!({"name": "lep on my laptop", "expires_in_days": 5});
    let (status, made) = server.call("POST", "/tokens", &server.admin_token, Some(&body));
    assert_eq!(status, 200, "{made}");
    let token = made["token"].as_str().unwrap().to_string();
    let expires_at = made["info"]["expires_at"].as_i64().unwrap();
    let out = lep.ok(&["workspace", "login", "-i", "jobdeck", "-t", &token, "--workspace-url", &url]);
    assert!(out.contains("Logged in to your workspace jobdeck") && out.contains("self-hosted"), "{out}");
    // `lep` found its token in `GET /tokens` by the masked value and keeps
    // its expiry, which it warns about from ten days before.
    let record = std::fs::read_to_string(lep.home.path().join(".cache/lepton/workspace_info.yaml")).unwrap();
    assert!(record.contains(&format!("token_expires_at: {expires_at}")), "{record}");
    let out = lep.ok(&["workspace", "list"]);
    assert!(out.contains("Current workspace: jobdeck") && out.contains(&url), "{out}");
    // The name above the id, read from the API's base path at login.
    assert_eq!(out.matches("│ jobdeck ").count(), 2, "the workspace has its display name:\n{out}");

    // Every later command uses the stored workspace.
    let out = lep.ok(&[
        "job",
        "create",
        "--name",
        "after-login",
        "--resource-shape",
        "cpu.small",
        "--command",
        "echo logged in",
    ]);
    let id = created_id(&out);
    assert!(out.contains("Workspace token will expire in 5 day(s)"), "{out}");
    server.wait_for_state(&server.admin_token, &id, JobState::Completed);
    let out = lep.ok(&["job", "log", "-i", &id]);
    assert!(out.contains("logged in"), "{out}");
}
