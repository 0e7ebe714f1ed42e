//! Resource use per replica (issue 16): what a running attempt uses, sampled
//! every few seconds by its executor, stored bounded (`store::series`, in the
//! store's `metrics` table), summarized with its flags for
//! `GET /jobs/{id}/metrics` and served as series by
//! `GET /jobs/{id}/replicas/{replica}/metrics` (`metrics_api.rs`).
//!
//! The local executor samples (`Sampler::tick`): CPU cores from the
//! processes' CPU time in procfs (process mode: the replica supervisor's
//! session; container mode: the processes of the container's cgroup),
//! memory from the replica's own cgroup (its working set) where it has one,
//! else the processes' resident memory, and the GPUs it was given from
//! `nvidia-smi` (`probe.rs`). CPU time of a child that exits between two
//! samples is not counted (procfs forgets it); the cgroup's memory always is.

pub mod probe;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use jobdeck_api::metrics::{
    gpu_series, ReplicaUse, GPU_IDLE_PERCENT, GPU_IDLE_WINDOW_MS, MEMORY_NEAR_LIMIT, SERIES_CPU, SERIES_MEMORY,
};

use self::probe::{MemoryCgroup, ProcStat};
use jobdeck_store::series::Point;
use jobdeck_store::MetricSample;

/// What to sample for one running attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub job_id: String,
    pub completion_index: i64,
    pub attempt: i64,
    pub source: Source,
    /// The GPUs the attempt holds (machine indexes).
    pub gpu_ids: Vec<u32>,
}

/// Where an attempt's processes are.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// Process mode: the session its supervisor leads, and its memory
    /// cgroup when it has one.
    Session { supervisor: i32, cgroup: Option<MemoryCgroup> },
    /// Container mode: the container's name, found through its engine.
    Container { engine: String, engine_env: Vec<(String, String)>, name: String },
}

type Key = (String, i64, i64);

/// Samples targets tick after tick; keeps what a CPU rate needs between
/// ticks.
pub struct Sampler {
    previous: HashMap<Key, (i64, u64)>,
    container_pids: HashMap<String, i32>,
    ticks_per_second: f64,
    page_size: u64,
}

impl Default for Sampler {
    fn default() -> Self {
        let (ticks_per_second, page_size) = probe::units();
        Sampler { previous: HashMap::new(), container_pids: HashMap::new(), ticks_per_second, page_size }
    }
}

impl Sampler {
    /// One sample of every target, at `now` (Unix ms). Blocking: it reads
    /// procfs and may run the engine and `nvidia-smi`.
    pub fn tick(&mut self, targets: &[Target], now: i64) -> Vec<MetricSample> {
        let processes = probe::processes();
        let gpus = if targets.iter().any(|t| !t.gpu_ids.is_empty()) { probe::gpus() } else { HashMap::new() };
        let mut samples = Vec::new();
        let live: Vec<Key> = targets.iter().map(|t| (t.job_id.clone(), t.completion_index, t.attempt)).collect();
        self.previous.retain(|k, _| live.contains(k));
        self.container_pids.retain(|name, _| {
            targets.iter().any(|t| matches!(&t.source, Source::Container { name: n, .. } if n == name))
        });
        for target in targets {
            let key = (target.job_id.clone(), target.completion_index, target.attempt);
            let mut push = |series: String, value: f64| {
                samples.push(MetricSample {
                    job_id: target.job_id.clone(),
                    completion_index: target.completion_index,
                    attempt: target.attempt,
                    series,
                    t: now,
                    value,
                })
            };
            let (members, cgroup): (Vec<&ProcStat>, Option<MemoryCgroup>) = match &target.source {
                Source::Session { supervisor, cgroup } => (
                    processes.iter().filter(|p| p.session == *supervisor && p.pid != *supervisor).collect(),
                    cgroup.clone(),
                ),
                Source::Container { engine, engine_env, name } => {
                    let Some(pid) = self.container_pid(engine, engine_env, name) else { continue };
                    let Some(cgroup) = MemoryCgroup::of_process(pid) else { continue };
                    let pids = cgroup.pids();
                    (processes.iter().filter(|p| pids.contains(&p.pid)).collect(), Some(cgroup))
                }
            };
            let ticks: u64 = members.iter().map(|p| p.cpu_ticks).sum();
            if let Some((then, before)) = self.previous.insert(key, (now, ticks)) {
                if now > then {
                    let seconds = (now - then) as f64 / 1000.0;
                    let cores = ticks.saturating_sub(before) as f64 / self.ticks_per_second / seconds;
                    push(SERIES_CPU.into(), (cores * 1000.0).round() / 1000.0);
                }
            }
            let rss: u64 = members.iter().map(|p| p.rss_pages * self.page_size).sum();
            let memory = cgroup.as_ref().and_then(MemoryCgroup::working_set_bytes).unwrap_or(rss);
            push(SERIES_MEMORY.into(), memory as f64);
            for id in &target.gpu_ids {
                let Some(gpu) = gpus.get(id) else { continue };
                let readings = [
                    ("util", gpu.utilization),
                    ("memory", gpu.memory_used_mib),
                    ("memory_total", gpu.memory_total_mib),
                    ("power", gpu.power_watts),
                    ("temperature", gpu.temperature_c),
                ];
                for (what, value) in readings {
                    if let Some(value) = value {
                        push(gpu_series(*id, what), value);
                    }
                }
            }
        }
        samples
    }

