//! An attempt's run directory: the files through which the controller
//! starts a replica's supervisor (its spec), asks it to stop, and learns how
//! the attempt stands (its stage, its pid, how it ended) — also after the
//! server restarted or the supervisor died.

use super::*;

/// Why an attempt could not be started. Stored with the attempt as one
/// sentence, the error and its sources (`error::chain`), which the replica
/// table shows.
#[derive(Debug, thiserror::Error)]
pub(super) enum AttemptStartError {
    /// The job cannot run as a container here (a rule of container mode).
    #[error("{0}")]
    Container(String),
    #[error("cannot create {}", path.display())]
    RunDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the replica spec")]
    WriteSpec(#[source] std::io::Error),
    #[error("cannot encode the replica spec")]
    EncodeSpec(#[source] serde_json::Error),
    #[error("cannot create the supervisor log")]
    SupervisorLog(#[source] std::io::Error),
    #[error("cannot start the replica supervisor {}", bin.display())]
    Spawn {
        bin: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

pub(super) fn prepare_run_dir(run_dir: &Path, spec: &SuperviseSpec) -> Result<(), AttemptStartError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(run_dir.join("work"))
        .map_err(|source| AttemptStartError::RunDir { path: run_dir.to_path_buf(), source })?;
    let bytes = serde_json::to_vec(spec).map_err(AttemptStartError::EncodeSpec)?;
    // The spec holds secret values: owner-only, and the supervisor deletes
    // it once read.
    crate::atomic_file::write_atomic(&run_dir.join(SPEC_FILE), &bytes, 0o600).map_err(AttemptStartError::WriteSpec)
}

pub(super) fn spawn_supervisor(bin: &Path, run_dir: &Path) -> Result<tokio::process::Child, AttemptStartError> {
    let log = std::fs::File::create(run_dir.join("supervisor.log")).map_err(AttemptStartError::SupervisorLog)?;
    let log_err = log.try_clone().map_err(AttemptStartError::SupervisorLog)?;
    let mut command = tokio::process::Command::new(bin);
    command
        .arg("supervise")
        .arg(run_dir)
        .stdin(std::process::Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .kill_on_drop(false);
    // SAFETY: setsid and signal are async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            process::new_session()?;
            process::reset_signals();
            Ok(())
        });
    }
    command.spawn().map_err(|source| AttemptStartError::Spawn { bin: bin.to_path_buf(), source })
}

pub(super) fn read_exit(run_dir: &Path) -> Option<ExitRecord> {
    let bytes = std::fs::read(run_dir.join(EXIT_FILE)).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Declares an attempt over on behalf of a supervisor that is gone (or never
/// came): takes its lock, so none can start it later, and writes `exit.json`
/// unless the supervisor wrote one after all.
pub(super) fn claim_end(run_dir: &Path, describe: impl FnOnce(&mut ExitRecord)) -> ExitRecord {
    let _ = std::fs::create_dir_all(run_dir);
    let lock = process::try_lock(&run_dir.join(LOCK_FILE)).ok().flatten();
    if let Some(record) = read_exit(run_dir) {
        return record;
    }
    let mut record = ExitRecord { ended_at: jobdeck_store::now_millis(), ..ExitRecord::default() };
    describe(&mut record);
    if lock.is_some() {
        let bytes = serde_json::to_vec(&record).unwrap_or_default();
        let _ = crate::atomic_file::write_atomic(&run_dir.join(EXIT_FILE), &bytes, 0o644);
    }
    record
}

/// Declares the attempt of a supervisor that vanished lost, and kills what it
/// left running: the replica is in the supervisor's session (a container,
/// outside it, is removed with `remove_container`), and without its
/// supervisor nothing would ever stop it.
pub(super) fn claim_lost(run_dir: &Path, remove_container: Option<&RemoveContainer>) -> ExitRecord {
    if let Some((pid, start)) = read_pid_file(run_dir) {
        let killed = process::kill_orphaned_session(pid, start);
        if killed > 0 {
            tracing::warn!(run_dir = %run_dir.display(), killed, "killed the processes a vanished supervisor left");
        }
    }
    if let Some(((program, args), env)) = remove_container.and_then(|(c, env)| Some((c.split_first()?, env))) {
        let removed = std::process::Command::new(program)
            .args(args)
            .envs(env.iter().cloned())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
        if let Err(e) = removed {
            tracing::warn!(run_dir = %run_dir.display(), error = %e, "cannot remove the container a vanished supervisor left");
        }
    }
    claim_end(run_dir, |r| r.lost = true)
}

/// The command that removes an attempt's container, and the engine's
/// environment to run it in.
type RemoveContainer = (Vec<String>, Vec<(String, String)>);

/// Reports the stages of a container attempt as they change, until it runs
/// or ends.
pub(super) fn watch_stages(run_dir: PathBuf, index: i64, attempt: i64, tx: mpsc::UnboundedSender<ControlMsg>) {
    tokio::spawn(async move {
        let mut last = None;
        loop {
            if run_dir.join(EXIT_FILE).exists() {
                return;
            }
            let read = Stage::read(&run_dir);
            let stage = read.map(|(stage, _)| stage);
            if stage != last {
                if let Some((stage, since)) = read {
                    if tx.send(ControlMsg::Stage { index, attempt, stage, since }).is_err() {
                        return;
                    }
                }
                last = stage;
            }
            if stage == Some(Stage::Running) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
}

/// Asks an attempt's supervisor to stop: the stop file (which it also polls)
/// then SIGTERM, if the recorded process is still that supervisor.
pub(super) fn request_stop(run_dir: &Path, state: &AttemptState) {
    let _ = std::fs::write(run_dir.join(STOP_FILE), b"stop");
    let (pid, start) = match (state.pid, state.pid_start) {
        (Some(pid), Some(start)) => (pid, start),
        _ => match read_pid_file(run_dir) {
            Some(found) => found,
            None => return,
        },
    };
    process::signal_process(pid, start, libc::SIGTERM);
}

pub(super) fn read_pid_file(run_dir: &Path) -> Option<(i32, u64)> {
    let text = std::fs::read_to_string(run_dir.join(PID_FILE)).ok()?;
    let mut parts = text.split_whitespace();
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// Waits for the end of an attempt whose supervisor is not our child (after
/// a restart): polls for `exit.json` and for the supervisor's lock.
pub(super) async fn watch_detached(run_dir: &Path, remove_container: Option<&RemoveContainer>) -> ExitRecord {
    let mut free_since_start = 0u32;
    loop {
        if let Some(record) = read_exit(run_dir) {
            return record;
        }
        let lock_free = !run_dir.exists() || process::try_lock(&run_dir.join(LOCK_FILE)).ok().flatten().is_some();
        if lock_free {
            if run_dir.join(PID_FILE).exists() {
                // The supervisor ran and is gone; it may have written
                // exit.json just before releasing the lock.
                return claim_lost(run_dir, remove_container);
            }
            // No supervisor has started yet: one may be starting right now
            // (the server died just after spawning it). Give it a moment,
            // then declare the attempt never started.
            free_since_start += 1;
            if free_since_start >= 8 {
                return claim_end(run_dir, |r| r.not_started = true);
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
