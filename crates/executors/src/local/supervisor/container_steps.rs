//! The container steps of an attempt, as the supervisor runs them: the
//! pod of a multi-worker run, the secrets of multi-line variables, pulling
//! and creating the container, reading how it ended and removing it.

use super::*;

/// Runs a command whose outcome only matters to the log (a kill, a
/// removal).
pub(super) fn run_quietly(
    command: &[String],
    env: &[(String, String)],
    run_dir: &Path,
    log: &Option<Arc<Mutex<LogWriter>>>,
) {
    match run_step(command, env, run_dir, false) {
        Ok(out) if out.success() => {}
        Ok(out) => note(log, &format!("'{}' failed: {}", command.join(" "), out.words())),
        Err(e) => note(log, &jobdeck_core::error_chain(&e)),
    }
}

/// Removes the attempt's container, then the secrets it read its
/// variables from.
pub(super) fn remove_container(
    steps: &ContainerSteps,
    env: &[(String, String)],
    run_dir: &Path,
    log: &Option<Arc<Mutex<LogWriter>>>,
) {
    let _run = steps.run_lock().map(super::super::run_network::FileLock::take);
    run_quietly(&steps.remove(), env, run_dir, log);
    for secret in &steps.secrets {
        // A secret that was never created (the pull failed) is not an error.
        let _ = run_step(&steps.remove_secret(secret), env, run_dir, false);
    }
    if let Some(pod) = &steps.pod {
        // Refused while another worker's container is in it: the last
        // worker out removes the pod.
        let _ = run_step(&steps.remove_pod(pod), env, run_dir, false);
    }
    super::super::run_network::remove(run_dir, env, steps);
}

/// Creates the pod a multi-worker job's containers share, unless another
/// worker already did.
pub(super) fn ensure_pod(run_dir: &Path, spec: &SuperviseSpec, steps: &ContainerSteps) -> Result<(), String> {
    let Some(pod) = &steps.pod else { return Ok(()) };
    let exists = || run_step(&steps.pod_exists(pod), &spec.env, run_dir, false).is_ok_and(|o| o.success());
    if exists() {
        return Ok(());
    }
    match run_step(&steps.create_pod(pod), &spec.env, run_dir, false) {
        Ok(out) if out.success() => Ok(()),
        // Another worker created it meanwhile.
        Ok(_) if exists() => Ok(()),
        Ok(out) => Err(format!("the engine could not create the pod {}: {}", pod.name, out.words())),
        Err(e) => Err(jobdeck_core::error_chain(&e)),
    }
}

/// Creates the podman secrets that carry the variables an env file cannot
/// hold: each value goes through a 0600 file of the run directory that is
/// removed at once, never through a command line or an environment.
pub(super) fn create_secrets(run_dir: &Path, spec: &SuperviseSpec, steps: &ContainerSteps) -> Result<(), String> {
    let file = run_dir.join(SECRET_FILE);
    for secret in &steps.secrets {
        // One left by an earlier supervisor of this attempt is replaced.
        let _ = run_step(&steps.remove_secret(secret), &spec.env, run_dir, false);
        write_atomic(&file, secret.value.as_bytes(), 0o600)
            .map_err(|e| format!("cannot write the value of {}: {e}", secret.variable))?;
        let created = run_step(&steps.create_secret(secret, &file), &spec.env, run_dir, false);
        let _ = std::fs::remove_file(&file);
        match created {
            Ok(out) if out.success() => {}
            Ok(out) => {
                return Err(format!("the engine could not store the value of {}: {}", secret.variable, out.words()))
            }
            Err(e) => return Err(jobdeck_core::error_chain(&e)),
        }
    }
    Ok(())
}

pub(super) fn ended_now(describe: impl FnOnce(&mut ExitRecord)) -> ExitRecord {
    let mut record = ExitRecord { ended_at: now_millis(), ..ExitRecord::default() };
    describe(&mut record);
    record
}

