//! A container's volumes, bound by the replica supervisor so that no job can
//! lead a mount out of its volume (docs/security.md).
//!
//! A job that may write a volume may plant a symbolic link in it, and an
//! engine given a path follows links: a later job mounting that path would
//! get whatever the link names, the host's root included. So the directory
//! inside the volume is opened one component at a time, each with
//! `O_NOFOLLOW | O_DIRECTORY` relative to the one before (a link is refused,
//! naming it), and the directory so opened is bound onto a mount point of the
//! data directory's `mounts/` (`mount` of `/proc/self/fd/N`, which the kernel
//! resolves to the opened directory itself, not to a path read again), then
//! made `nosuid,nodev` (and read-only when asked). The engine is given that
//! mount point, in a directory only the server's user can write: a link
//! swapped into the volume after the check changes nothing, because the
//! check and the mount are one open directory.
//!
//! Binding needs the right to mount (the server run as root, as rootful
//! engines are). Without it the supervisor gives the engine the path it
//! opened without links and says in the replica's log that a link swapped in
//! between could still be followed.
//!
//! The mount points never live inside a run directory: run directories are
//! removed recursively, which would go through a bind that outlived its
//! supervisor into the volume itself. They are unmounted (lazily) and removed
//! with `rmdir` only, which fails rather than delete anything if the unmount
//! did not happen.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::container::VolumeMount;

/// Why a volume could not be given to the container.
#[derive(Debug, thiserror::Error)]
pub enum VolumeError {
    /// A component of the path is a symbolic link: refused, as it could
    /// lead anywhere on the host.
    #[error("'{path}' in volume '{volume}' is a symbolic link; volumes are mounted without following links")]
    Link { volume: String, path: String },
    /// A component is missing or is not a directory.
    #[error("'{path}' in volume '{volume}' is not a directory")]
    NotADirectory {
        volume: String,
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The volume's own directory (the operator's) cannot be opened.
    #[error("cannot open volume '{volume}' at {}", root.display())]
    Root {
        volume: String,
        root: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot bind volume '{volume}' for the container")]
    Bind {
        volume: String,
        #[source]
        source: std::io::Error,
    },
}

impl VolumeError {
    /// Whether the job's own configuration is at fault (its path), rather
    /// than the machine.
    pub fn is_the_jobs(&self) -> bool {
        matches!(self, VolumeError::Link { .. } | VolumeError::NotADirectory { .. })
    }
}

fn c_path(path: &Path) -> std::io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))
}

