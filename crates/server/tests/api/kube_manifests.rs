//! The manifests of deploy/kubernetes/ hang together: every file parses,
//! the kustomization lists them, the Deployment uses the ServiceAccount, the
//! claim and the ConfigMap that exist, and the shipped jobdeck.toml is a
//! config the server accepts.

use std::collections::BTreeMap;

use jobdeck_core::config::{Config, ExecutorKind, MachineInfo};
use jobdeck_executors::kubernetes::KubernetesSettings;
use serde_json::Value;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/kubernetes");

fn manifests() -> BTreeMap<String, Vec<Value>> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(DIR).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let documents: Vec<Value> =
            serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{} is not YAML: {e}", path.display()));
        files.insert(path.file_name().unwrap().to_string_lossy().into_owned(), documents);
    }
    files
}

fn find<'a>(files: &'a BTreeMap<String, Vec<Value>>, kind: &str) -> &'a Value {
    files.values().flatten().find(|d| d["kind"] == kind).unwrap_or_else(|| panic!("no {kind}"))
}

#[test]
fn the_kustomization_lists_every_namespaced_manifest() {
    let files = manifests();
    let kustomization = find(&files, "Kustomization");
    let listed: Vec<&str> =
        kustomization["resources"].as_array().unwrap().iter().map(|r| r.as_str().unwrap()).collect();
    for (name, documents) in &files {
        let cluster_wide = documents.iter().all(|d| d["kind"] == "PriorityClass");
        if name == "kustomization.yaml" || cluster_wide {
            assert!(!listed.contains(&name.as_str()), "{name}");
        } else {
            assert!(listed.contains(&name.as_str()), "{name} is not in kustomization.yaml");
        }
    }
}

#[test]
fn the_deployment_uses_what_the_other_manifests_declare() {
    let files = manifests();
    let deployment = find(&files, "Deployment");
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(deployment["spec"]["replicas"], 1, "SQLite has one writer");
    assert_eq!(deployment["spec"]["strategy"]["type"], "Recreate");
    let account = find(&files, "ServiceAccount")["metadata"]["name"].clone();
    assert_eq!(pod["serviceAccountName"], account);
    let binding = find(&files, "RoleBinding");
    assert_eq!(binding["subjects"][0]["name"], account);
    assert_eq!(binding["roleRef"]["name"], find(&files, "Role")["metadata"]["name"]);
    let volumes = pod["volumes"].as_array().unwrap();
    let claim = find(&files, "PersistentVolumeClaim")["metadata"]["name"].clone();
    assert!(volumes.iter().any(|v| v["persistentVolumeClaim"]["claimName"] == claim));
    let config_map = find(&files, "ConfigMap")["metadata"]["name"].clone();
    assert!(volumes.iter().any(|v| v["configMap"]["name"] == config_map));
    let args: Vec<&str> =
        pod["containers"][0]["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert!(args.contains(&"--data-dir=/data") && args.contains(&"--config=/etc/jobdeck/jobdeck.toml"), "{args:?}");
    let service = find(&files, "Service");
    assert_eq!(service["spec"]["selector"], deployment["spec"]["selector"]["matchLabels"]);
}

#[test]
fn the_shipped_config_is_one_the_server_accepts() {
    let files = manifests();
    let text = find(&files, "ConfigMap")["data"]["jobdeck.toml"].as_str().unwrap().to_string();
    let machine = MachineInfo {
        hostname: "pod".into(),
        cpus: 1.0,
        memory_mb: 1024,
        gpus: 0,
        gpu_product: None,
        gpu_memory_mb: None,
    };
    let config = Config::from_toml(&text, std::path::Path::new("/data"), &machine).unwrap();
    assert_eq!(config.executor.kind, ExecutorKind::Kubernetes);
    let settings = KubernetesSettings::from_table(&config.executor.kubernetes).unwrap();
    for group in settings.node_groups.keys() {
        assert!(config.node_group(group).is_some(), "tolerations for an undeclared node group {group}");
    }
    assert!(config.node_groups.iter().all(|g| !g.node_selector.is_empty()), "every group says where its nodes are");
}
