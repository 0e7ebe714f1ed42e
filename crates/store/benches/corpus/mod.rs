//! A generated corpus of training output, for measuring the log format:
//! what a distributed PyTorch run prints. Training-step lines, tqdm
//! progress bars redrawn with carriage returns (one stored line holds many
//! redraws), JSON metric lines, NCCL set-up chatter, Python logging
//! (checkpoints, evaluation), library warnings and the odd traceback. No two
//! lines are the same: steps count up and the numbers are drawn from a
//! seeded generator, so a run with the same seed gives the same bytes. One
//! line in two million is a GPU falling off the bus, for rare searches.

/// The seed `bench/log-format.sh` uses.
pub const SEED: u64 = 20_261_130;

/// SplitMix64: small, fast and good enough to draw numbers for text.
pub struct Draw(u64);

impl Draw {
    pub fn new(seed: u64) -> Draw {
        Draw(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A whole number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// A number in `low..high`.
    fn float(&mut self, low: f64, high: f64) -> f64 {
        low + (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * (high - low)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

/// Writes lines of training output, each with the time it was printed.
pub struct Corpus {
    draw: Draw,
    step: u64,
    epoch: u64,
    /// Unix milliseconds of the next line.
    time: i64,
    /// Lines still to come of a traceback being printed.
    traceback: Vec<String>,
    rank: u64,
}

const HOSTS: [&str; 4] = ["dgx-a100-07", "dgx-a100-08", "gpu-node-12", "gpu-node-13"];
const MODULES: [&str; 6] = [
    "torch/nn/modules/module.py",
    "torch/utils/data/dataloader.py",
    "transformers/trainer.py",
    "torch/distributed/distributed_c10d.py",
    "deepspeed/runtime/engine.py",
    "torch/_dynamo/convert_frame.py",
];
const WARNINGS: [&str; 4] = [
    "UserWarning: TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only storage class.",
    "FutureWarning: `torch.cuda.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cuda', args...)` instead.",
    "UserWarning: This DataLoader will create 16 worker processes in total. Our suggested max number of worker in current system is 8.",
    "UserWarning: Grad strides do not match bucket view strides. This may indicate grad was not created according to the gradient layout contract.",
];
const ERRORS: [&str; 4] = [
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.06 GiB is free.",
    "RuntimeError: NCCL communicator was aborted on rank 3. Original reason for failure was: [Rank 3] Watchdog caught collective operation timeout",
    "ValueError: Expected input batch_size (32) to match target batch_size (31).",
];

impl Corpus {
    pub fn new(seed: u64) -> Corpus {
        Corpus { draw: Draw::new(seed), step: 0, epoch: 0, time: 1_795_000_000_000, traceback: Vec::new(), rank: 0 }
    }

    /// Appends the next line (without its newline) to `out` and answers
    /// the time it was printed.
    pub fn line(&mut self, out: &mut Vec<u8>) -> i64 {
        use std::io::Write;
        self.time += self.draw.below(3) as i64;
        if let Some(line) = self.traceback.pop() {
            out.extend_from_slice(line.as_bytes());
            return self.time;
        }
        let d = &mut self.draw;
        // One line in two million: what a search for a rare failure finds.
        if d.below(2_000_000) == 0 {
            let _ = write!(
                out,
                "NVRM: Xid (PCI:0000:{:02x}:00): 79, pid={}, name=python, GPU has fallen off the bus.",
                d.below(256),
                d.below(100_000)
            );
            return self.time;
        }
        let kind = d.below(100);
        self.rank = d.below(8);
        let rank = self.rank;
        let _ = match kind {
            0..=54 => {
                self.step += 1;
                write!(
                    out,
                    "[rank{rank}] step {}/500000 | loss {:.4} | lr {:.3e} | grad_norm {:.3} | {:.0} tokens/s | {:.1} ms/step",
                    self.step,
                    d.float(1.2, 3.4),
                    d.float(1e-5, 3e-4),
                    d.float(0.1, 4.0),
                    d.float(90_000.0, 180_000.0),
                    d.float(280.0, 420.0)
                )
            }
            55..=66 => {
                // tqdm redraws its bar with a carriage return; a stored line
                // ends at the newline after the last redraw.
                let total = 2_000 + d.below(8_000);
                let mut done = d.below(total);
                for redraw in 0..2 + d.below(5) {
                    if redraw > 0 {
                        out.push(b'\r');
                    }
                    done = (done + 1 + d.below(40)).min(total);
                    let percent = done * 100 / total;
                    let filled = (percent / 10) as usize;
                    let bar = format!("{}{}", "█".repeat(filled), " ".repeat(10 - filled));
                    let _ = write!(
                        out,
                        "Epoch {}: {percent:3}%|{bar}| {done}/{total} [{:02}:{:02}<{:02}:{:02}, {:.2}it/s, loss={:.3}]",
                        self.epoch,
                        d.below(60),
                        d.below(60),
                        d.below(60),
                        d.below(60),
                        d.float(1.0, 12.0),
                        d.float(1.2, 3.4)
                    );
                }
                if d.below(50) == 0 {
                    self.epoch += 1;
                }
                Ok(())
            }
            67..=76 => write!(
                out,
                "{{\"ts\": \"2026-11-30T{:02}:{:02}:{:02}.{:03}Z\", \"step\": {}, \"rank\": {rank}, \"loss\": {:.5}, \"throughput\": {:.1}, \"gpu_mem_gb\": {:.2}, \"event\": \"{}\"}}",
                d.below(24),
                d.below(60),
                d.below(60),
                d.below(1000),
                self.step,
                d.float(1.2, 3.4),
                d.float(90_000.0, 180_000.0),
                d.float(40.0, 79.0),
                d.pick(&["train", "train", "train", "eval", "checkpoint"])
            ),
            77..=84 => {
                let host = d.pick(&HOSTS);
                let (pid, dev) = (10_000 + d.below(50_000), rank);
                match d.below(4) {
                    0 => write!(
                        out,
                        "{host}:{pid}:{} [{dev}] NCCL INFO Channel {:02}/24 : {}[{dev}] -> {}[{dev}] via P2P/IPC/read",
                        pid + d.below(200),
                        d.below(24),
                        d.below(16),
                        d.below(16)
                    ),
                    1 => write!(
                        out,
                        "{host}:{pid}:{} [{dev}] NCCL INFO comm 0x{:x} rank {} nRanks 16 nNodes 2 localRanks 8 localRank {dev} MNNVL 0",
                        pid + d.below(200),
                        d.next_u64() & 0xffff_ffff_ffff,
                        d.below(16)
                    ),
                    2 => write!(
                        out,
                        "{host}:{pid}:{} [{dev}] NCCL INFO Using network IB, {} buffers of {} KiB",
                        pid + d.below(200),
                        d.below(64),
                        d.below(4096)
                    ),
                    _ => write!(
                        out,
                        "{host}:{pid}:{} [{dev}] NCCL WARN NET/IB : Got completion from peer {}.{}.{}.{}<{}> with status=12 opcode=0 len=0 vendor err 129",
                        pid + d.below(200),
                        10,
                        d.below(256),
                        d.below(256),
                        d.below(256),
                        40_000 + d.below(20_000)
                    ),
                }
            }
            85..=92 => match d.below(3) {
                0 => write!(
                    out,
                    "2026-11-30 {:02}:{:02}:{:02},{:03} - INFO - trainer.py:{} - Saving model checkpoint to /checkpoints/run-{}/step_{} ({:.1} GB in {:.1} s)",
                    d.below(24),
                    d.below(60),
                    d.below(60),
                    d.below(1000),
                    1_000 + d.below(3_000),
                    d.below(100_000),
                    self.step,
                    d.float(10.0, 140.0),
                    d.float(5.0, 90.0)
                ),
                1 => write!(
                    out,
                    "2026-11-30 {:02}:{:02}:{:02},{:03} - INFO - evaluate.py:{} - eval step {}: accuracy={:.4} f1={:.4} perplexity={:.3} samples={}",
                    d.below(24),
                    d.below(60),
                    d.below(60),
                    d.below(1000),
                    100 + d.below(900),
                    self.step,
                    d.float(0.5, 0.95),
                    d.float(0.4, 0.93),
                    d.float(3.0, 30.0),
                    d.below(50_000)
                ),
                _ => write!(
                    out,
                    "2026-11-30 {:02}:{:02}:{:02},{:03} - WARNING - dataloader.py:{} - worker {} slow: batch {} took {:.1} ms (prefetch queue {} of 8)",
                    d.below(24),
                    d.below(60),
                    d.below(60),
                    d.below(1000),
                    100 + d.below(900),
                    d.below(16),
                    d.below(1_000_000),
                    d.float(100.0, 5_000.0),
                    d.below(8)
                ),
            },
            93..=97 => write!(
                out,
                "/usr/local/lib/python3.10/dist-packages/{}:{}: {}",
                d.pick(&MODULES),
                100 + d.below(2_000),
                d.pick(&WARNINGS)
            ),
            _ => {
                // A traceback: printed over the next lines, outermost first.
                let mut lines = vec!["Traceback (most recent call last):".to_string()];
                for _ in 0..2 + d.below(6) {
                    let module = d.pick(&MODULES);
                    lines.push(format!(
                        "  File \"/usr/local/lib/python3.10/dist-packages/{module}\", line {}, in {}",
                        10 + d.below(3_000),
                        d.pick(&["forward", "_call_impl", "__next__", "backward", "all_reduce", "step", "wrapper"])
                    ));
                    lines.push(format!(
                        "    {} = {}(batch_{}, **kwargs)",
                        d.pick(&["outputs", "loss", "grads", "result"]),
                        d.pick(&["self.module", "model", "engine.step", "dist.all_reduce"]),
                        d.below(10_000)
                    ));
                }
                lines.push(format!("{} (step {}, rank {rank})", d.pick(&ERRORS), self.step));
                lines.reverse();
                out.extend_from_slice(lines.pop().expect("a first line").as_bytes());
                self.traceback = lines;
                Ok(())
            }
        };
        self.time
    }
}
