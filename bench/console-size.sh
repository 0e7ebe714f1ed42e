#!/usr/bin/env bash
# What the browser downloads to show each page of the console the first time
# (nothing cached): builds the console and the server, then runs the
# `console_size` benchmark of the end-to-end crate (tests/benches/
# console_size.rs), which opens each page in a fresh headless Chromium and
# sums the console files it loaded, as sent (brotli). Prints a table and
# writes target/bench/console_size.json. Usage: bench/console-size.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
target="${CARGO_TARGET_DIR:-$PWD/target}"
if [ "${1:-}" != "--no-build" ]; then
  scripts/setup.sh --browser
  trunk build --release --offline >/dev/null
  cargo build --release -q -p jobdeck-server
fi
export JOBDECK_BIN="$target/release/jobdeck"
[ -x "$JOBDECK_BIN" ] || export JOBDECK_BIN="$target/debug/jobdeck"
export CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}"
cargo bench -q -p jobdeck-e2e --bench console_size 2>&1 | grep -v '^\[jobdeck\]'
