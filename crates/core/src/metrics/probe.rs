//! Reading what a replica uses: CPU time and resident memory of its
//! processes from procfs, its memory working set from its cgroup (v1 or v2)
//! when it has one of its own, and its GPUs from `nvidia-smi`.
//!
//! GPUs are read with `nvidia-smi --query-gpu=… --format=csv,noheader,nounits`
//! rather than through an NVML binding: it needs no new dependency and no
//! FFI, works wherever NVIDIA's driver is installed, and its CSV format is
//! documented and stable (`nvidia-smi --help-query-gpu`); one call a tick
//! reads every GPU of the machine, a few tens of milliseconds.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One process as `/proc/<pid>/stat` describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub pid: i32,
    pub session: i32,
    /// utime + stime, in clock ticks.
    pub cpu_ticks: u64,
    /// Resident pages.
    pub rss_pages: u64,
}

/// Parses `/proc/<pid>/stat`; the command name may hold spaces and parens,
/// so the fields are counted from its closing paren.
pub fn parse_stat(pid: i32, text: &str) -> Option<ProcStat> {
    let fields: Vec<&str> = text.rsplit_once(')')?.1.split_whitespace().collect();
    // fields[0] is field 3 (state) of proc(5).
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    Some(ProcStat { pid, session: field(6)? as i32, cpu_ticks: field(14)? + field(15)?, rss_pages: field(24)? })
}

/// Every process of the machine, read once per tick.
pub fn processes() -> Vec<ProcStat> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| parse_stat(pid, &std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?))
        .collect()
}

/// The clock ticks per second and the page size of this machine.
pub fn units() -> (f64, u64) {
    // SAFETY: sysconf has no memory-safety preconditions.
    let (ticks, page) = unsafe { (libc::sysconf(libc::_SC_CLK_TCK), libc::sysconf(libc::_SC_PAGESIZE)) };
    (if ticks > 0 { ticks as f64 } else { 100.0 }, if page > 0 { page as u64 } else { 4096 })
}

/// A cgroup whose memory use is a replica's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryCgroup {
    pub version: u8,
    pub dir: PathBuf,
}

impl MemoryCgroup {
    /// The memory cgroup of a process (a container's main process): the
    /// `memory` controller's line of `/proc/<pid>/cgroup` on v1, the
    /// unified one on v2.
    pub fn of_process(pid: i32) -> Option<MemoryCgroup> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        Self::from_proc_cgroup(&text, Path::new("/sys/fs/cgroup"))
    }

    pub fn from_proc_cgroup(text: &str, root: &Path) -> Option<MemoryCgroup> {
        let mut unified = None;
        for line in text.lines() {
            let mut parts = line.splitn(3, ':');
            let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            let path = path.trim_start_matches('/');
            if controllers.split(',').any(|c| c == "memory") {
                return Some(MemoryCgroup { version: 1, dir: root.join("memory").join(path) });
            }
            if id == "0" && controllers.is_empty() {
                unified = Some(MemoryCgroup { version: 2, dir: root.join(path) });
            }
        }
        unified
    }

    /// The working set, as the kubelet and `docker stats` count it: the
    /// memory charged to the group less the page cache it could drop.
    pub fn working_set_bytes(&self) -> Option<u64> {
        let (usage, stat, inactive) = match self.version {
            2 => ("memory.current", "memory.stat", "inactive_file"),
            _ => ("memory.usage_in_bytes", "memory.stat", "total_inactive_file"),
        };
        let usage: u64 = std::fs::read_to_string(self.dir.join(usage)).ok()?.trim().parse().ok()?;
        let stat = std::fs::read_to_string(self.dir.join(stat)).unwrap_or_default();
        Some(working_set(usage, &stat, inactive))
    }

    /// The pids in the group.
    pub fn pids(&self) -> Vec<i32> {
        let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
        procs.lines().filter_map(|l| l.trim().parse().ok()).collect()
    }
}

/// `usage` less the `inactive` line of a `memory.stat` text.
pub fn working_set(usage: u64, stat: &str, inactive: &str) -> u64 {
    let cache = stat
        .lines()
        .find_map(|l| l.strip_prefix(inactive).and_then(|rest| rest.trim().parse::<u64>().ok()))
        .unwrap_or(0);
    usage.saturating_sub(cache)
}

/// One GPU as `nvidia-smi` reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuReading {
    pub index: u32,
    /// Percent of the last sample period a kernel ran.
    pub utilization: Option<f64>,
    pub memory_used_mib: Option<f64>,
    pub memory_total_mib: Option<f64>,
    pub power_watts: Option<f64>,
    pub temperature_c: Option<f64>,
}

