//! What this machine has (CPUs, memory, NVIDIA GPUs) and the node group and
//! shapes `jobdeck serve` offers from it when the config declares none
//! (design §10).

use std::collections::BTreeMap;

use super::{NodeGroupConfig, ShapeConfig};

/// What this machine has, for the defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineInfo {
    pub hostname: String,
    pub cpus: f64,
    pub memory_mb: i64,
    pub gpus: i64,
    pub gpu_product: Option<String>,
    pub gpu_memory_mb: Option<i64>,
}

impl MachineInfo {
    /// Reads the CPU count, total memory and NVIDIA GPUs (via `nvidia-smi`,
    /// when it is installed) of this machine.
    pub fn detect() -> MachineInfo {
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) as f64;
        let memory_mb = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|text| parse_meminfo_total_mb(&text))
            .unwrap_or(1024);
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into());
        let (gpus, gpu_product, gpu_memory_mb) = detect_nvidia_gpus();
        MachineInfo { hostname, cpus, memory_mb, gpus, gpu_product, gpu_memory_mb }
    }
}

fn parse_meminfo_total_mb(text: &str) -> Option<i64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: i64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

/// Asks `nvidia-smi` for the GPUs; no `nvidia-smi` means no GPUs.
fn detect_nvidia_gpus() -> (i64, Option<String>, Option<i64>) {
    let output = std::process::Command::new("nvidia-smi")
        .args(["--query-gpu=name,memory.total", "--format=csv,noheader,nounits"])
        .stderr(std::process::Stdio::null())
        .output();
    match output {
        Ok(out) if out.status.success() => parse_nvidia_smi(&String::from_utf8_lossy(&out.stdout)),
        _ => (0, None, None),
    }
}

fn parse_nvidia_smi(text: &str) -> (i64, Option<String>, Option<i64>) {
    let rows: Vec<(String, Option<i64>)> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut parts = l.split(',').map(str::trim);
            let name = parts.next().unwrap_or("").to_string();
            let memory = parts.next().and_then(|m| m.parse().ok());
            (name, memory)
        })
        .collect();
    let first = rows.first().cloned();
    (rows.len() as i64, first.as_ref().map(|(n, _)| n.replace(' ', "-")), first.and_then(|(_, m)| m))
}

/// A lowercase slug of a GPU product for shape names: `NVIDIA-H100-80GB-HBM3`
/// becomes `h100-80gb-hbm3`.
fn gpu_slug(product: &str) -> String {
    let lower = product.to_ascii_lowercase();
    let trimmed = lower.strip_prefix("nvidia-").unwrap_or(&lower);
    let slug: String = trimmed.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    let slug = slug.trim_matches('-').to_string();
    if slug.is_empty() {
        "gpu".into()
    } else {
        slug
    }
}

/// The default node group: this machine as one node.
pub fn default_node_groups(machine: &MachineInfo) -> Vec<NodeGroupConfig> {
    vec![NodeGroupConfig {
        name: "local".into(),
        cpu: machine.cpus,
        memory_mb: machine.memory_mb,
        gpus: machine.gpus,
        gpu_product: machine.gpu_product.clone(),
        nodes: None,
        node_names: Some(vec![machine.hostname.clone()]),
        node_selector: BTreeMap::new(),
        privileged_roles: Vec::new(),
    }]
}

/// The default shapes: Lepton's CPU shapes, and `gpu.<n>x<model>` for each GPU
/// count 1..=n of this machine with a proportional share of its CPUs and
/// memory.
pub fn default_shapes(machine: &MachineInfo) -> Vec<ShapeConfig> {
    let cpu_shape = |name: &str, cpu: f64, memory_mb: i64| ShapeConfig {
        name: name.into(),
        cpu,
        memory_mb,
        gpus: 0,
        accelerator_type: None,
        accelerator_memory_mb: None,
        compute_capability: None,
        ephemeral_storage_gb: None,
        description: Some(format!("{cpu} CPU, {} GiB memory", memory_mb / 1024)),
    };
    let mut shapes =
        vec![cpu_shape("cpu.small", 1.0, 4096), cpu_shape("cpu.medium", 2.0, 8192), cpu_shape("cpu.large", 4.0, 16384)];
    if machine.gpus > 0 {
        let product = machine.gpu_product.clone().unwrap_or_else(|| "GPU".into());
        let slug = gpu_slug(&product);
        for n in 1..=machine.gpus {
            let share = n as f64 / machine.gpus as f64;
            let cpu = (machine.cpus * share).floor().max(1.0);
            let memory_mb = ((machine.memory_mb as f64) * share * 0.9) as i64;
            shapes.push(ShapeConfig {
                name: format!("gpu.{n}x{slug}"),
                cpu,
                memory_mb,
                gpus: n,
                accelerator_type: Some(product.clone()),
                accelerator_memory_mb: machine.gpu_memory_mb,
                compute_capability: None,
                ephemeral_storage_gb: None,
                description: Some(format!("{n} × {product}, {cpu} CPU, {} GiB memory", memory_mb / 1024)),
            });
        }
    }
    shapes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvidia_smi_output_is_parsed() {
        let (n, product, memory) = parse_nvidia_smi("NVIDIA A10G, 23028\nNVIDIA A10G, 23028\n");
        assert_eq!((n, product.as_deref(), memory), (2, Some("NVIDIA-A10G"), Some(23028)));
        assert_eq!(parse_nvidia_smi(""), (0, None, None));
        assert_eq!(gpu_slug("NVIDIA-A10G"), "a10g");
    }

    #[test]
    fn meminfo_is_parsed_in_mib() {
        assert_eq!(parse_meminfo_total_mb("MemTotal:       24684576 kB\nMemFree: 1 kB\n"), Some(24106));
    }
}
