//! What a converted job asks one replica to have: its requirements
//! (`spec.resources`), which the server meets with the smallest shape of the
//! workspace by the contract's one chooser (`jobdeck_api::offers`), and the
//! quantities the files write them in.

use jobdeck_api::{chosen_offer, offers, requirement_words, JobSpec, ResourceRequirements, ShapeChoice};
use serde_json::{json, Map, Value};

use super::Notes;
use crate::config::ShapeConfig;
use crate::topology::shape_view;

/// Writes `requirements` into `spec.resources` and notes on `field` the
/// shape that meets them now; when none of this workspace's shapes does,
/// notes that instead and leaves them out (the form then asks for a shape).
pub(crate) fn require(
    notes: &mut Notes,
    spec: &mut Map<String, Value>,
    field: &str,
    requirements: &ResourceRequirements,
    shapes: &[ShapeConfig],
) {
    let choices: Vec<ShapeChoice> = shapes.iter().map(|s| (&shape_view(s)).into()).collect();
    // The shared memory the file asks for is a requirement of the shape too.
    let job =
        JobSpec { shared_memory_size: spec.get("shared_memory_size").and_then(Value::as_i64), ..JobSpec::default() };
    let offers = offers(&job, requirements, &choices, &[]);
    let words = requirement_words(requirements);
    match chosen_offer(&offers).and_then(|o| o.shape.id.as_deref()) {
        Some(id) => {
            spec.insert("resources".into(), json!(requirements));
            notes.carried(
                field,
                "spec.resources",
                format!("{words}; the smallest shape that meets them is {id}, which the server chooses when the job is created"),
            );
        }
        None => notes.dropped(field, format!("no shape of this workspace has {words}; choose a shape in the form")),
    }
}

/// A range as dstack writes one: `4..8`, `16GB..`, `..2`, or a single
/// value, which is the low end of a size (`16GB` asks at least that) and
/// the exact number of a count (`2` GPUs are two).
pub fn range_of<T: Copy>(text: &str, exact: bool, read: impl Fn(&str) -> Option<T>) -> Option<(Option<T>, Option<T>)> {
    let end = |part: &str| if part.trim().is_empty() { Some(None) } else { read(part.trim()).map(Some) };
    match text.split_once("..") {
        Some((low, high)) => Some((end(low)?, end(high)?)),
        None => {
            let value = read(text.trim())?;
            Some((Some(value), exact.then_some(value)))
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

    /// The shape the server chooses for a converted job (`spec.resources`).
    pub(crate) fn chosen(job: &Value, shapes: &[ShapeConfig]) -> Option<String> {
        let spec: JobSpec = serde_json::from_value(job["spec"].clone()).unwrap();
        let choices: Vec<ShapeChoice> = shapes.iter().map(|s| (&shape_view(s)).into()).collect();
        let offers = offers(&spec, spec.resources.as_ref()?, &choices, &[]);
        chosen_offer(&offers).and_then(|o| o.shape.id.clone())
    }

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
    fn ranges_read_as_dstack_writes_them() {
        let count = |t: &str| range_of(t, true, |p| p.parse::<i64>().ok());
        assert_eq!(count("2"), Some((Some(2), Some(2))), "a count is exact");
        assert_eq!(count("1..2"), Some((Some(1), Some(2))));
        assert_eq!(count("2.."), Some((Some(2), None)));
        assert_eq!(count("..4"), Some((None, Some(4))));
        assert_eq!(count("two"), None);
        let size = |t: &str| range_of(t, false, memory_quantity);
        assert_eq!(size("16GB"), Some((Some(16384), None)), "a size is a least");
        assert_eq!(size("16GB..64GB"), Some((Some(16384), Some(65536))));
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
