#!/usr/bin/env bash
# Log retention (issue 37): the scheduler's look for finished jobs whose
# logs are due, over JOBS (default 20,000) finished jobs, and the removal of
# REMOVED (default 2,000) jobs' logs, through the real scheduler. The
# figures are in docs/measurements.md.
# Usage: bench/log-retention.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/release-server.sh
cargo bench -q -p jobdeck-server --bench log_retention 2>&1 | grep -v 'INFO\|WARN'
