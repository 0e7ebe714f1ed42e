//! The replica supervisor: `jobdeck supervise <run dir>`, a small process the
//! local executor starts (in its own session) for every replica attempt.
//!
//! It outlives the server — a `kill -9` of `jobdeck serve` leaves it and the
//! replica running — and leaves everything the server needs to take over in
//! the run directory:
//!
//! ```text
//! spec.json        what to run (written by the server; read, then deleted:
//!                  it holds secret values)
//! lock             flock'd by the supervisor for as long as it lives
//! supervisor.pid   "<pid> <start time>" of the supervisor
//! stop             written by the server to ask for a stop (then SIGTERM)
//! stage            container mode: `pulling`, `creating`, then `running`
//! auth.json        container mode: registry credentials for the pull (0600,
//!                  removed once the pull ended)
//! env              container mode: the container's environment for
//!                  `create` (0600, removed once the container exists)
//! exit.json        how the attempt ended, written atomically at the end
//! work/            the replica's working directory
//! ```
//!
//! The lock makes an attempt run at most once: a supervisor that cannot take
//! it, or finds `exit.json` already there, exits without running anything;
//! the server declares a vanished supervisor's attempt over by taking the
//! lock and writing `exit.json` itself.

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::cgroup::{self, CgroupSpec};
use super::process::{reset_signals, signal_group, try_lock};
use crate::atomic_file::write_atomic;
use crate::container::ContainerSteps;
use jobdeck_store::logs::{LineSplitter, LogWriter, Stream};

mod container_end;
mod container_steps;
use self::container_end::{ContainerEndWatch, ATTACH_DRAIN};
use self::container_steps::*;

/// Where the supervisor writes the attempt's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogPaths {
    pub log: PathBuf,
    pub idx: PathBuf,
    /// The attempt's share of the job's log cap, in bytes (absent in the
    /// spec of a supervisor started before caps: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cap: Option<u64>,
}

/// What the supervisor runs (`spec.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuperviseSpec {
    pub command: Vec<String>,
    /// The complete environment of the command.
    pub env: Vec<(String, String)>,
    pub workdir: PathBuf,
    /// `None`: the job does not collect logs; output is discarded.
    pub log: Option<LogPaths>,
    pub cgroup: Option<CgroupSpec>,
    /// Seconds between SIGTERM and SIGKILL on a stop.
    pub grace_seconds: u64,
    /// Container mode: the engine steps around `command` (which is then
    /// the `start --attach` of the container).
    #[serde(default)]
    pub container: Option<ContainerSteps>,
}

/// How an attempt ended (`exit.json`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ExitRecord {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// The kernel OOM-killed a process of the replica.
    #[serde(default)]
    pub oom_killed: bool,
    /// The process the kernel killed, as `name (pid N)`, when the kernel
    /// log could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oom_victim: Option<String>,
    /// The command could not be started; why.
    #[serde(default)]
    pub start_error: Option<String>,
    /// Container mode: the image could not be pulled; the engine's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_error: Option<String>,
    /// Container mode: the engine could not create or start the container
    /// for reasons of its own (not the job's command); its words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_error: Option<String>,
    /// Container mode: the job's configuration was refused before anything
    /// ran (a volume path that is a symbolic link); why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_error: Option<String>,
    /// Container mode: the container's command cannot run (not found, not
    /// executable); the engine's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cannot_run: Option<String>,
    /// The supervisor vanished without a word (written by the server).
    #[serde(default)]
    pub lost: bool,
    /// The supervisor never started the command (written by the server for
    /// an attempt whose supervisor never ran).
    #[serde(default)]
    pub not_started: bool,
    /// A stop was asked for before the command ended.
    #[serde(default)]
    pub stop_requested: bool,
    /// Unix milliseconds.
    pub started_at: Option<i64>,
    pub ended_at: i64,
}

pub const SPEC_FILE: &str = "spec.json";
pub const LOCK_FILE: &str = "lock";
pub const PID_FILE: &str = "supervisor.pid";
pub const STOP_FILE: &str = "stop";
pub const EXIT_FILE: &str = "exit.json";
pub const STAGE_FILE: &str = "stage";
const AUTH_FILE: &str = "auth.json";
const DOCKER_CONFIG_DIR: &str = "docker-auth";
const ENV_FILE: &str = "env";
/// A value on its way into a podman secret, for as long as that takes.
const SECRET_FILE: &str = "secret-value";

