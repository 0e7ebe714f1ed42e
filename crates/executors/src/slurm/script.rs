//! One `sbatch` submission of a run, as data: its options, its batch script
//! and the variables it exports. Pure and table-tested; `jobdeck slurm
//! render` prints it.
//!
//! Every submission is a job array, even of one task, so a task is always
//! `<array job id>_<task id>`, its output always `%A_%a.out` and its
//! completion index always `SLURM_ARRAY_TASK_ID`:
//!
//! * completions → the array's task ids (`--array=0-9%2`: ten indexes, two at
//!   a time, Kubernetes' completions and parallelism); a retry is a
//!   submission of the one failed index (`--array=3`), held back by its
//!   back-off with `--begin=now+<seconds>`;
//! * workers > 1 → one task holding that many nodes (`--nodes`,
//!   `--ntasks-per-node=1`), whose script starts the workers with `srun`,
//!   each with `NODE_RANK`, `WORLD_SIZE` and `MASTER_ADDR` (the first node
//!   of the allocation) and its own output file `%A_%a-<rank>.out`;
//! * the shape → `--cpus-per-task`, `--mem`, `--gres=gpu:<n>`; the active
//!   deadline → `--time` (whole minutes, rounded up: Slurm's unit);
//!   priority → a QOS from `qos_by_priority`, else `--nice`; node group →
//!   partition; the image → pyxis' `--container-image` when the cluster
//!   has pyxis.
//!
//! No value of the job's reaches a host process as anything but data:
//! `sbatch` runs with the server's own environment only (exported by name,
//! `--export=NAME,…`), and the job's variables are in an environment file
//! beside the output (0600, [`env_file`]) that the task reads in a subshell
//! of its own just before it runs the program, after Slurm's own tools
//! (`srun`, `scontrol`) have run. Each value is quoted for the shell, so
//! its content is never read as code. Names that Slurm's tools or the
//! loader read (`SBATCH_*`, `SLURM_*`, `LD_*`, `PATH`, …,
//! [`REFUSED_ENV_NAMES`]) are refused when the job is created. Secret values
//! never appear in the script or on a command line (where `ps` and
//! `scontrol show job` would show them). The script writes the program's
//! exit code next to its output (`%A_%a.exit`), so an ended task's code is
//! known even after slurmctld has forgotten the job.

use std::path::Path;

use super::settings::SlurmSettings;
use crate::env::replica_env;
use jobdeck_api::{FieldErrors, JobSpec};
use jobdeck_core::executor::JobLaunch;

/// The Slurm job name of every submission of a job: Jobdeck finds its jobs
/// again by it after a restart (`squeue --name`).
pub fn job_name(job_id: &str) -> String {
    format!("jobdeck-{job_id}")
}

/// The comment that tells one submission of a job from another:
/// `jobdeck:<job id>:<run>:<submission>`.
pub fn comment(job_id: &str, run: i64, submission: u32) -> String {
    format!("jobdeck:{job_id}:{run}:{submission}")
}

/// The output file of one array task (one replica; with workers, rank 0's
/// is the batch script's own).
pub fn output_file(job_dir: &Path, array_job_id: u64, task: i64, rank: Option<i64>) -> std::path::PathBuf {
    match rank {
        Some(rank) => job_dir.join(format!("{array_job_id}_{task}-{rank}.out")),
        None => job_dir.join(format!("{array_job_id}_{task}.out")),
    }
}

/// The file the batch script writes the program's exit code to.
pub fn exit_file(job_dir: &Path, array_job_id: u64, task: i64) -> std::path::PathBuf {
    job_dir.join(format!("{array_job_id}_{task}.exit"))
}

/// What one submission needs beyond the launch.
pub struct SubmissionInput<'a> {
    pub launch: &'a JobLaunch,
    pub settings: &'a SlurmSettings,
    /// The job's directory under the settings' log directory.
    pub job_dir: &'a Path,
    /// The completion indexes this submission runs (sorted).
    pub indexes: &'a [i64],
    /// This run's count of submissions before this one.
    pub submission: u32,
    /// Hold the submission back this long (a retry's back-off).
    pub begin_after_seconds: Option<u64>,
    /// Variables of the server's environment every job gets (`PATH`, …).
    pub base_env: &'a [(String, String)],
}

