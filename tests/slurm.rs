//! The Slurm executor against a real one-node Slurm cluster (issue 19):
//! munge, slurmctld and slurmd from Debian, started by
//! `scripts/setup.sh --slurm` (scripts/slurm-up.sh), and the real `jobdeck
//! serve`. Jobs that must be seen running wait at a gate file the test
//! creates; nothing waits on a clock.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use jobdeck_e2e::{reason, wait_for, JobState, Server};
use serde_json::{json, Value};

/// The longest a wait in these tests may take.
const LIMIT: Duration = Duration::from_secs(90);

/// The tests share one small cluster: one at a time, so each sees Slurm
/// schedule its own jobs. The guard is held for the whole test.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static CLUSTER: std::sync::Mutex<()> = std::sync::Mutex::new(());
    CLUSTER.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A Slurm server whose node group is larger than the one-node cluster, so
/// Jobdeck admits what Slurm then queues; polls Slurm every 200 ms.
fn server(extra: &str) -> Server {
    let config = format!(
        "[executor]\nkind = \"slurm\"\n\n[executor.slurm]\npoll_interval_ms = 200\nretry_backoff_seconds = 1\n{extra}\n\n\
         [[node_groups]]\nname = \"debug\"\ncpu = 64\nmemory_mb = 262144\n\n\
         [[shapes]]\nname = \"cpu.small\"\ncpu = 1\nmemory_mb = 256\n\n\
         [[shapes]]\nname = \"cpu.node\"\ncpu = {cpus}\nmemory_mb = 512\n\n\
         [[shapes]]\nname = \"mem.tiny\"\ncpu = 1\nmemory_mb = 64\n",
        cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2),
    );
    Server::start_api_with_config(&config)
}

fn job(name: &str, script: &str) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {
            "resource_shape": "cpu.small",
            "backoff_limit": 0,
            "container": {"image": "ignored-without-pyxis", "command": ["/bin/sh", "-c", script]}
        }
    })
}

