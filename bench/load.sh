#!/usr/bin/env bash
# Load benchmark against the release server: 200 clients on the list and job
# pages' calls (each asking again a second after its answer, as the console's
# live views do) and 20 log followers (the log viewer's long poll) for
# LOAD_SECONDS (default 60) on loopback; p50/p99 per call and every error.
# LOAD_THINK_MS=0 makes the page clients ask again at once (saturation).
# The figures are in docs/measurements.md. Usage: bench/load.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/release-server.sh
# 200 client threads and their connections, plus the server's.
ulimit -n 4096 2>/dev/null || true
cargo bench -q -p jobdeck-e2e --bench load 2>&1 | grep -v -e '^\[jobdeck\]' -e ' request{'