/// One submission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submission {
    /// `sbatch`'s options, before the script's path.
    pub options: Vec<String>,
    pub script: String,
    /// The variables `--export` names, with their values: `sbatch`'s
    /// environment, the server's own (`PATH`, `HOME`, …), never the job's.
    pub env: Vec<(String, String)>,
    /// The job's variables as the task's shell reads them (`export
    /// NAME='value'` lines), written to [`env_file`] before `sbatch`. Never
    /// log it: it holds secrets.
    pub env_file: String,
}

/// The variables the script sets per task or per worker, so the submission
/// does not export them.
const PER_TASK: &[&str] = &[
    "JOB_COMPLETION_INDEX",
    "LEPTON_JOB_WORKER_INDEX",
    "NODE_RANK",
    "MASTER_ADDR",
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
];

/// `0-9` for a run of indexes, `1,4,7` otherwise.
pub fn array_spec(indexes: &[i64]) -> String {
    let contiguous = indexes.windows(2).all(|w| w[1] == w[0] + 1);
    match (indexes.first(), indexes.last()) {
        (Some(first), Some(last)) if contiguous && first != last => format!("{first}-{last}"),
        _ => indexes.iter().map(i64::to_string).collect::<Vec<_>>().join(","),
    }
}

/// `'text'` for a POSIX shell, whatever `text` holds.
pub fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The `--nice` of a priority level: 0 at the default (4) and above, 1000
/// more per level below.
fn nice(level: u8) -> u32 {
    u32::from(4u8.saturating_sub(level)) * 1000
}

/// Variable names a job may not set on Slurm (a trailing `*` is a
/// prefix): Slurm's tools read `SBATCH_*`, `SALLOC_*`, `SRUN_*` and
/// `SLURM_*`, and the loader and the shell `LD_*`, `PATH`, `IFS`, `ENV` and
/// `BASH_ENV`, wherever they are set.
pub const REFUSED_ENV_NAMES: &[&str] =
    &["SBATCH_*", "SALLOC_*", "SRUN_*", "SLURM_*", "LD_*", "PATH", "IFS", "ENV", "BASH_ENV"];

/// The environment file of one submission, beside its output.
pub fn env_file(job_dir: &Path, run: i64, submission: u32) -> std::path::PathBuf {
    job_dir.join(format!("run{run}-{submission}.env"))
}

