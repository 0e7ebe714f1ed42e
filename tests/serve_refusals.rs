//! `jobdeck serve` refuses to start, with a clear message and a failing exit
//! status, when it cannot do its job: the port is taken, or the data
//! directory cannot be written, the config file breaks a rule, or the
//! executor it names cannot start. (Issue 2, "Bad input".)

use std::process::Command;
use std::time::Duration;

use jobdeck_e2e::jobdeck_bin;

/// Runs `jobdeck serve` with `args` and returns (succeeded, stderr),
/// failing the test if it does not exit within 20 s.
fn serve(args: &[&str]) -> (bool, String) {
    let (ok, _, err) = serve_output(args);
    (ok, err)
}

/// [`serve`], with what it printed on standard output too.
fn serve_output(args: &[&str]) -> (bool, String, String) {
    let mut child = Command::new(jobdeck_bin())
        .arg("serve")
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("jobdeck starts");
    let Some(status) =
        jobdeck_e2e::poll(Duration::from_secs(20), Duration::from_millis(100), || child.try_wait().unwrap())
    else {
        let _ = child.kill();
        panic!("jobdeck serve {args:?} kept running; it should have refused to start");
    };
    use std::io::Read;
    let (mut out, mut err) = (String::new(), String::new());
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    (status.success(), out, err)
}

#[test]
fn a_taken_port_is_refused_by_name() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let data = tempfile::tempdir().unwrap();
    let (ok, err) = serve(&["--listen", &address, "--data-dir", data.path().to_str().unwrap()]);
    assert!(!ok, "it must fail: {err}");
    assert!(err.contains(&format!("cannot listen on {address}")), "{err}");
}

#[test]
fn a_data_directory_that_cannot_be_written_is_refused_by_name() {
    // A path under a regular file can never become a directory, whoever
    // runs the test (root ignores permission bits, so a read-only directory
    // would not do).
    let temp = tempfile::tempdir().unwrap();
    let file = temp.path().join("a-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let data = file.join("data");
    let (ok, err) = serve(&["--listen", "127.0.0.1:0", "--data-dir", data.to_str().unwrap()]);
    assert!(!ok, "it must fail: {err}");
    assert!(err.contains(&format!("cannot create the data directory {}", data.display())), "{err}");
}

/// Runs `jobdeck serve` with a config file that says `config_text`; returns
/// (succeeded, stdout, stderr) and the file's path.
fn serve_with_config(config_text: &str) -> (bool, String, String, std::path::PathBuf) {
    let temp = tempfile::tempdir().unwrap();
    let config = temp.path().join("jobdeck.toml");
    std::fs::write(&config, config_text).unwrap();
    let data = temp.path().join("data");
    let args = ["--listen", "127.0.0.1:0", "--data-dir", data.to_str().unwrap(), "--config", config.to_str().unwrap()];
    let (ok, out, err) = serve_output(&args);
    (ok, out, err, config)
}

/// A config file that breaks a rule names the file, then the rule.
#[test]
fn a_config_that_breaks_a_rule_is_refused_with_the_file_and_the_key() {
    let (ok, _, err, config) = serve_with_config("[[shapes]]\nname = \"s\"\ncpu = 0\nmemory_mb = 1\n");
    assert!(!ok, "it must fail: {err}");
    let expected = format!("error: invalid config file {}: shapes[0].cpu must be more than 0", config.display());
    assert!(err.lines().any(|l| l == expected), "{err}");
}

/// An executor that cannot start (here, settings the Slurm executor does not
/// have) stops the server before it offers a sign-in address that would
/// never answer, and the error says which setting.
#[test]
fn an_executor_that_cannot_start_is_refused_before_any_sign_in_address() {
    let (ok, out, err, _) = serve_with_config("[executor]\nkind = \"slurm\"\n[executor.slurm]\npartion = \"gpu\"\n");
    assert!(!ok, "it must fail: {err}");
    assert!(err.contains("error: executor.slurm: unknown field `partion`"), "{err}");
    assert!(!out.contains("Sign in"), "no sign-in address for a server that is not serving: {out}");
}
