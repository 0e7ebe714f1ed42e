//! Writes the dcb body of each console pack next to it (`FILE.dcb`), against
//! the console's core module as the dictionary; scripts/split-console.sh
//! runs it on the finished build.
//!
//!     jobdeck-precompress DICTIONARY FILE...
//!
//! Brotli at its best quality is slow (about 0.7 MB a second), so the files
//! are shared among the machine's cores.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result};

fn main() {
    if let Err(failure) = run() {
        eprintln!("jobdeck-precompress: {failure:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let dictionary_path = args.next().context("usage: jobdeck-precompress DICTIONARY FILE...")?;
    let files: Vec<PathBuf> = args.collect();
    let dictionary =
        std::fs::read(&dictionary_path).with_context(|| format!("cannot read {}", dictionary_path.display()))?;
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(files.len().max(1));
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    while let Some(file) = files.get(next.fetch_add(1, Ordering::Relaxed)) {
                        write_dcb(&dictionary, file)?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().try_for_each(|handle| handle.join().expect("a compressing thread panicked"))
    })
}

/// Writes `file`'s dcb body against `dictionary` to `file.dcb`.
fn write_dcb(dictionary: &[u8], file: &Path) -> Result<()> {
    let data = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let body = jobdeck_precompress::encode(dictionary, &data, 11)
        .with_context(|| format!("cannot compress {}", file.display()))?;
    let mut target = file.as_os_str().to_owned();
    target.push(".dcb");
    std::fs::write(&target, body).with_context(|| format!("cannot write {}", Path::new(&target).display()))
}
