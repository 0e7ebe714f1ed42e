//! Files the executors write for a process that may read them at any
//! moment (a supervisor's spec, a Slurm task's variables): written whole or
//! not at all.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` so readers see the old content or the new, never
/// a part: a temporary file, fsync, rename.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    {
        let mut file = OpenOptions::new().create(true).write(true).truncate(true).mode(mode).open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_writes_replace_the_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("exit.json");
        write_atomic(&path, b"{\"a\":1}", 0o600).unwrap();
        write_atomic(&path, b"{}", 0o600).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{}");
        assert!(!dir.path().join("exit.tmp").exists());
    }
}
