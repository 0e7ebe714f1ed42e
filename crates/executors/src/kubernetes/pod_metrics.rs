//! Resource use of Jobdeck's pods from the cluster's `metrics.k8s.io` API
//! (metrics-server), where the cluster serves it: each pod's CPU and memory
//! as its containers' summed `usage`. A cluster without it answers 404; the
//! executor then says so once and stops asking. metrics-server reports no
//! GPUs; DCGM's exporter, which does, speaks Prometheus, not this API.

use kube::Client;
use serde::Deserialize;

/// One pod's use: CPU cores and memory bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct PodUse {
    pub pod: String,
    pub cores: f64,
    pub memory_bytes: f64,
}

#[derive(Debug, Deserialize)]
struct PodMetricsList {
    #[serde(default)]
    items: Vec<PodMetrics>,
}

#[derive(Debug, Deserialize)]
struct PodMetrics {
    metadata: Name,
    #[serde(default)]
    containers: Vec<ContainerMetrics>,
}

#[derive(Debug, Deserialize)]
struct Name {
    name: String,
}

#[derive(Debug, Deserialize)]
struct ContainerMetrics {
    usage: Usage,
}

#[derive(Debug, Deserialize)]
struct Usage {
    #[serde(default)]
    cpu: Option<String>,
    #[serde(default)]
    memory: Option<String>,
}

/// A Kubernetes quantity (`250m`, `1`, `123456789n`, `64Mi`, `1.5Gi`, `1e3`,
/// `500k`) as a plain number: CPU quantities in cores, memory in bytes.
pub fn quantity(text: &str) -> Option<f64> {
    let text = text.trim();
    let suffixes: [(&str, f64); 13] = [
        ("Ki", 1024.0),
        ("Mi", 1024.0 * 1024.0),
        ("Gi", 1024.0 * 1024.0 * 1024.0),
        ("Ti", 1024.0 * 1024.0 * 1024.0 * 1024.0),
        ("Pi", 1024.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0),
        ("n", 1e-9),
        ("u", 1e-6),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
    ];
    for (suffix, factor) in suffixes {
        if let Some(number) = text.strip_suffix(suffix) {
            return number.parse::<f64>().ok().filter(|v| v.is_finite()).map(|v| v * factor);
        }
    }
    text.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// The use of the pods `selector` selects in `namespace`; `None` when the
/// cluster does not serve `metrics.k8s.io`.
pub async fn read(client: &Client, namespace: &str, selector: &str) -> Result<Option<Vec<PodUse>>, String> {
    let query: String = form_urlencoded::Serializer::new(String::new()).append_pair("labelSelector", selector).finish();
    let uri = format!("/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods?{query}");
    let request = http::Request::get(uri).body(Vec::new()).map_err(|e| e.to_string())?;
    match client.request::<PodMetricsList>(request).await {
        Ok(list) => Ok(Some(uses(list))),
        Err(kube::Error::Api(status)) if status.code == 404 || status.code == 503 => Ok(None),
        Err(e) => Err(format!("cannot read pod metrics: {e}")),
    }
}

fn uses(list: PodMetricsList) -> Vec<PodUse> {
    list.items
        .into_iter()
        .map(|pod| PodUse {
            pod: pod.metadata.name,
            cores: pod.containers.iter().filter_map(|c| c.usage.cpu.as_deref().and_then(quantity)).sum(),
            memory_bytes: pod.containers.iter().filter_map(|c| c.usage.memory.as_deref().and_then(quantity)).sum(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_read_as_kubernetes_writes_them() {
        let cases = [
            ("250m", 0.25),
            ("1", 1.0),
            ("123456789n", 0.123456789),
            ("1500u", 0.0015),
            ("64Mi", 67_108_864.0),
            ("1.5Gi", 1_610_612_736.0),
            ("123456Ki", 126_418_944.0),
            ("500k", 500_000.0),
            ("1e3", 1000.0),
        ];
        for (text, value) in cases {
            let got = quantity(text).unwrap();
            assert!((got - value).abs() < 1e-9 * value.max(1.0), "{text}: {got}");
        }
        assert_eq!(quantity("lots"), None);
    }

    #[test]
    fn a_pods_containers_are_summed() {
        let list: PodMetricsList = serde_json::from_value(serde_json::json!({
            "kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": {},
            "items": [{"metadata": {"name": "train-0-abc"}, "timestamp": "2026-01-01T00:00:00Z", "window": "15s",
                       "containers": [{"name": "main", "usage": {"cpu": "1500m", "memory": "1Gi"}},
                                      {"name": "sidecar", "usage": {"cpu": "250m", "memory": "64Mi"}}]}]
        }))
        .unwrap();
        assert_eq!(uses(list), [PodUse { pod: "train-0-abc".into(), cores: 1.75, memory_bytes: 1_140_850_688.0 }]);
    }
}
