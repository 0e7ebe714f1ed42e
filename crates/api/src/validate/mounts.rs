//! Mounts: their paths inside the container and the volumes they name.

use super::*;

/// Checks a mount path: absolute, normalized (no `.` or `..` segments, no
/// `//`, no trailing `/`), without `:` (container engines split volume
/// arguments on it) and not a reserved system path
/// ([`RESERVED_MOUNT_PATHS`], [`RESERVED_MOUNT_TREES`]).
pub fn check_mount_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("must not be empty".into());
    }
    if !path.starts_with('/') {
        return Err("must be an absolute path (start with '/')".into());
    }
    if has_control(path) {
        return Err("must not contain control characters".into());
    }
    // Judge the path as the container would resolve it, so `/etc/` or
    // `/data/../etc` cannot slip past the reserved list.
    let normal = normalize_path(path);
    if RESERVED_MOUNT_PATHS.contains(&normal.as_str()) {
        return Err(format!("'{normal}' is a system path and cannot be a mount path"));
    }
    if let Some(tree) =
        RESERVED_MOUNT_TREES.iter().find(|t| normal.strip_prefix(*t).is_some_and(|rest| rest.starts_with('/')))
    {
        return Err(format!("'{normal}' is inside '{tree}', which nothing may be mounted into"));
    }
    if path.contains(':') {
        return Err("must not contain ':'".into());
    }
    if path.split('/').any(|s| s == "..") {
        return Err("must not contain '..' segments".into());
    }
    if path.split('/').any(|s| s == ".") {
        return Err("must not contain '.' segments".into());
    }
    if has_pair(path, b"//") {
        return Err("must not contain '//'".into());
    }
    if path.len() > 1 && path.ends_with('/') {
        return Err("must not end with '/'".into());
    }
    Ok(())
}

/// `path` with `.`, `..`, repeated and trailing slashes resolved, as an
/// absolute path.
pub(super) fn normalize_path(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Checks the volume a mount comes `from`: a volume name, `node-local`, or
/// `node-<type>:<name>` as the lep CLI writes it.
/// Lepton's form of a node-group volume in a mount's `from`.
pub const NODE_VOLUME_PREFIX: &str = "node-nfs:";

/// The name Lepton clients know a configured volume by: the volume's key
/// without [`NODE_VOLUME_PREFIX`]. A mount names the volume by its key or by
/// `node-nfs:<name>` (as the TAO SDK writes it).
pub fn volume_display_name(key: &str) -> &str {
    key.strip_prefix(NODE_VOLUME_PREFIX).unwrap_or(key)
}

/// The configured volume key a mount's `from` names, among `keys`.
pub fn volume_key<'a>(from: &str, keys: impl IntoIterator<Item = &'a String>) -> Option<&'a String> {
    let wanted = volume_display_name(from);
    keys.into_iter().find(|key| key.as_str() == from || volume_display_name(key) == wanted)
}

pub fn check_volume(from: &str) -> Result<(), String> {
    if from.trim().is_empty() {
        return Err("must name a volume".into());
    }
    if from.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("must not contain spaces or control characters".into());
    }
    if from.starts_with("node-") && from != "node-local" {
        let valid = from
            .split_once(':')
            .is_some_and(|(kind, name)| kind.len() > "node-".len() && !name.is_empty() && !name.contains(':'));
        if !valid {
            return Err("must be 'node-local' or 'node-<type>:<name>', such as 'node-nfs:my-nfs'".into());
        }
    }
    Ok(())
}

/// Checks the path inside a volume: it may not climb out of the volume,
/// and holds no `:` or `,`, which a container engine's volume argument
/// (`-v source:target:options`) would read as its separators.
pub fn check_volume_path(path: &str) -> Result<(), String> {
    if has_control(path) {
        return Err("must not contain control characters".into());
    }
    if path.split('/').any(|s| s == "..") {
        return Err("must not contain '..' segments: a mount stays inside its volume".into());
    }
    if path.contains([':', ',']) {
        return Err("must not contain ':' or ',' (container engines split volume arguments on them)".into());
    }
    Ok(())
}

pub(super) fn check_mounts(mounts: &[Mount], problems: &mut Problems) {
    let mut seen = Keys::default();
    for (i, mount) in mounts.iter().enumerate() {
        let path = format!("spec.mounts[{i}]");
        if let Err(message) = check_mount_path(&mount.mount_path) {
            problems.add(format!("{path}.mount_path"), message);
        } else {
            seen.add(&mount.mount_path, i);
        }
        if let Err(message) = check_volume(&mount.from) {
            problems.add(format!("{path}.from"), message);
        }
        if let Some(Err(message)) = mount.path.as_deref().map(check_volume_path) {
            problems.add(format!("{path}.path"), message);
        }
    }
    for (i, path, first) in seen.repeats() {
        problems
            .add(format!("spec.mounts[{i}].mount_path"), format!("'{path}' is already used by spec.mounts[{first}]"));
    }
}
