//! Talking to Slurm through its command-line tools, as a user on a login
//! node does: `sbatch` submits, `scontrol show job -o` reads a job's tasks,
//! `squeue --name` finds a submission again after a restart, `scancel` stops.
//!
//! Why the tools and not `slurmrestd`: every Slurm cluster has the tools on
//! its login nodes with munge authentication already set up for the user,
//! while slurmrestd is optional, needs JWT or socket authentication set up
//! by the cluster's operators, and changes its API with every Slurm release
//! (`v0.0.38` … `v0.0.41`). `scontrol show job` is used rather than `sacct`
//! because it needs no accounting database (slurmdbd), which many small
//! clusters lack; the exit file each task writes covers jobs slurmctld has
//! already forgotten (after `MinJobAge`).

use std::path::Path;
use std::process::{ExitStatus, Stdio};

use super::settings::SlurmSettings;

/// Why a Slurm tool gave no answer. The messages end up in job events and
/// replica reasons, so each one says the cause in full, its source included.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("cannot run {tool}: {source}")]
    Spawn { tool: String, source: std::io::Error },
    #[error("cannot write to {tool}: {source}")]
    Stdin { tool: String, source: std::io::Error },
    #[error("{tool} failed: {source}")]
    Wait { tool: String, source: std::io::Error },
    /// The tool ran and refused; `said` is its standard error, one line.
    #[error("{tool} {status}: {said}")]
    Refused { tool: String, status: ExitStatus, said: String },
    #[error("sbatch answered '{0}', not a job id")]
    NotAJobId(String),
}

impl ToolError {
    /// Whether `scontrol` said it knows no such job.
    fn is_unknown_job(&self) -> bool {
        matches!(self, ToolError::Refused { said, .. } if said.contains("Invalid job id"))
    }
}

/// One array task (or the pending rest of an array) as `scontrol show job
/// -o` describes it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TaskState {
    /// The task's own job id.
    pub job_id: u64,
    /// The array's job id (`%A`).
    pub array_job_id: u64,
    /// The task ids this line stands for: one, or the pending rest of an
    /// array (`ArrayTaskId=2-9%2`).
    pub tasks: Vec<i64>,
    pub name: String,
    pub comment: String,
    /// `PENDING`, `RUNNING`, `COMPLETED`, `FAILED`, `OUT_OF_MEMORY`, `TIMEOUT`,
    /// `CANCELLED`, `NODE_FAIL`, `PREEMPTED`, …
    pub state: String,
    /// Why it waits or ended (`Resources`, `Priority`, `NonZeroExitCode`, …).
    pub reason: String,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// The first node of its allocation.
    pub node: Option<String>,
    /// Unix ms.
    pub start: Option<i64>,
    pub end: Option<i64>,
    pub time_limit: String,
}

impl TaskState {
    /// Whether Slurm is done with the task.
    pub fn is_finished(&self) -> bool {
        !matches!(
            self.state.as_str(),
            "PENDING" | "CONFIGURING" | "RUNNING" | "COMPLETING" | "SUSPENDED" | "REQUEUED" | "RESIZING" | "SIGNALING"
        )
    }
}

/// The `key=value` fields of one `scontrol -o` line. A value may contain
/// spaces (`Command=`, `WorkDir=`): a word without `=` belongs to the value
/// before it.
fn fields(line: &str) -> Vec<(&str, String)> {
    let mut out: Vec<(&str, String)> = Vec::new();
    for word in line.split(' ').filter(|w| !w.is_empty()) {
        match word.split_once('=') {
            Some((key, value))
                if !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':') =>
            {
                out.push((key, value.to_string()))
            }
            _ => {
                if let Some((_, value)) = out.last_mut() {
                    value.push(' ');
                    value.push_str(word);
                }
            }
        }
    }
    out
}

/// `0-2%2` or `3,5-6` → the task ids.
fn task_ids(text: &str) -> Vec<i64> {
    let text = text.split('%').next().unwrap_or("");
    let mut ids = Vec::new();
    for part in text.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<i64>(), b.parse::<i64>()) {
                    if b >= a && b - a < 1_000_000 {
                        ids.extend(a..=b);
                    }
                }
            }
            None => ids.extend(part.parse::<i64>().ok()),
        }
    }
    ids
}