/// Builds one submission.
pub fn render(input: &SubmissionInput<'_>) -> Result<Submission, String> {
    let launch = input.launch;
    let spec = &launch.spec;
    if spec.container.command().is_empty() {
        return Err("the Slurm executor needs spec.container.command".into());
    }
    if input.indexes.is_empty() {
        return Err("a submission runs at least one completion index".into());
    }
    let workers = launch.resolved.workers.max(1);
    let mut options: Vec<String> = Vec::new();
    let mut option = |name: &str, value: String| options.push(format!("--{name}={value}"));
    option("job-name", job_name(&launch.job_id));
    option("comment", comment(&launch.job_id, launch.run, input.submission));
    let parallel = launch.resolved.parallelism.max(1);
    let array = array_spec(input.indexes);
    if (parallel as usize) < input.indexes.len() {
        option("array", format!("{array}%{parallel}"));
    } else {
        option("array", array);
    }
    option("output", input.job_dir.join("%A_%a.out").to_string_lossy().into_owned());
    option("open-mode", "append".into());
    if let Some(partition) = input.settings.partition_of(&launch.placement.node_group) {
        option("partition", partition.into());
    }
    if let Some(account) = &input.settings.account {
        option("account", account.clone());
    }
    let priority = spec.priority();
    match input.settings.qos_by_priority.get(priority.class()).or(input.settings.qos.as_ref()) {
        Some(qos) => option("qos", qos.clone()),
        None if nice(priority.level()) > 0 => option("nice", nice(priority.level()).to_string()),
        None => {}
    }
    if workers > 1 {
        option("nodes", workers.to_string());
        option("ntasks-per-node", "1".into());
    }
    option("cpus-per-task", (launch.resolved.shape.cpu.ceil() as i64).max(1).to_string());
    option("mem", format!("{}M", launch.resolved.shape.memory_mb));
    if launch.resolved.shape.gpus > 0 {
        option("gres", format!("gpu:{}", launch.resolved.shape.gpus));
    }
    if let Some(seconds) = spec.active_deadline_seconds.filter(|s| *s > 0) {
        option("time", ((seconds + 59) / 60).to_string());
    }
    if let Some(wait) = input.begin_after_seconds.filter(|s| *s > 0) {
        option("begin", format!("now+{wait}"));
    }
    if input.settings.pyxis {
        if let Some(image) = spec.container.image_reference().filter(|i| !i.trim().is_empty()) {
            option("container-image", image);
        }
        if let Some(dir) = spec.container.working_dir.as_deref() {
            option("container-workdir", dir.to_string());
        }
        // pyxis runs the container as the submitting user, or as root
        // mapped from that user (a user namespace): never the node's root.
        // Any other user is refused when the job is created
        // (`SlurmExecutor::check_spec`).
        if spec
            .container
            .user
            .as_deref()
            .and_then(|u| jobdeck_api::parse_container_user(u).ok())
            .is_some_and(|u| u.is_root())
        {
            options.push("--container-remap-root".into());
        }
    }
    // Jobdeck retries failed replicas itself (with their back-off); a
    // requeue by Slurm would run an attempt twice under one id.
    options.push("--no-requeue".into());

    let mut job_env: Vec<(String, String)> = Vec::new();
    for (name, value) in replica_env(launch, 0, &[]) {
        if PER_TASK.contains(&name.as_str()) {
            continue;
        }
        // The contract refuses these when the job is created; a job stored
        // before that rule still never hands one to a host process.
        if let Some(pattern) = jobdeck_api::refused_env_name(REFUSED_ENV_NAMES, &name) {
            return Err(format!("the variable {name} may not be set on Slurm ('{pattern}' is read outside the job)"));
        }
        job_env.push((name, value));
    }
    if workers > 1 {
        job_env.retain(|(n, _)| n != "MASTER_PORT");
        job_env.push(("MASTER_PORT".into(), input.settings.master_port.to_string()));
    }
    let env: Vec<(String, String)> = input.base_env.to_vec();
    let names: Vec<&str> = env.iter().map(|(n, _)| n.as_str()).collect();
    option_export(&mut options, &names);
    let env_file_text: String =
        job_env.iter().map(|(name, value)| format!("export {name}={}\n", shell_quote(value))).collect();

    let dir = shell_quote(&input.job_dir.to_string_lossy());
    let variables = shell_quote(&env_file(input.job_dir, launch.run, input.submission).to_string_lossy());
    // The command, then its extension arguments (`spec.container.args`).
    let program = spec.container.command_line().iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" ");
    let mut script = String::new();
    script.push_str("#!/bin/sh\n");
    script.push_str(&format!(
        "# Jobdeck job {}, run {}, submission {}: written by the Slurm executor (docs/slurm.md).\n",
        launch.job_id, launch.run, input.submission
    ));
    script.push_str(&format!("dir={dir}\n"));
    script.push_str(&format!("variables={variables}\n"));
    script.push_str("task=\"$SLURM_ARRAY_TASK_ID\"\n");
    script.push_str("exit_file=\"$dir/${SLURM_ARRAY_JOB_ID}_${task}.exit\"\n");
    // `scancel --signal=TERM --full` signals this shell as well as the
    // program. Untrapped, the SIGTERM would end the shell and with it the
    // batch step: Slurm would call the job done while a program that
    // handles SIGTERM ran on, out of its sight (seen with
    // proctrack/linuxproc). Trapped, the shell waits for the program
    // (which gets the default action back when it starts) until it ends or
    // Slurm kills it.
    script.push_str("trap : TERM\n");
    // The job's variables are read in the program's own shell, after
    // Slurm's tools have run and where they cannot change the script's.
    if workers > 1 {
        script.push_str(&format!("export WORLD_SIZE={workers}\n"));
        script.push_str("export MASTER_ADDR=\"$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\"\n");
        script.push_str(
            "srun --kill-on-bad-exit=1 --output=\"$dir/${SLURM_ARRAY_JOB_ID}_${task}-%t.out\" \\\n  \
             sh -c 'export NODE_RANK=\"$SLURM_PROCID\" JOB_COMPLETION_INDEX=\"$SLURM_PROCID\" \
             LEPTON_JOB_WORKER_INDEX=\"$SLURM_PROCID\"; . \"$1\"; shift; exec \"$@\"' jobdeck-worker \"$variables\" ",
        );
        script.push_str(&program);
        script.push('\n');
    } else {
        script.push_str(
            "(export JOB_COMPLETION_INDEX=\"$task\" LEPTON_JOB_WORKER_INDEX=\"$task\"; . \"$variables\"; exec ",
        );
        script.push_str(&program);
        script.push_str(")\n");
    }
    script.push_str("code=$?\n");
    script.push_str("printf '%s\\n' \"$code\" > \"$exit_file\"\n");
    script.push_str("exit \"$code\"\n");
    Ok(Submission { options, script, env, env_file: env_file_text })
}

