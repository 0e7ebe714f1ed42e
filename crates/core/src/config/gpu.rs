//! What a shape's GPU can do, for a job's requirements: its CUDA compute
//! capability, configured or read from the GPUs NVIDIA lists.

use super::ShapeConfig;

pub use jobdeck_api::parse_compute_capability;

/// The compute capability of an NVIDIA data-center GPU named in an
/// accelerator type (`NVIDIA-H100-80GB-HBM3` → 9.0), from NVIDIA's list of
/// CUDA GPUs; `None` for a GPU not in this table (give the shape's
/// `compute_capability` then).
pub fn known_compute_capability(accelerator_type: &str) -> Option<(u32, u32)> {
    const KNOWN: [(&str, (u32, u32)); 13] = [
        ("GB200", (10, 0)),
        ("B200", (10, 0)),
        ("H200", (9, 0)),
        ("H100", (9, 0)),
        ("L40S", (8, 9)),
        ("L40", (8, 9)),
        ("L4", (8, 9)),
        ("A100", (8, 0)),
        ("A30", (8, 0)),
        ("A10G", (8, 6)),
        ("A10", (8, 6)),
        ("T4", (7, 5)),
        ("V100", (7, 0)),
    ];
    // Whole words of the type, so `L4` is not found inside `L40S`.
    let upper = accelerator_type.to_ascii_uppercase();
    let words: Vec<&str> = upper.split(|c: char| !c.is_ascii_alphanumeric()).collect();
    KNOWN.iter().find(|(name, _)| words.contains(name)).map(|(_, capability)| *capability)
}

impl ShapeConfig {
    /// The GPU's compute capability: the configured one, else the one of a
    /// GPU NVIDIA lists; `None` without GPUs.
    pub fn compute_capability(&self) -> Option<(u32, u32)> {
        if self.gpus == 0 {
            return None;
        }
        match &self.compute_capability {
            Some(text) => parse_compute_capability(text),
            None => self.accelerator_type.as_deref().and_then(known_compute_capability),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compute_capabilities_read_as_numbers_and_known_gpus_by_name() {
        assert_eq!(parse_compute_capability("8.0"), Some((8, 0)));
        assert_eq!(parse_compute_capability(" 12.1 "), Some((12, 1)));
        assert!(parse_compute_capability("8.10") > parse_compute_capability("8.9"));
        for bad in ["8", "8.", ".5", "8.0.1", "a.b", "-1.0", "123.0"] {
            assert_eq!(parse_compute_capability(bad), None, "{bad}");
        }
        assert_eq!(known_compute_capability("NVIDIA-H100-80GB-HBM3"), Some((9, 0)));
        assert_eq!(known_compute_capability("NVIDIA A100-SXM4-80GB"), Some((8, 0)));
        assert_eq!(known_compute_capability("nvidia-l40s"), Some((8, 9)));
        assert_eq!(known_compute_capability("NVIDIA L4"), Some((8, 9)));
        assert_eq!(known_compute_capability("Tesla-T4"), Some((7, 5)));
        assert_eq!(known_compute_capability("AMD-MI300X"), None);
        let mut shape = crate::convert::shapes::tests::shape("gpu.a100", 1, Some("NVIDIA-A100-80GB"), 8.0, 65_536);
        assert_eq!(shape.compute_capability(), Some((8, 0)), "read from the name");
        shape.compute_capability = Some("8.6".into());
        assert_eq!(shape.compute_capability(), Some((8, 6)), "the configured one first");
        shape.gpus = 0;
        assert_eq!(shape.compute_capability(), None, "no GPU, no capability");
    }
}
