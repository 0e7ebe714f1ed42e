//! The layering rules the compiler cannot hold (docs/architecture.md,
//! "Crates and invariants"). Which crate may name which is Cargo's to hold:
//! a crate cannot name one that depends on it. What is left is read from
//! the source: inside each crate the top-level modules form no cycle and
//! the lower ones name none of the upper ones; only the store's crate has
//! SQL and only the executors' has the Kubernetes client; only the
//! scheduler writes a job. A module depends on another when its code
//! (outside its tests) names `crate::<other>`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn crate_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name)
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// The code of a file without its unit tests (a `mod tests` or a
/// `*_tests.rs` file, where a test may reach anywhere).
fn code(path: &Path) -> String {
    if path.to_string_lossy().ends_with("_tests.rs") {
        return String::new();
    }
    let text = std::fs::read_to_string(path).unwrap();
    match text.find("#[cfg(test)]\nmod tests").or_else(|| text.find("#[cfg(test)]\npub(crate) mod tests")) {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

/// A crate's top-level module → the modules of the same crate its code
/// names.
fn graph(crate_name: &str) -> BTreeMap<String, BTreeSet<String>> {
    let src = crate_dir(crate_name).join("src");
    let mut modules = BTreeSet::new();
    for entry in std::fs::read_dir(&src).unwrap().flatten() {
        let file = entry.file_name().to_string_lossy().to_string();
        let name = match file.strip_suffix(".rs") {
            Some(name) => name.to_string(),
            None if entry.path().is_dir() => file,
            None => continue,
        };
        if !matches!(name.as_str(), "lib" | "main") && !name.ends_with("_tests") {
            modules.insert(name);
        }
    }
    let mut graph = BTreeMap::new();
    for module in &modules {
        // A module is its file, its directory, or both (`config.rs` with
        // `config/auth.rs`).
        let file = src.join(format!("{module}.rs"));
        let dir = src.join(module);
        let mut files = if dir.is_dir() { rust_files(&dir) } else { Vec::new() };
        if file.is_file() {
            files.push(file);
        }
        let mut uses = BTreeSet::new();
        for file in files {
            let text = code(&file);
            // `crate::a::b`, and `use crate::{a, b::c}`.
            for (at, _) in text.match_indices("crate::") {
                let rest = &text[at + 7..];
                let names: Vec<&str> = match rest.strip_prefix('{') {
                    Some(group) => group.split('}').next().unwrap_or("").split(',').collect(),
                    None => vec![rest],
                };
                for name in names {
                    let word: String = name.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                    if modules.contains(&word) && &word != module {
                        uses.insert(word);
                    }
                }
            }
        }
        graph.insert(module.clone(), uses);
    }
    graph
}

/// A cycle through `start`, if there is one.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![(start.to_string(), vec![start.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((at, path)) = stack.pop() {
        for next in graph.get(&at).into_iter().flatten() {
            if next == start {
                let mut found = path.clone();
                found.push(next.clone());
                return Some(found);
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push((next.clone(), longer));
            }
        }
    }
    None
}

const CRATES: [&str; 4] = ["store", "core", "executors", "server"];

#[test]
fn each_crates_modules_form_no_cycle() {
    for crate_name in CRATES {
        let graph = graph(crate_name);
        assert!(graph.len() >= 2, "the source of {crate_name} was read: {graph:?}");
        for module in graph.keys() {
            if let Some(found) = cycle(&graph, module) {
                panic!("{crate_name}'s modules depend on each other in a cycle: {}", found.join(" → "));
            }
        }
    }
}

#[test]
fn inside_a_crate_lower_modules_know_nothing_of_the_upper_ones() {
    // (crate, module, the modules of the same crate it must not name).
    let rules: Vec<(&str, &str, Vec<&str>)> = vec![
        // The core: the executor contract drives nothing; the pure cores
        // (spec, config, failure, topology, metrics) know neither the
        // contract nor the scheduler.
        ("core", "executor", vec!["scheduler"]),
        ("core", "spec", vec!["executor", "scheduler"]),
        ("core", "config", vec!["executor", "scheduler", "spec", "failure", "metrics"]),
        ("core", "failure", vec!["executor", "scheduler", "metrics"]),
        ("core", "topology", vec!["executor", "scheduler", "spec"]),
        ("core", "metrics", vec!["executor", "scheduler"]),
        // The executors: each concrete executor knows none of the others,
        // and what they share knows none of them.
        ("executors", "kubernetes", vec!["local", "slurm", "run_ledger", "runs"]),
        ("executors", "slurm", vec!["local", "kubernetes"]),
        ("executors", "local", vec!["slurm", "kubernetes"]),
        ("executors", "run_ledger", vec!["local", "slurm", "kubernetes"]),
        ("executors", "runs", vec!["local", "slurm", "kubernetes"]),
        ("executors", "env", vec!["local", "slurm", "kubernetes"]),
        ("executors", "container", vec!["local", "slurm", "kubernetes"]),
        ("executors", "engine", vec!["local", "slurm", "kubernetes"]),
        // The server: the command line uses the HTTP layer, never the
        // other way round.
        ("server", "http", vec!["cli"]),
    ];
    let mut broken = Vec::new();
    for (crate_name, module, forbidden) in rules {
        let graph = graph(crate_name);
        let uses = graph.get(module).unwrap_or_else(|| panic!("no module {module} in {crate_name}"));
        for name in forbidden {
            assert!(graph.contains_key(name), "no module {name} in {crate_name}: the rule is stale");
            if uses.contains(name) {
                broken.push(format!("{crate_name}: {module} depends on {name}"));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// The crates whose manifest names `dependency` outside its
/// `[dev-dependencies]`.
fn crates_depending_on(dependency: &str) -> Vec<&'static str> {
    let mut found = Vec::new();
    for crate_name in ["api", "store", "core", "executors", "server", "precompress"] {
        let manifest = std::fs::read_to_string(crate_dir(crate_name).join("Cargo.toml")).unwrap();
        let dependencies = manifest.split("[dev-dependencies]").next().unwrap();
        if dependencies.lines().any(|line| line.trim_start().starts_with(&format!("{dependency} ="))) {
            found.push(crate_name);
        }
    }
    found
}

#[test]
fn only_the_store_speaks_sql_and_only_the_executors_speak_to_kubernetes() {
    assert_eq!(crates_depending_on("rusqlite"), ["store"]);
    assert_eq!(crates_depending_on("kube"), ["executors"]);
    assert_eq!(crates_depending_on("k8s-openapi"), ["executors"]);
}

#[test]
fn only_the_scheduler_writes_a_job() {
    // The store's calls that create, change or delete a job's row.
    let writes = ["insert_job(", "update_job_runtime(", "update_job_spec(", "delete_job("];
    let scheduler = crate_dir("core").join("src").join("scheduler");
    let (mut in_scheduler, mut elsewhere) = (Vec::new(), Vec::new());
    for crate_name in ["core", "executors", "server"] {
        for file in rust_files(&crate_dir(crate_name).join("src")) {
            let text = code(&file);
            if writes.iter().any(|call| text.contains(&format!(".{call}"))) {
                if file.starts_with(&scheduler) { &mut in_scheduler } else { &mut elsewhere }.push(file);
            }
        }
    }
    assert!(!in_scheduler.is_empty(), "the scheduler's writes were found");
    assert!(elsewhere.is_empty(), "a job is written outside the scheduler: {elsewhere:?}");
}
