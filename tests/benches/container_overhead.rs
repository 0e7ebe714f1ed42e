//! Container overhead (issue 15): how long a replica takes from the moment
//! the executor starts its attempt to the first line its program prints, in
//! process mode and in container mode (podman with runc, the test image
//! already in the engine's store), against the real `jobdeck serve`; and in
//! container mode with a volume directory and a multi-line variable (mode
//! `inputs`: the bind and the podman secret isolation adds, issue 32); and
//! with a user namespace of its own per run (`userns`), on the test image
//! and on an image of 20,000 files (`files`, `files-userns`), where podman
//! may have to give every file of the image to the run's users.
//!
//! Each mode runs `REPLICAS` one-replica jobs one after another (default 20)
//! whose command prints one line and exits. Per replica it reads the
//! server's own stamps: the attempt's creation (`metadata.created_at`, when
//! the executor began it), its `start_time` (the process spawned, or the
//! container about to start) and the time of its first log line (`GET
//! /logs`, in ns); and, outside the server, the whole create → Completed
//! round trip as a client sees it. Reports p50 and p90 of each. Run with
//! `bench/container-overhead.sh`; `BENCH_SLURM=1` adds the Slurm executor
//! on the one-node test cluster (its start time is Slurm's, in whole
//! seconds; its first line is stamped when the output is copied, every
//! 200 ms here).

use std::time::{Duration, Instant};

use jobdeck_e2e::Server;
use jobdeck_e2e::{containers, JobState};
use serde_json::{json, Value};

fn replicas() -> usize {
    std::env::var("REPLICAS").ok().and_then(|v| v.parse().ok()).unwrap_or(20)
}

fn config(mode: &str) -> String {
    if mode == "slurm" {
        return "[executor]\nkind = \"slurm\"\n[executor.slurm]\npoll_interval_ms = 200\n\n\
                [[node_groups]]\nname = \"debug\"\ncpu = 4\nmemory_mb = 8192\n\n\
                [[shapes]]\nname = \"cpu.small\"\ncpu = 1\nmemory_mb = 256\n"
            .to_string();
    }
    // `inputs`: container mode where each job also mounts a directory of a
    // volume (opened without links and bound by the supervisor) and carries
    // a variable with a line break (a podman secret): the steps isolation
    // adds for such inputs (docs/security.md).
    let (mode, volumes) = match mode {
        "inputs" => ("container", format!("volumes = {{ scratch = \"{}\" }}\n", scratch().display())),
        "userns" | "files-userns" => ("container", "user_namespace = \"auto\"\n".to_string()),
        "files" => ("container", String::new()),
        other => (other, String::new()),
    };
    format!(
        "[executor.local]\nmode = \"{mode}\"\nengine = \"{}\"\nretry_backoff_seconds = 0\n{volumes}\n\
         [[node_groups]]\nname = \"local\"\ncpu = 4\nmemory_mb = 8192\n\n\
         [[shapes]]\nname = \"cpu.small\"\ncpu = 1\nmemory_mb = 1024\n",
        containers::ENGINE
    )
}

/// The volume of the `inputs` mode, with the directory its jobs mount.
fn scratch() -> &'static std::path::Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("data/set")).unwrap();
        dir
    })
    .path()
}

struct Sample {
    to_start: f64,
    to_first_line: f64,
    round_trip: f64,
}

