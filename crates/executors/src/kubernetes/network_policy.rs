//! The NetworkPolicy of a job's run (docs/security.md, "Networks"): its
//! pods take connections only from pods of the same job, and reach
//! anything but the blocked networks (the cloud metadata range by default).
//! Owned by the run's Job, so it goes with it. A cluster whose network
//! plugin does not enforce NetworkPolicies (kindnet, flannel alone) ignores
//! it; docs/kubernetes.md says which do.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::{
    IPBlock, NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use super::mapping::LABEL_JOB_ID;

/// The name of a job's NetworkPolicy.
pub fn network_policy_name(job_id: &str) -> String {
    format!("{job_id}-network")
}

/// The policy for the pods of `job_id`: ingress from the job's own pods,
/// egress anywhere outside `blocked` (IPv4 and IPv6 networks in CIDR form).
pub fn network_policy(
    job_id: &str,
    namespace: &str,
    labels: &BTreeMap<String, String>,
    blocked: &[String],
) -> NetworkPolicy {
    let own_pods = || LabelSelector {
        match_labels: Some(BTreeMap::from([(LABEL_JOB_ID.to_string(), job_id.to_string())])),
        ..Default::default()
    };
    let cidr = |network: &String| {
        if network.contains('/') {
            network.clone()
        } else if network.contains(':') {
            format!("{network}/128")
        } else {
            format!("{network}/32")
        }
    };
    let (v6, v4): (Vec<String>, Vec<String>) = blocked.iter().map(cidr).partition(|n| n.contains(':'));
    let anywhere_but = |all: &str, except: Vec<String>| NetworkPolicyPeer {
        ip_block: Some(IPBlock { cidr: all.to_string(), except: (!except.is_empty()).then_some(except) }),
        ..Default::default()
    };
    NetworkPolicy {
        metadata: ObjectMeta {
            name: Some(network_policy_name(job_id)),
            namespace: Some(namespace.to_string()),
            labels: Some(labels.clone()),
            ..Default::default()
        },
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(own_pods()),
            policy_types: Some(vec!["Ingress".into(), "Egress".into()]),
            ingress: Some(vec![NetworkPolicyIngressRule {
                from: Some(vec![NetworkPolicyPeer { pod_selector: Some(own_pods()), ..Default::default() }]),
                ports: None,
            }]),
            egress: Some(vec![NetworkPolicyEgressRule {
                to: Some(vec![anywhere_but("0.0.0.0/0", v4), anywhere_but("::/0", v6)]),
                ports: None,
            }]),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jobs_pods_hear_only_each_other_and_reach_all_but_the_blocked_networks() {
        let labels = BTreeMap::from([(LABEL_JOB_ID.to_string(), "train-ab12c".to_string())]);
        let blocked = vec!["169.254.0.0/16".to_string(), "fd00:ec2::254".to_string()];
        let policy = serde_json::to_value(network_policy("train-ab12c", "ml", &labels, &blocked)).unwrap();
        assert_eq!(policy["kind"], "NetworkPolicy");
        assert_eq!(policy["apiVersion"], "networking.k8s.io/v1");
        assert_eq!(policy["metadata"]["name"], "train-ab12c-network");
        let spec = &policy["spec"];
        assert_eq!(spec["podSelector"]["matchLabels"]["jobdeck.dev/job-id"], "train-ab12c");
        assert_eq!(spec["policyTypes"], serde_json::json!(["Ingress", "Egress"]));
        assert_eq!(spec["ingress"][0]["from"][0]["podSelector"]["matchLabels"]["jobdeck.dev/job-id"], "train-ab12c");
        let to = &spec["egress"][0]["to"];
        assert_eq!(to[0]["ipBlock"], serde_json::json!({"cidr": "0.0.0.0/0", "except": ["169.254.0.0/16"]}));
        assert_eq!(to[1]["ipBlock"], serde_json::json!({"cidr": "::/0", "except": ["fd00:ec2::254/128"]}));
    }
}