/// Pulls the image when needed and creates the container; returns the
/// container's id, or how the attempt ended when it cannot run.
pub(super) fn prepare_container(
    run_dir: &Path,
    spec: &SuperviseSpec,
    steps: &ContainerSteps,
    volume_sources: &[PathBuf],
    log: &Option<Arc<Mutex<LogWriter>>>,
) -> Result<String, Box<ExitRecord>> {
    let env = &spec.env;
    let present = !steps.always_pull
        && run_step(&steps.image_present(), env, run_dir, false).map(|o| o.success()).unwrap_or(false);
    if !present {
        Stage::Pulling.write(run_dir);
        note(log, &format!("pulling image {}", steps.image));
        let pulled = pull(run_dir, spec, steps);
        match pulled {
            Ok(out) if out.success() => note(log, &format!("pulled image {}", steps.image)),
            Ok(out) if out.status.is_none() => return Err(Box::new(ended_now(|r| r.stop_requested = true))),
            Ok(out) => {
                let words = out.words();
                note(log, &format!("cannot pull image {}: {words}", steps.image));
                return Err(Box::new(ended_now(|r| r.image_pull_error = Some(words))));
            }
            Err(e) => {
                let message = jobdeck_core::error_chain(&e);
                note(log, &message);
                return Err(Box::new(ended_now(|r| r.engine_error = Some(message))));
            }
        }
    }
    if stop_wanted(run_dir) {
        return Err(Box::new(ended_now(|r| r.stop_requested = true)));
    }
    Stage::Creating.write(run_dir);
    // Held until the container exists on the network, in the pod (the
    // function's end).
    let _run = steps.run_lock().map(super::super::run_network::FileLock::take);
    let shared = create_secrets(run_dir, spec, steps)
        .and_then(|()| super::super::run_network::ensure(run_dir, &spec.env, steps))
        .and_then(|()| ensure_pod(run_dir, spec, steps));
    if let Err(message) = shared {
        note(log, &message);
        return Err(Box::new(ended_now(|r| r.engine_error = Some(message))));
    }
    let env_path = run_dir.join(ENV_FILE);
    let lines: String = steps.env_file.iter().map(|(name, value)| format!("{name}={value}\n")).collect();
    if let Err(e) = write_atomic(&env_path, lines.as_bytes(), 0o600) {
        let message = format!("cannot write the container's environment: {e}");
        note(log, &message);
        return Err(Box::new(ended_now(|r| r.engine_error = Some(message))));
    }
    let created = run_step(&steps.create(&env_path, volume_sources), env, run_dir, false);
    let _ = std::fs::remove_file(&env_path);
    match created {
        Ok(out) if out.success() => match super::super::run_network::block_routes(run_dir, env, steps) {
            Ok(()) => Ok(out.stdout.trim().to_string()),
            Err(super::super::run_network::BlockError::Init(words)) => {
                note(log, &format!("the engine could not set the container up: {words}"));
                Err(Box::new(ended_now(|r| {
                    if cannot_run(&words) {
                        r.cannot_run = Some(words);
                    } else {
                        r.engine_error = Some(words);
                    }
                })))
            }
            Err(super::super::run_network::BlockError::Route(message)) => {
                note(log, &message);
                Err(Box::new(ended_now(|r| r.engine_error = Some(message))))
            }
        },
        Ok(out) => {
            let words = out.words();
            note(log, &format!("the engine could not create the container: {words}"));
            Err(Box::new(ended_now(|r| {
                r.exit_code = out.status.and_then(|s| s.code());
                if cannot_run(&words) {
                    r.cannot_run = Some(words);
                } else {
                    r.engine_error = Some(words);
                }
            })))
        }
        Err(e) => {
            let message = jobdeck_core::error_chain(&e);
            note(log, &message);
            Err(Box::new(ended_now(|r| r.engine_error = Some(message))))
        }
    }
}

