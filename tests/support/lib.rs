//! The end-to-end harness: the real `jobdeck serve` on a free port with a
//! temporary data directory, and headless Chromium driven over WebDriver
//! (chromedriver), with a few dozen lines of WebDriver client instead of a
//! large dependency.
//!
//! The server binary and the console must be built first; `scripts/test.sh`
//! does both. `JOBDECK_BIN`, `JOBDECK_CONSOLE_DIR`, `CHROMEDRIVER` and
//! `CHROME_BIN` override where they are looked for.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub use jobdeck_api::{JobState, LeptonJob};
use serde_json::{json, Value};

pub mod containers;
pub mod oidc;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ sits in the workspace").to_path_buf()
}

pub fn jobdeck_bin() -> PathBuf {
    // Where cargo put it: `JOBDECK_BIN`, else the `CARGO_TARGET_DIR` the tests
    // were built with, else the workspace's own target directory.
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|dir| if dir.is_absolute() { dir } else { workspace_root().join(dir) })
        .unwrap_or_else(|| workspace_root().join("target"));
    let bin = std::env::var_os("JOBDECK_BIN").map(PathBuf::from).unwrap_or_else(|| target.join("debug/jobdeck"));
    assert!(
        bin.is_file(),
        "{} is missing: build it with `cargo build -p jobdeck-server` (scripts/test.sh does)",
        bin.display()
    );
    bin
}

/// The built console directory.
pub fn console_dir() -> PathBuf {
    let dir =
        std::env::var_os("JOBDECK_CONSOLE_DIR").map(PathBuf::from).unwrap_or_else(|| workspace_root().join("dist"));
    assert!(
        dir.join("index.html").is_file(),
        "{} has no index.html: build the console with `trunk build --release` (scripts/test.sh does)",
        dir.display()
    );
    dir
}

/// The local executor as most tests want it: shell commands run as
/// processes whatever container engine the machine has, and a failed replica
/// is retried at once instead of after Kubernetes' 10 s back-off, and
/// resource use is sampled every second. Tests of container mode and of the
/// back-off say so in their own config.
pub const TEST_EXECUTOR: &str =
    "[executor.local]\nmode = \"process\"\nretry_backoff_seconds = 0\nmetrics_interval_ms = 1000\n";

/// A running `jobdeck serve`, killed when dropped.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:<port>`
    pub base_url: String,
    /// The sign-in link printed on first start.
    pub sign_in_link: String,
    /// The admin token from that link.
    pub admin_token: String,
    pub data_dir: PathBuf,
    _temp: Option<tempfile::TempDir>,
}

impl Server {
    /// Starts a server on a free port with a fresh data directory.
    pub fn start() -> Server {
        let temp = tempfile::tempdir().expect("a temporary directory");
        let data_dir = temp.path().join("data");
        let mut server = Server::start_in(&data_dir, &[]);
        server._temp = Some(temp);
        server
    }

    /// Starts a server on a free port with a fresh data directory, the
    /// given config file (docs/config.md) and no console: for tests of the
    /// API alone, which then need no built console.
    pub fn start_api_with_config(config_toml: &str) -> Server {
        Server::start_on("127.0.0.1:0", config_toml, &[], false)
    }

    /// [`Server::start_api_with_config`] listening on `listen` (an address
    /// known before the start: the identity provider sends people back to
    /// it) with `env` added to its environment, and the built console when
    /// `console`.
    pub fn start_on(listen: &str, config_toml: &str, env: &[(&str, &str)], console: bool) -> Server {
        let temp = tempfile::tempdir().expect("a temporary directory");
        let config = temp.path().join("jobdeck.toml");
        // A config that says nothing of the local executor gets the tests'
        // settings for it (TEST_EXECUTOR).
        let text = if config_toml.contains("[executor.local]") {
            config_toml.to_string()
        } else {
            format!("{TEST_EXECUTOR}\n{config_toml}")
        };
        std::fs::write(&config, text).expect("the config file is written");
        // Started inside its directory with a relative data directory, as
        // `scripts/run.sh` starts it (`./jobdeck-data`): nothing the server
        // hands a replica, a supervisor or an engine may depend on its own
        // working directory.
        let data_dir = temp.path().join("data");
        let mut command = Server::serve_command_on(listen, Path::new("./data"));
        command.current_dir(temp.path()).arg("--config").arg(&config).envs(env.iter().copied());
        if console {
            command.arg("--console-dir").arg(console_dir());
        }
        let mut server = Server::spawn(command, &data_dir);
        server._temp = Some(temp);
        server
    }

