//! `[secrets]`: where the key that seals secret values at rest is kept
//! (docs/security.md, "Secrets at rest").

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// `[secrets]`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SecretsConfig {
    /// The key file (64 hex digits), outside the data directory. Default:
    /// `<data dir>.key` beside the data directory, created on first start.
    pub key_file: Option<PathBuf>,
    /// Instead of a file: the server's environment variable holding the key.
    pub key_env: Option<String>,
    /// Keys being rotated out: values sealed with them still open, and the
    /// server seals them again with the current key at start.
    pub previous_key_files: Vec<PathBuf>,
}

/// Where the current key is, once the defaults are applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyLocation {
    File(PathBuf),
    Env(String),
}

impl SecretsConfig {
    /// The current key's location for a data directory.
    pub fn key_location(&self, data_dir: &Path) -> Result<KeyLocation, String> {
        if let Some(name) = &self.key_env {
            return Ok(KeyLocation::Env(name.clone()));
        }
        if let Some(file) = &self.key_file {
            return Ok(KeyLocation::File(file.clone()));
        }
        let absolute = std::path::absolute(data_dir).map_err(|e| format!("cannot resolve the data directory: {e}"))?;
        match (absolute.parent(), absolute.file_name()) {
            (Some(parent), Some(name)) => Ok(KeyLocation::File(parent.join(format!("{}.key", name.to_string_lossy())))),
            _ => Err("secrets.key_file must be set when the data directory is '/'".into()),
        }
    }

    /// The rule `[secrets]` must follow, if broken.
    pub fn broken_rule(&self, data_dir: &Path) -> Option<String> {
        if self.key_file.is_some() && self.key_env.is_some() {
            return Some("secrets: give key_file or key_env, not both".into());
        }
        if let Some(name) = &self.key_env {
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Some(format!("secrets.key_env '{name}' must be a variable name"));
            }
        }
        // A key inside the data directory would be copied with the database
        // and protect nothing.
        let canonical = |p: &Path| {
            let absolute = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
            std::fs::canonicalize(&absolute).unwrap_or(absolute)
        };
        let data_dir = canonical(data_dir);
        let files =
            self.key_file.iter().map(|f| ("key_file".to_string(), f)).chain(
                self.previous_key_files.iter().enumerate().map(|(i, f)| (format!("previous_key_files[{i}]"), f)),
            );
        for (key, file) in files {
            let dir = file.parent().map(canonical).unwrap_or_default();
            if dir.starts_with(&data_dir) {
                return Some(format!(
                    "secrets.{key} ('{}') is inside the data directory, which a backup copies with the database",
                    file.display()
                ));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_beside_the_data_directory_unless_the_config_says_where() {
        let config = SecretsConfig::default();
        assert_eq!(
            config.key_location(Path::new("/var/lib/jobdeck")),
            Ok(KeyLocation::File("/var/lib/jobdeck.key".into()))
        );
        let env = SecretsConfig { key_env: Some("JOBDECK_SECRET_KEY".into()), ..SecretsConfig::default() };
        assert_eq!(env.key_location(Path::new("/d")), Ok(KeyLocation::Env("JOBDECK_SECRET_KEY".into())));
        let inside = SecretsConfig { key_file: Some("/var/lib/jobdeck/key".into()), ..SecretsConfig::default() };
        let rule = inside.broken_rule(Path::new("/var/lib/jobdeck")).unwrap();
        assert!(rule.contains("secrets.key_file ('/var/lib/jobdeck/key') is inside the data directory"), "{rule}");
        assert!(SecretsConfig::default().broken_rule(Path::new("/var/lib/jobdeck")).is_none());
        let both = SecretsConfig { key_env: Some("K".into()), key_file: Some("/k".into()), ..SecretsConfig::default() };
        assert!(both.broken_rule(Path::new("/d")).is_some());
    }
}
