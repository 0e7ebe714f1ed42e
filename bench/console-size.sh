#!/usr/bin/env bash
# What the browser downloads to show each page of the console the first time
# (nothing cached): builds the console and the server, then runs the
# `console_size` benchmark of the end-to-end crate (tests/benches/
# console_size.rs), which opens each page in a fresh headless Chromium and
# sums the console files it loaded, as sent (brotli). Prints a table and
# writes target/bench/console_size.json and console_moves.json; exits
# non-zero when a page's first load is over 150 KB or a move between pages
# over 40 KB.
#
#   bench/console-size.sh [--no-build] [--report]
#
# --report also keeps a copy of every split module with its function names
# (scripts/split-console.sh, JOBDECK_CONSOLE_NAMED_DIR) and prints where the
# bytes go: per module, per crate, per function, the functions compiled
# into more than one module, and the named modules and largest functions
# each page and each move downloads (bench/wasm_size_report.py), into
# target/bench/console_report.md as well.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
target="${CARGO_TARGET_DIR:-$PWD/target}"
build=1 report=0
for arg in "$@"; do
  case "$arg" in
    --no-build) build=0 ;;
    --report) report=1 ;;
    *) echo "usage: bench/console-size.sh [--no-build] [--report]" >&2; exit 2 ;;
  esac
done
named="$target/bench/console-modules"
if [ "$report" = 1 ]; then
  export JOBDECK_CONSOLE_NAMED_DIR="$named"
  # The named copies come from the split step, so the console is rebuilt.
  build=1
fi
if [ "$build" = 1 ]; then
  scripts/setup.sh --browser
  trunk build --release --offline >/dev/null
  cargo build --release -q -p jobdeck-server
fi
export JOBDECK_BIN="$target/release/jobdeck"
[ -x "$JOBDECK_BIN" ] || export JOBDECK_BIN="$target/debug/jobdeck"
export CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}"
set +e
cargo bench -q -p jobdeck-e2e --bench console_size 2>&1 | grep -v -e '^\[jobdeck\]' -e ' request{'
status="${PIPESTATUS[0]}"
set -e
if [ "$report" = 1 ]; then
  echo
  # The benchmark writes its figures under the workspace's own target/,
  # whatever CARGO_TARGET_DIR says (tests/benches/console_size.rs).
  python3 bench/wasm_size_report.py "$named" --brotli target/bench/console_size.json \
    --dist dist --moves target/bench/console_moves.json | tee "$target/bench/console_report.md"
fi
exit "$status"