    /// Starts a server on a free port with the given data directory and
    /// extra arguments to `serve`.
    pub fn start_in(data_dir: &Path, extra_args: &[&str]) -> Server {
        Server::start_with_console_in(data_dir, &console_dir(), extra_args)
    }

    /// [`Server::start`] serving the console from `console`, a changed copy
    /// of the built one.
    pub fn start_with_console(console: &Path) -> Server {
        let temp = tempfile::tempdir().expect("a temporary directory");
        let mut server = Server::start_with_console_in(&temp.path().join("data"), console, &[]);
        server._temp = Some(temp);
        server
    }

    fn start_with_console_in(data_dir: &Path, console: &Path, extra_args: &[&str]) -> Server {
        let mut command = Server::serve_command(data_dir);
        Server::default_config(&mut command, data_dir, extra_args);
        command.arg("--console-dir").arg(console).args(extra_args);
        Server::spawn(command, data_dir)
    }

    /// [`Server::start_in`] without the console: the API only, for tests
    /// that need no browser (and no built console).
    pub fn start_api_in(data_dir: &Path, extra_args: &[&str]) -> Server {
        Server::start_api_with_env(data_dir, extra_args, &[])
    }

    /// [`Server::start_api_in`] with extra variables in the server's
    /// environment.
    pub fn start_api_with_env(data_dir: &Path, extra_args: &[&str], env: &[(&str, &str)]) -> Server {
        let mut command = Server::serve_command(data_dir);
        Server::default_config(&mut command, data_dir, extra_args);
        command.envs(env.iter().copied()).args(extra_args);
        Server::spawn(command, data_dir)
    }

    /// Without a `--config` in `extra_args`, gives the server one with the
    /// tests' executor settings ([`TEST_EXECUTOR`]), next to its data
    /// directory.
    fn default_config(command: &mut Command, data_dir: &Path, extra_args: &[&str]) {
        if extra_args.contains(&"--config") {
            return;
        }
        let config = data_dir.with_extension("toml");
        std::fs::write(&config, TEST_EXECUTOR).expect("the test config is written");
        command.arg("--config").arg(config);
    }

    /// `jobdeck serve` on a free port with `data_dir`.
    fn serve_command(data_dir: &Path) -> Command {
        Server::serve_command_on("127.0.0.1:0", data_dir)
    }

    /// `jobdeck serve` on `listen` with `data_dir`.
    fn serve_command_on(listen: &str, data_dir: &Path) -> Command {
        let mut command = Command::new(jobdeck_bin());
        command.arg("serve").args(["--listen", listen]).arg("--data-dir").arg(data_dir);
        // The tests' servers answer hundreds of thousands of requests: their
        // request log (one line each) is left out of the suite's output
        // unless JOBDECK_LOG asks for it. A 500's line is an error and
        // still shows.
        if std::env::var_os("JOBDECK_LOG").is_none() {
            command.env("JOBDECK_LOG", "info,jobdeck_server::http::request_log=error");
        }
        command
    }