/// What Slurm still has queued or running under a job's name.
fn slurm_jobs_of(id: &str) -> String {
    let out = Command::new("squeue")
        .args(["-h", "-t", "PENDING,RUNNING,CONFIGURING,COMPLETING", "--name", &format!("jobdeck-{id}"), "-o", "%i %T"])
        .output()
        .expect("squeue runs (scripts/setup.sh --slurm)");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn scontrol_field(slurm_job: &str, field: &str) -> String {
    let out = Command::new("scontrol").args(["show", "job", "-o", slurm_job]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.split(' ').find_map(|w| w.strip_prefix(&format!("{field}="))).unwrap_or("").to_string()
}

fn gate(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

#[test]
fn an_indexed_job_runs_each_index_once_as_a_task_of_one_array() {
    let _cluster = one_at_a_time();
    let scratch = tempfile::tempdir().unwrap();
    let server = server("");
    let token = &server.admin_token;
    let marks = scratch.path().display();
    let mut spec = job(
        "indexed",
        &format!("echo index=$JOB_COMPLETION_INDEX of $JOB_COMPLETIONS task=$SLURM_ARRAY_TASK_ID; echo $JOB_COMPLETION_INDEX >> {marks}/ran"),
    );
    spec["spec"]["completions"] = json!(3);
    spec["spec"]["parallelism"] = json!(2);
    let id = server.create_job(token, &spec);
    server.wait_for_state(token, &id, JobState::Completed);
    let list = server.replicas(token, &id);
    assert_eq!(list.len(), 3, "{list:?}");
    let array = list[0]["status"]["executor_id"].as_str().unwrap().split('_').next().unwrap().to_string();
    for (index, replica) in list.iter().enumerate() {
        let status = &replica["status"];
        assert_eq!((status["completion_index"].as_i64(), status["attempt"].as_i64()), (Some(index as i64), Some(0)));
        assert_eq!(status["executor_id"], format!("{array}_{index}"), "one array: {status}");
        assert!(status["node"]["name"].as_str().is_some_and(|n| !n.is_empty()), "{status}");
        let text = server.log_text(token, &id, replica["id"].as_str().unwrap());
        assert!(text.contains(&format!("index={index} of 3 task={index}")), "{text}");
    }
    let mut ran: Vec<String> =
        std::fs::read_to_string(scratch.path().join("ran")).unwrap().lines().map(String::from).collect();
    ran.sort();
    assert_eq!(ran, ["0", "1", "2"], "each index ran once");
    assert_eq!(scontrol_field(&array, "ArrayTaskThrottle"), "2", "parallelism is the array's throttle");
    // Every rank on one timeline: Slurm's lines carry the time they were
    // copied, and the merged view says its order is approximate.
    let (status, merged) = server.call("GET", &format!("/jobs/{id}/merged-log"), token, None);
    assert_eq!(status, 200, "{merged}");
    assert_eq!(merged["approximate_order"], json!(true), "{merged}");
    let texts: Vec<&str> = merged["lines"].as_array().unwrap().iter().filter_map(|l| l["text"].as_str()).collect();
    for index in 0..3 {
        assert!(texts.iter().any(|t| t.starts_with(&format!("index={index} "))), "every rank's line: {texts:?}");
    }
}

/// A job's variables never reach `sbatch` or Slurm's tools (issue 32): a
/// name Slurm or the loader reads is a 422 naming it, and a value built to
/// run a command wherever a shell reads it as code reaches the program byte
/// for byte without running anything.
#[test]
fn a_jobs_variables_reach_its_program_as_data_and_never_slurms_tools() {
    let _cluster = one_at_a_time();
    let scratch = tempfile::tempdir().unwrap();
    let server = server("");
    let token = &server.admin_token;
    // The one-node cluster is this machine, and there is no pyxis: every
    // page of the console says that jobs run beside the server.
    let (_, workspace) = server.call("GET", "/workspace", token, None);
    let warning = workspace["isolation_warning"].as_str().unwrap_or_default();
    assert!(warning.contains("this server's host is one of them"), "{workspace}");
    for name in ["SBATCH_EXPORT", "SLURM_CONF", "LD_PRELOAD", "PATH"] {
        let mut spec = job("attack", "true");
        spec["spec"]["envs"] = json!([{"name": name, "value": "/tmp/x"}]);
        let (status, body) = server.call("POST", "/jobs", token, Some(&spec));
        assert_eq!(status, 422, "{name}: {body}");
        assert!(body.to_string().contains("spec.envs[0].name"), "{name}: {body}");
    }
    let marker = scratch.path().join("ran-from-a-value");
    let hostile = format!("it's\n$(touch {m}) `touch {m}`; touch {m}", m = marker.display());
    let mut spec = job("values", "printf '<%s>' \"$HOSTILE\"");
    spec["spec"]["envs"] = json!([{"name": "HOSTILE", "value": hostile}]);
    let id = server.create_job(token, &spec);
    server.wait_for_state(token, &id, JobState::Completed);
    let text = server.log_text(token, &id, &format!("{id}-0-0"));
    assert!(text.contains(&format!("<{hostile}>")), "the value arrived intact:\n{text}");
    assert!(!marker.exists(), "a value ran a command");
}

#[test]
fn a_failing_job_is_a_program_error_and_a_retry_waits_with_begin() {
    let _cluster = one_at_a_time();
    let scratch = tempfile::tempdir().unwrap();
    let server = server("");
    let token = &server.admin_token;
    let failing = server.create_job(
        token,
        &job("failing", "echo 'Traceback (most recent call last):'; echo 'ValueError: bad input' >&2; exit 3"),
    );
    server.wait_for_state(token, &failing, JobState::Failed);
    let replica = &server.replicas(token, &failing)[0]["status"];
    assert_eq!((replica["reason"].as_str(), replica["exit_code"].as_i64()), (Some("Error"), Some(3)), "{replica}");
    let found = server.failure_analysis(token, &failing);
    assert_eq!(found["err_class"], "ERR_PROGRAM", "{found}");

    // Fails once, then succeeds: the retry is a new submission of its index.
    let counter = scratch.path().join("tries");
    let mut spec = job(
        "retried",
        &format!("echo try >> {c}; [ $(wc -l < {c}) -ge 2 ] || exit 1; echo second try", c = counter.display()),
    );
    spec["spec"]["backoff_limit"] = json!(1);
    let id = server.create_job(token, &spec);
    server.wait_for_state(token, &id, JobState::Completed);
    let list = server.replicas(token, &id);
    assert_eq!(list.len(), 2, "{list:?}");
    assert_eq!(list[0]["status"]["reason"], "Error");
    assert_eq!(list[1]["status"]["reason"], "Completed");
    let first = list[0]["status"]["executor_id"].as_str().unwrap().to_string();
    let second = list[1]["status"]["executor_id"].as_str().unwrap().to_string();
    assert_ne!(first.split('_').next(), second.split('_').next(), "the retry is its own Slurm job");
    // Held back by the back-off: Slurm recorded a begin time after the
    // first attempt's end.
    assert!(server.log_text(token, &id, list[1]["id"].as_str().unwrap()).contains("second try"));
}

#[test]
fn a_job_over_its_memory_is_killed_and_classified_as_out_of_memory() {
    let _cluster = one_at_a_time();
    let server = server("");
    let token = &server.admin_token;
    let mut spec = job(
        "memory-hog",
        "echo filling; python3 -c 'import time\nx = []\nwhile True:\n    x.append(bytearray(16 << 20)); time.sleep(0.02)'",
    );
    spec["spec"]["resource_shape"] = json!("mem.tiny");
    let id = server.create_job(token, &spec);
    server.wait_for_state(token, &id, JobState::Failed);
    let found = server.failure_analysis(token, &id);
    assert_eq!(found["err_class"], "ERR_OOM", "{found}");
    let replica = &server.replicas(token, &id)[0];
    let text = server.log_text(token, &id, replica["id"].as_str().unwrap());
    assert!(text.contains("memory limit"), "Slurm's words are in the log: {text}");
}

#[test]
fn the_deadline_is_slurms_time_limit_and_ends_the_job() {
    let _cluster = one_at_a_time();
    let server = server("");
    let token = &server.admin_token;
    let mut spec = job("deadline", "echo started; exec sleep 600");
    spec["spec"]["active_deadline_seconds"] = json!(3);
    let id = server.create_job(token, &spec);
    let slurm_job = wait_for("the job to reach Slurm", LIMIT, || {
        server.replicas(token, &id).first()?["status"]["executor_id"].as_str().map(String::from)
    });
    // Slurm counts whole minutes: 3 s is one.
    assert_eq!(scontrol_field(&slurm_job, "TimeLimit"), "00:01:00");
    let failed = server.wait_for_state(token, &id, JobState::Failed);
    assert_eq!(reason(&failed), "DeadlineExceeded", "{failed:?}");
    assert_eq!(server.failure_analysis(token, &id)["err_class"], "ERR_DEADLINE");
    wait_for("Slurm to end it", LIMIT, || slurm_jobs_of(&id).is_empty().then_some(()));
}

#[test]
fn a_stopped_job_leaves_nothing_in_slurm_and_a_queued_one_says_why_it_waits() {
    let _cluster = one_at_a_time();
    let scratch = tempfile::tempdir().unwrap();
    let server = server("");
    let token = &server.admin_token;
    let started = gate(scratch.path(), "started");
    let mut whole = job("whole-node", &format!("touch {started}; exec sleep 600"));
    whole["spec"]["resource_shape"] = json!("cpu.node");
    let holder = server.create_job(token, &whole);
    wait_for("the first job to run", LIMIT, || Path::new(&started).exists().then_some(()));
    server.wait_for_state(token, &holder, JobState::Running);

    // Jobdeck admits it; Slurm has no CPU left and says so.
    let queued = server.create_job(token, &job("queued", "echo finally"));
    let issue = wait_for("Slurm's reason", LIMIT, || {
        let issue = server.replicas(token, &queued).first()?["status"]["readiness_issue"].clone();
        (issue["reason"] == "NoCapacity").then_some(issue)
    });
    assert!(
        issue["message"].as_str().unwrap().contains("Slurm's queue")
            && issue["message"].as_str().unwrap().contains("(Resources)"),
        "{issue}"
    );

    for id in [&holder, &queued] {
        let (status, _) =
            server.call("PATCH", &format!("/jobs/{id}"), token, Some(&json!({"spec": {"stopped": true}})));
        assert_eq!(status, 200);
    }
    for id in [&holder, &queued] {
        server.wait_for_state(token, id, JobState::Stopped);
        assert_eq!(slurm_jobs_of(id), "", "nothing of {id} is left in Slurm");
    }
    assert_eq!(server.replicas(token, &holder)[0]["status"]["reason"], "Stopped");
}

#[test]
fn running_slurm_jobs_are_found_again_after_a_kill_9_of_the_server() {
    let _cluster = one_at_a_time();
    let scratch = tempfile::tempdir().unwrap();
    let mut first = server("");
    let token = first.admin_token.clone();
    let (started, release, runs) =
        (gate(scratch.path(), "started"), gate(scratch.path(), "release"), gate(scratch.path(), "runs"));
    let script = format!(
        "echo before; echo run >> {runs}; touch {started}; while [ ! -e {release} ]; do sleep 0.1; done; echo after"
    );
    let id = first.create_job(&token, &job("adopted", &script));
    wait_for("the job to run", LIMIT, || Path::new(&started).exists().then_some(()));
    first.wait_for_state(&token, &id, JobState::Running);
    // (Lepton's log query: a plain log request would follow the running
    // replica until it ends.)
    wait_for("the first line to be copied", LIMIT, || {
        let (_, found) = first.call("GET", &format!("/logs?job={id}&q=before"), &token, None);
        (found["data"]["result"][0]["values"].as_array()?.len() == 1).then_some(())
    });

    first.kill();
    let config = first.data_dir.parent().unwrap().join("jobdeck.toml");
    let second = Server::start_api_in(&first.data_dir.clone(), &["--config", config.to_str().unwrap()]);
    std::fs::write(&release, "").unwrap();
    second.wait_for_state(&token, &id, JobState::Completed);
    assert_eq!(second.replicas(&token, &id).len(), 1, "nothing was submitted twice");
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "run\n");
    let text = second.log_text(&token, &id, &format!("{id}-0-0"));
    assert_eq!(text.matches("before").count(), 1, "no line copied twice: {text}");
    assert!(text.contains("after"), "{text}");
}

/// A server that died after storing a failure but before ending the run
/// for it: the next one judges the stored failures against the limits
/// before it submits anything, so a job out of retries fails instead of
/// running again. The crash window is made by hand: the first server is
/// killed with the replica running, its Slurm job cancelled, and its attempt
/// stored as failed, as the first server would have stored it.
#[test]
fn a_failure_stored_before_a_kill_9_ends_the_run_on_restart() {
    let _cluster = one_at_a_time();
    let scratch = tempfile::tempdir().unwrap();
    let mut first = server("");
    let token = first.admin_token.clone();
    let (started, runs) = (gate(scratch.path(), "started"), gate(scratch.path(), "runs"));
    let never = gate(scratch.path(), "never");
    let script = format!("echo run >> {runs}; touch {started}; while [ ! -e {never} ]; do sleep 0.1; done");
    let id = first.create_job(&token, &job("out-of-retries", &script));
    wait_for("the job to run", LIMIT, || Path::new(&started).exists().then_some(()));
    first.wait_for_state(&token, &id, JobState::Running);

    first.kill();
    let cancelled = Command::new("scancel").args(["--name", &format!("jobdeck-{id}")]).status().unwrap();
    assert!(cancelled.success());
    wait_for("Slurm to let the job go", LIMIT, || slurm_jobs_of(&id).is_empty().then_some(()));
    let db = rusqlite::Connection::open(first.data_dir.join("jobdeck.db")).unwrap();
    let failed = db
        .execute(
            "UPDATE replicas SET phase = 'failed', reason = 'Error', exit_code = 1, message = 'exited with code 1',
                end_time = updated_at WHERE job_id = ?1",
            [&id],
        )
        .unwrap();
    assert_eq!(failed, 1, "the one attempt is stored failed");
    drop(db);

    let config = first.data_dir.parent().unwrap().join("jobdeck.toml");
    let second = Server::start_api_in(&first.data_dir.clone(), &["--config", config.to_str().unwrap()]);
    let ended = second.wait_for_state(&token, &id, JobState::Failed);
    assert_eq!(reason(&ended), "BackoffLimitExceeded", "{ended:#?}");
    assert_eq!(second.replicas(&token, &id).len(), 1, "nothing was submitted again");
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "run\n");
    assert!(slurm_jobs_of(&id).is_empty());
}

#[test]
fn slurm_render_prints_the_batch_script_of_a_multi_node_job() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("jobdeck.toml");
    std::fs::write(
        &config,
        "[executor]\nkind = \"slurm\"\n[executor.slurm]\npartitions = { gpu-a = \"gpu\" }\nlog_dir = \"/shared/jobdeck\"\n\
         [[node_groups]]\nname = \"gpu-a\"\ncpu = 32\nmemory_mb = 262144\ngpus = 8\nnodes = 4\n\
         [[shapes]]\nname = \"gpu.8x\"\ncpu = 32\nmemory_mb = 200000\ngpus = 8\n",
    )
    .unwrap();
    let file = dir.path().join("job.json");
    let spec = json!({
        "metadata": {"name": "pretrain"},
        "spec": {"resource_shape": "gpu.8x", "workers": 2,
                 "container": {"image": "nvcr.io/nvidia/pytorch:25.08-py3", "command": ["torchrun", "train.py"]},
                 "envs": [{"name": "WANDB_KEY", "value_from": {"secret_name_ref": "WANDB"}}]}
    });
    std::fs::write(&file, spec.to_string()).unwrap();
    let out = Command::new(jobdeck_e2e::jobdeck_bin())
        .args(["slurm", "render", "--file", file.to_str().unwrap(), "--config", config.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    for part in [
        "'--partition=gpu'",
        "'--nodes=2'",
        "'--ntasks-per-node=1'",
        "'--gres=gpu:8'",
        "'--output=/shared/jobdeck/pretrain/%A_%a.out'",
        "#   export WANDB_KEY='<secret WANDB>'",
        "#   export WORLD_SIZE='2'",
        "jobdeck-worker \"$variables\" 'torchrun'",
        "srun --kill-on-bad-exit=1",
        "MASTER_ADDR=\"$(scontrol show hostnames",
        "'torchrun' 'train.py'",
    ] {
        assert!(text.contains(part), "missing {part} in:\n{text}");
    }
}

/// A job's own termination grace period holds on Slurm, whose `KillWait`
/// (5 s on the test cluster) is the whole cluster's: SIGTERM through
/// `scancel --signal`, then `scancel` when the job's 8 s are over, which
/// sends SIGKILL after `KillWait`. The batch script outlives the SIGTERM:
/// were it to end, Slurm would call the job done and leave a program that
/// handles SIGTERM running.
#[test]
fn a_stopped_slurm_job_gets_its_jobs_grace_period_between_sigterm_and_sigkill() {
    let _cluster = one_at_a_time();
    let scratch = tempfile::tempdir().unwrap();
    let server = server("");
    let token = &server.admin_token;
    let mut spec = job("graceful", &jobdeck_e2e::grace_probe_script(scratch.path()));
    spec["spec"]["termination_grace_period_seconds"] = json!(8);
    let (id, gap) = jobdeck_e2e::stop_grace_probe(&server, &spec, scratch.path());
    wait_for("Slurm to end it", LIMIT, || slurm_jobs_of(&id).is_empty().then_some(()));
    let (_, events) = server.call("GET", &format!("/jobs/{id}/events"), token, None);
    assert!((7.0..20.0).contains(&gap), "SIGKILL came {gap:.2} s after SIGTERM, not 8 to 13 s: {events}");
    // Nothing of the program is left running.
    let probe = scratch.path().join("alive").display().to_string();
    let left = || Command::new("pgrep").args(["-f", &probe]).output().map(|o| o.stdout.is_empty()).unwrap_or(false);
    wait_for("the program to be gone", LIMIT, || left().then_some(()));
}

/// Seed 004's replaced secret on Slurm: while a job's first attempt runs, its
/// variable is pointed at another secret (`PATCH /jobs/{id}`); the attempt
/// keeps the value it started with, and the retry, a new submission, reads
/// the new one through its environment file.
#[test]
fn a_secret_replaced_while_a_slurm_job_runs_reaches_its_next_attempt() {
    let _cluster = one_at_a_time();
    let scratch = tempfile::tempdir().unwrap();
    let server = server("");
    let token = &server.admin_token;
    let secrets = json!([{"name": "OLD_TOKEN", "value": "old-value"}, {"name": "NEW_TOKEN", "value": "new-value"}]);
    assert_eq!(server.call("POST", "/usersecrets", token, Some(&secrets)).0, 200);
    let (marker, release) = (gate(scratch.path(), "first-ran"), gate(scratch.path(), "release"));
    let mut spec = job(
        "rotated",
        &format!(
            "echo token=$TOKEN; [ -e '{marker}' ] && exit 0; touch '{marker}'; \
             while [ ! -e '{release}' ]; do sleep 0.1; done; echo still=$TOKEN; exit 1"
        ),
    );
    spec["spec"]["backoff_limit"] = json!(1);
    spec["spec"]["envs"] = json!([{"name": "TOKEN", "value_from": {"secret_name_ref": "OLD_TOKEN"}}]);
    let id = server.create_job(token, &spec);
    let first = format!("{id}-0-0");
    // The replica's log is there once Slurm started the attempt; without
    // `follow=false` a running attempt's log streams until it ends.
    let log = format!("/jobs/{id}/replicas/{first}/log?follow=false");
    wait_for("the first attempt's value", LIMIT, || {
        let (status, text) = server.call("GET", &log, token, None);
        (status == 200 && text.as_str().is_some_and(|t| t.contains("token=old-value"))).then_some(())
    });

    let (_, job) = server.call("GET", &format!("/jobs/{id}"), token, None);
    let mut envs = job["spec"]["envs"].clone();
    envs[0]["value_from"]["secret_name_ref"] = json!("NEW_TOKEN");
    let (status, patched) = server.call("PATCH", &format!("/jobs/{id}"), token, Some(&json!({"spec": {"envs": envs}})));
    assert_eq!(status, 200, "{patched}");
    std::fs::write(&release, "").unwrap();
    server.wait_for_state(token, &id, JobState::Completed);
    assert!(server.log_text(token, &id, &first).contains("still=old-value"), "a running attempt keeps its value");
    let second = server.log_text(token, &id, &format!("{id}-0-1"));
    assert!(second.contains("token=new-value"), "{second}");
}

/// A rerun of a job's failed indexes is one array of just those task ids,
/// each task its original index (issue 38).
#[test]
fn a_rerun_of_the_failed_indexes_submits_an_array_of_only_them() {
    let _cluster = one_at_a_time();
    let scratch = tempfile::tempdir().unwrap();
    let server = server("");
    let token = &server.admin_token;
    let heal = gate(scratch.path(), "heal");
    // Index 1 fails until healed; one at a time, so the job fails on it and
    // the indexes after it never start.
    let mut spec = job(
        "shards",
        &format!("if [ $JOB_COMPLETION_INDEX = 1 ] && [ ! -e {heal} ]; then exit 3; fi; echo shard=$JOB_COMPLETION_INDEX of $JOB_COMPLETIONS"),
    );
    spec["spec"]["completions"] = json!(4);
    spec["spec"]["parallelism"] = json!(1);
    let id = server.create_job(token, &spec);
    server.wait_for_state(token, &id, JobState::Failed);
    let succeeded: Vec<i64> = server
        .replicas(token, &id)
        .iter()
        .filter(|r| r["status"]["phase"] == "succeeded")
        .map(|r| r["status"]["completion_index"].as_i64().unwrap())
        .collect();
    let (_, original) = server.call("GET", &format!("/jobs/{id}"), token, None);
    let failed: Vec<i64> = (0..4).filter(|i| !succeeded.contains(i)).collect();
    assert!(failed.contains(&1), "{original}");
    assert_eq!(original["status"]["rerun_indexes"], json!(failed), "{original}");

    std::fs::write(&heal, "").unwrap();
    let (status, rerun) = server.call("POST", &format!("/jobs/{id}/rerun?only=failed"), token, None);
    assert_eq!(status, 200, "{rerun}");
    let rerun_id = rerun["metadata"]["id"].as_str().unwrap().to_string();
    server.wait_for_state(token, &rerun_id, JobState::Completed);
    let replicas = server.replicas(token, &rerun_id);
    let ran: Vec<i64> = replicas.iter().map(|r| r["status"]["completion_index"].as_i64().unwrap()).collect();
    assert_eq!(ran, failed);
    for replica in &replicas {
        let index = replica["status"]["completion_index"].as_i64().unwrap();
        let task = replica["status"]["executor_id"].as_str().unwrap().split('_').nth(1).unwrap().to_string();
        assert_eq!(task, index.to_string(), "the array's task id is the index: {replica}");
        let text = server.log_text(token, &rerun_id, replica["id"].as_str().unwrap());
        assert!(text.contains(&format!("shard={index} of 4")), "{text}");
    }
    let (_, original) = server.call("GET", &format!("/jobs/{id}"), token, None);
    assert_eq!(original["status"]["reruns"], json!([rerun_id]));
}
