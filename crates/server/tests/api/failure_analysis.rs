//! `GET /jobs/{id}/failure-analysis` on jobs that really fail: real
//! processes under the real supervisor print a Python traceback, a CUDA
//! out-of-memory error or an NCCL error, run out of memory under a cgroup
//! limit, run past their deadline, name a command that does not exist, or
//! never leave the queue. Each must get the right class, suggestion and log
//! excerpt — and the class must drive "disable retry on program error".

use crate::common;

use axum::http::StatusCode;
use common::{sh_job, small_cluster, TestApp};
use serde_json::{json, Value};

const PYTHON: &str = "/usr/bin/python3";

/// A job running a Python program.
fn python_job(name: &str, program: &str) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {
            "resource_shape": "cpu.small",
            "backoff_limit": 0,
            "container": {"image": "busybox", "command": [PYTHON, "-c", program]}
        }
    })
}

async fn analysis(app: &TestApp, id: &str) -> Value {
    let res = app.get(&format!("/api/v2/jobs/{id}/failure-analysis")).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    res.json()
}

/// The texts of the excerpt of `stream`.
fn excerpt(stream: &Value) -> Vec<String> {
    stream["lines"].as_array().unwrap().iter().map(|l| l["text"].as_str().unwrap().to_string()).collect()
}

