//! What sampling costs the server (issue 16): 50 replicas that sleep, run by
//! the real release `jobdeck serve` in process mode, and the server's own
//! CPU time (utime + stime from procfs) over `SAMPLER_SECONDS` (default 60),
//! with resource sampling off, at its default 5 s, and every second. The
//! difference from "off" is the sampler's cost, in percent of one core.
//! Run with `bench/metrics.sh`.

use std::time::Duration;

use jobdeck_e2e::{JobState, Server};
use serde_json::json;

const REPLICAS: usize = 50;

fn config(interval_ms: u64) -> String {
    format!(
        "[executor.local]\nmode = \"process\"\nretry_backoff_seconds = 0\ngrace_period_seconds = 1\nmetrics_interval_ms = {interval_ms}\n\n\
         [[node_groups]]\nname = \"local\"\ncpu = 64\nmemory_mb = 262144\n\n\
         [[shapes]]\nname = \"cpu.tiny\"\ncpu = 1\nmemory_mb = 64\n"
    )
}

/// utime + stime of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

fn main() {
    let seconds: u64 = std::env::var("SAMPLER_SECONDS").ok().and_then(|v| v.parse().ok()).unwrap_or(60);
    let ticks_per_second = clock_ticks_per_second();
    println!("{REPLICAS} sleeping replicas, server CPU over {seconds} s");
    let mut baseline = None;
    for interval in [0u64, 5_000, 1_000] {
        let server = Server::start_api_with_config(&config(interval));
        let token = server.admin_token.clone();
        let job = json!({"metadata": {"name": "sleepers"}, "spec": {"resource_shape": "cpu.tiny",
            "completions": REPLICAS, "parallelism": REPLICAS,
            "container": {"command": ["/bin/sh", "-c", "exec sleep 3600"]}}});
        let id = server.create_job(&token, &job);
        server.wait_for_state(&token, &id, JobState::Running);
        loop {
            let (_, replicas) = server.call("GET", &format!("/jobs/{id}/replicas"), &token, None);
            if replicas.as_array().unwrap().iter().filter(|r| r["status"]["phase"] == "running").count() == REPLICAS {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let pid = server.pid();
        let before = cpu_ticks(pid);
        std::thread::sleep(Duration::from_secs(seconds));
        let used = (cpu_ticks(pid) - before) as f64 / ticks_per_second / seconds as f64 * 100.0;
        let label = if interval == 0 { "off".to_string() } else { format!("every {} s", interval / 1000) };
        match baseline {
            None => {
                println!("sampling {label:<10} server {used:.2} % of a core");
                baseline = Some(used);
            }
            Some(base) => {
                println!("sampling {label:<10} server {used:.2} % of a core, the sampler {:.2} %", used - base)
            }
        }
    }
}

fn clock_ticks_per_second() -> f64 {
    // The clock tick of Linux on every architecture Jobdeck builds for
    // (`getconf CLK_TCK`); the bench crate has no libc binding.
    let out = std::process::Command::new("getconf").arg("CLK_TCK").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(100.0)
}
