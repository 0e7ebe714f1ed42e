//! Finds the first error in a replica's log: a Python traceback, CUDA out of
//! memory, an NCCL failure, a host out-of-memory kill, a command that does
//! not exist, an image that cannot be pulled, a crash, or failing all of
//! those an error-looking line.
//!
//! The scanner is fed the log line by line, once, front to back, so it works
//! on logs of any length with constant memory. Each line is matched against
//! one `RegexSet` (a single pass of a compiled automaton), with ANSI colour
//! codes removed first so coloured output matches too.

use std::sync::OnceLock;

use regex::RegexSet;
use serde::{Deserialize, Serialize};

/// What a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FindingKind {
    /// GPU memory ran out (`torch.OutOfMemoryError: CUDA out of memory`).
    CudaOom,
    /// A collective communication failure (NCCL errors and watchdog timeouts).
    Nccl,
    /// Host memory ran out (the kernel's OOM killer, `MemoryError`).
    HostOom,
    /// The command, or the script it names, does not exist.
    CommandNotFound,
    /// The container engine could not pull the image.
    ImagePull,
    /// The program crashed: a segmentation fault, an abort, a Rust panic.
    Crash,
    /// A Python traceback whose exception says nothing more specific.
    PythonTraceback,
    /// A line that looks like an error; used only when nothing above is found.
    ErrorLine,
}

impl FindingKind {
    /// The words the failure view shows for it.
    pub fn label(self) -> &'static str {
        match self {
            FindingKind::CudaOom => "CUDA out of memory",
            FindingKind::Nccl => "NCCL error",
            FindingKind::HostOom => "Out of host memory",
            FindingKind::CommandNotFound => "Command not found",
            FindingKind::ImagePull => "Image pull failure",
            FindingKind::Crash => "Crash",
            FindingKind::PythonTraceback => "Python traceback",
            FindingKind::ErrorLine => "Error message",
        }
    }
}

/// The first error of a log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub kind: FindingKind,
    /// Where the error begins (a traceback's header; otherwise `error_line`).
    pub first_line: u64,
    /// The line that says what went wrong (a traceback's exception line).
    pub error_line: u64,
    /// Where the error's block ends.
    pub last_line: u64,
    /// The text of `error_line` without colour codes, at most
    /// [`MAX_TEXT`] bytes.
    pub text: String,
}

/// The longest error text kept in a finding.
pub const MAX_TEXT: usize = 500;

/// The line patterns, by kind. Case matters unless a pattern says `(?i)`.
/// Each is written to avoid the usual false positives: docker's "Unable to
/// find image … locally" comes before a pull that may well succeed, and
/// NCCL's `WARN` lines are common in healthy runs, so neither is here.
const PATTERNS: &[(FindingKind, &str)] = &[
    (
        FindingKind::CudaOom,
        r"CUDA out of memory|CUDA error: out of memory|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED|cudaErrorMemoryAllocation|RESOURCE_EXHAUSTED: Out of memory",
    ),
    (
        FindingKind::Nccl,
        r"NCCL error|NCCL Error|nccl(System|Internal|UnhandledCuda|Remote|InvalidUsage|InvalidArgument)Error|Watchdog caught collective operation timeout|NCCL communicator was aborted|NCCL timeout|DistBackendError",
    ),
    (
        FindingKind::HostOom,
        r"Killed process \d+ \(|Out of memory: Kill|oom-kill:|^MemoryError\b|^\w+(\.\w+)*\.MemoryError\b|std::bad_alloc|memory allocation of \d+ bytes failed|jobdeck: the replica was killed \(OOM\)|slurmstepd\S*: error: (StepId=\S+ exceeded memory limit|Exceeded (job|step) memory limit|Detected \d+ oom[-_]kill event)",
    ),
    (
        FindingKind::CommandNotFound,
        r"(?i:: command not found)$|^(\S*sh|bash|dash|zsh): (line )?\d+: .*: not found$|executable file not found in \$PATH|jobdeck: cannot start '.*': No such file or directory|can't open file .*No such file or directory|exec format error|: Permission denied$",
    ),
    (
        FindingKind::ImagePull,
        r"pull access denied|manifest unknown|manifest for \S+ not found|repository does not exist|ErrImagePull|ImagePullBackOff|failed to resolve reference|Error: (initializing source|reading manifest|unable to pull)|unable to pull image|toomanyrequests: |Error response from daemon: (Get|Head) ",
    ),
    (
        FindingKind::Crash,
        r"Segmentation fault|core dumped|Fatal Python error|^thread '.*' panicked at|panicked at |terminate called after throwing|Bus error|Illegal instruction|Floating point exception|\*\*\* stack smashing detected|double free or corruption",
    ),
    (
        FindingKind::ErrorLine,
        r"(?i:^\s*(\[?error\]?|fatal|exception)\b)|\b(ERROR|FATAL|CRITICAL)\b|^\w+(\.\w+)*(Error|Exception): ",
    ),
];