fn option_export(options: &mut Vec<String>, names: &[&str]) {
    options.push(format!("--export={}", names.join(",")));
}

/// What a job may not ask of Slurm beyond the contract's own rules: with
/// pyxis a container runs as the submitting user, or as root mapped from it
/// (`--container-remap-root`), never as another user. Without pyxis the
/// contract refuses any user (`JobRequirements::image_ignored`).
pub fn check_spec(spec: &JobSpec, settings: &SlurmSettings) -> FieldErrors {
    let mut errors = FieldErrors::new();
    let user = spec.container.user.as_deref().map(jobdeck_api::parse_container_user);
    if settings.pyxis && matches!(user, Some(Ok(user)) if !user.is_root()) {
        errors.insert(
            "spec.container.user".into(),
            vec!["on Slurm a container runs as the submitting user, or as root mapped from it: leave this out, or write root".into()],
        );
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::tests::launch;

    fn input<'a>(
        launch: &'a JobLaunch,
        settings: &'a SlurmSettings,
        indexes: &'a [i64],
        begin: Option<u64>,
    ) -> SubmissionInput<'a> {
        SubmissionInput {
            launch,
            settings,
            job_dir: Path::new("/shared/jobdeck/train-abcde"),
            indexes,
            submission: 0,
            begin_after_seconds: begin,
            base_env: &[],
        }
    }

    fn sample() -> JobLaunch {
        let mut launch = launch(1);
        launch.resolved.completions = 10;
        launch.resolved.parallelism = 2;
        launch.spec.container.command = Some(vec!["python3".into(), "train.py".into()]);
        launch.spec.container.args = Some(vec!["--name=it's".into()]);
        launch.env = vec![("HF_TOKEN".into(), "s3cret".into())];
        launch
    }

    #[test]
    fn arrays_are_written_as_slurm_reads_them() {
        let cases: [(&[i64], &str); 5] =
            [(&[0], "0"), (&[0, 1, 2], "0-2"), (&[3], "3"), (&[1, 4, 7], "1,4,7"), (&[2, 3, 5], "2,3,5")];
        for (indexes, expected) in cases {
            assert_eq!(array_spec(indexes), expected);
        }
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn a_job_maps_to_the_options_slurm_users_expect() {
        let settings = SlurmSettings {
            partitions: [("local".to_string(), "gpu".to_string())].into(),
            account: Some("vision".into()),
            ..SlurmSettings::default()
        };
        let mut launch = sample();
        launch.spec.active_deadline_seconds = Some(61);
        let indexes: Vec<i64> = (0..10).collect();
        let submission = render(&input(&launch, &settings, &indexes, None)).unwrap();
        let options = submission.options.join(" ");
        for part in [
            "--job-name=jobdeck-train-abcde",
            "--comment=jobdeck:train-abcde:0:0",
            "--array=0-9%2",
            "--output=/shared/jobdeck/train-abcde/%A_%a.out",
            "--partition=gpu",
            "--account=vision",
            "--cpus-per-task=4",
            "--mem=8192M",
            "--gres=gpu:1",
            "--time=2",
            "--no-requeue",
        ] {
            assert!(options.contains(part), "missing {part} in {options}");
        }
        assert!(!options.contains("--nice") && !options.contains("--qos") && !options.contains("--begin"), "{options}");
        // The job's variables are in the environment file only: never in
        // sbatch's environment, the options or the script.
        assert!(!options.contains("HF_TOKEN") && !options.contains("JOB_COMPLETIONS"), "{options}");
        assert!(!options.contains("s3cret") && !submission.script.contains("s3cret"));
        assert!(submission.env.iter().all(|(name, _)| name != "HF_TOKEN"), "{:?}", submission.env);
        assert!(submission.env_file.contains("export HF_TOKEN='s3cret'\n"), "{}", submission.env_file);
        assert!(submission.env_file.contains("export JOB_COMPLETIONS='10'\n"), "{}", submission.env_file);
        assert!(!submission.env_file.contains("JOB_COMPLETION_INDEX") && !submission.env_file.contains("CUDA_VISIBLE"));
        let script = &submission.script;
        assert!(script.contains("variables='/shared/jobdeck/train-abcde/run0-0.env'"), "{script}");
        assert!(
            script.contains(
                "(export JOB_COMPLETION_INDEX=\"$task\" LEPTON_JOB_WORKER_INDEX=\"$task\"; . \"$variables\"; exec "
            ),
            "{script}"
        );
        assert!(script.contains(r"'python3' 'train.py' '--name=it'\''s')"), "{script}");
        assert!(script.contains("printf '%s\\n' \"$code\" > \"$exit_file\""), "{script}");
        assert!(!script.contains("srun"), "{script}");
        // The shell outlives a SIGTERM, so the program's grace period holds
        // (tests/slurm.rs measures it).
        assert!(script.contains("\ntrap : TERM\n"), "{script}");
    }

    #[test]
    fn retries_priorities_and_pyxis() {
        let mut settings = SlurmSettings {
            qos_by_priority: [("high-9000".to_string(), "urgent".to_string())].into(),
            pyxis: true,
            ..SlurmSettings::default()
        };
        let mut launch = sample();
        launch.spec.container.image = Some("nvcr.io/nvidia/pytorch".into());
        launch.spec.container.image_tag = Some("25.08-py3".into());
        launch.spec.container.working_dir = Some("/workspace".into());
        // (priority class, expected option)
        let cases = [("high-9000", "--qos=urgent"), ("mid-4000", ""), ("low-1000", "--nice=3000")];
        for (class, expected) in cases {
            launch.spec.queue_config =
                Some(jobdeck_api::QueueConfig { priority_class: Some(class.into()), ..Default::default() });
            let submission = render(&input(&launch, &settings, &[3], Some(20))).unwrap();
            let options = submission.options.join(" ");
            assert!(options.contains("--array=3 ") && options.contains("--begin=now+20"), "{options}");
            assert!(options.contains("--container-image=nvcr.io/nvidia/pytorch:25.08-py3"), "{options}");
            assert!(options.contains("--container-workdir=/workspace"), "{options}");
            if expected.is_empty() {
                assert!(!options.contains("--qos") && !options.contains("--nice"), "{class}: {options}");
            } else {
                assert!(options.contains(expected), "{class}: {options}");
            }
        }
        assert!(!submission_options(&launch, &settings).contains("--container-remap-root"));
        // Root in the container is root mapped from the submitting user.
        for root in ["root", "0:0"] {
            launch.spec.container.user = Some(root.into());
            assert!(submission_options(&launch, &settings).contains(" --container-remap-root"), "{root}");
        }
        settings.pyxis = false;
        let options = submission_options(&launch, &settings);
        assert!(!options.contains("--container-image") && !options.contains("--container-remap-root"), "{options}");
    }

    #[test]
    fn with_pyxis_a_container_runs_as_the_submitting_user_or_as_root_mapped_from_it() {
        let mut spec = sample().spec;
        let pyxis = SlurmSettings { pyxis: true, ..SlurmSettings::default() };
        for (user, refused) in
            [(None, false), (Some("root"), false), (Some("0:0"), false), (Some("1000"), true), (Some("ubuntu"), true)]
        {
            spec.container.user = user.map(String::from);
            assert_eq!(check_spec(&spec, &pyxis).contains_key("spec.container.user"), refused, "{user:?}");
        }
    }

    fn submission_options(launch: &JobLaunch, settings: &SlurmSettings) -> String {
        render(&input(launch, settings, &[0], None)).unwrap().options.join(" ")
    }

    #[test]
    fn workers_share_one_allocation_with_the_rendezvous_variables() {
        let settings = SlurmSettings::default();
        let mut launch = sample();
        launch.resolved.workers = 4;
        launch.resolved.completions = 4;
        launch.resolved.parallelism = 4;
        let submission = render(&input(&launch, &settings, &[0], None)).unwrap();
        let options = submission.options.join(" ");
        assert!(options.contains("--array=0 ") && options.contains("--nodes=4 --ntasks-per-node=1"), "{options}");
        assert!(submission.env_file.contains("export WORLD_SIZE='4'\n"), "{}", submission.env_file);
        assert!(submission.env_file.contains("export MASTER_PORT='29400'\n"), "{}", submission.env_file);
        let script = &submission.script;
        for part in [
            "MASTER_ADDR=\"$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\"",
            "srun --kill-on-bad-exit=1 --output=\"$dir/${SLURM_ARRAY_JOB_ID}_${task}-%t.out\"",
            "NODE_RANK=\"$SLURM_PROCID\" JOB_COMPLETION_INDEX=\"$SLURM_PROCID\"",
            "; . \"$1\"; shift; exec \"$@\"' jobdeck-worker \"$variables\" 'python3'",
        ] {
            assert!(script.contains(part), "missing {part} in {script}");
        }
    }

    /// Whatever a value holds (quotes, a line break, `$(…)`), the task's
    /// shell reads it as data: the file is run by a real shell here and the
    /// values come back byte for byte, with no command of theirs run.
    #[test]
    fn the_environment_file_carries_any_value_as_data() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let hostile = format!("a'b\nc $(touch {m}) `touch {m}` \\ \"d\" ;touch {m}", m = marker.display());
        let mut launch = sample();
        launch.env = vec![("HOSTILE".into(), hostile.clone()), ("EMPTY".into(), String::new())];
        let submission = render(&input(&launch, &SlurmSettings::default(), &[0], None)).unwrap();
        let file = dir.path().join("vars.env");
        std::fs::write(&file, &submission.env_file).unwrap();
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(". \"$1\"; printf '%s' \"$HOSTILE\"; printf '|%s|' \"$EMPTY\"")
            .arg("sh")
            .arg(&file)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8(out.stdout).unwrap(), format!("{hostile}||"));
        assert!(!marker.exists(), "a value ran a command");
    }

    /// Names Slurm's tools or the loader read are never taken from a job,
    /// even one stored before the contract refused them.
    #[test]
    fn variables_slurm_or_the_loader_would_read_are_refused() {
        for name in ["SBATCH_EXPORT", "SLURM_CONF", "LD_PRELOAD", "PATH", "SRUN_CPUS_PER_TASK", "BASH_ENV"] {
            let mut launch = sample();
            launch.env = vec![(name.into(), "x".into())];
            let err = render(&input(&launch, &SlurmSettings::default(), &[0], None)).unwrap_err();
            assert!(err.contains(name), "{name}: {err}");
        }
        let mut launch = sample();
        launch.env = vec![("PATHS".into(), "x".into()), ("MY_LD_PATH".into(), "y".into())];
        assert!(render(&input(&launch, &SlurmSettings::default(), &[0], None)).is_ok());
    }

    #[test]
    fn a_job_without_a_command_cannot_be_submitted() {
        let mut launch = sample();
        launch.spec.container.command = None;
        let err = render(&input(&launch, &SlurmSettings::default(), &[0], None)).unwrap_err();
        assert!(err.contains("spec.container.command"), "{err}");
    }
}
