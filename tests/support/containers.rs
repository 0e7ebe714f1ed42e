//! Fixtures for container mode against the real engine (podman, installed
//! by `scripts/setup.sh --containers`): a test image made here from
//! busybox-static, a private registry on loopback (Debian's
//! `docker-registry` with htpasswd auth), and a proxy in front of it that
//! holds every connection until the test lets it through, so a test can see
//! a replica pulling without timing anything. Nothing is ever pulled from
//! the internet: every image reference names a loopback registry or the
//! local store.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

/// The engine the tests use.
pub const ENGINE: &str = "podman";

/// The test image: busybox-static's applets, a marker file
/// (`/etc/jobdeck-test-image`) and a default command that says it ran.
pub const TEST_IMAGE: &str = "localhost/jobdeck-test/busybox:1";

/// What the image's default command prints.
pub const DEFAULT_COMMAND_OUTPUT: &str = "the default command of the image ran";

/// Runs the engine with `args`; panics with its words when it fails.
pub fn engine(args: &[&str]) -> String {
    let out = Command::new(ENGINE)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {ENGINE} (scripts/setup.sh --containers installs it): {e}"));
    assert!(out.status.success(), "{ENGINE} {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Makes [`TEST_IMAGE`] in the engine's store, once per test binary.
pub fn test_image() -> &'static str {
    static MADE: OnceLock<()> = OnceLock::new();
    MADE.get_or_init(|| {
        let busybox = Path::new("/bin/busybox");
        assert!(busybox.is_file(), "busybox-static is missing: scripts/setup.sh --containers installs it");
        let root = tempfile::tempdir().unwrap();
        for dir in ["bin", "etc", "tmp", "proc", "sys", "dev", "scratch"] {
            std::fs::create_dir_all(root.path().join(dir)).unwrap();
        }
        std::fs::copy(busybox, root.path().join("bin/busybox")).unwrap();
        let applets = Command::new(busybox).arg("--list").output().expect("busybox lists its applets");
        for applet in String::from_utf8_lossy(&applets.stdout).lines().filter(|a| *a != "busybox") {
            std::os::unix::fs::symlink("busybox", root.path().join("bin").join(applet)).unwrap();
        }
        std::fs::write(root.path().join("etc/jobdeck-test-image"), "jobdeck test image\n").unwrap();
        let tar = root.path().with_extension("tar");
        let status = Command::new("tar").arg("-C").arg(root.path()).arg("-cf").arg(&tar).arg(".").status().unwrap();
        assert!(status.success(), "tar of the test image");
        let change = format!(r#"CMD ["/bin/sh", "-c", "echo {DEFAULT_COMMAND_OUTPUT}"]"#);
        engine(&["import", "--change", &change, tar.to_str().unwrap(), TEST_IMAGE]);
        let _ = std::fs::remove_file(tar);
    });
    TEST_IMAGE
}

/// Container names of the container attempts under a server's data
/// directory (`runs/<job>/<index>-<attempt>`, which has a `stage` file once
/// its container may exist, → `jobdeck-<job>-<index>-<attempt>`).
pub fn attempt_containers(data_dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for job in std::fs::read_dir(data_dir.join("runs")).into_iter().flatten().flatten() {
        for attempt in std::fs::read_dir(job.path()).into_iter().flatten().flatten() {
            if !attempt.path().join("stage").exists() {
                continue;
            }
            names.push(format!(
                "jobdeck-{}-{}",
                job.file_name().to_string_lossy(),
                attempt.file_name().to_string_lossy()
            ));
        }
    }
    names
}

/// Removes the given containers if they exist (a test's leftovers after a
/// failure: the harness kills supervisors, and their containers would run
/// on).
pub fn remove_containers(names: &[String]) {
    if names.is_empty() {
        return;
    }
    let _ = Command::new(ENGINE)
        .args(["rm", "-f", "--ignore"])
        .args(names)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Removes the pods and networks of the container jobs under a data
/// directory (those with a container attempt, `runs/<job>/<attempt>/stage`),
/// the pods with their infra containers.
pub fn remove_pods(data_dir: &Path) {
    for job in std::fs::read_dir(data_dir.join("runs")).into_iter().flatten().flatten() {
        let in_containers = std::fs::read_dir(job.path())
            .into_iter()
            .flatten()
            .flatten()
            .any(|attempt| attempt.path().join("stage").exists());
        if !in_containers {
            continue;
        }
        let label = format!("label=jobdeck.job={}", job.file_name().to_string_lossy());
        let Ok(out) = Command::new(ENGINE).args(["pod", "ps", "-q", "--filter", &label]).stderr(Stdio::null()).output()
        else {
            return;
        };
        let ids: Vec<String> = String::from_utf8_lossy(&out.stdout).split_whitespace().map(String::from).collect();
        if !ids.is_empty() {
            let _ = Command::new(ENGINE)
                .args(["pod", "rm", "-f"])
                .args(&ids)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let listed = Command::new(ENGINE)
            .args(["network", "ls", "-q", "--filter", &label, "--format", "{{.Name}}"])
            .stderr(Stdio::null())
            .output();
        let networks = listed.map(|out| String::from_utf8_lossy(&out.stdout).into_owned()).unwrap_or_default();
        let names: Vec<&str> = networks.split_whitespace().collect();
        if !names.is_empty() {
            let _ = Command::new(ENGINE)
                .args(["network", "rm", "-f"])
                .args(&names)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Detaches every volume bind under a data directory's `mounts/` and
/// removes the empty mount points (`umount -l`, then `rmdir`: never
/// anything inside them).
pub fn release_volume_binds(data_dir: &Path) {
    for point in std::fs::read_dir(data_dir.join("mounts")).into_iter().flatten().flatten() {
        let _ = Command::new("umount").arg("-l").arg(point.path()).stdout(Stdio::null()).stderr(Stdio::null()).status();
        let _ = std::fs::remove_dir(point.path());
    }
}

/// The containers carrying a job's label, running or not.
pub fn containers_of_job(job_id: &str) -> Vec<String> {
    engine(&["ps", "-a", "--format", "{{.Names}}", "--filter", &format!("label=jobdeck.job={job_id}")])
        .lines()
        .map(str::to_string)
        .collect()
}

/// A private registry on a loopback port with one htpasswd user.
pub struct Registry {
    child: Child,
    /// `127.0.0.1:<port>`
    pub address: String,
    pub username: String,
    pub password: String,
    /// A `registries.conf` that lets the engine speak plain HTTP to this
    /// registry and to the addresses given to [`Registry::allow`]: point the
    /// engine's `CONTAINERS_REGISTRIES_CONF` at it.
    pub registries_conf: PathBuf,
    dir: tempfile::TempDir,
}

impl Registry {
    pub fn start() -> Registry {
        let dir = tempfile::tempdir().unwrap();
        let (username, password) = ("jobdeck-ci".to_string(), "s3cret-registry-pw".to_string());
        let htpasswd = Command::new("htpasswd")
            .args(["-Bbn", &username, &password])
            .output()
            .expect("htpasswd runs (apache2-utils, scripts/setup.sh --containers)");
        assert!(htpasswd.status.success());
        std::fs::write(dir.path().join("htpasswd"), &htpasswd.stdout).unwrap();
        let port = super::free_port();
        let address = format!("127.0.0.1:{port}");
        let config = format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {root}\n\
             http:\n  addr: {address}\nauth:\n  htpasswd:\n    realm: jobdeck-test\n    path: {htpasswd}\n",
            root = dir.path().join("data").display(),
            htpasswd = dir.path().join("htpasswd").display(),
        );
        std::fs::write(dir.path().join("config.yml"), config).unwrap();
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(dir.path().join("config.yml"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("docker-registry starts (scripts/setup.sh --containers installs it)");
        let registry = Registry {
            child,
            address: address.clone(),
            username,
            password,
            registries_conf: dir.path().join("registries.conf"),
            dir,
        };
        registry.allow(&[]);
        // Ready when it answers (401: it wants credentials).
        crate::wait_for(&format!("the registry to listen on {address}"), Duration::from_secs(30), || {
            TcpStream::connect(&address).ok()
        });
        registry
    }

    /// Writes the registries.conf: this registry and `more` addresses are
    /// plain HTTP; no short name is ever resolved (so nothing goes to a
    /// public registry).
    pub fn allow(&self, more: &[&str]) {
        let mut text = String::from("unqualified-search-registries = []\n");
        for location in std::iter::once(self.address.as_str()).chain(more.iter().copied()) {
            text.push_str(&format!("\n[[registry]]\nlocation = \"{location}\"\ninsecure = true\n"));
        }
        std::fs::write(&self.registries_conf, text).unwrap();
    }

    /// Pushes a local image to `<registry>/<repository>`; returns that
    /// reference.
    pub fn push(&self, local: &str, repository: &str) -> String {
        let remote = format!("{}/{repository}", self.address);
        let auth = self.dir.path().join("push-auth.json");
        let encoded = {
            let text = format!("{}:{}", self.username, self.password);
            base64_encode(text.as_bytes())
        };
        std::fs::write(&auth, format!(r#"{{"auths":{{"{}":{{"auth":"{encoded}"}}}}}}"#, self.address)).unwrap();
        engine(&["push", "--tls-verify=false", "--authfile", auth.to_str().unwrap(), local, &remote]);
        let _ = std::fs::remove_file(&auth);
        // The engine keeps no copy under the remote name, so a job's pull is
        // a real one.
        let _ = Command::new(ENGINE).args(["rmi", "--force", &remote]).stderr(Stdio::null()).status();
        remote
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A TCP proxy to `target` that holds every connection until
/// [`GatedProxy::open`]: a pull through it waits, visibly, for the test.
pub struct GatedProxy {
    /// `127.0.0.1:<port>`
    pub address: String,
    gate: Arc<(Mutex<bool>, Condvar)>,
}

impl GatedProxy {
    pub fn start(target: &str) -> GatedProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let (target, held) = (target.to_string(), gate.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (target, held) = (target.clone(), held.clone());
                std::thread::spawn(move || {
                    let (open, changed) = &*held;
                    let mut is_open = open.lock().unwrap();
                    while !*is_open {
                        is_open = changed.wait(is_open).unwrap();
                    }
                    drop(is_open);
                    let Ok(server) = TcpStream::connect(&target) else { return };
                    pipe(client, server);
                });
            }
        });
        GatedProxy { address, gate }
    }

    /// Lets every held and later connection through.
    pub fn open(&self) {
        let (open, changed) = &*self.gate;
        *open.lock().unwrap() = true;
        changed.notify_all();
    }
}

/// Copies bytes both ways until either side closes.
fn pipe(client: TcpStream, server: TcpStream) {
    let copy = |mut from: TcpStream, mut to: TcpStream| {
        std::thread::spawn(move || {
            let mut buffer = [0u8; 16 * 1024];
            while let Ok(n) = from.read(&mut buffer) {
                if n == 0 || to.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
            let _ = to.shutdown(std::net::Shutdown::Write);
        })
    };
    let (Ok(client2), Ok(server2)) = (client.try_clone(), server.try_clone()) else { return };
    let up = copy(client, server);
    let down = copy(server2, client2);
    let _ = up.join();
    let _ = down.join();
}

/// Standard base64, for the registry's auth file.
fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_matches_the_standard() {
        for (plain, encoded) in [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("bot:pw", "Ym90OnB3")] {
            assert_eq!(super::base64_encode(plain.as_bytes()), encoded);
        }
    }
}