    /// The host pid of a running container's main process, asked of its
    /// engine once.
    fn container_pid(&mut self, engine: &str, env: &[(String, String)], name: &str) -> Option<i32> {
        if let Some(pid) = self.container_pids.get(name) {
            return Some(*pid);
        }
        let out = std::process::Command::new(engine)
            .args(["inspect", "--format", "{{.State.Pid}}", name])
            .envs(env.iter().cloned())
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        let pid: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().ok().filter(|p| *p > 0)?;
        self.container_pids.insert(name.to_string(), pid);
        Some(pid)
    }
}

/// The newest GPU utilization of each running job, for the list: the mean
/// over the GPUs of its replicas, and since when it has stayed under
/// [`GPU_IDLE_PERCENT`]; and the replica using the most memory, for the
/// notifications' memory condition.
#[derive(Clone, Default)]
pub struct Now {
    gpu_utilization: Arc<Mutex<HashMap<String, GpuNow>>>,
    memory: Arc<Mutex<HashMap<String, MemoryNow>>>,
}

#[derive(Debug, Clone, Copy)]
struct GpuNow {
    t: i64,
    mean: f64,
    idle_since: Option<i64>,
}

/// The replica of a job using the most memory at the newest tick.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryNow {
    pub t: i64,
    pub bytes: f64,
    pub completion_index: i64,
    pub attempt: i64,
}

impl Now {
    /// Notes a tick's samples.
    pub fn record(&self, samples: &[MetricSample]) {
        let mut most: BTreeMap<&str, MemoryNow> = BTreeMap::new();
        for s in samples.iter().filter(|s| s.series == SERIES_MEMORY) {
            let this = MemoryNow { t: s.t, bytes: s.value, completion_index: s.completion_index, attempt: s.attempt };
            most.entry(s.job_id.as_str())
                .and_modify(|m| *m = if s.value > m.bytes { this } else { *m })
                .or_insert(this);
        }
        if !most.is_empty() {
            let mut map = self.memory.lock().unwrap_or_else(|p| p.into_inner());
            for (job, now) in most {
                map.insert(job.to_string(), now);
            }
        }
        let mut by_job: BTreeMap<&str, (i64, f64, u32)> = BTreeMap::new();
        for s in samples.iter().filter(|s| s.series.starts_with("gpu") && s.series.ends_with(".util")) {
            let entry = by_job.entry(s.job_id.as_str()).or_insert((s.t, 0.0, 0));
            entry.1 += s.value;
            entry.2 += 1;
        }
        let mut map = self.gpu_utilization.lock().unwrap_or_else(|p| p.into_inner());
        for (job, (t, sum, n)) in by_job {
            let mean = sum / f64::from(n);
            let before = map.get(job).and_then(|g| g.idle_since);
            let idle_since = (mean < GPU_IDLE_PERCENT).then(|| before.unwrap_or(t));
            map.insert(job.to_string(), GpuNow { t, mean, idle_since });
        }
    }

    /// A job's newest GPU utilization (percent), if it was sampled within
    /// `max_age_ms` of `now`, and whether its GPUs have been idle for
    /// [`GPU_IDLE_WINDOW_MS`].
    pub fn gpu_utilization(&self, job_id: &str, now: i64, max_age_ms: i64) -> Option<(f64, bool)> {
        let map = self.gpu_utilization.lock().unwrap_or_else(|p| p.into_inner());
        map.get(job_id)
            .filter(|g| now - g.t <= max_age_ms)
            .map(|g| (g.mean, g.idle_since.is_some_and(|since| g.t - since >= GPU_IDLE_WINDOW_MS)))
    }

