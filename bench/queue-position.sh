#!/usr/bin/env bash
# A queued job's place in the queue (issue 38): GET /jobs/{id} of the last of
# QUEUED (default 1,000) jobs queued behind one that holds the node group's
# only CPU, through the real router, against a running job's GET. The
# figures are in docs/measurements.md.
# Usage: bench/queue-position.sh [--no-build]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/release-server.sh
cargo bench -q -p jobdeck-server --bench queue_position 2>&1 | grep -v 'INFO\|WARN'
