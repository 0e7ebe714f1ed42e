#!/usr/bin/env bash
# The log viewer on a 1,000,000-line log in headless Chromium: builds the
# console and the release server, then runs the `log_viewer` benchmark of the
# end-to-end crate (tests/benches/log_viewer.rs), which prints its figures and
# writes them to target/bench/log_viewer.json. BENCH_LOG_LINES=20000 makes a
# quick run. Usage: bench/log-viewer.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
if [ "${1:-}" != "--no-build" ]; then
  scripts/setup.sh --browser
  trunk build --release --offline >/dev/null
  cargo build --release -q -p jobdeck-server
fi
export JOBDECK_BIN="${CARGO_TARGET_DIR:-$PWD/target}/release/jobdeck"
export CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}"
cargo bench -q -p jobdeck-e2e --bench log_viewer 2>&1 | grep -v -e '^\[jobdeck\]' -e ' request{'
