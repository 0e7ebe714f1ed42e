//! The end of a container as the host sees it, apart from the engine's
//! attach.
//!
//! The supervisor learns that a container ended when `<engine> start
//! --attach` returns. Podman before 5.2 has races between start and attach
//! (fixed upstream in containers/podman#23258) in which the attach client
//! can outlive the container for good: the replica then stays "running"
//! with nothing running, and its slot is never freed. So a thread watches
//! the container's main process from the host: one `inspect` for its pid
//! once it starts, then only `/proc` until it is gone. A pid is watched only
//! when its cgroup names the container: an engine in another pid namespace
//! or on another machine (`DOCKER_HOST`) reports a number that may be some
//! other process here, whose end would end the attach of a container still
//! running; for such an engine the thread asks `inspect` every few seconds
//! instead. An attach that has not ended [`ATTACH_DRAIN`] after the
//! container did is abandoned; how the container ended is read from the
//! engine as always (`finish_container`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::run_step;
use crate::container::ContainerSteps;
use crate::local::process::{pid_start_time, process_alive};

/// How long an attach may go on after its container's main process is gone.
/// Long enough for an attach on a busy machine to copy the last output and
/// read the exit code (it normally takes milliseconds); a replica's end is
/// late by at most this when the attach hangs.
pub(super) const ATTACH_DRAIN: Duration = Duration::from_secs(10);

/// The longest pause between two `inspect`s while the container has not
/// started, or its pid is not one of this machine's processes in it.
const LONGEST_POLL: Duration = Duration::from_secs(5);

/// How often `/proc` is read while the main process runs.
const PROCESS_POLL: Duration = Duration::from_millis(250);

/// What one `inspect` of the container said.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    /// It has not started yet (created, initialized), or the engine
    /// changes its state.
    NotYet,
    /// Its main process, by host pid.
    Running(i32),
    Ended,
}

/// Reads `<status> <pid>` as `ContainerSteps::status_and_pid` prints it;
/// podman and docker name their states alike for what matters here.
fn read_seen(text: &str) -> Option<Seen> {
    let mut words = text.split_whitespace();
    let status = words.next()?;
    let pid: i32 = words.next()?.parse().ok()?;
    Some(match status {
        "exited" | "stopped" | "dead" => Seen::Ended,
        "running" | "paused" if pid > 0 => Seen::Running(pid),
        _ => Seen::NotYet,
    })
}

/// A watch of one container's end, stopped when dropped.
pub(super) struct ContainerEndWatch {
    ended_at: Arc<Mutex<Option<Instant>>>,
    done: Arc<AtomicBool>,
}

impl ContainerEndWatch {
    /// Starts watching the container of `steps` (started, or about to be),
    /// whose id the engine answered `container_id`.
    pub(super) fn start(
        steps: &ContainerSteps,
        container_id: &str,
        env: &[(String, String)],
        run_dir: &Path,
    ) -> ContainerEndWatch {
        let watch = ContainerEndWatch { ended_at: Arc::default(), done: Arc::default() };
        let (ended_at, done) = (watch.ended_at.clone(), watch.done.clone());
        let command = steps.status_and_pid();
        let container_id = container_id.to_string();
        let (env, run_dir): (Vec<(String, String)>, PathBuf) = (env.to_vec(), run_dir.to_path_buf());
        std::thread::spawn(move || {
            let ended = watch_until_ended(&command, &container_id, &env, &run_dir, &done);
            if ended {
                *ended_at.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
            }
        });
        watch
    }

    /// How long ago the container's main process was seen gone, if it was.
    pub(super) fn ended_for(&self) -> Option<Duration> {
        self.ended_at.lock().unwrap_or_else(|p| p.into_inner()).map(|at| at.elapsed())
    }
}

impl Drop for ContainerEndWatch {
    fn drop(&mut self) {
        // The thread ends at its next look; it is not joined, so an
        // `inspect` that hangs never holds the supervisor.
        self.done.store(true, Ordering::SeqCst);
    }
}

/// Whether the process `pid` of this machine is in the container
/// `container_id`'s cgroup (podman's `libpod-<id>`, docker's `docker/<id>`).
fn in_container(pid: i32, container_id: &str) -> bool {
    !container_id.is_empty()
        && std::fs::read_to_string(format!("/proc/{pid}/cgroup")).is_ok_and(|groups| groups.contains(container_id))
}

/// Watches until the container ended (true) or the watch is dropped.
fn watch_until_ended(
    command: &[String],
    container_id: &str,
    env: &[(String, String)],
    run_dir: &Path,
    done: &AtomicBool,
) -> bool {
    let mut pause = Duration::from_millis(200);
    while !done.load(Ordering::SeqCst) {
        let seen = run_step(command, env, run_dir, false)
            .ok()
            .filter(|out| out.success())
            .and_then(|out| read_seen(&out.stdout));
        match seen {
            Some(Seen::Ended) => return true,
            Some(Seen::Running(pid)) => {
                if let Some(start) = pid_start_time(pid).filter(|_| in_container(pid, container_id)) {
                    while process_alive(pid, start) {
                        if done.load(Ordering::SeqCst) {
                            return false;
                        }
                        std::thread::sleep(PROCESS_POLL);
                    }
                    return true;
                }
            }
            Some(Seen::NotYet) | None => {}
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(LONGEST_POLL);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pid_is_the_containers_only_when_its_cgroup_names_it() {
        let me = std::process::id() as i32;
        assert!(!in_container(me, "0123456789abcdef"), "this test is in no such container");
        assert!(!in_container(me, ""), "no id, no container");
        assert!(!in_container(i32::MAX, "0123456789abcdef"), "no such process");
    }

    #[test]
    fn the_engines_states_read_as_running_ended_or_not_yet() {
        assert_eq!(read_seen("running 4242\n"), Some(Seen::Running(4242)));
        assert_eq!(read_seen("paused 17"), Some(Seen::Running(17)));
        assert_eq!(read_seen("exited 0"), Some(Seen::Ended));
        assert_eq!(read_seen("stopped 0"), Some(Seen::Ended));
        assert_eq!(read_seen("dead 0"), Some(Seen::Ended));
        assert_eq!(read_seen("created 0"), Some(Seen::NotYet));
        assert_eq!(read_seen("initialized 0"), Some(Seen::NotYet));
        // A running state without a pid is not yet something to watch.
        assert_eq!(read_seen("running 0"), Some(Seen::NotYet));
        assert_eq!(read_seen(""), None);
        assert_eq!(read_seen("running"), None);
    }
}