const TRACEBACK_HEADER: &str = "Traceback (most recent call last):";

fn patterns() -> &'static RegexSet {
    static SET: OnceLock<RegexSet> = OnceLock::new();
    SET.get_or_init(|| RegexSet::new(PATTERNS.iter().map(|(_, p)| *p)).expect("the failure patterns compile"))
}

/// The most specific kind a line matches, if any (table order is
/// specificity order).
pub fn match_line(text: &str) -> Option<FindingKind> {
    let matches = patterns().matches(text);
    matches.iter().next().map(|i| PATTERNS[i].0)
}

/// Removes ANSI escape sequences (CSI `ESC [ … final`, OSC `ESC ] … BEL`,
/// and two-character escapes) from a line.
pub fn strip_ansi(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('\u{1b}') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\u{7}' {
                        break;
                    }
                    if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                        chars.next();
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    std::borrow::Cow::Owned(out)
}

fn clip(text: &str) -> String {
    if text.len() <= MAX_TEXT {
        return text.to_string();
    }
    let mut cut = MAX_TEXT;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &text[..cut])
}

/// An open Python traceback: from its header until its exception line.
struct OpenTraceback {
    header: u64,
    /// Whether it is on standard error; lines of the other stream that the
    /// reader interleaved into it are not part of it. Logs copied from the
    /// Kubernetes pod log API have one stream (every line is stored as
    /// standard output), so there an interleaved line is judged by its shape
    /// alone (docs/kubernetes.md, "Failure analysis").
    stderr: bool,
    /// The kind the lines inside it suggest (an NCCL frame, …).
    hint: Option<FindingKind>,
    /// The last line that belonged to it.
    last: u64,
    /// Lines since then that did not (output of other processes).
    strays: u32,
}

/// Unrelated lines a traceback may be interrupted by before it is taken as
/// cut off at its last line.
const MAX_STRAYS: u32 = 200;

/// Whether a line reads as a Python exception line: a dotted name, then
/// nothing or `: message` (`KeyError: 'lr'`, `torch.OutOfMemoryError: …`,
/// `KeyboardInterrupt`).
fn is_exception_line(text: &str) -> bool {
    let name_end = text.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.')).unwrap_or(text.len());
    let name = &text[..name_end];
    let rest = &text[name_end..];
    !name.is_empty()
        && name.starts_with(|c: char| c.is_alphabetic() || c == '_')
        && !name.ends_with('.')
        && (rest.is_empty() || rest.starts_with(": ") || rest == ":")
}

/// Feeds lines in order; `finish` says what the first error is.
#[derive(Default)]
pub struct Scanner {
    strong: Option<Finding>,
    weak: Option<Finding>,
    traceback: Option<OpenTraceback>,
    last_line: u64,
}

impl Scanner {
    /// Whether the first strong finding is known, so the rest of the log
    /// cannot change the answer.
    pub fn done(&self) -> bool {
        self.strong.is_some() && self.traceback.is_none()
    }

