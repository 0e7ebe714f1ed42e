#!/usr/bin/env bash
# Resource metrics (issue 16): what sampling costs the release server with
# 50 running replicas (sampling off, every 5 s, every second), and the
# metrics endpoints' latency on a replica with a week of 5 s samples. The
# figures are in docs/measurements.md. Usage: bench/metrics.sh [--no-build]
# SAMPLER_SECONDS=<n> changes how long each sampling setting is measured.
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
cargo bench -q -p jobdeck-server --bench metrics 2>&1 | grep -v 'INFO\|WARN'
cargo bench -q -p jobdeck-e2e --bench sampler 2>&1 | grep -v '^\[jobdeck\]' | grep -v 'INFO\|WARN'
