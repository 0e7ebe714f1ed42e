//! The container engine of the local executor's container mode: which one
//! is installed, whether it can run a container at all, and what of the
//! server's environment it needs.
//!
//! Without an explicit `[executor.local] mode`, the server probes at start:
//! podman (else docker) on `PATH` that actually runs a container means
//! container mode, anything less means process mode, and the server says
//! which and why ([`resolve`]). A probe that only asked `info` would accept
//! an engine whose runtime cannot start a container (crun failing on
//! `setrlimit` in some VMs), so podman is asked to run `/bin/true` from the
//! host's own root, mounted read-only as an overlay's lower layer: nothing
//! is pulled and nothing on the host is written. Docker has no such flag; a
//! daemon answering `info` is taken as working.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use jobdeck_core::config::{LocalExecutorConfig, LocalMode};

/// Which engine's flags to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Docker,
    Podman,
}

impl Engine {
    /// The engine a configured binary is: anything whose file name contains
    /// `podman` is podman, everything else speaks docker's flags.
    pub fn from_binary(binary: &str) -> Engine {
        let name = Path::new(binary).file_name().and_then(|n| n.to_str()).unwrap_or(binary);
        if name.contains("podman") {
            Engine::Podman
        } else {
            Engine::Docker
        }
    }
}

/// Variables of the server's environment that configure the engine
/// (`CONTAINERS_CONF`, `CONTAINERS_REGISTRIES_CONF`, `DOCKER_HOST`, …): the
/// engine process of every replica gets them, the container never does.
pub fn is_engine_setting(name: &str) -> bool {
    name.starts_with("CONTAINERS_")
        || name.starts_with("DOCKER_")
        || matches!(name, "XDG_RUNTIME_DIR" | "XDG_CONFIG_HOME" | "XDG_DATA_HOME")
}

/// The engine settings of an environment, sorted.
pub fn engine_settings(vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>) -> Vec<(String, String)> {
    let mut settings: Vec<(String, String)> = vars
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .filter(|(name, _)| is_engine_setting(name))
        .collect();
    settings.sort();
    settings
}

