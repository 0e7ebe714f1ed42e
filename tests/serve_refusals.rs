//! `jobdeck serve` refuses to start, with a clear message and a failing exit
//! status, when it cannot do its job: the port is taken, or the data
//! directory cannot be written. (Issue 2, "Bad input".)

use std::process::Command;
use std::time::Duration;

use jobdeck_e2e::jobdeck_bin;

/// Runs `jobdeck serve` with `args` and returns (succeeded, stderr),
/// failing the test if it does not exit within 20 s.
fn serve(args: &[&str]) -> (bool, String) {
    let mut child = Command::new(jobdeck_bin())
        .arg("serve")
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("jobdeck starts");
    for _ in 0..200 {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            use std::io::Read;
            child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
            return (status.success(), err);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    panic!("jobdeck serve {args:?} kept running; it should have refused to start");
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