/// `<engine> pull`, with the job's registry credentials in an auth file of
/// the run directory for as long as the pull takes: never in the server
/// user's home, where every later pull of that user would find them.
pub(super) fn pull(run_dir: &Path, spec: &SuperviseSpec, steps: &ContainerSteps) -> Result<StepOutput, StepError> {
    let mut env = spec.env.clone();
    let mut auth: Option<PathBuf> = None;
    let mut written: Option<PathBuf> = None;
    if let Some(login) = &steps.login {
        let file = match steps.engine_kind() {
            crate::container::Engine::Podman => run_dir.join(AUTH_FILE),
            crate::container::Engine::Docker => {
                let dir = run_dir.join(DOCKER_CONFIG_DIR);
                std::fs::create_dir_all(&dir).map_err(|source| StepError::CreateDir { path: dir.clone(), source })?;
                env.retain(|(name, _)| name != "DOCKER_CONFIG");
                env.push(("DOCKER_CONFIG".into(), dir.to_string_lossy().into_owned()));
                written = Some(dir.clone());
                dir.join("config.json")
            }
        };
        write_atomic(&file, login.auth_file().as_bytes(), 0o600).map_err(StepError::Credentials)?;
        auth = Some(file);
    }
    let out = run_step(&steps.pull(auth.as_deref()), &env, run_dir, true);
    if let Some(file) = &auth {
        let _ = std::fs::remove_file(file);
    }
    if let Some(dir) = &written {
        let _ = std::fs::remove_dir_all(dir);
    }
    out
}

/// Whether the engine's words say the container's command cannot run (it
/// does not exist or is not executable): the job's configuration, not the
/// engine.
pub(super) fn cannot_run(words: &str) -> bool {
    let words = words.to_ascii_lowercase();
    ["not found", "permission denied", "no such file or directory", "not executable"].iter().any(|w| words.contains(w))
        // Podman 4 does not make a working directory the image lacks.
        || (words.contains("workdir") && words.contains("does not exist"))
}

/// The part of the engine's `State` object that says how a container ended.
#[derive(Debug, Deserialize)]
pub(super) struct ContainerState {
    #[serde(rename = "ExitCode", default)]
    exit_code: i32,
    #[serde(rename = "OOMKilled", default)]
    oom_killed: bool,
    #[serde(rename = "StartedAt", default)]
    started_at: String,
    #[serde(rename = "Error", default)]
    error: String,
}

impl ContainerState {
    /// Engines report a container that never started with the zero time.
    fn never_started(&self) -> bool {
        self.started_at.is_empty() || self.started_at.starts_with("0001-")
    }
}

/// Completes `record` from the engine's account of the container: its exit
/// code, an OOM kill, or that it never started (and why).
pub(super) fn finish_container(
    steps: &ContainerSteps,
    env: &[(String, String)],
    run_dir: &Path,
    container_id: &str,
    start_words: &str,
    record: &mut ExitRecord,
) {
    let Ok(out) = run_step(&steps.inspect(), env, run_dir, false) else { return };
    let Some(state) = out.success().then(|| serde_json::from_str::<ContainerState>(out.stdout.trim()).ok()).flatten()
    else {
        return;
    };
    if state.never_started() {
        let words = if state.error.trim().is_empty() { start_words.to_string() } else { state.error.clone() };
        let words = if words.trim().is_empty() { "the container never started".to_string() } else { words };
        if cannot_run(&words) {
            record.cannot_run = Some(words);
        } else {
            record.engine_error = Some(words);
        }
        return;
    }
    record.exit_code = Some(state.exit_code);
    record.signal = None;
    // cgroup v1 engines do not always notice an OOM kill; the kernel log
    // names the container's cgroup, which holds its id.
    let killed = state.oom_killed || state.exit_code == 128 + libc::SIGKILL;
    let victim = (killed && !container_id.is_empty()).then(|| cgroup::container_oom_victim(container_id)).flatten();
    if state.oom_killed || victim.is_some() {
        record.oom_killed = state.exit_code != 0;
        record.oom_victim = victim;
    }
}
