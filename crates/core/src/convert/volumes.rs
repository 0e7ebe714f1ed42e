//! A directory of the machine named by a job file (dstack's instance paths,
//! a Kubernetes `hostPath` volume) as a mount of a configured volume: the
//! one rule both converters use. Jobdeck mounts only the directories an
//! admin configured (`[executor.local] volumes`), so a path becomes the
//! volume that holds it and the path inside it, which the executor resolves
//! inside the volume as it resolves any mount's (docs/security.md).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// The configured volume whose directory holds the machine's directory
/// `path`, and the path inside it (`/` for the directory itself); `None` for
/// a path outside every volume or one that climbs (`..`), which is not
/// resolved here: a mount never leaves its volume.
pub(crate) fn volume_holding(path: &str, volumes: &BTreeMap<String, PathBuf>) -> Option<(String, String)> {
    let path = Path::new(path);
    if path.components().any(|c| matches!(c, Component::ParentDir)) {
        return None;
    }
    // The deepest volume that holds it, when volumes nest.
    volumes
        .iter()
        .filter_map(|(name, dir)| Some((name, dir, path.strip_prefix(dir).ok()?)))
        .max_by_key(|(_, dir, _)| dir.components().count())
        .map(|(name, _, rest)| (name.clone(), format!("/{}", rest.display())))
}

/// Why a directory outside every volume is not carried over, naming the
/// volumes' directories.
pub(crate) fn outside_every_volume(volumes: &BTreeMap<String, PathBuf>) -> String {
    let roots: Vec<String> = volumes.values().map(|dir| dir.display().to_string()).collect();
    let roots = if roots.is_empty() { "none".to_string() } else { roots.join(", ") };
    format!(
        "a directory of the machine outside every volume an admin configured (their directories: {roots}); choose \
         a volume in the form's Storage mounts"
    )
}
