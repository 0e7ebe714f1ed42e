//! What reading a job body costs (`wire::from_json`, which every `POST
//! /jobs` and `PATCH` runs): the typed read with field paths, and the
//! second pass that looks for an array read as an object (the body parsed
//! again as a `serde_json::Value` and the typed value written out and
//! compared), against a plain `serde_json::from_slice` of the same bytes.
//! Bodies: what `lep job create` sends (captured, `fixtures/lep/`) and a
//! large one (200 variables, 50 mounts, a 4 KB command). Run with
//! `bench/api-wire.sh`; the figures are in docs/measurements.md.

use std::time::{Duration, Instant};

use jobdeck_api::{from_json, LeptonJob};
use serde_json::json;

/// Reads `bytes` `rounds` times with `read` and says how long one read took
/// at the median of 15 batches.
fn time(rounds: u32, bytes: &[u8], read: impl Fn(&[u8])) -> Duration {
    let mut batches: Vec<Duration> = (0..15)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..rounds {
                read(std::hint::black_box(bytes));
            }
            started.elapsed() / rounds
        })
        .collect();
    batches.sort();
    batches[batches.len() / 2]
}

fn large_body() -> Vec<u8> {
    let envs: Vec<_> = (0..200).map(|i| json!({"name": format!("VAR_{i}"), "value": "x".repeat(40)})).collect();
    let mounts: Vec<_> = (0..50)
        .map(|i| json!({"from": "node-local", "path": format!("/d{i}"), "mount_path": format!("/m{i}")}))
        .collect();
    serde_json::to_vec(&json!({
        "metadata": {"name": "large", "labels": {"team": "vision", "run": "7"}},
        "spec": {
            "resource_shape": "gpu.1xh100",
            "container": {"image": "nvcr.io/nvidia/pytorch:25.08-py3", "command": ["/bin/bash", "-c", "echo hi; ".repeat(400)]},
            "envs": envs,
            "mounts": mounts,
            "completions": 64, "parallelism": 64
        }
    }))
    .unwrap()
}

fn main() {
    let lep = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/lep/rich.json")).unwrap();
    let large = large_body();
    println!("| body | bytes | serde_json::from_slice | wire::from_json | of which the array check |");
    println!("|---|---|---|---|---|");
    for (name, bytes, rounds) in
        [("lep job create (rich.json)", &lep, 20_000), ("200 variables, 50 mounts", &large, 500)]
    {
        let plain = time(rounds, bytes, |b| {
            serde_json::from_slice::<LeptonJob>(b).unwrap();
        });
        let checked = time(rounds, bytes, |b| {
            from_json::<LeptonJob>(b).unwrap();
        });
        let value = time(rounds, bytes, |b| {
            serde_json::from_slice::<serde_json::Value>(b).unwrap();
        });
        let typed: LeptonJob = from_json(bytes).unwrap();
        let back = time(rounds, bytes, |_| {
            serde_json::to_value(&typed).unwrap();
        });
        println!(
            "| {name} | {} | {:.1} µs | {:.1} µs | {:.1} µs ({:.1} parse + {:.1} write out) |",
            bytes.len(),
            plain.as_secs_f64() * 1e6,
            checked.as_secs_f64() * 1e6,
            (value + back).as_secs_f64() * 1e6,
            value.as_secs_f64() * 1e6,
            back.as_secs_f64() * 1e6,
        );
    }
}
