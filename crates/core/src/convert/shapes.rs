//! Choosing the shape a converted job runs on from what the file asks for:
//! the smallest shape of the workspace that has at least those GPUs (of that
//! name, when one is given), CPUs and memory.

use serde_json::{json, Map, Value};

use super::Notes;
use crate::config::ShapeConfig;

/// What a file asks one replica to have.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Need {
    pub gpus: i64,
    /// A GPU name such as `H100`, matched case-insensitively inside the
    /// shape's `accelerator_type` (`NVIDIA H100 80GB HBM3` has an H100).
    pub gpu_name: Option<String>,
    /// Memory per GPU, in MiB, against the shape's `accelerator_memory_mb`.
    pub gpu_memory_mb: i64,
    /// The least CUDA compute capability, `(major, minor)`.
    pub compute_capability: Option<(u32, u32)>,
    pub cpu: f64,
    pub memory_mb: i64,
}

impl Need {
    /// The need in words, for the notes.
    pub fn words(&self) -> String {
        let mut parts = Vec::new();
        if self.gpus > 0 {
            parts.push(match &self.gpu_name {
                Some(name) => format!("{} × {name}", self.gpus),
                None => format!("{} GPU", self.gpus),
            });
        }
        if self.gpu_memory_mb > 0 {
            parts.push(format!("{} MiB per GPU", self.gpu_memory_mb));
        }
        if let Some((major, minor)) = self.compute_capability {
            parts.push(format!("compute capability {major}.{minor} or more"));
        }
        if self.cpu > 0.0 {
            parts.push(format!("{} CPU", self.cpu));
        }
        if self.memory_mb > 0 {
            parts.push(format!("{} MiB memory", self.memory_mb));
        }
        if parts.is_empty() {
            "nothing in particular".into()
        } else {
            parts.join(", ")
        }
    }

    fn met_by(&self, shape: &ShapeConfig) -> bool {
        let named = match &self.gpu_name {
            Some(name) => shape
                .accelerator_type
                .as_deref()
                .is_some_and(|kind| kind.to_ascii_lowercase().contains(&name.to_ascii_lowercase())),
            None => true,
        };
        let gpu_memory = self.gpu_memory_mb == 0 || shape.accelerator_memory_mb.unwrap_or(0) >= self.gpu_memory_mb;
        let capable =
            self.compute_capability.is_none_or(|least| shape.compute_capability().is_some_and(|has| has >= least));
        shape.gpus >= self.gpus
            && named
            && gpu_memory
            && capable
            && shape.cpu >= self.cpu
            && shape.memory_mb >= self.memory_mb
    }
}

/// The smallest shape that meets `need` (fewest GPUs, then CPUs, then
/// memory), if any does.
pub fn smallest<'a>(shapes: &'a [ShapeConfig], need: &Need) -> Option<&'a ShapeConfig> {
    shapes
        .iter()
        .filter(|shape| need.met_by(shape))
        .min_by(|a, b| (a.gpus, a.memory_mb).cmp(&(b.gpus, b.memory_mb)).then(a.cpu.total_cmp(&b.cpu)))
}

/// Sets `spec.resource_shape` to the smallest shape that meets `need`, and
/// notes on `field` which and why, or that none does.
pub(crate) fn choose(
    notes: &mut Notes,
    spec: &mut Map<String, Value>,
    field: &str,
    need: &Need,
    shapes: &[ShapeConfig],
) {
    match smallest(shapes, need) {
        Some(shape) => {
            spec.insert("resource_shape".into(), json!(shape.name));
            notes.carried(
                field,
                "spec.resource_shape",
                format!(
                    "{}: {}, the smallest shape that has it (a range asks for its low end)",
                    need.words(),
                    shape.name
                ),
            );
        }
        None => {
            notes.dropped(field, format!("no shape of this workspace has {}; choose a shape in the form", need.words()))
        }
    }
}

/// A Kubernetes CPU quantity (`500m`, `2`, `1.5`) in CPUs.
pub fn cpu_quantity(text: &str) -> Option<f64> {
    let text = text.trim();
    match text.strip_suffix('m') {
        Some(milli) => milli.parse::<f64>().ok().map(|m| m / 1000.0),
        None => text.parse().ok(),
    }
    .filter(|cpu: &f64| cpu.is_finite() && *cpu >= 0.0)
}

/// A memory size in MiB (rounded up): Kubernetes' `8Gi`, `512Mi`, `1G`
/// (not its exponents, `1e9`), or dstack's `8GB`, `512MB` (which dstack reads
/// as GiB and MiB).
pub fn memory_quantity(text: &str) -> Option<i64> {
    let text = text.trim();
    let split = text.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.trim().parse().ok()?;
    const KI: f64 = 1024.0;
    let bytes_per = match unit {
        "" => 1.0,
        "Ki" | "KB" => KI,
        "Mi" | "MB" => KI * KI,
        "Gi" | "GB" => KI * KI * KI,
        "Ti" | "TB" => KI * KI * KI * KI,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        _ => return None,
    };
    let mib = number * bytes_per / (KI * KI);
    (0.0..1e12).contains(&mib).then(|| mib.ceil() as i64)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn shape(name: &str, gpus: i64, gpu: Option<&str>, cpu: f64, memory_mb: i64) -> ShapeConfig {
        ShapeConfig {
            name: name.into(),
            cpu,
            memory_mb,
            gpus,
            accelerator_type: gpu.map(String::from),
            accelerator_memory_mb: None,
            compute_capability: None,
            ephemeral_storage_gb: None,
            description: None,
        }
    }

    #[test]
    fn the_smallest_shape_that_meets_the_need_is_chosen() {
        let shapes = [
            shape("gpu.h100x8", 8, Some("NVIDIA H100"), 96.0, 1_000_000),
            shape("cpu.large", 0, None, 16.0, 65_536),
            shape("cpu.small", 0, None, 2.0, 4_096),
            shape("gpu.a100x1", 1, Some("NVIDIA A100"), 12.0, 120_000),
            shape("gpu.h100x1", 1, Some("NVIDIA H100"), 12.0, 120_000),
        ];
        let pick = |need: Need| smallest(&shapes, &need).map(|s| s.name.as_str());
        assert_eq!(pick(Need { cpu: 1.0, memory_mb: 2048, ..Need::default() }), Some("cpu.small"));
        assert_eq!(pick(Need { cpu: 4.0, ..Need::default() }), Some("cpu.large"));
        assert_eq!(pick(Need { gpus: 1, gpu_name: Some("h100".into()), ..Need::default() }), Some("gpu.h100x1"));
        assert_eq!(pick(Need { gpus: 2, gpu_name: Some("H100".into()), ..Need::default() }), Some("gpu.h100x8"));
        assert_eq!(pick(Need { gpus: 1, gpu_name: Some("MI300".into()), ..Need::default() }), None);
    }

    #[test]
    fn quantities_read_as_kubernetes_and_dstack_write_them() {
        assert_eq!(cpu_quantity("500m"), Some(0.5));
        assert_eq!(cpu_quantity("2"), Some(2.0));
        assert_eq!(cpu_quantity("-1"), None);
        assert_eq!(memory_quantity("8Gi"), Some(8192));
        assert_eq!(memory_quantity("8GB"), Some(8192));
        assert_eq!(memory_quantity("512Mi"), Some(512));
        assert_eq!(memory_quantity("1G"), Some(954));
        assert_eq!(memory_quantity("1e9"), None, "an exponent is not a unit Jobdeck reads");
        assert_eq!(memory_quantity("lots"), None);
    }
}