/// `2026-11-25T09:28:14` (UTC: the tools run with `TZ=UTC`) → Unix ms.
fn time_ms(text: &str) -> Option<i64> {
    if !text.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let time = humantime::parse_rfc3339_weak(text).ok()?;
    Some(time.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis() as i64)
}

/// Parses `scontrol show job -o` output: one task per line.
pub fn parse_show_job(text: &str) -> Vec<TaskState> {
    text.lines()
        .filter(|l| l.starts_with("JobId="))
        .map(|line| {
            let mut task = TaskState::default();
            for (key, value) in fields(line) {
                match key {
                    "JobId" => task.job_id = value.parse().unwrap_or(0),
                    "ArrayJobId" => task.array_job_id = value.parse().unwrap_or(0),
                    "ArrayTaskId" => task.tasks = task_ids(&value),
                    "JobName" => task.name = value,
                    "Comment" => task.comment = value,
                    "JobState" => task.state = value,
                    "Reason" => task.reason = value,
                    "ExitCode" => {
                        if let Some((code, signal)) = value.split_once(':') {
                            task.exit_code = code.parse().ok();
                            task.signal = signal.parse().ok().filter(|s| *s != 0);
                        }
                    }
                    "NodeList" if value != "(null)" && !value.is_empty() => {
                        task.node = Some(first_node(&value));
                    }
                    "StartTime" => task.start = time_ms(&value),
                    "EndTime" => task.end = time_ms(&value),
                    "TimeLimit" => task.time_limit = value,
                    _ => {}
                }
            }
            if task.array_job_id == 0 {
                task.array_job_id = task.job_id;
            }
            task
        })
        .collect()
}

/// The first host of a node list (`gpu[01-04],cpu7` → `gpu01`).
pub fn first_node(list: &str) -> String {
    let first = list.split(',').next().unwrap_or(list);
    match first.split_once('[') {
        Some((prefix, range)) => {
            let start = range.trim_end_matches(']').split(['-', ',']).next().unwrap_or("");
            format!("{prefix}{start}")
        }
        None => first.to_string(),
    }
}

/// The Slurm tools, as configured.
#[derive(Debug, Clone)]
pub struct SlurmTools {
    settings: SlurmSettings,
    /// `PATH`, `HOME`, `SLURM_CONF`, … of the server: what the tools need.
    env: Vec<(String, String)>,
}

impl SlurmTools {
    pub fn new(settings: SlurmSettings, env: Vec<(String, String)>) -> Self {
        Self { settings, env }
    }

