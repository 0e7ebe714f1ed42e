#!/usr/bin/env bash
# The deployments list at scale (issue 37): JOBS (default 1,000,000) jobs
# stored, the server's start-up on that store, and GET /jobs as the console
# and `lep job list` ask it. The figures are in docs/measurements.md.
# Usage: bench/list-scale.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/release-server.sh
cargo bench -q -p jobdeck-server --bench list_scale 2>&1 | grep -v 'INFO\|WARN'