    /// Runs `jobdeck serve` as `command` and waits for its address and
    /// sign-in link.
    fn spawn(mut command: Command, data_dir: &Path) -> Server {
        let mut child = command.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("jobdeck starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                println!("[jobdeck] {line}");
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // Bounds a failure only: the loop ends at the line that says the
        // server listens.
        let deadline = Instant::now() + Duration::from_secs(90);
        let mut base_url = None;
        let mut sign_in_link = String::new();
        while Instant::now() < deadline {
            let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) else {
                if let Ok(Some(status)) = child.try_wait() {
                    panic!("jobdeck exited early with {status}");
                }
                continue;
            };
            if let Some(url) = line.strip_prefix("Jobdeck is listening on ") {
                base_url = Some(url.trim_end_matches('/').to_string());
            }
            if let Some(link) = line.strip_prefix("Sign in as admin: ") {
                sign_in_link = link.to_string();
                break;
            }
            if line.starts_with("Sign in with an existing token") {
                break;
            }
        }
        let base_url = base_url.expect("jobdeck printed its address within 30 s");
        let admin_token = sign_in_link.split_once("#token=").map(|(_, t)| t.to_string()).unwrap_or_default();
        Server { child, base_url, sign_in_link, admin_token, data_dir: data_dir.to_path_buf(), _temp: None }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn api_url(&self, path: &str) -> String {
        format!("{}/api/v2{path}", self.base_url)
    }

    /// Creates a token for `user` with `jobdeck token create`.
    pub fn token_for(&self, user: &str) -> String {
        let out = self.token_command(&["create", "--user", user]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    /// Runs `jobdeck token ARGS --data-dir <this server's>`.
    pub fn token_command(&self, args: &[&str]) -> std::process::Output {
        Command::new(jobdeck_bin())
            .arg("token")
            .args(args)
            .arg("--data-dir")
            .arg(&self.data_dir)
            .output()
            .expect("jobdeck token runs")
    }

    /// Sends a request with a bearer token; returns status and JSON body.
    pub fn call(&self, method: &str, path: &str, token: &str, body: Option<&Value>) -> (u16, Value) {
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        let url = self.api_url(path);
        let auth = format!("Bearer {token}");
        let response = match (method, body) {
            ("GET", _) => agent.get(&url).header("Authorization", &auth).call(),
            ("DELETE", _) => agent.delete(&url).header("Authorization", &auth).call(),
            ("POST", Some(b)) => agent.post(&url).header("Authorization", &auth).send_json(b),
            ("POST", None) => agent.post(&url).header("Authorization", &auth).send_empty(),
            ("PATCH", Some(b)) => agent.patch(&url).header("Authorization", &auth).send_json(b),
            ("PUT", Some(b)) => agent.put(&url).header("Authorization", &auth).send_json(b),
            _ => panic!("unsupported call {method} {path}"),
        }
        .unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        let status = response.status().as_u16();
        let text = response.into_body().read_to_string().unwrap_or_default();
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value)
    }

    /// Every attempt of a job's replicas (`GET /jobs/{id}/replicas?attempts=all`).
    pub fn replicas(&self, token: &str, id: &str) -> Vec<Value> {
        let (status, list) = self.call("GET", &format!("/jobs/{id}/replicas?attempts=all"), token, None);
        assert_eq!(status, 200, "{list}");
        list.as_array().cloned().unwrap_or_default()
    }

    /// An attempt's whole log as text. A plain log request follows a
    /// running replica until it ends, as Lepton's does: ask this of ended
    /// attempts.
    pub fn log_text(&self, token: &str, id: &str, replica: &str) -> String {
        let (status, text) = self.call("GET", &format!("/jobs/{id}/replicas/{replica}/log"), token, None);
        assert_eq!(status, 200, "{text}");
        text.as_str().map(str::to_string).unwrap_or_else(|| text.to_string())
    }

    /// A job's failure analysis.
    pub fn failure_analysis(&self, token: &str, id: &str) -> Value {
        let (status, analysis) = self.call("GET", &format!("/jobs/{id}/failure-analysis"), token, None);
        assert_eq!(status, 200, "{analysis}");
        analysis
    }

    /// Creates a job through the API as the token's user; returns its id.
    pub fn create_job(&self, token: &str, job: &Value) -> String {
        let (status, created) = self.call("POST", "/jobs", token, Some(job));
        assert_eq!(status, 200, "{created}");
        created["metadata"]["id"].as_str().expect("the job's id").to_string()
    }

    /// The job as the API answers it, read as the contract's type.
    pub fn job(&self, token: &str, id: &str) -> LeptonJob {
        let (status, job) = self.call("GET", &format!("/jobs/{id}"), token, None);
        assert_eq!(status, 200, "{job}");
        serde_json::from_value(job.clone()).unwrap_or_else(|e| panic!("job {id} is no LeptonJob ({e}): {job}"))
    }

    /// Polls the API until the job reaches `state` (or fails the test after a
    /// minute, naming the state it is stuck in); returns the job.
    pub fn wait_for_state(&self, token: &str, id: &str, state: JobState) -> LeptonJob {
        self.wait_for_state_within(token, id, state, Duration::from_secs(60))
    }

    /// `wait_for_state` with a time limit of its own.
    pub fn wait_for_state_within(&self, token: &str, id: &str, state: JobState, limit: Duration) -> LeptonJob {
        let mut last = None;
        let reached = poll(limit, Duration::from_millis(200), || {
            let job = self.job(token, id);
            let reached = job.status.as_ref().and_then(|s| s.state) == Some(state);
            last = Some(job);
            reached.then(|| last.clone()).flatten()
        });
        reached.unwrap_or_else(|| {
            let job = last.map(|job| serde_json::to_string_pretty(&job).unwrap_or_default()).unwrap_or_default();
            panic!("job {id} never reached {state:?}: {job}\n{}", self.stuck_report(token, id))
        })
    }

    /// Polls job `id`'s replicas until `probe` answers, for at most
    /// `limit`; fails naming `what` with the [`Server::stuck_report`].
    pub fn wait_for_replicas<T>(
        &self,
        token: &str,
        id: &str,
        what: &str,
        limit: Duration,
        mut probe: impl FnMut(&[Value]) -> Option<T>,
    ) -> T {
        poll(limit, Duration::from_millis(50), || probe(&self.replicas(token, id)))
            .unwrap_or_else(|| panic!("timed out waiting for {what}\n{}", self.stuck_report(token, id)))
    }

    /// What a test that waited in vain needs to say why: the job's replicas
    /// (each with its stage), its events, its attempts' run directories and the engine and supervisor
    /// processes on the machine with their ages.
    pub fn stuck_report(&self, token: &str, id: &str) -> String {
        let (_, replicas) = self.call("GET", &format!("/jobs/{id}/replicas"), token, None);
        let (_, events) = self.call("GET", &format!("/jobs/{id}/events"), token, None);
        let processes = Command::new("ps")
            .args(["-eo", "pid,ppid,etimes,args"])
            .output()
            .map(|out| {
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .filter(|line| {
                        ["podman", "conmon", "runc", "netavark", "supervise"].iter().any(|w| line.contains(w))
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default();
        // Each attempt's own account: the stage its supervisor reached and
        // how it ended, if it did.
        let mut attempts = String::new();
        for entry in std::fs::read_dir(self.data_dir.join("runs").join(id)).into_iter().flatten().flatten() {
            let dir = entry.path();
            let mut files: Vec<String> = std::fs::read_dir(&dir)
                .into_iter()
                .flatten()
                .flatten()
                .map(|f| f.file_name().to_string_lossy().into_owned())
                .collect();
            files.sort();
            let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
            attempts.push_str(&format!(
                "{}: files {files:?}; stage {:?}; exit {:?}; supervisor.log {:?}\n",
                entry.file_name().to_string_lossy(),
                read("stage"),
                read("exit.json"),
                read("supervisor.log")
            ));
        }
        format!(
            "replicas: {replicas}\nevents: {events}\nattempts:\n{attempts}engine and supervisor processes (pid ppid seconds args):\n{processes}"
        )
    }

    /// Stops the server with SIGKILL, as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    /// Kills the server, then every replica it started: supervisors outlive
    /// a server by design (restart safety), but not the test that made them.
    fn drop(&mut self) {
        self.kill();
        end_replicas(&self.data_dir);
        // A container runs under its engine, not its supervisor's session.
        containers::remove_containers(&containers::attempt_containers(&self.data_dir));
        containers::remove_pods(&self.data_dir);
        // The volumes a killed supervisor had bound, before the data
        // directory is removed recursively (through them, otherwise).
        containers::release_volume_binds(&self.data_dir);
        // Nor does a Slurm job: cancel what the server's jobs left there.
        cancel_slurm_jobs(&self.data_dir);
    }
}

/// Cancels the Slurm jobs of every job a Slurm server under `data_dir`
/// submitted (its log directory `slurm/<job id>` names them:
/// `jobdeck-<job id>`).
fn cancel_slurm_jobs(data_dir: &Path) {
    let Ok(entries) = std::fs::read_dir(data_dir.join("slurm")) else { return };
    for entry in entries.flatten() {
        let name = format!("--name=jobdeck-{}", entry.file_name().to_string_lossy());
        let _ = Command::new("scancel").arg(name).stdout(Stdio::null()).stderr(Stdio::null()).status();
    }
}

/// The longest a browser wait may take before the test fails. It bounds a
/// failure, not a success: every wait ends as soon as what it waits for is
/// on the page. A console page opened cold on a loaded machine (the whole
/// suite running on two cores, a debug server, dozens of modules fetched one
/// by one when packs do not come) once took more than the 10 s this was.
pub const BROWSER_WAIT: Duration = Duration::from_secs(45);

/// Polls `probe` every 50 ms until it answers, for at most `limit`; fails
/// naming `what`. For waiting on an event (a file, a state), never to let
/// time pass.
pub fn wait_for<T>(what: &str, limit: Duration, probe: impl FnMut() -> Option<T>) -> T {
    poll(limit, Duration::from_millis(50), probe).unwrap_or_else(|| panic!("timed out waiting for {what}"))
}

/// A `/bin/sh -c` script that measures a termination grace period: it
/// creates `dir/started`, notes when SIGTERM came (`dir/term`) and keeps
/// running, noting the time every 50 ms (`dir/alive`) until SIGKILL ends
/// it. The times are `/proc/uptime`'s seconds: the host's clock in a
/// container too, where busybox's `date` has no fractions.
pub fn grace_probe_script(dir: &Path) -> String {
    let dir = dir.display();
    format!(
        "trap 'cut -d\" \" -f1 /proc/uptime >> {dir}/term' TERM; touch {dir}/started; \
         while :; do cut -d' ' -f1 /proc/uptime > {dir}/alive.new; mv {dir}/alive.new {dir}/alive; sleep 0.05; done"
    )
}

/// Creates `job` (running a [`grace_probe_script`] writing into `dir`),
/// stops it once the probe runs and, once it is `Stopped`, answers its id
/// and [`grace_probe_gap`]: what every executor's grace-period test does.
pub fn stop_grace_probe(server: &Server, job: &Value, dir: &Path) -> (String, f64) {
    let token = &server.admin_token;
    let id = server.create_job(token, job);
    wait_for("the probe to run", Duration::from_secs(90), || dir.join("alive").exists().then_some(()));
    let (status, body) = server.call("PATCH", &format!("/jobs/{id}"), token, Some(&json!({"spec": {"stopped": true}})));
    assert_eq!(status, 200, "{body}");
    server.wait_for_state(token, &id, JobState::Stopped);
    let gap = grace_probe_gap(dir);
    (id, gap)
}

/// The seconds from the SIGTERM a [`grace_probe_script`] got to its last
/// sign of life: the grace period it had, less up to 0.1 s (more when a
/// busy machine holds up the probe's loop, which the tests' bounds allow).
pub fn grace_probe_gap(dir: &Path) -> f64 {
    // The first SIGTERM counts; `term` has a line for each.
    let read = |name: &str| -> f64 {
        let text = std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let first = text.lines().next().unwrap_or_default();
        first.trim().parse().unwrap_or_else(|e| panic!("{name} holds {text:?}: {e}"))
    };
    let gap = read("alive") - read("term");
    eprintln!("grace period measured: {gap:.2} s between SIGTERM and SIGKILL");
    gap
}

/// Why a job is in its state (`status.reason`), or "" without one.
pub fn reason(job: &LeptonJob) -> &str {
    job.status.as_ref().and_then(|s| s.reason.as_deref()).unwrap_or_default()
}

/// The one deadline loop of the tests: calls `probe` every `every` until it
/// answers, and answers `None` once `limit` has passed without an answer
/// (the caller says what it waited for).
pub fn poll<T>(limit: Duration, every: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(found) = probe() {
            return Some(found);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(every);
    }
}

/// Kills every replica supervisor started under `data_dir` together with its
/// whole session: each supervisor leads a session of its own, and its replica
/// (and whatever that started) stays in it.
pub fn end_replicas(data_dir: &Path) {
    let supervisors = live_supervisors(data_dir);
    if supervisors.is_empty() {
        return;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else { return };
    let mut killed = Vec::new();
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        if let Some(stat) = proc_stat(pid).filter(|stat| supervisors.contains(&stat.session)) {
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).stderr(Stdio::null()).status();
            killed.push((pid, stat.start_time));
        }
    }
    // SIGKILL is delivered asynchronously: wait until every one has died.
    // (A cleanup: past the limit it gives up rather than fail the test.)
    poll(Duration::from_secs(30), Duration::from_millis(20), || {
        let alive =
            killed.iter().any(|&(pid, start)| proc_stat(pid).is_some_and(|s| s.start_time == start && !s.zombie));
        (!alive).then_some(())
    });
}

/// The pids of the supervisors under `data_dir/runs` that still run: each
/// wrote `supervisor.pid` ("<pid> <start time>"), and the start time tells
/// it from a later process that got the same pid.
pub fn live_supervisors(data_dir: &Path) -> Vec<u32> {
    let mut found = Vec::new();
    let mut dirs = vec![data_dir.join("runs")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.file_name().is_some_and(|n| n == "supervisor.pid") {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let mut words = text.split_whitespace().map(|w| w.parse::<u64>().ok());
                if let (Some(Some(pid)), Some(Some(start))) = (words.next(), words.next()) {
                    let pid = pid as u32;
                    if proc_stat(pid).is_some_and(|stat| stat.start_time == start && !stat.zombie) {
                        found.push(pid);
                    }
                }
            }
        }
    }
    found
}

struct ProcStat {
    session: u32,
    start_time: u64,
    /// Dead, waiting for its parent to collect its exit status.
    zombie: bool,
}

/// The session and start time of a process, from `/proc/<pid>/stat` (the
/// fields after the command name, which may itself hold spaces or parens).
fn proc_stat(pid: u32) -> Option<ProcStat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(ProcStat {
        session: fields.get(3)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
        zombie: *fields.first()? == "Z",
    })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// Headless Chromium under chromedriver, one WebDriver session.
pub struct Browser {
    driver: Child,
    session: String,
    endpoint: String,
    _profile: tempfile::TempDir,
}

/// A WebDriver element reference.
#[derive(Debug, Clone)]
pub struct Element(String);

const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

impl Browser {
    pub fn start() -> Browser {
        Browser::start_with_size(1280, 900)
    }

    pub fn start_with_size(width: u32, height: u32) -> Browser {
        let chromedriver = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into());
        let chrome = std::env::var("CHROME_BIN").unwrap_or_else(|_| "/usr/bin/chromium".into());
        let port = free_port();
        let driver = Command::new(&chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {chromedriver}: {e}"));
        let endpoint = format!("http://127.0.0.1:{port}");
        let profile = tempfile::tempdir().unwrap();
        let capabilities = json!({
            "capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "goog:loggingPrefs": {"browser": "ALL"},
                "goog:chromeOptions": {
                    "binary": chrome,
                    "args": [
                        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                        "--disable-background-networking", "--disable-component-update",
                        "--disable-sync", "--no-first-run", "--disable-quic",
                        format!("--window-size={width},{height}"),
                        format!("--user-data-dir={}", profile.path().display()),
                    ]
                }
            }}
        });
        // Chromium starting on a loaded machine; ends at the first answer.
        let mut refused = None;
        let session = poll(Duration::from_secs(60), Duration::from_millis(100), || {
            match raw_call("POST", &format!("{endpoint}/session"), Some(&capabilities)) {
                Ok(v) => Some(v["value"]["sessionId"].as_str().expect("a session id").to_string()),
                Err(e) => {
                    refused = Some(e);
                    None
                }
            }
        })
        .unwrap_or_else(|| panic!("chromedriver never answered: {refused:?}"));
        Browser { driver, session, endpoint, _profile: profile }
    }

    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let url = format!("{}/session/{}{path}", self.endpoint, self.session);
        raw_call(method, &url, body).unwrap_or_else(|e| panic!("WebDriver {method} {path}: {e}"))["value"].take()
    }

    pub fn goto(&self, url: &str) {
        self.call("POST", "/url", Some(&json!({ "url": url })));
    }

    pub fn current_url(&self) -> String {
        self.call("GET", "/url", None).as_str().unwrap_or_default().to_string()
    }

    /// Runs a script in the page and returns its value.
    pub fn execute(&self, script: &str, args: Vec<Value>) -> Value {
        self.call("POST", "/execute/sync", Some(&json!({ "script": script, "args": args })))
    }

    /// Runs an asynchronous script: it gets a callback as its last argument
    /// and its value is what it passes to that callback.
    pub fn execute_async(&self, script: &str) -> Value {
        self.execute_async_with(script, vec![])
    }

    /// `execute_async` with arguments before the callback.
    pub fn execute_async_with(&self, script: &str, args: Vec<Value>) -> Value {
        // Below the HTTP client's own limit, so a stuck script says so.
        self.call("POST", "/timeouts", Some(&json!({ "script": 50_000 })));
        self.call("POST", "/execute/async", Some(&json!({ "script": script, "args": args })))
    }

    /// Opens the sign-in link for `token` and waits for the deployments list.
    pub fn sign_in(&self, server: &Server, token: &str) {
        self.goto(&format!("{}/login#token={token}", server.base_url));
        self.wait_until("the deployments list after sign-in", || self.current_url().ends_with("/jobs").then_some(()));
    }

    /// The rows of the audit page's table as `actor|action|target|outcome|detail|source`
    /// (the time left out), read in one script: rows are redrawn as the
    /// list changes.
    pub fn audit_rows(&self) -> Vec<String> {
        let rows = self.execute(
            "return [...document.querySelectorAll('table.audit-log tbody tr')].map(r => [...r.cells].slice(1).map(c => c.textContent).join('|'));",
            vec![],
        );
        rows.as_array().into_iter().flatten().filter_map(|r| r.as_str().map(String::from)).collect()
    }

    pub fn try_find(&self, css: &str) -> Option<Element> {
        let url = format!("{}/session/{}/element", self.endpoint, self.session);
        let v = raw_call("POST", &url, Some(&json!({"using": "css selector", "value": css}))).ok()?;
        v["value"][ELEMENT_KEY].as_str().map(|id| Element(id.to_string()))
    }

    /// Waits up to [`BROWSER_WAIT`] for an element matching `css`.
    pub fn find(&self, css: &str) -> Element {
        self.wait_until(&format!("an element matching {css:?}"), || self.try_find(css))
    }

    pub fn find_all(&self, css: &str) -> Vec<Element> {
        let v = self.call("POST", "/elements", Some(&json!({"using": "css selector", "value": css})));
        v.as_array()
            .map(|a| a.iter().filter_map(|e| e[ELEMENT_KEY].as_str()).map(|id| Element(id.into())).collect())
            .unwrap_or_default()
    }

    pub fn text(&self, el: &Element) -> String {
        self.call("GET", &format!("/element/{}/text", el.0), None).as_str().unwrap_or_default().to_string()
    }

    pub fn attribute(&self, el: &Element, name: &str) -> Option<String> {
        self.call("GET", &format!("/element/{}/attribute/{name}", el.0), None).as_str().map(String::from)
    }

    pub fn click(&self, el: &Element) {
        self.call("POST", &format!("/element/{}/click", el.0), Some(&json!({})));
    }

    pub fn type_text(&self, el: &Element, text: &str) {
        self.call("POST", &format!("/element/{}/value", el.0), Some(&json!({ "text": text })));
    }

    /// Focuses `el` and presses `key` (a WebDriver key such as "\u{E007}",
    /// Enter) on it through WebDriver's input actions, as a keyboard does.
    pub fn press_key(&self, el: &Element, key: &str) {
        self.execute("arguments[0].focus();", vec![json!({ ELEMENT_KEY: el.0 })]);
        let keys = json!({"actions": [{"type": "key", "id": "keyboard", "actions": [
            {"type": "keyDown", "value": key}, {"type": "keyUp", "value": key}
        ]}]});
        self.call("POST", "/actions", Some(&keys));
    }

    /// Types `text` into whatever has the focus, key by key, through
    /// WebDriver's input actions ("\u{E004}" is Tab, "\u{E007}" Enter).
    pub fn keys(&self, text: &str) {
        let actions: Vec<Value> = text
            .chars()
            .flat_map(|c| {
                [json!({"type": "keyDown", "value": c.to_string()}), json!({"type": "keyUp", "value": c.to_string()})]
            })
            .collect();
        self.call(
            "POST",
            "/actions",
            Some(&json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]})),
        );
    }

    /// The id of the element that has the focus (empty when it has none).
    pub fn focused_id(&self) -> String {
        self.execute("return document.activeElement ? document.activeElement.id : '';", vec![])
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    pub fn clear(&self, el: &Element) {
        self.call("POST", &format!("/element/{}/clear", el.0), Some(&json!({})));
    }

    /// The visible text of the whole page.
    pub fn page_text(&self) -> String {
        self.execute("return document.body.innerText;", vec![]).as_str().unwrap_or_default().to_string()
    }

    /// Waits up to [`BROWSER_WAIT`] for the page to show `needle`.
    pub fn wait_for_text(&self, needle: &str) {
        self.wait_until(&format!("the page to show {needle:?}"), || self.page_text().contains(needle).then_some(()))
    }

    /// Polls `probe` every 50 ms for up to [`BROWSER_WAIT`].
    pub fn wait_until<T>(&self, what: &str, probe: impl FnMut() -> Option<T>) -> T {
        poll(BROWSER_WAIT, Duration::from_millis(50), probe).unwrap_or_else(|| {
            let text = self.page_text();
            // The browser's own messages name what a page could not do (a
            // module that failed to load, a refused request).
            let console = self.console_messages().join("\n");
            panic!(
                "timed out waiting for {what}; the page at {} shows:\n{text}\nthe browser console said:\n{console}",
                self.current_url()
            );
        })
    }

    /// Makes the page see `prefers-color-scheme: <scheme>` (`light` or
    /// `dark`), through the DevTools protocol.
    pub fn emulate_color_scheme(&self, scheme: &str) {
        self.call(
            "POST",
            "/goog/cdp/execute",
            Some(&json!({
                "cmd": "Emulation.setEmulatedMedia",
                "params": {"features": [{"name": "prefers-color-scheme", "value": scheme}]}
            })),
        );
    }

    /// Makes the page see a viewport of `width` × `height` CSS pixels, as a
    /// phone would show it (a desktop window cannot be narrower than 500).
    pub fn emulate_viewport(&self, width: u32, height: u32) {
        self.call(
            "POST",
            "/goog/cdp/execute",
            Some(&json!({
                "cmd": "Emulation.setDeviceMetricsOverride",
                "params": {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": true}
            })),
        );
    }

    /// Makes every request whose URL matches one of `patterns` (`*` any
    /// characters) fail as a lost connection would, through the DevTools
    /// protocol; an empty list lets everything through again.
    pub fn block_urls(&self, patterns: &[&str]) {
        self.call("POST", "/goog/cdp/execute", Some(&json!({"cmd": "Network.enable", "params": {}})));
        self.call(
            "POST",
            "/goog/cdp/execute",
            Some(&json!({"cmd": "Network.setBlockedURLs", "params": {"urls": patterns}})),
        );
    }

    /// The browser console's messages since the last call (errors, CSP
    /// violations, warnings), as text.
    pub fn console_messages(&self) -> Vec<String> {
        let v = self.call("POST", "/se/log", Some(&json!({"type": "browser"})));
        v.as_array().map(|a| a.iter().map(|m| format!("{} {}", m["level"], m["message"])).collect()).unwrap_or_default()
    }

    /// Saves a PNG screenshot of the viewport.
    pub fn screenshot(&self, path: &Path) {
        let data = self.call("GET", "/screenshot", None);
        let png = decode_base64(data.as_str().unwrap_or_default());
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        std::fs::write(path, png).expect("the screenshot is written");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // A panic in the console (a trap in its WebAssembly) can leave a page
        // that looks right but no longer reacts; every test fails on one.
        if !std::thread::panicking() {
            let url = format!("{}/session/{}/se/log", self.endpoint, self.session);
            let log = raw_call("POST", &url, Some(&json!({"type": "browser"}))).unwrap_or_default();
            let errors: Vec<String> = log["value"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|m| m["message"].as_str().unwrap_or_default().to_string())
                .filter(|m| m.contains("panicked at") || m.contains("Uncaught") || m.contains("RuntimeError"))
                .collect();
            if !errors.is_empty() {
                let _ = raw_call("DELETE", &format!("{}/session/{}", self.endpoint, self.session), None);
                let _ = self.driver.kill();
                panic!("the console reported errors:\n{}", errors.join("\n"));
            }
        }
        let _ = raw_call("DELETE", &format!("{}/session/{}", self.endpoint, self.session), None);
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn raw_call(method: &str, url: &str, body: Option<&Value>) -> Result<Value, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into();
    let response = match method {
        "GET" => agent.get(url).call(),
        "DELETE" => agent.delete(url).call(),
        _ => agent.post(url).send_json(body.cloned().unwrap_or(json!({}))),
    }
    .map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let text = response.into_body().read_to_string().map_err(|e| e.to_string())?;
    let value: Value = serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))?;
    if status >= 400 {
        return Err(format!("HTTP {status}: {}", value["value"]["message"]));
    }
    Ok(value)
}

fn decode_base64(s: &str) -> Vec<u8> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let digits: Vec<u32> = s.bytes().filter_map(value).collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let n = chunk.iter().enumerate().fold(0u32, |acc, (i, d)| acc | d << (18 - 6 * i));
        for i in 0..chunk.len().saturating_sub(1) {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    out
}

/// Where tests put screenshots for people to look at.
pub fn screenshot_path(name: &str) -> PathBuf {
    workspace_root().join("target/screenshots").join(format!("{name}.png"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_decodes() {
        assert_eq!(super::decode_base64("Zm9vYmFy"), b"foobar");
        assert_eq!(super::decode_base64("Zm9vYg=="), b"foob");
        assert_eq!(super::decode_base64("Zm8="), b"fo");
    }
}