/// The query, in the order [`parse_nvidia_smi`] reads.
pub const NVIDIA_SMI_QUERY: &str =
    "--query-gpu=index,utilization.gpu,memory.used,memory.total,power.draw,temperature.gpu";

/// Parses `nvidia-smi --query-gpu=<NVIDIA_SMI_QUERY> --format=csv,noheader,nounits`:
/// one line per GPU, comma-separated, a field nvidia-smi cannot read as
/// `[N/A]` or `[Not Supported]`.
pub fn parse_nvidia_smi(text: &str) -> Vec<GpuReading> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            if fields.len() < 6 {
                return None;
            }
            let number = |f: &str| f.parse::<f64>().ok().filter(|v| v.is_finite());
            Some(GpuReading {
                index: fields[0].parse().ok()?,
                utilization: number(fields[1]),
                memory_used_mib: number(fields[2]),
                memory_total_mib: number(fields[3]),
                power_watts: number(fields[4]),
                temperature_c: number(fields[5]),
            })
        })
        .collect()
}

/// Every GPU of the machine by index; empty without nvidia-smi.
pub fn gpus() -> HashMap<u32, GpuReading> {
    let out = std::process::Command::new("nvidia-smi")
        .args([NVIDIA_SMI_QUERY, "--format=csv,noheader,nounits"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    match out {
        Ok(out) if out.status.success() => {
            parse_nvidia_smi(&String::from_utf8_lossy(&out.stdout)).into_iter().map(|g| (g.index, g)).collect()
        }
        _ => HashMap::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_lines_are_read_past_odd_command_names() {
        // Fields as proc(5) numbers them: pid (comm) state ppid pgrp session …
        let line = "4242 (py thon (x)) S 1 4242 4242 0 -1 4194304 100 0 0 0 350 50 0 0 20 0 3 0 12345 1000000 2560 18446744073709551615";
        let stat = parse_stat(4242, line).unwrap();
        assert_eq!(stat, ProcStat { pid: 4242, session: 4242, cpu_ticks: 400, rss_pages: 2560 });
        assert_eq!(parse_stat(1, "garbage"), None);
    }

    #[test]
    fn memory_cgroups_are_found_for_both_versions() {
        let root = Path::new("/sys/fs/cgroup");
        let v1 = "12:pids:/libpod_parent/libpod-abc\n4:memory:/libpod_parent/libpod-abc\n1:name=systemd:/x\n";
        assert_eq!(
            MemoryCgroup::from_proc_cgroup(v1, root),
            Some(MemoryCgroup { version: 1, dir: root.join("memory/libpod_parent/libpod-abc") })
        );
        let v2 = "0::/machine.slice/libpod-abc.scope/container\n";
        assert_eq!(
            MemoryCgroup::from_proc_cgroup(v2, root),
            Some(MemoryCgroup { version: 2, dir: root.join("machine.slice/libpod-abc.scope/container") })
        );
        assert_eq!(MemoryCgroup::from_proc_cgroup("3:cpu:/x\n", root), None);
        assert_eq!(working_set(1000, "cache 10\ntotal_inactive_file 300\n", "total_inactive_file"), 700);
        assert_eq!(working_set(1000, "inactive_file 2000\n", "inactive_file"), 0);
    }

    /// Output in the format NVIDIA documents for `--format=csv,noheader,nounits`
    /// (`nvidia-smi --help-query-gpu`): values without units, `[N/A]` or
    /// `[Not Supported]` for what a GPU cannot report.
    #[test]
    fn nvidia_smi_csv_is_parsed() {
        let text = "0, 97, 61234, 81559, 512.31, 71\n1, 0, 3, 81559, [N/A], 34\n2, [Not Supported], 1, 81559, 70.12, 30\nbad line\n";
        let gpus = parse_nvidia_smi(text);
        assert_eq!(gpus.len(), 3);
        assert_eq!(
            gpus[0],
            GpuReading {
                index: 0,
                utilization: Some(97.0),
                memory_used_mib: Some(61234.0),
                memory_total_mib: Some(81559.0),
                power_watts: Some(512.31),
                temperature_c: Some(71.0),
            }
        );
        assert_eq!((gpus[1].utilization, gpus[1].power_watts), (Some(0.0), None));
        assert_eq!(gpus[2].utilization, None);
    }
}