/// What a container replica is doing, as the `stage` file says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Pulling,
    Creating,
    Running,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Pulling => "pulling",
            Stage::Creating => "creating",
            Stage::Running => "running",
        }
    }

    /// The stage an attempt's run directory records, if any, and when it
    /// began (Unix ms).
    pub fn read(run_dir: &Path) -> Option<(Stage, i64)> {
        let text = std::fs::read_to_string(run_dir.join(STAGE_FILE)).ok()?;
        let (name, since) = text.trim().split_once(' ')?;
        let stage = [Stage::Pulling, Stage::Creating, Stage::Running].into_iter().find(|s| s.as_str() == name)?;
        Some((stage, since.parse().ok()?))
    }

    fn write(self, run_dir: &Path) {
        let text = format!("{} {}", self.as_str(), now_millis());
        let _ = write_atomic(&run_dir.join(STAGE_FILE), text.as_bytes(), 0o644);
    }
}

static STOP_SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: libc::c_int) {
    STOP_SIGNALLED.store(true, Ordering::SeqCst);
}

fn now_millis() -> i64 {
    jobdeck_store::now_millis()
}

/// Writes a line of the supervisor's own into the replica's log (as
/// standard error), so a user reading the log sees why something happened.
fn note(log: &Option<Arc<Mutex<LogWriter>>>, text: &str) {
    if let Some(log) = log {
        let mut writer = log.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writer.append(Stream::Stderr, now_millis(), format!("jobdeck: {text}").as_bytes());
        let _ = writer.flush();
    }
}

/// Runs the supervisor for `run_dir`; returns the process exit code.
pub fn run(run_dir: &Path) -> i32 {
    let Ok(Some(_lock)) = try_lock(&run_dir.join(LOCK_FILE)) else {
        eprintln!("another supervisor holds {}", run_dir.display());
        return 0;
    };
    if run_dir.join(EXIT_FILE).exists() {
        eprintln!("this attempt is already over");
        return 0;
    }
    let me = std::process::id() as i32;
    let start = super::process::pid_start_time(me).unwrap_or(0);
    if let Err(e) = write_atomic(&run_dir.join(PID_FILE), format!("{me} {start}").as_bytes(), 0o644) {
        eprintln!("cannot write the pid file: {e}");
        return 1;
    }
    let spec_path = run_dir.join(SPEC_FILE);
    let spec: SuperviseSpec = match std::fs::read(&spec_path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
    {
        Ok(spec) => spec,
        Err(e) => {
            let record = ExitRecord {
                start_error: Some(format!("cannot read the replica spec: {e}")),
                ended_at: now_millis(),
                ..ExitRecord::default()
            };
            finish(run_dir, &record);
            return 1;
        }
    };
    // The spec holds secret values; they now live in this process only.
    let _ = std::fs::remove_file(&spec_path);
    install_signal_handlers();
    // Orphaned descendants of the replica become our children, so we can
    // reap them instead of leaving zombies to init.
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes plain integers.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    let record = supervise(run_dir, &spec);
    finish(run_dir, &record);
    0
}

fn finish(run_dir: &Path, record: &ExitRecord) {
    let bytes = serde_json::to_vec(record).unwrap_or_default();
    if let Err(e) = write_atomic(&run_dir.join(EXIT_FILE), &bytes, 0o644) {
        eprintln!("cannot write exit.json: {e}");
    }
}

fn install_signal_handlers() {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: the handler only stores to an atomic, which is
        // async-signal-safe; sigaction is given a zeroed, valid struct.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_stop_signal as *const () as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
    // SAFETY: ignoring SIGHUP is always valid.
    unsafe {
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
    }
}

fn stop_wanted(run_dir: &Path) -> bool {
    STOP_SIGNALLED.load(Ordering::SeqCst) || run_dir.join(STOP_FILE).exists()
}

/// How an engine step ended and what it printed.
pub(super) struct StepOutput {
    /// `None` when a stop was asked for and the step was killed.
    status: Option<std::process::ExitStatus>,
    pub(super) stdout: String,
    stderr: String,
}

impl StepOutput {
    pub(super) fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// The engine's own words about a failure: the last lines of its
    /// standard error that say something.
    pub(super) fn words(&self) -> String {
        let lines: Vec<&str> = self.stderr.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        let tail = lines[lines.len().saturating_sub(3)..].join(" / ");
        match (tail.is_empty(), self.status) {
            (false, _) => tail,
            (true, Some(status)) => format!("the engine ended with {status} and said nothing"),
            (true, None) => "stopped".into(),
        }
    }
}

/// Why an engine step could not be run at all (as opposed to running and
/// failing, which its `StepOutput` says). Recorded as an engine error: the
/// error and its sources in one sentence.
#[derive(Debug, thiserror::Error)]
pub(super) enum StepError {
    #[error("an engine step has no command")]
    Empty,
    #[error("cannot start {program}")]
    Start {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot wait for {program}")]
    Wait {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot create {}", path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the registry credentials")]
    Credentials(#[source] std::io::Error),
}

/// Runs one engine step to its end. A `stoppable` step (a pull, which may
/// take minutes) is killed when a stop is asked for meanwhile.
pub(super) fn run_step(
    command: &[String],
    env: &[(String, String)],
    run_dir: &Path,
    stoppable: bool,
) -> Result<StepOutput, StepError> {
    let (program, args) = command.split_first().ok_or(StepError::Empty)?;
    // In the run directory: `podman init` starts the container's monitor
    // (conmon), which writes a file named `oom` into its working directory
    // when the kernel kills the container for memory; it must land in the
    // run directory, never in the server's.
    let mut child = Command::new(program)
        .args(args)
        .current_dir(run_dir)
        .env_clear()
        .envs(env.iter().cloned())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| StepError::Start { program: program.clone(), source })?;
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|source| StepError::Wait { program: program.clone(), source })? {
            break Some(status);
        }
        if stoppable && stop_wanted(run_dir) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(25));
    };
    Ok(StepOutput { status, stdout: stdout.join().unwrap_or_default(), stderr: stderr.join().unwrap_or_default() })
}

