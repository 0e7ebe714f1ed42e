//! Faults, each against the real server (issue 20): the data directory's
//! disk fills up; the server is killed with SIGKILL in the middle of a burst
//! of creations; a replica's supervisor is killed. In each, nothing the
//! server acknowledged is lost and it keeps answering.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jobdeck_e2e::{wait_for, JobState, Server};
use serde_json::{json, Value};

/// A small tmpfs mounted for the test and unmounted when dropped (after the
/// server that uses it, which must be declared later so it drops first).
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(at: &Path, megabytes: u32) -> SmallDisk {
        std::fs::create_dir_all(at).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={megabytes}m,mode=0700"), "tmpfs"])
            .arg(at)
            .output()
            .expect("mount runs");
        assert!(
            out.status.success(),
            "this test fills a small tmpfs and needs root to mount it (CI runs as root): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        SmallDisk(at.to_path_buf())
    }

    /// Writes a file until the disk is full; returns its path.
    fn fill(&self) -> PathBuf {
        let path = self.0.join("filler");
        let mut file = std::fs::File::create(&path).unwrap();
        let block = vec![0u8; 64 * 1024];
        while file.write_all(&block).is_ok() {}
        let _ = file.sync_all();
        path
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn stopped_job(name: &str) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {"container": {"image": "busybox", "command": ["/bin/sh", "-c", "true"]}, "stopped": true}
    })
}

/// Every job id the server lists, over every page.
fn all_job_ids(server: &Server, token: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for page in 1.. {
        let (status, list) = server.call(
            "GET",
            &format!("/jobs?page={page}&page_size=500&job_query_mode=alive_and_archive"),
            token,
            None,
        );
        assert_eq!(status, 200, "{list}");
        let jobs = list["jobs"].as_array().unwrap();
        if jobs.is_empty() {
            break;
        }
        ids.extend(jobs.iter().map(|j| j["metadata"]["id"].as_str().unwrap().to_string()));
    }
    ids
}

#[test]
fn a_full_disk_refuses_new_jobs_clearly_and_loses_nothing_stored() {
    let temp = tempfile::tempdir().unwrap();
    let disk = SmallDisk::mount(&temp.path().join("disk"), 16);
    let data = disk.0.join("data");
    let mut server = Server::start_api_in(&data, &[]);
    let token = server.admin_token.clone();
    let mut acknowledged = Vec::new();
    for i in 0..5 {
        acknowledged.push(server.create_job(&token, &stopped_job(&format!("before-{i}"))));
    }

    let filler = disk.fill();
    // SQLite may still have room in pages it holds; creations go on until
    // the disk is really in the way, and each is either stored or refused.
    let mut refused = None;
    for i in 0..10_000 {
        let (status, body) = server.call("POST", "/jobs", &token, Some(&stopped_job(&format!("full-{i}"))));
        match status {
            200 => acknowledged.push(body["metadata"]["id"].as_str().unwrap().to_string()),
            _ => {
                refused = Some((status, body));
                break;
            }
        }
    }
    let (status, body) = refused.expect("a full disk refuses a creation at some point");
    assert_eq!(status, 507, "{body}");
    assert_eq!(body["code"], "storage_full", "{body}");
    assert!(body["message"].as_str().unwrap().contains("disk is full"), "{body}");

    // The server keeps answering, and lists everything it acknowledged.
    let (status, workspace) = server.call("GET", "/workspace", &token, None);
    assert_eq!(status, 200, "{workspace}");
    let listed: BTreeSet<String> = all_job_ids(&server, &token).into_iter().collect();
    let expected: BTreeSet<String> = acknowledged.iter().cloned().collect();
    assert_eq!(listed, expected);

    // Once there is room again, creations work again; and after a crash and
    // restart nothing acknowledged is missing.
    std::fs::remove_file(filler).unwrap();
    acknowledged.push(server.create_job(&token, &stopped_job("after")));
    server.kill();
    let server = Server::start_api_in(&data, &[]);
    let listed: BTreeSet<String> = all_job_ids(&server, &token).into_iter().collect();
    let expected: BTreeSet<String> = acknowledged.iter().cloned().collect();
    assert_eq!(listed, expected);
    drop(server);
    drop(disk);
}

