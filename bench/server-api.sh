#!/usr/bin/env bash
# Control-plane benchmarks against the release server: job creation
# throughput (100,000 jobs), list latency p50/p99 with them stored (default
# and filtered lists, page size 50), creation with 2,000 jobs queued behind a
# full node group, and log ingest of 1,000,000 lines. The figures are in
# docs/measurements.md. Usage: bench/server-api.sh [--no-build]
# BENCH_JOBS=<n> changes the number of stored jobs.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/release-server.sh
cargo bench -q -p jobdeck-e2e --bench server_api 2>&1 | grep -v -e '^\[jobdeck\]' -e ' request{'