fn supervise(run_dir: &Path, spec: &SuperviseSpec) -> ExitRecord {
    let log = match &spec.log {
        Some(paths) => match LogWriter::create(&paths.log, &paths.idx) {
            Ok(writer) => Some(Arc::new(Mutex::new(writer.with_cap(paths.cap)))),
            Err(e) => {
                eprintln!("cannot open the log: {e}");
                None
            }
        },
        None => None,
    };
    let mut cgroup = spec.cgroup.clone();
    if let Some(group) = &cgroup {
        if let Err(e) = cgroup::create(group) {
            note(&log, &format!("the memory limit could not be applied: {}", jobdeck_core::error_chain(&e)));
            cgroup = None;
        }
    }
    let mut container_id = String::new();
    // Held until the function returns, after the container is removed.
    let mut _volumes = super::volumes::Bound::default();
    if let Some(steps) = &spec.container {
        // Bound before the pull: what the job mounts is decided now, and no
        // link swapped into a volume later changes it.
        match super::volumes::bind(&steps.mounts, &steps.staging_dir, &steps.name) {
            Ok(bound) => {
                if let Some(words) = &bound.note {
                    note(&log, words);
                }
                _volumes = bound;
            }
            Err(error) => {
                let message = jobdeck_core::error_chain(&error);
                note(&log, &message);
                return ended_now(|r| {
                    if error.is_the_jobs() {
                        r.config_error = Some(message);
                    } else {
                        r.engine_error = Some(message);
                    }
                });
            }
        }
        match prepare_container(run_dir, spec, steps, &_volumes.sources, &log) {
            Ok(id) => container_id = id,
            Err(record) => {
                remove_container(steps, &spec.env, run_dir, &log);
                return *record;
            }
        }
        Stage::Running.write(run_dir);
    }
    if let Err(e) = std::fs::create_dir_all(&spec.workdir) {
        note(&log, &format!("cannot create the working directory: {e}"));
    }

    let Some((program, args)) = spec.command.split_first() else {
        let message = "the job has no command to run".to_string();
        note(&log, &message);
        return ExitRecord { start_error: Some(message), ended_at: now_millis(), ..ExitRecord::default() };
    };
    let mut command = Command::new(program);
    command.args(args).env_clear().envs(spec.env.iter().cloned()).current_dir(&spec.workdir).stdin(Stdio::null());
    if log.is_some() {
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
    } else {
        command.stdout(Stdio::null()).stderr(Stdio::null());
    }
    let procs_file = cgroup
        .as_ref()
        .map(|g| std::ffi::CString::new(g.dir.join("cgroup.procs").as_os_str().as_encoded_bytes()).unwrap_or_default());
    // SAFETY: the closure runs between fork and exec and only calls
    // async-signal-safe functions (setpgid, signal, open, write, close) on
    // memory prepared before the fork.
    unsafe {
        command.pre_exec(move || {
            if libc::setpgid(0, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            reset_signals();
            if let Some(path) = &procs_file {
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY);
                if fd >= 0 {
                    libc::write(fd, b"0".as_ptr() as *const libc::c_void, 1);
                    libc::close(fd);
                }
            }
            Ok(())
        });
    }
    let started_at = now_millis();
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            let message = format!("cannot start '{program}': {e}");
            note(&log, &message);
            if let Some(group) = &cgroup {
                cgroup::remove(group);
            }
            return ExitRecord {
                exit_code: Some(127),
                start_error: Some(message),
                started_at: Some(started_at),
                ended_at: now_millis(),
                ..ExitRecord::default()
            };
        }
    };
    let pid = child.id() as i32;
    let mut readers = Vec::new();
    // The engine's last words on standard error say why a container could
    // not start.
    let last_stderr = Arc::new(Mutex::new(String::new()));
    if let Some(log) = &log {
        if let Some(out) = child.stdout.take() {
            readers.push(spawn_reader(out, Stream::Stdout, log.clone(), None));
        }
        if let Some(err) = child.stderr.take() {
            readers.push(spawn_reader(err, Stream::Stderr, log.clone(), Some(last_stderr.clone())));
        }
    }

    // A container's end is also watched from the host: the engine's attach
    // can outlive it (container_end.rs).
    let end_watch =
        spec.container.as_ref().map(|steps| ContainerEndWatch::start(steps, &container_id, &spec.env, run_dir));
    let mut attach_abandoned = false;
    let grace = Duration::from_secs(spec.grace_seconds);
    let mut stop_sent: Option<Instant> = None;
    // Whether the stop's SIGTERM still has to reach the program, and when
    // it was last tried: a container not running yet cannot take it, so it
    // is tried again, at most every TERM_RETRY (each try runs the engine).
    let mut term_pending = false;
    let mut term_tried: Option<Instant> = None;
    let mut killed = false;
    let status = loop {
        // Reap every child: the replica, and orphans that were re-parented
        // to us as subreaper.
        let mut main_status = None;
        loop {
            let mut raw: libc::c_int = 0;
            // SAFETY: waitpid with a valid out-pointer.
            let reaped = unsafe { libc::waitpid(-1, &mut raw, libc::WNOHANG) };
            if reaped <= 0 {
                break;
            }
            if reaped == pid {
                main_status = Some(std::process::ExitStatus::from_raw(raw));
            }
        }
        if let Some(status) = main_status {
            break status;
        }
        if stop_wanted(run_dir) && stop_sent.is_none() {
            stop_sent = Some(Instant::now());
            term_pending = true;
        }
        if term_pending && !killed && term_tried.is_none_or(|t| t.elapsed() >= TERM_RETRY) {
            term_tried = Some(Instant::now());
            term_pending = !terminate(pid, spec, run_dir);
        }
        if let Some(sent) = stop_sent {
            if !killed && sent.elapsed() >= grace {
                signal_group(pid, libc::SIGKILL);
                if let Some(steps) = &spec.container {
                    // Killing the engine client alone would leave the
                    // container running.
                    run_quietly(&steps.kill(), &spec.env, run_dir, &log);
                }
                killed = true;
            }
        }
        let ended_for = end_watch.as_ref().and_then(ContainerEndWatch::ended_for);
        if !attach_abandoned && ended_for.is_some_and(|d| d >= ATTACH_DRAIN) {
            note(
                &log,
                &format!(
                    "the container ended {} s ago but the engine's attach did not; Jobdeck ended the attach \
                     (the container's last output may be missing from this log)",
                    ATTACH_DRAIN.as_secs()
                ),
            );
            signal_group(pid, libc::SIGKILL);
            attach_abandoned = true;
        }
        std::thread::sleep(Duration::from_millis(25));
    };
    drop(end_watch);
    let ended_at = now_millis();
    // Like a container, the replica ends with its main process: whatever it
    // left behind in its process group goes too.
    signal_group(pid, libc::SIGKILL);
    let deadline = Instant::now() + Duration::from_secs(2);
    for reader in readers {
        while !reader.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if reader.is_finished() {
            let _ = reader.join();
        }
    }
    // The command's output is over: its last lines are compressed (the
    // supervisor's own notes after this start a small tail).
    if let Some(log) = &log {
        let _ = log.lock().unwrap_or_else(|p| p.into_inner()).finish();
    }
    let oom = cgroup.as_ref().map(cgroup::oom_kills).unwrap_or(0) > 0;
    let oom_victim = cgroup.as_ref().filter(|_| oom).and_then(cgroup::oom_victim);
    let limit_mib = cgroup.as_ref().map(|g| g.memory_bytes >> 20);
    if let Some(group) = &cgroup {
        cgroup::remove(group);
    }
    let mut record = ExitRecord {
        exit_code: status.code(),
        signal: status.signal(),
        oom_killed: oom && !status.success(),
        oom_victim,
        stop_requested: stop_sent.is_some(),
        started_at: Some(started_at),
        ended_at,
        ..ExitRecord::default()
    };
    if let Some(steps) = &spec.container {
        let start_words = last_stderr.lock().unwrap_or_else(|p| p.into_inner()).clone();
        finish_container(steps, &spec.env, run_dir, &container_id, &start_words, &mut record);
        remove_container(steps, &spec.env, run_dir, &log);
    }
    if record.oom_killed {
        // The failure analysis finds this line (and its victim) in the log.
        let limit = limit_mib.map(|m| format!("the {m} MiB")).unwrap_or_else(|| "what".into());
        let victim = match &record.oom_victim {
            Some(victim) => format!("; the kernel killed {victim}"),
            None => String::new(),
        };
        note(&log, &format!("the replica was killed (OOM): it used more memory than {limit} its shape allows{victim}"));
    }
    record
}

