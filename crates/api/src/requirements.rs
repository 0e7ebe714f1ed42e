//! Resources by requirement (extension; dstack's `resources`): what one
//! replica needs, given instead of a shape's name. The server picks the
//! smallest shape that meets them when the job is created and writes its
//! name into `spec.resource_shape`, so a later change of the configuration
//! does not move the job; the rules and the chooser are in
//! `validate/requirements.rs`.
//!
//! Units are Lepton's: memory in MiB (`memory_in_mb`), disk in GB
//! (`ephemeral_storage_in_gb`). A range is `{"min": a, "max": b}`, either end
//! optional; an exact value is a range whose ends are equal.

use serde::{Deserialize, Serialize};

use crate::decode::Decode;

/// What one replica needs (`spec.resources`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ResourceRequirements {
    /// GPUs; absent means none are needed (a shape with GPUs still meets
    /// that, but the smallest shape is chosen, so one without them wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuRequirement>,
    /// CPUs per replica.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuRange>,
    /// Memory per replica in MiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_in_mb: Option<AmountRange>,
    /// Local disk per replica in GB (the shape's `ephemeral_storage_in_gb`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_in_gb: Option<AmountRange>,
}

/// The GPUs one replica needs (`spec.resources.gpu`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct GpuRequirement {
    /// `nvidia`, `amd`, `intel` or `google`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// Any one of these GPUs (`A100`, `H100`), matched as whole words of the
    /// shape's `accelerator_type`, ignoring case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Vec<String>>,
    /// How many; absent means at least one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<AmountRange>,
    /// Memory of each GPU in MiB, counted in whole GiB as GPUs are labelled
    /// (an "80 GB" GPU reports 81,559 MiB and meets 81,920).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_in_mb: Option<AmountRange>,
    /// Memory of all the replica's GPUs together, in MiB, counted alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_memory_in_mb: Option<AmountRange>,
    /// The least CUDA compute capability, `major.minor` (`8.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_capability: Option<String>,
}

/// A range of whole numbers; either end may be absent.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AmountRange {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<i64>,
}

/// A range of CPUs (fractions allowed); either end may be absent.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CpuRange {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
}

impl AmountRange {
    /// At least `min`.
    pub fn at_least(min: i64) -> AmountRange {
        AmountRange { min: Some(min), max: None }
    }

    pub fn contains(&self, value: i64) -> bool {
        self.min.is_none_or(|min| value >= min) && self.max.is_none_or(|max| value <= max)
    }
}

impl CpuRange {
    pub fn contains(&self, value: f64) -> bool {
        // A tenth of a thousandth of a CPU is rounding, not a difference.
        self.min.is_none_or(|min| value + 1e-9 >= min) && self.max.is_none_or(|max| value <= max + 1e-9)
    }
}

/// A compute capability as `major.minor` (`8.0`, `12.0`), comparable.
pub fn parse_compute_capability(text: &str) -> Option<(u32, u32)> {
    let (major, minor) = text.trim().split_once('.')?;
    let digits = |part: &str| {
        let plain = !part.is_empty() && part.len() <= 2 && part.bytes().all(|b| b.is_ascii_digit());
        plain.then(|| part.parse().ok()).flatten()
    };
    Some((digits(major)?, digits(minor)?))
}

/// The GPU vendors a requirement may name.
pub const GPU_VENDORS: [&str; 4] = ["nvidia", "amd", "intel", "google"];
