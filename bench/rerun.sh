#!/usr/bin/env bash
# Rerunning a job's failed indexes (issue 38): GET /jobs/{id} of a failed
# job of INDEXES (default 10,000) indexes, half of them failed, which reads
# the indexes a rerun would run, against a completed job's GET, and POST
# /jobs/{id}/rerun?only=failed, through the real router. The figures are in
# docs/measurements.md.
# Usage: bench/rerun.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/release-server.sh
cargo bench -q -p jobdeck-server --bench rerun 2>&1 | grep -v 'INFO\|WARN'