    /// For how long (ms) every GPU of a job has been idle, as of its
    /// newest sample, if that was taken within `max_age_ms` of `now`; zero
    /// while they are busy.
    pub fn gpu_idle_for(&self, job_id: &str, now: i64, max_age_ms: i64) -> Option<i64> {
        let map = self.gpu_utilization.lock().unwrap_or_else(|p| p.into_inner());
        map.get(job_id).filter(|g| now - g.t <= max_age_ms).map(|g| g.idle_since.map_or(0, |since| g.t - since))
    }

    /// The replica of a job using the most memory at its newest sample, if
    /// that was taken within `max_age_ms` of `now`.
    pub fn memory_most(&self, job_id: &str, now: i64, max_age_ms: i64) -> Option<MemoryNow> {
        let map = self.memory.lock().unwrap_or_else(|p| p.into_inner());
        map.get(job_id).filter(|m| now - m.t <= max_age_ms).copied()
    }

    /// Forgets a job (ended or deleted).
    pub fn forget(&self, job_id: &str) {
        self.gpu_utilization.lock().unwrap_or_else(|p| p.into_inner()).remove(job_id);
        self.memory.lock().unwrap_or_else(|p| p.into_inner()).remove(job_id);
    }
}

/// An attempt's use from its series: newest and peak values, and its flags.
/// `running` says whether the attempt still runs (flags are about now);
/// `now` is Unix ms.
pub fn summarize(
    replica_id: String,
    completion_index: i64,
    attempt: i64,
    series: &BTreeMap<String, Vec<Point>>,
    memory_limit_bytes: i64,
    running: bool,
    now: i64,
) -> ReplicaUse {
    let mut current = BTreeMap::new();
    let mut peak = BTreeMap::new();
    let mut sampled_at = None;
    for (name, points) in series {
        if let Some(last) = points.last() {
            current.insert(name.clone(), last.mean);
            sampled_at = sampled_at.max(Some(last.t));
        }
        if let Some(max) = points.iter().map(|p| p.max).reduce(f64::max) {
            peak.insert(name.clone(), max);
        }
    }
    let mut flags = Vec::new();
    if running {
        let gpu_utils: Vec<&Vec<Point>> =
            series.iter().filter(|(n, _)| n.starts_with("gpu") && n.ends_with(".util")).map(|(_, p)| p).collect();
        let window_start = now - GPU_IDLE_WINDOW_MS;
        let covers_window = gpu_utils.iter().all(|p| p.first().is_some_and(|first| first.t <= window_start));
        let idle = gpu_utils.iter().all(|points| {
            let recent: Vec<&Point> = points.iter().filter(|p| p.t >= window_start).collect();
            !recent.is_empty() && recent.iter().all(|p| p.max < GPU_IDLE_PERCENT)
        });
        if !gpu_utils.is_empty() && covers_window && idle {
            flags.push("gpu_idle".to_string());
        }
        let memory = current.get(SERIES_MEMORY).copied().unwrap_or(0.0);
        if memory_limit_bytes > 0 && memory > MEMORY_NEAR_LIMIT * memory_limit_bytes as f64 {
            flags.push("memory_near_limit".to_string());
        }
    }
    ReplicaUse { replica_id, completion_index, attempt, current, peak, memory_limit_bytes, sampled_at, flags }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(values: &[(i64, f64)]) -> Vec<Point> {
        values.iter().map(|(t, v)| Point::sample(*t, *v)).collect()
    }

    #[test]
    fn summaries_and_flags_follow_the_rules() {
        let minute = 60_000;
        let now = 30 * minute;
        let idle_gpu = points(&(0..=30).map(|m| (m * minute, if m < 15 { 80.0 } else { 1.0 })).collect::<Vec<_>>());
        let busy_gpu = points(&(0..=30).map(|m| (m * minute, 3.0 + (m % 5) as f64 * 10.0)).collect::<Vec<_>>());
        let young_gpu = points(&[(25 * minute, 0.0), (30 * minute, 0.0)]);
        let gib = 1 << 30;
        let memory = |used: f64| points(&[(0, 1.0), (now, used)]);
        // (series, memory limit, running, expected flags)
        let cases: Vec<(Vec<(&str, Vec<Point>)>, i64, bool, Vec<&str>)> = vec![
            (vec![("gpu0.util", idle_gpu.clone()), ("memory", memory(0.5 * gib as f64))], gib, true, vec!["gpu_idle"]),
            (vec![("gpu0.util", idle_gpu.clone()), ("gpu1.util", busy_gpu.clone())], gib, true, vec![]),
            (vec![("gpu0.util", busy_gpu)], gib, true, vec![]),
            (vec![("gpu0.util", young_gpu)], gib, true, vec![]),
            (vec![("memory", memory(0.95 * gib as f64))], gib, true, vec!["memory_near_limit"]),
            (vec![("memory", memory(0.85 * gib as f64))], gib, true, vec![]),
            (vec![("gpu0.util", idle_gpu), ("memory", memory(0.95 * gib as f64))], gib, false, vec![]),
        ];
        for (series, limit, running, flags) in cases {
            let map: BTreeMap<String, Vec<Point>> = series.into_iter().map(|(n, p)| (n.to_string(), p)).collect();
            let summary = summarize("r-0-0".into(), 0, 0, &map, limit, running, now);
            assert_eq!(summary.flags, flags, "{:?}", map.keys().collect::<Vec<_>>());
        }
        let map: BTreeMap<String, Vec<Point>> =
            [("cpu".to_string(), points(&[(0, 0.5), (5_000, 1.5), (10_000, 0.25)]))].into();
        let summary = summarize("r-0-0".into(), 0, 0, &map, gib, true, 10_000);
        assert_eq!((summary.current["cpu"], summary.peak["cpu"], summary.sampled_at), (0.25, 1.5, Some(10_000)));
    }

    #[test]
    fn the_list_sees_each_jobs_newest_gpu_utilization() {
        let now = Now::default();
        let sample = |job: &str, series: &str, t: i64, value: f64| MetricSample {
            job_id: job.into(),
            completion_index: 0,
            attempt: 0,
            series: series.into(),
            t,
            value,
        };
        now.record(&[
            sample("a", "gpu0.util", 1_000, 90.0),
            sample("a", "gpu1.util", 1_000, 10.0),
            sample("a", "cpu", 1_000, 3.0),
        ]);
        assert_eq!(now.gpu_utilization("a", 2_000, 30_000), Some((50.0, false)));
        // Idle from 10 s on: flagged ten minutes later, not before.
        let minute = 60_000;
        for t in (10_000..=10_000 + 10 * minute).step_by(minute as usize) {
            now.record(&[sample("b", "gpu0.util", t, 1.0)]);
            let flagged = t - 10_000 >= 10 * minute;
            assert_eq!(now.gpu_utilization("b", t, 30_000), Some((1.0, flagged)), "{t}");
        }
        now.record(&[sample("b", "gpu0.util", 11 * minute, 50.0)]);
        assert_eq!(now.gpu_utilization("b", 11 * minute, 30_000), Some((50.0, false)), "busy again");
        assert_eq!(now.gpu_utilization("a", 60_000, 30_000), None, "too old to be now");
        assert_eq!(now.gpu_utilization("c", 2_000, 30_000), None);
        now.forget("a");
        assert_eq!(now.gpu_utilization("a", 2_000, 30_000), None);
    }

    /// The sampler reads this very test process's session for real: a
    /// child that burns CPU and holds memory shows in both series.
    #[test]
    fn a_session_is_sampled_from_procfs() {
        use std::process::Command;
        // A session of its own whose leader waits while its child works.
        let mut leader = Command::new("setsid")
            .args([
                "sh",
                "-c",
                "x=$(head -c 40000000 /dev/zero | tr '\\0' a); (while :; do :; done) & sleep 30; kill $!",
            ])
            .spawn()
            .unwrap();
        let supervisor = leader.id() as i32;
        let target = Target {
            job_id: "j".into(),
            completion_index: 0,
            attempt: 0,
            source: Source::Session { supervisor, cgroup: None },
            gpu_ids: vec![],
        };
        let mut sampler = Sampler::default();
        let start = jobdeck_store::now_millis();
        let mut cpu = 0.0;
        let mut memory = 0.0;
        // Until the child has burned a second of CPU and the shell holds its
        // 40 MB (what is awaited is the work, not a time).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(25);
        let mut last = start;
        sampler.tick(std::slice::from_ref(&target), start);
        while (cpu < 0.5 || memory < 40e6) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(500));
            last = jobdeck_store::now_millis();
            for s in sampler.tick(std::slice::from_ref(&target), last) {
                match s.series.as_str() {
                    "cpu" => cpu = f64::max(cpu, s.value),
                    "memory" => memory = f64::max(memory, s.value),
                    _ => {}
                }
            }
        }
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe {
            libc::kill(-supervisor, libc::SIGKILL);
        }
        let _ = leader.wait();
        assert!(cpu >= 0.5, "a busy child is about a core: {cpu} after {} ms", last - start);
        assert!(memory >= 40e6, "the shell holds 40 MB: {memory}");
    }
}
