//! The control plane's layering inside the server crate, checked
//! (docs/architecture.md, "Layers"): no cycle between the server's
//! top-level modules, and the lower layers know nothing of the upper ones —
//! executors know no handler; the pure cores (config, failure, topology)
//! know no executor implementation. Read from the source: a module depends
//! on another when its code (outside its tests) names `crate::<other>`, and
//! on the store when it names `jobdeck_store`. What the crates below the
//! server may name (the store names nothing of the server) is the
//! compiler's to hold, not this test's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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

/// Module → the modules its code names.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut modules = BTreeSet::new();
    for entry in std::fs::read_dir(&src).unwrap().flatten() {
        let file = entry.file_name().to_string_lossy().to_string();
        let name = match file.strip_suffix(".rs") {
            Some(name) => name.to_string(),
            None if entry.path().is_dir() => file,
            None => continue,
        };
        if !matches!(name.as_str(), "lib" | "main") {
            modules.insert(name);
        }
    }
    let mut graph = BTreeMap::new();
    for module in &modules {
        let file = src.join(format!("{module}.rs"));
        // A module is its file, its directory, or both (`config.rs` with
        // `config/auth.rs`).
        let dir = src.join(module);
        let mut files = if dir.is_dir() { rust_files(&dir) } else { Vec::new() };
        if file.is_file() {
            files.push(file);
        }
        let mut uses = BTreeSet::new();
        let mut files_name_store = false;
        for file in files {
            let text = code(&file);
            files_name_store |= text.contains("jobdeck_store");
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
        // The storage crate, as if it were still a module: the pure cores
        // must not reach it.
        if files_name_store {
            uses.insert("store".to_string());
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

#[test]
fn the_servers_modules_form_no_cycle() {
    let graph = graph();
    assert!(graph.len() > 8, "the source was read: {graph:?}");
    for module in graph.keys() {
        if let Some(found) = cycle(&graph, module) {
            panic!("modules depend on each other in a cycle: {}", found.join(" → "));
        }
    }
}

#[test]
fn lower_layers_know_nothing_of_the_upper_ones() {
    let graph = graph();
    // The HTTP layer (`http/`: every handler, `AppError`, authentication,
    // the router's layers) and the command line are the top; nothing below
    // names them. The layers below have their own errors (`StoreError`,
    // `SchedulerError`, `ExecutorError`), which the handlers convert at
    // their edge.
    let top = ["http", "cli"];
    // (module, what it must not depend on).
    let rules: Vec<(&str, Vec<&str>)> = vec![
        ("executor", [&top[..], &["scheduler", "kubernetes", "slurm"]].concat()),
        ("spec", [&top[..], &["executor", "scheduler", "kubernetes", "slurm", "store"]].concat()),
        ("kubernetes", [&top[..], &["scheduler", "slurm"]].concat()),
        ("slurm", [&top[..], &["scheduler", "kubernetes"]].concat()),
        ("scheduler", top.to_vec()),
        ("config", [&top[..], &["executor", "store", "scheduler", "kubernetes", "slurm"]].concat()),
        ("failure", [&top[..], &["executor", "scheduler", "kubernetes", "slurm"]].concat()),
        ("topology", [&top[..], &["executor", "scheduler", "spec"]].concat()),
        ("metrics", [&top[..], &["executor", "scheduler"]].concat()),
    ];
    let mut broken = Vec::new();
    for (module, forbidden) in rules {
        let uses = graph.get(module).unwrap_or_else(|| panic!("no module {module}"));
        for name in forbidden {
            if uses.contains(name) {
                broken.push(format!("{module} depends on {name}"));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}
