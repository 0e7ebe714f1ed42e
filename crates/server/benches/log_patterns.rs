//! Log-pattern notifications (issue 38): the condition watch reads a
//! running job's new lines for each rule's pattern (`notify::watch::scan`,
//! a rule's round over one replica's log), which must keep up with the
//! lines a replica writes. Writes 2,000,000 lines of training output through
//! the log store's writer (the replica supervisor's path, flushed every
//! 1,000 lines), then reads them for three patterns that match no line (the
//! most work: every line read), each in rounds of
//! `SCAN_LINES_PER_ROUND`. Run with `bench/log-patterns.sh`.

use std::time::Instant;

use jobdeck_server::notify::watch::{compile_log_pattern, scan, SCAN_LINES_PER_ROUND};
use jobdeck_store::logs::{LogStore, LogWriter, Stream};

const LINES: u64 = 2_000_000;

/// One line of a training run's output: progress, losses, NCCL chatter and
/// JSON records, as a rank prints them.
fn line(k: u64) -> String {
    match k % 10 {
        0 => format!(
            "{{\"step\": {k}, \"loss\": {:.5}, \"lr\": 0.0003, \"grad_norm\": {:.3}, \"tokens_per_s\": {}}}",
            2.0 / (1.0 + k as f64 / 1e5),
            1.0 + (k % 97) as f64 / 50.0,
            41_000 + k % 3_000
        ),
        1 => format!(
            "node-3:{}:{} [1] NCCL INFO Channel {:02}/0 : 1[1] -> 2[2] via P2P/IPC",
            9000 + k % 7,
            k % 13,
            k % 32
        ),
        2 => format!(
            "Epoch 3:  {}%|{}| {}/{} [04:12<01:{:02}, 3.41it/s]",
            k % 100,
            "#".repeat((k % 40) as usize),
            k % 5000,
            5000,
            k % 60
        ),
        3 => "WARNING:torch.distributed.elastic:rendezvous round 2 is complete, waiting for the barrier".into(),
        _ => format!(
            "[rank1] step {k} | loss {:.4} | ppl {:.2} | {} ms/step | mem {} MiB",
            2.0 / (1.0 + k as f64 / 1e5),
            7.4 + (k % 11) as f64 / 10.0,
            310 + k % 40,
            61_000 + k % 900
        ),
    }
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let logs = LogStore::new(dir.path());
    let (log, idx) = logs.paths("bench-aaaaa", 0, 0);
    let written = Instant::now();
    let mut bytes = 0u64;
    {
        let mut writer = LogWriter::create(&log, &idx).unwrap();
        for k in 0..LINES {
            let text = line(k);
            bytes += text.len() as u64 + 1;
            writer.append(Stream::Stdout, 1_790_000_000_000 + k as i64, text.as_bytes()).unwrap();
            if k % 1_000 == 999 {
                writer.flush().unwrap();
            }
        }
    }
    let write_s = written.elapsed().as_secs_f64();
    let write_rate = LINES as f64 / write_s;
    println!(
        "written: {LINES} lines, {:.0} MB of text, in {write_s:.2} s: {:.2} M lines/s",
        bytes as f64 / 1e6,
        write_rate / 1e6
    );
    println!("| pattern | read, s | M lines/s | × the writer's rate |");
    println!("|---|---|---|---|");
    for pattern in [
        "loss: nan",
        r"(?i)cuda error|out of memory",
        r"loss:? (nan|inf)|NCCL WARN .*[Tt]imeout|Traceback \(most recent call last\)",
    ] {
        let regex = compile_log_pattern(pattern).unwrap();
        let mut best = f64::MAX;
        for _ in 0..3 {
            let started = Instant::now();
            let mut from = 1;
            let mut rounds = 0;
            loop {
                let (next, found) = scan(&logs, "bench-aaaaa", 0, 0, from, &regex).unwrap();
                assert!(found.is_none(), "{pattern} matched a line it should not");
                rounds += 1;
                if next == from {
                    break;
                }
                from = next;
            }
            assert_eq!(from, LINES + 1, "every line read");
            assert_eq!(rounds, LINES.div_ceil(SCAN_LINES_PER_ROUND) + 1);
            best = best.min(started.elapsed().as_secs_f64());
        }
        let rate = LINES as f64 / best;
        println!("| `{pattern}` | {best:.3} | {:.2} | {:.1} |", rate / 1e6, rate / write_rate);
    }
}