/// How often a stop's SIGTERM is tried again while a container is not yet
/// running to take it.
const TERM_RETRY: Duration = Duration::from_millis(250);

/// Sends a stop's SIGTERM to the program: a process replica's group, or a
/// container's first process through the engine (the engine's attach
/// would lose it while it sets up its signal proxy: it dies of the signal,
/// and the container runs on to SIGKILL without a chance to save its
/// work). Whether the signal was delivered; a container that is not
/// running yet is asked again after `TERM_RETRY`.
fn terminate(pid: libc::pid_t, spec: &SuperviseSpec, run_dir: &Path) -> bool {
    match &spec.container {
        Some(steps) => run_step(&steps.terminate(), &spec.env, run_dir, false).is_ok_and(|out| out.success()),
        None => {
            signal_group(pid, libc::SIGTERM);
            true
        }
    }
}

/// Copies a pipe into the log line by line; `last` keeps the last line that
/// is not blank.
fn spawn_reader(
    mut pipe: impl Read + Send + 'static,
    stream: Stream,
    log: Arc<Mutex<LogWriter>>,
    last: Option<Arc<Mutex<String>>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut splitter = LineSplitter::default();
        let mut buffer = vec![0u8; 64 * 1024];
        let keep = |line: &[u8]| {
            if let Some(last) = &last {
                let text = String::from_utf8_lossy(line);
                if !text.trim().is_empty() {
                    *last.lock().unwrap_or_else(|p| p.into_inner()) = text.trim().to_string();
                }
            }
        };
        loop {
            let n = match pipe.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let time = now_millis();
            let mut writer = log.lock().unwrap_or_else(|p| p.into_inner());
            splitter.feed(&buffer[..n], |line| {
                keep(line);
                let _ = writer.append(stream, time, line);
            });
            let _ = writer.flush();
        }
        let mut writer = log.lock().unwrap_or_else(|p| p.into_inner());
        splitter.finish(|line| {
            keep(line);
            let _ = writer.append(stream, now_millis(), line);
        });
        let _ = writer.flush();
    })
}
