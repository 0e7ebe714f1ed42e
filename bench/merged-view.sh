#!/usr/bin/env bash
# The console's "All ranks" tab on 8 replicas of 1,000,000 lines each in
# headless Chromium (tests/benches/merged_view.rs): the first screen warm and
# cold, a permalink to a middle line, and scrolling back page by page.
# BENCH_MERGED_LINES=20000 makes a quick run. The figures are in
# docs/measurements.md. Usage: bench/merged-view.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
if [ "${1:-}" != "--no-build" ]; then
  scripts/setup.sh --browser
  (unset CARGO_TARGET_DIR; trunk build --release --offline >/dev/null)
  cargo build --release -q -p jobdeck-server
fi
export JOBDECK_BIN="${CARGO_TARGET_DIR:-$PWD/target}/release/jobdeck"
export CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}"
cargo bench -q -p jobdeck-e2e --bench merged_view 2>&1 | grep -v -e '^\[jobdeck\]' -e ' request{' -e ' INFO ' -e ' WARN '