fn open_at(dir: Option<&OwnedFd>, name: &Path, flags: libc::c_int) -> std::io::Result<OwnedFd> {
    let name = c_path(name)?;
    let at = dir.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    // SAFETY: `name` is a valid C string and `at` an open directory or
    // AT_FDCWD; the returned descriptor is owned by the OwnedFd.
    let fd = unsafe { libc::openat(at, name.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens the directory `mount.path` inside `mount.root` without following
/// a link in any of its components.
pub fn open_beneath(mount: &VolumeMount) -> Result<OwnedFd, VolumeError> {
    let mut dir = open_at(None, &mount.root, libc::O_PATH | libc::O_DIRECTORY).map_err(|source| VolumeError::Root {
        volume: mount.volume.clone(),
        root: mount.root.clone(),
        source,
    })?;
    let mut walked = String::new();
    for part in &mount.path {
        walked.push('/');
        walked.push_str(part);
        let next = open_at(Some(&dir), Path::new(part), libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW);
        dir = match next {
            Ok(fd) => fd,
            Err(source) => {
                // O_NOFOLLOW with O_PATH opens a link itself, and O_DIRECTORY
                // then refuses it: ENOTDIR for a link, as for a file. Ask
                // what it is, without following it.
                let is_link = open_at(Some(&dir), Path::new(part), libc::O_PATH | libc::O_NOFOLLOW)
                    .ok()
                    .and_then(|fd| {
                        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
                        let empty = c"";
                        // SAFETY: `fd` is open; `stat` is a valid out-pointer.
                        let rc =
                            unsafe { libc::fstatat(fd.as_raw_fd(), empty.as_ptr(), &mut stat, libc::AT_EMPTY_PATH) };
                        (rc == 0).then_some(stat.st_mode & libc::S_IFMT == libc::S_IFLNK)
                    })
                    .unwrap_or(false);
                let (volume, path) = (mount.volume.clone(), walked.clone());
                return Err(if is_link {
                    VolumeError::Link { volume, path }
                } else {
                    VolumeError::NotADirectory { volume, path, source }
                });
            }
        };
    }
    Ok(dir)
}

/// The volumes of one container, bound for its engine; unbound by
/// [`Bound::release`] once the container is gone.
#[derive(Debug, Default)]
pub struct Bound {
    /// What to give the engine, one per mount, in order.
    pub sources: Vec<PathBuf>,
    /// The mount points this process made.
    points: Vec<PathBuf>,
    /// Said once in the replica's log when binding was not possible.
    pub note: Option<String>,
}

/// The mount point of a container's `index`-th volume.
pub fn mount_point(staging_dir: &Path, container: &str, index: usize) -> PathBuf {
    staging_dir.join(format!("{container}-{index}"))
}

/// Opens and binds every volume of the container `container`.
pub fn bind(mounts: &[VolumeMount], staging_dir: &Path, container: &str) -> Result<Bound, VolumeError> {
    let mut bound = Bound::default();
    for (index, mount) in mounts.iter().enumerate() {
        let dir = match open_beneath(mount) {
            Ok(dir) => dir,
            Err(e) => {
                bound.release();
                return Err(e);
            }
        };
        let point = mount_point(staging_dir, container, index);
        match bind_one(&dir, &point, mount.read_only) {
            Ok(()) => {
                bound.sources.push(point.clone());
                bound.points.push(point);
            }
            Err(source) if source.raw_os_error() == Some(libc::EPERM) => {
                let _ = std::fs::remove_dir(&point);
                // Not allowed to mount: the path that was opened without
                // links, as the engine would have had it.
                let opened = std::fs::read_link(format!("/proc/self/fd/{}", dir.as_raw_fd()))
                    .unwrap_or_else(|_| mount.host_path());
                // The contract refuses these in a job's path; a job stored
                // before it did never splits the engine's volume argument.
                if opened.to_string_lossy().contains([':', ',']) {
                    bound.release();
                    let source = std::io::Error::other("the path holds ':' or ','");
                    return Err(VolumeError::Bind { volume: mount.volume.clone(), source });
                }
                bound.sources.push(opened);
                bound.note = Some(
                    "volumes were checked for symbolic links but not bound (the server may not mount): a link \
                     swapped into a volume between the check and the container's start would be followed"
                        .into(),
                );
            }
            Err(source) => {
                let _ = std::fs::remove_dir(&point);
                bound.release();
                return Err(VolumeError::Bind { volume: mount.volume.clone(), source });
            }
        }
    }
    Ok(bound)
}

fn bind_one(dir: &OwnedFd, point: &Path, read_only: bool) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if let Some(parent) = point.parent() {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(parent)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(point) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    let source = c_path(Path::new(&format!("/proc/self/fd/{}", dir.as_raw_fd())))?;
    let target = c_path(point)?;
    // SAFETY: both are valid C strings; no file system type or data.
    let rc =
        unsafe { libc::mount(source.as_ptr(), target.as_ptr(), std::ptr::null(), libc::MS_BIND, std::ptr::null()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut flags = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_NOSUID | libc::MS_NODEV;
    if read_only {
        flags |= libc::MS_RDONLY;
    }
    // SAFETY: as above; a remount of the bind just made.
    let rc = unsafe { libc::mount(std::ptr::null(), target.as_ptr(), std::ptr::null(), flags, std::ptr::null()) };
    if rc != 0 {
        let error = std::io::Error::last_os_error();
        unmount(point);
        return Err(error);
    }
    Ok(())
}

/// Detaches the mount at `point` and removes the empty mount point: never
/// anything below it.
fn unmount(point: &Path) {
    if let Ok(target) = c_path(point) {
        // SAFETY: a valid C string; MNT_DETACH only detaches.
        unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
    }
    let _ = std::fs::remove_dir(point);
}

impl Bound {
    /// Unbinds every volume this bound.
    pub fn release(&mut self) {
        for point in self.points.drain(..) {
            unmount(&point);
        }
    }
}

/// The binds end with their holder: the supervisor keeps it until the
/// container is removed, on every path out.
impl Drop for Bound {
    fn drop(&mut self) {
        self.release();
    }
}

/// Unbinds what the supervisors of a job's containers left (one killed
/// before it could): every mount point of `staging_dir` named after one of
/// the job's containers (`jobdeck-<job>-<index>-<attempt>-<n>`).
pub fn release_job(staging_dir: &Path, job_id: &str) {
    let prefix = format!("{}-", crate::container::container_name(job_id));
    let Ok(entries) = std::fs::read_dir(staging_dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(&prefix) else { continue };
        let parts: Vec<&str> = rest.split('-').collect();
        if parts.len() == 3 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())) {
            unmount(&entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mount(root: &Path, path: &[&str]) -> VolumeMount {
        VolumeMount {
            volume: "scratch".into(),
            root: root.to_path_buf(),
            path: path.iter().map(|p| p.to_string()).collect(),
            target: "/data".into(),
            read_only: false,
        }
    }

    /// A link anywhere on the way is refused and named; so is a file.
    #[test]
    fn a_link_inside_a_volume_is_never_followed() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("a/b")).unwrap();
        std::fs::write(root.path().join("a/file"), "x").unwrap();
        std::os::unix::fs::symlink("/", root.path().join("a/escape")).unwrap();
        std::os::unix::fs::symlink("b", root.path().join("a/inner")).unwrap();
        assert!(open_beneath(&mount(root.path(), &["a", "b"])).is_ok());
        assert!(open_beneath(&mount(root.path(), &[])).is_ok());
        let cases = [
            (&["a", "escape"][..], "'/a/escape' in volume 'scratch' is a symbolic link"),
            (&["a", "escape", "etc"][..], "'/a/escape' in volume 'scratch' is a symbolic link"),
            (&["a", "inner"][..], "'/a/inner' in volume 'scratch' is a symbolic link"),
            (&["a", "file"][..], "'/a/file' in volume 'scratch' is not a directory"),
            (&["a", "missing"][..], "'/a/missing' in volume 'scratch' is not a directory"),
        ];
        for (path, expected) in cases {
            let error = open_beneath(&mount(root.path(), path)).unwrap_err();
            assert!(error.to_string().starts_with(expected), "{path:?}: {error}");
            assert!(error.is_the_jobs());
        }
    }

    /// Only a job's own mount points are released, and only by unmounting
    /// and `rmdir`: a point that still holds files is left alone.
    #[test]
    fn a_jobs_leftover_mount_points_are_removed_without_touching_their_content() {
        let staging = tempfile::tempdir().unwrap();
        let ours = mount_point(staging.path(), "jobdeck-train-abcde-0-1", 0);
        let other = mount_point(staging.path(), "jobdeck-train-abcde-1-ab123-0-0", 0);
        let full = mount_point(staging.path(), "jobdeck-train-abcde-2-0", 1);
        for dir in [&ours, &other, &full] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(full.join("data"), "kept").unwrap();
        release_job(staging.path(), "train-abcde");
        assert!(!ours.exists());
        assert!(other.exists(), "another job's");
        assert_eq!(std::fs::read_to_string(full.join("data")).unwrap(), "kept");
    }
}
