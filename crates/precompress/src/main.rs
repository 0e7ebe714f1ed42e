//! Writes the dcb body of each console pack next to it (`FILE.dcb`), against
//! the console's core module as the dictionary; scripts/split-console.sh
//! runs it on the finished build.
//!
//!     jobdeck-precompress DICTIONARY FILE...
//!
//! Brotli at its best quality is slow (about a megabyte a second), so the
//! files are shared among the machine's cores.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use failure::Failure;

fn main() {
    if let Err(failure) = run() {
        eprintln!("jobdeck-precompress: {failure}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Failure> {
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let dictionary_path = args.next().ok_or(Failure::Usage)?;
    let files: Vec<PathBuf> = args.collect();
    let dictionary = std::fs::read(&dictionary_path).map_err(|e| Failure::Read(dictionary_path.clone(), e))?;
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(files.len().max(1));
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| -> Result<(), Failure> {
                    while let Some(file) = files.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let data = std::fs::read(file).map_err(|e| Failure::Read(file.clone(), e))?;
                        let body = jobdeck_precompress::encode(&dictionary, &data, 11)
                            .map_err(|e| Failure::Compress(file.clone(), e))?;
                        let mut target = file.clone().into_os_string();
                        target.push(".dcb");
                        std::fs::write(&target, body).map_err(|e| Failure::Write(target.into(), e))?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles.into_iter().try_for_each(|handle| handle.join().expect("a compressing thread panicked"))
    })
}

mod failure {
    use std::path::PathBuf;

    /// Why no file was written, with the file it is about.
    #[derive(Debug)]
    pub enum Failure {
        Usage,
        Read(PathBuf, std::io::Error),
        Compress(PathBuf, std::io::Error),
        Write(PathBuf, std::io::Error),
    }

    impl std::fmt::Display for Failure {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            match self {
                Failure::Usage => f.write_str("usage: jobdeck-precompress DICTIONARY FILE..."),
                Failure::Read(path, e) => write!(f, "cannot read {}: {e}", path.display()),
                Failure::Compress(path, e) => write!(f, "cannot compress {}: {e}", path.display()),
                Failure::Write(path, e) => write!(f, "cannot write {}: {e}", path.display()),
            }
        }
    }
}