    /// Feeds line `number` (1-based, increasing) of standard error or
    /// standard output.
    pub fn feed(&mut self, number: u64, stderr: bool, raw: &str) {
        self.last_line = number;
        if self.done() {
            return;
        }
        let text = strip_ansi(raw);
        let text = text.trim_end_matches('\r');
        if let Some(open) = &mut self.traceback {
            let body = open.stderr == stderr
                && (text.starts_with(|c: char| c.is_whitespace())
                    || text.is_empty()
                    || text.starts_with("During handling of the above exception")
                    || text.starts_with("The above exception was the direct cause")
                    || text == TRACEBACK_HEADER);
            if body {
                if open.hint.is_none() {
                    open.hint = match_line(text).filter(|k| !matches!(k, FindingKind::ErrorLine | FindingKind::Crash));
                }
                open.last = number;
                open.strays = 0;
                return;
            }
            if open.stderr == stderr && is_exception_line(text) {
                // The exception line ends the traceback. A specific
                // exception (CUDA out of memory, NCCL, MemoryError) names
                // the finding; otherwise it is a plain traceback.
                let kind = match match_line(text) {
                    Some(FindingKind::ErrorLine) | Some(FindingKind::Crash) | None => {
                        open.hint.unwrap_or(FindingKind::PythonTraceback)
                    }
                    Some(kind) => kind,
                };
                self.strong = Some(Finding {
                    kind,
                    first_line: open.header,
                    error_line: number,
                    last_line: number,
                    text: clip(text),
                });
                self.traceback = None;
                return;
            }
            // Another process's output, interleaved: skip it, unless so much
            // comes that the traceback was evidently cut off.
            open.strays += 1;
            if open.strays <= MAX_STRAYS {
                return;
            }
            let cut = self.traceback.take().map(|open| self.cut_off(open));
            self.strong = cut;
            return;
        }
        if text.starts_with(TRACEBACK_HEADER) && self.strong.is_none() {
            self.traceback = Some(OpenTraceback { header: number, stderr, hint: None, last: number, strays: 0 });
            return;
        }
        let Some(kind) = match_line(text) else { return };
        let finding = Finding { kind, first_line: number, error_line: number, last_line: number, text: clip(text) };
        if kind == FindingKind::ErrorLine {
            if self.weak.is_none() {
                self.weak = Some(finding);
            }
        } else if self.strong.is_none() {
            self.strong = Some(finding);
        }
    }

    /// The first error found: the first specific one, else the first
    /// error-looking line. A traceback cut off by the end of the log ends at
    /// its last line.
    pub fn finish(mut self) -> Option<Finding> {
        if let Some(open) = self.traceback.take() {
            return Some(self.cut_off(open));
        }
        self.strong.or(self.weak)
    }

    /// A traceback that never reached its exception line ends at its last
    /// line.
    fn cut_off(&self, open: OpenTraceback) -> Finding {
        Finding {
            kind: open.hint.unwrap_or(FindingKind::PythonTraceback),
            first_line: open.header,
            error_line: open.last,
            last_line: open.last,
            text: TRACEBACK_HEADER.to_string(),
        }
    }
}

/// Bump when the patterns or the scanner change, so cached answers from an
/// older server are scanned again.
const SCAN_VERSION: u32 = 2;

/// What [`first_error`] keeps next to an ended attempt's log.
#[derive(Serialize, Deserialize)]
struct CachedScan {
    version: u32,
    log_bytes: u64,
    finding: Option<Finding>,
}

/// The first error in an attempt's log (`None`: no log, or nothing that
/// looks like an error). Scans the log front to back and stops at the first
/// specific error. When the attempt has `ended`, its log is final and the
/// answer is kept in a small file next to it, so the scan happens once per
/// attempt however often the analysis is asked for.
pub fn first_error(
    logs: &jobdeck_store::logs::LogStore,
    job_id: &str,
    completion_index: i64,
    attempt: i64,
    ended: bool,
) -> std::io::Result<Option<Finding>> {
    let Some(mut reader) = logs.open(job_id, completion_index, attempt)? else {
        return Ok(None);
    };
    let log_bytes = reader.byte_len()?;
    let cache = logs.scan_cache_path(job_id, completion_index, attempt);
    if let Some(cached) = std::fs::read(&cache).ok().and_then(|b| serde_json::from_slice::<CachedScan>(&b).ok()) {
        if cached.version == SCAN_VERSION && cached.log_bytes == log_bytes {
            return Ok(cached.finding);
        }
    }
    let mut scanner = Scanner::default();
    reader.visit(1, |number, _, stream, text| {
        scanner.feed(number, stream == jobdeck_store::logs::Stream::Stderr, &String::from_utf8_lossy(text));
        if scanner.done() {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(())
        }
    })?;
    let finding = scanner.finish();
    if ended {
        let record = CachedScan { version: SCAN_VERSION, log_bytes, finding: finding.clone() };
        if let Ok(bytes) = serde_json::to_vec(&record) {
            // Written aside and renamed, so a reader never sees half of it.
            let partial = cache.with_extension("json.tmp");
            if std::fs::write(&partial, bytes).is_ok() {
                let _ = std::fs::rename(&partial, &cache);
            }
        }
    }
    Ok(finding)
}