/// An image of the test image's busybox and 20,000 files of 4 KiB (80 MB),
/// made once: a stand-in for a framework image's many files.
fn many_files_image() -> &'static str {
    const IMAGE: &str = "localhost/jobdeck-test/many-files:1";
    static MADE: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    MADE.get_or_init(|| {
        let root = tempfile::tempdir().unwrap();
        for dir in ["bin", "etc", "tmp", "proc", "sys", "dev"] {
            std::fs::create_dir_all(root.path().join(dir)).unwrap();
        }
        std::fs::copy("/bin/busybox", root.path().join("bin/busybox")).unwrap();
        std::os::unix::fs::symlink("busybox", root.path().join("bin/sh")).unwrap();
        for dir in 0..100 {
            let path = root.path().join(format!("opt/lib/{dir}"));
            std::fs::create_dir_all(&path).unwrap();
            for file in 0..200 {
                std::fs::write(path.join(format!("{file}.py")), vec![b'#'; 4096]).unwrap();
            }
        }
        let tar = root.path().with_extension("tar");
        let status = std::process::Command::new("tar")
            .arg("-C")
            .arg(root.path())
            .arg("-cf")
            .arg(&tar)
            .arg(".")
            .status()
            .unwrap();
        assert!(status.success());
        containers::engine(&["import", tar.to_str().unwrap(), IMAGE]);
        let _ = std::fs::remove_file(tar);
    });
    IMAGE
}

fn measure(server: &Server, mode: &str, n: usize) -> Sample {
    let token = &server.admin_token;
    let image = if mode.starts_with("files") { many_files_image() } else { containers::TEST_IMAGE };
    let mut job = json!({
        "metadata": {"name": format!("overhead-{n}")},
        "spec": {
            "resource_shape": "cpu.small",
            "container": {"image": image, "command": ["/bin/sh", "-c", "echo first line"]}
        }
    });
    if mode == "inputs" {
        job["spec"]["mounts"] = json!([{"from": "scratch", "path": "/data/set", "mount_path": "/data"}]);
        job["spec"]["envs"] = json!([{"name": "KEY", "value": "-----BEGIN-----\nabc\n-----END-----"}]);
    }
    let sent = Instant::now();
    let id = server.create_job(token, &job);
    server.wait_for_state(token, &id, JobState::Completed);
    let round_trip = sent.elapsed().as_secs_f64() * 1000.0;
    let (_, list) = server.call("GET", &format!("/jobs/{id}/replicas"), token, None);
    let replica = &list[0];
    let created = replica["metadata"]["created_at"].as_f64().unwrap();
    let started = replica["status"]["start_time"].as_f64().unwrap();
    let (_, logs) = server.call("GET", &format!("/logs?job={id}&direction=forward&limit=1"), token, None);
    let first: &Value = &logs["data"]["result"][0]["values"][0][0];
    let first_ms = first.as_str().unwrap().parse::<f64>().unwrap() / 1e6;
    Sample { to_start: started - created, to_first_line: first_ms - created, round_trip }
}

fn percentile(values: &mut [f64], p: f64) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    values[((values.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    containers::test_image();
    let n = replicas();
    println!("{n} one-replica jobs per mode, one after another; times in ms");
    println!(
        "{:<10} {:>22} {:>22} {:>22}",
        "mode", "attempt → start p50/p90", "→ first line p50/p90", "create → done p50/p90"
    );
    // Slurm when `BENCH_SLURM=1` (a cluster must be up: scripts/setup.sh --slurm).
    let slurm = std::env::var("BENCH_SLURM").is_ok_and(|v| v == "1");
    let local: &[&str] = &["process", "container", "inputs", "userns", "files", "files-userns"];
    let modes: Vec<&str> = local.iter().copied().chain(slurm.then_some("slurm")).collect();
    for mode in modes {
        let server = Server::start_api_with_config(&config(mode));
        // One job first, so the figures are of a warm server and engine.
        measure(&server, mode, 0);
        let samples: Vec<Sample> = (1..=n).map(|i| measure(&server, mode, i)).collect();
        let column = |f: fn(&Sample) -> f64| {
            let mut values: Vec<f64> = samples.iter().map(f).collect();
            format!("{:.0} / {:.0}", percentile(&mut values, 0.5), percentile(&mut values, 0.9))
        };
        println!(
            "{mode:<10} {:>22} {:>22} {:>22}",
            column(|s| s.to_start),
            column(|s| s.to_first_line),
            column(|s| s.round_trip)
        );
        drop(server);
        std::thread::sleep(Duration::from_millis(100));
    }
}