/// The text of line `number` of a replica's log, read through the range API.
async fn line_text(app: &TestApp, id: &str, replica: &str, number: u64) -> String {
    let res = app.get(&format!("/api/v2/jobs/{id}/replicas/{replica}/log?from={number}&to={number}")).await;
    res.json()["lines"][0]["text"].as_str().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_traceback_is_a_program_error_that_stops_retries() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let program = "print('loading data')\nprint('epoch 1 loss 0.9')\ndef configure(lr):\n    raise ValueError('learning rate must be positive, got ' + str(lr))\nconfigure(-1)\n";
    let mut job = python_job("traceback", program);
    job["spec"]["backoff_limit"] = json!(3);
    job["spec"]["disable_retry_on_program_error"] = json!(true);
    let id = app.create_job(&app.admin_token, &job).await;
    let failed = app.wait_state(&id, "Failed").await;
    assert_eq!(failed["status"]["reason"], "ProgramError");
    assert_eq!(app.replicas(&id).await.len(), 1, "no retry after a program error");

    let a = analysis(&app, &id).await;
    assert_eq!(a["err_class"], "ERR_PROGRAM");
    assert_eq!(a["program_error"], true);
    assert!(a["summary"].as_str().unwrap().starts_with("Replica 0 (attempt 1) exited with code 1"), "{a:#}");
    assert!(a["summary"].as_str().unwrap().contains("ValueError: learning rate must be positive, got -1"), "{a:#}");
    assert!(a["summary"].as_str().unwrap().contains("Retry on program error is disabled"), "{a:#}");
    assert!(a["suggestion"].as_str().unwrap().starts_with("Fix the error the log excerpt shows"), "{a:#}");
    let stream = &a["log_streams"][0];
    assert_eq!(stream["replica_id"], format!("{id}-0-0"));
    assert_eq!(stream["pattern"], "Python traceback");
    let lines = excerpt(stream);
    assert!(lines.contains(&"Traceback (most recent call last):".to_string()), "{lines:?}");
    assert!(lines.contains(&"epoch 1 loss 0.9".to_string()), "context before the error: {lines:?}");
    // The error line is the exception, by its number in the real log.
    let error_line = stream["error_line"].as_u64().unwrap();
    assert_eq!(
        line_text(&app, &id, &format!("{id}-0-0"), error_line).await,
        "ValueError: learning rate must be positive, got -1"
    );
    assert_eq!(a["failed_replicas"][0]["exit_code"], 1);
    assert_eq!(a["failed_replicas"][0]["err_class"], "ERR_PROGRAM");
    assert_eq!(a["timeline"].as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cuda_out_of_memory_says_to_shrink_the_batch() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    // What PyTorch prints, from a real process (there is no GPU here).
    let program = "import sys\nclass OutOfMemoryError(RuntimeError): pass\nOutOfMemoryError.__module__ = 'torch'\n\
print('step 10 loss 2.31')\n\
raise OutOfMemoryError('CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 3.12 GiB is free.')\n";
    let id = app.create_job(&app.admin_token, &python_job("cuda-oom", program)).await;
    app.wait_state(&id, "Failed").await;
    let a = analysis(&app, &id).await;
    assert_eq!(a["err_class"], "ERR_CUDA_OOM");
    assert_eq!(a["program_error"], true);
    assert!(a["summary"].as_str().unwrap().contains("ran out of GPU memory"), "{a:#}");
    assert!(a["suggestion"].as_str().unwrap().contains("batch size"), "{a:#}");
    let stream = &a["log_streams"][0];
    assert_eq!(stream["pattern"], "CUDA out of memory");
    let error_line = stream["error_line"].as_u64().unwrap();
    let text = line_text(&app, &id, &format!("{id}-0-0"), error_line).await;
    assert!(text.starts_with("torch.OutOfMemoryError: CUDA out of memory."), "{text}");
    assert!(excerpt(stream).contains(&"step 10 loss 2.31".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_nccl_error_is_infrastructure_so_it_is_retried_even_with_program_retries_off() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let script = "echo 'rank 1 ready'; echo 'torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error' >&2; exit 1";
    let mut job = sh_job("nccl", script);
    job["spec"]["backoff_limit"] = json!(1);
    job["spec"]["disable_retry_on_program_error"] = json!(true);
    let id = app.create_job(&app.admin_token, &job).await;
    let failed = app.wait_state(&id, "Failed").await;
    assert_eq!(failed["status"]["reason"], "BackoffLimitExceeded", "retried, not stopped as a program error");
    assert_eq!(app.replicas(&id).await.len(), 2);
    let a = analysis(&app, &id).await;
    assert_eq!((a["err_class"].as_str(), a["program_error"].as_bool()), (Some("ERR_NCCL"), Some(false)));
    assert!(a["suggestion"].as_str().unwrap().contains("NCCL_DEBUG=INFO"), "{a:#}");
    // Both failed attempts are listed, first failure first, each explained.
    let failed: Vec<&str> =
        a["failed_replicas"].as_array().unwrap().iter().map(|f| f["replica_id"].as_str().unwrap()).collect();
    assert_eq!(failed, [format!("{id}-0-0"), format!("{id}-0-1")]);
    assert_eq!(a["log_streams"].as_array().unwrap().len(), 2);
    let replica = &app.replicas(&id).await[0];
    assert_eq!(replica["status"]["message"], "the command exited with code 1 (NCCL error)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_shows_what_each_replica_was_doing() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let mut job =
        sh_job("slowpoke", "echo starting; i=0; while true; do i=$((i+1)); echo \"step $i\"; sleep 0.2; done");
    job["spec"]["active_deadline_seconds"] = json!(2);
    let id = app.create_job(&app.admin_token, &job).await;
    let failed = app.wait_state(&id, "Failed").await;
    assert_eq!(failed["status"]["reason"], "DeadlineExceeded");
    let a = analysis(&app, &id).await;
    assert_eq!((a["err_class"].as_str(), a["program_error"].as_bool()), (Some("ERR_DEADLINE"), Some(false)));
    assert!(a["summary"].as_str().unwrap().contains("active deadline of 2 s"), "{a:#}");
    assert!(a["suggestion"].as_str().unwrap().contains("active_deadline_seconds"), "{a:#}");
    let stream = &a["log_streams"][0];
    assert_eq!(stream["pattern"], "Last lines of the log");
    assert!(excerpt(stream).last().unwrap().starts_with("step "), "{stream:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_oom_kill_names_its_victim_where_memory_can_be_limited() {
    let app = TestApp::with_config(|config| {
        small_cluster(2.0)(config);
        config.shapes[0].memory_mb = 64;
    })
    .await;
    let program = "print('allocating')\nchunks = []\nwhile True:\n    chunks.append(b'x' * (8 << 20))\n";
    let id = app.create_job(&app.admin_token, &python_job("hungry", program)).await;
    app.wait_job(&id, "finished", |j| matches!(j["status"]["state"].as_str(), Some("Failed" | "Completed"))).await;
    let events = app.events(&id).await;
    let note = events.iter().find(|e| e["reason"] == "Executor").expect("an executor event")["message"]
        .as_str()
        .unwrap()
        .to_string();
    let a = analysis(&app, &id).await;
    if !note.contains("is limited to its shape's") {
        // Without cgroups Python raises MemoryError itself, or succeeds in
        // allocating: the classification of a recorded kill is covered by
        // the unit tests of `failure::analysis` and `cgroup`.
        assert!(note.contains("memory is not limited"), "{note}");
        return;
    }
    assert_eq!(a["err_class"], "ERR_OOM", "{a:#}");
    assert_eq!(a["program_error"], false);
    let event = &a["job_failure_by_node_event"][0];
    assert_eq!(event["node_event_name"], "OOM", "Lepton's name for the event");
    assert_eq!(event["replica_id"], format!("{id}-0-0"));
    assert!(a["summary"].as_str().unwrap().contains("more memory than the 64 MiB its shape cpu.small allows"), "{a:#}");
    assert!(a["suggestion"].as_str().unwrap().contains("more than 64 MiB"), "{a:#}");
    // The kernel names the process it killed when its log is readable
    // (it is on the development machine; say so when it is not).
    match event["victim"].as_str() {
        Some(victim) => assert!(victim.starts_with("python3 (pid "), "{victim}"),
        None => eprintln!("the kernel log is not readable here, so the OOM victim is not named"),
    }
    let stream = &a["log_streams"][0];
    assert_eq!(stream["pattern"], "Out of host memory");
    let error_line = stream["error_line"].as_u64().unwrap();
    let text = line_text(&app, &id, &format!("{id}-0-0"), error_line).await;
    assert!(
        text.starts_with("jobdeck: the replica was killed (OOM): it used more memory than the 64 MiB its shape allows"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_command_is_a_configuration_error() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let mut missing = python_job("no-binary", "");
    missing["spec"]["container"]["command"] = json!(["/nonexistent/trainer", "--epochs", "3"]);
    let missing = app.create_job(&app.admin_token, &missing).await;
    let mut typo = sh_job("typo", "echo preparing; trian.py --epochs 3");
    typo["spec"]["backoff_limit"] = json!(0);
    let typo = app.create_job(&app.admin_token, &typo).await;
    for id in [&missing, &typo] {
        app.wait_state(id, "Failed").await;
        let a = analysis(&app, id).await;
        assert_eq!((a["err_class"].as_str(), a["program_error"].as_bool()), (Some("ERR_CONFIG"), Some(true)), "{a:#}");
        assert!(a["suggestion"].as_str().unwrap().contains("spec.container.command"), "{a:#}");
        assert_eq!(a["log_streams"][0]["pattern"], "Command not found", "{a:#}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_timeout_says_what_the_job_waited_for() {
    let app = TestApp::with_config(small_cluster(1.0)).await;
    let blocker = app.create_job(&app.admin_token, &sh_job("blocker", "sleep 60")).await;
    app.wait_state(&blocker, "Running").await;
    let mut waiting = sh_job("waiting", "echo never");
    waiting["spec"]["max_queued_duration_seconds"] = json!(1);
    let waiting = app.create_job(&app.admin_token, &waiting).await;
    let failed = app.wait_state(&waiting, "Failed").await;
    assert_eq!(failed["status"]["reason"], "MaxQueuedDurationExceeded");
    let a = analysis(&app, &waiting).await;
    assert_eq!(a["err_class"], "ERR_QUEUE_TIMEOUT");
    assert!(a["summary"].as_str().unwrap().contains("waiting for capacity"), "{a:#}");
    assert!(a["suggestion"].as_str().unwrap().contains("smaller shape"), "{a:#}");
    assert_eq!(a["log_streams"], json!([]));
    let res = app
        .call(
            axum::http::Method::PATCH,
            &format!("/api/v2/jobs/{blocker}"),
            &app.admin_token,
            Some(&json!({"spec": {"stopped": true}})),
        )
        .await;
    assert_eq!(res.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_did_not_fail_has_nothing_to_explain() {
    let app = TestApp::with_config(small_cluster(2.0)).await;
    let id = app.create_job(&app.admin_token, &sh_job("fine", "echo ok")).await;
    app.wait_state(&id, "Completed").await;
    let a = analysis(&app, &id).await;
    assert_eq!((a["err_class"].as_str(), a["suggestion"].as_str()), (Some(""), Some("")));
    assert_eq!(a["failed_replicas"], json!([]));
    assert_eq!(a["timeline"][0]["phase"], "succeeded");
}