/// The victim the kernel names in an OOM-kill message ("Killed process 4695
/// (python3)"), as `python3 (pid 4695)`.
pub fn oom_victim(text: &str) -> Option<String> {
    let at = text.find("Killed process ")?;
    let rest = &text[at + "Killed process ".len()..];
    let (pid, rest) = rest.split_once(' ')?;
    pid.parse::<u32>().ok()?;
    let name = rest.strip_prefix('(')?.split_once(')')?.0;
    Some(format!("{name} (pid {pid})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(lines: &[&str]) -> Option<Finding> {
        let mut scanner = Scanner::default();
        for (i, line) in lines.iter().enumerate() {
            scanner.feed(i as u64 + 1, true, line);
        }
        scanner.finish()
    }

    #[test]
    fn single_lines_match_the_most_specific_kind() {
        use FindingKind::*;
        let cases: &[(&str, Option<FindingKind>)] = &[
            ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", Some(CudaOom)),
            ("RuntimeError: CUDA error: out of memory", Some(CudaOom)),
            ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled system error", Some(Nccl)),
            ("[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)", Some(Nccl)),
            ("node-1:77:77 [0] NCCL INFO Bootstrap : Using eth0", None),
            ("node-1:77:77 [0] NCCL WARN Could not find real path of /sys/class/net/eth0", None),
            ("[ 6829.311862] Memory cgroup out of memory: Killed process 4695 (awk) total-vm:102304kB", Some(HostOom)),
            ("MemoryError", Some(HostOom)),
            ("slurmstepd-vm: error: Exceeded job memory limit", Some(HostOom)),
            ("slurmstepd: error: StepId=4.batch exceeded memory limit (308912128 > 104857600), being killed", Some(HostOom)),
            ("slurmstepd: error: Detected 1 oom_kill event in StepId=12.batch. Some of the step tasks have been OOM Killed.", Some(HostOom)),
            ("jobdeck: the replica was killed (OOM): it used more memory than the 64 MiB its shape allows; the kernel killed python3 (pid 9)", Some(HostOom)),
            ("/bin/sh: 1: trian.py: not found", Some(CommandNotFound)),
            ("bash: line 1: pythn: command not found", Some(CommandNotFound)),
            ("python3: can't open file '/work/train.py': [Errno 2] No such file or directory", Some(CommandNotFound)),
            ("jobdeck: cannot start 'nope': No such file or directory (os error 2)", Some(CommandNotFound)),
            ("docker: Error response from daemon: pull access denied for nvcr.io/nope, repository does not exist or may require 'docker login'", Some(ImagePull)),
            ("Error: initializing source docker://nope:latest: reading manifest latest in docker.io/library/nope: manifest unknown", Some(ImagePull)),
            ("Unable to find image 'busybox:latest' locally", None),
            ("Segmentation fault (core dumped)", Some(Crash)),
            ("thread 'main' panicked at src/main.rs:3:5:", Some(Crash)),
            ("2024-01-01 ERROR could not connect", Some(ErrorLine)),
            ("ValueError: bad value", Some(ErrorLine)),
            ("error: linking failed", Some(ErrorLine)),
            ("epoch 3 loss 0.21 (no errors so far)", None),
            ("<script>alert('error')</script>", None),
        ];
        for (line, kind) in cases {
            assert_eq!(match_line(line), *kind, "{line}");
        }
    }

    #[test]
    fn a_traceback_is_one_block_named_by_its_exception() {
        let log = [
            "step 1",
            "Traceback (most recent call last):",
            "  File \"train.py\", line 3, in <module>",
            "    x = torch.zeros(10**12, device='cuda')",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3725.29 GiB",
            "after",
        ];
        let f = scan(&log).unwrap();
        assert_eq!((f.kind, f.first_line, f.error_line, f.last_line), (FindingKind::CudaOom, 2, 5, 5));
        assert!(f.text.starts_with("torch.OutOfMemoryError"));

        let plain = scan(&["Traceback (most recent call last):", "  File \"a.py\", line 1", "KeyError: 'lr'"]).unwrap();
        assert_eq!((plain.kind, plain.first_line, plain.error_line), (FindingKind::PythonTraceback, 1, 3));

        // A chained traceback stays one block up to the final exception.
        let chained = scan(&[
            "Traceback (most recent call last):",
            "  File \"a.py\", line 1",
            "",
            "During handling of the above exception, another exception occurred:",
            "",
            "Traceback (most recent call last):",
            "  File \"a.py\", line 4",
            "RuntimeError: boom",
        ])
        .unwrap();
        assert_eq!((chained.first_line, chained.error_line), (1, 8));
    }

    #[test]
    fn specific_errors_win_over_earlier_generic_lines_and_the_first_specific_one_wins() {
        let f = scan(&["ERROR: retrying download", "ok", "Segmentation fault (core dumped)", "NCCL error: unhandled"])
            .unwrap();
        assert_eq!((f.kind, f.error_line), (FindingKind::Crash, 3));
        let g = scan(&["hello", "ERROR something odd"]).unwrap();
        assert_eq!((g.kind, g.error_line), (FindingKind::ErrorLine, 2));
        assert_eq!(scan(&["all", "good"]), None);
    }

    #[test]
    fn colour_codes_do_not_hide_errors() {
        let f = scan(&[
            "\u{1b}[31mTraceback (most recent call last):\u{1b}[0m",
            "  x",
            "\u{1b}[1;31mValueError\u{1b}[0m: nope",
        ])
        .unwrap();
        assert_eq!((f.kind, f.error_line), (FindingKind::PythonTraceback, 3));
        assert_eq!(f.text, "ValueError: nope");
        assert_eq!(strip_ansi("\u{1b}]0;title\u{7}plain \u{1b}[38;5;196mred"), "plain red");
    }

    #[test]
    fn output_interleaved_into_a_traceback_is_not_its_exception() {
        // Standard output flushed at exit lands in the middle of the
        // traceback standard error is writing.
        let mut scanner = Scanner::default();
        let lines = [
            (true, "Traceback (most recent call last):"),
            (true, "  File \"<string>\", line 5, in <module>"),
            (false, "step 10 loss 2.31"),
            (true, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB"),
        ];
        for (i, (stderr, line)) in lines.iter().enumerate() {
            scanner.feed(i as u64 + 1, *stderr, line);
        }
        let f = scanner.finish().unwrap();
        assert_eq!((f.kind, f.first_line, f.error_line), (FindingKind::CudaOom, 1, 4));
        // On one stream, a line that is not an exception does not end it.
        let f = scan(&["Traceback (most recent call last):", "  File \"a.py\"", "worker 3: step 9", "ValueError: x"])
            .unwrap();
        assert_eq!(f.error_line, 4);
        for (line, is) in [
            ("KeyError: 'lr'", true),
            ("KeyboardInterrupt", true),
            ("a.b.C:", true),
            ("step 10 loss 2.31", false),
            ("worker 3: x", false),
            (".x: y", false),
        ] {
            assert_eq!(is_exception_line(line), is, "{line}");
        }
    }

    #[test]
    fn a_traceback_cut_off_by_the_end_of_the_log_still_counts() {
        let f = scan(&["Traceback (most recent call last):", "  File \"a.py\""]).unwrap();
        assert_eq!((f.kind, f.first_line, f.last_line), (FindingKind::PythonTraceback, 1, 2));
    }

    #[test]
    fn the_first_error_of_an_ended_log_is_scanned_once() {
        use jobdeck_store::logs::{LogStore, LogWriter, Stream};
        let dir = tempfile::tempdir().unwrap();
        let logs = LogStore::new(dir.path());
        assert_eq!(first_error(&logs, "j", 0, 0, true).unwrap(), None);
        let (log, idx) = logs.paths("j", 0, 0);
        let mut writer = LogWriter::create(&log, &idx).unwrap();
        for line in ["start", "Traceback (most recent call last):", "  File \"x.py\"", "KeyError: 'lr'"] {
            writer.append(Stream::Stderr, 1, line.as_bytes()).unwrap();
        }
        writer.flush().unwrap();
        let found = first_error(&logs, "j", 0, 0, true).unwrap().unwrap();
        assert_eq!((found.kind, found.first_line, found.error_line), (FindingKind::PythonTraceback, 2, 4));
        assert!(logs.scan_cache_path("j", 0, 0).exists());
        // A cached answer is used while the log is unchanged…
        let cache = logs.scan_cache_path("j", 0, 0);
        let cached = std::fs::read_to_string(&cache).unwrap().replace("KeyError", "CachedError");
        std::fs::write(&cache, cached).unwrap();
        assert!(first_error(&logs, "j", 0, 0, true).unwrap().unwrap().text.starts_with("CachedError"));
        // …and ignored once the log has grown.
        writer.append(Stream::Stdout, 2, b"more").unwrap();
        writer.flush().unwrap();
        assert!(first_error(&logs, "j", 0, 0, false).unwrap().unwrap().text.starts_with("KeyError"));
    }

    #[test]
    fn the_oom_victim_is_read_from_the_kernel_message() {
        let line = "Memory cgroup out of memory: Killed process 4695 (awk) total-vm:102304kB, anon-rss:64952kB";
        assert_eq!(oom_victim(line).as_deref(), Some("awk (pid 4695)"));
        assert_eq!(oom_victim("Killed process x (awk)"), None);
        assert_eq!(oom_victim("nothing here"), None);
    }
}