/// The environment of the container engine's process beyond the inherited
/// basics: the engine settings of the server's environment `vars`, then the
/// config's `engine_environment`.
pub fn engine_env(
    settings: &LocalExecutorConfig,
    vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Vec<(String, String)> {
    let mut env = engine_settings(vars);
    for (name, value) in &settings.engine_environment {
        env.retain(|(n, _)| n != name);
        env.push((name.clone(), value.clone()));
    }
    env
}

/// The first of `names` that is an executable file in `path` (a `PATH`
/// value), as a full path.
fn find_in_path(names: &[&str], path: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    names.iter().find_map(|name| {
        std::env::split_paths(path).map(|dir| dir.join(name)).find(|candidate| {
            std::fs::metadata(candidate).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// The engine binary to use: the configured one, else podman, else docker
/// from `PATH`.
pub fn find(configured: &str) -> Option<String> {
    let configured = configured.trim();
    if !configured.is_empty() {
        return Some(configured.to_string());
    }
    let path = std::env::var("PATH").unwrap_or_default();
    find_in_path(&["podman", "docker"], &path).map(|p| p.to_string_lossy().into_owned())
}

/// Why an engine cannot run containers here.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("cannot run {binary}")]
    Run {
        binary: String,
        #[source]
        source: std::io::Error,
    },
    /// The engine ran and failed; `said` is the last line of its standard
    /// error.
    #[error("`{command}` failed ({status}): {said}")]
    Refused { command: String, status: std::process::ExitStatus, said: String },
}

/// Whether `binary` can run a container here, with `env` added to the
/// server's environment; the error says why not.
pub fn probe(binary: &str, env: &[(String, String)]) -> Result<(), ProbeError> {
    let args: &[&str] = match Engine::from_binary(binary) {
        Engine::Podman => &["run", "--rm", "--network", "none", "--rootfs", "/:O", "/bin/true"],
        Engine::Docker => &["info", "--format", "{{.ServerVersion}}"],
    };
    let output = Command::new(binary)
        .args(args)
        .envs(env.iter().cloned())
        .stdin(Stdio::null())
        .output()
        .map_err(|source| ProbeError::Run { binary: binary.into(), source })?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    Err(ProbeError::Refused {
        command: format!("{binary} {}", args.join(" ")),
        status: output.status,
        said: last.to_string(),
    })
}

/// The file of the data directory that says this server ran containers:
/// once it has, an engine that breaks never turns into running jobs
/// unisolated (below).
pub const MODE_MARKER: &str = "container-mode";

/// Decides the mode of `settings` when it is `auto`, and names the engine
/// binary in container mode. Returns what to tell the user. `ran_containers`
/// says this data directory's server ran containers before: then an engine
/// that fails its probe (or is gone) keeps container mode, whose replicas
/// fail saying the engine is broken, rather than fall back to running jobs
/// as processes of the server's user without a word (docs/security.md);
/// `mode = "process"` in the config is how an operator asks for that.
pub fn resolve(settings: &mut LocalExecutorConfig, env: &[(String, String)], ran_containers: bool) -> String {
    resolve_with(settings, find, |binary| probe(binary, env), ran_containers)
}

/// How the notes say a mode was asked for rather than found: the config's
/// `mode`, or the `--local-mode` flag that overrides it.
const CHOSEN: &str = "(as configured)";

fn resolve_with<E: std::error::Error + 'static>(
    settings: &mut LocalExecutorConfig,
    find: impl Fn(&str) -> Option<String>,
    probe: impl Fn(&str) -> Result<(), E>,
    ran_containers: bool,
) -> String {
    let keep_containers = "this server ran its jobs in containers before, so they are not run unisolated now: \
                           they fail until the engine works, or until the config says mode = \"process\"";
    match settings.mode {
        LocalMode::Process => format!("process mode {CHOSEN}: replicas run as processes; images are ignored"),
        LocalMode::Container => match find(&settings.engine) {
            Some(binary) => {
                let note = match probe(&binary) {
                    Ok(()) => format!("container mode {CHOSEN} with {binary}"),
                    Err(why) => format!(
                        "container mode {CHOSEN} with {binary}, which failed its probe: {}",
                        jobdeck_core::error_chain(&why)
                    ),
                };
                settings.engine = binary;
                note
            }
            None => {
                settings.engine = "docker".into();
                format!("container mode {CHOSEN}, but neither podman nor docker is on PATH")
            }
        },
        LocalMode::Auto => match find(&settings.engine) {
            Some(binary) => match probe(&binary) {
                Ok(()) => {
                    let note = format!("container mode: {binary} runs containers here");
                    settings.engine = binary;
                    settings.mode = LocalMode::Container;
                    note
                }
                Err(why) if ran_containers => {
                    settings.mode = LocalMode::Container;
                    let note = format!(
                        "container mode with {binary}, which failed its probe: {}; {keep_containers}",
                        jobdeck_core::error_chain(&why)
                    );
                    settings.engine = binary;
                    note
                }
                Err(why) => {
                    settings.mode = LocalMode::Process;
                    format!(
                        "process mode: {}; replicas run as processes and images are ignored",
                        jobdeck_core::error_chain(&why)
                    )
                }
            },
            None if ran_containers => {
                settings.mode = LocalMode::Container;
                settings.engine = "podman".into();
                format!("container mode, but neither podman nor docker is on PATH; {keep_containers}")
            }
            None => {
                settings.mode = LocalMode::Process;
                "process mode: no container engine (podman or docker) is installed; replicas run as processes and \
                 images are ignored"
                    .into()
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_is_decided_by_what_is_installed_and_works() {
        // (configured mode, configured engine, found binary, probe result, resolved mode, engine, note contains)
        type Case = (
            LocalMode,
            &'static str,
            Option<&'static str>,
            Result<(), &'static str>,
            LocalMode,
            &'static str,
            &'static str,
        );
        let cases: Vec<Case> = vec![
            (
                LocalMode::Auto,
                "",
                Some("/usr/bin/podman"),
                Ok(()),
                LocalMode::Container,
                "/usr/bin/podman",
                "container mode",
            ),
            (
                LocalMode::Auto,
                "",
                Some("/usr/bin/podman"),
                Err("crun: setrlimit"),
                LocalMode::Process,
                "",
                "crun: setrlimit",
            ),
            (LocalMode::Auto, "", None, Ok(()), LocalMode::Process, "", "no container engine"),
            (LocalMode::Process, "", Some("/usr/bin/podman"), Ok(()), LocalMode::Process, "", "as configured"),
            (
                LocalMode::Container,
                "docker",
                Some("docker"),
                Err("no daemon"),
                LocalMode::Container,
                "docker",
                "failed its probe",
            ),
            (LocalMode::Container, "", None, Ok(()), LocalMode::Container, "docker", "neither podman nor docker"),
        ];
        for (mode, engine, found, probed, want_mode, want_engine, note_part) in cases {
            let mut settings = LocalExecutorConfig { mode, engine: engine.into(), ..LocalExecutorConfig::default() };
            let note = resolve_with(
                &mut settings,
                |_| found.map(String::from),
                |_| probed.map_err(std::io::Error::other),
                false,
            );
            assert_eq!(settings.mode, want_mode, "{mode:?} {found:?} {probed:?}");
            assert_eq!(settings.engine, want_engine, "{mode:?} {found:?} {probed:?}");
            assert!(note.contains(note_part), "{note}");
        }
    }

    /// A server that ran containers never falls back to processes on its
    /// own: with the engine broken or gone it stays in container mode and
    /// says why; only the config's `mode = "process"` runs jobs unisolated.
    #[test]
    fn a_server_that_ran_containers_never_falls_back_to_processes_by_itself() {
        let broken = |_: &str| Err::<(), _>(std::io::Error::other("runc: exec failed"));
        let mut settings = LocalExecutorConfig::default();
        let note = resolve_with(&mut settings, |_| Some("/usr/bin/podman".into()), broken, true);
        assert_eq!((settings.mode, settings.engine.as_str()), (LocalMode::Container, "/usr/bin/podman"));
        assert!(note.contains("runc: exec failed") && note.contains("not run unisolated"), "{note}");

        let mut settings = LocalExecutorConfig::default();
        let note = resolve_with(&mut settings, |_| None, broken, true);
        assert_eq!(settings.mode, LocalMode::Container);
        assert!(note.contains("neither podman nor docker") && note.contains("not run unisolated"), "{note}");

        let mut settings = LocalExecutorConfig { mode: LocalMode::Process, ..LocalExecutorConfig::default() };
        resolve_with(&mut settings, |_| Some("/usr/bin/podman".into()), broken, true);
        assert_eq!(settings.mode, LocalMode::Process, "asked for in the config");
    }

    #[test]
    fn only_engine_settings_reach_the_engine() {
        let vars = [
            ("CONTAINERS_REGISTRIES_CONF", "/etc/reg.conf"),
            ("DOCKER_HOST", "unix:///run/docker.sock"),
            ("XDG_RUNTIME_DIR", "/run/user/1000"),
            ("JOBDECK_TOKEN", "secret"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
        ];
        let got = engine_settings(vars.iter().map(|(n, v)| (n.into(), v.into())));
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["CONTAINERS_REGISTRIES_CONF", "DOCKER_HOST", "XDG_RUNTIME_DIR"]);
    }

    #[test]
    fn engines_are_found_in_path_in_order() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let make = |path: &Path| {
            std::fs::write(path, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        make(&a.join("docker"));
        let path = std::env::join_paths([&a, &b]).unwrap().into_string().unwrap();
        assert_eq!(find_in_path(&["podman", "docker"], &path), Some(a.join("docker")));
        make(&b.join("podman"));
        assert_eq!(find_in_path(&["podman", "docker"], &path), Some(b.join("podman")));
        std::fs::write(a.join("podman"), "not executable").unwrap();
        assert_eq!(find_in_path(&["podman", "docker"], &path), Some(b.join("podman")));
    }
}