    /// Runs a tool; its standard output, or what it said on failure.
    async fn run(
        &self,
        tool: &str,
        args: &[String],
        extra_env: &[(String, String)],
        stdin: Option<&str>,
    ) -> Result<String, ToolError> {
        let mut command = tokio::process::Command::new(self.settings.command(tool));
        command
            .args(args)
            .env_clear()
            .envs(self.env.iter().cloned())
            .envs(extra_env.iter().cloned())
            // Times in `scontrol` output are in the tool's own zone.
            .env("TZ", "UTC")
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|source| ToolError::Spawn { tool: tool.into(), source })?;
        let mut written = Ok(());
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            use tokio::io::AsyncWriteExt;
            written = pipe.write_all(text.as_bytes()).await;
        }
        let out = child.wait_with_output().await.map_err(|source| ToolError::Wait { tool: tool.into(), source })?;
        // A tool that refuses its options may exit before reading its input:
        // the pipe then breaks, and its exit status and words say why. Only
        // a tool that succeeded without its whole input, or a write that
        // failed otherwise, is a failure to give it the input.
        match written {
            Err(source) if source.kind() != std::io::ErrorKind::BrokenPipe || out.status.success() => {
                return Err(ToolError::Stdin { tool: tool.into(), source });
            }
            _ => {}
        }
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let said = stderr.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" / ");
            Err(ToolError::Refused { tool: tool.into(), status: out.status, said })
        }
    }

    /// Submits `script` (on sbatch's standard input) with `options`; the
    /// array's job id.
    pub async fn submit(
        &self,
        options: &[String],
        script: &str,
        env: &[(String, String)],
        workdir: &Path,
    ) -> Result<u64, ToolError> {
        let mut args: Vec<String> = vec!["--parsable".into(), format!("--chdir={}", workdir.display())];
        args.extend(options.iter().cloned());
        let out = self.run("sbatch", &args, env, Some(script)).await?;
        let id = out.trim().split(';').next().unwrap_or("");
        id.parse().map_err(|_| ToolError::NotAJobId(out.trim().to_string()))
    }

    /// Every task of the array `array_job_id` Slurm still knows; `None`
    /// when it knows none (it forgot the job, after `MinJobAge`).
    pub async fn show(&self, array_job_id: u64) -> Result<Option<Vec<TaskState>>, ToolError> {
        match self
            .run("scontrol", &["show".into(), "job".into(), "-o".into(), array_job_id.to_string()], &[], None)
            .await
        {
            Ok(text) => Ok(Some(parse_show_job(&text))),
            Err(e) if e.is_unknown_job() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The array job ids of submissions named `name` whose comment is
    /// `comment` (a submission whose id a crash kept from being stored).
    pub async fn find(&self, name: &str, comment: &str) -> Result<Vec<u64>, ToolError> {
        let args: Vec<String> =
            ["-h", "-t", "all", "--name", name, "-o", "%F|%k"].iter().map(|s| s.to_string()).collect();
        let text = self.run("squeue", &args, &[], None).await?;
        let mut ids: Vec<u64> = text
            .lines()
            .filter_map(|l| l.split_once('|'))
            .filter(|(_, c)| c.trim() == comment)
            .filter_map(|(id, _)| id.trim().parse().ok())
            .collect();
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    /// Cancels jobs (array job ids, or `<array>_<task>`).
    pub async fn cancel(&self, ids: &[String]) -> Result<(), ToolError> {
        if ids.is_empty() {
            return Ok(());
        }
        self.run("scancel", ids, &[], None).await.map(|_| ())
    }

    /// Sends `signal` (`TERM`) to running jobs (array job ids, or
    /// `<array>_<task>`) and every process of theirs, the batch script's
    /// children included (`--full`), without cancelling them: how a job's
    /// own grace period begins, since Slurm's `KillWait` is the cluster's.
    pub async fn signal(&self, ids: &[String], signal: &str) -> Result<(), ToolError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut args = vec![format!("--signal={signal}"), "--full".to_string()];
        args.extend(ids.iter().cloned());
        self.run("scancel", &args, &[], None).await.map(|_| ())
    }

    /// Cancels every job of a Jobdeck job by its name.
    pub async fn cancel_named(&self, name: &str) -> Result<(), ToolError> {
        self.run("scancel", &[format!("--name={name}")], &[], None).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools_in(dir: &Path) -> SlurmTools {
        let settings = SlurmSettings { bin_dir: Some(dir.to_path_buf()), ..SlurmSettings::default() };
        SlurmTools::new(settings, vec![("PATH".into(), "/usr/bin:/bin".into())])
    }

    /// Puts a stand-in for `tool` into `dir` that says `stderr` and exits
    /// with `code`, as the real tool does (tests/slurm.rs runs the real
    /// ones against a cluster).
    ///
    /// A child process writes it: a descriptor open for writing in this
    /// process would be inherited by a child another test's thread forks at
    /// that moment, and running the script while that child holds it fails
    /// with "Text file busy" (it did once in CI).
    fn stand_in(dir: &Path, tool: &str, stderr: &str, code: i32) {
        use std::io::Write;
        let mut writer = std::process::Command::new("/bin/sh")
            .args(["-c", "cat > \"$1\" && chmod 755 \"$1\"", "sh"])
            .arg(dir.join(tool))
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        let mut script = writer.stdin.take().unwrap();
        script.write_all(format!("#!/bin/sh\necho '{stderr}' >&2\nexit {code}\n").as_bytes()).unwrap();
        drop(script);
        assert!(writer.wait().unwrap().success());
    }

    #[tokio::test]
    async fn a_tool_that_cannot_start_is_named_with_its_cause() {
        let dir = tempfile::tempdir().unwrap();
        let error = tools_in(dir.path()).show(7).await.unwrap_err();
        assert!(
            matches!(&error, ToolError::Spawn { tool, source } if tool == "scontrol"
            && source.kind() == std::io::ErrorKind::NotFound),
            "{error:?}"
        );
        assert!(std::error::Error::source(&error).is_some());
        assert!(error.to_string().starts_with("cannot run scontrol: "), "{error}");
    }

    #[tokio::test]
    async fn an_unknown_job_is_none_and_other_refusals_say_what_the_tool_said() {
        let dir = tempfile::tempdir().unwrap();
        let tools = tools_in(dir.path());
        // scontrol's own words for a job it has forgotten (Slurm 22–24).
        stand_in(dir.path(), "scontrol", "slurm_load_jobs error: Invalid job id specified", 1);
        assert_eq!(tools.show(7).await.unwrap(), None);
        stand_in(dir.path(), "scontrol", "slurm_load_jobs error: Unable to contact slurm controller", 1);
        let error = tools.show(7).await.unwrap_err();
        assert!(matches!(error, ToolError::Refused { .. }), "{error:?}");
        assert_eq!(
            error.to_string(),
            "scontrol exit status: 1: slurm_load_jobs error: Unable to contact slurm controller"
        );
        stand_in(
            dir.path(),
            "sbatch",
            "sbatch: error: Batch job submission failed: Invalid partition name specified",
            1,
        );
        let error = tools.submit(&["--partition=gpu".into()], "#!/bin/sh\n", &[], dir.path()).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            "sbatch exit status: 1: sbatch: error: Batch job submission failed: Invalid partition name specified"
        );
    }

    #[test]
    fn scontrol_lines_become_tasks() {
        let text = "JobId=7 ArrayJobId=5 ArrayTaskId=2 ArrayTaskThrottle=2 JobName=jobdeck-train-abcde UserId=root(0) \
                    Priority=1 Nice=0 Account=(null) QOS=(null) JobState=FAILED Reason=NonZeroExitCode Dependency=(null) \
                    ExitCode=3:0 RunTime=00:00:02 TimeLimit=00:01:00 StartTime=2026-11-25T09:28:17 \
                    EndTime=2026-11-25T09:28:19 NodeList=gpu[01-02] Comment=jobdeck:train-abcde:0:0 \
                    Command=/work dir/with space/run.sh WorkDir=/tmp\n\
                    JobId=5 ArrayJobId=5 ArrayTaskId=3-9%2 JobName=jobdeck-train-abcde JobState=PENDING Reason=Resources \
                    ExitCode=0:0 StartTime=Unknown EndTime=Unknown NodeList=(null) Comment=jobdeck:train-abcde:0:0\n\
                    JobId=9 JobName=other JobState=OUT_OF_MEMORY Reason=OutOfMemory ExitCode=0:9 NodeList=vm\n";
        let tasks = parse_show_job(text);
        assert_eq!(tasks.len(), 3);
        let failed = &tasks[0];
        assert_eq!((failed.job_id, failed.array_job_id, failed.tasks.clone()), (7, 5, vec![2]));
        assert_eq!((failed.state.as_str(), failed.reason.as_str()), ("FAILED", "NonZeroExitCode"));
        assert_eq!((failed.exit_code, failed.signal), (Some(3), None));
        assert_eq!(failed.node.as_deref(), Some("gpu01"));
        assert_eq!(failed.start, Some(1_795_598_897_000));
        assert_eq!(failed.end.unwrap() - failed.start.unwrap(), 2_000);
        assert_eq!(failed.comment, "jobdeck:train-abcde:0:0");
        assert!(failed.is_finished());
        let pending = &tasks[1];
        assert_eq!(pending.tasks, (3..=9).collect::<Vec<_>>());
        assert_eq!((pending.start, pending.node.clone(), pending.is_finished()), (None, None, false));
        let oom = &tasks[2];
        assert_eq!((oom.array_job_id, oom.tasks.len(), oom.signal), (9, 0, Some(9)));
    }

    #[test]
    fn node_lists_and_task_ranges() {
        for (list, first) in [("vm", "vm"), ("gpu[01-04],cpu7", "gpu01"), ("n[3,5]", "n3"), ("a,b", "a")] {
            assert_eq!(first_node(list), first);
        }
        assert_eq!(task_ids("0-2%2"), [0, 1, 2]);
        assert_eq!(task_ids("3,5-6"), [3, 5, 6]);
        assert_eq!(task_ids("x"), Vec::<i64>::new());
    }
}