/// Eight clients create jobs as fast as they can; the server is killed with
/// SIGKILL once 300 creations were acknowledged, while the clients are still
/// sending. After a restart every acknowledged job is there, each once, and
/// nothing is there that was not asked for.
#[test]
fn a_sigkill_during_a_burst_of_creations_loses_no_acknowledged_job() {
    let temp = tempfile::tempdir().unwrap();
    let data = temp.path().join("data");
    let mut server = Server::start_api_in(&data, &[]);
    let token = server.admin_token.clone();
    let api = server.api_url("/jobs");
    let acknowledged = Arc::new(Mutex::new(Vec::<String>::new()));
    let sent = Arc::new(Mutex::new(BTreeSet::<String>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..8)
        .map(|client| {
            let (api, token, acknowledged, sent, stop) =
                (api.clone(), token.clone(), acknowledged.clone(), sent.clone(), stop.clone());
            std::thread::spawn(move || {
                let agent: ureq::Agent = ureq::Agent::config_builder()
                    .http_status_as_error(false)
                    .timeout_global(Some(Duration::from_secs(10)))
                    .build()
                    .into();
                for i in 0.. {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let name = format!("burst-{client}-{i}");
                    sent.lock().unwrap().insert(name.clone());
                    let answer = agent
                        .post(&api)
                        .header("Authorization", &format!("Bearer {token}"))
                        .send_json(stopped_job(&name));
                    match answer {
                        Ok(response) if response.status().as_u16() == 200 => {
                            let body: Value = response.into_body().read_json().unwrap();
                            acknowledged.lock().unwrap().push(body["metadata"]["id"].as_str().unwrap().to_string());
                        }
                        // The server is gone: no more to send.
                        _ => break,
                    }
                }
            })
        })
        .collect();
    wait_for("the burst to reach 300 creations", Duration::from_secs(120), || {
        (acknowledged.lock().unwrap().len() >= 300).then_some(())
    });
    server.kill();
    stop.store(true, Ordering::SeqCst);
    for client in clients {
        client.join().unwrap();
    }

    let server = Server::start_api_in(&data, &[]);
    let stored = all_job_ids(&server, &token);
    let unique: BTreeSet<&String> = stored.iter().collect();
    assert_eq!(unique.len(), stored.len(), "a job is listed twice");
    let acknowledged = acknowledged.lock().unwrap();
    for id in acknowledged.iter() {
        assert!(unique.contains(id), "acknowledged job {id} is missing after the restart");
    }
    // Stored but unacknowledged is allowed (the answer was lost in the
    // crash), but only for names a client really sent, once each.
    let sent = sent.lock().unwrap();
    let mut names = BTreeSet::new();
    for id in &stored {
        let name = &id[..id.rfind('-').unwrap()];
        assert!(sent.contains(name), "{id} was never asked for");
        assert!(names.insert(name.to_string()), "two jobs for one request named {name}");
    }
}

/// A replica's supervisor killed with SIGKILL: the server notices, ends the
/// attempt as lost, and its replica process does not run on unsupervised.
#[test]
fn a_killed_supervisor_ends_its_attempt_and_leaves_no_replica_running() {
    let temp = tempfile::tempdir().unwrap();
    let data = temp.path().join("data");
    let server = Server::start_api_in(&data, &[]);
    let token = server.admin_token.clone();
    let job = json!({
        "metadata": {"name": "orphaned"},
        "spec": {"container": {"image": "busybox", "command": ["/bin/sh", "-c", "echo pid=$$; exec sleep 600"]}, "backoff_limit": 0}
    });
    let id = server.create_job(&token, &job);
    server.wait_for_state(&token, &id, JobState::Running);
    let pid = wait_for("the replica to print its pid", Duration::from_secs(60), || {
        let (_, log) = server.call("GET", &format!("/jobs/{id}/replicas/{id}-0-0/log?follow=false"), &token, None);
        log.as_str().and_then(|l| l.lines().find_map(|l| l.strip_prefix("pid=")).map(str::to_string))
    });
    let supervisors = jobdeck_e2e::live_supervisors(&data);
    assert_eq!(supervisors.len(), 1);
    let killed = Command::new("kill").args(["-KILL", &supervisors[0].to_string()]).status().unwrap();
    assert!(killed.success());

    let failed = server.wait_for_state(&token, &id, JobState::Failed);
    let (_, replicas) = server.call("GET", &format!("/jobs/{id}/replicas"), &token, None);
    assert_eq!(replicas[0]["status"]["phase"], "failed", "{replicas}\n{failed:?}");
    assert_eq!(replicas[0]["status"]["reason"], "Lost", "{replicas}");
    // The replica did not outlive its supervisor.
    wait_for(&format!("replica {pid} to end with its supervisor"), Duration::from_secs(30), || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let running = stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'));
        (!running).then_some(())
    });
}
