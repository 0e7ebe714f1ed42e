//! Memory limits for replicas through cgroups, where the machine lets us.
//!
//! Each replica gets its own cgroup below the server's own one, named after
//! the replica, with the shape's memory as its limit: `memory.max` on cgroup
//! v2, `memory.limit_in_bytes` on the v1 memory controller. The supervisor
//! moves the replica's process into it before exec and reads the OOM-kill
//! counter when the process ends.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A replica's cgroup, as the supervisor needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupSpec {
    /// 1 or 2.
    pub version: u8,
    pub dir: PathBuf,
    pub memory_bytes: u64,
}

/// What this machine allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryLimits {
    /// Replica cgroups are created under `base`.
    Enforced { version: u8, base: PathBuf },
    /// No limit; the sentence says why.
    Unavailable(String),
}

/// The path of this process's cgroup in the hierarchy whose `/proc/self/cgroup`
/// line matches: `0::/path` for v2, `N:…memory…:/path` for v1.
fn own_cgroup(proc_cgroup: &str, version: u8) -> Option<String> {
    proc_cgroup.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let matches = match version {
            2 => id == "0" && controllers.is_empty(),
            _ => controllers.split(',').any(|c| c == "memory"),
        };
        matches.then(|| path.to_string())
    })
}

impl MemoryLimits {
    /// Finds a hierarchy where replica cgroups with a memory limit can be
    /// created, proving it by creating and removing a probe group.
    pub fn detect(enabled: bool) -> MemoryLimits {
        if !enabled {
            return MemoryLimits::Unavailable(
                "memory limits are turned off (executor.local.memory_limits = false)".into(),
            );
        }
        let proc_cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let mut reasons = Vec::new();
        match Self::try_v2(&proc_cgroup) {
            Ok(base) => return MemoryLimits::Enforced { version: 2, base },
            Err(reason) => reasons.push(format!("cgroup v2: {}", jobdeck_core::error_chain(&reason))),
        }
        match Self::try_v1(&proc_cgroup) {
            Ok(base) => return MemoryLimits::Enforced { version: 1, base },
            Err(reason) => reasons.push(format!("cgroup v1: {}", jobdeck_core::error_chain(&reason))),
        }
        MemoryLimits::Unavailable(format!("memory is not limited on this machine ({})", reasons.join("; ")))
    }

    fn try_v2(proc_cgroup: &str) -> Result<PathBuf, CgroupError> {
        let mount = if Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
            PathBuf::from("/sys/fs/cgroup")
        } else if Path::new("/sys/fs/cgroup/unified/cgroup.controllers").exists() {
            PathBuf::from("/sys/fs/cgroup/unified")
        } else {
            return Err(CgroupError::Unavailable("no unified hierarchy is mounted"));
        };
        let own = own_cgroup(proc_cgroup, 2).ok_or(CgroupError::Unavailable("this process is in no v2 cgroup"))?;
        let own_dir = mount.join(own.trim_start_matches('/'));
        let controllers = std::fs::read_to_string(own_dir.join("cgroup.controllers")).unwrap_or_default();
        if !controllers.split_whitespace().any(|c| c == "memory") {
            return Err(CgroupError::Unavailable("the memory controller is not available"));
        }
        let base = own_dir.join("jobdeck");
        std::fs::create_dir_all(&base).map_err(|source| CgroupError::Create { path: base.clone(), source })?;
        // Children of `base` get memory.max only when both levels delegate
        // the controller; the first write fails when this process's own
        // cgroup holds processes and is not the root.
        for dir in [&own_dir, &base] {
            std::fs::write(dir.join("cgroup.subtree_control"), "+memory")
                .map_err(|source| CgroupError::Delegate { path: dir.to_path_buf(), source })?;
        }
        probe(&base, 2)?;
        Ok(base)
    }

    fn try_v1(proc_cgroup: &str) -> Result<PathBuf, CgroupError> {
        let mount = PathBuf::from("/sys/fs/cgroup/memory");
        if !mount.join("memory.limit_in_bytes").exists() && !mount.is_dir() {
            return Err(CgroupError::Unavailable("the memory controller is not mounted"));
        }
        let own =
            own_cgroup(proc_cgroup, 1).ok_or(CgroupError::Unavailable("this process is in no v1 memory cgroup"))?;
        let base = mount.join(own.trim_start_matches('/')).join("jobdeck");
        std::fs::create_dir_all(&base).map_err(|source| CgroupError::Create { path: base.clone(), source })?;
        probe(&base, 1)?;
        Ok(base)
    }

    /// The cgroup for one replica, when limits are enforced.
    pub fn replica(&self, name: &str, memory_mb: i64) -> Option<CgroupSpec> {
        match self {
            MemoryLimits::Enforced { version, base } => Some(CgroupSpec {
                version: *version,
                dir: base.join(name),
                memory_bytes: (memory_mb.max(1) as u64) * 1024 * 1024,
            }),
            MemoryLimits::Unavailable(_) => None,
        }
    }

    /// A sentence for the start-up log and replica events.
    pub fn describe(&self) -> String {
        match self {
            MemoryLimits::Enforced { version, base } => format!(
                "each replica's memory is limited to its shape's with cgroup v{version} (under {})",
                base.display()
            ),
            MemoryLimits::Unavailable(reason) => format!("{reason}; replicas can use any amount of memory"),
        }
    }
}

