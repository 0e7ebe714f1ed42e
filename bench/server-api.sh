#!/usr/bin/env bash
# Control-plane benchmarks against the release server: job creation
# throughput (100,000 jobs), list latency p50/p99 with them stored (default
# and filtered lists, page size 50), creation with 2,000 jobs queued behind a
# full node group, and log ingest of 1,000,000 lines. The figures are in
# docs/measurements.md. Usage: bench/server-api.sh [--no-build]
# BENCH_JOBS=<n> changes the number of stored jobs.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
target="${CARGO_TARGET_DIR:-target}"
if [ "${1:-}" != "--no-build" ]; then
  cargo build --release -q -p jobdeck-server
fi
export JOBDECK_BIN="$target/release/jobdeck"
case "$JOBDECK_BIN" in /*) ;; *) JOBDECK_BIN="$PWD/$JOBDECK_BIN" ;; esac
echo "machine: $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2}') GiB, $(. /etc/os-release && echo "$PRETTY_NAME")"
echo "server: $JOBDECK_BIN ($(git rev-parse --short HEAD))"
cargo bench -q -p jobdeck-e2e --bench server_api 2>&1 | grep -v '^\[jobdeck\]'
