#!/usr/bin/env bash
# Container overhead: time from a replica attempt's start to its program's
# first line, process mode against container mode (podman + runc, the test
# image local), with the release server. The figures are in
# docs/measurements.md. Usage: bench/container-overhead.sh [--no-build]
# REPLICAS=<n> changes the number of jobs per mode (default 20);
# BENCH_SLURM=1 adds the Slurm executor on the one-node test cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --containers
if [ "${BENCH_SLURM:-}" = 1 ]; then scripts/setup.sh --slurm; fi
. bench/release-server.sh
echo "engine: $(podman --version), $(runc --version | head -1)"
cargo bench -q -p jobdeck-e2e --bench container_overhead 2>&1 | grep -v -e '^\[jobdeck\]' -e ' request{' | grep -v 'INFO\|WARN'