/// Why a memory cgroup cannot be used or made.
#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    /// This machine does not offer what is needed.
    #[error("{0}")]
    Unavailable(&'static str),
    #[error("cannot create {}", path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot enable the memory controller in {}", path.display())]
    Delegate {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {file}")]
    Limit {
        file: &'static str,
        #[source]
        source: std::io::Error,
    },
}

/// Creates a replica-like group with a limit and removes it again.
fn probe(base: &Path, version: u8) -> Result<(), CgroupError> {
    let spec =
        CgroupSpec { version, dir: base.join(format!("probe-{}", std::process::id())), memory_bytes: 64 * 1024 * 1024 };
    let result = create(&spec);
    let _ = std::fs::remove_dir(&spec.dir);
    result
}

/// Creates the replica's cgroup and sets its memory limit.
pub fn create(spec: &CgroupSpec) -> Result<(), CgroupError> {
    std::fs::create_dir_all(&spec.dir).map_err(|source| CgroupError::Create { path: spec.dir.clone(), source })?;
    let (file, value) = match spec.version {
        2 => ("memory.max", spec.memory_bytes.to_string()),
        _ => ("memory.limit_in_bytes", spec.memory_bytes.to_string()),
    };
    std::fs::write(spec.dir.join(file), value).map_err(|source| CgroupError::Limit { file, source })?;
    if spec.version == 2 {
        // Without swap accounting a limited process would swap instead of
        // being OOM-killed; keep the limit meaning "memory".
        let _ = std::fs::write(spec.dir.join("memory.swap.max"), "0");
    }
    Ok(())
}

/// How many processes of the group the kernel OOM-killed.
pub fn oom_kills(spec: &CgroupSpec) -> u64 {
    let file = if spec.version == 2 { "memory.events" } else { "memory.oom_control" };
    let text = std::fs::read_to_string(spec.dir.join(file)).unwrap_or_default();
    text.lines().find_map(|l| l.strip_prefix("oom_kill ")).and_then(|n| n.trim().parse().ok()).unwrap_or(0)
}

/// The process the kernel OOM-killed in this group, as `name (pid N)`, read
/// from the kernel log (`oom-kill:… task_memcg=<group>,task=<name>,pid=<n>`).
/// `None` when the kernel log cannot be read here (it needs CAP_SYSLOG or
/// `kernel.dmesg_restrict = 0`) or does not name the group; the most recent
/// kill wins.
pub fn oom_victim(spec: &CgroupSpec) -> Option<String> {
    let name = spec.dir.file_name()?.to_str()?;
    oom_victim_in(&kernel_log()?, name)
}

/// Finds the victim of the newest OOM kill in group `group` (the last path
/// component of its cgroup) in kernel log text.
pub fn oom_victim_in(kernel_log: &str, group: &str) -> Option<String> {
    let marker = format!("/{group},");
    kernel_log.lines().rev().find_map(|line| {
        let at = line.find("oom-kill:")?;
        let fields = &line[at..];
        let memcg = fields.split(',').find_map(|f| f.strip_prefix("task_memcg="))?;
        if !format!("{memcg},").ends_with(&marker) {
            return None;
        }
        let task = fields.split(',').find_map(|f| f.strip_prefix("task="))?;
        let pid = fields.split(',').find_map(|f| f.strip_prefix("pid="))?;
        Some(format!("{task} (pid {pid})"))
    })
}

/// The process the kernel OOM-killed in a container's cgroup, found by the
/// container's id in the kernel log (engines name the cgroup after it:
/// `libpod-<id>`, `docker-<id>.scope`, `/docker/<id>`).
pub fn container_oom_victim(container_id: &str) -> Option<String> {
    container_oom_victim_in(&kernel_log()?, container_id)
}

/// [`container_oom_victim`] over kernel log text.
pub fn container_oom_victim_in(kernel_log: &str, container_id: &str) -> Option<String> {
    if container_id.len() < 12 {
        return None;
    }
    kernel_log.lines().rev().find_map(|line| {
        let fields = &line[line.find("oom-kill:")?..];
        let memcg = fields.split(',').find_map(|f| f.strip_prefix("task_memcg="))?;
        if !memcg.contains(container_id) {
            return None;
        }
        let task = fields.split(',').find_map(|f| f.strip_prefix("task="))?;
        let pid = fields.split(',').find_map(|f| f.strip_prefix("pid="))?;
        Some(format!("{task} (pid {pid})"))
    })
}

/// The kernel's message buffer (what `dmesg` prints), if this process may
/// read it.
fn kernel_log() -> Option<String> {
    const SYSLOG_ACTION_READ_ALL: libc::c_int = 3;
    const SYSLOG_ACTION_SIZE_BUFFER: libc::c_int = 10;
    // SAFETY: klogctl with a null buffer and length 0 only returns a size.
    let size = unsafe { libc::klogctl(SYSLOG_ACTION_SIZE_BUFFER, std::ptr::null_mut(), 0) };
    if size <= 0 {
        return None;
    }
    let mut buffer = vec![0u8; size as usize];
    // SAFETY: the buffer is valid for `size` bytes.
    let read = unsafe { libc::klogctl(SYSLOG_ACTION_READ_ALL, buffer.as_mut_ptr() as *mut libc::c_char, size) };
    if read <= 0 {
        return None;
    }
    buffer.truncate(read as usize);
    Some(String::from_utf8_lossy(&buffer).into_owned())
}

/// Kills whatever is still in the group and removes it.
pub fn remove(spec: &CgroupSpec) {
    for _ in 0..50 {
        let procs = std::fs::read_to_string(spec.dir.join("cgroup.procs")).unwrap_or_default();
        let pids: Vec<i32> = procs.lines().filter_map(|l| l.trim().parse().ok()).collect();
        if pids.is_empty() {
            break;
        }
        for pid in pids {
            // SAFETY: kill(2) has no memory-safety preconditions.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = std::fs::remove_dir(&spec.dir);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_cgroups_are_read_per_version() {
        let text = "9:name=systemd:/\n4:memory:/process_api/abc\n1:cpu,cpuacct:/x\n0::/user.slice/s\n";
        assert_eq!(own_cgroup(text, 2).as_deref(), Some("/user.slice/s"));
        assert_eq!(own_cgroup(text, 1).as_deref(), Some("/process_api/abc"));
        assert_eq!(own_cgroup("0::/\n", 1), None);
    }

    #[test]
    fn a_containers_oom_victim_is_found_by_its_id() {
        let id = "63bc9b993ad1b0d40ccf8f88435df80fa9c04baf91bcb31afa9ad533a34c6e8a";
        let log = format!(
            "[  312.218191] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=libpod-{id},mems_allowed=0,\
             oom_memcg=/libpod_parent/libpod-{id},task_memcg=/libpod_parent/libpod-{id},task=sh,pid=10820,uid=0\n\
             [  312.218214] Memory cgroup out of memory: Killed process 10820 (sh)\n"
        );
        assert_eq!(container_oom_victim_in(&log, id).as_deref(), Some("sh (pid 10820)"));
        assert_eq!(container_oom_victim_in(&log, "0123456789abcdef"), None);
        assert_eq!(container_oom_victim_in(&log, ""), None);
    }

    #[test]
    fn the_oom_victim_is_found_by_its_group() {
        let log = "<6>[ 6829.3] [   4695]     0  4695    25576 awk\n\
<4>[ 6829.31] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/p/jobdeck/jd1-a-0-0,task_memcg=/p/jobdeck/jd1-a-0-0,task=awk,pid=4695,uid=0\n\
<3>[ 6829.32] Memory cgroup out of memory: Killed process 4695 (awk) total-vm:102304kB\n\
<4>[ 6830.00] oom-kill:constraint=CONSTRAINT_MEMCG,oom_memcg=/p/jobdeck/jd1-a-0-10,task_memcg=/p/jobdeck/jd1-a-0-10,task=python3,pid=77,uid=0\n";
        assert_eq!(oom_victim_in(log, "jd1-a-0-0").as_deref(), Some("awk (pid 4695)"));
        assert_eq!(oom_victim_in(log, "jd1-a-0-10").as_deref(), Some("python3 (pid 77)"));
        assert_eq!(oom_victim_in(log, "jd1-a-0-1"), None);
    }

    #[test]
    fn detection_reports_what_is_enforced() {
        let limits = MemoryLimits::detect(false);
        assert!(limits.describe().contains("turned off"), "{}", limits.describe());
        // Whatever this machine allows, detection answers with a sentence and
        // an enforced hierarchy really accepts a limited group.
        match MemoryLimits::detect(true) {
            MemoryLimits::Enforced { version, base } => {
                let spec = CgroupSpec { version, dir: base.join("test-group"), memory_bytes: 32 << 20 };
                create(&spec).unwrap();
                assert_eq!(oom_kills(&spec), 0);
                remove(&spec);
                assert!(!spec.dir.exists());
            }
            MemoryLimits::Unavailable(reason) => assert!(reason.contains("cgroup"), "{reason}"),
        }
    }
}
