#!/usr/bin/env bash
# Resource metrics (issue 16): what sampling costs the release server with
# 50 running replicas (sampling off, every 5 s, every second), and the
# metrics endpoints' latency on a replica with a week of 5 s samples. The
# figures are in docs/measurements.md. Usage: bench/metrics.sh [--no-build]
# SAMPLER_SECONDS=<n> changes how long each sampling setting is measured.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/release-server.sh
cargo bench -q -p jobdeck-server --bench metrics 2>&1 | grep -v 'INFO\|WARN'
cargo bench -q -p jobdeck-e2e --bench sampler 2>&1 | grep -v -e '^\[jobdeck\]' -e ' request{' | grep -v 'INFO\|WARN'
