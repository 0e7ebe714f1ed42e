//! Server settings gathered from the command line and the config file.

use std::path::PathBuf;

/// How the server runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the database, logs and replica working directories live.
    pub data_dir: PathBuf,
    /// The built console to serve (trunk's `dist/`), if any.
    pub console_dir: Option<PathBuf>,
    /// The workspace's display name.
    pub workspace_name: String,
    /// The executor kind, `local` or `kubernetes`.
    pub executor: String,
    /// Whether logs are collected when a job does not say.
    pub log_collection_default: bool,
}

impl Config {
    /// Defaults for a data directory, as `jobdeck serve` uses without a
    /// config file.
    pub fn for_data_dir(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            console_dir: None,
            workspace_name: "jobdeck".into(),
            executor: "local".into(),
            log_collection_default: true,
        }
    }
}

/// The config file (`--config jobdeck.toml`).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    workspace_name: Option<String>,
    log_collection_default: Option<bool>,
}

impl Config {
    /// Reads a config file; any unknown key is an error naming it, so a typo
    /// does not silently fall back to a default.
    pub fn from_file(path: &std::path::Path, data_dir: &std::path::Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the config file {}: {e}", path.display()))?;
        let file: ConfigFile = toml::from_str(&text)
            .map_err(|e| format!("invalid config file {}: {e}", path.display()))?;
        let mut config = Config::for_data_dir(data_dir);
        if let Some(name) = file.workspace_name {
            config.workspace_name = name;
        }
        if let Some(default) = file.log_collection_default {
            config.log_collection_default = default;
        }
        Ok(config)
    }
}
