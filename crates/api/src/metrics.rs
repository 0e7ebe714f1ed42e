//! Resource use per replica (Jobdeck's extension; Lepton has none on its
//! job API): `GET /jobs/{id}/metrics` and
//! `GET /jobs/{id}/replicas/{replica}/metrics`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::decode::Decode;

/// CPU cores used (1.0 = one core busy).
pub const SERIES_CPU: &str = "cpu";
/// Memory used, bytes (the working set, or resident memory without a
/// cgroup of its own).
pub const SERIES_MEMORY: &str = "memory";

/// The series of GPU `index`: `gpu<index>.util` (percent), `.memory` and
/// `.memory_total` (MiB), `.power` (W), `.temperature` (°C).
pub fn gpu_series(index: u32, what: &str) -> String {
    format!("gpu{index}.{what}")
}

/// The unit of a series, for labels.
pub fn series_unit(series: &str) -> &'static str {
    match series.rsplit('.').next().unwrap_or(series) {
        "cpu" => "cores",
        "memory" if series == SERIES_MEMORY => "bytes",
        "memory" | "memory_total" => "MiB",
        "util" => "%",
        "power" => "W",
        "temperature" => "°C",
        _ => "",
    }
}

/// One series of one attempt: points `[t (Unix ms), mean, max]`, oldest
/// first; a point stands for one sample or, in a long run, the mean and peak
/// of several.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct MetricSeries {
    pub name: String,
    pub unit: String,
    pub points: Vec<(i64, f64, f64)>,
}

/// `GET /jobs/{id}/replicas/{replica}/metrics`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReplicaMetrics {
    pub replica_id: String,
    /// The shape's memory, the limit the memory series is drawn against.
    pub memory_limit_bytes: i64,
    pub series: Vec<MetricSeries>,
}

/// A replica attempt's use now and at its peak, in `GET /jobs/{id}/metrics`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReplicaUse {
    pub replica_id: String,
    pub completion_index: i64,
    pub attempt: i64,
    /// Series → its newest value.
    pub current: BTreeMap<String, f64>,
    /// Series → its highest value.
    pub peak: BTreeMap<String, f64>,
    pub memory_limit_bytes: i64,
    /// Unix ms of the newest sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampled_at: Option<i64>,
    /// `gpu_idle`: holds GPUs and used under 5 % of them for the last 10
    /// minutes; `memory_near_limit`: above 90 % of its memory limit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
}

/// `GET /jobs/{id}/metrics`: every attempt that has samples.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, Decode)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct JobMetrics {
    pub replicas: Vec<ReplicaUse>,
}

/// A replica with GPUs that used less than this (percent) …
pub const GPU_IDLE_PERCENT: f64 = 5.0;
/// … over this long (ms) is flagged `gpu_idle`.
pub const GPU_IDLE_WINDOW_MS: i64 = 10 * 60 * 1000;
/// Memory above this share of the limit is flagged `memory_near_limit`.
pub const MEMORY_NEAR_LIMIT: f64 = 0.9;
