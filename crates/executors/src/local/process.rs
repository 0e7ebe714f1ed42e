//! Small, careful wrappers over the process and file primitives the local
//! executor and its supervisor rely on: process identity that survives pid
//! reuse, advisory locks, signals and atomic files.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::Path;

/// The start time of a process in clock ticks since boot (field 22 of
/// `/proc/<pid>/stat`). A pid plus its start time names one process for
/// good, even after the pid is reused.
pub fn pid_start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_start_time(&stat)
}

fn parse_start_time(stat: &str) -> Option<u64> {
    // The command name (field 2) is in parentheses and may hold spaces or
    // parentheses itself; the fields after the last ')' are plain.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the process `pid` that started at `start_time` still exists (a
/// zombie counts as gone).
pub fn process_alive(pid: i32, start_time: u64) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().next());
    state != Some("Z") && parse_start_time(&stat) == Some(start_time)
}

/// Sends `signal` to the process `pid` if it is still the one that started
/// at `start_time`; returns whether it was sent.
pub fn signal_process(pid: i32, start_time: u64, signal: i32) -> bool {
    if pid <= 0 || !process_alive(pid, start_time) {
        return false;
    }
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe { libc::kill(pid, signal) == 0 }
}

/// Sends `signal` to every process of the process group `pgid`.
pub fn signal_group(pgid: i32, signal: i32) {
    if pgid > 1 {
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe {
            libc::kill(-pgid, signal);
        }
    }
}

/// The session of a process (field 6 of `/proc/<pid>/stat`).
fn session_of(stat: &str) -> Option<i32> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(3)?.parse().ok()
}

/// Sends SIGKILL to every process of the session `sid` whose leader is gone
/// (a supervisor killed or crashed): its replica and whatever that started
/// run on otherwise, unsupervised. Does nothing while the leader lives. The
/// kernel does not hand a session id out again while any process is in that
/// session, so the processes found are the leader's own.
pub fn kill_orphaned_session(sid: i32, leader_start: u64) -> usize {
    if sid <= 1 || process_alive(sid, leader_start) {
        return 0;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0 };
    let mut killed = 0;
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        if session_of(&stat) == Some(sid) {
            // SAFETY: kill(2) has no memory-safety preconditions.
            if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
                killed += 1;
            }
        }
    }
    killed
}

/// Takes the exclusive advisory lock on `path` without waiting. `Some` holds
/// the lock until the file is dropped (or the process ends, however it ends).
pub fn try_lock(path: &Path) -> std::io::Result<Option<File>> {
    let file = OpenOptions::new().create(true).read(true).write(true).truncate(false).open(path)?;
    // SAFETY: flock(2) on a file descriptor we own.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        Ok(Some(file))
    } else {
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
            Ok(None)
        } else {
            Err(err)
        }
    }
}

/// Puts the calling process in a new session (and process group), detached
/// from the parent's terminal and signals. For `pre_exec`.
pub fn new_session() -> std::io::Result<()> {
    // SAFETY: setsid(2) is async-signal-safe.
    if unsafe { libc::setsid() } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Restores the signal dispositions a freshly exec'd program expects. Rust
/// ignores SIGPIPE at start-up and ignored signals survive exec, so without
/// this `yes | head` would behave differently under Jobdeck. For `pre_exec`.
pub fn reset_signals() {
    for signal in [libc::SIGPIPE, libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
        // SAFETY: signal(2) with SIG_DFL is async-signal-safe.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_times_survive_odd_command_names() {
        let stat = "1234 (a) b (c)) S 1 1234 1234 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(parse_start_time(stat), Some(987654));
    }

    #[test]
    fn sessions_are_read_from_stat_lines_with_odd_command_names() {
        let stat = "4242 (a (b) c) S 1 4242 4200 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 12345 0 0";
        assert_eq!(session_of(stat), Some(4200));
        // A live leader's session is left alone.
        let me = std::process::id() as i32;
        assert_eq!(kill_orphaned_session(me, pid_start_time(me).unwrap()), 0);
    }

    #[test]
    fn this_process_is_alive_and_a_wrong_start_time_is_not() {
        let me = std::process::id() as i32;
        let start = pid_start_time(me).unwrap();
        assert!(process_alive(me, start));
        assert!(!process_alive(me, start + 1));
        assert!(!signal_process(me, start + 1, 0));
    }

    #[test]
    fn a_lock_is_exclusive_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let held = try_lock(&path).unwrap().expect("first lock");
        // flock locks belong to the open file description, so a second open
        // in the same process conflicts just as another process would.
        assert!(try_lock(&path).unwrap().is_none());
        drop(held);
        assert!(try_lock(&path).unwrap().is_some());
    }
}
